"""A local mock of the Slack Web API (and of ``response_url`` webhooks and file uploads) on an
ephemeral port, recording every call; plus helpers to sign requests and check posted payloads.

Modelled on bolt-python's own ``tests/mock_web_api_server`` (see shared/reference/slack.md §7).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import sys
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx

from handlers.blocks import violations

BOT_USER = "UBOTUSER1"
TEAM = "T0TEAM001"
SECRET = "test-signing-secret"
TOKEN = "xoxb-test-token"
FORBIDDEN = (
    "<!channel>",
    "<!here>",
    "<!everyone>",
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI",
    "Pa55w0rd-example",
)
POSTING = ("chat.postMessage", "chat.update", "chat.postEphemeral", "webhook")


@dataclass
class Call:
    method: str  # "chat.postMessage", "webhook", "upload", ...
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes
    at: float  # time.monotonic() when received
    status: int = 200


@dataclass
class _Fault:
    method: str
    status: int
    times: int
    retry_after: int = 1
    error: str | None = None
    body: bytes | None = None  # a raw (non-JSON) body, served with ``content_type``
    content_type: str = "text/html"


class _Server(ThreadingHTTPServer):
    """A listen backlog for many concurrent clients (the default 5 drops SYNs: 1 s retransmits)."""

    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a caller that went away before its answer (a killed process, a client's timeout) is what multi-process
        # tests and the scale bench do on purpose: not a traceback on stderr; anything else still is
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@dataclass
class SlackMock:
    calls: list[Call] = field(default_factory=list)
    usergroups: dict[str, list[str]] = field(default_factory=dict)
    #: called with every call before it is answered (multi-process tests kill or stall a replica there)
    on_call: Any = None
    #: root and thread messages posted per channel (``conversations.history`` answers from it)
    history: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    faults: list[_Fault] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""
    _ts: Any = field(default_factory=lambda: itertools.count(1))
    _server: _Server | None = None
    _thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> SlackMock:
        mock = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                status, headers, body = mock._handle(self.path, dict(self.headers.items()), raw)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if "content-type" not in {k.lower() for k in headers}:
                    self.send_header(
                        "content-type", "application/json" if not isinstance(body, bytes) else "text/plain"
                    )
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_PUT = do_POST
            do_GET = do_POST  # slack_sdk sends conversations.history as a GET with a query string

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="slack-mock", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def api_url(self) -> str:
        return self.url + "/api/"

    def response_url(self, name: str = "cmd") -> str:
        return f"{self.url}/webhook/{name}"

    # -- faults ----------------------------------------------------------------------------------

    def fail_next(
        self,
        method: str,
        status: int = 429,
        times: int = 1,
        retry_after: int = 1,
        body: bytes | None = None,
        content_type: str = "text/html",
    ) -> None:
        """The next ``times`` calls of ``method`` answer HTTP ``status`` (429 with ``Retry-After``); with ``body``
        that raw body as ``content_type`` (a proxy's HTML error page, a JSON content type with no JSON)."""
        with self.lock:
            self.faults.append(_Fault(method, status, times, retry_after, body=body, content_type=content_type))

    def error_next(self, method: str, error: str, times: int = 1) -> None:
        """The next ``times`` calls of ``method`` answer ``{"ok": false, "error": error}``."""
        with self.lock:
            self.faults.append(_Fault(method, 200, times, error=error))

    # -- the server ------------------------------------------------------------------------------

    def _handle(self, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], Any]:
        low = {k.lower(): v for k, v in headers.items()}
        if path.startswith("/api/"):
            method = path[len("/api/") :].split("?")[0]
        elif path.startswith("/webhook/"):
            method = "webhook"
        elif path.startswith("/upload/"):
            method = "upload"
        else:
            method = path
        body: dict[str, Any] = {}
        ctype = low.get("content-type", "")
        if method != "upload":
            if "json" in ctype:
                body = json.loads(raw or b"{}")
            else:
                body = dict(parse_qsl(raw.decode("utf-8", "replace")))
            if "?" in path:
                body = {**dict(parse_qsl(path.split("?", 1)[1])), **body}
            for key in ("blocks", "files"):
                if isinstance(body.get(key), str):
                    try:
                        body[key] = json.loads(body[key])
                    except ValueError:
                        pass
        call = Call(method, path, low, body, raw, time.monotonic())
        with self.lock:
            self.calls.append(call)
        if self.on_call is not None:
            self.on_call(call)  # a test's hook (kill or stall the caller while its request is in flight)
            if call.status >= 400:  # the hook failed this call (one replica's auth.test)
                return call.status, {}, {"ok": False, "error": "fatal_error"}
        with self.lock:
            fault = next((f for f in self.faults if f.method == method and f.times > 0), None)
            if fault is not None:
                fault.times -= 1
        if fault is not None:
            call.status = fault.status
            if fault.error:
                return 200, {}, {"ok": False, "error": fault.error}
            extra = {"Retry-After": str(fault.retry_after)} if fault.status == 429 else {}
            if fault.body is not None:
                return fault.status, {**extra, "content-type": fault.content_type}, fault.body
            return (
                fault.status,
                extra,
                {"ok": False, "error": "ratelimited" if fault.status == 429 else "fatal_error"},
            )
        if method == "webhook":
            return 200, {}, b"ok"
        if method == "upload":
            return 200, {}, b"OK"
        if not low.get("authorization", "").startswith("Bearer xoxb-"):
            return 200, {}, {"ok": False, "error": "not_authed"}
        return 200, {}, self._answer(method, body)

    def _answer(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.test":
            return {
                "ok": True,
                "url": "https://test.slack.com/",
                "team": "Test",
                "user": "workload-doctor",
                "team_id": TEAM,
                "user_id": BOT_USER,
                "bot_id": "B0BOT0001",
                "is_enterprise_install": False,
            }
        if method == "chat.postMessage":
            ts = f"1764000000.{next(self._ts):06d}"
            metadata = body.get("metadata")
            if isinstance(metadata, str):
                try:
                    metadata = json.loads(metadata)
                except ValueError:
                    metadata = None
            with self.lock:
                self.history.setdefault(str(body.get("channel")), []).append(
                    {
                        "ts": ts,
                        "text": body.get("text"),
                        "thread_ts": body.get("thread_ts"),
                        "metadata": metadata,
                        "blocks": body.get("blocks"),
                        "posted_text": body.get("text"),  # the text as first posted (``text`` follows updates)
                        "user": BOT_USER,
                        "bot_id": "B0BOT0001",
                    }
                )
            return {
                "ok": True,
                "channel": body.get("channel"),
                "ts": ts,
                "message": {"ts": ts, "text": body.get("text"), "thread_ts": body.get("thread_ts")},
            }
        if method == "chat.update":
            with self.lock:  # as Slack does: the thread and the history show the updated text
                for m in self.history.get(str(body.get("channel")), []):
                    if m.get("ts") == body.get("ts") and body.get("text") is not None:
                        m["text"] = body.get("text")
            return {
                "ok": True,
                "channel": body.get("channel"),
                "ts": body.get("ts"),
                "text": body.get("text"),
            }
        if method == "conversations.history":
            with self.lock:
                roots = [m for m in self.history.get(str(body.get("channel")), []) if not m.get("thread_ts")]
            # ``oldest`` is not applied: the mock's ts values are not real times
            messages = [
                {
                    k: v
                    for k, v in m.items()
                    if v is not None and k != "posted_text" and (k != "metadata" or body.get("include_all_metadata"))
                }
                for m in reversed(roots)
            ]
            return {"ok": True, "messages": messages, "has_more": False}
        if method == "conversations.replies":
            # the bot's own messages of one thread (people's messages are not posted through the mock)
            root = str(body.get("ts"))
            meta = bool(body.get("include_all_metadata"))
            with self.lock:
                thread = [
                    {k: v for k, v in m.items() if v is not None and k != "posted_text" and (k != "metadata" or meta)}
                    for m in self.history.get(str(body.get("channel")), [])
                    if m.get("thread_ts") == root or m.get("ts") == root
                ]
            return {"ok": True, "messages": thread, "has_more": False}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"1764000000.{next(self._ts):06d}"}
        if method == "files.getUploadURLExternal":
            n = next(self._ts)
            return {"ok": True, "upload_url": f"{self.url}/upload/F{n:06d}", "file_id": f"F{n:06d}"}
        if method == "files.completeUploadExternal":
            files = body.get("files") or []
            return {"ok": True, "files": [{"id": f.get("id"), "title": f.get("title")} for f in files]}
        if method == "usergroups.users.list":
            return {"ok": True, "users": self.usergroups.get(str(body.get("usergroup")), [])}
        return {"ok": True}

    # -- what was called -------------------------------------------------------------------------

    def of(self, method: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.method == method and c.status == 200]

    def posted(self) -> list[Call]:
        """Every successful message-posting call (postMessage, update, ephemeral, response_url)."""
        with self.lock:
            return [c for c in self.calls if c.method in POSTING and c.status == 200]

    def texts(self) -> str:
        """Everything posted, as one string (payloads serialized), to search."""
        return "\n".join(json.dumps(c.body) for c in self.posted())

    def public(self) -> list[Call]:
        """What the channel sees: posts and updates, and ``response_url`` replies made ``in_channel``."""
        return [
            c
            for c in self.posted()
            if c.method in ("chat.postMessage", "chat.update")
            or (c.method == "webhook" and c.body.get("response_type") == "in_channel")
        ]

    def private(self, user: str | None = None) -> list[dict[str, Any]]:
        """What was said to one person only (ephemeral messages, ephemeral ``response_url`` replies): bodies."""
        return [
            c.body
            for c in self.posted()
            if (c.method == "chat.postEphemeral" and (user is None or c.body.get("user") == user))
            or (c.method == "webhook" and c.body.get("response_type") == "ephemeral")
        ]

    async def wait_for(self, predicate: Any, limit: float = 20.0, what: str = "") -> None:
        """Poll until ``predicate(self)`` is true (listeners run after the ack)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if predicate(self):
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"timed out waiting for {what or predicate}; calls: {[c.method for c in self.calls]}")

    def check_payloads(self, allowed_mentions: tuple[str, ...] = ()) -> None:
        """Every posted payload: within the budget, with a ``text`` fallback, nothing active or secret."""
        for call in self.posted():
            body = call.body
            if call.method == "webhook" and not body.get("text") and not body.get("blocks"):
                continue
            problems = violations(body)
            assert not problems, f"{call.method} payload breaks the budget: {problems}"
            dumped = json.dumps(body)
            for bad in FORBIDDEN:
                assert bad not in dumped, f"{bad!r} reached Slack in {call.method}"
            for marker in ("<@", "<#", "<http", "<!"):
                start = 0
                while (i := dumped.find(marker, start)) >= 0:
                    token = dumped[i : dumped.find(">", i) + 1]
                    assert marker == "<@" and token[2:-1] in allowed_mentions, f"active {token!r} in {call.method}"
                    start = i + 1
            assert body.get("link_names") in (None, False, "false", "0")
            assert body.get("parse") in (None, "none")
        for call in self.of("files.completeUploadExternal") + self.of("upload"):
            raw = call.raw.decode("utf-8", "replace")
            for bad in FORBIDDEN[3:]:
                assert bad not in raw, f"{bad!r} reached Slack in an upload"


# -- signing and payloads ------------------------------------------------------------------------


def sign(body: str, timestamp: int | None = None, secret: str = SECRET) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    base = f"v0:{ts}:{body}".encode()
    signature = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"x-slack-request-timestamp": ts, "x-slack-signature": signature}


def deliver(url: str, body: str, retry: int = 0, timeout: float = 10.0) -> int:
    """POST ``body`` (a JSON event), signed, to a bot process's ``/slack/events`` at ``url`` as Slack does (``retry``:
    Slack's retry number, its reason a timeout); the HTTP status."""
    headers = {**sign(body), "Content-Type": "application/json"}
    if retry:
        headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
    return httpx.post(url + "/slack/events", content=body, headers=headers, timeout=timeout).status_code


