"""``workload-doctor feedback``: what people said of the bot's answers (issue 28, :mod:`bot.feedback_store`).

- ``feedback stats [--since 30d] [--format text|json]``: answers, votes, agreement by system, category and
  confidence, and the answers marked wrong;
- ``feedback export -o DIR [--all] [--since 30d]``: each answer marked wrong (``--all``: every voted one) as a
  ``snapshot/1`` case (``bot.feedback_cases.case_of``), written 0600; ``diagnose --snapshot FILE`` replays it;
- ``feedback purge``: deletes every answer, world and vote kept.

They read ``REDIS_URL`` and ``WD_REDIS_PREFIX`` as the bot does (docs/feedback.md).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from bot.cli_app import DebugOpt, UserError, run_guarded

# The store and the cases are imported where used (issue 26 §2): ``--help`` loads neither (nor Redis, nor metrics).
if TYPE_CHECKING:
    from bot.feedback_store import FeedbackStore

T = TypeVar("T")
SinceOpt = Annotated[str, typer.Option("--since", help="How far back: 90m, 24h, 30d (at most 90 days).")]


def _desk() -> FeedbackStore:
    from bot.feedback_store import FeedbackStore
    from bot.settings import BotEnv, redis_url_problem
    from bot.state import Store
    from diagnosis.config import environment

    env = environment()
    url = env.get("REDIS_URL")
    if not url:
        raise UserError("REDIS_URL is not set: feedback is kept in the bot's Redis")
    problem = redis_url_problem(url)
    if problem:
        raise UserError(problem)
    typed = BotEnv.read(env)
    store = Store(url, prefix=typed.WD_REDIS_PREFIX)
    return FeedbackStore(
        store,
        retention_days=typed.WD_FEEDBACK_RETENTION_DAYS,
        max_world_bytes=typed.WD_FEEDBACK_MAX_WORLD_BYTES,
        max_answers=typed.WD_FEEDBACK_MAX_ANSWERS,
    )


def _since(raw: str) -> float:
    from diagnosis.question import QuestionError, parse_lookback

    try:
        return time.time() - parse_lookback(raw).total_seconds()
    except QuestionError as exc:
        raise UserError(f"--since: {exc}") from None


def _with_desk(work: Callable[[FeedbackStore], Awaitable[T]]) -> T:
    async def run() -> T:
        desk = _desk()
        try:
            return await work(desk)
        finally:
            await desk.store.close()

    return asyncio.run(run())


async def export_cases(
    desk: FeedbackStore, *, everything: bool, since: float
) -> list[tuple[str, dict[str, Any] | None]]:
    """(answer reference, case) of each answer marked wrong (``everything``: each voted one); the case is None
    when its world was not kept."""
    from bot.feedback_cases import case_of

    return [
        (str(voted.record.get("ref")), case_of(voted))
        for voted in await desk.voted(since, world=True)
        if everything or voted.wrong
    ]


def write_cases(out: Path, cases: list[tuple[str, dict[str, Any] | None]]) -> list[tuple[Path, str]]:
    """Write each case into ``out`` (0600, as ``capture`` does); (path, what) each."""
    from bot.cli_capture import write_private

    out.mkdir(parents=True, exist_ok=True)
    written: list[tuple[Path, str]] = []
    for ref, case in cases:
        if case is None:
            written.append((out / f"feedback-{ref}.json", "skipped: its world was not kept (too large, or not built)"))
            continue
        path = out / f"{case['id']}.json"
        write_private(path, json.dumps(case, indent=2, ensure_ascii=False) + "\n")
        expect = case["expect"]
        written.append(
            (path, "expect " + expect["outcome"] + (f" {expect['category']}" if "category" in expect else ""))
        )
    return written


def register(app: typer.Typer) -> None:
    """Attach ``feedback`` (stats, export, purge) to the main CLI."""
    group = typer.Typer(
        help="What people said of the answers (Right / Wrong on the card): stats, export, purge.", rich_markup_mode=None
    )
    app.add_typer(group, name="feedback")

    @group.command("stats")
    def stats_cmd(
        since: SinceOpt = "30d",
        fmt: Annotated[str, typer.Option("--format", help="text or json.")] = "text",
        debug: DebugOpt = False,
    ) -> None:
        """Answers, votes and agreement by system, category and confidence; the answers marked wrong."""
        from bot.feedback_cases import stats, stats_text

        def run() -> dict[str, Any]:
            start = _since(since)

            async def work(desk: FeedbackStore) -> dict[str, Any]:
                return stats(await desk.answered(start), await desk.voted(start))

            return _with_desk(work)

        data = run_guarded(run, debug)
        typer.echo(json.dumps(data, indent=2) if fmt == "json" else stats_text(data, since), nl=fmt == "json")

    @group.command("export")
    def export_cmd(
        output: Annotated[str, typer.Option("-o", "--output", help="Write the cases into this folder.")],
        everything: Annotated[
            bool, typer.Option("--all", help="Every voted answer (default: the ones marked wrong).")
        ] = False,
        since: SinceOpt = "90d",
        debug: DebugOpt = False,
    ) -> None:
        """Each answer marked wrong (or every voted one) as a snapshot case whose expect is the person's verdict."""

        def run() -> list[tuple[Path, str]]:
            start = _since(since)
            cases = _with_desk(lambda desk: export_cases(desk, everything=everything, since=start))
            return write_cases(Path(output), cases)

        written = run_guarded(run, debug)
        for path, what in written:
            typer.echo(f"{path}: {what}")
        typer.echo(f"{sum(1 for _, w in written if w.startswith('expect'))} case(s) written to {output}", err=True)

    @group.command("purge")
    def purge_cmd(debug: DebugOpt = False) -> None:
        """Delete every answer, world and vote kept for feedback."""

        async def work(desk: FeedbackStore) -> int:
            return await desk.purge()

        deleted = run_guarded(lambda: _with_desk(work), debug)
        typer.echo(f"feedback purged: {deleted} key(s) deleted")
