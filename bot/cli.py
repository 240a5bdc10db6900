"""``workload-doctor``: the command line (diagnose, sandbox, osmo, serve, chat).

Every answer, whatever its outcome, exits 0. Input that prevents an answer (malformed snapshot,
bad lookback, missing settings, an API unreachable after retries) prints one clear line on
stderr and exits 2; an unexpected error prints one line and exits 1; SIGTERM prints one line and exits 143.
Never a traceback (``--debug`` shows one).

The app, the shared options and the error guard live in :mod:`bot.cli_app`; this module adds ``diagnose`` and
``sandbox`` and registers every sub-command module onto the app (they import :mod:`bot.cli_app`, never this
module, so there is no import cycle).
"""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
import signal
import sys
import time
from typing import TYPE_CHECKING, Annotated

import typer

from bot import cli_capture, cli_digest, cli_doctor, cli_feedback, cli_osmo, cli_slack

# Re-exported: tests, benches and older callers import these from here.
from bot.cli_app import (
    EXIT_BAD_INPUT,
    EXIT_TERMINATED,
    ClusterIdOpt,
    DebugOpt,
    Format,
    FormatOpt,
    IntentOpt,
    IntentOption,
    LookbackOpt,
    ProjectOpt,
    QuestionArg,
    Terminated,
    UserError,
    WorkflowOpt,
    WorkloadIdOpt,
    WorkloadOpt,
    app,
    backends_for,
    build_question,
    emit,
    fail,
    freeze_startup_heap,
    install_sigterm,
    run_guarded,
)

# The diagnosis core is imported by the commands that use it (issue 26 §2): ``--help`` loads none of it.
if TYPE_CHECKING:
    from diagnosis.report import Report

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_TERMINATED",
    "Format",
    "IntentOpt",
    "Terminated",
    "UserError",
    "app",
    "backends_for",
    "build_question",
    "emit",
    "fail",
    "main",
    "run_guarded",
]


@app.command()
def diagnose(
    question: QuestionArg = None,
    cluster_id: ClusterIdOpt = None,
    workload_id: WorkloadIdOpt = None,
    workload: WorkloadOpt = None,
    project: ProjectOpt = None,
    intent: IntentOption = None,
    lookback: LookbackOpt = None,
    workflow: WorkflowOpt = None,
    fmt: FormatOpt = Format.text,
    snapshot: Annotated[
        str | None, typer.Option("--snapshot", help="Serve this snapshot in a sandbox and diagnose it.")
    ] = None,
    debug: DebugOpt = False,
    verbose: Annotated[bool, typer.Option("--verbose", help="Text: every source and whole log tails.")] = False,
) -> None:
    """Diagnose one workload (Run:ai) or workflow (OSMO)."""
    from diagnosis.answer import answer
    from diagnosis.logs import setup_logging
    from diagnosis.question import Question

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
        from diagnosis.digests import DigestAsk

        cli_digest.run_digest(snapshot, DigestAsk(), fmt.value, debug)
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
            freeze_startup_heap()  # the snapshot, parsed, is most of its heap: no collection walks it again
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


# Each sub-command module registers onto the common app; the order is the order of ``--help``.
for _module in (cli_doctor, cli_capture, cli_digest, cli_feedback, cli_osmo, cli_slack):
    _module.register(app)


def main() -> None:
    """The ``workload-doctor`` entry point: SIGTERM ends any command with one line and exit 143."""
    install_sigterm()
    try:
        app()
    except Terminated:
        # Arrived outside :func:`run_guarded` (while printing, or in argument parsing).
        typer.echo("workload-doctor: error: terminated (SIGTERM)", err=True)
        raise SystemExit(EXIT_TERMINATED) from None


if __name__ == "__main__":
    main()
