"""The report model: one answer to one question, rendered as text, JSON or Block Kit elsewhere.

Every string field is passed through :func:`diagnosis.redact.sanitize` when the model is
built, so nothing unredacted can reach a renderer, a log line or the cache
(issue "Report": redaction in every string before rendering, logging or caching).

Outcomes and categories are the ones of ``shared/cases/FORMAT.md``.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from diagnosis.redact import sanitize_obj


class Outcome(StrEnum):
    """What kind of answer this is (FORMAT.md "Outcomes")."""

    # Run:ai
    DIAGNOSED = "diagnosed"
    NEEDS_INPUT = "needs_input"
    NOT_FOUND = "not_found"
    CLUSTER_MISMATCH = "cluster_mismatch"
    ROUTE_PREEMPTED = "route_preempted"
    ROUTE_PENDING = "route_pending"
    SUCCEEDED = "succeeded"
    OUT_OF_SCOPE = "out_of_scope"
    ASK_PAST_RUN = "ask_past_run"
    PHASE_ONLY = "phase_only"
    # OSMO
    STATUS = "status"
    PENDING_QUOTA = "pending_quota"
    PENDING_CAPACITY = "pending_capacity"
    PENDING_FRAGMENTATION = "pending_fragmentation"
    PENDING_CONSTRAINT = "pending_constraint"
    POOL_UNAVAILABLE = "pool_unavailable"
    FAILED = "failed"
    # Either system: the question could not be answered (settings, unreachable API).
    ERROR = "error"


class Category(StrEnum):
    """Root-cause categories (Run:ai taxonomy plus the OSMO house categories)."""

    OOM_KILLED = "OOM_KILLED"
    IMAGE_PULL_FAILED = "IMAGE_PULL_FAILED"
    INIT_FAILED = "INIT_FAILED"
    DATASOURCE_MOUNT_FAILED = "DATASOURCE_MOUNT_FAILED"
    CRASH_APP_ERROR = "CRASH_APP_ERROR"
    NODE_FAILURE = "NODE_FAILURE"
    SCHEDULING_POLICY_TERMINATED = "SCHEDULING_POLICY_TERMINATED"
    UNKNOWN = "UNKNOWN"
    # OSMO only
    DATA_FAILED = "DATA_FAILED"
    START_FAILED = "START_FAILED"
    PREEMPTED = "PREEMPTED"
    TIMEOUT = "TIMEOUT"
    CANCELED = "CANCELED"
    UPSTREAM_FAILED = "UPSTREAM_FAILED"
    SERVER_ERROR = "SERVER_ERROR"


class _Sanitized(BaseModel):
    """Base: ignores unknown fields and sanitizes every incoming string."""

    model_config = ConfigDict(extra="ignore")

    @model_validator(mode="before")
    @classmethod
    def _sanitize(cls, data: Any) -> Any:
        return sanitize_obj(data) if isinstance(data, dict) else data


class EvidenceItem(_Sanitized):
    """One quantified fact with where it came from.

    ``label``: short name ("exit code", "memory limit"); ``value``: the raw value quoted verbatim
    ("137", "OOMKilled", "32Gi (34359738368 bytes, 32.0 GiB)"); ``source``: the call it came from
    ("GET /api/v1/workloads/{id}/history"); ``at``: UTC time of the fact when known.
    """

    label: str
    value: str
    source: str
    at: datetime | None = None


class Gap(_Sanitized):
    """Something that could not be seen: ``what`` (e.g. "previous logs") and ``why`` (e.g. "HTTP 403")."""

    what: str
    why: str


class Link(_Sanitized):
    """A link to a real console (Run:ai, Grafana, Kubernetes dashboard)."""

    label: str
    url: str


class Excerpt(_Sanitized):
    """A block of untrusted text quoted as evidence (log tail, event list), already redacted."""

    title: str
    text: str
    source: str


class Table(_Sanitized):
    """A small table (e.g. a list of OSMO workflows); every cell is a string."""

    title: str
    columns: list[str]
    rows: list[list[str]]


class Choice(_Sanitized):
    """One answer offered for a follow-up question: ``field`` is the parameter it fills."""

    label: str
    field: str
    value: str


class Identity(_Sanitized):
    """What was diagnosed. Run:ai fields or OSMO fields; absent values stay None (never invented)."""

    system: Literal["runai", "osmo"]
    cluster_name: str | None = None
    cluster_id: str | None = None
    project: str | None = None
    namespace: str | None = None
    workload_name: str | None = None
    workload_id: str | None = None
    workload_type: str | None = None
    phase: str | None = None
    phase_updated_at: datetime | None = None
    workflow_id: str | None = None
    pool: str | None = None
    status: str | None = None
    user: str | None = None


class Recurrence(_Sanitized):
    """Failures of the same category inside the lookback (UTC timestamps, newest last)."""

    category: str | None
    count: int
    lookback_seconds: int
    occurrences: list[datetime] = Field(default_factory=list)

    @property
    def recurring(self) -> bool:
        return self.count >= 2


def lookback_phrase(seconds: int) -> str:
    """``604800`` -> ``"7 days"``, ``129600`` -> ``"36 hours"``."""
    if seconds % 86400 == 0 and seconds >= 86400:
        days = seconds // 86400
        return f"{days} day" + ("s" if days != 1 else "")
    hours = max(1, round(seconds / 3600))
    return f"{hours} hour" + ("s" if hours != 1 else "")


def recurrence_phrase(rec: Recurrence) -> str:
    """``"failed 2 times in the last 7 days"`` (issue 13 §2: a count of failures, not "occurrence(s)")."""
    times = "once" if rec.count == 1 else f"{rec.count} times"
    return f"failed {times} in the last {lookback_phrase(rec.lookback_seconds)}"


_SOURCE_LABELS: tuple[tuple[str, str], ...] = (
    ("kubectl describe pod", "pod status"),
    ("kubectl describe node", "node status"),
    ("kubectl get events", "events"),
    ("kubectl logs", "kubectl logs"),
    ("/events", "events"),
    ("/history", "history"),
    ("/pods", "pods"),
    ("/metrics", "metrics"),
    ("/api/v1/workloads/", "workload status"),
    ("logs of task", "task logs"),
    ("/logs", "workflow logs"),
    ("/api/pool_quota", "pool quota"),
    ("/api/resources", "resources"),
    ("/api/task", "task status"),
    ("/api/workflow", "workflow status"),
)


def source_label(source: str) -> str:
    """A short label for the call a fact came from (``GET /api/v1/workloads/{id}/events`` -> ``events``);
    the full call stays in the evidence item."""
    for needle, label in _SOURCE_LABELS:
        if needle in source:
            return label
    return source.split(" (")[0]


class Confidence(_Sanitized):
    """How directly the evidence supports the verdict (issue 8 §5).

    ``level``: ``direct`` (one signal names the category by itself), ``inferred`` (the verdict follows from
    several signals together, or from an exit code), ``none`` (no cause: UNKNOWN, or not a diagnosis);
    ``signals``: the signals it rests on, as short verbatim phrases ("reason OOMKilled (pod status)")."""

    level: Literal["direct", "inferred", "none"]
    signals: list[str] = Field(default_factory=list)


class Report(_Sanitized):
    """One answer. ``headline`` is the verdict sentence shown first."""

    system: Literal["runai", "osmo"]
    outcome: Outcome
    category: Category | None = None
    headline: str
    identity: Identity | None = None
    evidence: list[EvidenceItem] = Field(default_factory=list)
    recurrence: Recurrence | None = None
    next_action: str | None = None
    confidence: Confidence | None = None
    notes: list[str] = Field(default_factory=list)
    gaps: list[Gap] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    excerpts: list[Excerpt] = Field(default_factory=list)
    tables: list[Table] = Field(default_factory=list)
    question: str | None = None
    missing: list[str] = Field(default_factory=list)
    choices: list[Choice] = Field(default_factory=list)
    generated_at: datetime | None = None

    @property
    def recurring(self) -> bool:
        return self.recurrence is not None and self.recurrence.recurring

    @property
    def occurrences(self) -> int:
        return self.recurrence.count if self.recurrence is not None else 0
