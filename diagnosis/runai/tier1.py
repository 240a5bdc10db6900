"""Tier 1 of one workload (spec Steps 1-4): :func:`collect` reads it in one concurrent round trip, and
:class:`Tier1` holds every Run:ai read as a :class:`~diagnosis.fetched.Fetched` (the value, or why it is
missing, with its call). The resolve, route and decide jobs read it; the report cites it."""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from diagnosis.fetched import Fetched, Read, fetch
from diagnosis.runai import classify as cls
from diagnosis.runai import resolve
from diagnosis.runai.client import ApiError, Calls
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
from diagnosis.runai.state import Diagnosis

_EPOCH = datetime.min.replace(tzinfo=UTC)
#: the metrics Step 4 reads (the memory peak against the limit)
METRIC_TYPES = ["CPU_MEMORY_USAGE_BYTES", "CPU_MEMORY_LIMIT_BYTES", "CPU_MEMORY_REQUEST_BYTES"]


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
        """Events of the events endpoint and of history, each once: the same id, or the same content
        (:meth:`Event.content_key`: an event both lists hold, under one id or two), is one event. Oldest first
        (events without a time first). Computed once per diagnosis."""
        seen: set[Any] = set()
        out: list[Event] = []
        from_history = [r.spec.event for r in self.history.value or [] if r.spec.event is not None]
        for ev in (self.events.value or []) + from_history:
            keys = {("content", ev.content_key())} | ({("id", ev.id)} if ev.id else set())
            if keys & seen:
                continue
            seen |= keys
            out.append(ev)
        return sorted(out, key=lambda e: e.created_at or _EPOCH)


async def _no_projects() -> list[Project]:
    return []


def incident_start(workload: Workload) -> datetime | None:
    """For a failed workload of several pods, the earliest time a replica of the same incident may have ended
    (its phase update less :data:`~diagnosis.runai.classify.PEER_WINDOW`): deleted pods that ended since then
    are read too. None for other workloads (their deleted pods are asked only when none is live)."""
    if workload.phase != "Failed" or workload.phase_updated_at is None or not workload.is_distributed:
        return None
    return workload.phase_updated_at - cls.PEER_WINDOW


async def collect(d: Diagnosis, workload: Workload) -> Tier1:
    """Pods, history, events, spec, metrics, clusters and project concurrently (one round trip), each within the
    diagnosis deadline; a failed read is a :class:`Fetched` with its ``why``, never an exception."""
    wid = workload.id
    c = d.client
    dl = d.deadline
    # Pods of a deleted or cleaned-up workload are listed only with deleted=true.
    gone = workload.is_terminal or workload.deleted_at is not None
    if workload.phase == "Pending" and workload.id not in d.project_items:
        # a Pending workload's answer compares the project's GPU quota: read it in the same round trip
        d.project_items[workload.id] = asyncio.ensure_future(project_item(d, workload))
    results = await asyncio.gather(
        fetch(c.get_pods(wid, or_deleted=gone, deleted_since=incident_start(workload)), dl.remaining()),
        fetch(c.get_history(wid), dl.remaining()),
        fetch(c.get_events(wid, since=d.cutoff), dl.remaining()),
        fetch(c.get_spec_for(workload), dl.remaining()),
        fetch(c.get_metrics(wid, METRIC_TYPES, d.cutoff, d.now), dl.remaining()),
        fetch(c.list_clusters(), dl.remaining()),
        # The project is read only to find the namespace when the workload does not name it.
        fetch(
            c.list_projects(workload.project_name or "", workload.cluster_id or "")
            if not workload.namespace
            else Read(Calls.projects(), _no_projects),
            dl.remaining(),
        ),
    )
    tier1 = Tier1(workload, *results)  # type: ignore[arg-type]
    # repeated records count once wherever they enter (issue 24), not only when a later page repeats an id
    if isinstance(tier1.history.value, Records):
        tier1.history.value = tier1.history.value.distinct(HistoryRecord.content_key)
    if isinstance(tier1.events.value, Records):
        tier1.events.value = tier1.events.value.distinct(Event.content_key)
    return tier1


async def project_item(d: Diagnosis, workload: Workload) -> dict[str, Any] | None:
    """The raw projects-API item of the workload's project (its GPU quota and allocation), or None."""
    if not workload.project_name:
        return None
    try:
        items = await asyncio.wait_for(resolve.list_projects(d.client, workload.cluster_id), d.deadline.remaining())
    except (ApiError, httpx.HTTPError, TimeoutError):
        return None
    item = resolve.named(workload.project_name, items)
    return item.raw if item is not None else None
