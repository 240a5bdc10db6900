"""End to end: signed requests -> the real AsyncApp behind its Starlette adapter -> the real core ->
the sandbox; replies go to a mock Slack Web API that records every call; state in a real Redis."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import redis

from bot.app import build_bot, http_app
from bot.cli import backends_for
from bot.policy import Policy
from bot.settings import Settings
from handlers.doctor import REFUSAL
from handlers.messages import ANSWERED_PRIVATELY
from handlers.middleware import RATE_LIMITED
from tests.paths import TESTS
from tests.slack_mock import (
    REDIS_URL,
    SECRET,
    TEAM,
    TOKEN,
    Harness,
    SlackMock,
    buttons_of,
    command_body,
    mention,
    sign,
    thread_message,
)

CASES = TESTS / "fixtures" / "cases" / "runai"
ALICE = "U0ALICE01"
MALLORY = "U0MALLORY"
EVE = "U0EVE0001"
CHAN = "C0CHAN001"  # defaults: cluster dgx-prod
BARE = "C0BARE001"  # no defaults
POLICY = Policy.from_dict(
    {
        "groups": {"ml": [ALICE]},
        "access": [
            {"who": ["@ml"], "clusters": ["*"], "projects": ["*"]},
            {"who": [MALLORY], "clusters": ["dgx-prod"], "projects": ["speech"]},
        ],
        "channels": {CHAN: {"cluster": "dgx-prod"}},
    }
)


@contextlib.asynccontextmanager
async def running(
    slack: SlackMock,
    prefix: str,
    tmp_path: Path,
    case: str,
    *,
    mutate: Callable[[dict[str, Any]], None] | None = None,
    redis_url: str = REDIS_URL,
    rate_limit: int = 100,
    policy: Policy = POLICY,
) -> AsyncIterator[Harness]:
    snapshot = json.loads((CASES / f"{case}.json").read_text())
    if mutate:
        mutate(snapshot)
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps(snapshot))
    settings = Settings(
        bot_token=TOKEN,
        signing_secret=SECRET,
        redis_url=redis_url,
        api_url=slack.api_url,
        rate_limit=rate_limit,
        key_prefix=prefix,
    )
    with backends_for(str(path)) as (backends, _ask):
        bot = build_bot(settings, backends, policy=policy)
        app = http_app(bot)
        await bot.start()  # what the HTTP lifespan does: the connection pools, the watch sweeper
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bot") as http:
            harness = Harness(slack, bot, http)
            try:
                yield harness
                await harness.settle()
            finally:
                await bot.close(grace=30)


def finals(slack: SlackMock) -> list[dict[str, Any]]:
    """Bodies of chat.update calls (the "diagnosing…" message replaced by the answer)."""
    return [c.body for c in slack.of("chat.update")]


def headers_of(body: dict[str, Any]) -> list[str]:
    """The card's verdict in words (the header without the workload name)."""
    return [b["text"]["text"].split(": ")[0] for b in body.get("blocks") or [] if b.get("type") == "header"]


# -- signatures ----------------------------------------------------------------------------------


async def test_bad_signature_and_stale_timestamp_are_401(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, "text-only-question") as h:
        body = command_body("train-gpt2 project=nlp")
        ctype = {"content-type": "application/x-www-form-urlencoded"}
        bad = await h.http.post("/slack/events", content=body, headers={**ctype, **sign(body, secret="wrong")})
        stale = await h.http.post(
            "/slack/events", content=body, headers={**ctype, **sign(body, timestamp=int(time.time()) - 400)}
        )
        ok = await h.http.get("/healthz")
        ready = await h.http.get("/readyz")
    assert bad.status_code == 401
    assert stale.status_code == 401
    assert ok.status_code == 200 and ready.status_code == 200
    assert slack.posted() == []


