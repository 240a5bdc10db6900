"""Tier 2 of one Run:ai diagnosis (spec Step 4): the Kubernetes evidence of the pod to inspect, read through
the read-only client of :mod:`diagnosis.k8s`, and the signals it gives. Which pod is inspected is decided here
(:func:`diagnosed_pod`: the first failing pod of several); whether Tier 2 is read at all is the decide and route
jobs' call. Logs are sanitized once, before any line is classified (issue 8 §3)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar

from diagnosis import kube_objects as kube
from diagnosis.fetched import describe_error
from diagnosis.k8s import READ_SECONDS, KubeCalls, Tier2Evidence, pod_mismatch, shared_source
from diagnosis.offload import off_loop
from diagnosis.redact import sanitize
from diagnosis.report import Category, Gap
from diagnosis.runai import classify as cls
from diagnosis.runai import incident
from diagnosis.runai.incident import FINAL_SLACK
from diagnosis.runai.models import Pod, Workload
from diagnosis.runai.signals import (
    Kind,
    Signal,
    gpu_hardware_in_log,
    log_signals,
    node_signals,
    pod_object_signals,
    text_signals,
)
from diagnosis.runai.state import Diagnosis
from diagnosis.runai.tier1 import Tier1
from diagnosis.units import parse_time

#: How long after a workload's end a node condition's change may still be its cause (a node problem detector or the
#: node lifecycle controller notes a fault minutes after the pod saw it); later changes are another story.
NODE_SLACK = timedelta(minutes=15)

T = TypeVar("T")


async def read_tier2(
    d: Diagnosis,
    workload: Workload,
    tier1: Tier1,
    finding: cls.Finding | None,
    signals: Sequence[Signal],
    order: cls.PodOrder | None = None,
) -> Tier2Evidence | None:
    """Spec Step 4's container-level evidence of the pod to inspect (:func:`diagnosed_pod`): its description,
    events and logs (previous ones included), and its node with the node's events when a node fault is in
    sight, read once, concurrently, within the deadline. Sets ``d.t2_signals`` and ``d.t2_window``. None, with
    a gap on ``d.gaps``, when nothing could be read or what was read belongs to another pod."""
    pod_name, pod = diagnosed_pod(tier1, finding, signals, order, d.now, incident.replaced(workload, tier1))
    namespace = namespace_of(workload, tier1)
    b_gap = d.gaps
    if pod_name is None or namespace is None:
        b_gap.append(Gap(what="Tier 2 evidence", why="no pod name or namespace could be resolved; nothing was guessed"))
        return None
    node = None
    if finding is not None and finding.category == Category.NODE_FAILURE:
        node = next((s.node for s in finding.signals if s.node), None) or (pod.node_name if pod else None)
    try:
        source = await shared_source(d.kube)
    except Exception as exc:
        b_gap.append(
            Gap(
                what="Tier 2 Kubernetes evidence",
                why=f"{d.kube.describe()} could not be loaded: {type(exc).__name__}",
            )
        )
        return None
    try:
        containers = [c.name for c in pod.containers] if pod else []
        peers = failing_peers(order, pod_name)
        # The first failing pod's node's events are read with it, always (a GPU fault on that node is evidence
        # even when nothing else points at the node yet); the node object only when a node fault is in sight.
        event_node = None if node else (pod.node_name if pod else None)
        evidence = await asyncio.wait_for(
            source.collect(namespace, pod_name, containers, node, peers, workload.name, event_node, read_bound(d)),
            d.deadline.remaining(),
        )
        evidence.peers = peers_of_run(evidence, workload, tier1, d.now)
        # Only the pod Run:ai reported: a pod of the same name created at another time (or answered from
        # elsewhere) is another pod, and none of what was read for that name is its evidence.
        mismatch = (
            pod_mismatch(evidence.pod, namespace, pod_name, pod.created_at if pod else None)
            if evidence.pod is not None
            else None
        )
        if mismatch is not None:
            b_gap.append(
                Gap(
                    what=f"Tier 2 evidence of pod {namespace}/{pod_name} (description, events, logs)",
                    why=f"{mismatch}, so what was read for that name was not used",
                )
            )
            return None
        # Logs are untrusted: credentials masked and instruction-like lines withheld once, before any line is
        # classified, picked or cut (issue 8 §3). This and the signals are CPU work: off the event loop (issue 24).
        evidence.logs = await off_loop(sanitized, evidence.logs)
        # Node events are evidence only for this run: a GPU fault reported on the node before the run started,
        # or after the failure, is another story (FORMAT.md "GPU hardware faults"); also when the node was read
        # with the pod (a node failure already in sight).
        d.t2_window = (incident.run_start(workload, tier1, d.now), incident.termination_time(workload))
        found = await off_loop(tier2_signals, evidence, d.t2_window)
        if evidence.pod is not None and node is None:
            pod_node = (evidence.pod.get("spec") or {}).get("nodeName")
            gpu_fault = any(gpu_hardware_in_log(text) for text in evidence.logs.values())
            if pod_node and (gpu_fault or any(s.kind == Kind.NODE_FAILURE for s in found)):
                events_read = pod_node == event_node
                added = source.add_node(evidence, pod_node, events_read, read_bound(d))
                await asyncio.wait_for(added, d.deadline.remaining())
                found = await off_loop(tier2_signals, evidence, d.t2_window)
        d.t2_signals = found
        return evidence
    except TimeoutError as exc:
        b_gap.append(Gap(what="Tier 2 evidence", why=describe_error(exc)))
        return None


def read_bound(d: Diagnosis) -> float:
    """Each Tier 2 read's own wall clock, ended before the diagnosis deadline: a read that hangs is a gap of its own,
    not every read's (issue 24)."""
    return min(READ_SECONDS, d.deadline.remaining() * 0.8)


