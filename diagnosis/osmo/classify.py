"""OSMO failure categories (FORMAT.md "OSMO categories"): one small pure rule per category.

Each rule takes the :class:`TaskSignals` of one failed task and returns a :class:`Finding`
(category + the direct evidence that decided it) or None. :data:`RULES` is the precedence,
written once: the first rule that fires wins. No rule fires without direct evidence (a status,
an exit code or a quoted message); :func:`classify_task` falls back to ``UNKNOWN``.

Exit-code ranges (osmo-api.md §4.3): 1–255 user container; 256–257 osmo-init; 301–305 waiting
reasons (ImagePullBackOff 301, ErrImagePull 302, ContainerCreateConfigError 303, CrashLoopBackOff
304, ContainerStatusUnknown 305); 1000+ preflight; 2000+ osmo-ctrl (2010–2014 data); 3000–3006
service-assigned; 4000 unknown.

:func:`root_failed_task` picks the task whose failure caused the others (FAILED_UPSTREAM tasks and
group peers that only say "Task <other> Failed." are followers), so a workflow whose failure reached
a task only as FAILED_UPSTREAM gets the category of the upstream task that failed first.

:func:`upstream_groups` and :func:`upload_failure` find a *probable cause* that is not a category
(FORMAT.md): a failing task whose input came from an upstream task that COMPLETED although its
output upload failed (``Upload Failed`` in that task's log) keeps the category of its own signal,
and the report quotes the upstream upload failure.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from diagnosis import kube_text as kt
from diagnosis.osmo.models import Task, Workflow, is_failed
from diagnosis.report import Category
from diagnosis.timeline import Entry as TimelineEntry
from diagnosis.timeline import Timeline

# Kubernetes wording is shared with Run:ai (diagnosis.kube_text); what OSMO adds to it, and why, is said here.
#: An OOM kill in the failure message or events (kt.OOM_KILL), and also a bare ``out of memory``, as OSMO has
#: always read it. Run:ai does not take the bare phrase: it is also the end of ``CUDA out of memory``
#: (kt.CUDA_OOM), the program's own error, never the OOM killer.
OOM_HINT = kt.any_of(kt.OOM_KILL, r"\bout of memory\b")
#: Node trouble behind an eviction (kt.NODE_TROUBLE), and also words OSMO reads only in eviction text (the
#: FAILED_EVICTED / 3004 hint): the pressure condition names (``DiskPressure``), the evicting resource
#: (``ephemeral-storage``), ``node pressure`` and a bare ``NotReady``. Run:ai cannot take these: it also reads
#: texts where they say nothing about a failing node (the scheduler's ``Insufficient ephemeral-storage`` and
#: pod-group reason ``NotReady``, a healthy node's ``NodeHasNoDiskPressure`` event). OSMO's own words come
#: first, so where one of them and a shared phrase match at the same place, the quote stays OSMO's.
NODE_PRESSURE = kt.any_of(
    "|".join(sorted(kt.PRESSURE_CONDITIONS)), r"ephemeral-storage|node pressure|NotReady", kt.NODE_TROUBLE
)
#: The kubelet's CreateContainerConfigError (kt.CONFIG_ERROR), and OSMO's own name for its waiting-reason
#: code 303, ``ContainerCreateConfigError`` (osmo-api.md §4.3).
CONFIG_ERROR = kt.any_of(kt.CONFIG_ERROR, r"ContainerCreateConfigError")
#: What makes an eviction an OOM kill (FORMAT.md "OSMO categories": ``OOMKilled``, exit 137, a memory limit
#: exceeded, in its message or log): the OOM kill itself, ``Exit code 137`` as OSMO's failure message writes it,
#: and a memory limit. In the message and events a bare ``out of memory`` too (:data:`OOM_HINT`); not in the
#: log, where it is the end of the program's own ``CUDA out of memory``.
_EXIT_137 = r"\bexit(?:ed)?(?: with)?(?: code| status)?:?[ \t]*137\b"
_MEMORY_LIMIT = r"\bmemory limit\b|\blimit of memory\b"
EVICTION_OOM_HINT = kt.any_of(OOM_HINT, _EXIT_137, _MEMORY_LIMIT)
EVICTION_OOM_LOG = kt.any_of(kt.OOM_KILL, _EXIT_137, _MEMORY_LIMIT)
#: Logs that show a peer or the network behind a crash (FORMAT.md: "when logs show NCCL/collective timeouts"): a
#: collective timing out or losing its peer (kt.COLLECTIVE_TIMEOUT), an NCCL error, a failed InfiniBand verb. Not
#: every "NCCL" in a log: its version banner and shutdown warnings say nothing failed.
NETWORK_HINT = kt.any_of(
    kt.COLLECTIVE_TIMEOUT,
    r"\bNCCL (?:error|WARN)\b|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclInvalidUsage"
    r"|\bibv_\w+ failed|\bIBV_WC_\w+_ERR\b|RDMA.{0,40}(?:error|failed|timeout)",
)
PEER_MESSAGE = re.compile(r"^\s*Task\s+(\S+)\s+Failed\.?\s*$", re.I)
UPLOAD_FAILED = re.compile(r"\bUpload(?:ing)?\s+Failed\b|\bfailed to upload\b", re.I)


@dataclass(frozen=True)
class TaskSignals:
    """What is known about one failed task: its ``status`` and ``exit_code`` (query JSON),
    ``failure_message``, the workflow ``workflow_status``, and the task's ``events`` and ``log_tail`` text."""

    task: str
    status: str
    exit_code: int | None
    failure_message: str
    workflow_status: str
    events: str = ""
    log_tail: str = ""

    @property
    def hint_text(self) -> str:
        """Scheduler/listener text (failure message + events), where OOM or node hints appear."""
        return f"{self.failure_message}\n{self.events}"


