"""Why a workflow is PENDING: decided from numbers (FORMAT.md "OSMO PENDING"; osmo-api.md §7.3).

:func:`decide_pending` is pure: it takes :class:`PendingNumbers` (GPU counts from the workflow
query, ``/api/task``, ``/api/pool_quota`` and ``/api/resources``) plus the translated events and
checks, in this order — each rule is one small function in :data:`PENDING_RULES`:

1. pool ``status`` OFFLINE or MAINTENANCE -> ``pool_unavailable``;
2. priority HIGH/NORMAL, group ask > ``quota_free`` while ``total_free`` >= ask -> ``pending_quota``
   (LOW ignores quota);
3. ``total_free`` < group ask -> ``pending_capacity`` (also when quota is short too);
4. largest free GPUs on one node of the pool < one task's ask -> ``pending_fragmentation``;
5. events naming node affinity, selectors, taints, a topology requirement or an unbound PVC while GPUs suffice ->
   ``pending_constraint``;
6. otherwise None: a status report that names no numeric cause.

Free equal to the ask is enough. A rule whose numbers are unknown does not fire (never a guess).

:func:`translate_events` turns scheduler text into plain language (workflow-status spec table,
extended for taints, affinity and PVC binding); event text may wrap over several lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from diagnosis import kube_text as kt
from diagnosis.report import Outcome

_EVENT_START = re.compile(r"^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}\S*)\s+(?:\[([^\]]+)\]\s+)?(.*)$")

# (pattern, plain language, kind): kind "constraint" marks placement constraints (rule 5). Scheduler wording
# Run:ai reads too comes from diagnosis.kube_text (kt); the rest is read by OSMO's PENDING rules alone.
TRANSLATIONS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (kt.INSUFFICIENT_GPU, "no node has enough free GPUs for the task right now", "gpu"),
    (kt.OVER_QUOTA, "the pool's quota for non-preemptible (HIGH/NORMAL) work is used up", "quota"),
    (
        re.compile(r"didn't match Pod's node affinity/selector|node affinity|node selector|nodeSelector", re.I),
        "no nodes match the workflow's hardware requirements",
        "constraint",
    ),
    (
        re.compile(r"untolerated taint|had taints? .* that the pod didn't tolerate|\btaint", re.I),
        "the free nodes carry taints the workflow does not tolerate",
        "constraint",
    ),
    (
        re.compile(r"didn't match pod (?:topology spread constraints|anti-affinity rules|affinity rules)", re.I),
        "the workflow's topology requirement (spread or pod affinity) leaves no node it may use",
        "constraint",
    ),
    (
        kt.any_of(
            kt.UNBOUND_PVC,
            r"volume node affinity conflict",
            kt.PVC_NOT_FOUND,
            r"waiting for .*volume .* to be (?:created|bound)",
        ),
        "a storage volume (PVC) the workflow needs is not bound or not reachable from the free nodes",
        "constraint",
    ),
    (
        re.compile(r"Preemption is not helpful|No preemption victims found", re.I),
        "no lower-priority workflows can be evicted to free GPUs",
        "preemption",
    ),
    (kt.INSUFFICIENT_CPU, "no node has enough free CPU", "cpu"),
    (kt.INSUFFICIENT_MEMORY, "no node has enough free memory", "memory"),
)


@dataclass(frozen=True)
class SchedulingEvent:
    """One event line (continuations joined): ``at`` as printed, ``task`` in brackets, raw ``message``."""

    at: str
    task: str | None
    message: str


def parse_events(text: str) -> list[SchedulingEvent]:
    """Split an events stream into events; lines without a leading timestamp continue the previous one."""
    events: list[SchedulingEvent] = []
    for line in text.splitlines():
        m = _EVENT_START.match(line)
        if m:
            events.append(SchedulingEvent(m.group(1), m.group(2), m.group(3).strip()))
        elif events and line.strip():
            last = events[-1]
            events[-1] = SchedulingEvent(last.at, last.task, f"{last.message} {line.strip()}")
    return events


@dataclass(frozen=True)
class Translation:
    """A raw scheduler phrase found in the events, its plain-language gloss, and its kind."""

    raw: str
    plain: str
    kind: str
    message: str


def translate_events(events: list[SchedulingEvent]) -> list[Translation]:
    """Plain-language glosses of scheduling events, one per distinct phrase (first occurrence kept)."""
    seen: set[str] = set()
    out: list[Translation] = []
    for event in events:
        for pattern, plain, kind in TRANSLATIONS:
            m = pattern.search(event.message)
            if m and plain not in seen:
                seen.add(plain)
                out.append(Translation(m.group(0), plain, kind, event.message))
    return out


@dataclass(frozen=True)
class PendingNumbers:
    """GPU counts that decide a PENDING verdict; None means unknown (the rule needing it does not fire).

    ``group_ask``: GPUs of the group's tasks waiting to be scheduled together (gang); ``task_ask``: the
    largest single task's GPUs; ``quota_free``/``total_free``: ``/api/pool_quota`` of ``pool``;
    ``largest_node_free``: max over the pool's nodes of allocatable minus used GPUs.
    """

    pool: str | None
    pool_status: str | None
    priority: str | None
    group: str | None
    group_ask: int | None
    task_ask: int | None
    quota_free: int | None
    quota_limit: int | None
    total_free: int | None
    total_capacity: int | None
    largest_node_free: int | None
    translations: tuple[Translation, ...] = field(default_factory=tuple)


def pool_unavailable(n: PendingNumbers) -> Outcome | None:
    """Rule 1: the pool is OFFLINE or MAINTENANCE."""
    return Outcome.POOL_UNAVAILABLE if (n.pool_status or "").upper() in ("OFFLINE", "MAINTENANCE") else None


def quota(n: PendingNumbers) -> Outcome | None:
    """Rule 2: HIGH/NORMAL priority, ask > quota_free while total_free >= ask (LOW ignores quota)."""
    if (n.priority or "NORMAL").upper() == "LOW" or None in (n.group_ask, n.quota_free, n.total_free):
        return None
    assert n.group_ask is not None and n.quota_free is not None and n.total_free is not None
    return Outcome.PENDING_QUOTA if n.group_ask > n.quota_free and n.total_free >= n.group_ask else None


def capacity(n: PendingNumbers) -> Outcome | None:
    """Rule 3: total_free < ask (physical capacity; also when quota is short too)."""
    if n.group_ask is None or n.total_free is None:
        return None
    return Outcome.PENDING_CAPACITY if n.total_free < n.group_ask else None


def fragmentation(n: PendingNumbers) -> Outcome | None:
    """Rule 4: no single node of the pool has one task's ask free."""
    if n.task_ask is None or n.largest_node_free is None or n.total_free is None:
        return None
    return Outcome.PENDING_FRAGMENTATION if n.largest_node_free < n.task_ask else None


