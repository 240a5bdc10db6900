"""Wiring: one Bolt ``AsyncApp`` (middleware + listeners), served by Socket Mode or by HTTP
(Starlette: ``POST /slack/events``, ``GET /healthz``, ``GET /readyz``, ``GET /metrics``; in Socket Mode the
health port serves the last three).

The Web API client's ``base_url`` comes from ``SLACK_API_URL`` and carries retry handlers for
connection errors, 429 (``Retry-After``) and 5xx; its session reads no answer longer than
``WD_MAX_BODY_BYTES`` (:class:`handlers.slack_http.BoundedSlackResponse`; ``response_url`` answers alike).
Diagnoses run after the ack in tracked tasks
that are drained on shutdown (SIGTERM).

``POST /slack/events`` (:func:`http_app`, issue 15 §1 and §5) checks before reading a byte of the body that the
request is signed (``X-Slack-Signature`` ``v0=…``, a numeric ``X-Slack-Request-Timestamp`` within five
minutes: else 401) and not too big (``Content-Length`` above ``WD_MAX_BODY_BYTES``: 413); it then reads the
body as a stream (413 past the cap, 408 past :data:`BODY_SECONDS`), verifies the signature (401), parses it
(400 for a signed body Bolt cannot read) and drops a replay of the same signature and timestamp (200, nothing
run). None of these answers is a 500 or logs a traceback.

Roles (issue 26 §1, :mod:`bot.jobs`): without ``WD_JOB_QUEUE`` every replica answers what it acks (``all``). With
it, the Slack-facing app acks and hands each request's work to the job queue (no event claim there), and a worker
answers it through a second Bolt app of its own (the claim first, the work run in the worker): ``serve`` is both,
the ack tier and an in-process worker (``all``), ``serve --ack-only`` the ack tier alone (``ack``), ``workload-doctor
worker`` a worker alone (``worker``). Watches, scheduled digests and question takeovers run where requests are
answered, never in an ack-only process.

OSMO watches (``/diagnose watch <workflow>``, :mod:`handlers.watch`) run in the same tracker; at
startup (:meth:`Bot.start`: the HTTP lifespan, or Socket Mode once connected) the bot resumes the
watches in Redis that no live replica holds and keeps sweeping for orphaned ones; at shutdown the
watches are stopped first (their state stays in Redis, their leases are released).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import hmac
import logging
import re
import signal
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Literal
from urllib.parse import parse_qsl

import aiohttp
from slack_bolt.adapter.starlette.async_handler import to_starlette_response
from slack_bolt.async_app import AsyncApp, AsyncBoltRequest
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from bot.feedback_store import FeedbackStore
from bot.jobs import RequestQueue, RequestWorker
from bot.policy import Policy
from bot.scheduler import DigestScheduler
from bot.settings import Settings, SettingsError
from bot.state import Store
from bot.tasks import TaskTracker
from diagnosis import metrics
from diagnosis.answer import Backends, preload
from diagnosis.config import max_body_bytes as env_max_body_bytes
from diagnosis.http import close_shared_connections, share_connections
from diagnosis.question import Question, load_words
from handlers import feedback, listeners, middleware
from handlers.claims import Orphans
from handlers.context import user_groups
from handlers.digests import DigestDesk
from handlers.doctor import AnswerFn, Doctor, conversation_reports
from handlers.protocols import Surface
from handlers.replies import report_in_thread
from handlers.shedding import HandOver
from handlers.slack_http import BoundedSlackResponse as BoundedSlackResponse
from handlers.slack_http import SlackBodyTooLarge as SlackBodyTooLarge
from handlers.slack_http import bounded_response_class
from handlers.slack_surface import SlackSurface
from handlers.watch import WatcherFor, Watches

log = logging.getLogger(__name__)
#: what a process does (see the module): ack and answer, ack and enqueue only, or answer queued requests only
Role = Literal["all", "ack", "worker"]
#: Seconds each step of a shutdown may take before the next one runs anyway (logged): a step that hangs (a
#: connection that never closes) must not hold the process past its grace period.
CLOSE_STEP_SECONDS = 15.0
#: Seconds the start may spend resuming the watches in Redis before serving (the sweeper carries on the rest).
RESUME_SECONDS = 30.0


async def _bounded(step: str, work: Any, seconds: float) -> None:
    """Await ``work`` for ``seconds`` at most; a step that fails or overruns is logged, never raised."""
    try:
        async with asyncio.timeout(seconds):
            await work
    except TimeoutError:
        log.warning("%s did not finish within %.0f s; going on", step, seconds)
    except Exception:
        log.exception("%s failed", step)


def slack_call_metrics() -> aiohttp.TraceConfig:
    """Counts every Slack Web API attempt (method, HTTP status; 429s apart) on the bot's one session."""
    trace = aiohttp.TraceConfig()

    async def on_end(session: Any, context: Any, params: aiohttp.TraceRequestEndParams) -> None:
        metrics.slack_call(str(params.url), params.response.status)

    async def on_error(session: Any, context: Any, params: aiohttp.TraceRequestExceptionParams) -> None:
        metrics.slack_call(str(params.url), type(params.exception).__name__)

    trace.on_request_end.append(on_end)
    trace.on_request_exception.append(on_error)
    return trace


