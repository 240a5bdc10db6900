"""The world an answer was made from, kept with the answer so a later vote on its card can find it (issue 28).

:func:`answer_keeping_world` answers a question exactly as :class:`handlers.report_cache.Reports` does, with the
response recorder of :mod:`diagnosis.http` switched on and the diagnosis clock read once, then turns what was read
into the redacted snapshot ``capture`` writes (:func:`diagnosis.capture.world_of`: no new read, built off the event
loop) and hands it, with the answer's record, to the :class:`AnswerKeeper` (``bot.feedback_store``). The report
gets a fresh reference (:attr:`diagnosis.report.Report.answer_ref`): its card's Right / Wrong buttons carry it.

Only answers a person can judge get one: a workload or workflow was identified and can be named again (the card's
other buttons re-read it); never an error or a follow-up question.

Answer first, bookkeeping after (issue 26 §2): building a world redacts every body that was read, about as much CPU
as the diagnosis itself, and in a burst of questions it held every other answer back. With a :class:`WorldLater`
(the bot gives one) the answer's record is kept at once, so a vote on its card always finds it, and its world is
built later in a detached task: when this process has no diagnosis in flight, or :data:`MAX_DEFER` seconds after the
answer at the latest, one at a time, then added to the record (``AnswerKeeper.keep_world``). A process that dies
before leaves the record saying its world was not kept. Without one (the terminal, unit tests) the world is built
before the answer is returned, as a whole."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
from collections.abc import Awaitable, Callable, Coroutine
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

    async def keep_world(self, ref: str, world: dict[str, Any] | None) -> bool:
        """Add ``world`` to the answer ``ref`` kept before (None: say it could not be built); False when that answer
        is no longer kept."""
        ...

    #: a world larger than this is not kept (``WD_FEEDBACK_MAX_WORLD_BYTES``)
    max_world_bytes: int


#: seconds a world may wait for its process to have no diagnosis in flight before it is built anyway
MAX_DEFER = 10.0
#: bytes of read responses the worlds waiting to be built may hold; past it a world is built before its answer
MAX_PENDING_BYTES = 64 * 1024 * 1024
#: what an answer's record says while its world is being built (and after, when its process died first)
WORLD_PENDING = "its world was being built when this record was kept, and was not added"


class WorldLater:
    """Builds the worlds of answers after the answers (see the module). ``spawn(coro)`` runs a detached tracked task
    (:meth:`bot.tasks.TaskTracker.spawn` with ``detached=True``); ``busy()`` says whether a diagnosis is in flight in
    this process (:class:`handlers.report_cache.Reports`), and :meth:`quiet` is called when none is any longer."""

    def __init__(self, spawn: Callable[[Coroutine[Any, Any, Any]], Any], busy: Callable[[], bool]) -> None:
        self.spawn = spawn
        self.busy = busy
        self.pending_bytes = 0
        self._quiet = asyncio.Event()
        self._one = asyncio.Lock()

    def quiet(self) -> None:
        """No diagnosis is in flight any more: the waiting worlds may be built."""
        self._quiet.set()

    def reserve(self, size: int) -> bool:
        """Count a world of ``size`` bytes read as waiting, if there is room for it (False: build it now)."""
        if self.pending_bytes + size > MAX_PENDING_BYTES:
            return False
        self.pending_bytes += size
        return True

    def release(self, size: int) -> None:
        self.pending_bytes -= size

    def later(self, size: int, build: Callable[[], Awaitable[None]]) -> None:
        """Run ``build`` (a world of ``size`` bytes read, counted by :meth:`reserve`) when the process is quiet, or
        after :data:`MAX_DEFER`; the bytes are released when its task ends, however (cancelled before it began too)."""

        async def when_quiet() -> None:
            await self._wait_turn()
            try:
                await build()
            finally:
                self._one.release()

        task = self.spawn(when_quiet())
        if isinstance(task, asyncio.Future):
            task.add_done_callback(lambda _: self.release(size))
        else:
            self.release(size)

    async def _wait_turn(self) -> None:
        """Return holding the build lock, once no diagnosis is in flight or the deadline passed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + MAX_DEFER
        while True:
            left = deadline - loop.time()
            if self.busy() and left > 0:
                self._quiet.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._quiet.wait(), left)
                continue
            await self._one.acquire()
            if not self.busy() or loop.time() >= deadline:
                return
            self._one.release()  # a diagnosis started while this one waited for its turn: let it go first


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


async def answer_keeping_world(
    answer_fn: AnswerFn, question: Question, backends: Any, keeper: AnswerKeeper, later: WorldLater | None = None
) -> Report:
    """Answer ``question``; when a person can judge the answer, keep it with its world and give it a reference (the
    world built after the answer with ``later``, see the module)."""
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
    responses = list(recorder.responses)
    read = sum(len(r.body) for r in responses)
    limit = getattr(keeper, "max_world_bytes", None)
    if isinstance(limit, int) and read > limit:
        # Not built at all: it would not be kept, and redacting megabytes holds the interpreter (and with it the
        # event loop, /healthz and every ack) even from a thread (issue 24: a 12 MB log).
        record["world_omitted"] = f"{read} bytes read, over WD_FEEDBACK_MAX_WORLD_BYTES ({limit})"
        await _keep(keeper, record, None)
        return report

    async def build() -> dict[str, Any] | None:
        try:
            from diagnosis.capture import world_of

            return await asyncio.to_thread(world_of, responses, question, report, frozen, now)
        except Exception:
            log.exception("the world of answer %s could not be built: kept without it", ref)
            return None

    if later is None or not later.reserve(read):
        await _keep(keeper, record, await build())
        return report
    record["world_omitted"] = WORLD_PENDING
    if not await _keep(keeper, record, None):
        later.release(read)
        return report

    async def build_and_add() -> None:
        world = await build()
        try:
            await keeper.keep_world(ref, world)
        except Exception:
            log.exception("the world of answer %s could not be kept", ref)

    later.later(read, build_and_add)
    return report


async def _keep(keeper: AnswerKeeper, record: dict[str, Any], world: dict[str, Any] | None) -> bool:
    try:
        return await keeper.keep_answer(record, world)
    except Exception:
        log.exception("answer %s could not be kept for feedback", record.get("ref"))
        return False
