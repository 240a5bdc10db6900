"""Typed views of the OSMO REST payloads (``shared/reference/osmo-api.md`` §3, §5, §7).

Checked against the service's OpenAPI schemas (``reference/specs/osmo-openapi.json``): a field is
required here only when the spec requires it *and* the diagnosis cannot do without it (a
workflow's, group's or task's ``name``, a node's ``hostname``, a task entry's ``task_name``);
everything the spec leaves optional, nullable or defaulted (a pool's ``name`` defaults to ``""``)
has a default. Every model ignores unknown fields and keeps statuses as plain ``str`` (the server and
the eval fixtures disagree on values; a strict enum would break on new ones). Times are naive
UTC in the API and become aware UTC datetimes here (an unreadable or out-of-range time becomes
None); durations are float seconds. GPU counts in ``ResourceUsage`` arrive as strings and become
``int`` (None when absent, unparseable or not finite). A ``null`` where the spec has a list becomes
an empty list. Free-form objects (``additionalProperties: true``) are read defensively: a value of an
unexpected type is ignored, never fatal.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from diagnosis.units import parse_time

# WorkflowStatus.alive() (§4.1) and the statuses that end a workflow.
ALIVE_STATUSES = frozenset({"PENDING", "RUNNING", "WAITING"})
# TaskGroupStatus.in_queue (§4.2): tasks/groups waiting to be scheduled (WAITING = for upstream).
QUEUED_TASK_STATUSES = frozenset({"SUBMITTING", "PROCESSING", "SCHEDULING", "PENDING"})


def is_terminal(status: str | None) -> bool:
    """True for COMPLETED and every FAILED* status (anything not alive and not unknown)."""
    return bool(status) and status not in ALIVE_STATUSES


def is_failed(status: str | None) -> bool:
    """True for FAILED and every FAILED_* status (task, group or workflow)."""
    return bool(status) and str(status).startswith("FAILED")


def to_int(value: Any) -> int | None:
    """``"8"`` / ``8`` / ``8.0`` -> 8; ``"-1"`` -> -1; None or garbage -> None."""
    if value is None or isinstance(value, bool):
        return None
    number = _num(value)
    return None if number is None else int(number)


def to_time(value: Any) -> datetime | None:
    """An API time (naive UTC, or with an offset) as an aware UTC datetime; None when absent,
    unreadable or out of range."""
    if isinstance(value, datetime):
        text: str | datetime = value
    elif isinstance(value, str) and value.strip():
        text = value
    else:
        return None
    try:
        parsed = parse_time(text)
        return parsed.astimezone(UTC) if parsed is not None else None
    except (ValueError, OverflowError):
        return None


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _Timed(_Model):
    @field_validator(
        "submit_time",
        "start_time",
        "end_time",
        "scheduling_start_time",
        "processing_start_time",
        "initializing_start_time",
        "input_download_start_time",
        "input_download_end_time",
        "output_upload_start_time",
        mode="before",
        check_fields=False,
    )
    @classmethod
    def _time(cls, value: Any) -> datetime | None:
        return to_time(value)

    @field_validator("groups", "tasks", mode="before", check_fields=False)
    @classmethod
    def _list(cls, value: Any) -> Any:
        return [] if value is None else value


class Task(_Timed):
    """``groups[].tasks[]`` of the workflow query. ``exit_code`` follows §4.3 ranges."""

    name: str
    retry_id: int | None = None
    status: str = "UNKNOWN"
    failure_message: str | None = None
    exit_code: int | None = None
    lead: bool | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    scheduling_start_time: datetime | None = None
    processing_start_time: datetime | None = None
    initializing_start_time: datetime | None = None
    input_download_start_time: datetime | None = None
    input_download_end_time: datetime | None = None
    output_upload_start_time: datetime | None = None
    node_name: str | None = None
    pod_name: str | None = None
    dashboard_url: str | None = None
    error_logs: str | None = None  # the URL of the task's error log (non-null only for failed tasks, §3)

    def stages(self) -> list[tuple[str, datetime]]:
        """The stage timestamps the server gave, in order (UTC): processing, scheduling, initializing, input
        download, running, output upload, end."""
        named = [
            ("processing", self.processing_start_time),
            ("scheduling", self.scheduling_start_time),
            ("initializing", self.initializing_start_time),
            ("input download", self.input_download_start_time),
            ("input download done", self.input_download_end_time),
            ("running", self.start_time),
            ("output upload", self.output_upload_start_time),
            ("ended", self.end_time),
        ]
        return [(label, at) for label, at in named if at is not None]


class Group(_Timed):
    """``groups[]`` of the workflow query; ``remaining_upstream_groups`` names groups it waits for."""

    name: str
    status: str = "UNKNOWN"
    failure_message: str | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    remaining_upstream_groups: list[str] | None = None
    downstream_groups: list[str] | None = None
    tasks: list[Task] = Field(default_factory=list)
    #: every retry of every task (``verbose=true``), newest retry first per task; ``tasks`` keeps the latest.
    #: Derived from the response, not a field of it.
    _attempts: list[Task] = PrivateAttr(default_factory=list)

    @property
    def attempts(self) -> list[Task]:
        return self._attempts

    @model_validator(mode="after")
    def _latest_retry(self) -> Group:
        """With ``verbose=true`` the server lists every retry (§3): ``tasks`` keeps each task's latest retry, as
        without it, and ``attempts`` all of them."""
        self._attempts = sorted(self.tasks, key=lambda t: (t.name, -(t.retry_id or 0)))
        latest: dict[str, Task] = {}
        for task in self.tasks:
            kept = latest.get(task.name)
            if kept is None or (task.retry_id or 0) > (kept.retry_id or 0):
                latest[task.name] = task
        if len(latest) != len(self.tasks):
            self.tasks = [t for t in self.tasks if latest.get(t.name) is t]
        return self


class Workflow(_Timed):
    """``GET /api/workflow/{id}`` (``WorkflowQueryResponse``). ``name`` is the workflow ID."""

    name: str
    uuid: str | None = None
    submitted_by: str | None = None
    cancelled_by: str | None = None
    status: str = "UNKNOWN"
    priority: str | None = None
    pool: str | None = None
    backend: str | None = None
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    queued_time: float | None = None
    duration: float | None = None
    exec_timeout: float | None = None
    queue_timeout: float | None = None
    outputs: str | None = None
    overview: str | None = None
    grafana_url: str | None = None
    dashboard_url: str | None = None
    app_name: str | None = None
    groups: list[Group] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)  # label-policy warnings (§3)

    @field_validator("warnings", mode="before")
    @classmethod
    def _warnings(cls, value: Any) -> Any:
        return [str(v) for v in value if v is not None] if isinstance(value, list) else []

    def retries(self, task_name: str) -> list[Task]:
        """Every attempt of ``task_name`` (newest first) when the query listed retries."""
        return [t for g in self.groups for t in g.attempts if t.name == task_name]

    @property
    def tasks(self) -> list[Task]:
        return [t for g in self.groups for t in g.tasks]


class ListEntry(_Timed):
    """One item of ``GET /api/workflow`` (``ListEntry``, §5); ``name`` is the workflow ID."""

    name: str
    user: str | None = None
    status: str = "UNKNOWN"
    priority: str | None = None
    pool: str | None = None
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None
    queued_time: float | None = None
    duration: float | None = None
    overview: str | None = None
    grafana_url: str | None = None
    dashboard_url: str | None = None


class WorkflowList(_Model):
    """``GET /api/workflow`` response: ``workflows`` newest first, ``more_entries`` when paged."""

    workflows: list[ListEntry] = Field(default_factory=list)
    more_entries: bool = False


class ResourceUsage(_Model):
    """GPU counts of a pool (§7.1). ``quota_free`` = quota_limit - quota_used (HIGH/NORMAL only);
    ``total_free`` = allocatable minus all usage over the pool's node set."""

    quota_used: int | None = None
    quota_free: int | None = None
    quota_limit: int | None = None
    total_usage: int | None = None
    total_capacity: int | None = None
    total_free: int | None = None

    @field_validator("*", mode="before")
    @classmethod
    def _int(cls, value: Any) -> int | None:
        return to_int(value)