@dataclass(frozen=True)
class Finding:
    """A category with the direct evidence that decided it (``signal``: quoted raw value)."""

    category: Category
    signal: str
    detail: str = ""


def _has(s: TaskSignals, *statuses: str) -> bool:
    return s.status in statuses or s.workflow_status in statuses


def _exit_in(s: TaskSignals, low: int, high: int) -> bool:
    return s.exit_code is not None and low <= s.exit_code <= high


def _exit(s: TaskSignals) -> str:
    return f"exit code {s.exit_code}"


def canceled(s: TaskSignals) -> Finding | None:
    """FAILED_CANCELED: the status decides (exit 143 with it is the cancel's SIGTERM)."""
    return Finding(Category.CANCELED, "FAILED_CANCELED") if _has(s, "FAILED_CANCELED") else None


def timeout(s: TaskSignals) -> Finding | None:
    """FAILED_EXEC_TIMEOUT / FAILED_QUEUE_TIMEOUT: the status decides (``cancelled_by`` is only reported)."""
    for status in ("FAILED_EXEC_TIMEOUT", "FAILED_QUEUE_TIMEOUT"):
        if _has(s, status):
            return Finding(Category.TIMEOUT, status)
    return None


def preempted(s: TaskSignals) -> Finding | None:
    """FAILED_PREEMPTED or exit 3006."""
    if s.status == "FAILED_PREEMPTED" or s.exit_code == 3006:
        return Finding(Category.PREEMPTED, "FAILED_PREEMPTED" if s.status == "FAILED_PREEMPTED" else _exit(s))
    return None


def gpu_fault(s: TaskSignals) -> Finding | None:
    """A GPU hardware fault (a hardware Xid, an uncorrectable ECC error, a GPU fallen off the bus) in the task's
    failure message, events or log: NODE_FAILURE, over any exit code, 137 included, unless the container is
    reported OOMKilled (FORMAT.md "OSMO categories")."""
    if kt.OOM_KILL.search(s.hint_text):
        return None
    fault = kt.gpu_hardware_fault(s.hint_text) or kt.gpu_hardware_fault(s.log_tail)
    return Finding(Category.NODE_FAILURE, fault) if fault else None


def _evicted(s: TaskSignals) -> bool:
    return s.status == "FAILED_EVICTED" or s.exit_code == 3004


def oom(s: TaskSignals) -> Finding | None:
    """Exit 137 (OSMO's guide reads it as OOM), or FAILED_EVICTED / 3004 with an OOM hint in its message, events
    or log (:data:`EVICTION_OOM_HINT`, :data:`EVICTION_OOM_LOG`). OSMO gives 3004 to every eviction, so one
    without a hint is the node's (:func:`node_failure`)."""
    if s.exit_code == 137:
        return Finding(Category.OOM_KILLED, _exit(s))
    if _evicted(s):
        for pattern, text in ((EVICTION_OOM_HINT, s.hint_text), (EVICTION_OOM_LOG, s.log_tail)):
            m = pattern.search(text)
            if m and not kt.CUDA_OOM.search(m.group(0)):
                return Finding(Category.OOM_KILLED, m.group(0))
    return None


