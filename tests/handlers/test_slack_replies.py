"""Issue 21: the bot's own questions answered in people's words, end to end (signed requests -> the real AsyncApp
-> the real core -> the sandbox; replies to the mock Web API; pending questions in a real Redis). One test per
reply form of FORMAT.md "Questions": yes, no, an ordinal, a part of a name, the id the bot showed, a correction,
and a later @-mention in the thread that keeps the cluster and project the thread gave. Each asserts the final
answer names the right workload and verdict, with no dead end."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tests.handlers.test_slack_e2e import BARE, finals, running
from tests.handlers.test_slack_followups import ROOT_TS, _pending
from tests.slack_mock import SlackMock, mention, thread_message

CASE = "missing-cluster"  # asr-conformer (CRASH_APP_ERROR) in project speech on dgx-prod (of dgx-prod, dgx-staging)
V2 = "asr-conformer-v2"


def _with_v2(snapshot: dict[str, Any]) -> None:
    """A second failed workload in project speech on dgx-prod: asr-conformer-v2 (its own id)."""
    entry = copy.deepcopy(snapshot["runai"]["workloads"][0])
    entry["workload"].update(name=V2, id="3e98e7e4-0000-4000-8000-00000000beef")
    snapshot["runai"]["workloads"].append(entry)


TWIN = "9c0ffee0-0000-4000-8000-000000000001"


def _with_twin(snapshot: dict[str, Any]) -> None:
    """A second asr-conformer in project speech on dgx-prod that failed at the same time: the rules cannot rank
    them, so the bot asks, showing each one's id."""
    entry = copy.deepcopy(snapshot["runai"]["workloads"][0])
    entry["workload"].update(id=TWIN)
    snapshot["runai"]["workloads"].append(entry)


def _last(slack: SlackMock) -> str:
    return finals(slack)[-1].get("text") or ""


async def _say(h: Any, text: str, n: int) -> None:
    await h.event(thread_message(text, f"500.00{300 + n}", ROOT_TS, channel=BARE))
    await h.settle()


async def _start(h: Any, text: str) -> None:
    await h.event(mention(text, ROOT_TS, channel=BARE))
    await h.settle()


async def test_yes_picks_the_one_name_the_bot_suggested(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await _start(h, "why did asr-conformr fail in speech on dgx-prod?")
        assert "Did you mean `asr-conformer`" in _last(slack)
        await _say(h, "yes", 1)
    assert "CRASH_APP_ERROR" in _last(slack) and "asr-conformer" in _last(slack)
    assert _pending(prefix) is None


async def test_a_thumbs_up_picks_it_too(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await _start(h, "why did asr-conformr fail in speech on dgx-prod?")
        await _say(h, ":+1:", 1)
    assert "CRASH_APP_ERROR" in _last(slack)


async def test_no_ends_the_question(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await _start(h, "why did asr-conformr fail in speech on dgx-prod?")
        await _say(h, "nope", 1)
    posted = [c.body.get("text") or "" for c in slack.of("chat.postMessage")]
    assert any("dropped the question about `asr-conformr`" in t for t in posted), posted
    assert _pending(prefix) is None
    assert not any("nope" in (u.get("text") or "") for u in finals(slack))  # never diagnosed as a name


async def test_an_ordinal_picks_by_position(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await _start(h, "why did asr-conformer fail in project speech?")
        assert _pending(prefix)["missing"] == ["cluster"]
        await _say(h, "the first one", 1)
    assert "CRASH_APP_ERROR" in _last(slack)


async def test_a_part_of_one_choices_name_picks_it(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await _start(h, "why did asr-conformer fail in project speech?")
        await _say(h, "prod", 1)
    assert "CRASH_APP_ERROR" in _last(slack)


async def test_a_part_of_a_workloads_name_picks_it(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, CASE, mutate=_with_v2) as h:
        await _start(h, "asr-conformer or asr-conformer-v2, which one broke? project speech on dgx-prod")
        pending = _pending(prefix)
        assert pending is not None and {c["value"] for c in pending["choices"]} == {"asr-conformer", V2}
        await _say(h, "the v2 one", 1)
    assert "CRASH_APP_ERROR" in _last(slack) and V2 in _last(slack)


async def test_a_correction_replaces_the_workload_and_keeps_the_scope(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, CASE, mutate=_with_v2) as h:
        await _start(h, "why did asr-conformer fail in project speech?")
        assert _pending(prefix)["missing"] == ["cluster"]
        await _say(h, "sorry, I meant asr-conformer-v2", 1)
        pending = _pending(prefix)  # the cluster is still asked, about the corrected workload, in project speech
        assert pending is not None and pending["question"]["workload_name"] == V2
        assert pending["question"]["project"] == "speech"
        await _say(h, "dgx-prod", 2)
    assert "CRASH_APP_ERROR" in _last(slack) and V2 in _last(slack)


async def test_a_later_mention_in_the_thread_keeps_its_cluster_and_project(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, CASE, mutate=_with_v2) as h:
        await _start(h, "why did asr-conformer fail in speech on dgx-prod?")
        assert "CRASH_APP_ERROR" in _last(slack)
        await h.event(mention(f"and {V2}?", "500.000400", channel=BARE, thread_ts=ROOT_TS))
        await h.settle()
    assert V2 in _last(slack) and "CRASH_APP_ERROR" in _last(slack), _last(slack)


async def test_the_short_id_the_bot_showed_picks_that_workload(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, CASE, mutate=_with_twin) as h:
        await _start(h, "why did asr-conformer fail in speech on dgx-prod?")
        pending = _pending(prefix)
        assert pending is not None and TWIN in {c["value"] for c in pending["choices"]}
        await _say(h, f"it's {TWIN[:8]}", 1)
    assert "CRASH_APP_ERROR" in _last(slack)
    answered = [c.body for c in slack.of("chat.update")][-1]
    assert TWIN in str(answered), "the workload picked by its short id is the one diagnosed"


async def test_digest_in_a_thread_with_a_pending_question_is_a_digest_and_the_question_stays(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await _start(h, "why did asr-conformer fail in project speech?")
        await _say(h, "what failed today?", 1)
        assert _pending(prefix) is not None, "the question is still pending"
        posted = [c.body.get("text") or "" for c in slack.of("chat.postMessage")]
        assert any("Failures digest" in t for t in posted), posted
        await _say(h, "dgx-prod", 2)
    assert "CRASH_APP_ERROR" in _last(slack)


async def test_a_name_in_another_project_is_offered_first_and_yes_takes_it(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    def second_project(snapshot: dict[str, Any]) -> None:
        project = dict(snapshot["runai"]["projects"][0], id="99", name="audio")
        snapshot["runai"]["projects"].append(project)

    async with running(slack, prefix, tmp_path, CASE, mutate=second_project) as h:
        await _start(h, "why did asr-conformer fail in audio on dgx-prod?")
        assert "`asr-conformer` is in project `speech`: is that the one?" in _last(slack)
        await _say(h, "yes", 1)
    assert "CRASH_APP_ERROR" in _last(slack) and "asr-conformer" in _last(slack)