def web_client(settings: Settings) -> AsyncWebClient:
    return AsyncWebClient(
        token=settings.bot_token,
        base_url=settings.api_url,
        timeout=15,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
            AsyncRateLimitErrorRetryHandler(max_retry_count=3),
            AsyncServerErrorRetryHandler(max_retry_count=2),
        ],
    )


@dataclass
class Bot:
    app: AsyncApp
    doctor: Doctor
    store: Store
    policy: Policy
    tracker: TaskTracker
    settings: Settings
    watches: Watches
    scheduler: DigestScheduler | None = None
    role: Role = "all"
    #: the job queue (``WD_JOB_QUEUE``), and this process's worker of it (roles ``all`` and ``worker``)
    queue: RequestQueue | None = None
    worker: RequestWorker | None = None

    @property
    def answers(self) -> bool:
        """Whether requests are answered in this process (not an ack-only one): watches, digests, takeovers."""
        return self.role != "ack"

    async def start(self) -> None:
        """Open the connection pools (Slack Web API; Run:ai and OSMO), resume the active watches no live
        replica holds, then keep sweeping for orphaned ones."""
        client = self.app.client
        if client.session is None or client.session.closed:
            # one pool for every Web API call (Bolt hands it to each request's client); without it
            # slack_sdk opens a session and a connection per call
            client.session = aiohttp.ClientSession(
                trust_env=client.trust_env_in_session,
                trace_configs=[slack_call_metrics()],
                response_class=bounded_response_class(),
            )
        share_connections()  # Run:ai and OSMO connections reused across diagnoses
        if not self.answers:
            return  # an ack-only process: the workers answer, poll the watches and post the digests
        if self.worker is not None:
            self.worker.start()
        resumed = 0
        try:
            async with asyncio.timeout(RESUME_SECONDS):
                resumed = await self.watches.resume()
        except TimeoutError:
            log.warning("resuming watches took over %.0f s: the sweeper carries on the rest", RESUME_SECONDS)
        except Exception:
            log.exception("could not resume watches")
        if resumed:
            log.info("resumed %d watch(es)", resumed)
        if self.store.redis is not None:
            self.tracker.spawn(self.watches.sweep_forever(), name="watch-sweeper", daemon=True)
        if self.store.redis is not None and self.queue is None:
            # questions acked by a replica that died (issue 24): dispatched again, the claim decides who answers
            # (with a job queue the queue keeps every acked request until a worker answered it)
            orphans = Orphans(self.store, self.redispatch, self.settings.event_lease / 3)
            self.tracker.spawn(orphans.sweep_forever(), name="question-sweeper", daemon=True)
        schedules = self.policy.schedules()
        if schedules and self.doctor.digests is not None:
            client_ref = client
            self.scheduler = DigestScheduler(
                self.doctor.digests,
                self.store,
                schedules,
                lambda channel: SlackSurface(client_ref, channel),
                team=None,  # asked of Slack (auth.test) until known: a replica that does not know it posts nothing
                whoami=lambda: _team_id(client_ref),
                tick=self.settings.digest_tick,
                lease_ttl=self.settings.digest_lease,
            )
            self.tracker.spawn(self.scheduler.run_forever(), name="digest-scheduler", daemon=True)
            log.info("%d scheduled digest(s)", len(schedules))

    async def redispatch(self, body: dict[str, Any]) -> None:
        """Dispatch a kept request again (a question taken over, :class:`handlers.claims.Orphans`): its signature was
        checked when it first arrived, so it goes in as Socket Mode requests do (no signature), through every
        middleware, the claim first."""
        await self.app.async_dispatch(AsyncBoltRequest(body=body, mode="socket_mode"))

    async def close(self, grace: float = 60.0) -> None:
        """Stop the watches and the scheduled slots (their leases released), drain the diagnoses (``grace``
        seconds), then close the pools; every step is bounded (:data:`CLOSE_STEP_SECONDS`). A worker stops taking jobs
        first (a job cut short is retried by another worker)."""
        if self.worker is not None:
            await _bounded("stopping the job worker", self.worker.stop(), CLOSE_STEP_SECONDS)
        await _bounded("stopping the watches", self.watches.stop(), CLOSE_STEP_SECONDS)
        if self.scheduler is not None:
            await _bounded("stopping the digest scheduler", self.scheduler.stop(), CLOSE_STEP_SECONDS)
        cancelled = await self.tracker.drain(grace)
        if cancelled:
            log.warning("%d diagnosis task(s) cancelled at shutdown", cancelled)
        # shared diagnoses whose askers were all cancelled
        await _bounded("cancelling shared diagnoses", self.doctor.aclose(), CLOSE_STEP_SECONDS)
        await _bounded("closing the state store", self.store.close(), CLOSE_STEP_SECONDS)
        if self.queue is not None:
            await _bounded("closing the job queue", self.queue.close(), CLOSE_STEP_SECONDS)
        session = self.app.client.session
        if session is not None and not session.closed:
            await _bounded("closing the Slack session", session.close(), CLOSE_STEP_SECONDS)
        await _bounded("closing the Run:ai and OSMO connections", close_shared_connections(), CLOSE_STEP_SECONDS)


