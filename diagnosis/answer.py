"""The one place that answers a question: CLI, ``/diagnose``, mentions, follow-ups, buttons and the
terminal twin all call :func:`answer`.

It routes a :class:`~diagnosis.question.Question` to a backend of :data:`diagnosis.backends.REGISTRY`
(Run:ai or OSMO) and always returns a :class:`~diagnosis.report.Report`; it raises only for input that
prevents any answer (:class:`~diagnosis.config.ConfigError`, :class:`~diagnosis.question.QuestionError`)
or for a backend still unreachable after retries (:class:`~diagnosis.errors.BackendUnavailable`).
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import TYPE_CHECKING, Any

from diagnosis import systems
from diagnosis.backends import REGISTRY, Backends, configured, names, route, utcnow
from diagnosis.config import ConfigError
from diagnosis.errors import BackendUnavailable
from diagnosis.question import Question
from diagnosis.report import Report

if TYPE_CHECKING:
    from diagnosis.digests import Digest, DigestAsk, RowCache

# Re-exported: every surface imports these from here.
__all__ = ["BackendUnavailable", "Backends", "ConfigError", "answer", "answer_digest", "preload", "utcnow"]


def preload() -> None:
    """Import every backend's procedure (and the kubernetes package) now, not inside the first diagnosis.

    A long-running process (the bot) calls this at startup so the first question does not block
    the event loop for the imports (about 1.5 s, most of it the kubernetes package's lazy CoreV1Api).
    """
    for backend in REGISTRY.values():
        backend.preload()


async def answer(question: Question, backends: Backends) -> Report:
    """Answer ``question`` with the configured backends. See the module docstring for errors."""
    ready = configured(backends)
    if systems.needs_lookup(question, ready):
        # both systems configured: the one that holds the name answers (FORMAT.md "Questions")
        chosen = await systems.choose(question, ready, backends)
        if isinstance(chosen, Report):
            return chosen
        question = chosen
    backend = route(question, backends)
    if not backend.configured(backends):
        raise ConfigError(backend.not_configured)
    return await backend.answer(question, backends)


async def answer_digest(
    ask: DigestAsk,
    backends: Backends,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    cache: RowCache | None = None,
) -> Digest:
    """A digest of the failures in ``[now - since, now]`` (or the explicit ``[start, end]`` of a scheduled
    digest, UTC) over every configured system (FORMAT.md "Digests"). ``cache`` keeps each Run:ai row per
    (workload id, phaseUpdatedAt, Tier 1, window length) for the next digest.

    Raises :class:`~diagnosis.question.QuestionError` for a bad window, :class:`ConfigError` when no system is
    configured, and :class:`BackendUnavailable` when a backend cannot be reached at all (a whole-plane Run:ai
    scan that cannot list the clusters)."""
    from diagnosis.digests import build_digest, since_label

    end = end or backends.now()
    start = start or end - ask.since_delta()
    since = ask.since if ask.since and start == end - ask.since_delta() else since_label(end - start)
    chosen = configured(backends)
    if not chosen:
        raise ConfigError("no backend configured: set the Run:ai or OSMO settings (or use --snapshot FILE)")
    scans = await asyncio.gather(
        *(b.scan(ask, backends, start=start, end=end, since=since, cache=cache) for b in chosen)
    )
    items: list[Any] = []
    gaps: list[Any] = []
    cluster_ids: list[str] = []
    cluster_names: list[str] = []
    preempted: list[Any] = []
    for scan in scans:
        items += scan.items
        preempted += getattr(scan, "preempted", [])
        gaps += scan.gaps
        cluster_ids += getattr(scan, "cluster_ids", [])
        cluster_names += getattr(scan, "cluster_names", [])
    return build_digest(
        items,
        start=start,
        end=end,
        since=since,
        gaps=gaps,
        cluster_ids=cluster_ids,
        cluster_names=cluster_names,
        projects=ask.projects,
        pools=ask.pools,
        systems=names(chosen),
        preempted=preempted,
    )