def constraint(n: PendingNumbers) -> Outcome | None:
    """Rule 5: events name affinity/selectors/taints/topology/PVC binding (reached only when GPUs suffice)."""
    return Outcome.PENDING_CONSTRAINT if any(t.kind == "constraint" for t in n.translations) else None


PENDING_RULES: tuple[Callable[[PendingNumbers], Outcome | None], ...] = (
    pool_unavailable,
    quota,
    capacity,
    fragmentation,
    constraint,
)


def decide_pending(numbers: PendingNumbers) -> Outcome | None:
    """The first rule of :data:`PENDING_RULES` that fires; None for a plain status report."""
    for rule in PENDING_RULES:
        outcome = rule(numbers)
        if outcome is not None:
            return outcome
    return None


def pending_confidence(numbers: PendingNumbers, outcome: Outcome | None) -> tuple[str, list[str]] | None:
    """How directly the numbers support a PENDING verdict (issue 8 §5): a pool status names it (``direct``);
    quota, capacity and per-node fit compare several numbers (``inferred``); a constraint rests on event text
    (``inferred``); a plain status report names no cause (None: no confidence line)."""
    if outcome is None:
        return None
    if outcome == Outcome.POOL_UNAVAILABLE:
        return "direct", [f"pool status {numbers.pool_status}"]
    basis = [
        f"group GPU ask {numbers.group_ask}",
        f"quota free {numbers.quota_free}",
        f"pool free {numbers.total_free}",
    ]
    if outcome == Outcome.PENDING_FRAGMENTATION:
        basis = [f"task GPU ask {numbers.task_ask}", f"largest free on one node {numbers.largest_node_free}"]
    elif outcome == Outcome.PENDING_CONSTRAINT:
        basis = ["scheduler events naming affinity, selectors, taints or topology", f"pool free {numbers.total_free}"]
    return "inferred", basis