def healthy(url: str) -> bool:
    """A bot process at ``url`` answers ``/healthz`` with 200."""
    try:
        return httpx.get(url + "/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def command_body(text: str, *, user: str = "U0ALICE01", channel: str = "C0CHAN001", response_url: str = "") -> str:
    return urlencode(
        {
            "token": "legacy",
            "team_id": TEAM,
            "team_domain": "test",
            "channel_id": channel,
            "channel_name": "ml",
            "user_id": user,
            "user_name": "alice",
            "command": "/diagnose",
            "text": text,
            "api_app_id": "A0APP0001",
            "response_url": response_url,
            "trigger_id": f"trig.{time.time_ns()}",
        }
    )


def event_body(event: dict[str, Any], event_id: str) -> str:
    return json.dumps(
        {
            "token": "legacy",
            "team_id": TEAM,
            "api_app_id": "A0APP0001",
            "event": event,
            "type": "event_callback",
            "event_id": event_id,
            "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM, "user_id": BOT_USER, "is_bot": True}],
        }
    )


def mention(
    text: str, ts: str, *, user: str = "U0ALICE01", channel: str = "C0CHAN001", thread_ts: str | None = None
) -> dict[str, Any]:
    event = {
        "type": "app_mention",
        "user": user,
        "text": f"<@{BOT_USER}> {text}",
        "ts": ts,
        "channel": channel,
        "event_ts": ts,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


def thread_message(
    text: str, ts: str, thread_ts: str, *, user: str = "U0ALICE01", channel: str = "C0CHAN001"
) -> dict[str, Any]:
    return {
        "type": "message",
        "channel_type": "channel",
        "user": user,
        "text": text,
        "ts": ts,
        "thread_ts": thread_ts,
        "channel": channel,
        "event_ts": ts,
    }


def action_body(
    button: dict[str, Any],
    message: dict[str, Any],
    *,
    user: str = "U0ALICE01",
    channel: str = "C0CHAN001",
    response_url: str = "",
) -> str:
    payload = {
        "type": "block_actions",
        "user": {"id": user, "team_id": TEAM},
        "team": {"id": TEAM},
        "api_app_id": "A0APP0001",
        "trigger_id": f"trig.{time.time_ns()}",
        "container": {
            "type": "message",
            "message_ts": message["ts"],
            "channel_id": channel,
            "thread_ts": message.get("thread_ts"),
        },
        "channel": {"id": channel},
        "message": message,
        "response_url": response_url,
        "actions": [
            {
                "action_id": button["action_id"],
                "block_id": "wd_choices",
                "type": "button",
                "value": button["value"],
                "text": button["text"],
                "action_ts": str(time.time()),
            }
        ],
    }
    return urlencode({"payload": json.dumps(payload)})


# -- a running bot behind its HTTP adapter ---------------------------------------------------------

REDIS_URL = "redis://127.0.0.1:6379/0"


class Harness:
    """The real AsyncApp behind its Starlette adapter, driven in-process over ASGI with signed requests."""

    def __init__(self, mock: SlackMock, bot: Any, http: Any) -> None:
        self.mock = mock
        self.bot = bot
        self.http = http
        self.acked_at: list[float] = []
        self._n = itertools.count(1)

    async def send(self, body: str, content_type: str, headers: dict[str, str] | None = None) -> Any:
        h = {"content-type": content_type, **sign(body), **(headers or {})}
        resp = await self.http.post("/slack/events", content=body.encode(), headers=h)
        self.acked_at.append(time.monotonic())
        return resp

    async def command(self, text: str, **kw: Any) -> Any:
        kw.setdefault("response_url", self.mock.response_url(f"cmd{next(self._n)}"))
        return await self.send(command_body(text, **kw), "application/x-www-form-urlencoded")

    async def event(
        self, event: dict[str, Any], event_id: str | None = None, headers: dict[str, str] | None = None
    ) -> Any:
        return await self.send(event_body(event, event_id or f"Ev{time.time_ns()}"), "application/json", headers)

    async def click(self, button: dict[str, Any], message: dict[str, Any], **kw: Any) -> Any:
        kw.setdefault("response_url", self.mock.response_url(f"act{next(self._n)}"))
        return await self.send(action_body(button, message, **kw), "application/x-www-form-urlencoded")

    async def settle(self) -> None:
        """Wait until every diagnosis task the requests started has finished."""
        await asyncio.sleep(0.05)  # Bolt starts event listeners just after the ack
        await self.bot.tracker.idle(60)


def buttons_of(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for b in blocks if b.get("type") == "actions" for e in b.get("elements", []) if "value" in e]


# -- a bot answering OSMO questions from a sandbox (additive: OSMO and watch tests) -------------------

# Copies of the shared cases the tests use, so the suite runs without ../shared beside the checkout.
OSMO_CASES = Path(__file__).resolve().parent / "fixtures" / "cases" / "osmo"


def osmo_snapshot(case: str) -> dict[str, Any]:
    """A shared OSMO case snapshot (a fresh copy: tests may change its workflows' status)."""
    return dict(json.loads((OSMO_CASES / f"{case}.json").read_text()))


def set_workflow_status(
    sandbox: Any, workflow_id: str, status: str, *, exit_code: int | None = None, message: str | None = None
) -> None:
    """Move a workflow the sandbox serves to ``status`` (its groups and tasks too), as OSMO would."""
    for entry in sandbox.state.snapshot["osmo"]["workflows"]:
        query = entry["query"]
        if workflow_id not in (query.get("name"), query.get("uuid")):
            continue
        query["status"] = status
        ended = status not in ("PENDING", "RUNNING", "WAITING")
        if ended:
            query["end_time"] = "2026-11-28T16:25:00.000000"
        for group in query.get("groups") or []:
            group["status"] = status
            if ended:
                group["end_time"] = query["end_time"]
                group["failure_message"] = message
            for task in group.get("tasks") or []:
                task["status"] = status
                if ended:
                    task["end_time"] = query["end_time"]
                    task["exit_code"] = exit_code
                    task["failure_message"] = message
        return
    raise KeyError(workflow_id)


@contextlib.asynccontextmanager
async def osmo_bot(
    slack: SlackMock,
    prefix: str,
    sandbox: Any,
    *,
    policy: Any = None,
    redis_url: str = REDIS_URL,
    watch_scale: float = 0.01,
    now: str = "2026-11-28T16:20:00Z",
) -> AsyncIterator[Harness]:
    """The real bot (HTTP adapter, lifespan entered: watches resumed at start, stopped at the end)
    answering from ``sandbox``'s OSMO, with every watch interval scaled by ``watch_scale``."""
    from bot.app import build_bot, http_app
    from bot.settings import Settings
    from diagnosis.answer import Backends
    from diagnosis.config import OsmoConfig
    from diagnosis.units import parse_time

    fixed = parse_time(now)
    assert fixed is not None
    settings = Settings(
        bot_token=TOKEN,
        signing_secret=SECRET,
        redis_url=redis_url,
        api_url=slack.api_url,
        rate_limit=100,
        key_prefix=prefix,
        watch_scale=watch_scale,
    )
    backends = Backends(osmo=OsmoConfig(sandbox.url, "sandbox-access-token"), now=lambda: fixed)
    bot = build_bot(settings, backends, policy=policy)
    app = http_app(bot)
    async with app.router.lifespan_context(app):
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bot") as http:
            yield Harness(slack, bot, http)
