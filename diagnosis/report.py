"""The report model: one answer to one question, rendered as text, JSON or Block Kit elsewhere.

Every string field is passed through :func:`diagnosis.redact.sanitize` when the model is
built, so nothing unredacted can reach a renderer, a log line or the cache
(issue "Report": redaction in every string before rendering, logging or caching).

Outcomes and categories are the ones of ``shared/cases/FORMAT.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SerializeAsAny, field_validator, model_validator

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


class SystemPart(_Sanitized):
    """The base of a system's own part of an :class:`Identity` (its ``detail``): ``system`` tells them apart.
    A backend's part is a subclass with ``system: Literal["<name>"]`` (:attr:`diagnosis.backends.Backend.identity`).
    ``recurring_rows``: whether a digest names this system's rows flagged ``recurring`` (a system whose scan counts
    occurrences of a cause: Run:ai's), kept here because the digest model reads it and imports only leaves."""

    recurring_rows: ClassVar[bool] = False
    system: str


class RunaiIdentity(SystemPart):
    """The Run:ai part of an :class:`Identity`: where the workload runs (absent values stay None)."""

    recurring_rows: ClassVar[bool] = True
    system: Literal["runai"] = "runai"
    cluster_name: str | None = None
    cluster_id: str | None = None
    project: str | None = None
    namespace: str | None = None
    workload_type: str | None = None


class OsmoIdentity(SystemPart):
    """The OSMO part of an :class:`Identity`: the pool the workflow runs in and who submitted it."""

    system: Literal["osmo"] = "osmo"
    pool: str | None = None
    user: str | None = None


#: The systems a report may name, each with the class of its identity's own part. Filled from the backend registry
#: (:func:`diagnosis.backends.register` adds a backend's :attr:`~diagnosis.backends.Backend.identity`); the two
#: built-in parts are here so that a report reads back before the registry is imported (a cached report).
SYSTEMS: dict[str, type[SystemPart]] = {"runai": RunaiIdentity, "osmo": OsmoIdentity}


def known_system(system: str) -> str:
    """``system`` when it is a registered system (:data:`SYSTEMS`); raises ``ValueError`` otherwise (a pydantic
    validator turns it into a validation error)."""
    if system not in SYSTEMS:
        raise ValueError(f"unknown system {system!r} (registered: {', '.join(SYSTEMS)})")
    return system


def system_part(data: Any) -> Any:
    """The identity part ``data`` as its system's class (:data:`SYSTEMS`): a dict with ``system`` is validated
    by that system's class; anything else is returned as it is (an instance, None)."""
    if isinstance(data, dict):
        return SYSTEMS[known_system(str(data.get("system")))].model_validate(data)
    return data


#: Keys of the flat identity of earlier versions, accepted on input (a cached report, a keyword argument):
#: each goes to the common part or to the system's part (see :meth:`Identity._from_flat`).
_FLAT_RUNAI = ("cluster_name", "cluster_id", "project", "namespace", "workload_type")
_FLAT_OSMO = ("pool", "user")
_FLAT_COMMON = {"workload_name": "name", "workload_id": "id", "workflow_id": "id", "status": "phase"}


