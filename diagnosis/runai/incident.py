"""The run of one Run:ai workload as evidence: its signals, its windows, when each pod ended (pure).

What the decide and route jobs read about the run being diagnosed (spec Steps 2-4): the Tier 1 signals of the
current run (:func:`run_signals`: status, conditions, phase updates, events, pods), when the run started and
ended, the final window of the diagnosed termination, and when each pod ended (:func:`pod_ended`, which orders
the pods in the incident timeline, :mod:`diagnosis.timeline`). Times are UTC. No I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta

from diagnosis import kube_objects as kube
from diagnosis.fetched import Call
from diagnosis.k8s import Tier2Evidence
from diagnosis.runai import classify as cls
from diagnosis.runai.client import Calls
from diagnosis.runai.models import TERMINAL_PHASES, Workload
from diagnosis.runai.signals import Kind, Signal, k8s_phase_signals, text_signals
from diagnosis.runai.tier1 import Tier1

RUN_START_PHASES = frozenset({"Creating", "Resuming"})
#: the window before the termination whose signals describe it
FINAL_WINDOW = timedelta(minutes=10)
#: events are stamped a little after the termination they report
FINAL_SLACK = timedelta(minutes=1)


def run_start(workload: Workload, tier1: Tier1, now: datetime) -> datetime | None:
    """Start of the run that ended (or is in) the diagnosed state: the last Creating/Resuming before it."""
    end = workload.phase_updated_at or now
    starts = [
        r.meta.creation_timestamp
        for r in tier1.history.value or []
        if r.spec.phase_update is not None
        and r.spec.phase_update.phase in RUN_START_PHASES
        and r.meta.creation_timestamp is not None
        and r.meta.creation_timestamp <= end
    ]
    if starts:
        return max(starts)
    return workload.created_at


def last_running(tier1: Tier1, end: datetime | None) -> datetime | None:
    """When the last Running phase began (before ``end``): a preemption is "recent" after it."""
    times = [
        r.meta.creation_timestamp
        for r in tier1.history.value or []
        if r.spec.phase_update is not None
        and r.spec.phase_update.phase == "Running"
        and r.meta.creation_timestamp is not None
        and (end is None or r.meta.creation_timestamp <= end)
    ]
    return max(times) if times else None


def termination_time(workload: Workload) -> datetime | None:
    """When a workload in a terminal phase ended (None while it has not)."""
    if workload.phase in TERMINAL_PHASES:
        return workload.phase_updated_at or workload.completed_at
    return None


#: Run:ai's phase message for a failed pod: ``Pod llama-sft-3-0-1 failed: container ...`` (the namespace may lead).
_FAILED_POD = re.compile(r"^\s*Pod\s+(?:[a-z0-9][a-z0-9-]*/)?([a-z0-9][a-z0-9.-]*)\s+failed\b")


def failed_pod_named(message: str | None) -> str | None:
    """The pod a phase message says failed, or None: its signals are that pod's, so a Job's retry whose message
    names the newest attempt does not outrank an earlier attempt's failure (FORMAT.md: "several pod attempts of
    one workload: the pod whose failure came first decides the category")."""
    m = _FAILED_POD.match(message or "")
    return m.group(1) if m else None


def status_signals(workload: Workload) -> list[Signal]:
    """The signals of the workload's own status: its phase message (the pod it names, when it names one), its
    conditions and its pending scheduling messages."""
    wl = Calls.workload(workload.id)
    out = text_signals(
        workload.phase_reason,
        workload.phase_message,
        source=wl.cite(),
        at=workload.phase_updated_at,
        pod=failed_pod_named(workload.phase_message),
        label="phaseMessage" + (f" ({workload.phase_reason})" if workload.phase_reason else ""),
    )
    for cond in workload.conditions:
        if cond.status == "True" or cond.type in {"Failed", "Ready"}:
            out += text_signals(
                cond.reason,
                cond.message,
                source=wl.cite("conditions"),
                at=cond.last_transition_time,
                label=f"condition {cond.type} {cond.reason or ''}".strip(),
            )
    for psm in workload.pending_scheduling_messages or []:
        out += text_signals(
            psm.phase_reason,
            psm.user_message,
            source=wl.cite("pendingSchedulingMessages"),
            at=None,
            label="pendingSchedulingMessages",
        )
    return out


