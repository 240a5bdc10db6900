"""Who hears what (issue 11, issue 15), end to end: signed requests -> the real AsyncApp -> the real core -> the
sandbox, replies to the mock Web API, state in a real Redis.

A report is public; errors, help for a mistyped command and refusals go to the asker only (an ephemeral
message, or a slash command's ``response_url``). An error or a refusal that comes after the public
"diagnosing…" message turns that message into a neutral line (the same words for both). A typed reply while
Redis is away is told its question is lost; a user authorised through a Slack user group may answer a
follow-up question by typing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import redis

from bot.policy import Policy
from handlers.messages import ANSWERED_PRIVATELY, CONVERSATION_LOST, REFUSAL
from tests.handlers.test_slack_e2e import (
    ALICE,
    BARE,
    CHAN,
    EVE,
    MALLORY,
    POLICY,
    _Proxy,
    finals,
    headers_of,
    running,
)
from tests.slack_mock import REDIS_URL, TEAM, SlackMock, mention, thread_message

PROJECT_CHAN = "C0NLP0001"  # defaults: cluster dgx-prod, project nlp
BOB = "U0BOB0001"  # authorised through the Slack user group S0MLTEAM only
WITH_GROUPS = Policy.from_dict(
    {
        "groups": {"ml": [ALICE]},
        "access": [
            {"who": ["@ml", "S0MLTEAM"], "clusters": ["*"], "projects": ["*"]},
            {"who": [MALLORY], "clusters": ["dgx-prod"], "projects": ["speech"]},
        ],
        "channels": {CHAN: {"cluster": "dgx-prod"}, PROJECT_CHAN: {"cluster": "dgx-prod", "project": "nlp"}},
    }
)


def _public(slack: SlackMock) -> str:
    return json.dumps([c.body for c in slack.public()])


def _unreachable(snapshot: dict[str, Any]) -> None:
    """The Run:ai API answers 503 to everything (more times than the client retries)."""
    snapshot["faults"] = [{"path": "/api/v1/*", "status": 503, "times": 1000}]


# -- /diagnose <one word> ------------------------------------------------------------------------------


async def test_a_mistyped_command_gets_private_help_and_nothing_in_the_channel(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, "text-only-question", policy=WITH_GROUPS) as h:
        resp = await h.command("asdkjh", user=ALICE, channel=CHAN)
        await h.settle()
        assert resp.status_code == 200
        assert slack.public() == [], _public(slack)
        told = slack.private()
        assert len(told) == 1 and told[0]["response_type"] == "ephemeral"
        assert "no workload or workflow named `asdkjh`" in told[0]["text"]
        assert "/diagnose <workload name or id>" in told[0]["text"]  # the usage follows
        # in a channel whose defaults name the project, the closest existing names are suggested
        await h.command("train-gpt3", user=ALICE, channel=PROJECT_CHAN)
        await h.settle()
    assert slack.public() == [], _public(slack)
    suggested = slack.private()[-1]["text"]
    assert "`train-gpt3`" in suggested and "in project nlp" in suggested
    assert "Did you mean `/diagnose train-gpt2`?" in suggested
    slack.check_payloads()


async def test_a_lone_name_that_exists_is_still_answered_in_the_channel(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, "text-only-question", policy=WITH_GROUPS) as h:
        await h.command("train-gpt2", user=ALICE, channel=PROJECT_CHAN)
        await h.settle()
    assert "Diagnosing `train-gpt2`" in slack.of("chat.postMessage")[0].body["text"]
    assert headers_of(finals(slack)[-1]) == ["💥 OOM killed"]
    assert slack.private() == []
    slack.check_payloads(allowed_mentions=(ALICE,))


# -- errors after "diagnosing…" ------------------------------------------------------------------------


async def test_an_error_goes_to_the_asker_and_the_channel_sees_a_neutral_line(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, "text-only-question", mutate=_unreachable) as h:
        await h.command("train-gpt2 project=nlp", user=ALICE, channel=CHAN)
        await h.event(mention("why did train-gpt2 fail in project nlp?", "800.000100", channel=CHAN))
        await h.settle()
    # both "diagnosing…" messages (the command's root, the mention's thread reply) became the neutral line
    assert [u["text"] for u in finals(slack)] == [ANSWERED_PRIVATELY, ANSWERED_PRIVATELY]
    assert "couldn't reach" not in _public(slack)
    by_response_url = [b for b in slack.private() if "response_type" in b]
    assert len(by_response_url) == 1 and "couldn't reach the cluster's API" in by_response_url[0]["text"]
    ephemeral = [c.body for c in slack.of("chat.postEphemeral")]
    assert [(b["user"], b["thread_ts"]) for b in ephemeral] == [(ALICE, "800.000100")]
    assert "couldn't reach the cluster's API" in ephemeral[0]["text"] and "ref" in ephemeral[0]["text"]
    slack.check_payloads(allowed_mentions=(ALICE,))


# -- typed follow-up replies ---------------------------------------------------------------------------


async def test_a_refusal_on_a_typed_reply_is_private(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, "missing-cluster", policy=POLICY) as h:
        await h.event(
            mention("why did asr-conformer fail in project speech?", "810.000100", user=MALLORY, channel=BARE)
        )
        await h.settle()
        assert headers_of(finals(slack)[-1]) == ["❔ Need more information"]
        # Mallory may diagnose on dgx-prod only
        await h.event(thread_message("dgx-staging", "810.000200", "810.000100", user=MALLORY, channel=BARE))
        await h.settle()
    assert REFUSAL not in _public(slack)
    told = [c.body for c in slack.of("chat.postEphemeral")]
    assert [(b["text"], b["user"], b["thread_ts"]) for b in told] == [(REFUSAL, MALLORY, "810.000100")]


async def test_a_user_group_member_may_answer_a_follow_up_by_typing(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    slack.usergroups = {"S0MLTEAM": [BOB]}
    async with running(slack, prefix, tmp_path, "missing-cluster", policy=WITH_GROUPS) as h:
        await h.event(mention("why did asr-conformer fail in project speech?", "820.000100", user=BOB, channel=BARE))
        await h.settle()
        assert headers_of(finals(slack)[-1]) == ["❔ Need more information"]
        await h.event(thread_message("dgx-prod", "820.000200", "820.000100", user=BOB, channel=BARE))
        await h.settle()
    assert headers_of(finals(slack)[-1]) == ["🔥 Crashed (application error)"]
    assert REFUSAL not in slack.texts()


async def test_a_typed_reply_while_redis_is_down_is_told_to_ask_again(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    proxy = _Proxy()
    await proxy.start()
    try:
        async with running(
            slack, prefix, tmp_path, "missing-cluster", redis_url=f"redis://127.0.0.1:{proxy.port}/0"
        ) as h:
            await h.event(mention("why did asr-conformer fail in project speech?", "830.000100", channel=BARE))
            await h.settle()
            assert headers_of(finals(slack)[-1]) == ["❔ Need more information"]
            await proxy.cut()
            await h.event(thread_message("dgx-prod", "830.000200", "830.000100", channel=BARE))
            # a reply in a thread where nothing was asked still gets nothing
            await h.event(thread_message("dgx-prod", "831.000200", "831.000100", channel=BARE))
            await h.settle()
    finally:
        await proxy.cut()
    told = [c.body for c in slack.of("chat.postEphemeral")]
    assert [(b["text"], b["user"], b["thread_ts"]) for b in told] == [(CONVERSATION_LOST, ALICE, "830.000100")]
    assert headers_of(finals(slack)[-1]) == ["❔ Need more information"]  # nothing was guessed


async def test_a_typed_reply_while_redis_is_down_reaching_another_replica_is_told_to_ask_again(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    """Replica 1 asks the follow-up question; Redis goes away; the reply is delivered to replica 2, which never
    asked anything: it reads the thread from Slack (the bot posted there) and tells the asker privately."""
    proxy = _Proxy()
    await proxy.start()
    url = f"redis://127.0.0.1:{proxy.port}/0"
    (tmp_path / "r1").mkdir()
    (tmp_path / "r2").mkdir()
    try:
        async with (
            running(slack, prefix, tmp_path / "r1", "missing-cluster", redis_url=url) as first,
            running(slack, prefix, tmp_path / "r2", "missing-cluster", redis_url=url) as second,
        ):
            await first.event(mention("why did asr-conformer fail in project speech?", "840.000100", channel=BARE))
            await first.settle()
            assert headers_of(finals(slack)[-1]) == ["❔ Need more information"]
            await proxy.cut()
            await second.event(thread_message("dgx-prod", "840.000200", "840.000100", channel=BARE))
            # a thread the bot never posted in still gets nothing
            await second.event(thread_message("dgx-prod", "841.000200", "841.000100", channel=BARE))
            await second.settle()
    finally:
        await proxy.cut()
    told = [c.body for c in slack.of("chat.postEphemeral")]
    assert [(b["text"], b["user"], b["thread_ts"]) for b in told] == [(CONVERSATION_LOST, ALICE, "840.000100")]
    assert [c.body for c in slack.of("conversations.replies")] != []  # it was read, never written


# -- other people in the asker's thread ----------------------------------------------------------------


def _pending(prefix: str, channel: str, root: str) -> bytes | None:
    client = redis.Redis.from_url(REDIS_URL)
    try:
        value: bytes | None = client.get(f"{prefix}conv:{TEAM}:{channel}:{root}")
        return value
    finally:
        client.close()


async def test_someone_elses_words_in_the_thread_leave_the_askers_question_pending(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    """A bystander (no access at all, or access to another cluster only) typing in the asker's thread neither
    consumes the pending question nor gets a lookup run on their word; the asker's own reply is answered."""
    async with running(slack, prefix, tmp_path, "missing-cluster") as h:
        await h.event(mention("why did asr-conformer fail in project speech?", "850.000100", channel=BARE))
        await h.settle()
        before = len(slack.posted())
        await h.event(thread_message("thanks", "850.000200", "850.000100", channel=BARE, user=EVE))
        await h.event(thread_message("dgx-staging", "850.000300", "850.000100", channel=BARE, user=MALLORY))
        await h.settle()
        assert _pending(prefix, BARE, "850.000100") is not None, "a bystander's words consumed the question"
        assert len(slack.posted()) == before, "nothing is posted, refused or rewritten for a bystander"
        await h.event(thread_message("dgx-prod", "850.000400", "850.000100", channel=BARE, user=ALICE))
        await h.settle()
    assert "CRASH_APP_ERROR" in json.dumps(finals(slack))


