"""What Tier 1 returned for one workload (spec Steps 1-4): every Run:ai read as a
:class:`~diagnosis.fetched.Fetched`. A leaf of the Run:ai backend: the procedure fills it, the report reads it."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from diagnosis.fetched import Fetched
from diagnosis.runai.models import (
    Cluster,
    Event,
    HistoryRecord,
    Metrics,
    Pod,
    Project,
    Records,
    Workload,
    WorkloadSpec,
)

_EPOCH = datetime.min.replace(tzinfo=UTC)


@dataclass
class Tier1:
    """Everything Tier 1 returned for the selected workload."""

    workload: Workload
    pods: Fetched[list[Pod]]
    history: Fetched[list[HistoryRecord]]
    events: Fetched[list[Event]]
    spec: Fetched[WorkloadSpec]
    metrics: Fetched[Metrics]
    clusters: Fetched[list[Cluster]]
    projects: Fetched[list[Project]]

    @property
    def evidence_reads(self) -> tuple[Fetched[Any], ...]:
        """The reads the answer's evidence comes from (pods, history, events, spec, metrics): each one that
        failed is a gap of the answer."""
        return (self.pods, self.history, self.events, self.spec, self.metrics)

    def unread(self) -> list[Fetched[Any]]:
        """The evidence reads that failed, and those of a list read only in part (its skipped items the
        ``why``), each carrying its call: what a digest row built from this Tier 1 could not see."""
        out: list[Fetched[Any]] = []
        for got in self.evidence_reads:
            if not got.ok:
                out.append(got)
            elif isinstance(got.value, Records) and got.value.skipped:
                out.append(Fetched(got.call, why=got.value.skipped_text()))
        return out

    @functools.cached_property
    def all_events(self) -> list[Event]:
        """Events of the events endpoint and of history, deduplicated by id (or time+reason+message),
        oldest first (events without a time first). Computed once per diagnosis."""
        seen: set[tuple[Any, ...]] = set()
        out: list[Event] = []
        from_history = [r.spec.event for r in self.history.value or [] if r.spec.event is not None]
        for ev in (self.events.value or []) + from_history:
            key = (ev.id,) if ev.id else (ev.created_at, ev.reason, ev.message)
            if key in seen:
                continue
            seen.add(key)
            out.append(ev)
        return sorted(out, key=lambda e: e.created_at or _EPOCH)