def sanitized(logs: dict[T, str]) -> dict[T, str]:
    """Every log text of ``logs`` sanitized (:func:`diagnosis.redact.sanitize`)."""
    return {key: sanitize(text) for key, text in logs.items()}


#: How many failing peers of the inspected pod Tier 2 reads (their pod objects, in the same round trip).
MAX_PEERS = 8


def failing_peers(order: cls.PodOrder | None, inspected: str) -> list[str]:
    """The other failing pods of the incident, the earliest failure first, at most :data:`MAX_PEERS`: their
    terminal container states say when and how each ended (issue 19: Tier 2 follows the timeline)."""
    if order is None or not order.several:
        return []
    return [p for p in order.failing if p != inspected][:MAX_PEERS]


def peers_of_run(evidence: Tier2Evidence, workload: Workload, tier1: Tier1, now: datetime) -> dict[str, dict[str, Any]]:
    """The peers read by name that are the pods Run:ai listed (a pod of that name created at another time is
    another pod), and the failing pods of this run only the workload's label finds (:func:`labelled_peers`)."""
    ns = evidence.namespace
    peers = {
        name: obj
        for name, obj in evidence.peers.items()
        if pod_mismatch(obj, ns, name, created_of(tier1, name)) is None
    }
    listed = {p.name for p in tier1.pods.value or []}
    run = Tier2Evidence(namespace=ns, pod_name=evidence.pod_name, peers=peers, workload_pods=evidence.workload_pods)
    return peers | labelled_peers(run, listed, incident.run_start(workload, tier1, now))


def labelled_peers(evidence: Tier2Evidence, listed: set[str], since: datetime | None) -> dict[str, dict[str, Any]]:
    """The failing pods Kubernetes lists with the workload's label that the Run:ai pods list does not show
    (``listed``: its names; those are ordered from it already), created in this run (``since``: its start; a
    pod of an earlier run is another story), by name: replicas or attempts left out otherwise (issue 19 §1)."""
    out: dict[str, dict[str, Any]] = {}
    for name, obj in (evidence.workload_pods or {}).items():
        if name == evidence.pod_name or name in evidence.peers or name in listed or not kube.failing_now(obj):
            continue
        created = parse_time((obj.get("metadata") or {}).get("creationTimestamp"))
        if since is not None and created is not None and created < since - FINAL_SLACK:
            continue
        out[name] = obj
    return out


