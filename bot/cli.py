"""``workload-doctor``: the command line (diagnose, sandbox, osmo, serve, chat).

Every answer, whatever its outcome, exits 0. Input that prevents an answer (malformed snapshot,
bad lookback, missing settings, an API unreachable after retries) prints one clear line on
stderr and exits 2; an unexpected error prints one line and exits 1. Never a traceback
(``--debug`` shows one).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, TypeVar

import typer
from pydantic import ValidationError

from diagnosis.answer import Backends, BackendUnavailable, answer
from diagnosis.config import ConfigError, KubeConfig, OsmoConfig, RunaiConfig
from diagnosis.logs import setup_logging
from diagnosis.question import Question, QuestionError, parse_text
from diagnosis.render import render_text, to_json
from diagnosis.report import Report
from diagnosis.units import parse_time

app = typer.Typer(
    name="workload-doctor",
    help="Explains why a Run:ai workload or an OSMO workflow failed. Read-only.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
T = TypeVar("T")
EXIT_BAD_INPUT = 2


class Format(StrEnum):
    text = "text"
    json = "json"
    blocks = "blocks"


class IntentOpt(StrEnum):
    terminal = "terminal"
    current = "current"


class UserError(Exception):
    """Input that prevents an answer; printed as one line."""


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    typer.echo(f"workload-doctor: error: {message}", err=True)
    raise typer.Exit(code)


def run_guarded(fn: Callable[[], T], debug: bool = False) -> T:
    """Run ``fn`` turning known input errors into one line (exit 2) and anything else into one line (exit 1)."""
    from sandbox.server import SnapshotError

    try:
        return fn()
    except typer.Exit:
        raise
    except (ConfigError, QuestionError, SnapshotError, BackendUnavailable, UserError) as exc:
        if debug:
            raise
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except Exception as exc:
        if debug:
            raise
        from diagnosis.redact import sanitize

        fail(f"unexpected {type(exc).__name__}: {sanitize(str(exc))[:300]} (run with --debug for details)", 1)
    raise AssertionError("unreachable")


@contextmanager
def backends_for(snapshot_path: str | None, latency: float = 0.0) -> Iterator[tuple[Backends, dict[str, Any]]]:
    """Backends from the environment, or from a sandbox serving ``snapshot_path`` (yielding its ``ask``)."""
    if snapshot_path is None:
        kube = KubeConfig.from_env()
        runai: RunaiConfig | None = None
        osmo: OsmoConfig | None = None
        errors: list[str] = []
        try:
            runai = RunaiConfig.from_env()
        except ConfigError as exc:
            if any(os.environ.get(n) for n in ("RUNAI_BASE_URL", "RUNAI_CLIENT_ID", "RUNAI_CLIENT_SECRET")):
                errors.append(str(exc))
        try:
            osmo = OsmoConfig.from_env()
        except ConfigError as exc:
            if any(os.environ.get(n) for n in ("OSMO_URL", "OSMO_TOKEN")):
                errors.append(str(exc))
        if errors:
            raise ConfigError(errors[0])
        if runai is None and osmo is None:
            raise ConfigError(
                "no backend configured: set RUNAI_BASE_URL, RUNAI_CLIENT_ID and RUNAI_CLIENT_SECRET (Run:ai) "
                "or OSMO_URL and OSMO_TOKEN (OSMO), or use --snapshot FILE to run on the sandbox"
            )
        yield Backends(runai=runai, kube=kube, osmo=osmo), {}
        return
    from sandbox.server import Sandbox, load_snapshot

    snapshot = load_snapshot(snapshot_path)
    now = parse_time(snapshot.get("now"))
    if snapshot.get("now") is not None and now is None:
        raise UserError(f"snapshot {snapshot_path}: 'now' is not an RFC 3339 time")
    with Sandbox(snapshot, latency=latency) as sandbox:
        backends = Backends(
            runai=RunaiConfig(sandbox.url, "sandbox", "sandbox", console_url=sandbox.url)
            if "runai" in snapshot
            else None,
            # The sandbox's Tier 2 settings, read as the environment's are: with kubernetes_by_cluster, a kubeconfig
            # with one context per cluster and WD_KUBE_CONTEXTS mapping each cluster uuid to its context.
            kube=KubeConfig.from_env(sandbox.kube_env()),
            osmo=OsmoConfig(sandbox.url, "sandbox-access-token") if "osmo" in snapshot else None,
        )
        if now is not None:
            fixed: datetime = now
            backends.now = lambda: fixed
        ask = snapshot.get("ask")
        if ask is not None and not isinstance(ask, dict):
            raise UserError(f"snapshot {snapshot_path}: 'ask' must be an object")
        yield backends, dict(ask or {})


def build_question(options: Question, ask: dict[str, Any]) -> Question:
    """Explicit options win, then the snapshot's ``ask`` keys, then what the text names."""
    try:
        base = Question.model_validate({k: v for k, v in ask.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise UserError(f"the question is invalid: ask.{where}: {first.get('msg')}") from None
    question = options.merged(base)
    parsed = parse_text(question.text)
    question = question.merged(parsed)
    question.lookback_delta()  # validates early: bad lookback is bad input
    return question


def emit(report: Report, fmt: Format, verbose: bool = False) -> None:
    if fmt == Format.text:
        typer.echo(render_text(report, verbose=verbose), nl=False)
        return
    from handlers.blocks import render_report, thread_payload

    rendered = render_report(report)
    blocks = rendered.main.blocks
    if fmt == Format.blocks:
        typer.echo(json.dumps({"blocks": blocks}, indent=2))
    else:
        typer.echo(json.dumps(to_json(report, blocks, thread_payload(rendered)), indent=2))


@app.command()
def diagnose(
    question: Annotated[
        str | None, typer.Argument(help='Free text, e.g. "what killed train-gpt2 in project nlp?"')
    ] = None,
    cluster_id: Annotated[
        str | None, typer.Option("--cluster-id", help="Run:ai cluster UUID, or its exact name (required for Run:ai).")
    ] = None,
    workload_id: Annotated[str | None, typer.Option("--workload-id", help="Run:ai workload UUID (Option A).")] = None,
    workload: Annotated[
        str | None, typer.Option("--workload", help="Workload name (Option B, with --project).")
    ] = None,
    project: Annotated[str | None, typer.Option("--project", help="Run:ai project name.")] = None,
    intent: Annotated[
        IntentOpt | None, typer.Option("--intent", help="terminal (past failure) or current symptom.")
    ] = None,
    lookback: Annotated[str | None, typer.Option("--lookback", help="Recurrence window, e.g. 7d, 36h.")] = None,
    workflow: Annotated[str | None, typer.Option("--workflow", help="OSMO workflow ID.")] = None,
    fmt: Annotated[Format, typer.Option("--format", help="text, json or blocks.")] = Format.text,
    snapshot: Annotated[
        str | None, typer.Option("--snapshot", help="Serve this snapshot in a sandbox and diagnose it.")
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help="Text: every source and whole log tails.")] = False,
) -> None:
    """Diagnose one workload (Run:ai) or workflow (OSMO)."""
    setup_logging(logging.DEBUG if debug else logging.WARNING)
    options = Question(
        text=question,
        cluster_id=cluster_id,
        workload_id=workload_id,
        workload_name=workload,
        project=project,
        intent=intent.value if intent else None,
        lookback=lookback,
        workflow_id=workflow,
    )

    if snapshot is not None and _snapshot_kind(snapshot) == "digest":
        from bot.cli_digest import run_digest
        from diagnosis.digests import DigestAsk

        run_digest(snapshot, DigestAsk(), fmt.value, debug)
        return

    def run() -> Report:
        with backends_for(snapshot) as (backends, ask):
            q = build_question(options, ask)
            return asyncio.run(answer(q, backends))

    report = run_guarded(run, debug)
    emit(report, fmt, verbose)


def _snapshot_kind(path: str) -> str | None:
    """The ``ask.kind`` of a snapshot file (``"digest"``), or None; a bad file is left to the normal path."""
    try:
        with open(path, encoding="utf-8") as fh:
            ask = json.load(fh).get("ask")
    except (OSError, ValueError, AttributeError):
        return None
    kind = ask.get("kind") if isinstance(ask, dict) else None
    return kind if isinstance(kind, str) else None


@app.command()
def sandbox(
    snapshot: Annotated[str, typer.Option("--snapshot", help="Snapshot file to serve.")],
    latency_ms: Annotated[int, typer.Option("--latency-ms", help="Extra latency per request.")] = 0,
    port: Annotated[int, typer.Option("--port", help="Port (0: ephemeral).")] = 0,
) -> None:
    """Serve a snapshot over HTTP on loopback until stopped (Ctrl-C)."""
    from sandbox.server import Sandbox, load_snapshot

    def run() -> None:
        # SIGTERM ends the sandbox like Ctrl-C does, so the temporary kubeconfig is removed.
        signal.signal(signal.SIGTERM, lambda signum, frame: (_ for _ in ()).throw(KeyboardInterrupt()))
        snap = load_snapshot(snapshot)
        with Sandbox(snap, latency=latency_ms / 1000, port=port) as sb:
            typer.echo(f"sandbox serving {snapshot} at {sb.url}")
            if "runai" in snap:
                typer.echo(f"  RUNAI_BASE_URL={sb.url} RUNAI_CLIENT_ID=sandbox RUNAI_CLIENT_SECRET=sandbox")
            for name, value in sb.kube_env().items():
                typer.echo(f"  {name}={shlex.quote(value)}")
            if "osmo" in snap:
                typer.echo(f"  OSMO_URL={sb.url} OSMO_TOKEN=sandbox")
            sys.stdout.flush()
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                typer.echo("stopped")

    run_guarded(run)


def _register_subcommands() -> None:
    from bot import cli_capture, cli_digest, cli_doctor, cli_osmo, cli_slack

    cli_doctor.register(app)
    cli_capture.register(app)
    cli_digest.register(app)
    cli_osmo.register(app)
    cli_slack.register(app)


_register_subcommands()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
