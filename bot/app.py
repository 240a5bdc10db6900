"""Wiring: one Bolt ``AsyncApp`` (middleware + listeners), served by Socket Mode or by HTTP
(Starlette: ``POST /slack/events``, ``GET /healthz``, ``GET /readyz``, ``GET /metrics``; in Socket Mode the
health port serves the last three).

The Web API client's ``base_url`` comes from ``SLACK_API_URL`` and carries retry handlers for
connection errors, 429 (``Retry-After``) and 5xx. Diagnoses run after the ack in tracked tasks
that are drained on shutdown (SIGTERM).

OSMO watches (``/diagnose watch <workflow>``, :mod:`handlers.watch`) run in the same tracker; at
startup (:meth:`Bot.start`: the HTTP lifespan, or Socket Mode once connected) the bot resumes the
watches in Redis that no live replica holds and keeps sweeping for orphaned ones; at shutdown the
watches are stopped first (their state stays in Redis, their leases are released).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from bot.policy import Policy
from bot.scheduler import DigestScheduler
from bot.settings import Settings
from bot.state import Store
from bot.tasks import TaskTracker
from diagnosis import metrics
from diagnosis.answer import Backends, preload
from diagnosis.http import close_shared_connections, share_connections
from handlers import listeners, middleware
from handlers.digests import DigestDesk
from handlers.doctor import AnswerFn, Doctor
from handlers.slack_surface import SlackSurface
from handlers.watch import Watches, WatchFetch

log = logging.getLogger(__name__)


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

    async def start(self) -> None:
        """Open the connection pools (Slack Web API; Run:ai and OSMO), resume the active watches no live
        replica holds, then keep sweeping for orphaned ones."""
        client = self.app.client
        if client.session is None or client.session.closed:
            # one pool for every Web API call (Bolt hands it to each request's client); without it
            # slack_sdk opens a session and a connection per call
            client.session = aiohttp.ClientSession(
                trust_env=client.trust_env_in_session, trace_configs=[slack_call_metrics()]
            )
        share_connections()  # Run:ai and OSMO connections reused across diagnoses
        try:
            resumed = await self.watches.resume()
        except Exception:
            log.exception("could not resume watches")
            resumed = 0
        if resumed:
            log.info("resumed %d watch(es)", resumed)
        if self.store.redis is not None:
            self.tracker.spawn(self.watches.sweep_forever(), name="watch-sweeper", daemon=True)
        schedules = self.policy.schedules()
        if schedules and self.doctor.digests is not None:
            team = "-"
            try:
                team = str((await client.auth_test()).get("team_id") or "-")
            except Exception:
                log.warning("auth.test failed: scheduled digests keyed without a team id")
            client_ref = client
            self.scheduler = DigestScheduler(
                self.doctor.digests,
                self.store,
                schedules,
                lambda channel: SlackSurface(client_ref, channel),
                team=team,
                tick=self.settings.digest_tick,
                lease_ttl=self.settings.digest_lease,
            )
            self.tracker.spawn(self.scheduler.run_forever(), name="digest-scheduler", daemon=True)
            log.info("%d scheduled digest(s)", len(schedules))

    async def close(self, grace: float = 60.0) -> None:
        await self.watches.stop()
        if self.scheduler is not None:
            await self.scheduler.stop()
        cancelled = await self.tracker.drain(grace)
        if cancelled:
            log.warning("%d diagnosis task(s) cancelled at shutdown", cancelled)
        await self.doctor.aclose()  # shared diagnoses whose askers were all cancelled
        await self.store.close()
        session = self.app.client.session
        if session is not None and not session.closed:
            await session.close()
        await close_shared_connections()


def build_bot(
    settings: Settings,
    backends: Backends,
    *,
    socket_mode: bool = False,
    store: Store | None = None,
    policy: Policy | None = None,
    answer_fn: AnswerFn | None = None,
    watch_fetch: WatchFetch | None = None,
) -> Bot:
    """The bot: ``AsyncApp`` with dedup/authorization/rate-limit middleware and the listeners."""
    preload()
    store = store or Store(settings.redis_url, prefix=settings.key_prefix)
    policy = policy or Policy.load(settings.policy_file)
    if not policy.enabled:
        log.warning("no access policy (WD_POLICY_FILE): every user may diagnose every cluster and project")
    tracker = TaskTracker()
    app = AsyncApp(
        client=web_client(settings),
        signing_secret=settings.signing_secret or "",
        request_verification_enabled=not socket_mode,
        process_before_response=False,
        ignoring_self_events_enabled=True,
    )
    doctor = Doctor(backends, store, policy, answer_fn=answer_fn, conversation_ttl=settings.conversation_ttl)
    client = app.client
    watches = Watches(
        doctor,
        store,
        tracker.spawn,
        lambda channel: SlackSurface(client, channel),
        fetch=watch_fetch,
        scale=settings.watch_scale,
        min_interval=settings.watch_min_interval,
        ttl=settings.watch_ttl,
        lease_margin=settings.watch_lease,
    )
    doctor.watches = watches
    doctor.digests = DigestDesk(backends, policy, store=store)
    middleware.install(app, store=store, policy=policy, spawn=tracker.spawn)
    listeners.register(app, doctor, tracker.spawn, admit=middleware.RateLimit(store, settings.rate_limit).admit)
    return Bot(app=app, doctor=doctor, store=store, policy=policy, tracker=tracker, settings=settings, watches=watches)


def http_app(bot: Bot) -> Starlette:
    """The HTTP mode ASGI app; its lifespan drains the diagnosis tasks on shutdown."""
    handler = AsyncSlackRequestHandler(bot.app)

    async def events(request: Request) -> Any:
        return await handler.handle(request)

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


def run_http(bot: Bot, host: str = "0.0.0.0", port: int = 3000) -> None:
    import uvicorn

    # uvicorn turns SIGTERM into a graceful shutdown; the lifespan then drains the tasks
    uvicorn.run(http_app(bot), host=host, port=port, log_level="info", access_log=False, timeout_graceful_shutdown=90)


async def run_socket(bot: Bot, health_port: int | None = None) -> None:
    """Socket Mode until SIGTERM/SIGINT, then close the socket and drain the tasks.

    With ``health_port`` a small HTTP server answers ``/healthz`` (socket connected), ``/readyz`` and ``/metrics``."""
    from aiohttp import web
    from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler

    handler = AsyncSocketModeHandler(bot.app, bot.settings.app_token)
    await handler.connect_async()
    await bot.start()
    runner: web.AppRunner | None = None
    try:
        if health_port is not None:

            async def healthz(request: web.Request) -> web.Response:
                connected = await handler.client.is_connected()
                return web.Response(status=200 if connected else 503, text="ok" if connected else "disconnected")

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
            await web.TCPSite(runner, "0.0.0.0", health_port).start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        log.info("socket mode connected; waiting for events")
        await stop.wait()
        log.info("shutting down: closing the socket, draining diagnoses")
    finally:
        await handler.close_async()
        await bot.close()
        if runner is not None:
            await runner.cleanup()
