"""Run:ai failures of a digest window, each classified by the same core as ``/diagnose``.

FORMAT.md "Digests", "What is a failure": phase now ``Failed`` (or ``Stopped`` with a
SCHEDULING_POLICY_TERMINATED signal), ``phaseUpdatedAt`` inside the window, on a scanned cluster and
project, live or deleted, and a single diagnosis with outcome ``diagnosed`` (preemptions do not count).

Listing is server-side filtered (``filterBy=clusterId==…,phase==…,phaseUpdatedAt>=…,phaseUpdatedAt<=…``,
``filterBy`` terms are ANDed, so each phase and each project is its own query) and paged; the queries run
concurrently. Each failure is then diagnosed from Tier 1 (bounded concurrency); every failed call is a gap
(:func:`~diagnosis.digests.read_gap`: the failed read's ``why`` and its call).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import httpx

from diagnosis.config import KubeConfig, RunaiConfig
from diagnosis.digests import DigestItem, RowCache, in_window, read_gap
from diagnosis.fetched import Fetched, describe_error, fetch
from diagnosis.question import Question
from diagnosis.report import Category, Gap, Outcome, Report
from diagnosis.runai.client import ApiError, RunaiClient
from diagnosis.runai.incident import last_running
from diagnosis.runai.models import Cluster, Workload
from diagnosis.runai.procedure import Deadline, Diagnosis
from diagnosis.runai.tier1 import collect

log = logging.getLogger(__name__)

#: Diagnoses of one digest in flight at once (each is about 6 concurrent Tier 1 reads).
CONCURRENCY = 16
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


async def _list(client: RunaiClient, filters: list[str], deleted: bool, scan: RunaiScan, what: str) -> list[Workload]:
    got = await fetch(client.list_workloads(filters, deleted=deleted))
    if got.value is None:
        scan.gaps.append(read_gap(what, got))
        return []
    found = got.value
    if found.repeated or found.stopped:  # a server that paged wrongly: said, never counted twice (issue 15 §1)
        scan.gaps.append(read_gap(what, Fetched(got.call, why=found.skipped_text())))
    return found


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
    listed: Sequence[Sequence[Workload]],
    scanned: set[str],
    projects: Sequence[str] | None,
    start: datetime,
    end: datetime,
) -> dict[str, Workload]:
    """The listed workloads inside the scan's scope, once each by id. The server filters; the same rules are
    checked again here, so a control plane that ignores a filter term cannot put a workload of another scope
    into the digest."""
    seen: dict[str, Workload] = {}
    wanted_projects = set(projects) if projects is not None else None
    for workloads in listed:
        for w in workloads:
            if w.phase not in COUNTED_PHASES or not in_window(w.phase_updated_at, start, end):
                continue
            if w.cluster_id not in scanned:
                continue
            if wanted_projects is not None and w.project_name not in wanted_projects:
                continue
            seen.setdefault(w.id, w)
    return seen


async def _diagnose_one(
    client: RunaiClient, config: RunaiConfig, workload: Workload, end: datetime, since: str, scan: RunaiScan
) -> tuple[DigestItem | None, bool]:
    """One listed failure diagnosed from Tier 1 at ``end`` (UTC) with lookback ``since``: its digest row (None
    when a single diagnosis does not count it) and whether the row may be cached; a failed read is a gap."""
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
        report = await diagnosis.diagnose(workload, tier1)
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
            return None, False
        verdict = f"{workload.name} failed; its details could not be read."
        return DigestItem(category=Category.UNKNOWN.value, verdict=verdict, **common), False  # type: ignore[arg-type]
    if report.outcome == Outcome.ROUTE_PREEMPTED:  # kept apart, never counted (FORMAT.md "What is a failure" 4)
        return DigestItem(category=PREEMPTED, verdict=report.headline, **common), True  # type: ignore[arg-type]
    if not _counts(report, workload):
        return None, True
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
    return item, not unread  # a row built around a failed call is not kept for the next digest


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
    """List and diagnose the Run:ai failures inside ``[start, end]`` (UTC). Raises only when the control plane
    cannot be reached at all (the cluster list of a whole-plane scan); every other failure is a gap."""
    scan = RunaiScan()
    async with RunaiClient(config) as client:
        clusters = await _clusters(client, cluster_id, scan)
        scan.cluster_ids = [c.uuid for c in clusters]
        scan.cluster_names = [c.name or c.uuid for c in clusters]
        queries = await _queries(client, clusters, projects, start, end, scan)
        listed = await asyncio.gather(*(_list(client, f, d, scan, w) for f, d, w in queries))
        seen = _in_scope(listed, set(scan.cluster_ids), projects, start, end)
        limit = asyncio.Semaphore(CONCURRENCY)

        async def one(workload: Workload) -> DigestItem | None:
            key = f"runai:{workload.id}:{workload.phase_updated_at:%Y-%m-%dT%H:%M:%SZ}:tier1:{since}"
            if cache is not None:
                hit = await cache.get(key)
                if isinstance(hit, dict):
                    return DigestItem.model_validate(hit["item"]) if hit.get("item") else None
            async with limit:
                item, cacheable = await _diagnose_one(client, config, workload, end, since, scan)
            if cache is not None and cacheable:
                await cache.put(key, {"item": item.model_dump(mode="json") if item else None})
            return item

        results = [item for item in await asyncio.gather(*(one(w) for w in seen.values())) if item is not None]
        scan.items = [item for item in results if item.category != PREEMPTED]
        scan.preempted = [item for item in results if item.category == PREEMPTED]
    return scan