class Pool(_Model):
    """``PoolResourceUsage``: pool config plus ``resource_usage``; ``status`` is
    ONLINE|OFFLINE|MAINTENANCE."""

    name: str = ""
    status: str | None = None
    backend: str | None = None
    default_platform: str | None = None
    resource_usage: ResourceUsage = Field(default_factory=ResourceUsage)

    @field_validator("resource_usage", mode="before")
    @classmethod
    def _usage(cls, value: Any) -> Any:
        return {} if value is None else value


class NodeSet(_Model):
    pools: list[Pool] = Field(default_factory=list)

    @field_validator("pools", mode="before")
    @classmethod
    def _pools(cls, value: Any) -> Any:
        return [] if value is None else value


class PoolQuota(_Model):
    """``GET /api/pool_quota`` (``PoolResponse``)."""

    node_sets: list[NodeSet] = Field(default_factory=list)
    resource_sum: ResourceUsage | None = None

    @field_validator("node_sets", mode="before")
    @classmethod
    def _node_sets(cls, value: Any) -> Any:
        return [] if value is None else value

    def pools(self) -> list[Pool]:
        return [p for ns in self.node_sets for p in ns.pools]

    def find(self, name: str) -> Pool | None:
        """The pool called ``name`` (a pool without a name never matches)."""
        if not name:
            return None
        return next((p for p in self.pools() if p.name == name), None)


