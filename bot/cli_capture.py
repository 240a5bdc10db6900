"""``workload-doctor capture``: turn a real failure into a snapshot case (:mod:`diagnosis.capture`).

It asks the configured backends (``RUNAI_*``, ``KUBECONFIG``, ``OSMO_*``; read-only, as ``diagnose``),
records every response the diagnosis read, and writes them, redacted, as a ``snapshot/1`` file (mode 0600) whose
``ask`` is the question and whose ``expect`` is today's answer. ``diagnose --snapshot FILE`` replays it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from bot.cli_app import (
    ClusterIdOpt,
    DebugOpt,
    IntentOption,
    LookbackOpt,
    ProjectOpt,
    UserError,
    WorkflowOpt,
    WorkloadIdOpt,
    WorkloadOpt,
    backends_for,
    build_question,
    run_guarded,
)


def capture_cmd(
    question: Annotated[
        str | None, typer.Argument(help='Free text as a person would ask, e.g. "why did train-7 fail?" (optional).')
    ] = None,
    cluster_id: ClusterIdOpt = None,
    workload_id: WorkloadIdOpt = None,
    workload: WorkloadOpt = None,
    project: ProjectOpt = None,
    intent: IntentOption = None,
    lookback: LookbackOpt = None,
    workflow: WorkflowOpt = None,
    output: Annotated[
        str | None, typer.Option("-o", "--output", help="Write the snapshot here (default: standard output).")
    ] = None,
    now: Annotated[
        str | None,
        typer.Option("--now", help="Diagnose as of this RFC 3339 time (default: now); it becomes the snapshot's now."),
    ] = None,
    debug: DebugOpt = False,
) -> None:
    """Diagnose one workload or workflow and write every response it read as a redacted snapshot."""
    from diagnosis.logs import setup_logging
    from diagnosis.question import Question

    setup_logging(logging.DEBUG if debug else logging.WARNING)
    ask: dict[str, Any] = {
        "text": question,
        "cluster_id": cluster_id,
        "workload_id": workload_id,
        "workload_name": workload,
        "project": project,
        "intent": intent.value if intent else None,
        "lookback": lookback,
        "workflow_id": workflow,
    }

    def run() -> dict[str, Any]:
        clock = _clock(now)
        with backends_for(None) as (backends, _):
            backends.now = lambda: clock
            q = build_question(Question.model_validate({k: v for k, v in ask.items() if v is not None}), {})
            from diagnosis.capture import capture_world  # only when capturing: diagnose never imports it

            snapshot, _report = asyncio.run(capture_world(q, ask, backends))
        if output:
            write_private(Path(output), json.dumps(snapshot, indent=2, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(json.dumps(snapshot, indent=2, ensure_ascii=False) + "\n")
        expect = snapshot["expect"]
        verdict = expect["outcome"] + (f" {expect['category']}" if expect.get("category") else "")
        where = output or "standard output"
        typer.echo(f"captured {snapshot['id']} ({verdict}) to {where}", err=True)
        return snapshot

    run_guarded(run, debug)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (0600), from its creation on: a new file is created
    with that mode (``os.open``, never a chmod after) and moved over ``path``, so an existing file of wider mode
    is replaced, not reused."""
    fd, tmp = _create_private(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _create_private(path: Path) -> tuple[int, str]:
    for attempt in range(100):
        tmp = str(path.with_name(f".{path.name}.{os.getpid()}.{attempt}.tmp"))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), tmp
        except FileExistsError:
            continue
    raise UserError(f"could not create a file next to {path}")


def _clock(raw: str | None) -> datetime:
    """The diagnosis clock: ``--now`` or the current time, in whole seconds (the snapshot's ``now`` holds it
    exactly)."""
    from diagnosis.units import parse_time

    if raw is None:
        return datetime.now(UTC).replace(microsecond=0)
    parsed = parse_time(raw)
    if parsed is None:
        raise UserError(f"--now {raw!r} is not an RFC 3339 time")
    return parsed.astimezone(UTC).replace(microsecond=0)


def register(app: typer.Typer) -> None:
    """Attach ``capture`` to the main CLI."""
    app.command("capture")(capture_cmd)