def run_signals(workload: Workload, tier1: Tier1, now: datetime, spec_call: Call) -> list[Signal]:
    """Tier 1 signals of the current run: workload status, conditions, phase updates, events, pods; ``spec_call``
    is the read of the submitted spec (its ``desiredPhase`` is cited)."""
    start = run_start(workload, tier1, now)
    out = status_signals(workload)
    hist = Calls.history(workload.id)
    hist_src = hist.cite()
    for r in tier1.history.value or []:
        ts = r.meta.creation_timestamp
        if r.spec.phase_update is not None and (start is None or ts is None or ts >= start):
            pu = r.spec.phase_update
            out += text_signals(
                None,
                pu.phase_message,
                source=hist.cite("phase update"),
                at=ts,
                pod=failed_pod_named(pu.phase_message),
                label=f"phase update {pu.phase}",
            )
    ev_src = Calls.events(workload.id).cite()
    for ev in tier1.all_events:
        if start is not None and ev.created_at is not None and ev.created_at < start:
            continue
        pod_name = ev.involved_object.name if ev.involved_object and ev.involved_object.kind == "Pod" else None
        out += text_signals(
            ev.reason, ev.message, source=ev_src if tier1.events.ok else hist_src, at=ev.created_at, pod=pod_name
        )
    spec = tier1.spec.value
    if workload.phase == "Stopped" and spec is not None and spec.desired_phase == "Stopped":
        # The phase is the runtime evidence; the spec's desiredPhase says the stop was asked for.
        out.append(
            Signal(
                Kind.POLICY_STOP,
                text="phase Stopped with desiredPhase Stopped (a stop was requested for this workload)",
                source=spec_call.cite("desiredPhase"),
                at=workload.phase_updated_at,
                reason="Stopped",
            )
        )
    for pod in tier1.pods.value or []:
        at = pod.k8s_phase_updated_at  # an old pod phase is not evidence of the recent termination
        found = k8s_phase_signals(pod.k8s_phase, source=Calls.pods(workload.id).cite("k8sPhase"), at=at, pod=pod.name)
        if not found and workload.is_distributed and pod.deleted_at is not None:
            # a replica deleted while it ran ended then (FORMAT.md: "the pod's completion or deletion"): it
            # takes part in the order of the failing pods
            found = [
                Signal(
                    Kind.POD_ERROR,
                    text=f"pod deleted at {pod.deleted_at:%Y-%m-%d %H:%M:%S} UTC (k8sPhase {pod.k8s_phase})",
                    source=Calls.pods(workload.id).cite("deletedAt"),
                    at=pod.deleted_at,
                    pod=pod.name,
                    reason="deleted",
                )
            ]
        out += found
    return cls.drop_stale_scheduler(out)


def final_window(signals: Sequence[Signal], end: datetime | None) -> list[Signal]:
    """Signals describing the diagnosed termination: timeless ones and those within FINAL_WINDOW before it."""
    if end is None:
        return list(signals)
    return [s for s in signals if s.at is None or (end - FINAL_WINDOW <= s.at <= end + timedelta(minutes=1))]


def pod_ended(tier1: Tier1, tier2: Tier2Evidence | None) -> dict[str, datetime]:
    """When each pod ended: its main containers' latest ``finishedAt`` (Tier 2: the inspected pod and its peers),
    else ``completedAt``, else its deletion."""
    out: dict[str, datetime] = {}
    for pod in tier1.pods.value or []:
        if pod.completed_at is not None:
            out[pod.name] = pod.completed_at
        elif pod.deleted_at is not None:
            out[pod.name] = pod.deleted_at  # deleted while it ran: it ended then
    if tier2 is not None:
        read = dict(tier2.peers)
        if tier2.pod is not None:
            read[tier2.pod_name] = tier2.pod
        for name, obj in read.items():
            finished = kube.main_finished_at(obj)
            if finished is not None:
                out[name] = finished
    return out


def replaced(workload: Workload, tier1: Tier1) -> set[str]:
    """For a Running workload, the pods that ended and were created again under a new random suffix by their
    controller after they ended (an evicted or failed earlier attempt of the same replica), when that new pod runs
    now; empty for other phases. A replica named by its index alone (``job-worker-0``) is never taken for another
    (``job-worker-1``)."""
    if workload.phase != "Running":
        return set()
    pods = tier1.pods.value or []
    running = [p for p in pods if p.k8s_phase == "Running" and p.created_at is not None]
    return {
        p.name
        for p in pods
        if p.completed_at is not None
        and p.k8s_phase not in {"Running", "Pending", None}
        and _stem(p.name) is not None
        and any(_stem(q.name) == _stem(p.name) and q.created_at >= p.completed_at for q in running)  # type: ignore[operator]
    }


def current(workload: Workload, tier1: Tier1, signals: Sequence[Signal]) -> list[Signal]:
    """The signals of the pods of now (FORMAT.md: a Running workload is diagnosed for a crash loop now): none of a
    pod :func:`replaced` by a later attempt; for other phases, all of them."""
    gone = replaced(workload, tier1)
    return [s for s in signals if s.pod is None or s.pod not in gone]


#: The random suffix a controller gives each pod it creates: five lowercase letters and digits, at least one a
#: letter (Kubernetes' own alphabet is narrower; other controllers' is not), never a replica's index alone.
_RANDOM_SUFFIX = re.compile(r"-(?=[a-z0-9]{5}$)(?=[0-9]*[a-z])")


def _stem(pod: str) -> str | None:
    """A pod's name without its random suffix (``job-master-0-9st9r`` -> ``job-master-0``): the replica its
    controller creates again under a new suffix. None when the name has no such suffix (``job-worker-1``)."""
    m = _RANDOM_SUFFIX.search(pod)
    return pod[: m.start()] if m else None