class NodeResources(_Model):
    """One node of ``GET /api/resources`` (``ResourcesEntry``, §7.2)."""

    hostname: str
    backend: str | None = None
    taints: list[Any] = Field(default_factory=list)
    conditions: list[Any] | None = None
    exposed_fields: dict[str, Any] = Field(default_factory=dict)
    usage_fields: dict[str, Any] = Field(default_factory=dict)
    non_workflow_usage_fields: dict[str, Any] = Field(default_factory=dict)
    allocatable_fields: dict[str, Any] = Field(default_factory=dict)
    # Free-form in the spec (``additionalProperties: true``): {pool: {platform: {gpu, cpu, …}}} in practice.
    platform_allocatable_fields: dict[str, Any] | None = None
    pool_platform_labels: dict[str, Any] | None = None

    @field_validator(
        "taints",
        "exposed_fields",
        "usage_fields",
        "non_workflow_usage_fields",
        "allocatable_fields",
        mode="before",
    )
    @classmethod
    def _none_to_empty(cls, value: Any, info: Any) -> Any:
        if value is None:
            return [] if info.field_name == "taints" else {}
        return value

    def pools(self) -> set[str]:
        """Pools this node serves: keys of ``platform_allocatable_fields`` / ``pool_platform_labels``,
        else the ``pool/platform`` entries of ``exposed_fields``."""
        names: set[str] = set((self.platform_allocatable_fields or {}).keys())
        names |= set((self.pool_platform_labels or {}).keys())
        if not names:
            raw = self.exposed_fields.get("pool/platform") or []
            if isinstance(raw, str):
                raw = [raw]
            if isinstance(raw, list):
                names = {item.split("/", 1)[0] for item in raw if isinstance(item, str)}
        return names

    def gpu_free(self, pool: str) -> int | None:
        """Free GPUs for ``pool`` on this node: floor(capacity) - ceil(used) (§7.2), capacity from
        ``platform_allocatable_fields[pool][*].gpu`` (largest platform), else ``allocatable_fields.gpu``;
        used from ``usage_fields.gpu``. None when the node does not serve ``pool`` or has no GPU figure."""
        if pool not in self.pools():
            return None
        capacity: float | None = None
        platforms = (self.platform_allocatable_fields or {}).get(pool)
        for fields in platforms.values() if isinstance(platforms, dict) else ():
            value = _num(fields.get("gpu")) if isinstance(fields, dict) else None
            if value is not None and (capacity is None or value > capacity):
                capacity = value
        if capacity is None:
            capacity = _num(self.allocatable_fields.get("gpu"))
        if capacity is None or capacity <= 0:
            return None
        used = _num(self.usage_fields.get("gpu")) or 0.0
        return max(0, math.floor(capacity) - math.ceil(used))


def _num(value: Any) -> float | None:
    """A finite number from ``8`` / ``"8"`` / ``"1.5"``; None for absent, garbage, NaN or infinity."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(str(value).strip())
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) else None


class TaskRequest(_Model):
    """A task's *requested* resources: an item of ``GET /api/task`` or ``GET /api/workflow/{id}/task/{name}``.

    ``gpu``/``cpu`` are counts; ``memory``/``storage`` are kept as the server sent them (Gi numbers
    or quantities)."""

    task_name: str = Field(validation_alias=AliasChoices("task_name", "name"))
    workflow_id: str | None = None
    retry_id: int | None = None
    status: str | None = None
    node: str | None = None
    gpu: int | None = None
    cpu: float | None = None
    memory: str | None = None
    storage: str | None = None

    @field_validator("gpu", mode="before")
    @classmethod
    def _gpu(cls, value: Any) -> int | None:
        return to_int(value)

    @field_validator("cpu", mode="before")
    @classmethod
    def _cpu(cls, value: Any) -> float | None:
        return _num(value)

    @field_validator("memory", "storage", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str | None:
        """A quantity string as sent (``"64Gi"``); a number (the spec's type) without a trailing ``.0``."""
        if value is None or isinstance(value, bool):
            return None
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return str(value)