async def test_chatter_in_an_answered_thread_while_redis_is_down_is_not_told_anything(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    """The bot's newest message in the thread is an answer, not a question: a "thanks" typed there while Redis
    is away is not a lost reply (the lost-conversation notice is for a pending question only)."""
    proxy = _Proxy()
    await proxy.start()
    try:
        async with running(
            slack, prefix, tmp_path, "missing-cluster", redis_url=f"redis://127.0.0.1:{proxy.port}/0"
        ) as h:
            await h.event(
                mention("why did asr-conformer fail in project speech on dgx-prod?", "860.000100", channel=BARE)
            )
            await h.settle()
            await proxy.cut()
            await h.event(thread_message("thanks, that was it!", "860.000200", "860.000100", channel=BARE))
            await h.settle()
    finally:
        await proxy.cut()
    assert [c.body for c in slack.of("chat.postEphemeral")] == []


async def test_a_failed_user_group_lookup_is_not_remembered(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    """Slack failing one ``usergroups.users.list`` refuses that one request (nothing is known), but the next
    request, on another replica with Slack healthy again, reads the group afresh and is answered."""
    group, member = "S0MLPLAT01", "U0GROUPIE1"
    policy = Policy.from_dict({"access": [{"who": [group], "clusters": ["*"], "projects": ["*"]}]})
    slack.usergroups[group] = [member]
    slack.error_next("usergroups.users.list", "internal_error")
    question = "why did asr-conformer fail in project speech on dgx-prod?"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with running(slack, prefix, tmp_path / "a", "missing-cluster", policy=policy) as h:
        await h.event(mention(question, "870.000100", user=member, channel=BARE))
        await h.settle()
    refused = len(slack.of("chat.postEphemeral"))
    async with running(slack, prefix, tmp_path / "b", "missing-cluster", policy=policy) as h:
        await h.event(mention(question, "871.000100", user=member, channel=BARE))
        await h.settle()
    assert len(slack.of("chat.postEphemeral")) == refused, "refused again: the failed lookup was cached"
    assert "CRASH_APP_ERROR" in json.dumps(finals(slack))


async def test_a_workload_id_tells_nothing_to_someone_not_allowed_the_whole_cluster(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    """MALLORY may see project speech on dgx-prod only: an id that exists in nlp and an id that exists nowhere
    get the same private refusal and the same neutral public line (no existence oracle)."""
    async with running(slack, prefix, tmp_path, "text-only-question") as h:
        await h.command("81756caa-8d05-b3ba-2455-e65677f43d87", user=MALLORY, channel=CHAN)  # exists, in nlp
        await h.settle()
        exists = (finals(slack)[-1].get("text"), [c.body.get("text") for c in slack.of("chat.postEphemeral")])
        await h.command("11111111-2222-3333-4444-555555555555", user=MALLORY, channel=CHAN)  # exists nowhere
        await h.settle()
        missing = (finals(slack)[-1].get("text"), [c.body.get("text") for c in slack.of("chat.postEphemeral")])
    assert exists[0] == missing[0] == ANSWERED_PRIVATELY, (exists, missing)
    assert "Not found" not in _public(slack)
