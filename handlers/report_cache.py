"""Reports by question, through the cache in the state store and the diagnoses in progress.

A terminal workload's report is kept a week under its (cluster, workload, phaseUpdatedAt) with short-lived
pointers from the question and from (cluster, workload); anything else is kept 30 seconds (a burst of the same
question in a channel). Identical questions asked while their diagnosis runs share it in this process: a
channel asking about one failed workload at once costs the cluster's API one diagnosis."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from diagnosis import metrics
from diagnosis.answer import Backends
from diagnosis.backends import backend_of
from diagnosis.question import Question
from diagnosis.report import Outcome, Report
from handlers.feedback_world import AnswerKeeper, WorldLater, answer_keeping_world
from handlers.protocols import ConversationStore

AnswerFn = Callable[[Question, Backends], Awaitable[Report]]

CACHE_TERMINAL_TTL = 7 * 86400
POINTER_TTL = 600
NON_TERMINAL_TTL = 30
#: the key of a cached report's answer reference (not a field of the report: ignored when it is read back)
ANSWER_REF = "_answer_ref"


def question_key(q: Question, system: str | None = None) -> str:
    """The cache and in-flight key of a question answered by ``system`` (None: the default backend): every field
    the answer depends on. A backend whose answers read the words (:attr:`~diagnosis.backends.Backend.keyed_by_words`:
    OSMO's status filter in "list failed workflows", a usage question, the echoed question) has the normalised
    text in the key too."""
    words = " ".join((q.text or "").casefold().split()) if backend_of(system).keyed_by_words else ""
    parts = [
        words,
        q.kind,
        q.cluster_id or "",
        q.cluster or "",
        q.cluster_hint or "",
        q.project or "",
        q.workload_id or "",
        q.workload_name or "",
        q.workflow_id or "",
        q.effective_intent(),
        q.lookback or "7d",
        # what resolution reads when no name or id was given (issue 11 §1)
        ",".join(q.candidates),
        ",".join(q.words),
        ",".join(q.scopes),
        ",".join(q.uuids),
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


class Reports:
    """The report for a question: cached, shared with the identical diagnosis in flight, or new."""

    def __init__(
        self,
        store: ConversationStore,
        backends: Backends,
        answer_fn: AnswerFn,
        keeper: AnswerKeeper | None = None,
        spawn: Callable[[Coroutine[Any, Any, Any]], Any] | None = None,
    ) -> None:
        self.store = store
        self.backends = backends
        self.answer_fn = answer_fn
        #: diagnoses in progress by question key: identical questions asked meanwhile share one
        self.in_flight: dict[str, asyncio.Task[Report]] = {}
        #: keeps each answer a person can judge with the world it was made from (issue 28); None: not kept
        self.keeper = keeper
        #: with ``spawn`` (a detached tracked task, the bot's), the worlds are built after the answers, when no
        #: diagnosis is in flight here (handlers.feedback_world.WorldLater); without, before each answer
        self.worlds = WorldLater(spawn, lambda: bool(self.in_flight)) if spawn is not None else None

    async def answer(self, question: Question, fresh: bool = False) -> Report:
        """The report for ``question``: from the cache, or from the one diagnosis in progress for the same
        question, or from a new one. ``fresh`` (a watch's status, Re-diagnose) skips the cache and never joins.
        Raises what :func:`diagnosis.answer.answer` raises."""
        qkey = question_key(question, self.backends.system_for(question))
        if fresh:
            return await self._diagnose(qkey, question, fresh=True)
        task = self.in_flight.get(qkey)
        if task is None:
            task = asyncio.ensure_future(self._diagnose(qkey, question))
            self.in_flight[qkey] = task
            task.add_done_callback(lambda done: self._forget(qkey, done))
        # shielded: one asker cancelled (shutdown, a timeout) must not cancel the others' diagnosis
        return await asyncio.shield(task)

    async def aclose(self) -> None:
        """Cancel the diagnoses still in flight (at shutdown, once their askers are drained or cancelled)."""
        tasks = list(self.in_flight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _forget(self, qkey: str, done: asyncio.Task[Report]) -> None:
        if self.in_flight.get(qkey) is done:
            del self.in_flight[qkey]
        if not self.in_flight and self.worlds is not None:
            self.worlds.quiet()
        if not done.cancelled():
            done.exception()  # retrieved: an error every asker already saw is not "never retrieved"

    async def _diagnose(self, qkey: str, question: Question, fresh: bool = False) -> Report:
        cached = None if fresh else await self.cached(qkey, question)
        if cached is not None:
            metrics.diagnosis(cached, None)
            return cached
        started = time.perf_counter()
        if self.keeper is not None:
            report = await answer_keeping_world(self.answer_fn, question, self.backends, self.keeper, self.worlds)
        else:
            report = await self.answer_fn(question, self.backends)
        metrics.diagnosis(report, time.perf_counter() - started)
        await self.keep(qkey, report)
        return report

    async def cached(self, qkey: str, question: Question) -> Report | None:
        """The cached report of ``question`` (by its workload when it names one by id), or None."""
        pointers: list[tuple[str, ...]] = [("q", qkey)]
        named = self._asked_key(question)
        if named is not None:
            pointers.insert(0, ("latest", *named))
        for parts in pointers:
            data = await self.store.get_json(*parts)
            if isinstance(data, dict) and "report" in data:
                return _report_of(data["report"])
            if isinstance(data, dict) and "key" in data:
                full = await self.store.get_json(*data["key"])
                if isinstance(full, dict):
                    return _report_of(full)
        return None

    def _asked_key(self, question: Question) -> tuple[str, ...] | None:
        """The object ``question`` names by id, in the terms of the backend that answers it (None: none)."""
        return backend_of(self.backends.system_for(question)).asked_key(question)

    async def keep(self, qkey: str, report: Report) -> None:
        """Cache ``report`` (never an error or a follow-up question: those depend on the asker's next words)."""
        if report.outcome in (Outcome.ERROR, Outcome.NEEDS_INPUT):
            return
        ident = report.identity
        phase = (ident.phase or "").lower() if ident else ""
        data = report.model_dump(mode="json")
        if report.answer_ref:
            data[ANSWER_REF] = report.answer_ref  # the same answer from the cache: its votes find one world
        backend = backend_of(ident.system) if ident is not None else None
        obj = backend.object_key(ident) if backend is not None and ident is not None else None
        if ident is not None and backend is not None and obj is not None and phase in backend.terminal_phases:
            # a terminal object no longer changes: its report is kept a week under the object and its phase's start
            stamp = ident.phase_updated_at.isoformat() if ident.phase_updated_at else "unknown"
            key = ("report", *obj, stamp)
            if await self.store.put_json(key, data, CACHE_TERMINAL_TTL):
                pointer = {"key": list(key)}
                await self.store.put_json(("latest", *obj), pointer, POINTER_TTL)
                await self.store.put_json(("q", qkey), pointer, POINTER_TTL)
            return
        await self.store.put_json(("q", qkey), {"report": data}, NON_TERMINAL_TTL)


def _report_of(data: Any) -> Report | None:
    """A cached report (with its answer reference, when it has one), or None when it no longer reads."""
    try:
        report = Report.model_validate(data)
    except ValueError:
        return None
    ref = data.get(ANSWER_REF) if isinstance(data, dict) else None
    return report.with_answer_ref(str(ref)) if isinstance(ref, str) and ref else report