async def _team_id(client: AsyncWebClient) -> str:
    """The workspace's team id (``auth.test``); raises when Slack does not say."""
    team = (await client.auth_test()).get("team_id")
    if not team:
        raise ValueError("auth.test named no team")
    return str(team)


def _load_policy(settings: Settings, policy: Policy | None) -> Policy:
    policy = policy or Policy.load(settings.policy_file)
    if not policy.enabled:
        log.warning("no access policy (WD_POLICY_FILE): every user may diagnose every cluster and project")
    elif policy.allows_nobody:
        log.warning(
            "the access policy (WD_POLICY_FILE) allows nobody: every request is refused until its 'access' names people"
        )
    return policy


def _watches(
    settings: Settings,
    backends: Backends,
    store: Store,
    policy: Policy,
    tracker: TaskTracker,
    client: AsyncWebClient,
    reports: Any,
    watcher_for: WatcherFor | None,
) -> Watches:
    """The watches, posting with the bot's client and reporting through the conversation's ``reports``."""

    async def report(question: Question, surface: Surface, root: str | None, footer: str | None) -> None:
        await report_in_thread(reports, question, surface, root, footer=footer, fresh=True)

    async def groups(user: str) -> set[str]:
        return await user_groups(policy, store, client, user)

    return Watches(
        policy,
        store,
        tracker.spawn,
        lambda channel: SlackSurface(client, channel),
        backends=backends,
        report=report,
        groups=groups,
        watcher_for=watcher_for,
        scale=settings.watch_scale,
        min_interval=settings.watch_min_interval,
        ttl=settings.watch_ttl,
        lease_margin=settings.watch_lease,
    )


