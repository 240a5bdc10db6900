"""Run:ai failures of a digest window, each classified by the same core as ``/diagnose``.

FORMAT.md "Digests", "What is a failure": phase now ``Failed`` (or ``Stopped`` with a
SCHEDULING_POLICY_TERMINATED signal), ``phaseUpdatedAt`` inside the window, on a scanned cluster and
project, live or deleted, and a single diagnosis with outcome ``diagnosed`` (preemptions do not count).

Listing is server-side filtered (``filterBy=clusterId==…,phase==…,phaseUpdatedAt>=…,phaseUpdatedAt<=…``,
``filterBy`` terms are ANDed, so each phase and each project is its own query) and paged; a cluster's queries run
concurrently, :data:`CLUSTERS_AT_ONCE` clusters at a time. The scan streams (issue 27 §3): each page's failures are
diagnosed from Tier 1 (bounded concurrency) before that query reads its next page, and only their rows are kept, so
a fleet of 100,000 workloads is never held at once. A row the cache (:mod:`diagnosis.digest_rows`) has is not
diagnosed again. Every failed call is a gap (:func:`~diagnosis.digests.read_gap`: the failed read's ``why`` and its
call).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from diagnosis.config import KubeConfig, RunaiConfig
from diagnosis.digest_rows import recurring_in, runai_row_key
from diagnosis.digests import DigestItem, RowCache, in_window, read_gap
from diagnosis.fetched import Fetched, describe_error, fetch
from diagnosis.question import Question
from diagnosis.report import Category, Gap, Outcome, Report
from diagnosis.runai.client import ApiError, RunaiClient
from diagnosis.runai.incident import last_running
from diagnosis.runai.models import Cluster, Workload
from diagnosis.runai.procedure import diagnose
from diagnosis.runai.state import Deadline, Diagnosis
from diagnosis.runai.tier1 import collect

log = logging.getLogger(__name__)

#: Diagnoses of one digest in flight at once (each is about 6 concurrent Tier 1 reads, 5 requests in 3 round trips):
#: 24 keeps a 1,000-failure digest under 10 s at 50 ms a request on 2 shared cores (16 did not, measured).
CONCURRENCY = 24
#: Clients (each its own connection pool) the diagnoses share out, CONCURRENCY / LANES diagnoses on each: httpcore
#: looks at every connection of its pool for each request, so one pool under 16 diagnoses of about 6 reads each costs
#: more CPU than the diagnoses (measured, issue 27 §3: one client per diagnosis took a 1,000-failure digest from
#: about 8.8 to 6.4 CPU seconds; 4 shared clients did not help).
LANES = CONCURRENCY
#: Clusters whose workload lists are read at once (about four list queries each, a page of at most 500 workloads in
#: hand per query): requests are I/O, but the machine has 2 cores and the pages are held while diagnosed.
CLUSTERS_AT_ONCE = 4
COUNTED_PHASES = ("Failed", "Stopped")
#: the category a preempted row is kept under, apart from the failures (:attr:`RunaiScan.preempted`)
PREEMPTED = Category.PREEMPTED.value


def _rfc3339(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RunaiScan:
    """What a Run:ai scan found: failures, scanned clusters (ids and names) and gaps."""

    items: list[DigestItem] = field(default_factory=list)
    cluster_ids: list[str] = field(default_factory=list)
    cluster_names: list[str] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    #: failed or stopped in the window but preempted (``route_preempted``): no failures, as in ``/diagnose``
    preempted: list[DigestItem] = field(default_factory=list)
    #: the most listed workloads held at once (pages being diagnosed): bounded by the pages in flight, never the
    #: whole fleet
    peak_held: int = 0


async def _clusters(client: RunaiClient, cluster_id: str | None, scan: RunaiScan) -> list[Cluster]:
    """The scanned clusters: the one asked for (by id or exact name), or every cluster the control plane lists."""
    read = client.list_clusters()
    try:
        clusters = await read
    except (ApiError, httpx.HTTPError) as exc:
        if cluster_id is None:
            raise
        scan.gaps.append(read_gap("clusters", Fetched.failure(read.call, exc)))
        return [Cluster(uuid=cluster_id, name=None)]
    if cluster_id is None:
        return clusters
    asked = cluster_id.casefold()  # a cluster named in other letter case is the same cluster
    wanted = [c for c in clusters if asked in (c.uuid.casefold(), (c.name or "").casefold())]
    if not wanted:
        scan.gaps.append(Gap(what=f"cluster {cluster_id}", why="no such cluster on this control plane"))
    return wanted


async def _list(
    client: RunaiClient,
    query: tuple[list[str], bool, str],
    scan: RunaiScan,
    each: Callable[[list[Workload]], Awaitable[None]],
) -> None:
    """One workload list query, streamed page by page into ``each``; a failed or partly read list is a gap."""
    filters, deleted, what = query
    got = await fetch(client.list_workloads(filters, deleted=deleted, each=each))
    if got.value is None:
        scan.gaps.append(read_gap(what, got))
        return
    found = got.value
    if found.repeated or found.stopped:  # a server that paged wrongly: said, never counted twice (issue 15 §1)
        scan.gaps.append(read_gap(what, Fetched(got.call, why=found.skipped_text())))


async def _known_projects(client: RunaiClient, projects: Sequence[str], cluster: Cluster, scan: RunaiScan) -> list[str]:
    """The listed project names that exist on ``cluster`` (exact names); each missing one is a gap."""
    found = await asyncio.gather(*(fetch(client.list_projects(p, cluster.uuid)) for p in projects))
    keep: list[str] = []
    for name, got in zip(projects, found, strict=True):
        if got.value is None:
            scan.gaps.append(read_gap(f"project {name}", got))
            keep.append(name)  # unknown, not missing: still scanned
        elif not any(p.name == name for p in got.value):
            scan.gaps.append(
                Gap(what=f"project {name}", why=f"no project named '{name}' on cluster {cluster.name or cluster.uuid}")
            )
        else:
            keep.append(name)
    return keep


def _gpu_hours(workload: Workload, running_since: datetime | None) -> float | None:
    """GPUs x hours from the last Running phase to the failure, when both are known (never guessed)."""
    gpus: float | None = None
    if workload.allocated_resources is not None and workload.allocated_resources.gpu:
        gpus = workload.allocated_resources.gpu
    elif workload.pods_requested_resources is not None and workload.pods_requested_resources.gpu is not None:
        try:
            gpus = float(workload.pods_requested_resources.gpu.request or 0) or None
        except (TypeError, ValueError):
            gpus = None
    if gpus is None or running_since is None or workload.phase_updated_at is None:
        return None
    hours = (workload.phase_updated_at - running_since).total_seconds() / 3600
    return round(gpus * hours, 2) if hours > 0 else None


def _counts(report: Report, workload: Workload) -> bool:
    """Whether a single diagnosis makes this workload a digest failure (FORMAT.md "What is a failure" 2, 4)."""
    if report.outcome != Outcome.DIAGNOSED or report.category is None:
        return False
    if workload.phase == "Stopped":
        return report.category == Category.SCHEDULING_POLICY_TERMINATED
    return True


async def _queries(
    client: RunaiClient,
    clusters: Sequence[Cluster],
    projects: Sequence[str] | None,
    start: datetime,
    end: datetime,
    scan: RunaiScan,
) -> list[tuple[list[str], bool, str]]:
    """The workload list calls of a scan: per cluster, counted phase and (known) project, live and deleted, each
    as (``filterBy`` terms, deleted, what a gap names)."""
    queries: list[tuple[list[str], bool, str]] = []
    for cluster in clusters:
        names: list[str | None] = [None]
        if projects is not None:
            names = list(await _known_projects(client, projects, cluster, scan))
        for phase in COUNTED_PHASES:
            for project in names:
                filters = [
                    f"clusterId=={cluster.uuid}",
                    f"phase=={phase}",
                    f"phaseUpdatedAt>={_rfc3339(start)}",
                    f"phaseUpdatedAt<={_rfc3339(end)}",
                ]
                if project is not None:
                    filters.append(f"projectName=={project}")
                what = f"{phase} workloads on cluster {cluster.name or cluster.uuid}" + (
                    f", project {project}" if project else ""
                )
                queries += [(filters, False, what), (filters, True, what + " (deleted)")]
    return queries


def _in_scope(
    page: Sequence[Workload],
    seen: set[str],
    scanned: set[str],
    projects: set[str] | None,
    window: tuple[datetime, datetime],
) -> list[Workload]:
    """The workloads of one listed page inside the scan's scope that no earlier page had (``seen``: the ids
    already taken, updated). The server filters; the same rules are checked again here, so a control plane that
    ignores a filter term cannot put a workload of another scope into the digest."""
    keep: list[Workload] = []
    for w in page:
        if w.phase not in COUNTED_PHASES or not in_window(w.phase_updated_at, *window):
            continue
        if w.cluster_id not in scanned or w.id in seen:
            continue
        if projects is not None and w.project_name not in projects:
            continue
        seen.add(w.id)
        keep.append(w)
    return keep


async def _diagnose_one(
    client: RunaiClient, config: RunaiConfig, workload: Workload, end: datetime, since: str, scan: RunaiScan
) -> tuple[DigestItem | None, dict[str, Any] | None]:
    """One listed failure diagnosed from Tier 1 at ``end`` (UTC) with lookback ``since``: its digest row (None
    when a single diagnosis does not count it) and what the row cache may keep of it (None: nothing, the row was
    built around a failed read); a failed read is a gap."""
    question = Question(cluster_id=workload.cluster_id, workload_id=workload.id, intent="terminal", lookback=since)
    diagnosis = Diagnosis(
        question, client, KubeConfig(), end, question.lookback_delta(), Deadline(config.deadline), config
    )
    diagnosis.read_neighbours = False  # a digest row does not show them: no call per row
    report = None
    tier1 = None
    running_since = None
    try:
        tier1 = await collect(diagnosis, workload)
        report = await diagnose(diagnosis, workload, tier1)
        running_since = last_running(tier1, workload.phase_updated_at)
    except (ApiError, httpx.HTTPError, TimeoutError) as exc:
        scan.gaps.append(Gap(what=f"workload {workload.name}", why=describe_error(exc)))
    assert workload.phase_updated_at is not None
    common: dict[str, object] = {
        "system": "runai",
        "name": workload.name,
        "id": workload.id,
        "project": workload.project_name,
        "cluster_id": workload.cluster_id,
        "at": workload.phase_updated_at,
        "user": workload.submitted_by,
        "image": workload.images[0] if workload.images else None,
        "gpu_hours": _gpu_hours(workload, running_since),
    }
    if report is None or tier1 is None:
        # Counted under what the remaining evidence supports: nothing, so UNKNOWN (FORMAT.md "gaps").
        if workload.phase != "Failed":
            return None, None
        verdict = f"{workload.name} failed; its details could not be read."
        return DigestItem(category=Category.UNKNOWN.value, verdict=verdict, **common), None  # type: ignore[arg-type]
    if report.outcome == Outcome.ROUTE_PREEMPTED:  # kept apart, never counted (FORMAT.md "What is a failure" 4)
        item = DigestItem(category=PREEMPTED, verdict=report.headline, **common)  # type: ignore[arg-type]
        return item, {"item": item.model_dump(mode="json")}
    if not _counts(report, workload):
        return None, {"item": None}
    assert report.category is not None
    unread = tier1.unread()  # the Tier 1 calls that failed or were read only in part, each with its call
    for got in unread:
        scan.gaps.append(read_gap(f"{workload.name}: {got.what}", got))
    node = next((e.value for e in report.evidence if e.label == "node"), None)
    item = DigestItem(
        category=report.category.value,
        verdict=report.headline,
        recurring=report.recurring,
        node=node,
        **common,  # type: ignore[arg-type]
    )
    if unread:  # a row built around a failed call is not kept for the next digest
        return item, None
    occurrences = report.recurrence.occurrences if report.recurrence is not None else []
    return item, {"item": item.model_dump(mode="json"), "occurrences": [at.isoformat() for at in occurrences]}


@dataclass
class _Rows:
    """The rows of one scan, made page by page: each in-scope workload's row from the cache, or diagnosed (at most
    :data:`CONCURRENCY` at once across the scan) and then cached. Only rows are kept, never the listed pages."""

    lanes: asyncio.Queue[RunaiClient]
    config: RunaiConfig
    scan: RunaiScan
    window: tuple[datetime, datetime]
    since: str
    cache: RowCache | None
    results: list[DigestItem] = field(default_factory=list)
    held: int = 0

    async def page(self, workloads: list[Workload]) -> None:
        self.held += len(workloads)
        self.scan.peak_held = max(self.scan.peak_held, self.held)
        try:
            rows = await asyncio.gather(*(self.row(w) for w in workloads))
        finally:
            self.held -= len(workloads)
        self.results += [row for row in rows if row is not None]

    async def cached(self, key: str) -> tuple[bool, DigestItem | None]:
        hit = await self.cache.get(key) if self.cache is not None else None
        if not isinstance(hit, dict) or "item" not in hit:
            return False, None
        if not hit["item"]:
            return True, None
        item = DigestItem.model_validate(hit["item"])
        if item.recurring and "occurrences" not in hit:  # kept before its occurrences were: made again
            return False, None
        if item.recurring:  # an occurrence that left the window no longer counts
            item.recurring = recurring_in(hit.get("occurrences") or [], *self.window)
        return True, item

    async def row(self, workload: Workload) -> DigestItem | None:
        assert workload.phase_updated_at is not None
        key = runai_row_key(workload.id, workload.phase_updated_at, self.since)
        found, item = await self.cached(key)
        if found:
            return item
        client = await self.lanes.get()  # a free place among the CONCURRENCY, on its lane's client
        try:
            item, keep = await _diagnose_one(client, self.config, workload, self.window[1], self.since, self.scan)
        finally:
            self.lanes.put_nowait(client)
        if self.cache is not None and keep is not None:
            await self.cache.put(key, keep)
        return item


async def scan_runai(
    config: RunaiConfig,
    *,
    cluster_id: str | None,
    projects: Sequence[str] | None,
    start: datetime,
    end: datetime,
    since: str,
    cache: RowCache | None = None,
) -> RunaiScan:
    """List and diagnose the Run:ai failures inside ``[start, end]`` (UTC), streamed page by page. Raises only when
    the control plane cannot be reached at all (the cluster list of a whole-plane scan); every other failure is a
    gap."""
    scan = RunaiScan()
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(RunaiClient(config))
        clusters = await _clusters(client, cluster_id, scan)
        lanes: asyncio.Queue[RunaiClient] = asyncio.Queue()
        for n in range(LANES):  # made after the first call: each lane takes its token and cluster list
            lane = client if n == 0 else await stack.enter_async_context(RunaiClient(config))
            lane._clusters = client._clusters
            for _ in range(max(1, CONCURRENCY // LANES)):
                lanes.put_nowait(lane)
        scan.cluster_ids = [c.uuid for c in clusters]
        scan.cluster_names = [c.name or c.uuid for c in clusters]
        queries = await _queries(client, clusters, projects, start, end, scan)
        rows = _Rows(lanes, config, scan, (start, end), since, cache)
        seen: set[str] = set()
        scanned, wanted = set(scan.cluster_ids), set(projects) if projects is not None else None

        async def each(page: list[Workload]) -> None:
            await rows.page(_in_scope(page, seen, scanned, wanted, (start, end)))

        by_cluster: dict[str, list[tuple[list[str], bool, str]]] = {}
        for query in queries:
            by_cluster.setdefault(query[0][0], []).append(query)
        at_once = asyncio.Semaphore(CLUSTERS_AT_ONCE)

        async def one_cluster(cluster_queries: list[tuple[list[str], bool, str]]) -> None:
            async with at_once:
                await asyncio.gather(*(_list(client, q, scan, each) for q in cluster_queries))

        await asyncio.gather(*(one_cluster(q) for q in by_cluster.values()))
        scan.items = [item for item in rows.results if item.category != PREEMPTED]
        scan.preempted = sorted(
            (item for item in rows.results if item.category == PREEMPTED), key=lambda i: (i.at, i.name), reverse=True
        )
    return scan
