"""Recurrence: distinct failure occurrences of the same category inside the lookback (spec Step 3).

One occurrence is one termination of the workload or of one of its pods: a Failed (or a
policy/manual Stopped) phase update, or an event that reports a pod's failure. A phase update
and the pod-failure events that describe the same termination (within :data:`SAME_TERMINATION`
before it) count once. Container restarts inside one pod run are not occurrences. The failure
being diagnosed counts (FORMAT.md "Evidence").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from diagnosis.report import Category
from diagnosis.runai.classify import classify
from diagnosis.runai.models import Event, HistoryRecord
from diagnosis.runai.signals import Kind, Signal, text_signals

SAME_TERMINATION = timedelta(minutes=10)
#: Event reasons that report the termination of a pod (not a restart inside it).
TERMINATION_REASONS = frozenset(
    {
        "PodFailed",
        "Evicted",
        "TaintManagerEviction",
        "OOMKilling",
        "DeadlineExceeded",
        "BackoffLimitExceeded",
        "IdleGPUTimeLimitExceeded",
        "NodeShutdown",
        "Preempted",
        "Failed",
    }
)
FAILED_PHASES = frozenset({"Failed", "Crashed"})


@dataclass
class Occurrence:
    """One termination: when, which pod (if an event names it), and the signals that describe it."""

    at: datetime
    pod: str | None = None
    phase_update: bool = False
    signals: list[Signal] = field(default_factory=list)

    def category(self) -> Category | None:
        finding = classify(self.signals)
        return finding.category if finding else None


def _is_termination_event(event: Event) -> bool:
    reason = event.reason or ""
    if reason == "Failed":  # kubelet "Failed" is a pull/start error, not a pod termination
        return False
    if reason in TERMINATION_REASONS:
        return True
    return "failed:" in event.message and ("terminated with reason" in event.message or "exited with" in event.message)


def occurrences(
    history: Sequence[HistoryRecord],
    events: Sequence[Event],
    cutoff: datetime,
    pod_created: Mapping[str, datetime] | None = None,
) -> list[Occurrence]:
    """Distinct terminations at or after ``cutoff`` (UTC), oldest first. Inputs may be in any order.

    ``pod_created`` (when each pod was created, UTC) tells one incident from a new attempt: the terminations of
    pods that ran side by side within :data:`SAME_TERMINATION` of each other (a replica's failure and its peers'
    consequences) are one occurrence; a pod created after an earlier one ended is a new attempt, another one
    (FORMAT.md "Evidence"). Without it, each pod's termination is its own occurrence unless a phase update
    describes them."""
    created = pod_created or {}
    phase_updates: list[tuple[datetime, str, str]] = []
    for rec in history:
        pu = rec.spec.phase_update
        ts = rec.meta.creation_timestamp
        if pu is None or ts is None or ts < cutoff:
            continue
        stopped_by_policy = pu.phase == "Stopped" and any(
            s.kind == Kind.POLICY_STOP for s in text_signals(None, pu.phase_message, source="", at=None)
        )
        if pu.phase in FAILED_PHASES or stopped_by_policy:
            phase_updates.append((ts, pu.phase, pu.phase_message or ""))
    term_events = sorted(
        (e for e in events if e.created_at and e.created_at >= cutoff and _is_termination_event(e)),
        key=lambda e: e.created_at,  # type: ignore[arg-type,return-value]
    )
    result: list[Occurrence] = []
    for ts, phase, message in sorted(phase_updates):
        occ = Occurrence(at=ts, phase_update=True)
        occ.signals += text_signals(phase, message, source="history", at=ts)
        result.append(occ)
    for ev in term_events:
        assert ev.created_at is not None
        pod = ev.involved_object.name if ev.involved_object else None
        signals = text_signals(ev.reason, ev.message, source="events", at=ev.created_at, pod=pod)
        owner = next(
            (o for o in result if o.phase_update and timedelta(minutes=-1) <= o.at - ev.created_at <= SAME_TERMINATION),
            None,
        )
        if owner is None:
            owner = next(
                (
                    o
                    for o in result
                    if not o.phase_update and o.pod == pod and abs(o.at - ev.created_at) <= SAME_TERMINATION
                ),
                None,
            )
        if owner is None:
            owner = next(
                (
                    o
                    for o in result
                    if not o.phase_update and abs(o.at - ev.created_at) <= SAME_TERMINATION and _peers(o, pod, created)
                ),
                None,
            )
        if owner is None:
            owner = Occurrence(at=ev.created_at, pod=pod)
            result.append(owner)
        owner.signals += signals
    return sorted(result, key=lambda o: o.at)


def _peers(occ: Occurrence, pod: str | None, created: Mapping[str, datetime]) -> bool:
    """Whether ``pod`` ran beside the pod of ``occ`` (both created before the other's termination): one incident."""
    if pod is None or occ.pod is None or pod == occ.pod:
        return False
    mine, theirs = created.get(pod), created.get(occ.pod)
    return mine is not None and theirs is not None and mine <= occ.at and theirs <= occ.at


def same_category(found: Sequence[Occurrence], category: Category, diagnosed_at: datetime | None) -> list[datetime]:
    """Times of the occurrences of ``category``; the diagnosed failure (at ``diagnosed_at``) counts as that category."""
    times: list[datetime] = []
    for occ in found:
        is_diagnosed = diagnosed_at is not None and abs(occ.at - diagnosed_at) <= SAME_TERMINATION
        if is_diagnosed or occ.category() == category:
            times.append(occ.at)
    if diagnosed_at is not None and not any(abs(t - diagnosed_at) <= SAME_TERMINATION for t in times):
        times.append(diagnosed_at)
    return sorted(times)