def build_bot(
    settings: Settings,
    backends: Backends,
    *,
    socket_mode: bool = False,
    store: Store | None = None,
    policy: Policy | None = None,
    answer_fn: AnswerFn | None = None,
    watcher_for: WatcherFor | None = None,
    role: Role = "all",
) -> Bot:
    """The bot: ``AsyncApp`` with dedup/authorization/rate-limit middleware and the listeners; with a job queue
    (``settings.job_queue``) also the worker's app, per ``role`` (see the module). Raises :class:`SettingsError`
    for an ``ack`` or ``worker`` role without a job queue."""
    if role != "all" and not (settings.job_queue and settings.redis_url):
        raise SettingsError(f"the {role} role needs the job queue: set WD_JOB_QUEUE=true and REDIS_URL")
    preload()
    if role != "ack":  # a process that answers parses questions: the word list loaded before the first one
        load_words()
    store = store or Store(settings.redis_url, prefix=settings.key_prefix)
    policy = _load_policy(settings, policy)
    tracker = TaskTracker()
    app = AsyncApp(
        client=web_client(settings),
        signing_secret=settings.signing_secret or "",
        request_verification_enabled=not socket_mode,
        process_before_response=False,
        ignoring_self_events_enabled=True,
    )
    votes = FeedbackStore.for_settings(store, settings)
    # every answer a person can judge is kept with its world (issue 28, handlers.feedback_world)
    # (built after the answer, in a task of its own: the answer is not held back)
    later = functools.partial(tracker.spawn, name="feedback-world", detached=True)
    reports = conversation_reports(store, backends, answer_fn, keeper=votes, spawn=later)
    watches = _watches(settings, backends, store, policy, tracker, app.client, reports, watcher_for)
    doctor = Doctor(
        backends,
        store,
        policy,
        reports=reports,
        conversation_ttl=settings.conversation_ttl,
        rate_limit=settings.rate_limit,
        digests=DigestDesk(backends, policy, store=store),
        commands=(watches,),
    )

    def wire(target: AsyncApp, spawn: Callable[..., Any], claims: bool) -> None:
        middleware.install(target, store=store, policy=policy, spawn=tracker.spawn, settings=settings, claims=claims)
        listeners.register(target, doctor, spawn, admit=middleware.RateLimit(store, settings.rate_limit).admit)
        feedback.register(target, doctor, votes, spawn)  # issue 28

    queue, worker = _queue_tiers(settings, role, app, tracker, wire)
    return Bot(
        app=app,
        doctor=doctor,
        store=store,
        policy=policy,
        tracker=tracker,
        settings=settings,
        watches=watches,
        role=role,
        queue=queue,
        worker=worker,
    )


def _queue_tiers(
    settings: Settings,
    role: Role,
    app: AsyncApp,
    tracker: TaskTracker,
    wire: Callable[[AsyncApp, Callable[..., Any], bool], None],
) -> tuple[RequestQueue | None, RequestWorker | None]:
    """Wire ``app`` and, with a job queue, the worker's app: without one, ``app`` answers what it acks; with one,
    ``app`` acks and hands the work over, and (roles ``all`` and ``worker``) a second app answers (claims on, the
    work run here)."""
    if not (settings.job_queue and settings.redis_url):
        wire(app, tracker.spawn, True)
        return None, None
    queue = RequestQueue(
        settings.redis_url, prefix=settings.key_prefix, max_depth=settings.queue_max, heartbeat=settings.job_heartbeat
    )
    wire(app, HandOver(queue, tracker.spawn, middleware.tell_privately), False)
    if role == "ack":
        return queue, None
    answering = AsyncApp(
        client=app.client,
        request_verification_enabled=False,  # its requests were verified by the ack tier
        process_before_response=False,
        ignoring_self_events_enabled=True,
    )
    wire(answering, tracker.spawn, True)
    return queue, RequestWorker(queue, answering, concurrency=settings.worker_concurrency)


