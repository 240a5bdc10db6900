"""Redis off the ack path (issue 15 §3), end to end: two bots (the real AsyncApp behind its HTTP adapter) share
a real Redis through a proxy that the test can hold, as a Redis that has stopped answering for a while.

The same event is delivered to both bots while Redis is held: both ack it without waiting for Redis (the proxy
has not let a byte through when the acks arrive), the fallback is counted; once Redis answers again the event
claim lets exactly one of them answer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

from bot.app import build_bot, http_app
from bot.cli import backends_for
from bot.policy import Policy
from bot.settings import Settings
from diagnosis import metrics
from handlers.messages import REFUSAL
from tests.handlers.test_slack_e2e import ALICE, CASES, CHAN, EVE, POLICY, headers_of
from tests.slack_mock import SECRET, TOKEN, Harness, SlackMock, mention


class HeldRedis:
    """A TCP proxy to the real Redis whose client-to-Redis direction can be held (bytes wait, nothing is lost)."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.open.set()
        self.waiting = 0  # chunks held back right now
        self.server: asyncio.Server | None = None
        self.url = ""

    async def start(self) -> HeldRedis:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.url = f"redis://127.0.0.1:{port}/0"
        return self

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", 6379)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, gated: bool) -> None:
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                while chunk := await src.read(65536):
                    if gated and not self.open.is_set():
                        self.waiting += 1
                        await self.open.wait()
                        self.waiting -= 1
                    dst.write(chunk)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer, True), pipe(up_reader, writer, False))


@contextlib.asynccontextmanager
async def two_bots(
    slack: SlackMock, prefix: str, tmp_path: Path, redis_url: str, policy: Policy = POLICY, n: int = 2
) -> AsyncIterator[list[Harness]]:
    path = tmp_path / "case.json"
    path.write_text((CASES / "text-only-question.json").read_text())
    settings = Settings(
        bot_token=TOKEN,
        signing_secret=SECRET,
        redis_url=redis_url,
        api_url=slack.api_url,
        rate_limit=100,
        key_prefix=prefix,
        ack_redis_budget=0.05,
    )
    async with contextlib.AsyncExitStack() as stack:
        harnesses = []
        for _ in range(n):
            backends, _ask = stack.enter_context(backends_for(str(path)))
            bot = build_bot(settings, backends, policy=policy)
            await bot.start()
            stack.push_async_callback(bot.close, 30)
            http = await stack.enter_async_context(
                httpx.AsyncClient(transport=httpx.ASGITransport(app=http_app(bot)), base_url="http://bot")
            )
            harnesses.append(Harness(slack, bot, http))
        yield harnesses
        for h in harnesses:
            await h.settle()


def _fallbacks() -> float:
    return metrics.REGISTRY.get_sample_value("workload_doctor_dedup_fallbacks_total", {"reason": "slow"}) or 0.0


async def test_acks_do_not_wait_for_redis_and_the_claim_catches_the_duplicate(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    proxy = await HeldRedis().start()
    try:
        async with two_bots(slack, prefix, tmp_path, proxy.url) as (a, b):
            before = _fallbacks()
            event = mention("why did train-gpt2 fail in project nlp?", "400.000100", channel=CHAN)
            proxy.open.clear()  # Redis stops answering
            acks = [await a.event(event, "EvSLOW0001"), await b.event(event, "EvSLOW0001")]
            # both acked while every byte to Redis is still held back: neither ack waited for it
            assert [r.status_code for r in acks] == [200, 200]
            assert proxy.waiting > 0 and not proxy.open.is_set()
            assert _fallbacks() >= before + 2, "the fallback is counted"
            proxy.open.set()  # Redis answers again
            for h in (a, b):
                await h.settle()
        answers = [u.body for u in slack.of("chat.update") if headers_of(u.body)]
        assert [headers_of(x) for x in answers] == [["💥 OOM killed"]], "answered once: the claim caught the other"
        assert len([c for c in slack.of("chat.postMessage") if "Diagnosing" in c.body["text"]]) == 1
    finally:
        await proxy.stop()


async def test_user_groups_found_after_the_ack_authorise_the_diagnosis(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    group = "S0MLPLAT01"
    slack.usergroups[group] = [ALICE]
    policy = Policy.from_dict(
        {
            "access": [{"who": [group], "clusters": ["*"], "projects": ["*"]}],
            "channels": {CHAN: {"cluster": "dgx-prod"}},
        }
    )
    slow = "workload_doctor_dedup_fallbacks_total"
    before = metrics.REGISTRY.get_sample_value(slow, {"reason": "slow_user_groups"}) or 0.0
    proxy = await HeldRedis().start()
    try:
        async with two_bots(slack, prefix, tmp_path, proxy.url, policy=policy, n=1) as (h,):
            proxy.open.clear()  # the group members are cached in Redis: the lookup waits for it
            ours = await h.command("train-gpt2 project=nlp", user=ALICE, channel=CHAN)
            theirs = await h.command("train-gpt2 project=nlp", user=EVE, channel=CHAN)
            assert ours.content == theirs.content == b"", "both acked before the groups were known"
            assert proxy.waiting > 0 and not proxy.open.is_set()
            assert (metrics.REGISTRY.get_sample_value(slow, {"reason": "slow_user_groups"}) or 0.0) >= before + 2
            proxy.open.set()
            await h.settle()
        # decided after the ack with the groups: the member's question is answered, the other person refused
        answers = [u.body for u in slack.of("chat.update")]
        assert [headers_of(a) for a in answers] == [["💥 OOM killed"]]
        assert [b.get("text") for b in slack.private()] == [REFUSAL], "the other person refused, privately"
    finally:
        await proxy.stop()
