"""``workload-doctor serve`` (Slack bot, Socket Mode or HTTP) and ``workload-doctor chat`` (terminal twin)."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated

import typer

from bot.cli_app import UserError, backends_for, freeze_startup_heap, run_guarded, run_server


def serve(
    socket: Annotated[bool, typer.Option("--socket", help="Socket Mode (needs SLACK_APP_TOKEN).")] = False,
    http: Annotated[
        bool, typer.Option("--http", help="HTTP mode at /slack/events (needs SLACK_SIGNING_SECRET).")
    ] = False,
    port: Annotated[int, typer.Option("--port", help="HTTP port (HTTP mode).")] = 3000,
    host: Annotated[
        str | None,
        typer.Option(
            "--host", help="Listen address of the HTTP port or the health port (default WD_HOST, else 127.0.0.1)."
        ),
    ] = None,
    health_port: Annotated[
        int | None, typer.Option("--health-port", help="Socket Mode: serve /healthz and /readyz here.")
    ] = None,
    snapshot: Annotated[
        str | None, typer.Option("--snapshot", help="Answer from a sandbox serving this snapshot.")
    ] = None,
    latency_ms: Annotated[int, typer.Option("--latency-ms", help="Sandbox latency per request.")] = 0,
    ack_only: Annotated[
        bool,
        typer.Option("--ack-only", help="With WD_JOB_QUEUE: only ack and enqueue; `workload-doctor worker` answers."),
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Debug logs.")] = False,
) -> None:
    """Run the Slack bot (SLACK_BOT_TOKEN, REDIS_URL, and SLACK_APP_TOKEN or SLACK_SIGNING_SECRET).

    With WD_JOB_QUEUE=true it acks and enqueues each request and answers it with an in-process worker (one
    process is all it takes); `--ack-only` leaves the answers to `workload-doctor worker` processes.
    SIGTERM is how a server is told to stop: it drains and exits 0 with an info line, not an error."""
    from bot.app import build_bot, run_http, run_socket
    from bot.settings import Mode, Settings
    from diagnosis.logs import setup_logging

    setup_logging(logging.DEBUG if debug else logging.INFO)
    if socket == http:
        run_guarded(lambda: (_ for _ in ()).throw(UserError("choose one of --socket or --http")))
    mode: Mode = "socket" if socket else "http"

    def run() -> None:
        settings = Settings.from_env(mode)
        bind = host or settings.host
        with backends_for(snapshot, latency=latency_ms / 1000) as (backends, _ask):
            bot = build_bot(settings, backends, socket_mode=socket, role="ack" if ack_only else "all")
            freeze_startup_heap()
            if socket:
                asyncio.run(run_socket(bot, health_port, host=bind))
            else:
                run_http(bot, host=bind, port=port)

    run_server(run, debug)


def worker(
    health_port: Annotated[
        int | None, typer.Option("--health-port", help="Serve /healthz, /readyz and /metrics here.")
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", help="Listen address of the health port (default WD_HOST).")
    ] = None,
    snapshot: Annotated[
        str | None, typer.Option("--snapshot", help="Answer from a sandbox serving this snapshot.")
    ] = None,
    latency_ms: Annotated[int, typer.Option("--latency-ms", help="Sandbox latency per request.")] = 0,
    debug: Annotated[bool, typer.Option("--debug", help="Debug logs.")] = False,
) -> None:
    """Answer the requests `serve --ack-only` queued (WD_JOB_QUEUE=true, REDIS_URL, SLACK_BOT_TOKEN); also
    polls the watches and posts the scheduled digests. Scale these independently of the ack tier."""
    from bot.app import build_bot, run_worker
    from bot.settings import Settings
    from diagnosis.logs import setup_logging

    setup_logging(logging.DEBUG if debug else logging.INFO)

    def run() -> None:
        settings = Settings.from_env("worker")
        with backends_for(snapshot, latency=latency_ms / 1000) as (backends, _ask):
            bot = build_bot(settings, backends, socket_mode=True, role="worker")
            freeze_startup_heap()
            asyncio.run(run_worker(bot, health_port, host=host or settings.host))

    run_server(run, debug)


def chat(
    snapshot: Annotated[
        str | None, typer.Option("--snapshot", help="Answer from a sandbox serving this snapshot.")
    ] = None,
    channel: Annotated[
        str, typer.Option("--channel", help="Pretend to be in this channel (its policy defaults apply).")
    ] = "terminal",
    question: Annotated[str | None, typer.Argument(help="A first question (then keep chatting).")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Debug logs.")] = False,
) -> None:
    """Talk to the bot in the terminal: same parsing, follow-ups and replies as in Slack."""
    from bot.chat import chat as run_chat
    from bot.policy import Policy
    from diagnosis.config import environment
    from diagnosis.logs import setup_logging

    setup_logging(logging.DEBUG if debug else logging.WARNING)

    def run() -> None:
        env = environment()
        policy = Policy.load(env.get("WD_POLICY_FILE") or None)
        with backends_for(snapshot) as (backends, _ask):
            asyncio.run(run_chat(backends, policy=policy, channel=channel, first=question))

    run_guarded(run, debug)


def register(app: typer.Typer) -> None:
    """Attach ``serve``, ``worker`` and ``chat`` to the main CLI."""
    app.command()(serve)
    app.command()(worker)
    app.command()(chat)
