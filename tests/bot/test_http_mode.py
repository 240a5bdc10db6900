"""HTTP mode's ``POST /slack/events`` before and around Bolt (issue 15 §1 and §5), on a real uvicorn server on
loopback: size and signature are checked before the body is read (401/413, never 500), a signed body Bolt
cannot read is a 400, a non-numeric timestamp a 401, and a replayed signed ``/diagnose`` runs once. Slack Web
API answers are read with the same cap (:class:`bot.app.BoundedSlackResponse`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
import uvicorn
from aiohttp import web

from bot.app import SlackBodyTooLarge, bounded_response_class, build_bot, http_app
from bot.cli import backends_for
from bot.policy import Policy
from bot.settings import Settings
from diagnosis.errors import BodyTooLarge
from tests.paths import ROOT
from tests.slack_mock import REDIS_URL, SECRET, TOKEN, SlackMock, command_body

CASES = ROOT / "tests" / "fixtures" / "cases" / "runai"
ALICE = "U0ALICE01"
CHAN = "C0CHAN001"
POLICY = Policy.from_dict(
    {"access": [{"who": [ALICE], "clusters": ["*"], "projects": ["*"]}], "channels": {CHAN: {"cluster": "dgx-prod"}}}
)
#: the cap of one request body in these tests, bytes
LIMIT = 256 * 1024
FORM = "application/x-www-form-urlencoded"
#: the wall clock of reading one request body in these tests, seconds
BODY_SECONDS = 1.0


class Served:
    """The bot's HTTP app served by uvicorn on an ephemeral loopback port."""

    def __init__(self, bot: Any, port: int) -> None:
        self.bot = bot
        self.port = port

    def raw(self, head: str, body: bytes = b"", *, more: int = 0, timeout: float = 10.0) -> tuple[int, bytes]:
        """Send ``head`` (request line and headers) and ``body`` on a plain socket, then up to ``more`` further
        bytes in 64 KiB pieces while no answer has come; return (status, whole answer). Stops itself: at
        ``timeout`` seconds, or when the server answers or closes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(head.encode() + b"\r\n" + body)
            sock.setblocking(False)
            sent, answer, end = 0, b"", time.monotonic() + timeout
            piece = b"x" * 65536
            while time.monotonic() < end:
                try:
                    data = sock.recv(65536)
                    if not data:
                        break
                    answer += data
                    if b"\r\n\r\n" in answer:
                        break
                    continue
                except BlockingIOError:
                    pass
                if sent < more:
                    try:
                        sent += sock.send(piece if head.find("chunked") < 0 else b"10000\r\n" + piece + b"\r\n")
                    except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                        time.sleep(0.01)
                else:
                    time.sleep(0.01)
        assert answer.startswith(b"HTTP/1.1 "), answer[:200]
        return int(answer.split()[1]), answer

    async def send(self, head: str, body: bytes = b"", **kw: Any) -> tuple[int, bytes]:
        return await asyncio.to_thread(self.raw, head, body, **kw)


def head(content_length: int | None, headers: dict[str, str], content_type: str = FORM) -> str:
    lines = ["POST /slack/events HTTP/1.1", "Host: bot", f"Content-Type: {content_type}"]
    if content_length is None:
        lines.append("Transfer-Encoding: chunked")
    else:
        lines.append(f"Content-Length: {content_length}")
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return "\r\n".join(lines) + "\r\n"


def signed(body: str | bytes, **kw: Any) -> dict[str, str]:
    """``tests.slack_mock.sign`` for bytes too (the signature is over the raw bytes)."""
    import hashlib
    import hmac

    raw = body.encode() if isinstance(body, str) else body
    ts = str(kw.get("timestamp") or int(time.time()))
    digest = hmac.new(SECRET.encode(), b"v0:" + ts.encode() + b":" + raw, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": "v0=" + digest}


@contextlib.asynccontextmanager
async def serving(slack: SlackMock, prefix: str) -> AsyncIterator[Served]:
    settings = Settings(
        bot_token=TOKEN, signing_secret=SECRET, redis_url=REDIS_URL, api_url=slack.api_url, key_prefix=prefix
    )
    with backends_for(str(CASES / "text-only-question.json")) as (backends, _ask):
        bot = build_bot(settings, backends, policy=POLICY)
        app = http_app(bot, max_body_bytes=LIMIT, body_seconds=BODY_SECONDS)
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_config=None, access_log=False, lifespan="on")
        server = uvicorn.Server(config)
        task = asyncio.create_task(server.serve())
        try:
            while not server.started:
                assert not task.done(), "uvicorn did not start"
                await asyncio.sleep(0.02)
            port = server.servers[0].sockets[0].getsockname()[1]
            yield Served(bot, port)
            await bot.tracker.idle(60)
        finally:
            server.should_exit = True
            await asyncio.wait_for(task, 60)


def no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    logged = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not logged, [r.getMessage() for r in logged]


async def test_an_unsigned_300_mb_post_is_401_before_its_body_is_read(
    slack: SlackMock, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with serving(slack, prefix) as s:
        # 1 KiB of a declared 300 MB: an answer proves the server did not wait for (or hold) the rest
        status, _ = await s.send(head(300_000_000, {}), b"x" * 1024)
        unsigned_huge = status
        status, _ = await s.send(head(300_000_000, signed(b"whatever")), b"")
        signed_huge = status
    assert unsigned_huge == 401
    assert signed_huge == 413
    no_traceback(caplog)


async def test_a_signed_endless_chunked_body_is_cut_at_the_cap_with_413(
    slack: SlackMock, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with serving(slack, prefix) as s:
        # the client would send 64 MiB (256 times the cap); the server answers once the cap is passed
        status, _ = await s.send(head(None, signed(b"")), b"", more=64 * 1024 * 1024)
    assert status == 413
    no_traceback(caplog)


async def test_a_signed_body_that_stops_arriving_is_408(slack: SlackMock, prefix: str) -> None:
    async with serving(slack, prefix) as s:
        # 10 of 1000 announced bytes, then silence: answered at the body's wall clock, not held open
        status, _ = await s.send(head(1000, signed(b"x" * 1000)), b"x" * 10)
    assert status == 408


async def test_unsigned_malformed_and_bad_timestamps_are_401_never_500(
    slack: SlackMock, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    body = b"{not json at all"
    cases = {
        "unsigned non-JSON": (body, {}, "application/json"),
        "non-numeric timestamp": (body, {**signed(body), "X-Slack-Request-Timestamp": "soon"}, "application/json"),
        "stale timestamp": (body, signed(body, timestamp=int(time.time()) - 400), "application/json"),
        "malformed signature": (body, {**signed(body), "X-Slack-Signature": "v0=zz"}, "application/json"),
        "wrong signature": (body, {**signed(b"other")}, "application/json"),
    }
    got = {}
    async with serving(slack, prefix) as s:
        for name, (raw, headers, ctype) in cases.items():
            got[name], _ = await s.send(head(len(raw), headers, ctype), raw)
    assert got == dict.fromkeys(cases, 401)
    assert slack.posted() == []
    no_traceback(caplog)


async def test_a_signed_malformed_body_is_400(slack: SlackMock, prefix: str, caplog: pytest.LogCaptureFixture) -> None:
    cases: dict[str, tuple[bytes, str]] = {
        "JSON that is not JSON": (b"{not json", "application/json"),
        "a JSON list": (b"[1, 2]", "application/json"),
        "a payload that is not JSON": (b"payload=%7Bnot", FORM),
        "bytes that are not UTF-8": (b"command=%2Fdiagnose&text=\xff\xfe", FORM),
        # well-formed JSON of a shape Bolt or the middleware cannot read (a null view, a string event)
        "a view submission without its view": (
            b"payload=" + quote(json.dumps({"type": "view_submission", "view": None, "team": {"id": "T1"}})).encode(),
            FORM,
        ),
        "button actions that are a string": (
            b"payload=" + quote(json.dumps({"type": "block_actions", "actions": "x", "team": {"id": "T1"}})).encode(),
            FORM,
        ),
        "an event that is a string": (
            json.dumps({"type": "event_callback", "event": "x"}).encode(),
            "application/json",
        ),
        "an event that is a list": (json.dumps({"type": "event_callback", "event": [1]}).encode(), "application/json"),
    }
    got = {}
    async with serving(slack, prefix) as s:
        for name, (raw, ctype) in cases.items():
            got[name], _ = await s.send(head(len(raw), signed(raw), ctype), raw)
    assert got == dict.fromkeys(cases, 400)
    assert slack.posted() == []
    no_traceback(caplog)


async def test_a_replayed_signed_diagnose_runs_once(slack: SlackMock, prefix: str) -> None:
    body = command_body("train-gpt2 project=nlp", user=ALICE, channel=CHAN, response_url=slack.response_url("r1"))
    headers = signed(body)
    async with serving(slack, prefix) as s:
        first, _ = await s.send(head(len(body), headers), body.encode())
        replay, _ = await s.send(head(len(body), headers), body.encode())
        await s.bot.tracker.idle(60)
        # another command (its own trigger id: the same one is claimed once, issue 24) signed a second later runs
        again = command_body("train-gpt2 project=nlp", user=ALICE, channel=CHAN, response_url=slack.response_url("r2"))
        later = signed(again, timestamp=int(headers["X-Slack-Request-Timestamp"]) + 1)
        fresh, _ = await s.send(head(len(again), later), again.encode())
        await s.bot.tracker.idle(60)
    assert (first, replay, fresh) == (200, 200, 200)
    progress = [c for c in slack.of("chat.postMessage") if "Diagnosing" in str(c.body.get("text"))]
    assert len(progress) == 2, [c.body for c in slack.of("chat.postMessage")]


async def test_a_slack_web_api_answer_is_read_up_to_the_cap() -> None:
    """An endless Web API answer (a loopback server that never stops) ends in :class:`SlackBodyTooLarge`."""
    sent = 0

    async def endless(request: web.Request) -> web.StreamResponse:
        nonlocal sent
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        with contextlib.suppress(ConnectionError, aiohttp.ClientConnectionResetError):
            while sent < 64 * 1024 * 1024:  # stops itself
                await response.write(b'{"ok": true, "pad": "' + b"x" * 65536)
                sent += 65536 + 21
        return response

    server = web.Application()
    server.router.add_post("/api/auth.test", endless)
    runner = web.AppRunner(server)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    from slack_sdk.web.async_client import AsyncWebClient

    session = aiohttp.ClientSession(response_class=bounded_response_class(LIMIT))
    try:
        client = AsyncWebClient(token="xoxb-x", base_url=f"http://127.0.0.1:{port}/api/", session=session, timeout=10)
        with pytest.raises(SlackBodyTooLarge) as cut:
            await client.auth_test()
    finally:
        await session.close()
        await runner.cleanup()
    assert isinstance(cut.value, BodyTooLarge) and cut.value.limit == LIMIT
    assert "cut at 256 KiB (WD_MAX_BODY_BYTES)" in str(cut.value)
    assert sent < 64 * 1024 * 1024, "the read stopped at the cap, not at the server's end"
