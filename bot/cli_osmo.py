"""``workload-doctor osmo list|status|explain|watch`` (OSMO workflows), plus ``workload-doctor watch``.

Every command takes ``--snapshot FILE`` (serve a snapshot in the sandbox) or uses ``OSMO_URL`` /
``OSMO_TOKEN``, and answers through the same :func:`diagnosis.answer.answer` as ``diagnose``.
``watch`` polls with the spec's cadence (:mod:`diagnosis.osmo.watch`), prints each state change
and the final report, and stops at a terminal state (or after ``--max-polls``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Annotated

import typer

from bot.cli_app import DebugOpt, Format, FormatOpt, backends_for, emit, run_guarded

# The diagnosis core is imported where used (issue 26 §2): ``--help`` loads none of it.
if TYPE_CHECKING:
    from diagnosis.answer import Backends
    from diagnosis.question import Kind
    from diagnosis.report import Report

SnapshotOpt = Annotated[str | None, typer.Option("--snapshot", help="Serve this snapshot in a sandbox.")]
WorkflowArg = Annotated[str, typer.Argument(help="OSMO workflow ID, e.g. sdg-render-7.")]


def _ask(kind: Kind, text: str, workflow_id: str | None, snapshot: str | None, fmt: Format, debug: bool) -> None:
    from diagnosis.answer import answer
    from diagnosis.logs import setup_logging
    from diagnosis.question import Question

    setup_logging(logging.DEBUG if debug else logging.WARNING)

    def run() -> Report:
        with backends_for(snapshot) as (backends, _ask_keys):
            _require_osmo(backends)
            question = Question(text=text, workflow_id=workflow_id, kind=kind, lookback=None)
            return asyncio.run(answer(question, backends))

    emit(run_guarded(run, debug), fmt)


def _require_osmo(backends: Backends) -> None:
    from diagnosis.config import ConfigError

    if backends.osmo is None:
        raise ConfigError("OSMO is not configured: set OSMO_URL and OSMO_TOKEN (or use --snapshot FILE)")


def list_cmd(
    snapshot: SnapshotOpt = None,
    fmt: FormatOpt = Format.text,
    debug: DebugOpt = False,
    text: Annotated[str, typer.Option("--text", help='Filter words, e.g. "failed".')] = "",
) -> None:
    """List recent workflows (workflow ID, pool, status, duration), grouped by status."""
    _ask("osmo_list", ("list recent workflows " + text).strip(), None, snapshot, fmt, debug)


def status_cmd(
    workflow: WorkflowArg, snapshot: SnapshotOpt = None, fmt: FormatOpt = Format.text, debug: DebugOpt = False
) -> None:
    """Status of one workflow: status first, logs per task, failure or PENDING diagnosis, links."""
    _ask("osmo_status", f"status of workflow {workflow}", workflow, snapshot, fmt, debug)


def explain_cmd(
    workflow: WorkflowArg, snapshot: SnapshotOpt = None, fmt: FormatOpt = Format.text, debug: DebugOpt = False
) -> None:
    """What a workflow does: image, command, environment variable names (never values), outputs."""
    _ask("osmo_explain", f"what does workflow {workflow} do", workflow, snapshot, fmt, debug)


def watch_cmd(
    workflow: WorkflowArg,
    snapshot: SnapshotOpt = None,
    fmt: FormatOpt = Format.text,
    debug: DebugOpt = False,
    interval: Annotated[float | None, typer.Option("--interval", help="Poll every N seconds (your cadence).")] = None,
    max_polls: Annotated[int | None, typer.Option("--max-polls", help="Stop after N polls.")] = None,
) -> None:
    """Follow a workflow to a terminal state, printing each state change, then the final report."""
    from diagnosis.answer import answer
    from diagnosis.logs import setup_logging
    from diagnosis.question import Question

    setup_logging(logging.DEBUG if debug else logging.WARNING)
    from diagnosis.osmo.client import OsmoClient
    from diagnosis.osmo.watch import WatchState, watch, work_kind

    def run() -> Report:
        with backends_for(snapshot) as (backends, _ask_keys):
            _require_osmo(backends)
            config = backends.osmo
            assert config is not None

            async def follow() -> Report:
                async with OsmoClient(config) as client:
                    first = await client.get_workflow(workflow)
                    state = WatchState(workflow_id=workflow, kind=work_kind(first), user_cadence_s=interval)

                    async def fetch(wid: str) -> str:
                        return (await client.get_workflow(wid)).status

                    async for current, change in watch(state, fetch, clock=backends.now, max_polls=max_polls):
                        if change is not None:
                            typer.echo(change.sentence())
                        elif not current.done:
                            typer.echo(f"{workflow}: still {current.status} (next poll in {current.interval():g} s)")
                question = Question(text=f"status of workflow {workflow}", workflow_id=workflow, kind="osmo_status")
                return await answer(question, backends)

            return asyncio.run(follow())

    emit(run_guarded(run, debug), fmt)


def register(app: typer.Typer) -> None:
    """Attach the ``osmo`` command group (and a top-level ``watch``) to the main CLI."""
    osmo = typer.Typer(
        name="osmo", help="OSMO workflows: list, status, explain, watch. Read-only.", no_args_is_help=True
    )
    osmo.command("list")(list_cmd)
    osmo.command("status")(status_cmd)
    osmo.command("explain")(explain_cmd)
    osmo.command("watch")(watch_cmd)
    app.add_typer(osmo, name="osmo")
    app.command("watch", help="Follow an OSMO workflow to a terminal state (same as `osmo watch`).")(watch_cmd)