class Identity(_Sanitized):
    """What was diagnosed: the fields every system has, plus the system's own part (``detail``).

    ``name`` is what a person calls it (a Run:ai workload name; an OSMO workflow ID), ``id`` what the API calls
    it (a Run:ai workload UUID; the OSMO workflow ID again), ``phase`` its state (a Run:ai phase such as
    ``"Failed"``; an OSMO status such as ``"FAILED_EXEC_TIMEOUT"``), ``phase_updated_at`` when that state began
    (UTC, when known). Absent values stay None (never invented).

    It may be built with the flat keywords of earlier versions (``workload_name=``, ``workflow_id=``,
    ``cluster_id=``, ``pool=``, ``status=``, ...), and the same names read back as properties, so callers that
    speak one system's terms keep working; the JSON is the nested shape (README "The JSON report")."""

    system: str
    name: str | None = None
    id: str | None = None
    phase: str | None = None
    phase_updated_at: datetime | None = None
    detail: SerializeAsAny[SystemPart] | None = None

    def __init__(
        self,
        *,
        system: str,
        name: str | None = None,
        id: str | None = None,
        phase: str | None = None,
        phase_updated_at: datetime | None = None,
        detail: SystemPart | dict[str, Any] | None = None,
        # The flat keywords, in the terms of one system (mapped by _from_flat).
        workload_name: str | None = None,
        workload_id: str | None = None,
        workload_type: str | None = None,
        cluster_name: str | None = None,
        cluster_id: str | None = None,
        project: str | None = None,
        namespace: str | None = None,
        workflow_id: str | None = None,
        status: str | None = None,
        pool: str | None = None,
        user: str | None = None,
    ) -> None:
        # Only the keywords given: an absent one must not hide the value another keyword maps to.
        given = {k: v for k, v in locals().items() if k not in ("self", "__class__") and v is not None}
        super().__init__(**given)

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, data: Any) -> Any:
        """Map the flat keywords (``workload_name``, ``status``, ``cluster_id``, ...) onto the nested shape."""
        if not isinstance(data, dict):
            return data
        if not any(k in data for k in (*_FLAT_COMMON, *_FLAT_RUNAI, *_FLAT_OSMO)):
            # The system's part is always there (empty when nothing of it is known), so readers need no None case.
            return data if data.get("detail") is not None else {**data, "detail": {"system": data.get("system")}}
        out = {k: v for k, v in data.items() if k not in (*_FLAT_COMMON, *_FLAT_RUNAI, *_FLAT_OSMO)}
        system = data.get("system")
        if system == "osmo":
            # An OSMO workflow's ID is also the name a person uses for it.
            out.setdefault("id", data.get("workflow_id"))
            out.setdefault("name", data.get("workflow_id"))
            out.setdefault("phase", data.get("status"))
            out.setdefault("detail", {"system": "osmo", **{k: data.get(k) for k in _FLAT_OSMO}})
        else:
            out.setdefault("id", data.get("workload_id"))
            out.setdefault("name", data.get("workload_name"))
            out.setdefault("detail", {"system": "runai", **{k: data.get(k) for k in _FLAT_RUNAI}})
        return out

    @field_validator("system")
    @classmethod
    def _system(cls, system: str) -> str:
        return known_system(system)

    @field_validator("detail", mode="before")
    @classmethod
    def _detail(cls, data: Any) -> Any:
        return system_part(data)

    def _runai(self) -> RunaiIdentity | None:
        return self.detail if isinstance(self.detail, RunaiIdentity) else None

    def _osmo(self) -> OsmoIdentity | None:
        return self.detail if isinstance(self.detail, OsmoIdentity) else None

    # Run:ai terms (None for another system's identity).
    @property
    def workload_name(self) -> str | None:
        return self.name if self.system == "runai" else None

    @property
    def workload_id(self) -> str | None:
        return self.id if self.system == "runai" else None

    @property
    def cluster_name(self) -> str | None:
        part = self._runai()
        return part.cluster_name if part else None

    @property
    def cluster_id(self) -> str | None:
        part = self._runai()
        return part.cluster_id if part else None

    @property
    def project(self) -> str | None:
        part = self._runai()
        return part.project if part else None

    @property
    def namespace(self) -> str | None:
        part = self._runai()
        return part.namespace if part else None

    @property
    def workload_type(self) -> str | None:
        part = self._runai()
        return part.workload_type if part else None

    # OSMO terms (None for another system's identity).
    @property
    def workflow_id(self) -> str | None:
        return self.id if self.system == "osmo" else None

    @property
    def status(self) -> str | None:
        return self.phase if self.system == "osmo" else None

    @property
    def pool(self) -> str | None:
        part = self._osmo()
        return part.pool if part else None

    @property
    def user(self) -> str | None:
        part = self._osmo()
        return part.user if part else None


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


class TimelineEntry(_Sanitized):
    """One termination of the incident timeline (:mod:`diagnosis.timeline`) as reported: ``subject`` (a pod or a
    task) ended at ``at`` (UTC, None when not known) with ``what`` (``"OOMKilled (exit 137)"``), read from
    ``source``; ``first`` marks the failure that decided; ``own`` is False for a consequence of an earlier
    failure (a peer's cleanup exit, a collective timeout, an upstream-failed task), True for a subject's own
    failure (a later one is another failure, e.g. a Job's retry, not a consequence)."""

    subject: str
    at: datetime | None = None
    what: str
    container: str | None = None
    source: str = ""
    first: bool = False
    own: bool = True
    #: False for context of the run that is not a failure (a phase update of the workload)
    failure: bool = True