def image_pull(s: TaskSignals) -> Finding | None:
    """FAILED_IMAGE_PULL, or exit 301 (ImagePullBackOff) / 302 (ErrImagePull)."""
    if s.status == "FAILED_IMAGE_PULL":
        return Finding(Category.IMAGE_PULL_FAILED, "FAILED_IMAGE_PULL")
    if s.exit_code in (301, 302):
        return Finding(Category.IMAGE_PULL_FAILED, _exit(s))
    return None


def init_failed(s: TaskSignals) -> Finding | None:
    """Exit 256–257: osmo-init (inputs, mounts) failed, so the user code never ran."""
    return Finding(Category.INIT_FAILED, _exit(s)) if _exit_in(s, 256, 257) else None


def data_failed(s: TaskSignals) -> Finding | None:
    """Exit 2010–2014: download, mount, upload, data authorization check, data access unauthorized."""
    return Finding(Category.DATA_FAILED, _exit(s)) if _exit_in(s, 2010, 2014) else None


def start_failed(s: TaskSignals) -> Finding | None:
    """FAILED_START_ERROR / 3003, FAILED_START_TIMEOUT / 3005, exit 303, preflight 1000–1999, or a
    backend error caused by CreateContainerConfigError."""
    for status in ("FAILED_START_ERROR", "FAILED_START_TIMEOUT"):
        if s.status == status:
            return Finding(Category.START_FAILED, status)
    if s.exit_code in (303, 3003, 3005) or _exit_in(s, 1000, 1999):
        return Finding(Category.START_FAILED, _exit(s))
    m = CONFIG_ERROR.search(s.hint_text)
    if (s.status == "FAILED_BACKEND_ERROR" or s.exit_code == 3001) and m:
        return Finding(Category.START_FAILED, m.group(0))
    return None


def node_failure(s: TaskSignals) -> Finding | None:
    """FAILED_BACKEND_ERROR / 3001, exit 305 (ContainerStatusUnknown), or FAILED_EVICTED / 3004 without an
    OOM hint (a disk or node pressure, a drain: the pressure is quoted when the message names one)."""
    if s.status == "FAILED_BACKEND_ERROR" or s.exit_code == 3001:
        return Finding(
            Category.NODE_FAILURE, "FAILED_BACKEND_ERROR" if s.status == "FAILED_BACKEND_ERROR" else _exit(s)
        )
    if s.exit_code == 305:
        return Finding(Category.NODE_FAILURE, _exit(s))
    if _evicted(s):
        m = NODE_PRESSURE.search(s.hint_text)
        return Finding(
            Category.NODE_FAILURE, m.group(0) if m else s.status if s.status == "FAILED_EVICTED" else _exit(s)
        )
    return None


def server_error(s: TaskSignals) -> Finding | None:
    """FAILED_SERVER_ERROR / 3002, and osmo-ctrl codes other than the data range (2002, 2020–2040, …)."""
    if _has(s, "FAILED_SERVER_ERROR"):
        return Finding(Category.SERVER_ERROR, "FAILED_SERVER_ERROR")
    if s.exit_code == 3002 or _exit_in(s, 2000, 2999):
        return Finding(Category.SERVER_ERROR, _exit(s))
    return None


def app_crash(s: TaskSignals) -> Finding | None:
    """User exit 1–255 other than 137, or 304 (CrashLoopBackOff): the program itself failed.
    Names a peer or network cause when the logs show NCCL/collective timeouts."""
    if _exit_in(s, 1, 255) or s.exit_code == 304:
        m = NETWORK_HINT.search(s.log_tail)
        return Finding(Category.CRASH_APP_ERROR, _exit(s), "NCCL" if m else "")
    return None


def upstream(s: TaskSignals) -> Finding | None:
    """FAILED_UPSTREAM / 3000, used only when no upstream root failure can be seen."""
    if s.status == "FAILED_UPSTREAM" or s.exit_code == 3000:
        return Finding(Category.UPSTREAM_FAILED, "FAILED_UPSTREAM" if s.status == "FAILED_UPSTREAM" else _exit(s))
    return None


Rule = Callable[[TaskSignals], Finding | None]

# Precedence, strongest direct signal first. Statuses that name who ended the task (cancel,
# timeout, preemption) outrank the exit code they leave behind (143, 137).
RULES: tuple[Rule, ...] = (
    canceled,
    timeout,
    preempted,
    gpu_fault,
    oom,
    image_pull,
    init_failed,
    data_failed,
    start_failed,
    node_failure,
    server_error,
    app_crash,
    upstream,
)