#: How far a request's ``X-Slack-Request-Timestamp`` may be from now, seconds (Slack's own rule).
SIGNATURE_WINDOW = 300
#: How long a signature+timestamp is remembered against replays, seconds: a timestamp up to the window in the
#: future is still accepted a window from now.
REPLAY_TTL = 2 * SIGNATURE_WINDOW
#: Wall-clock seconds the body of one request may take to arrive once its headers are in.
BODY_SECONDS = 10.0


class _Refused(Exception):
    """An events request answered without dispatching it: ``status`` and the plain ``text`` of the answer."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status = status
        self.text = text


def signed_headers(headers: Any, now: float) -> tuple[str, str]:
    """(timestamp, signature) of a Slack request, checked before its body is read: both present, the signature
    ``v0=`` and 64 hex digits, the timestamp whole seconds within :data:`SIGNATURE_WINDOW` of ``now`` (epoch
    seconds). Raises :class:`_Refused` (401) naming what is wrong."""
    timestamp = (headers.get("x-slack-request-timestamp") or "").strip()
    signature = (headers.get("x-slack-signature") or "").strip()
    if not timestamp or not signature:
        raise _Refused(401, "unsigned request")
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        raise _Refused(401, "the request timestamp is not a number of seconds")
    if abs(now - int(timestamp)) > SIGNATURE_WINDOW:
        raise _Refused(401, "the request timestamp is more than five minutes away")
    digest = signature[3:]
    if not signature.startswith("v0=") or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise _Refused(401, "the signature is malformed")
    return timestamp, signature


async def read_capped(request: Request, limit: int, seconds: float = BODY_SECONDS) -> bytes:
    """The body of ``request`` read as a stream: at most ``limit`` bytes (a ``Content-Length`` above it is refused
    before a byte is read) and ``seconds`` of wall clock. Raises :class:`_Refused`: 413 (too big), 408 (too
    slow), 400 (a malformed ``Content-Length``, or the client went away)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise _Refused(400, "malformed Content-Length")
        if int(declared) > limit:
            raise _Refused(413, f"the body is larger than {limit} bytes")
    parts: list[bytes] = []
    received = 0
    try:
        async with asyncio.timeout(seconds):
            async for chunk in request.stream():
                received += len(chunk)
                if received > limit:
                    raise _Refused(413, f"the body is larger than {limit} bytes")
                parts.append(chunk)
    except TimeoutError:
        raise _Refused(408, "the body did not arrive in time") from None
    except ClientDisconnect:
        raise _Refused(400, "the client went away") from None
    return b"".join(parts)


#: How deep a Slack body's JSON may nest (its objects and lists; Block Kit nests about 10 deep). Deeper is refused
#: before anything parses it (issue 24: a signed 50k-deep body got a 500 and a traceback from the parser).
MAX_JSON_DEPTH = 64
#: A JSON string (escapes included), and what is neither a string nor a bracket.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth_over(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON ``text`` nests more than ``limit`` objects and lists: its strings and everything but
    brackets dropped (in C), then the running depth of what is left; nothing is parsed (16 MiB in under 1 s)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    marks = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text)).replace("{", "[").replace("}", "]")
    return max(accumulate(1 if mark == "[" else -1 for mark in marks), default=0) > limit


def too_deep(text: str, content_type: str) -> bool:
    """Whether a Slack body's JSON (the body itself, or a form's ``payload``) nests past :data:`MAX_JSON_DEPTH`."""
    if "json" in content_type.lower():
        return json_depth_over(text)
    if "payload=" not in text:
        return False
    return any(json_depth_over(value) for key, value in parse_qsl(text) if key == "payload")


#: the parts of a Slack body that Bolt and the middleware read as objects, and as lists of objects
_OBJECT_PARTS = ("event", "view", "message", "container", "team", "user", "channel", "authorizations")
_LIST_PARTS = ("actions", "authorizations")


