"""``workload-doctor osmo list|status|explain|watch`` (OSMO workflows), plus ``workload-doctor watch``.

Every command takes ``--snapshot FILE`` (serve a snapshot in the sandbox) or uses ``OSMO_URL`` /
``OSMO_TOKEN``, and answers through the same :func:`diagnosis.answer.answer` as ``diagnose``.
``watch`` follows the workflow with the one watch loop (:func:`diagnosis.watching.follow`, the spec's cadence),
prints each state change and the final report, and stops at a terminal state (or after ``--max-polls``).
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
    from diagnosis.osmo.watch import StateChange, WatchState
    from diagnosis.question import Kind
    from diagnosis.report import Report
    from diagnosis.watching import Ending

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


class _Printer:
    """The terminal's side of the one watch loop (:func:`diagnosis.watching.follow`): each poll in a line."""

    def __init__(self, workflow: str) -> None:
        self.workflow = workflow

    async def seen(self, state: WatchState, change: StateChange | None) -> None:
        if change is not None:
            typer.echo(change.sentence())
        elif not state.done:
            typer.echo(f"{self.workflow}: still {state.status} (next poll in {state.interval():g} s)")

    async def ended(self, state: WatchState, ending: Ending, failures: int) -> None:
        from diagnosis.watching import Ending

        if ending is Ending.GONE:
            return  # the report that follows says the workflow was not found
        if ending is Ending.GAVE_UP:
            typer.echo(f"{self.workflow}: OSMO did not answer {failures} polls in a row; stopped watching.")


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
    from diagnosis.osmo.watch import WatchState
    from diagnosis.question import Question

    setup_logging(logging.DEBUG if debug else logging.WARNING)
    from diagnosis.backends import backend_of
    from diagnosis.watching import follow

    def run() -> Report:
        with backends_for(snapshot) as (backends, _ask_keys):
            _require_osmo(backends)
            watcher = backend_of("osmo").watcher(backends)
            assert watcher is not None

            async def watch_it() -> Report:
                async with watcher as poll:
                    state = WatchState(workflow_id=workflow, user_cadence_s=interval)
                    await follow(state, poll, _Printer(workflow), clock=backends.now, max_polls=max_polls)
                question = Question(text=f"status of workflow {workflow}", workflow_id=workflow, kind="osmo_status")
                return await answer(question, backends)

            return asyncio.run(watch_it())

    emit(run_guarded(run, debug), fmt)


def register(app: typer.Typer) -> None:
    """Attach the ``osmo`` command group (and a top-level ``watch``) to the main CLI."""
    osmo = typer.Typer(
        name="osmo",
        help="OSMO workflows: list, status, explain, watch. Read-only.",
        no_args_is_help=True,
        rich_markup_mode=None,
    )
    osmo.command("list")(list_cmd)
    osmo.command("status")(status_cmd)
    osmo.command("explain")(explain_cmd)
    osmo.command("watch")(watch_cmd)
    app.add_typer(osmo, name="osmo")
    app.command("watch", help="Follow an OSMO workflow to a terminal state (same as `osmo watch`).")(watch_cmd)