def created_of(tier1: Tier1, name: str) -> datetime | None:
    """When the Run:ai pods list says pod ``name`` was created (None when it does not list it)."""
    return next((p.created_at for p in tier1.pods.value or [] if p.name == name), None)


def tier2_signals(t2: Tier2Evidence, window: tuple[datetime | None, datetime | None]) -> list[Signal]:
    """Signals of what Tier 2 read: the pod object, its events, its logs, the node and the node's events of
    this run (``window``: its start and end; a node event outside it is another story). Each cites its
    ``kubectl`` call."""
    ns, pod = t2.namespace, t2.pod_name
    out: list[Signal] = []
    if t2.pod is not None:
        out += pod_object_signals(t2.pod, source=KubeCalls.pod(ns, pod).source)
    for peer, obj in t2.peers.items():
        out += pod_object_signals(obj, source=KubeCalls.pod(ns, peer).source)
    ev_src = KubeCalls.pod_events(ns, pod).source
    for ev in kube.events(t2.events):
        out += text_signals(ev.reason, ev.message, source=ev_src, at=ev.at, pod=pod)
    for (container, previous), text in t2.logs.items():
        src = KubeCalls.log(ns, pod, container, previous).source
        out += log_signals(text, source=src, pod=pod, container=container)
    since, until = window
    if t2.node is not None:
        # a node condition that changed long after the failure (the node went NotReady hours after the program
        # died) is another story; a condition noted within NODE_SLACK of it may be its cause seen late
        out += [
            s
            for s in node_signals(t2.node, source=KubeCalls.node(kube.node_name(t2.node)).source)
            if until is None or s.at is None or s.at <= until + NODE_SLACK
        ]
    for ev in kube.events(t2.node_events):
        early = since is not None and ev.at is not None and ev.at < since
        late = until is not None and ev.at is not None and ev.at > until + FINAL_SLACK
        if early or late:
            continue
        src = KubeCalls.node_events(ev.name).source
        out += [
            s
            for s in text_signals(ev.reason, ev.message, source=src, at=ev.at, node=ev.name)
            if s.kind == Kind.NODE_FAILURE
        ]
    return out


def diagnosed_pod(
    tier1: Tier1,
    finding: cls.Finding | None,
    signals: Sequence[Signal],
    order: cls.PodOrder | None,
    now: datetime,
    replaced: set[str] | frozenset[str] = frozenset(),
) -> tuple[str | None, Pod | None]:
    """The pod to inspect: the first failing pod of several, else the one the finding names, else the newest
    failed pod, else one events name."""
    pods = tier1.pods.value or []
    by_name = {p.name: p for p in pods}
    if order is not None and order.several:
        pick = order.first or next((p for p in order.failing if p in by_name), None)
        if pick is not None:
            return pick, by_name.get(pick)
    if finding is not None:
        for s in reversed(finding.signals):
            if s.pod:
                return s.pod, by_name.get(s.pod)
    pods = [p for p in pods if p.name not in replaced]  # an earlier attempt created again is not the pod of now
    failed = [p for p in pods if p.k8s_phase not in {"Succeeded", "Running", None}]
    pool = failed or pods
    if pool:
        newest = max(pool, key=lambda p: p.completed_at or p.k8s_phase_updated_at or p.created_at or now)
        return newest.name, newest
    named = [s.pod for s in signals if s.pod]
    return (named[-1], None) if named else (None, None)


def namespace_of(workload: Workload, tier1: Tier1) -> str | None:
    """``workload.namespace``, else the project's ``status.namespace``, else ``runai-<project>`` (spec fallback)."""
    if workload.namespace:
        return workload.namespace
    for project in tier1.projects.value or []:
        if project.status and project.status.namespace:
            return project.status.namespace
    if workload.project_name:
        return f"runai-{workload.project_name}"
    return None
