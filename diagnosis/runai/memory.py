"""Memory evidence of a Run:ai diagnosis (spec Step 4): the measured peak and the limit **of the same pod**.

The metrics endpoint carries one ``CPU_MEMORY_USAGE_BYTES`` series per pod when a workload has several
(labelled with the pod), and pods of one workload can have different limits (a distributed master and
its workers, a distributed-inference leader and its workers). So every series is read, one pod is chosen
(the diagnosed pod when it has a series, else the one closest to its own limit), and its limit is looked
up for that pod only. Pure functions over the API models; no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from diagnosis import kube_objects as kube
from diagnosis.runai.client import Calls
from diagnosis.runai.models import Measurement, Metrics, Pod, Workload, WorkloadSpec
from diagnosis.units import quantity_bytes

USAGE = "CPU_MEMORY_USAGE_BYTES"
LIMIT = "CPU_MEMORY_LIMIT_BYTES"


@dataclass(frozen=True)
class MemoryLimit:
    raw: str  # as its source wrote it ("16Gi"), or the bytes of the limit metric
    bytes: int | None
    source: str


@dataclass(frozen=True)
class MemoryPeak:
    at: datetime | None
    bytes: float
    source: str


@dataclass(frozen=True)
class MemoryEvidence:
    """``pod``: the pod the peak and the limit belong to (None: not known, a workload-wide series);
    ``named``: whether the report must name it (several pods or several series); ``series``: how many
    usage series the metrics carried."""

    pod: str | None
    named: bool
    limit: MemoryLimit | None
    request: str | None
    peak: MemoryPeak | None
    series: int


def memory_evidence(
    workload: Workload,
    pods: Sequence[Pod],
    spec: WorkloadSpec | None,
    metrics: Metrics | None,
    *,
    tier2_pod: dict[str, Any] | None = None,
    tier2_pod_name: str | None = None,
    prefer_pod: str | None = None,
) -> MemoryEvidence:
    """The peak and the limit of one pod; ``prefer_pod`` is the diagnosed pod."""
    wid = workload.id
    usage = [(m, m.peak()) for m in (metrics.all_series(USAGE) if metrics is not None else [])]
    labelled = [(m, p) for m, p in usage if m.pod is not None]
    # A workload-wide series next to per-pod ones may be a sum: compare per-pod series with per-pod limits.
    candidates = [(m, p) for m, p in (labelled or usage) if p is not None]

    def pod_name(series: Measurement) -> str | None:
        label = series.pod
        return next((p.name for p in pods if p.is_named(label)), label)

    def limit_of(name: str | None, series: Measurement | None) -> MemoryLimit | None:
        return _limit(workload, pods, spec, metrics, name, series, tier2_pod, tier2_pod_name)

    chosen: tuple[Measurement, tuple[datetime | None, float]] | None = None
    name: str | None = None
    if labelled:
        preferred = [(m, p) for m, p in candidates if prefer_pod is not None and pod_name(m) == prefer_pod]
        if preferred:
            chosen = preferred[0]
        elif candidates:

            def closeness(item: tuple[Measurement, tuple[datetime | None, float]]) -> tuple[float, float]:
                limit = limit_of(pod_name(item[0]), item[0])
                ratio = item[1][1] / limit.bytes if limit and limit.bytes else -1.0
                return ratio, item[1][1]

            chosen = max(candidates, key=closeness)
        name = pod_name(chosen[0]) if chosen else prefer_pod
    else:
        chosen = candidates[0] if candidates else None
        name = prefer_pod or (pods[0].name if len(pods) == 1 else None)
    limit = limit_of(name, chosen[0] if chosen else None)
    peak = None
    if chosen is not None:
        at, value = chosen[1]
        label = f", pod {name}" if labelled and name else ""
        peak = MemoryPeak(at, value, Calls.metrics(wid).cite(f"{USAGE}{label}"))
    return MemoryEvidence(
        pod=name,
        named=name is not None and (len(pods) > 1 or len(usage) > 1),
        limit=limit,
        request=_request(workload, spec, name),
        peak=peak,
        series=len(usage),
    )


def _limit(
    workload: Workload,
    pods: Sequence[Pod],
    spec: WorkloadSpec | None,
    metrics: Metrics | None,
    name: str | None,
    series: Measurement | None,
    tier2_pod: dict[str, Any] | None,
    tier2_pod_name: str | None,
) -> MemoryLimit | None:
    """The memory limit of pod ``name``: its own requested limit, the workload's per-pod limit, the submitted
    spec's (the pod's role section), its Tier 2 container limit, then the limit metric of the same pod.
    With no pod known, a pod limit is used only when every pod has the same one."""
    wid = workload.id
    found: tuple[str, str] | None = None
    pod = next((p for p in pods if p.name == name), None)
    pods_field = "requestedResources.cpuMemory.limit"
    if pod is not None and pod.memory_limit:
        of_pod = f" of pod {pod.name}" if len(pods) > 1 else ""
        found = pod.memory_limit, Calls.pods(wid).cite(pods_field + of_pod)
    elif pod is None:
        limits = {lim for lim in (p.memory_limit for p in pods) if lim}
        if len(limits) == 1:
            found = limits.pop(), Calls.pods(wid).cite(pods_field)
    wr = workload.pods_requested_resources
    if found is None and wr and wr.cpu_memory and wr.cpu_memory.limit:
        found = str(wr.cpu_memory.limit), Calls.workload(wid).cite("podsRequestedResources.cpuMemory.limit")
    if found is None and spec is not None:
        value = spec.compute_value("cpuMemoryLimit", name)
        if value is not None:
            found = value[0], f"submitted spec ({value[1]})"
    if found is None and tier2_pod and (name is None or tier2_pod_name == name):
        # the main container's own limit (FORMAT.md "the OOM ceiling is the limit of the container that was
        # killed"), never a sidecar's listed before it; a sidecar's or init container's kill is quoted apart
        # (RunaiReportBuilder.killed_container_limit)
        main = kube.main_container(tier2_pod, workload.name)
        spec_of = next((c for c in kube.container_specs(tier2_pod) if c.name == main and not c.init), None)
        if spec_of is not None and spec_of.memory_limit:
            found = (
                spec_of.memory_limit,
                f"kubectl describe pod {tier2_pod_name} (container {main}: resources.limits.memory)",
            )
    limit_bytes = quantity_bytes(found[0]) if found else None
    if limit_bytes is None and metrics is not None:
        from_metrics = _limit_metric(metrics, pods, name, series)
        if from_metrics is not None:
            label = f", pod {name}" if series is not None and series.pod is not None and name else ""
            return MemoryLimit(str(from_metrics), from_metrics, Calls.metrics(wid).cite(f"{LIMIT}{label}"))
    return MemoryLimit(found[0], limit_bytes, found[1]) if found else None


def _limit_metric(metrics: Metrics, pods: Sequence[Pod], name: str | None, series: Measurement | None) -> int | None:
    """The limit metric of the same pod as the usage ``series`` (a workload-wide one for a workload-wide series)."""
    if series is not None and series.pod is not None:
        pod = next((p for p in pods if p.name == name), None)
        same = metrics.series_of(LIMIT, pod or series.pod)
    else:
        limits = metrics.all_series(LIMIT)
        same = metrics.series_of(LIMIT, None) or (limits[0] if len(limits) == 1 else None)
    values = same.floats() if same else []
    return int(max(v for _, v in values)) if values else None


def _request(workload: Workload, spec: WorkloadSpec | None, name: str | None) -> str | None:
    wr = workload.pods_requested_resources
    if wr and wr.cpu_memory and wr.cpu_memory.request:
        return str(wr.cpu_memory.request)
    value = spec.compute_value("cpuMemoryRequest", name) if spec is not None else None
    return value[0] if value else None