def shape_problem(body: dict[str, Any]) -> str | None:
    """Why a signed Slack body cannot be handled, or None: a part Bolt reads as an object (``event``, ``view``,
    ``message``…) that is something else, ``actions`` that are not a list of objects, a view submission without
    its view. Bolt itself answers such bodies with a 500 and a traceback (issue 15 §5); they get a 400."""
    for key in _OBJECT_PARTS:
        value = body.get(key)
        if value is not None and not isinstance(value, dict) and not (key in _LIST_PARTS and isinstance(value, list)):
            if key in ("user", "channel", "team") and isinstance(value, str):
                continue  # slash commands and some events name these by id
            return f"'{key}' is not an object"
    for key in _LIST_PARTS:
        value = body.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
            return f"'{key}' is not a list of objects"
    kind = body.get("type")
    if isinstance(kind, str) and kind.startswith("view_") and not isinstance(body.get("view"), dict):
        return "a view payload without its view"
    if kind == "event_callback" and not isinstance(body.get("event"), dict):
        return "an event callback without its event"
    return None


def http_app(bot: Bot, *, max_body_bytes: int | None = None, body_seconds: float = BODY_SECONDS) -> Starlette:
    """The HTTP mode ASGI app; its lifespan drains the diagnosis tasks on shutdown.

    ``max_body_bytes`` caps one request body (default ``WD_MAX_BODY_BYTES``), ``body_seconds`` the wall clock of
    reading it. ``POST /slack/events`` answers 401/408/413/400 (see the module) or what the Bolt app answers."""
    limit = max_body_bytes if max_body_bytes is not None else env_max_body_bytes()
    secret = (bot.settings.signing_secret or "").encode()

    async def admit(request: Request) -> AsyncBoltRequest | None:
        """The Bolt request for a signed, well-formed, first-seen ``request``; None for a replay. Raises
        :class:`_Refused`."""
        if not secret.strip():
            raise _Refused(401, "no signing secret is configured")  # fail closed: nothing can be verified
        timestamp, signature = signed_headers(request.headers, time.time())
        body = await read_capped(request, limit, body_seconds)
        # over the raw bytes (slack_sdk's verifier decodes them first, and raises on bytes that are not UTF-8)
        expected = hmac.new(secret, b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest("v0=" + expected, signature):
            raise _Refused(401, "invalid signature")
        try:
            text = body.decode("utf-8")
            if too_deep(text, request.headers.get("content-type") or ""):
                raise _Refused(400, f"the JSON nests deeper than {MAX_JSON_DEPTH} levels")
            bolt_request = AsyncBoltRequest(body=text, query=request.query_params, headers=request.headers)  # type: ignore[arg-type]
        except (ValueError, TypeError, AttributeError, KeyError, IndexError):
            # signed by Slack, yet not a body Bolt can read (bad UTF-8, JSON, form or payload)
            raise _Refused(400, "the body cannot be read") from None
        if not isinstance(bolt_request.body, dict):
            raise _Refused(400, "the body is not an object")
        problem = shape_problem(bolt_request.body)
        if problem:
            raise _Refused(400, problem)
        replay = hashlib.sha256(f"{timestamp}:{signature}".encode()).hexdigest()
        if not await bot.store.claim(f"slack-req:{replay}", ttl=REPLAY_TTL):
            return None
        return bolt_request

    async def events(request: Request) -> Response:
        try:
            bolt_request = await admit(request)
        except _Refused as refused:
            log.info("Slack request refused: HTTP %d (%s)", refused.status, refused.text)
            return PlainTextResponse(refused.text, status_code=refused.status)
        if bolt_request is None:
            log.info("replayed Slack request ignored (same signature and timestamp)")
            return Response(status_code=200)
        try:
            return to_starlette_response(await bot.app.async_dispatch(bolt_request))
        except Exception as exc:
            # a signed payload of an unexpected shape (a null view, a string event), or the Web API failing inside
            # Bolt's own middleware: one line, 400, never a 500 with a traceback (issue 15 §5)
            log.warning("Slack request not handled: %s: %s", type(exc).__name__, str(exc)[:200])
            return PlainTextResponse("bad request", status_code=400)

    async def healthz(request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> JSONResponse:
        ok = await bot.store.ping()
        return JSONResponse({"redis": "ok" if ok else "unavailable"}, status_code=200 if ok else 503)

    async def metrics_endpoint(request: Request) -> Response:
        body, content_type = metrics.exposition()
        return Response(body, media_type=content_type)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await bot.start()
        yield
        await bot.close()

    return Starlette(
        routes=[
            Route("/slack/events", events, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/readyz", readyz, methods=["GET"]),
            Route("/metrics", metrics_endpoint, methods=["GET"]),
        ],
        lifespan=lifespan,
    )


def run_http(bot: Bot, host: str = "127.0.0.1", port: int = 3000) -> None:
    import uvicorn

    # uvicorn turns SIGTERM into a graceful shutdown; the lifespan then drains the tasks
    uvicorn.run(http_app(bot), host=host, port=port, log_level="info", access_log=False, timeout_graceful_shutdown=90)


async def _health_server(bot: Bot, host: str, port: int, alive: Callable[[], Any]) -> Any:
    """A small HTTP server on ``host:port`` answering ``/healthz`` (``await alive()`` -> (ok, words)), ``/readyz``
    (Redis) and ``/metrics``; its ``aiohttp`` runner, started (the caller cleans it up)."""
    from aiohttp import web

    async def healthz(request: web.Request) -> web.Response:
        ok, words = await alive()
        return web.Response(status=200 if ok else 503, text="ok" if ok else words)

    async def readyz(request: web.Request) -> web.Response:
        ok = await bot.store.ping()
        return web.Response(status=200 if ok else 503, text="ok" if ok else "redis unavailable")

    async def metrics_endpoint(request: web.Request) -> web.Response:
        body, content_type = metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": content_type})

    health = web.Application()
    health.router.add_get("/healthz", healthz)
    health.router.add_get("/readyz", readyz)
    health.router.add_get("/metrics", metrics_endpoint)
    runner = web.AppRunner(health)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner


async def _until_stopped() -> None:
    """Until SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()


async def run_socket(bot: Bot, health_port: int | None = None, host: str = "127.0.0.1") -> None:
    """Socket Mode until SIGTERM/SIGINT, then close the socket and drain the tasks.

    With ``health_port`` a small HTTP server on ``host`` answers ``/healthz`` (socket connected), ``/readyz`` and
    ``/metrics``."""
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    handler = AsyncSocketModeHandler(bot.app, bot.settings.app_token)
    await handler.connect_async()
    await bot.start()
    runner: Any = None

    async def connected() -> tuple[bool, str]:
        return bool(await handler.client.is_connected()), "disconnected"

    try:
        if health_port is not None:
            runner = await _health_server(bot, host, health_port, connected)
        log.info("socket mode connected; waiting for events")
        await _until_stopped()
        log.info("shutting down: closing the socket, draining diagnoses")
    finally:
        await handler.close_async()
        await bot.close()
        if runner is not None:
            await runner.cleanup()


async def run_worker(bot: Bot, health_port: int | None = None, host: str = "127.0.0.1") -> None:
    """A worker process (issue 26 §1: ``workload-doctor worker``) until SIGTERM/SIGINT: it answers the queued
    requests, polls the watches and posts the scheduled digests, then drains and closes. With ``health_port`` a
    small HTTP server on ``host`` answers ``/healthz`` (its job worker running), ``/readyz`` (Redis) and
    ``/metrics``."""
    await bot.start()
    runner: Any = None

    async def working() -> tuple[bool, str]:
        return bot.worker is not None and bot.worker.running, "worker stopped"

    try:
        if health_port is not None:
            runner = await _health_server(bot, host, health_port, working)
        log.info("worker started: answering queued requests")
        await _until_stopped()
        log.info("shutting down: the jobs in progress finish or are retried by another worker")
    finally:
        await bot.close()
        if runner is not None:
            await runner.cleanup()
