"""Neighbours on the same node (issue 19 §2): the other workloads whose pods failed on the node of the first failure,
around the time it failed. Supporting evidence, said as such: it never decides or changes a category (it is read
after the finding, and nothing here is read by :mod:`diagnosis.runai.classify`).

The rule: when the first failing pod's node shows a node fault (a ``NODE_FAILURE`` signal of that pod or node), or
the cause is UNKNOWN, one bounded call (:meth:`~diagnosis.runai.client.RunaiClient.list_node_pods`: the Run:ai pods
of every workload on that node that completed within :data:`WINDOW` either side of the first failure, the
workload's own left out) counts the other workloads' failed pods there. A failed read is a named gap. Every such
workload is named in the report; which of them an asker may see is the surface's cut
(:meth:`diagnosis.report.Report.seen_by`: the others are counted, never named).

Round trips: when Tier 2 is read because Tier 1 names no cause yet (no category, an unexplained exit, UNKNOWN, a
node fault) and Tier 1 knows the node, the call starts beside Tier 2 (:func:`start`, its window widened by
:data:`MARGIN` for the time Tier 2 may settle on) and its answer is used only when the rule holds after Tier 2
(:func:`settle`); otherwise it is made after the decision, and only when the rule holds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta

from diagnosis.fetched import fetch
from diagnosis.k8s import Tier2Evidence
from diagnosis.report import Category, Neighbours, NeighbourWorkload
from diagnosis.runai import classify as cls
from diagnosis.runai import incident
from diagnosis.runai.models import Pod, Workload
from diagnosis.runai.signals import DIRECT_KINDS, Kind, Signal
from diagnosis.runai.state import Anchor, Diagnosis, Nearby
from diagnosis.runai.tier1 import Tier1
from diagnosis.runai.tier2 import diagnosed_pod

#: How far either side of the first failure another workload's pod failure counts.
WINDOW = timedelta(minutes=15)
#: How much wider a read started beside Tier 2 asks (the first failure's time from Tier 1; Tier 2's containers may
#: date it a little otherwise): only the pods within :data:`WINDOW` of the final time are counted.
MARGIN = timedelta(minutes=5)
#: The categories whose cause the neighbours may support.
RULE_CATEGORIES = frozenset({Category.NODE_FAILURE, Category.UNKNOWN})
#: Pod phases that are not a failure (a pod that completed in them did not fail).
_NOT_FAILED = frozenset({"Succeeded", "Completed", "Running", "Pending"})


def anchor(
    workload: Workload,
    tier1: Tier1,
    order: cls.PodOrder,
    pod: str | None,
    signals: Sequence[Signal],
    tier2: Tier2Evidence | None,
) -> Anchor | None:
    """The first failing pod (the order's first, else ``pod``: the one the diagnosis inspects), its node (the Run:ai
    pods list, Tier 2's pod, a node fault's node) and when it failed (its end in the timeline, ``completedAt``, its
    first direct signal, the workload's end). None when the node or the time is not known: nothing is asked."""
    first = order.first or pod
    if first is None:
        return None
    listed = next((p for p in tier1.pods.value or [] if p.name == first), None)
    node = listed.node_name if listed is not None else None
    if not node and tier2 is not None and tier2.pod is not None and tier2.pod_name == first:
        node = (tier2.pod.get("spec") or {}).get("nodeName")
    if not node:
        node = next(
            (s.node for s in signals if s.kind == Kind.NODE_FAILURE and s.node and s.pod in (None, first)), None
        )
    own = [s.at for s in signals if s.pod == first and s.at is not None and s.kind in DIRECT_KINDS]
    at = (
        order.ended.get(first)
        or (listed.completed_at if listed is not None else None)
        or min(own, default=None)
        or incident.termination_time(workload)
    )
    return Anchor(first, node, at) if node and at is not None else None


def wanted(finding: cls.Finding, signals: Sequence[Signal], where: Anchor) -> bool:
    """The rule: the cause is UNKNOWN, or the first failing pod's node shows a node fault (a finding of
    NODE_FAILURE, or a ``NODE_FAILURE`` signal of that pod or node)."""
    if finding.category in RULE_CATEGORIES:
        return True
    return any(
        s.kind == Kind.NODE_FAILURE and (s.node == where.node or (s.pod is not None and s.pod == where.pod))
        for s in list(finding.signals) + list(signals)
    )


async def read(d: Diagnosis, workload: Workload, where: Anchor, margin: timedelta = timedelta()) -> Nearby:
    """The one bounded call: the node's pods that completed within :data:`WINDOW` (+ ``margin``) of the failure."""
    span = WINDOW + margin
    call = d.client.list_node_pods(where.node, where.at - span, where.at + span, exclude=workload.id)
    return Nearby(where, await fetch(call, d.deadline.remaining()), margin)


def start(
    d: Diagnosis,
    workload: Workload,
    tier1: Tier1,
    finding: cls.Finding | None,
    signals: Sequence[Signal],
    order: cls.PodOrder,
) -> None:
    """Start the read beside Tier 2 (``d.nearby``) when Tier 1 names no cause yet (no category, an unexplained
    exit, UNKNOWN, a node fault) and knows the node of the first failure: the answer may then be one the rule
    reads neighbours for. Nothing is started otherwise."""
    if not d.read_neighbours or d.nearby is not None:
        return
    open_cause = (
        finding is None
        or finding.category in RULE_CATEGORIES
        or bool(cls.unresolved_exit(signals))
        or any(s.kind == Kind.NODE_FAILURE for s in signals)
    )
    if not open_cause:
        return
    pod, _ = diagnosed_pod(tier1, finding, signals, order, d.now, incident.replaced(workload, tier1))
    where = anchor(workload, tier1, order, pod, signals, None)
    if where is not None:
        d.nearby = asyncio.ensure_future(read(d, workload, where, MARGIN))


async def settle(
    d: Diagnosis,
    workload: Workload,
    tier1: Tier1,
    finding: cls.Finding,
    signals: Sequence[Signal],
    order: cls.PodOrder,
    tier2: Tier2Evidence | None,
    pod: str | None,
) -> Nearby | None:
    """After the decision: the neighbours' read when the rule holds (the one started beside Tier 2 when it covers
    the first failure as decided, else one call now), None when it does not (a read started is dropped)."""
    early, d.nearby = d.nearby, None
    where = anchor(workload, tier1, order, pod, signals, tier2) if d.read_neighbours else None
    if where is None or not wanted(finding, signals, where):
        if early is not None:
            early.cancel()
        return None
    if early is not None:
        got = await early
        if got.covers(where):
            return replace(got, anchor=where)
    return await read(d, workload, where)


def neighbours_of(near: Nearby, workload: Workload) -> Neighbours | None:
    """What the read shows, as the report carries it (None when it failed: a gap): the other workloads with pods on
    the node that failed within :data:`WINDOW` of the first failure, the earliest first, every one named (the
    asker's cut is the surface's: :meth:`diagnosis.report.Report.seen_by`)."""
    pods = near.got.value
    if not near.got.ok or pods is None:
        return None
    where = near.anchor
    since, until = where.at - WINDOW, where.at + WINDOW
    by_workload: dict[str, list[Pod]] = {}
    for p in pods:
        if p.workload_id == workload.id or (p.node_name and p.node_name != where.node):
            continue
        if p.completed_at is None or not since <= p.completed_at <= until or p.k8s_phase in _NOT_FAILED:
            continue
        if p.k8s_phase is None:
            continue  # completed, but how is not said: not counted as a failure
        by_workload.setdefault(p.workload_id or p.workload_name or p.name, []).append(p)
    found = [
        NeighbourWorkload(
            name=group[0].workload_name or f"workload {key}",
            project=group[0].project_name,
            pods=len(group),
            at=min(p.completed_at for p in group if p.completed_at is not None),
        )
        for key, group in by_workload.items()
    ]
    found.sort(key=lambda w: (w.at or where.at, w.name))
    return Neighbours(
        node=where.node,
        pod=where.pod,
        around=where.at,
        window_minutes=int(WINDOW.total_seconds() // 60),
        workloads=found,
        more=pods.stopped is not None,
        source=near.got.path,
    )
