"""Issue 13: the compact card's parts (dedupe, number style, recurrence wording, key facts, log focus,
next actions that fit the evidence, the Run:ai console label, button plumbing)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from diagnosis.report import (
    Category,
    EvidenceItem,
    Identity,
    Outcome,
    Recurrence,
    Report,
    recurrence_phrase,
)
from diagnosis.runai.categories import CATEGORIES, VerdictFacts
from diagnosis.runai.reporting import ReportBuilder
from diagnosis.wording import card_time, card_value, dedupe, focus_log, header_text, key_facts
from handlers.blocks import render_report
from handlers.card import text_chars
from handlers.card_buttons import question_of
from handlers.middleware import _charged, _costly

T = datetime(2026, 11, 28, 10, 14, 7, tzinfo=UTC)


def _report(**kw: object) -> Report:
    base: dict[str, object] = {
        "system": "runai",
        "outcome": Outcome.DIAGNOSED,
        "category": Category.OOM_KILLED,
        "headline": "llama-ft-3 was OOMKilled.",
        "identity": Identity(system="runai", cluster_id="c1", workload_id="w1", workload_name="llama-ft-3"),
    }
    base.update(kw)
    return Report.model_validate(base)


def test_header_says_the_verdict_in_words_and_the_category_stays_in_the_text() -> None:
    r = render_report(_report())
    assert r.main.blocks[0]["text"]["text"] == "💥 OOM killed: llama-ft-3"
    assert "OOM_KILLED" in r.main.text and "OOM_KILLED" in json.dumps(r.main.blocks[-1])
    assert header_text(_report(category=Category.IMAGE_PULL_FAILED)).startswith("📦 Image pull failed")


def test_repeats_merge_into_one_line_with_a_count_and_first_last_time() -> None:
    items = [
        EvidenceItem(
            label="phaseMessage",
            value="Pod p-0 failed: container c terminated with reason OOMKilled (exit code 137)",
            source="GET /w",
            at=T,
        ),
        EvidenceItem(
            label="PodFailed",
            value="Pod ns/p-0 failed: container c terminated with reason OOMKilled (exit code 137)",
            source="GET /w/events",
            at=T - timedelta(2),
        ),
        EvidenceItem(label="taint", value="Marking for deletion", source="kubectl get events", at=T),
        EvidenceItem(label="taint", value="Marking for deletion", source="kubectl get events", at=T),
    ]
    facts = dedupe(items)
    assert [f.count for f in facts] == [2, 2]
    assert facts[0].first == T - timedelta(2) and facts[0].last == T and len(facts[0].sources) == 2


def test_numbers_in_one_style_on_the_card() -> None:
    assert card_value("34306350453 bytes (32.0 GiB), 99.8% of the limit") == "32.0 GiB (99.8 %)"
    assert card_value("32Gi = 34359738368 bytes (32.0 GiB)") == "32.0 GiB"
    assert card_time(T, T + timedelta(hours=2)) == "2026-11-28 10:14 UTC (2 h ago)"


def test_recurrence_is_a_count_of_failures_and_absent_for_one() -> None:
    two = Recurrence(category="OOM_KILLED", count=2, lookback_seconds=7 * 86400, occurrences=[T, T])
    assert recurrence_phrase(two) == "failed 2 times in the last 7 days"
    assert ("Recurrence", "failed 2 times in the last 7 days") in key_facts(_report(recurrence=two))
    one = two.model_copy(update={"count": 1})
    assert not [k for k, _ in key_facts(_report(recurrence=one)) if k == "Recurrence"]


def test_log_focus_shows_the_traceback_or_the_last_error_not_progress() -> None:
    progress = [f"INFO step {i}" for i in range(50)]
    tb = ["Traceback (most recent call last):", '  File "x.py", line 1', "ValueError: bad"]
    assert focus_log("\n".join(progress + tb)).splitlines()[1] == tb[0]
    text = "\n".join([*progress, "ERROR: disk full", *progress[:3]])
    focus = focus_log(text)
    assert "ERROR: disk full" in focus and "INFO step 10" not in focus


def _builder(template: str | None = None) -> ReportBuilder:
    return ReportBuilder(
        now=T, lookback=timedelta(days=7), console_url="https://runai.example", workload_url_template=template
    )


def test_image_pull_action_fits_the_cause_and_names_the_image() -> None:
    from diagnosis.runai.signals import Kind, Signal

    def action(msg: str) -> str:
        sig = Signal(kind=Kind.IMAGE_PULL, text=f'Failed to pull image "nvcr.io/x/y:1": {msg}', source="events")
        return CATEGORIES[Category.IMAGE_PULL_FAILED].action(VerdictFacts(primary=[sig]))

    assert "repository name and tag" in action("manifest unknown") and "`nvcr.io/x/y:1`" in action("not found")
    assert "pull secret" in action("401 Unauthorized") and "pull secret" in action("denied: requested access")
    assert "mirror" in action("429 toomanyrequests: rate limit")


def test_no_log_seen_gives_the_commands_that_would_show_it() -> None:
    text = CATEGORIES[Category.CRASH_APP_ERROR].action(VerdictFacts(primary=[], pod="p-0", namespace="ns"))
    assert "kubectl logs p-0 -n ns --previous" in text and "shown in the" not in text


def test_runai_link_is_labelled_console_unless_a_workload_template_is_set() -> None:
    from diagnosis.runai.models import Workload

    wl = Workload.model_validate(
        {"id": "w1", "name": "t", "clusterId": "c1", "projectName": "p", "type": "Training", "phase": "Failed"}
    )
    b = _builder()
    b.set_identity(wl, None)
    assert [link.label for link in b.links] == ["Run:ai console"]
    b = _builder("https://runai.example/workloads/{workload_id}")
    b.set_identity(wl, None)
    assert [(link.label, link.url) for link in b.links] == [("Open in Run:ai", "https://runai.example/workloads/w1")]


def test_card_buttons_pass_the_policy_and_rate_limit_and_name_what_to_reread() -> None:
    r = render_report(_report())
    buttons = [e for b in r.main.blocks if b["type"] == "actions" for e in b["elements"]]
    ids = [b.get("action_id") for b in buttons]
    assert ids[:2] == ["wd_card_evidence", "wd_card_rediagnose"]
    # Re-diagnose starts a diagnosis and counts against the rate limit; Evidence only reads one (free)
    for b in buttons[:2]:
        assert _costly({"type": "block_actions", "actions": [b]})  # both pass the access policy
    assert _charged({"type": "block_actions", "actions": [buttons[1]]})
    assert not _charged({"type": "block_actions", "actions": [buttons[0]]})
    q = question_of(buttons[0]["value"])
    assert q is not None and (q.cluster_id, q.workload_id) == ("c1", "w1")
    assert question_of('{"s":"osmo","id":"wf-1"}').workflow_id == "wf-1"  # type: ignore[union-attr]
    assert question_of("not json") is None
    assert text_chars(r.main.blocks) <= 1500
