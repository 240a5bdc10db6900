"""Pydantic models of the Run:ai REST API shapes the diagnosis reads (``shared/reference/runai-api.md``).

Unknown fields are ignored and enum-like values (phase, type, k8sPhase, condition type) are kept
as ``str`` so a value outside the 2.24 enums (``Suspended``) still parses. Timestamps are UTC
datetimes; quantities (``"32Gi"``) stay strings; metric values are strings in the API and are
parsed to float by :meth:`Measurement.floats`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from diagnosis.units import parse_time

TERMINAL_PHASES = frozenset({"Failed", "Crashed", "Stopped", "Completed", "Succeeded"})
SUCCESS_PHASES = frozenset({"Completed", "Succeeded"})


class ApiModel(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, alias_generator=to_camel)


def _time(value: Any) -> datetime | None:
    return parse_time(value) if isinstance(value, str | datetime) else None


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
    completed_at: datetime | None = None
    deleted_at: datetime | None = None
    conditions: list[Condition] = Field(default_factory=list)
    pods_requested_resources: RequestedResources | None = None
    allocated_resources: AllocatedResources | None = None
    pending_scheduling_messages: list[PendingSchedulingMessage] | None = None
    images: list[str] | None = None
    preemptible: bool | None = None
    priority_class_name: str | None = None

    _t = field_validator("created_at", "updated_at", "phase_updated_at", "completed_at", "deleted_at", mode="before")(
        _time
    )

    @field_validator("conditions", mode="before")
    @classmethod
    def _none_list(cls, value: Any) -> Any:
        return value or []

    @property
    def is_terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES


class Container(ApiModel):
    name: str
    image: str | None = None
    started_at: datetime | None = None

    _t = field_validator("started_at", mode="before")(_time)


class Pod(ApiModel):
    id: str | None = None
    name: str
    node_name: str | None = None
    k8s_phase: str | None = Field(default=None, alias="k8sPhase")
    k8s_phase_updated_at: datetime | None = Field(default=None, alias="k8sPhaseUpdatedAt")
    created_at: datetime | None = None
    completed_at: datetime | None = None
    containers: list[Container] = Field(default_factory=list)
    requested_resources: RequestedResources | None = None
    allocated_resources: AllocatedResources | None = None

    _t = field_validator("k8s_phase_updated_at", "created_at", "completed_at", mode="before")(_time)

    @field_validator("containers", mode="before")
    @classmethod
    def _none_list(cls, value: Any) -> Any:
        return value or []


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


class MetricValue(ApiModel):
    value: str | float | None = None
    timestamp: datetime | None = None

    _t = field_validator("timestamp", mode="before")(_time)


class Measurement(ApiModel):
    type: str
    labels: dict[str, str] | None = None
    values: list[MetricValue] | None = None

    def floats(self) -> list[tuple[datetime | None, float]]:
        """(timestamp, value) pairs whose value parses as a number."""
        out: list[tuple[datetime | None, float]] = []
        for v in self.values or []:
            try:
                out.append((v.timestamp, float(v.value)))  # type: ignore[arg-type]
            except (TypeError, ValueError):
                continue
        return out


class Metrics(ApiModel):
    measurements: list[Measurement] = Field(default_factory=list)

    def series(self, metric_type: str) -> Measurement | None:
        return next((m for m in self.measurements if m.type == metric_type), None)


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


class WorkloadSpec(ApiModel):
    """The kind-specific spec envelope (training/workspace/...); ``spec`` is kept as a dict."""

    name: str | None = None
    desired_phase: str | None = None
    actual_phase: str | None = None
    spec: dict[str, Any] = Field(default_factory=dict)

    @field_validator("spec", mode="before")
    @classmethod
    def _none_dict(cls, value: Any) -> Any:
        return value or {}
