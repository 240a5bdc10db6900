"""The world an answer was made from, kept with the answer so a later vote on its card can find it (issue 28).

:func:`answer_keeping_world` answers a question exactly as :class:`handlers.report_cache.Reports` does, with the
response recorder of :mod:`diagnosis.http` switched on and the diagnosis clock read once, then turns what was read
into the redacted snapshot ``capture`` writes (:func:`diagnosis.capture.world_of`: no new read, built off the event
loop) and hands it, with the answer's record, to the :class:`AnswerKeeper` (``bot.feedback_store``). The report
gets a fresh reference (:attr:`diagnosis.report.Report.answer_ref`): its card's Right / Wrong buttons carry it.

Only answers a person can judge get one: a workload or workflow was identified and can be named again (the card's
other buttons re-read it); never an error or a follow-up question."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol

from diagnosis.http import recording
from diagnosis.question import Question
from diagnosis.report import Outcome, Report

log = logging.getLogger(__name__)

AnswerFn = Callable[[Question, Any], Awaitable[Report]]


class AnswerKeeper(Protocol):
    """Where answers and their worlds are kept (``bot.feedback_store.FeedbackStore``)."""

    async def keep_answer(self, record: dict[str, Any], world: dict[str, Any] | None) -> bool: ...

    #: a world larger than this is not kept (``WD_FEEDBACK_MAX_WORLD_BYTES``)
    max_world_bytes: int


def judgeable(report: Report) -> bool:
    """A person can say whether this answer is right: it names one workload or workflow that can be read again."""
    from handlers.card import target

    return report.outcome not in (Outcome.ERROR, Outcome.NEEDS_INPUT) and target(report) is not None


def new_ref() -> str:
    """An answer's reference: 16 hex characters, unguessable (a vote names the answer by it)."""
    return secrets.token_hex(8)


def answer_record(report: Report, question: Question, ref: str, at: datetime) -> dict[str, Any]:
    """What is kept of an answer (every string already sanitized by the report model)."""
    ident = report.identity
    return {
        "ref": ref,
        "at": at.isoformat(),
        "system": report.system,
        "outcome": report.outcome.value,
        "category": report.category.value if report.category is not None else None,
        "confidence": report.confidence.level if report.confidence is not None else None,
        "headline": report.headline,
        "name": (ident.name if ident is not None else None) or None,
        "workload_id": ident.workload_id if ident is not None else None,
        "workflow_id": ident.workflow_id if ident is not None else None,
        "cluster_id": ident.cluster_id if ident is not None else None,
        "cluster_name": ident.cluster_name if ident is not None else None,
        "project": ident.project if ident is not None else None,
        "phase": ident.phase if ident is not None else None,
        "question": question.text,
    }


async def answer_keeping_world(answer_fn: AnswerFn, question: Question, backends: Any, keeper: AnswerKeeper) -> Report:
    """Answer ``question``; when a person can judge the answer, keep it with its world and give it a reference."""
    now = backends.now()
    frozen = backends
    if dataclasses.is_dataclass(backends) and not isinstance(backends, type):
        frozen = dataclasses.replace(backends, now=lambda: now)  # one clock: the world's ``now`` replays it
    with recording() as recorder:
        report = await answer_fn(question, frozen)
    if not judgeable(report):
        return report
    ref = new_ref()
    report = report.with_answer_ref(ref)
    record = answer_record(report, question, ref, datetime.now(UTC))
    world = None
    read = sum(len(r.body) for r in recorder.responses)
    limit = getattr(keeper, "max_world_bytes", None)
    if isinstance(limit, int) and read > limit:
        # Not built at all: it would not be kept, and redacting megabytes holds the interpreter (and with it the
        # event loop, /healthz and every ack) even from a thread (issue 24: a 12 MB log).
        record["world_omitted"] = f"{read} bytes read, over WD_FEEDBACK_MAX_WORLD_BYTES ({limit})"
    else:
        try:
            from diagnosis.capture import world_of

            world = await asyncio.to_thread(world_of, list(recorder.responses), question, report, frozen, now)
        except Exception:
            log.exception("the world of answer %s could not be built: kept without it", ref)
    try:
        await keeper.keep_answer(record, world)
    except Exception:
        log.exception("answer %s could not be kept for feedback", ref)
    return report
