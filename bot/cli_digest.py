"""``workload-doctor digest``: failures of a window grouped by diagnosed cause (FORMAT.md "Digests").

``diagnose --snapshot F`` answers a snapshot whose ``ask.kind`` is ``"digest"`` through the same code,
so both print the same JSON.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Annotated, Any

import typer

from bot.cli_app import DebugOpt, Format, FormatOpt, UserError, backends_for, run_guarded

# The diagnosis core is imported where used (issue 26 §2): ``--help`` loads none of it.
if TYPE_CHECKING:
    from diagnosis.digests import Digest, DigestAsk


def digest_ask(options: DigestAsk, ask: dict[str, Any]) -> DigestAsk:
    """Command-line options win, then the snapshot's ``ask`` keys, then what its ``text`` names."""
    from pydantic import ValidationError

    from diagnosis.digests import DigestAsk, merge_ask, parse_digest_text

    try:
        base = DigestAsk.model_validate({k: v for k, v in ask.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise UserError(f"the digest question is invalid: ask.{where}: {first.get('msg')}") from None
    merged = merge_ask(options, base)
    merged = merge_ask(merged, parse_digest_text(merged.text))
    merged.since_delta()  # a bad window is bad input
    return merged


def emit_digest(digest: Digest, fmt: str) -> None:
    from diagnosis.digest_text import digest_json, render_digest_text
    from handlers.digest_blocks import render_digest_blocks, thread_payload

    if fmt == "text":
        typer.echo(render_digest_text(digest), nl=False)
        return
    blocks = render_digest_blocks(digest)
    if fmt == "blocks":
        typer.echo(json.dumps({"blocks": blocks}, indent=2))
    else:
        typer.echo(json.dumps(digest_json(digest, blocks, thread_payload(digest)), indent=2))


def run_digest(snapshot: str | None, options: DigestAsk, fmt: str, debug: bool) -> None:
    from diagnosis.answer import answer_digest

    def run() -> Digest:
        with backends_for(snapshot) as (backends, ask):
            return asyncio.run(answer_digest(digest_ask(options, ask), backends))

    emit_digest(run_guarded(run, debug), fmt)


def register(app: typer.Typer) -> None:
    @app.command()
    def digest(
        snapshot: Annotated[
            str | None, typer.Option("--snapshot", help="Serve this snapshot in a sandbox and digest it.")
        ] = None,
        cluster_id: Annotated[
            str | None, typer.Option("--cluster-id", help="Run:ai cluster UUID or exact name (default: every one).")
        ] = None,
        project: Annotated[
            list[str] | None, typer.Option("--project", help="Run:ai project (repeatable; default: every one).")
        ] = None,
        pool: Annotated[
            list[str] | None, typer.Option("--pool", help="OSMO pool (repeatable; default: every one).")
        ] = None,
        since: Annotated[str | None, typer.Option("--since", help="Window length: 90m, 24h, 7d (default 24h).")] = None,
        fmt: FormatOpt = Format.text,
        debug: DebugOpt = False,
    ) -> None:
        """Failures of a time window, grouped by diagnosed cause (Run:ai and OSMO)."""
        from diagnosis.digests import DigestAsk
        from diagnosis.logs import setup_logging

        setup_logging(logging.DEBUG if debug else logging.WARNING)
        given: dict[str, Any] = {}
        if cluster_id:
            given["cluster_id"] = cluster_id
        if project:
            given["projects"] = project
        if pool:
            given["pools"] = pool
        if since:
            given["since"] = since
        run_digest(snapshot, DigestAsk.model_validate(given), fmt.value, debug)