async def test_the_bot_opens_its_connection_pools_at_start_and_closes_them(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    from diagnosis import http as core_http

    async with running(slack, prefix, tmp_path, "text-only-question") as h:
        session = h.bot.app.client.session
        assert session is not None and not session.closed, "one Web API session for every call"
        assert asyncio.get_running_loop() in core_http._POOLS, "one Run:ai/OSMO pool for every diagnosis"
        await h.command("train-gpt2 project=nlp", user=ALICE, channel=CHAN)
        await h.settle()
        assert headers_of(finals(slack)[-1]) == ["💥 OOM killed"]
    assert session.closed
    assert asyncio.get_running_loop() not in core_http._POOLS


# -- /diagnose -----------------------------------------------------------------------------------


async def test_slash_command_happy_path(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, "text-only-question") as h:
        resp = await h.command("train-gpt2 project=nlp", user=ALICE, channel=CHAN)
        assert resp.status_code == 200
        await h.settle()
    posts = slack.of("chat.postMessage")
    assert "Diagnosing" in posts[0].body["text"] and posts[0].body["channel"] == CHAN
    final = finals(slack)[-1]
    assert final["ts"] == "1764000000.000001"  # the "diagnosing…" message, updated in place
    assert headers_of(final) == ["💥 OOM killed"]
    assert "OOMKilled" in json.dumps(final)
    assert "train-gpt2" in json.dumps(final) and "dgx-prod" in json.dumps(final)
    assert h.acked_at[0] < slack.of("chat.update")[0].at
    slack.check_payloads(allowed_mentions=(ALICE,))


async def test_help_and_not_a_question(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, "text-only-question") as h:
        resp = await h.command("help", user=ALICE, channel=CHAN)
        assert "/diagnose" in resp.json()["text"]
        await h.event(mention("hello there, nice weather", "200.000100", channel=CHAN))
        await h.settle()
    # the help for something that is not a question goes to the asker only, under their mention (issue 11)
    assert slack.of("chat.postMessage") == []
    replies = [c.body for c in slack.of("chat.postEphemeral")]
    assert [(r["user"], r["thread_ts"]) for r in replies] == [(ALICE, "200.000100")]
    assert "failed workloads" in replies[0]["text"]
    assert slack.of("chat.update") == []
    slack.check_payloads()


# -- mentions, dedup -----------------------------------------------------------------------------


async def test_mention_in_thread_answers_in_the_thread_once(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    text = "what killed train-gpt2 in project nlp on cluster dgx-prod?"
    async with running(slack, prefix, tmp_path, "text-only-question") as h:
        event = mention(text, "300.000200", channel=BARE, thread_ts="300.000100")
        await h.event(event, "Ev0MENTION1")
        # Slack redelivers the same event (same event_id) ...
        await h.event(event, "Ev0MENTION1", headers={"x-slack-retry-num": "1", "x-slack-retry-reason": "http_timeout"})
        # ... and the message.channels copy of the same post arrives with another event_id
        copy = {**event, "type": "message", "channel_type": "channel"}
        await h.event(copy, "Ev0MESSAGE1")
        # a second app_mention delivery under a new id (e.g. from another replica's subscription)
        await h.event(event, "Ev0MENTION2")
        await h.settle()
    posts = slack.of("chat.postMessage")
    assert len(posts) == 1, [p.body["text"] for p in posts]
    assert posts[0].body["thread_ts"] == "300.000100"
    assert len(finals(slack)) == 1
    assert headers_of(finals(slack)[0]) == ["💥 OOM killed"]
    slack.check_payloads()


# -- follow-ups ----------------------------------------------------------------------------------


async def test_follow_up_asked_and_answered_by_typed_reply(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, "missing-cluster") as h:
        await h.event(mention("why did asr-conformer fail in project speech?", "400.000100", channel=BARE))
        await h.settle()
        asked = finals(slack)[-1]
        assert headers_of(asked) == ["❔ Need more information"]
        assert "cluster" in json.dumps(asked).lower()
        key = f"{prefix}conv:{TEAM}:{BARE}:400.000100"
        stored = redis.Redis.from_url(REDIS_URL).get(key)
        assert stored is not None and json.loads(stored)["missing"] == ["cluster"]
        # an unrelated reply in another thread does nothing
        await h.event(thread_message("dgx-prod", "401.000100", "999.000100", channel=BARE))
        # the answer, typed in the thread (no mention)
        await h.event(thread_message("dgx-prod", "400.000300", "400.000100", channel=BARE))
        await h.settle()
        assert redis.Redis.from_url(REDIS_URL).get(key) is None  # consumed
    final = finals(slack)[-1]
    assert headers_of(final) == ["🔥 Crashed (application error)"], final["text"]
    assert "asr-conformer" in json.dumps(final)
    assert all(p.body["thread_ts"] == "400.000100" for p in slack.of("chat.postMessage"))
    slack.check_payloads()


def _tie(snapshot: dict[str, Any]) -> None:
    """Two terminal resnet-sweep workloads updated at the same instant: the core cannot pick one."""
    w0, w1 = (e["workload"] for e in snapshot["runai"]["workloads"][:2])
    w0["phase"] = "Failed"
    w0["phaseUpdatedAt"] = w1["phaseUpdatedAt"]


async def test_several_candidates_answered_by_button(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, "option-b-two-matches", mutate=_tie) as h:
        await h.command("resnet-sweep project=vision", user=ALICE, channel=CHAN)
        await h.settle()
        asked = finals(slack)[-1]
        buttons = buttons_of(asked["blocks"])
        assert len(buttons) == 2, asked
        root = asked["ts"]
        chosen = json.loads(buttons[1]["value"])
        assert chosen["f"] == "workload_id" and chosen["t"] == root
        # a forged value, not one of the core's choices, is refused: never an invented id
        forged = {**buttons[0], "value": json.dumps({"f": "workload_id", "v": str(uuid.uuid4()), "t": root})}
        await h.click(forged, {"ts": root, "blocks": asked["blocks"]}, user=ALICE)
        await h.settle()
        assert "no longer offered" in slack.of("webhook")[-1].body["text"]
        await h.click(buttons[1], {"ts": root, "blocks": asked["blocks"]}, user=ALICE)
        await h.settle()
    updates = finals(slack)
    replaced = [u for u in updates if u["ts"] == root][-1]
    assert buttons_of(replaced["blocks"]) == []  # the buttons are gone once answered
    answer = [u for u in updates if u["ts"] != root][-1]
    assert chosen["v"] in json.dumps(answer)
    assert headers_of(answer)[0] != "❔ Need more information"
    assert all(p.body.get("thread_ts") == root for p in slack.of("chat.postMessage")[1:])
    slack.check_payloads(allowed_mentions=(ALICE,))


# -- policy, rate limit --------------------------------------------------------------------------


async def test_refused_by_policy_without_revealing_existence(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, "text-only-question") as h:
        no_rule = await h.command("train-gpt2 project=nlp", user=EVE, channel=CHAN)
        await h.command("train-gpt2 project=nlp", user=MALLORY, channel=CHAN)  # exists
        await h.command("no-such-job project=nlp", user=MALLORY, channel=CHAN)  # does not
        # by id: the project is only known once the core resolved it; checked again before showing
        await h.command("81756caa-8d05-b3ba-2455-e65677f43d87", user=MALLORY, channel=CHAN)
        await h.settle()
    assert no_rule.json()["text"] == REFUSAL
    # every refusal goes to the asker only, the one found after resolving too (issue 11) ...
    private = [(c.body["text"], c.body["response_type"]) for c in slack.of("webhook")]
    assert private == [(REFUSAL, "ephemeral")] * 3, private
    # ... and the public "diagnosing…" message of that one becomes a neutral line, not the refusal
    assert [u["text"] for u in finals(slack)] == [ANSWERED_PRIVATELY]
    assert REFUSAL not in json.dumps([c.body for c in slack.public()])
    assert "train-gpt2" not in slack.texts() and "OOM" not in slack.texts()
    slack.check_payloads(allowed_mentions=(MALLORY,))


async def test_rate_limit_per_user(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    if time.time() % 60 > 50:  # the limit counts per clock minute: start in a minute the test cannot outlast
        await asyncio.sleep(60.5 - time.time() % 60)
    async with running(slack, prefix, tmp_path, "text-only-question", rate_limit=1) as h:
        first = await h.command("train-gpt2 project=nlp", user=ALICE, channel=CHAN)
        second = await h.command("train-gpt2 project=nlp", user=ALICE, channel=CHAN)
        await h.event(mention("why did train-gpt2 fail in project nlp?", "700.000100", user=ALICE, channel=CHAN))
        await h.settle()
    # both acked at once (the limit is checked after the ack, when the diagnosis would start); the second command
    # and the mention are told privately, saying when to retry, and not diagnosed
    assert first.content == b"" and second.content == b""
    told = [c.body for c in slack.of("chat.postEphemeral")] + [c.body for c in slack.of("webhook")]
    refusals = [b for b in told if str(b.get("text", "")).startswith(RATE_LIMITED)]
    assert len(refusals) == 2, told
    assert all(re.search(r"try again in \d+ s\.$", b["text"]) for b in refusals)
    assert len(slack.of("chat.postMessage")) == 1


async def test_help_and_follow_up_answers_do_not_count_against_the_rate_limit(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    if time.time() % 60 > 50:
        await asyncio.sleep(60.5 - time.time() % 60)
    async with running(slack, prefix, tmp_path, "missing-cluster", rate_limit=1) as h:
        await h.command("help", user=ALICE, channel=BARE)
        await h.event(mention("why did asr-conformer fail in project speech?", "710.000100", user=ALICE, channel=BARE))
        await h.settle()
        await h.event(thread_message("dgx-prod", "710.000200", "710.000100", user=ALICE, channel=BARE))
        await h.settle()
    assert any("CRASH_APP_ERROR" in (u.get("text") or "") for u in finals(slack))
    told = [c.body for c in slack.of("chat.postEphemeral")] + [c.body for c in slack.of("webhook")]
    assert not any(str(b.get("text", "")).startswith(RATE_LIMITED) for b in told)


# -- untrusted text ------------------------------------------------------------------------------


async def test_injection_and_secrets_never_reach_slack(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, "secrets-and-injection") as h:
        await h.command("ctr-train project=ads", user=ALICE, channel=CHAN)
        await h.event(mention("why did ctr-train crash in project ads?", "500.000100", channel=CHAN))
        await h.settle()
        # the card's Evidence and Logs buttons post the rest in the thread: the same rules hold there
        card = finals(slack)[-1]
        for button in buttons_of(card["blocks"]):
            if button.get("action_id") in ("wd_card_evidence", "wd_card_logs"):
                await h.click(button, {"ts": card["ts"], "blocks": card["blocks"]}, user=ALICE, channel=CHAN)
                await h.settle()
    everything = slack.texts() + b"".join(c.raw for c in slack.of("upload")).decode()
    assert "CRASH_APP_ERROR" in everything
    # the injected line is withheld with a marker that says why (FORMAT.md), never echoed or followed
    assert "line withheld: instruction-like text" in everything
    assert "ignore previous instructions" not in everything.lower()
    slack.check_payloads(allowed_mentions=(ALICE,))


# -- Slack and Redis trouble ---------------------------------------------------------------------


async def test_slack_429_is_retried(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    slack.fail_next("chat.update", 429, retry_after=1)
    async with running(slack, prefix, tmp_path, "text-only-question") as h:
        await h.command("train-gpt2 project=nlp", user=ALICE, channel=CHAN)
        await h.settle()
    attempts = [c for c in slack.calls if c.method == "chat.update"]
    assert [c.status for c in attempts] == [429, 200]
    assert headers_of(attempts[1].body) == ["💥 OOM killed"]
    slack.check_payloads(allowed_mentions=(ALICE,))


async def test_redis_down_still_answers(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, "missing-cluster", redis_url="redis://127.0.0.1:1/0") as h:
        ready = await h.http.get("/readyz")
        assert ready.status_code == 503
        await h.command("asr-conformer project=speech cluster=dgx-prod", user=ALICE, channel=BARE)
        await h.event(mention("why did asr-conformer fail in project speech?", "600.000100", channel=BARE), "EvX")
        await h.event(mention("why did asr-conformer fail in project speech?", "600.000100", channel=BARE), "EvX")
        await h.settle()
    titles = sorted(headers_of(u)[0] for u in finals(slack))
    assert titles == sorted(
        ["🔥 Crashed (application error)", "❔ Need more information"]
    )  # the duplicate still dropped
    notes = [p.body["text"] for p in slack.of("chat.postMessage")]
    assert any("can't keep this conversation" in n for n in notes)
    slack.check_payloads(allowed_mentions=(ALICE,))


class _Proxy:
    """A TCP proxy in front of Redis that can be cut and restored (Redis going away and coming back)."""

    def __init__(self) -> None:
        self.server: asyncio.Server | None = None
        self.port = 0
        self.conns: list[asyncio.StreamWriter] = []

    async def start(self) -> None:
        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            writer.close()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", 6379)
            self.conns += [writer, up_writer]
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        self.server = await asyncio.start_server(handle, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        assert self.server is not None
        self.server.close()
        for w in self.conns:
            w.close()
        self.conns.clear()
        await self.server.wait_closed()


async def test_redis_outage_then_recovery(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    proxy = _Proxy()
    await proxy.start()
    url = f"redis://127.0.0.1:{proxy.port}/0"
    async with running(slack, prefix, tmp_path, "missing-cluster", redis_url=url) as h:
        assert (await h.http.get("/readyz")).status_code == 200
        await proxy.cut()
        assert (await h.http.get("/readyz")).status_code == 503
        await h.command("asr-conformer project=speech cluster=dgx-prod", user=ALICE, channel=BARE)
        await h.settle()
        assert headers_of(finals(slack)[-1]) == ["🔥 Crashed (application error)"]
        await proxy.start()  # same port: Redis is back
        assert (await h.http.get("/readyz")).status_code == 200
        await h.event(mention("why did asr-conformer fail in project speech?", "700.000100", channel=BARE))
        await h.settle()
        await h.event(thread_message("dgx-prod", "700.000200", "700.000100", channel=BARE))
        await h.settle()
    assert headers_of(finals(slack)[-1]) == ["🔥 Crashed (application error)"]  # follow-up memory works again
    await proxy.cut()


async def test_slow_diagnosis_is_acknowledged_before_it_finishes(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    def slow(snapshot: dict[str, Any]) -> None:
        snapshot["faults"] = [{"path": "/api/v1/*", "delay_ms": 4000, "times": 1}]

    async with running(slack, prefix, tmp_path, "text-only-question", mutate=slow) as h:
        resp = await h.command("train-gpt2 project=nlp", user=ALICE, channel=CHAN)
        assert resp.status_code == 200
        assert slack.of("chat.update") == []  # acked, answer not there yet
        await h.settle()
    update = slack.of("chat.update")[-1]
    assert h.acked_at[0] < update.at
    assert headers_of(update.body) == ["💥 OOM killed"]
    slack.check_payloads(allowed_mentions=(ALICE,))
