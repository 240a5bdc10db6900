"""The terminal twin runs the same follow-up logic as Slack (issue 11 §2, §4): the real core against the sandbox,
lines typed one after another, a pending question that never swallows ``help`` and is replaced by a new question."""

from __future__ import annotations

import io

import pytest

from bot.chat import chat
from bot.cli import backends_for
from bot.policy import Policy
from tests.paths import TESTS

CASE = TESTS / "fixtures" / "cases" / "runai" / "missing-cluster.json"


async def _chat(lines: list[str]) -> str:
    feed = iter([*lines, "quit"])
    out = io.StringIO()
    with backends_for(str(CASE)) as (backends, _ask):
        await chat(backends, read=lambda: next(feed), out=out)
    return out.getvalue()


async def test_help_mid_conversation_then_a_one_word_reply() -> None:
    text = await _chat(["why did asr-conformer fail in project speech?", "help", "dgx-prod"])
    assert "Still waiting for the cluster" in text
    assert "no cluster named 'help'" not in text
    assert "CRASH_APP_ERROR" in text


@pytest.mark.parametrize(
    "reply", ["speech on dgx-prod", "project speech cluster dgx-prod", "cluster=dgx-prod project=speech"]
)
async def test_a_combined_reply(reply: str) -> None:
    text = await _chat(["why did asr-conformer fail?", reply])
    assert "CRASH_APP_ERROR" in text


async def test_the_clusters_are_offered_and_a_number_picks_one() -> None:
    text = await _chat(["why did asr-conformer fail in speech?", "1"])
    # only the clusters that have a project "speech" are offered (FORMAT.md "Questions"); "1" picks the first
    assert "[1] dgx-prod" in text and "dgx-staging" not in text and "CRASH_APP_ERROR" in text


async def test_a_cluster_that_does_not_exist_lists_the_real_ones() -> None:
    text = await _chat(["why did asr-conformer fail in project speech?", "dgx-nope", "dgx-prod"])
    assert "no cluster named 'dgx-nope'" in text and "dgx-staging" in text
    assert "CRASH_APP_ERROR" in text


async def test_a_new_question_replaces_the_pending_one_and_cancel_drops_it() -> None:
    text = await _chat(
        ["why did asr-conformer fail in project speech?", "why did asr-conformr fail in speech on dgx-prod?", "cancel"]
    )
    assert "Did you mean `asr-conformer`" in text
    assert "I dropped the question about `asr-conformr`" in text


async def test_a_mistyped_command_in_the_terminal_gets_the_help_and_no_stand_in() -> None:
    """``/diagnose <a name that exists nowhere>``: the help the Slack asker gets privately, printed as is (the
    terminal has no channel, so there is no neutral "told privately" line)."""
    feed = iter(["/diagnose asdkjh", "quit"])
    out = io.StringIO()
    with backends_for(str(CASE)) as (backends, _ask):
        policy = Policy.from_dict({"channels": {"terminal": {"cluster": "dgx-prod"}}})
        await chat(backends, policy=policy, read=lambda: next(feed), out=out)
    text = out.getvalue()
    assert "no workload or workflow named `asdkjh`" in text and "/diagnose <workload name or id>" in text
    assert "Diagnosing" not in text and "privately" not in text
