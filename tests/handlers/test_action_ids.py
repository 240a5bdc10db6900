"""Every action id a renderer can put on a button (the card, its links and "was this right?", a follow-up's
choices, the *Wrong* question, a digest) is answered by exactly one registered listener, and every listener
answers some button: the ids are written once (next to the renderer) and the matchers are built from them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from diagnosis.digests import DigestItem, build_digest
from diagnosis.report import (
    Category,
    Choice,
    Excerpt,
    Identity,
    Link,
    Outcome,
    Report,
)
from handlers import feedback, listeners
from handlers.blocks import render_report
from handlers.card import action_matcher
from handlers.digest_blocks import render_digest_blocks
from handlers.middleware import CHARGED_ACTIONS

AT = datetime(2026, 11, 28, 11, 0, tzinfo=UTC)


class RecordingApp:
    """What Bolt's ``AsyncApp`` is to the listeners' registration: ``action(matcher)`` is recorded; every other
    registration (commands, events, errors) is accepted and ignored."""

    def __init__(self) -> None:
        self.matchers: list[re.Pattern[str]] = []

    def action(self, matcher: Any) -> Callable[[Any], Any]:
        assert isinstance(matcher, re.Pattern), f"a listener's matcher is a pattern built from the constants: {matcher}"
        self.matchers.append(matcher)
        return lambda fn: fn

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def register(*args: Any, **kwargs: Any) -> Any:
            if len(args) == 1 and callable(args[0]) and not kwargs:
                return args[0]  # a bare decorator (@app.error)
            return lambda fn: fn

        return register


def _ids(blocks: list[dict[str, Any]]) -> Iterator[str]:
    for block in blocks:
        for element in block.get("elements") or []:
            if isinstance(element, dict) and element.get("action_id"):
                yield str(element["action_id"])
        element = block.get("element")
        if isinstance(element, dict) and element.get("action_id"):
            yield str(element["action_id"])


def _card() -> Report:
    ident = Identity(system="runai", cluster_id="c1", workload_id="w1", workload_name="train-7", phase="Failed")
    report = Report(
        system="runai",
        outcome=Outcome.DIAGNOSED,
        category=Category.OOM_KILLED,
        headline="train-7 was OOM-killed.",
        identity=ident,
        excerpts=[Excerpt(title="log tail of trainer-0", text="Killed\n" * 3, source="pod log")],
        links=[Link(label="Run:ai console", url="https://runai.test/w1"), Link(label="Grafana", url="https://g.test")],
    )
    return report.with_answer_ref("0123456789abcdef")


def _question() -> Report:
    choices = [Choice(label=f"cluster c{i}", field="cluster", value=f"c{i}") for i in range(3)]
    return Report(
        system="runai",
        outcome=Outcome.NEEDS_INPUT,
        headline="Which cluster?",
        question="Which cluster?",
        missing=["cluster"],
        choices=choices,
    )


def emitted() -> set[str]:
    """Every action id the renderers emit for a full card, a follow-up question, the *Wrong* question and a digest."""
    out: set[str] = set()
    for report in (_card(), _question()):
        rendered = render_report(report, thread_ts="1.2")
        for message in (rendered.main, *rendered.thread):
            out |= set(_ids(message.blocks))
    record = {"ref": "0123456789abcdef", "system": "runai", "category": "OOM_KILLED", "name": "train-7"}
    out |= set(_ids(feedback.wrong_message(record).blocks))
    item = DigestItem(system="runai", name="t-1", id="w1", at=AT, category="OOM_KILLED", verdict="OOM", cluster_id="c")
    digest = build_digest([item], start=AT - timedelta(hours=1), end=AT, since="1h", systems=["runai"])
    out |= set(_ids(render_digest_blocks(digest)))
    return out


def registered() -> list[re.Pattern[str]]:
    app = RecordingApp()
    doctor = SimpleNamespace(reports=SimpleNamespace(keeper=None))
    listeners.register(app, doctor, spawn=lambda *a, **k: None, admit=lambda *a: None)  # type: ignore[arg-type]
    feedback.register(app, doctor, desk=SimpleNamespace(), spawn=lambda *a, **k: None)  # type: ignore[arg-type]
    return app.matchers


def test_every_emitted_action_id_has_exactly_one_listener() -> None:
    ids, matchers = emitted(), registered()
    # every kind of button is rendered: the card's, a link, a choice, a vote, a pick, the note and the digest's
    for prefix in ("wd_card_", "wd_link_", "wd_choice_", "wd_fb_right", "wd_fb_pick_", "wd_fb_note", "wd_digest_"):
        assert any(i.startswith(prefix) for i in ids), prefix
    for action_id in sorted(ids):
        matching = [m.pattern for m in matchers if m.fullmatch(action_id)]
        assert len(matching) == 1, f"{action_id} is matched by {matching}"
    for matcher in matchers:
        assert any(matcher.fullmatch(i) for i in ids), f"{matcher.pattern} answers no button the renderers emit"
    assert set(CHARGED_ACTIONS) <= ids, "every charged action is a button the renderers emit"


@pytest.mark.parametrize(
    ("ids", "numbered", "yes", "no"),
    [
        (("wd_a", "wd_b"), (), ["wd_a", "wd_b"], ["wd_ab", "xwd_a", "wd_a_1", "wd_c"]),
        ((), ("wd_x",), ["wd_x_0", "wd_x_12"], ["wd_x", "wd_x_", "wd_x_1a", "wd_xy_1"]),
        (("a.b",), ("p",), ["a.b", "p_3"], ["aXb", "p"]),
    ],
)
def test_the_matcher_is_anchored_and_exact(
    ids: tuple[str, ...], numbered: tuple[str, ...], yes: list[str], no: list[str]
) -> None:
    matcher = action_matcher(ids, numbered)
    assert all(matcher.match(i) for i in yes)
    assert not any(matcher.match(i) for i in no)
