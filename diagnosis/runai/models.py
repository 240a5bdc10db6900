"""Pydantic models of the Run:ai REST API shapes the diagnosis reads (``shared/reference/runai-api.md``).

Unknown fields are ignored and enum-like values (phase, type, k8sPhase, condition type) are kept
as ``str`` so a value outside the 2.24 enums (``Suspended``) still parses. Timestamps are UTC
datetimes; quantities (``"32Gi"``) stay strings; metric values are strings in the API and are
parsed to float by :meth:`Measurement.floats`.

Lists are null-safe: a ``null`` (or unreadable) item of a top-level list (pods, history, events) is
skipped and counted by :func:`parse_records`, so the report can say so; ``null`` items of nested
lists (conditions, containers, measurements, values) are dropped. What paging left out (records a later page
served again, a cursor that cycled, a list without an end: :class:`Paged`) travels with the list as well, so
the same gap says it (issue 15 §1).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from diagnosis.units import parse_time

TERMINAL_PHASES = frozenset({"Failed", "Crashed", "Stopped", "Completed", "Succeeded"})
SUCCESS_PHASES = frozenset({"Completed", "Succeeded"})


class ApiModel(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, alias_generator=to_camel)


def _time(value: Any) -> datetime | None:
    return parse_time(value) if isinstance(value, str | datetime) else None


def _no_nulls(value: Any) -> Any:
    """A nested list without its ``null`` items (``None`` itself becomes ``[]``)."""
    if value is None:
        return []
    return [v for v in value if v is not None] if isinstance(value, list) else value


M = TypeVar("M", bound=BaseModel)


class Paged(list[Any]):
    """The raw items of every page of one paged list (``null`` items included: the caller counts them),
    with what paging had to leave out.

    ``repeated``: items dropped because an earlier page had served them already (the same ``id``, or, for an
    item without one, the same content on an earlier page); ``stopped``: why paging ended before the server
    said the list was complete (a ``next`` cursor that repeated, a page of nothing new, the page limit), or
    None when it ended by itself."""

    def __init__(self, items: Iterable[Any] = (), *, repeated: int = 0, stopped: str | None = None) -> None:
        super().__init__(items)
        self.repeated = repeated
        self.stopped = stopped


class Records(list[M]):
    """Items of one API list that could be read; ``nulls`` and ``invalid`` count those that were skipped,
    ``repeated`` those dropped as served again by a later page, ``same`` those dropped as a repeat of an item's
    content (:meth:`distinct`: the same record under another id, or twice on one page); ``stopped`` says why
    paging ended before the end of the list (None: the whole list was read).

    ``asked_deleted`` is set when the items were asked again with ``deleted=true`` (pods of a deleted or
    cleaned-up workload)."""

    def __init__(
        self,
        items: Iterable[M] = (),
        *,
        nulls: int = 0,
        invalid: int = 0,
        repeated: int = 0,
        stopped: str | None = None,
    ) -> None:
        super().__init__(items)
        self.nulls = nulls
        self.invalid = invalid
        self.repeated = repeated
        self.stopped = stopped
        self.same = 0
        self.asked_deleted = False

    def add(self, other: Records[M]) -> None:
        self.extend(other)
        self.nulls += other.nulls
        self.invalid += other.invalid
        self.repeated += other.repeated
        self.same += other.same
        self.stopped = "; ".join(s for s in (self.stopped, other.stopped) if s) or None

    def distinct(self, key: Callable[[M], Hashable]) -> Records[M]:
        """These items, each content (``key``) once, in order: a record served again under another id, or
        twice on one page, is one record (issue 24: repeats never count twice, wherever they enter); those
        dropped are counted in ``same``. What was skipped before is kept."""
        seen: set[Hashable] = set()
        out: Records[M] = Records(nulls=self.nulls, invalid=self.invalid, repeated=self.repeated, stopped=self.stopped)
        out.same, out.asked_deleted = self.same, self.asked_deleted
        for item in self:
            k = key(item)
            if k in seen:
                out.same += 1
                continue
            seen.add(k)
            out.append(item)
        return out

    @property
    def skipped(self) -> int:
        """Items left out of the list (null, unreadable, served again, or repeated); a list cut short by paging
        counts as one more (the items never read cannot be counted)."""
        return self.nulls + self.invalid + self.repeated + self.same + (1 if self.stopped else 0)

    def skipped_text(self) -> str:
        """What was left out, as the ``why`` of a gap: ``"2 null records skipped"``, ``"1 null record and
        1 unreadable record skipped"``, ``"4 records served again by later pages dropped"``, then why paging
        stopped early; "" when nothing was."""
        parts = [
            f"{n} {what} record{'s' if n != 1 else ''}"
            for n, what in ((self.nulls, "null"), (self.invalid, "unreadable"))
            if n
        ]
        out = [" and ".join(parts) + " skipped"] if parts else []
        if self.repeated:
            out.append(
                f"{self.repeated} record{'s' if self.repeated != 1 else ''} served again by a later page "
                "dropped (counted once)"
            )
        if self.same:
            out.append(
                f"{self.same} record{'s' if self.same != 1 else ''} repeating another's content (another id, or "
                "twice on one page) dropped (counted once)"
            )
        if self.stopped:
            out.append(self.stopped)
        return "; ".join(out)


def parse_records(model: type[M], raw: Iterable[Any]) -> Records[M]:
    """Validate each item of an API list as ``model``; a ``null``, non-object or invalid item is skipped
    and counted, never fatal for the whole list. What paging left out (``raw`` a :class:`Paged`) is kept."""
    items: list[M] = []
    nulls = invalid = 0
    for item in raw:
        if item is None:
            nulls += 1
            continue
        try:
            items.append(model.model_validate(item))
        except ValidationError:
            invalid += 1
    if isinstance(raw, Paged):
        return Records(items, nulls=nulls, invalid=invalid, repeated=raw.repeated, stopped=raw.stopped)
    return Records(items, nulls=nulls, invalid=invalid)


class Condition(ApiModel):
    type: str = ""
    status: str | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: datetime | None = None

    _t = field_validator("last_transition_time", mode="before")(_time)


class ResourcePair(ApiModel):
    request: str | float | None = None
    limit: str | float | None = None


class RequestedResources(ApiModel):
    gpu: ResourcePair | None = None
    gpu_memory: ResourcePair | None = None
    cpu: ResourcePair | None = None
    cpu_memory: ResourcePair | None = None


class AllocatedResources(ApiModel):
    gpu: float | None = None
    cpu: float | None = None
    cpu_memory: str | None = None
    gpu_memory: str | None = None


class PendingSchedulingMessage(ApiModel):
    node_pool: str | None = None
    phase_reason: str | None = None
    reason: str | None = None
    user_message: str | None = None


class RequestedPods(ApiModel):
    """``RequestedPods``: how many pods a (distributed) workload asked for."""

    number: int | None = None
    min: int | None = None
    max: int | None = None


class Workload(ApiModel):
    """``Workload`` / ``WorkloadDetailed``."""

    id: str
    name: str
    type: str | None = None
    cluster_id: str | None = None
    project_id: str | None = None
    project_name: str | None = None
    namespace: str | None = None
    submitted_by: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    phase: str = "Unknown"
    phase_message: str | None = None
    phase_reason: str | None = None
    phase_updated_at: datetime | None = None
    k8s_phase: str | None = Field(default=None, alias="k8sPhase")
    k8s_phase_updated_at: datetime | None = Field(default=None, alias="k8sPhaseUpdatedAt")
    completed_at: datetime | None = None
    deleted_at: datetime | None = None
    source_api: str | None = None  # "WorkloadsV2": submitted through /api/v2/workloads (2.24)
    conditions: list[Condition] = Field(default_factory=list)
    pods_requested_resources: RequestedResources | None = None
    allocated_resources: AllocatedResources | None = None
    pending_scheduling_messages: list[PendingSchedulingMessage] | None = None
    images: list[str] | None = None
    preemptible: bool | None = None
    priority_class_name: str | None = None
    running_pods: int | None = None
    requested_pods: RequestedPods | None = None
    requested_node_pools: list[str] | None = None
    current_node_pools: list[str] | None = None
    total_pending_time_seconds: int | None = None

    _t = field_validator(
        "created_at",
        "updated_at",
        "phase_updated_at",
        "k8s_phase_updated_at",
        "completed_at",
        "deleted_at",
        mode="before",
    )(_time)
    _lists = field_validator(
        "conditions",
        "pending_scheduling_messages",
        "images",
        "requested_node_pools",
        "current_node_pools",
        mode="before",
    )(_no_nulls)

    @field_validator("running_pods", "total_pending_time_seconds", mode="before")
    @classmethod
    def _count(cls, value: Any) -> Any:
        """A count that is not a whole non-negative number is not known (never a crash)."""
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None

    @property
    def is_terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def is_distributed(self) -> bool:
        """A workload of several replicas (``type`` Distributed): its pods take part in a first-failure order."""
        return (self.type or "").lower() == "distributed"


class Container(ApiModel):
    name: str
    image: str | None = None
    started_at: datetime | None = None

    _t = field_validator("started_at", mode="before")(_time)


class Pod(ApiModel):
    id: str | None = None
    name: str
    node_name: str | None = None
    #: the pod's workload (``GET /api/v1/workloads/pods`` lists the pods of every workload); its name and project
    #: only with ``verbosity=full``
    workload_id: str | None = None
    workload_name: str | None = None
    project_name: str | None = None
    k8s_phase: str | None = Field(default=None, alias="k8sPhase")
    k8s_phase_updated_at: datetime | None = Field(default=None, alias="k8sPhaseUpdatedAt")
    created_at: datetime | None = None
    completed_at: datetime | None = None
    deleted_at: datetime | None = None  # set: listed only with deleted=true
    containers: list[Container] = Field(default_factory=list)
    requested_resources: RequestedResources | None = None
    allocated_resources: AllocatedResources | None = None

    _t = field_validator("k8s_phase_updated_at", "created_at", "completed_at", "deleted_at", mode="before")(_time)
    _lists = field_validator("containers", mode="before")(_no_nulls)

    def is_named(self, ref: str | None) -> bool:
        """Whether ``ref`` (a metric label, an event's pod) names this pod, by name or by Run:ai pod id."""
        return bool(ref) and ref in (self.name, self.id)

    @property
    def memory_limit(self) -> str | None:
        """``requestedResources.cpuMemory.limit`` as text, or None."""
        rr = self.requested_resources
        return str(rr.cpu_memory.limit) if rr and rr.cpu_memory and rr.cpu_memory.limit else None


class InvolvedObject(ApiModel):
    uid: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None


class Event(ApiModel):
    created_at: datetime | None = None
    id: str | None = None
    type: str | None = None
    cluster_id: str | None = None
    message: str = ""
    reason: str | None = None
    source: str | None = None
    involved_object: InvolvedObject | None = None

    _t = field_validator("created_at", mode="before")(_time)

    @field_validator("message", mode="before")
    @classmethod
    def _none_str(cls, value: Any) -> Any:
        return value or ""

    def content_key(self) -> tuple[Any, ...]:
        """What makes two events one, whatever their ids: time, type, reason, message and the object it is
        about (the same event from history and from the events endpoint, or served again under another id)."""
        io = self.involved_object
        about = (io.kind, io.namespace, io.name) if io is not None else None
        return (self.created_at, self.type, self.reason, self.message, about)


class PhaseUpdate(ApiModel):
    phase: str = "Unknown"
    phase_message: str | None = None


class HistoryMeta(ApiModel):
    type: str = ""
    creation_timestamp: datetime | None = None

    _t = field_validator("creation_timestamp", mode="before")(_time)


class HistorySpec(ApiModel):
    event: Event | None = None
    phase_update: PhaseUpdate | None = None


class HistoryRecord(ApiModel):
    meta: HistoryMeta
    spec: HistorySpec = Field(default_factory=HistorySpec)

    def content_key(self) -> tuple[Any, ...]:
        """What makes two history records one, whatever their ids: the record's type and time, and its event's
        content (:meth:`Event.content_key`) or its phase and phase message."""
        ev, pu = self.spec.event, self.spec.phase_update
        what = ev.content_key() if ev is not None else (pu.phase, pu.phase_message or "") if pu is not None else None
        return (self.meta.type, self.meta.creation_timestamp, what)


class MetricValue(ApiModel):
    value: str | float | None = None
    timestamp: datetime | None = None

    _t = field_validator("timestamp", mode="before")(_time)


#: Label keys that name the pod of a per-pod series, best first; any other key containing "pod" is tried last.
POD_LABELS = ("pod", "podName", "pod_name", "podId", "pod_id")


class Measurement(ApiModel):
    type: str
    labels: dict[str, str] | None = None
    values: list[MetricValue] | None = None

    _lists = field_validator("values", mode="before")(_no_nulls)

    @field_validator("labels", mode="before")
    @classmethod
    def _label_text(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items() if v is not None}
        return value

    @property
    def pod(self) -> str | None:
        """The pod this series belongs to (a ``pod``/``podName``/``podId`` label); None for a workload-wide one."""
        labels = self.labels or {}
        for key in POD_LABELS:
            if labels.get(key):
                return labels[key]
        return next((v for k, v in labels.items() if v and "pod" in k.lower()), None)

    def peak(self) -> tuple[datetime | None, float] | None:
        """(time, value) of the highest sample, or None for an empty series."""
        points = self.floats()
        return max(points, key=lambda p: p[1]) if points else None

    def floats(self) -> list[tuple[datetime | None, float]]:
        """(timestamp, value) pairs whose value parses as a finite number (values are strings in the spec:
        ``"NaN"`` or ``"inf"`` is no measurement)."""
        out: list[tuple[datetime | None, float]] = []
        for v in self.values or []:
            try:
                number = float(v.value)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                continue
            if math.isfinite(number):
                out.append((v.timestamp, number))
        return out


class Metrics(ApiModel):
    """``MetricsCompositeResponse``: one series per metric type, or one per pod (labelled) and type."""

    measurements: list[Measurement] = Field(default_factory=list)

    _lists = field_validator("measurements", mode="before")(_no_nulls)

    def series(self, metric_type: str) -> Measurement | None:
        """The first series of a type (one workload-wide series); see :meth:`all_series` for per-pod ones."""
        return next((m for m in self.measurements if m.type == metric_type), None)

    def all_series(self, metric_type: str) -> list[Measurement]:
        """Every series of a type: the response carries one per pod when the workload has several."""
        return [m for m in self.measurements if m.type == metric_type]

    def series_of(self, metric_type: str, pod: Pod | str | None) -> Measurement | None:
        """The series of a type that belongs to ``pod`` (by name or id); for ``None``, an unlabelled one."""
        for m in self.all_series(metric_type):
            label = m.pod
            if pod is None and label is None:
                return m
            if pod is not None and label is not None:
                if pod.is_named(label) if isinstance(pod, Pod) else label == pod:
                    return m
        return None


class Cluster(ApiModel):
    uuid: str
    name: str | None = None
    domain: str | None = None


class ProjectStatus(ApiModel):
    namespace: str | None = None


class Project(ApiModel):
    id: str | None = None
    name: str
    cluster_id: str | None = None
    status: ProjectStatus | None = None


_ROLE_TOKENS = {"leader": "leader", "worker": "worker", "master": "master", "launcher": "master", "chief": "master"}
#: Where a role's ``compute`` section is, and which sections to try for a pod of that role, in order:
#: Distributed keeps the workers' in ``spec.compute`` and the master's in ``masterSpec.compute`` (absent
#: when ``masterSpecSameAsWorker``); distributed inference keeps them in ``spec.leader`` and ``spec.worker``.
_COMPUTE_AT = {
    "": "compute",
    "leader": "spec.leader.compute",
    "worker": "spec.worker.compute",
    "master": "masterSpec.compute",
}
_ROLE_CHAIN = {"leader": ("leader",), "worker": ("worker", ""), "master": ("master", ""), None: ()}


def pod_role(pod_name: str | None) -> str | None:
    """``leader``, ``worker`` or ``master`` when a pod's name says its replica role (``x-worker-0``), else None."""
    for token in reversed((pod_name or "").lower().split("-")):
        if token in _ROLE_TOKENS:
            return _ROLE_TOKENS[token]
    return None


class WorkloadSpec(ApiModel):
    """The kind-specific spec envelope (training/workspace/...); ``spec`` (and Distributed's
    ``masterSpec``) kept as dicts."""

    name: str | None = None
    desired_phase: str | None = None
    actual_phase: str | None = None
    spec: dict[str, Any] = Field(default_factory=dict)
    master_spec: dict[str, Any] = Field(default_factory=dict)

    @field_validator("spec", "master_spec", mode="before")
    @classmethod
    def _none_dict(cls, value: Any) -> Any:
        return value if isinstance(value, dict) else {}

    @classmethod
    def from_v2(cls, body: Any) -> WorkloadSpec:
        """``GET /api/v2/workloads/{id}`` (``WorkloadV2GetResponse``): its ``workload.desiredPhase``; the
        Kubernetes manifest is not read for limits."""
        workload = body.get("workload") if isinstance(body, dict) else None
        if not isinstance(workload, dict):
            raise ValueError("the v2 workload response has no 'workload' object")
        meta = workload.get("metadata")
        name = meta.get("name") if isinstance(meta, dict) else None
        return cls(name=name, desired_phase=workload.get("desiredPhase"))

    def compute_sections(self) -> dict[str, dict[str, Any]]:
        """Role (``""`` for a single pod spec or Distributed's workers) -> its ``compute`` section."""
        out: dict[str, dict[str, Any]] = {}
        if isinstance(self.spec.get("compute"), dict):
            out[""] = self.spec["compute"]
        for role in ("leader", "worker"):
            part = self.spec.get(role)
            if isinstance(part, dict) and isinstance(part.get("compute"), dict):
                out[role] = part["compute"]
        if isinstance(self.master_spec.get("compute"), dict):
            out["master"] = self.master_spec["compute"]
        return out

    def compute_value(self, key: str, pod_name: str | None = None) -> tuple[str, str] | None:
        """``(value, where)`` of ``compute.<key>`` (``cpuMemoryLimit``...) for a pod: its role's section when
        its name says the role, else the value every section agrees on. None when absent or ambiguous
        (a leader and a worker with different limits and a pod of unknown role)."""
        values = {role: str(c[key]) for role, c in self.compute_sections().items() if c.get(key) not in (None, "")}
        if not values:
            return None
        for role in _ROLE_CHAIN[pod_role(pod_name)]:
            if role in values:
                return values[role], f"{_COMPUTE_AT[role]}.{key}"
        if len(set(values.values())) == 1:
            role = next(iter(values))
            return values[role], f"{_COMPUTE_AT[role]}.{key}"
        return None