class NeighbourWorkload(_Sanitized):
    """Another workload with pods that failed on the node of the first failure: its ``name`` and ``project``,
    how many of its ``pods`` failed there in the window, and the earliest of their failures (``at``, UTC)."""

    name: str
    project: str | None = None
    pods: int = 1
    at: datetime | None = None


class Neighbours(_Sanitized):
    """Supporting evidence, never the cause by itself (issue 19 §2): the other workloads whose pods on ``node`` (the
    node of ``pod``, the first failing pod) failed within ``window_minutes`` either side of its failure at
    ``around`` (UTC), read in one bounded call (``source``). ``workloads`` are the ones named; ``hidden`` counts
    those in projects the asker may not see (counted, never named: :meth:`seen_by`); ``more``: the call's page was
    full, so there may be more. Read when that node shows a node fault or the cause is UNKNOWN."""

    node: str
    pod: str | None = None
    around: datetime
    window_minutes: int = 15
    workloads: list[NeighbourWorkload] = Field(default_factory=list)
    hidden: int = 0
    more: bool = False
    source: str = ""

    @property
    def count(self) -> int:
        """How many other workloads, named or not."""
        return len(self.workloads) + self.hidden

    def seen_by(self, may_see: Callable[[str | None], bool]) -> Neighbours:
        """The same, with only the workloads whose project ``may_see`` accepts named; the others counted in
        ``hidden`` (a project that is not known is one the asker may see only where every project is allowed)."""
        named = [w for w in self.workloads if may_see(w.project)]
        hidden = self.hidden + len(self.workloads) - len(named)
        return self.model_copy(update={"workloads": named, "hidden": hidden})


class Report(_Sanitized):
    """One answer. ``headline`` is the verdict sentence shown first; ``system`` a registered system
    (:data:`SYSTEMS`)."""

    system: str
    outcome: Outcome
    category: Category | None = None
    headline: str
    identity: Identity | None = None
    evidence: list[EvidenceItem] = Field(default_factory=list)
    recurrence: Recurrence | None = None
    #: the incident timeline of a failure with several pods or tasks, ordered by time (empty otherwise)
    timeline: list[TimelineEntry] = Field(default_factory=list)
    #: other workloads' pods that failed on the node of the first failure around it: supporting evidence only
    neighbours: Neighbours | None = None
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
    #: what the person named (a workload name or id, a workflow ID) when nothing was identified (a follow-up
    #: question, not found): the header names it as typed, never "the workload"
    subject: str | None = None
    #: this answer's reference (issue 28: a vote on its card finds the answer and its world by it); never in an output
    _answer_ref: str | None = PrivateAttr(default=None)

    @property
    def answer_ref(self) -> str | None:
        return self._answer_ref

    @field_validator("system")
    @classmethod
    def _system(cls, system: str) -> str:
        return known_system(system)

    def with_answer_ref(self, ref: str | None) -> Report:
        """A copy carrying the reference ``ref`` (copies made from it keep it)."""
        out = self.model_copy()
        out._answer_ref = ref
        return out

    def question_rest(self) -> str | None:
        """The follow-up question without what the headline already says (a question appears once per message):
        a needs-input headline is the question's first sentence."""
        if not self.question:
            return None
        if self.question.startswith(self.headline):
            rest = self.question[len(self.headline) :].strip()
            return rest or None
        return self.question

    @property
    def recurring(self) -> bool:
        return self.recurrence is not None and self.recurrence.recurring

    def seen_by(self, may_see: Callable[[str | None], bool]) -> Report:
        """The report as an asker sees it: other workloads are named only in projects ``may_see`` accepts (the
        access policy for that asker), the others only counted (:meth:`Neighbours.seen_by`)."""
        if self.neighbours is None:
            return self
        return self.model_copy(update={"neighbours": self.neighbours.seen_by(may_see)})

    @property
    def occurrences(self) -> int:
        return self.recurrence.count if self.recurrence is not None else 0
