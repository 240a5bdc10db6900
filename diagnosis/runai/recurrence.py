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
from diagnosis.runai.classify import PEER_WINDOW, classify
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
    """One termination of the workload or of an incident of its pods: when it began (``at``), its latest
    termination (``last``), the pods whose terminations it holds, and the signals that describe it."""

    at: datetime
    pod: str | None = None
    phase_update: bool = False
    signals: list[Signal] = field(default_factory=list)
    pods: set[str] = field(default_factory=set)
    last: datetime | None = None

    def category(self) -> Category | None:
        finding = classify(self.signals)
        return finding.category if finding else None

    @property
    def ended(self) -> datetime:
        """Its latest termination (``at`` when it holds one)."""
        return self.last or self.at


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

    Pod-failure events are grouped into incidents first (:func:`_incidents`): a pod that already ran when an
    incident's first pod failed (``pod_created``: when each pod was created, UTC) and ended within
    :data:`~diagnosis.runai.classify.PEER_WINDOW` of it is a consequence in that incident; a pod created after it
    ended is a new attempt, another occurrence (FORMAT.md "Evidence"). A Failed (or policy-Stopped) phase update
    then describes the incidents that ended within :data:`SAME_TERMINATION` before it, but never two attempts
    that creation times tell apart: only the latest attempt is its termination. Without creation times, each
    pod's terminations are their own incident unless a phase update describes them."""
    created = pod_created or {}
    incidents = _incidents(
        sorted(
            (e for e in events if e.created_at and e.created_at >= cutoff and _is_termination_event(e)),
            key=lambda e: e.created_at,  # type: ignore[arg-type,return-value]
        ),
        created,
    )
    result: list[Occurrence] = []
    for ts, phase, message in _phase_updates(history, cutoff):
        occ = Occurrence(at=ts, phase_update=True)
        occ.signals += text_signals(phase, message, source="history", at=ts)
        described = [i for i in incidents if timedelta(minutes=-1) <= ts - i.ended <= SAME_TERMINATION]
        latest = max(described, key=lambda i: i.ended, default=None)
        for incident in described:
            if latest is not None and incident is not latest and _new_attempt(latest, incident, created):
                continue  # an earlier attempt: its own occurrence
            occ.signals += incident.signals
            occ.pods |= incident.pods
            incidents.remove(incident)
        result.append(occ)
    return sorted(result + incidents, key=lambda o: o.at)


def _phase_updates(history: Sequence[HistoryRecord], cutoff: datetime) -> list[tuple[datetime, str, str]]:
    """``(time, phase, message)`` of each Failed or policy-Stopped phase update at or after ``cutoff``, oldest first,
    each once."""
    out: list[tuple[datetime, str, str]] = []
    for rec in history:
        pu = rec.spec.phase_update
        ts = rec.meta.creation_timestamp
        if pu is None or ts is None or ts < cutoff:
            continue
        stopped_by_policy = pu.phase == "Stopped" and any(
            s.kind == Kind.POLICY_STOP for s in text_signals(None, pu.phase_message, source="", at=None)
        )
        if pu.phase in FAILED_PHASES or stopped_by_policy:
            out.append((ts, pu.phase, pu.phase_message or ""))
    return sorted(set(out))  # the same phase update repeated (at the same time) is one termination


def _incidents(term_events: Sequence[Event], created: Mapping[str, datetime]) -> list[Occurrence]:
    """The pod-failure events (oldest first) grouped into incidents: one pod's terminations within
    :data:`SAME_TERMINATION` of each other (or while the same pod run lasts), and the peers that ran beside the
    incident's first failed pod and ended within the peer window after it."""
    out: list[Occurrence] = []
    for ev in term_events:
        assert ev.created_at is not None
        at = ev.created_at
        pod = ev.involved_object.name if ev.involved_object else None
        signals = text_signals(ev.reason, ev.message, source="events", at=at, pod=pod)
        owner = next((o for o in reversed(out) if _belongs(o, pod, at, created)), None)
        if owner is None:
            owner = Occurrence(at=at, pod=pod)
            out.append(owner)
        if pod:
            owner.pods.add(pod)
        owner.last = max(owner.ended, at)
        owner.signals += signals
    return out


def _belongs(occ: Occurrence, pod: str | None, at: datetime, created: Mapping[str, datetime]) -> bool:
    """Whether a termination of ``pod`` at ``at`` is part of incident ``occ``: the same pod's (restarts inside
    one pod run), or a peer's that ran beside its first failed pod (created before it failed)."""
    if pod is not None and pod in occ.pods:
        born = created.get(pod)
        return at - occ.ended <= SAME_TERMINATION or (born is not None and born <= occ.at)
    if pod is None or not occ.pods:
        return False
    born = created.get(pod)
    known = all(created.get(p) is not None for p in occ.pods)
    return born is not None and known and born <= occ.at and at - occ.at <= PEER_WINDOW


def _new_attempt(later: Occurrence, earlier: Occurrence, created: Mapping[str, datetime]) -> bool:
    """Whether ``later``'s pods were all created after ``earlier`` ended (a retry with new pods), as far as
    creation times tell (unknown: not told apart)."""
    born = [created.get(p) for p in later.pods]
    return bool(born) and all(b is not None and b > earlier.ended for b in born)


def same_category(found: Sequence[Occurrence], category: Category, diagnosed_at: datetime | None) -> list[datetime]:
    """Times of the occurrences of ``category``; the diagnosed failure (at ``diagnosed_at``) counts as that category."""
    times: list[datetime] = []
    for occ in found:
        is_diagnosed = diagnosed_at is not None and (
            occ.at - SAME_TERMINATION <= diagnosed_at <= occ.ended + SAME_TERMINATION
        )
        if is_diagnosed or occ.category() == category:
            times.append(occ.at)
    if diagnosed_at is not None and not any(abs(t - diagnosed_at) <= SAME_TERMINATION for t in times):
        times.append(diagnosed_at)
    return sorted(times)
