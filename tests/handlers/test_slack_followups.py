"""Follow-ups as slot filling (issue 11 §2), end to end: signed requests -> the real AsyncApp -> the real core ->
the sandbox, replies to the mock Web API, pending questions in a real Redis. Every follow-up path: a one-word reply,
combined replies, ``help`` and ``cancel`` mid-conversation, a new question in the thread, a cluster that does not
exist (answered by a button), and a reply answered by another bot process sharing the Redis."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.handlers.test_slack_e2e import ALICE, BARE, CHAN, finals, running
from tests.slack_mock import REDIS_URL, TEAM, SlackMock, buttons_of, command_body, mention, thread_message

ROOT_TS = "500.000100"
CASE = "missing-cluster"  # asr-conformer in project speech on dgx-prod (of dgx-prod, dgx-staging)


def _key(prefix: str, channel: str = BARE, root: str = ROOT_TS) -> str:
    return f"{prefix}conv:{TEAM}:{channel}:{root}"


def _pending(prefix: str, channel: str = BARE, root: str = ROOT_TS) -> dict[str, Any] | None:
    raw = redis.Redis.from_url(REDIS_URL).get(_key(prefix, channel, root))
    return json.loads(raw) if raw else None


def _diagnosed(slack: SlackMock) -> bool:
    return any("CRASH_APP_ERROR" in (u.get("text") or "") for u in finals(slack))


async def _ask_without_scope(h: Any, slack: SlackMock, text: str = "why did asr-conformer fail?") -> dict[str, Any]:
    await h.event(mention(text, ROOT_TS, channel=BARE))
    await h.settle()
    return finals(slack)[-1]


async def test_one_word_reply_fills_the_one_slot_asked_and_the_clusters_are_buttons(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        asked = await _ask_without_scope(h, slack, "why did asr-conformer fail in speech?")
        assert _pending(prefix)["missing"] == ["cluster"]  # "in speech": the project exists, so it is filled
        labels = [b["text"]["text"] for b in buttons_of(asked["blocks"])]
        # the clusters that have a project "speech" are offered; the cluster is still asked, never inferred
        assert labels == ["dgx-prod"], asked
        await h.event(thread_message("dgx-prod", "500.000300", ROOT_TS, channel=BARE))
        await h.settle()
    assert _diagnosed(slack)
    assert _pending(prefix) is None


@pytest.mark.parametrize(
    "reply", ["speech on dgx-prod", "project speech cluster dgx-prod", "cluster=dgx-prod project=speech"]
)
async def test_a_combined_reply_fills_what_it_names(slack: SlackMock, prefix: str, tmp_path: Path, reply: str) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await _ask_without_scope(h, slack)
        assert sorted(_pending(prefix)["missing"]) == ["cluster", "project"]
        await h.event(thread_message(reply, "500.000300", ROOT_TS, channel=BARE))
        await h.settle()
    assert _diagnosed(slack), [u.get("text") for u in finals(slack)]


async def test_a_cluster_uuid_reply_is_the_cluster(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await _ask_without_scope(h, slack, "why did asr-conformer fail in project speech?")
        reply = "71f69d83-ba66-4822-adf5-55ce55efd210"
        await h.event(thread_message(reply, "500.000300", ROOT_TS, channel=BARE))
        await h.settle()
    assert _diagnosed(slack)


async def test_help_mid_conversation_keeps_the_question_and_cancel_drops_it(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await _ask_without_scope(h, slack, "why did asr-conformer fail in project speech?")
        await h.event(thread_message("help", "500.000300", ROOT_TS, channel=BARE))
        await h.settle()
        # help goes to the asker only, in the thread (issue 11)
        helped = slack.of("chat.postEphemeral")[-1].body
        assert (helped["user"], helped["thread_ts"]) == (ALICE, ROOT_TS)
        assert "/diagnose" in helped["text"] and "Still waiting for the cluster" in helped["text"]
        assert "Still waiting" not in json.dumps([c.body for c in slack.public()])
        assert _pending(prefix) is not None  # kept, visibly
        assert "no cluster named" not in slack.texts()
        await h.event(thread_message("cancel", "500.000400", ROOT_TS, channel=BARE))
        await h.settle()
        assert "I dropped the question" in slack.of("chat.postMessage")[-1].body["text"]
        assert _pending(prefix) is None
        await h.event(thread_message("dgx-prod", "500.000500", ROOT_TS, channel=BARE))
        await h.settle()
    assert not _diagnosed(slack)  # nothing pending any more: the reply is not taken for an answer


async def test_a_new_question_in_the_thread_replaces_the_pending_one(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await _ask_without_scope(h, slack, "why did asr-conformer fail in project speech?")
        text = "why did asr-conformr fail in speech on dgx-prod?"
        await h.event(thread_message(text, "500.000300", ROOT_TS, channel=BARE))
        await h.settle()
        last = finals(slack)[-1]
        # the new question was answered (no such name: the closest is offered as a button), not read as a cluster
        assert "asr-conformr" in last["text"] and "Did you mean `asr-conformer`" in json.dumps(last)
        assert buttons_of(last["blocks"])[0]["text"]["text"].startswith("asr-conformer (Failed")
        pending = _pending(prefix)
        assert pending is not None and pending["question"]["workload_name"] == "asr-conformr"
        await h.click(
            buttons_of(last["blocks"])[0], {"ts": last["ts"], "blocks": last["blocks"]}, user=ALICE, channel=BARE
        )
        await h.settle()
    assert _diagnosed(slack)


async def test_a_cluster_that_does_not_exist_gets_the_real_ones_as_buttons(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await _ask_without_scope(h, slack, "why did asr-conformer fail in project speech?")
        await h.event(thread_message("dgx-nope", "500.000300", ROOT_TS, channel=BARE))
        await h.settle()
        asked = finals(slack)[-1]
        assert "no cluster named 'dgx-nope'" in json.dumps(asked)
        buttons = buttons_of(asked["blocks"])
        assert [b["text"]["text"] for b in buttons] == ["dgx-prod", "dgx-staging"]
        await h.click(buttons[0], {"ts": asked["ts"], "blocks": asked["blocks"]}, user=ALICE, channel=BARE)
        await h.settle()
    assert _diagnosed(slack)


async def test_a_follow_up_is_answered_by_another_process_sharing_the_redis(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, CASE) as first:
        await _ask_without_scope(first, slack, "why did asr-conformer fail in project speech?")
    assert _pending(prefix) is not None
    async with running(slack, prefix, tmp_path, CASE) as second:  # a new process, the same Redis and prefix
        await second.event(thread_message("dgx-prod", "500.000300", ROOT_TS, channel=BARE))
        await second.settle()
    assert _diagnosed(slack)
    assert _pending(prefix) is None


async def test_a_mistyped_command_gets_help_privately(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await h.send(
            command_body("??", user=ALICE, channel=CHAN, response_url=slack.response_url("typo")),
            "application/x-www-form-urlencoded",
        )
        await h.settle()
    assert all("/diagnose" not in c.body.get("text", "") for c in slack.of("chat.postMessage"))


async def test_the_projects_holding_that_name_are_offered_as_buttons(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, CASE) as h:
        await h.event(mention("asr-conformer broke again!!", ROOT_TS, channel=CHAN))  # CHAN: cluster dgx-prod
        await h.settle()
        asked = finals(slack)[-1]
        buttons = buttons_of(asked["blocks"])
        assert [b["text"]["text"] for b in buttons] == ["speech"], asked
        await h.click(buttons[0], {"ts": asked["ts"], "blocks": asked["blocks"]}, user=ALICE, channel=CHAN)
        await h.settle()
    assert _diagnosed(slack)