def classify_task(signals: TaskSignals) -> Finding:
    """The first rule of :data:`RULES` that fires, else ``UNKNOWN`` (exit 4000 or nothing above)."""
    for rule in RULES:
        finding = rule(signals)
        if finding is not None:
            return finding
    signal = _exit(signals) if signals.exit_code is not None else signals.status
    return Finding(Category.UNKNOWN, signal)


def _follower(task: Task) -> bool:
    """A task that failed only because another did: FAILED_UPSTREAM / 3000, or a group peer whose
    message just says "Task <other> Failed." with no exit code of its own."""
    if task.status == "FAILED_UPSTREAM" or task.exit_code == 3000:
        return True
    m = PEER_MESSAGE.match(task.failure_message or "")
    return m is not None and m.group(1) != task.name and task.exit_code is None


def failed_tasks(workflow: Workflow) -> list[Task]:
    return [t for t in workflow.tasks if is_failed(t.status)]


def root_failed_task(workflow: Workflow) -> Task | None:
    """The failed task that failed first among those with their own failure (not followers);
    None when only followers (or no failed tasks) are visible (:func:`task_timeline`)."""
    first = task_timeline(workflow).first()
    return next((t for t in failed_tasks(workflow) if first is not None and t.name == first.subject), None)


def task_timeline(workflow: Workflow) -> Timeline:
    """The failed tasks as an incident timeline (:mod:`diagnosis.timeline`, the one first-failure rule): a
    follower (FAILED_UPSTREAM, a peer's "Task x Failed.") is not a failure of its own; among own failures a task
    a peer of its group names comes first in that group, then one that reported an exit code, then the earliest
    end; ties keep query order."""
    failed = failed_tasks(workflow)
    group_of = {id(t): g.name for g in workflow.groups for t in g.tasks}
    # A peer message ("Task trainer-1 Failed.") points at its own group's root directly; it says nothing about
    # another group, whose own failure may have come first (an independent group fails on its own clock).
    named: dict[str | None, set[str]] = {}
    for t in failed:
        if m := PEER_MESSAGE.match(t.failure_message or ""):
            named.setdefault(group_of.get(id(t)), set()).add(m.group(1))
    entries = []
    for t in failed:
        in_group = named.get(group_of.get(id(t)))
        rank = (0 if not in_group or t.name in in_group else 2) + (0 if t.exit_code is not None else 1)
        what = t.status + (f" (exit {t.exit_code})" if t.exit_code is not None else "")
        entries.append(
            TimelineEntry(t.name, _utc(t.end_time), what, source="workflow query", own=not _follower(t), rank=rank)
        )
    return Timeline.of(entries)


def _utc(at: datetime | None) -> datetime | None:
    """OSMO's times without a zone are UTC."""
    return at.replace(tzinfo=UTC) if at is not None and at.tzinfo is None else at


def upstream_groups(workflow: Workflow, task: Task) -> list[str]:
    """Names of the groups whose outputs feed ``task``'s group: those that list it in
    ``downstream_groups``, and the ones it still names in ``remaining_upstream_groups``."""
    group = next((g for g in workflow.groups if any(t is task for t in g.tasks)), None)
    if group is None:
        return []
    names = [g.name for g in workflow.groups if g is not group and group.name in (g.downstream_groups or [])]
    names += [n for n in group.remaining_upstream_groups or [] if n not in names and n != group.name]
    return names


def upload_failure(log_text: str) -> str | None:
    """The first line of a task's log saying its output upload failed (``Upload Failed``), verbatim."""
    for line in log_text.splitlines():
        if UPLOAD_FAILED.search(line):
            return line.strip()
    return None


def confidence(finding: Finding) -> tuple[str, list[str]]:
    """How directly ``finding`` rests on its evidence (issue 8 §5): ``none`` for UNKNOWN; ``inferred`` when the
    category is read from another task (UPSTREAM_FAILED) or from a plain program exit code (1-255: the program
    failed, but nothing says how); ``direct`` when a status or an OSMO code names it by itself."""
    basis = [finding.signal] if finding.signal else []
    if finding.category == Category.UNKNOWN:
        return "none", basis
    plain_exit = finding.category == Category.CRASH_APP_ERROR and not re.search(r"FAILED_[A-Z_]+", finding.signal)
    if finding.category == Category.UPSTREAM_FAILED or plain_exit:
        return "inferred", basis
    return "direct", basis
