"""OSMO's categories and PENDING verdicts, one entry each (issue 10 §1): everything a report says about a
category is read from here, never from a table elsewhere.

A failed workflow's entry (:class:`OsmoCategory`, keyed by :class:`~diagnosis.report.Category` in
:data:`CATEGORIES`) holds the rule of :mod:`diagnosis.osmo.classify` that names it, the plain-language
clause of the verdict, an optional detail sentence and headline variant, and the next action. A PENDING
verdict's entry (:class:`PendingVerdict`, keyed by :class:`~diagnosis.report.Outcome` in :data:`PENDING`)
holds the rule of :mod:`diagnosis.osmo.pending` and its headline and next action. Phrases are pure
functions of plain facts (:class:`FailedFacts`, :class:`PendingFacts`), so the wording is tested without
HTTP.

Adding a category is one :class:`OsmoCategory` here, its enum value, and its rule in
:data:`diagnosis.osmo.classify.RULES` (the precedence); ``tests/diagnosis/test_category_registry.py`` fails
when a category lacks any of its texts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from diagnosis.osmo import classify, pending
from diagnosis.report import Category, Outcome

# -- failed workflows ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FailedFacts:
    """What the verdict of a failed workflow is phrased from (all plain strings, already decided).

    ``workflow``/``status``: the workflow's name and status; ``who``: ``"task train"`` or ``"the
    workflow"``; ``how``: ``"FAILED with exit code 1"``; ``task``: the task that failed first (None when
    none is visible); ``exit_code``: its exit code; ``signal``/``detail``: the :class:`~diagnosis.osmo.
    classify.Finding`'s quoted signal and detail (``"NCCL"``); ``error``: the log's exception line (raw,
    with its timestamp prefix); ``memory``: the task's memory request (``"16Gi"``); ``image``: the image
    named by the failure message or events."""

    workflow: str
    status: str
    who: str
    how: str
    task: str | None = None
    exit_code: int | None = None
    signal: str = ""
    detail: str = ""
    error: str | None = None
    memory: str | None = None
    image: str | None = None


Phrase = Callable[[FailedFacts], str]
MaybePhrase = Callable[[FailedFacts], str | None]


def _no_detail(_: FailedFacts) -> str:
    return ""


def _no_variant(_: FailedFacts) -> str | None:
    return None


@dataclass(frozen=True)
class OsmoCategory:
    """One OSMO failure category: ``rule`` (the :mod:`~diagnosis.osmo.classify` rule that names it; None for
    UNKNOWN, the fallback; ``also``: others that name it elsewhere in the precedence), ``plain`` (the verdict's
    plain-language clause), ``detail`` (a sentence added after the verdict, may be empty), ``variant`` (a whole
    headline when the facts call for one, else None), ``next_action``, and ``emoji``/``title`` (its words on the
    card and in the text; the registry test fails while either is empty)."""

    category: Category
    rule: classify.Rule | None
    plain: str
    next_action: Phrase
    detail: Phrase = _no_detail
    variant: MaybePhrase = _no_variant
    #: the category's words on the card's header and the text's first line
    emoji: str = ""
    title: str = ""
    #: rules that name this category too, at another place in the precedence (a GPU hardware fault before OOM)
    also: tuple[classify.Rule, ...] = ()

    def headline(self, f: FailedFacts) -> str:
        """``"Workflow w-1 is FAILED: task train failed first (FAILED with exit code 1); <plain>."`` plus the
        detail, or the variant when there is one."""
        special = self.variant(f)
        if special is not None:
            return special
        return f"Workflow {f.workflow} is {f.status}: {f.who} failed first ({f.how}); {self.plain}." + self.detail(f)


def _oom_detail(f: FailedFacts) -> str:
    # The exit code is added only when the signal does not already quote it ("exit code 137").
    exit_part = f"; exit code {f.exit_code}." if f.exit_code is not None and str(f.exit_code) not in f.signal else "."
    return f" Signal: {f.signal}" + exit_part


def _crash_detail(f: FailedFacts) -> str:
    return f" Last error: {f.error.split('] ', 1)[-1].strip()}" if f.error else ""


def _nccl_variant(f: FailedFacts) -> str | None:
    if f.detail != "NCCL":
        return None
    return (
        f"Workflow {f.workflow} is {f.status}: {f.who} broke first ({f.how}) after an NCCL collective timeout; "
        "a peer rank or the inter-GPU network stalled, and the other tasks failed after it."
    )


def _task_s(f: FailedFacts) -> str:
    """``"task train's"``, or ``"the task's"`` when no task is named (never "task None's")."""
    return f"task {f.task}'s" if f.task else "the task's"


def _oom_action(f: FailedFacts) -> str:
    return (
        f"Raise {_task_s(f)} memory request"
        + (f" (now {f.memory})" if f.memory else "")
        + " (double it, or peak usage + 20%), or shrink the batch/buffer size, then resubmit."
    )


def _image_action(f: FailedFacts) -> str:
    img = f" {f.image}" if f.image else ""
    return (
        f"Verify that the image{img} exists and that a registry credential for it is set in "
        "OSMO (`osmo credential set … --type REGISTRY`, not in the task YAML); then retry once."
    )


def _crash_action(f: FailedFacts) -> str:
    if f.detail == "NCCL":
        return (
            "Check the inter-GPU network and the peer ranks (NCCL_DEBUG=INFO, pin the NCCL version, ask "
            "an admin about the nodes' RDMA links), then resubmit."
        )
    return f"Fix the error in {_task_s(f)} code or config shown in the last log lines, then resubmit."


def _fixed(text: str) -> Phrase:
    """A next action that does not depend on the facts."""

    def phrase(_: FailedFacts) -> str:
        return text

    return phrase


_ENTRIES: tuple[OsmoCategory, ...] = (
    OsmoCategory(
        Category.OOM_KILLED,
        classify.oom,
        "the task ran out of memory and was OOM-killed",
        _oom_action,
        detail=_oom_detail,
        emoji="💥",
        title="OOM killed",
    ),
    OsmoCategory(
        Category.IMAGE_PULL_FAILED,
        classify.image_pull,
        "the container image could not be pulled, so the task never ran",
        _image_action,
        emoji="📦",
        title="Image pull failed",
    ),
    OsmoCategory(
        Category.INIT_FAILED,
        classify.init_failed,
        "OSMO's setup (osmo-init: inputs, mounts) failed, so the user code never ran",
        _fixed(
            "Check the task's `inputs` paths and read its logs; storage authorization problems need an admin ticket."
        ),
        emoji="🧰",
        title="Init container failed",
    ),
    OsmoCategory(
        Category.DATA_FAILED,
        classify.data_failed,
        "OSMO's data step (download, mount, upload or data authorization) failed",
        _fixed(
            "Check the input/output paths and the data credentials (`osmo credential list`); data "
            "authorization errors need an admin."
        ),
        emoji="💾",
        title="Data step failed",
    ),
    OsmoCategory(
        Category.START_FAILED,
        classify.start_failed,
        "the pod failed to start (start error, start timeout or preflight failure)",
        _fixed(
            "Read the task's events for the start error; check referenced secrets/config and the image "
            "entrypoint, then resubmit."
        ),
        emoji="🚫",
        title="Failed to start",
    ),
    OsmoCategory(
        Category.CRASH_APP_ERROR,
        classify.app_crash,
        "the task's own program exited with an error",
        _crash_action,
        detail=_crash_detail,
        variant=_nccl_variant,
        emoji="🔥",
        title="Crashed (application error)",
    ),
    OsmoCategory(
        Category.NODE_FAILURE,
        classify.node_failure,
        "the backend node failed or evicted the task (node or backend error)",
        _fixed(
            "Resubmit (the node, not the code, failed); if the same node fails again, report it to the cluster admins."
        ),
        emoji="🖥️",
        title="Node failure",
        also=(classify.gpu_fault,),
    ),
    OsmoCategory(
        Category.PREEMPTED,
        classify.preempted,
        "the task was preempted by higher-priority work",
        _fixed("Resubmit at NORMAL priority (LOW work can be preempted) or when the pool is quieter."),
        emoji="⏸️",
        title="Preempted",
    ),
    OsmoCategory(
        Category.TIMEOUT,
        classify.timeout,
        "the workflow hit its timeout",
        _fixed("Raise the exec/queue timeout within the pool's maximum, or make the work shorter, then resubmit."),
        emoji="⏱️",
        title="Timed out",
    ),
    OsmoCategory(
        Category.CANCELED,
        classify.canceled,
        "the workflow was canceled",
        _fixed("Nothing to fix if the cancel was intended; otherwise resubmit."),
        emoji="🛑",
        title="Canceled",
    ),
    OsmoCategory(
        Category.UPSTREAM_FAILED,
        classify.upstream,
        "an upstream task failed, and its own failure cannot be seen",
        _fixed("Open the upstream task's logs (`osmo workflow logs <id> -t <task>`) to find the first failure."),
        emoji="⛓️",
        title="Upstream task failed",
    ),
    OsmoCategory(
        Category.SERVER_ERROR,
        classify.server_error,
        "an OSMO service or control-sidecar error ended the task",
        _fixed("Retry once; if it repeats, report the workflow ID to the OSMO admins."),
        emoji="🛠️",
        title="OSMO server error",
    ),
    OsmoCategory(
        Category.UNKNOWN,
        None,
        "the evidence does not name a cause",
        _fixed(
            "Read the full task logs and events; if nothing explains it, report the workflow ID to the OSMO admins."
        ),
        emoji="❓",
        title="Failed, cause unknown",
    ),
)

#: Every OSMO failure category, keyed by its enum value.
CATEGORIES: dict[Category, OsmoCategory] = {e.category: e for e in _ENTRIES}


def category(value: Category) -> OsmoCategory:
    """The entry of ``value``; ``KeyError`` names a category OSMO does not know (a Run:ai-only one)."""
    return CATEGORIES[value]


# -- PENDING ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PendingFacts:
    """What a PENDING verdict is phrased from; numbers are already formatted (``"unknown"`` when None).

    ``head``: ``"Workflow w-1 is PENDING"``; ``pool``: the pool name (None when unknown); ``ask``: the
    group's GPU ask; ``quota_free``/``quota_limit``/``total_free``/``total_capacity``: ``/api/pool_quota``
    figures; ``task_ask``/``largest``: one task's ask and the largest free on one node; ``priority``:
    ``"NORMAL"`` when unset; ``pool_status``: ``"OFFLINE"``; ``constraint``: the first placement
    constraint found in the events as (plain, raw); ``status``: the workflow status; ``has_group``: a
    group is waiting to be scheduled."""

    head: str
    pool: str | None
    ask: str
    quota_free: str
    quota_limit: str
    total_free: str
    total_capacity: str
    task_ask: str
    largest: str
    priority: str
    pool_status: str | None
    status: str
    has_group: bool
    constraint: tuple[str, str] | None = None


PendingPhrase = Callable[[PendingFacts], str]


@dataclass(frozen=True)
class PendingVerdict:
    """One PENDING verdict: ``rule`` (the :mod:`~diagnosis.osmo.pending` rule that decides it; None for the
    plain status report, the fallback), ``headline`` and ``next_action``."""

    outcome: Outcome
    rule: Callable[[pending.PendingNumbers], Outcome | None] | None
    headline: PendingPhrase
    next_action: PendingPhrase


def _unavailable_head(f: PendingFacts) -> str:
    return f"{f.head}: pool {f.pool} is {f.pool_status}, so nothing in it is scheduled."


def _unavailable_action(f: PendingFacts) -> str:
    return f"Wait for pool {f.pool} to be ONLINE again, or resubmit to another pool (`osmo pool list`)."


def _quota_head(f: PendingFacts) -> str:
    return (
        f"{f.head}: pool {f.pool}'s quota is used up, not its capacity: it asks {f.ask} GPUs at {f.priority} "
        f"priority, quota free is {f.quota_free} (quota_limit {f.quota_limit}) while {f.total_free} GPUs are "
        f"physically free (total_free)."
    )


def _quota_action(f: PendingFacts) -> str:
    return (
        f"Resubmit with `--priority LOW` to use the {f.total_free} free GPUs now (LOW work may be preempted), "
        f"or wait for HIGH/NORMAL work in {f.pool} to finish and free quota."
    )


def _capacity_head(f: PendingFacts) -> str:
    return (
        f"{f.head}: pool {f.pool} is out of physical GPUs: it asks {f.ask} GPUs but only {f.total_free} are free "
        f"in total (total_free, of total_capacity {f.total_capacity}); quota free is {f.quota_free}."
    )


def _capacity_action(f: PendingFacts) -> str:
    return (
        f"Wait for GPUs in {f.pool} to free up, move to a pool with at least {f.ask} GPUs free "
        "(`osmo pool list --mode free`), or shrink the per-task GPU ask; LOW priority will not help."
    )


def _fragmentation_head(f: PendingFacts) -> str:
    return (
        f"{f.head}: no single node in pool {f.pool} can hold one task: a task asks {f.task_ask} GPUs "
        f"but the largest free on one node is {f.largest}, although {f.total_free} GPUs are free in total "
        f"(total_free) and quota free is {f.quota_free}."
    )


def _fragmentation_action(f: PendingFacts) -> str:
    return (
        f"Split the work into tasks of at most {f.largest} GPUs, wait for a node in {f.pool} to "
        "drain, or use a pool with a whole free node."
    )


def _constraint_head(f: PendingFacts) -> str:
    plain, raw = f.constraint or ("the events name a placement constraint", "")
    return (
        f"{f.head}: GPUs suffice (asks {f.ask}, total_free {f.total_free}, quota free {f.quota_free} in pool "
        f'{f.pool}) but {plain} ("{raw}").'
    )


def _constraint_action(f: PendingFacts) -> str:
    return (
        "Compare the workflow's node selectors, affinity, tolerations and volumes with the nodes of "
        f"pool {f.pool}; fix the spec or pick a pool whose nodes match."
    )


def _status_head(f: PendingFacts) -> str:
    where = f"{f.head} in pool {f.pool or 'unknown'}"
    if f.status != "PENDING" and not f.has_group:
        return f"{where}."
    numbers = (
        f", asking {f.ask} GPUs (quota free {f.quota_free}, total_free {f.total_free}, largest free on one node "
        f"{f.largest})"
        if f.has_group
        else ""
    )
    return where + numbers + "; the numbers show no quota, capacity or per-node shortage."


def _status_action(_: PendingFacts) -> str:
    return "Check the events again in a few minutes; if it stays queued, ask the OSMO admins."


_PENDING: tuple[PendingVerdict, ...] = (
    PendingVerdict(Outcome.POOL_UNAVAILABLE, pending.pool_unavailable, _unavailable_head, _unavailable_action),
    PendingVerdict(Outcome.PENDING_QUOTA, pending.quota, _quota_head, _quota_action),
    PendingVerdict(Outcome.PENDING_CAPACITY, pending.capacity, _capacity_head, _capacity_action),
    PendingVerdict(Outcome.PENDING_FRAGMENTATION, pending.fragmentation, _fragmentation_head, _fragmentation_action),
    PendingVerdict(Outcome.PENDING_CONSTRAINT, pending.constraint, _constraint_head, _constraint_action),
    PendingVerdict(Outcome.STATUS, None, _status_head, _status_action),
)

#: Every PENDING verdict, keyed by its outcome (``status``: no numeric cause).
PENDING: dict[Outcome, PendingVerdict] = {v.outcome: v for v in _PENDING}


def pending_verdict(outcome: Outcome | None) -> PendingVerdict:
    """The entry of a :func:`~diagnosis.osmo.pending.decide_pending` result (None is the status report)."""
    return PENDING[outcome or Outcome.STATUS]
