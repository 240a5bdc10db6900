"""Route: the phase rules of one Run:ai diagnosis (spec Steps 1.4-1.5), the second of its four jobs.

Given the selected workload and its Tier 1 evidence, :func:`route` decides whether the answer routes out (a
recent preemption, success, suspension, Pending or Running without a failed-pod signal, another non-terminal
phase) or goes on to the decide job. A question's words never override these rules (FORMAT.md "Questions"):
only evidence does. When Tier 1 is thin, Tier 2's pod status may confirm or rule out a symptom first. The
result is a :class:`Routed` value; the report is phrased by :func:`diagnosis.runai.reporting.phrase`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from diagnosis.k8s import Tier2Evidence
from diagnosis.report import Outcome
from diagnosis.runai import classify as cls
from diagnosis.runai import incident
from diagnosis.runai.models import SUCCESS_PHASES, TERMINAL_PHASES, Workload
from diagnosis.runai.signals import DIRECT_KINDS, Kind, Signal
from diagnosis.runai.state import Diagnosis
from diagnosis.runai.tier1 import Tier1, project_item
from diagnosis.runai.tier2 import read_tier2

_STUCK = re.compile(r"(?i)\bstuck\b")
#: Phases whose Tier 1 may miss a failed-pod signal that Tier 2's pod status would show.
_CONFIRMABLE = frozenset({"Pending", "Initializing", "Creating", "Running"})


@dataclass
class Routed:
    """What the phase rules decided. ``signals``: the Tier 1 signals of the current run (oldest first);
    ``end``: when the workload ended (UTC; None while it has not); ``final``: the signals of the diagnosed
    termination. ``outcome`` is the route out (``ROUTE_PREEMPTED``, ``SUCCEEDED``, ``OUT_OF_SCOPE``,
    ``ROUTE_PENDING``, ``ASK_PAST_RUN``, ``PHASE_ONLY``), None when the workload is to be diagnosed; with it,
    what that answer cites: the ``preempted`` signals, the Pending ``scheduling`` signals, the project's
    ``project_item`` (its quota) and whether the question asks why it is ``stuck``. ``tier2``: the Tier 2
    evidence read on the way (None when none was read)."""

    signals: list[Signal]
    end: datetime | None
    final: list[Signal]
    outcome: Outcome | None = None
    preempted: list[Signal] = field(default_factory=list)
    scheduling: list[Signal] = field(default_factory=list)
    project_item: dict[str, Any] | None = None
    stuck: bool = False
    tier2: Tier2Evidence | None = None


async def route(d: Diagnosis, workload: Workload, tier1: Tier1) -> Routed:
    """Spec Steps 1.4-1.5 for ``workload``: the route out, or a :class:`Routed` without an outcome (diagnose)."""
    # a Running workload's earlier attempts (evicted, created again) are history: only the pods of now count
    signals = incident.current(
        workload, tier1, incident.run_signals(workload, tier1, d.now, d.client.spec_call_for(workload))
    )
    end = incident.termination_time(workload)
    routed = Routed(signals, end, incident.final_window(signals, end))
    # Step 1.4: a recent preemption routes out (before the phase rule; Stopped needs it excluded).
    since = incident.last_running(tier1, end)
    preempted = [s for s in cls.preempted_before_failure(signals) if s.at is None or since is None or s.at >= since]
    if preempted:
        routed.outcome, routed.preempted = Outcome.ROUTE_PREEMPTED, preempted
        return routed
    # Step 1.5: phase rules.
    phase = workload.phase
    if phase in SUCCESS_PHASES:
        routed.outcome = Outcome.SUCCEEDED
        return routed
    if phase == "Suspended":
        routed.outcome = Outcome.OUT_OF_SCOPE
        return routed
    if phase in TERMINAL_PHASES or symptom_confirmed(phase, signals):
        return routed
    # Tier 1 shows no failed-pod signal. Before routing away, let Tier 2's pod status confirm or rule out the
    # symptom when Tier 1 is thin (events unread, a scheduled pod that is not running) or the person asked
    # about a current symptom.
    if phase in _CONFIRMABLE and tier1_is_thin(d, tier1):
        routed.tier2 = await read_tier2(d, workload, tier1, None, signals)
    t2 = d.t2_signals if routed.tier2 is not None else []
    if t2 and symptom_confirmed(phase, incident.current(workload, tier1, signals + t2)):
        return routed
    if phase == "Pending":
        routed.outcome = Outcome.ROUTE_PENDING
        routed.scheduling = [s for s in cls.drop_superseded(signals) if s.kind == Kind.SCHEDULING]
        pending = d.project_items.get(workload.id)
        routed.project_item = await pending if pending is not None else await project_item(d, workload)
        routed.stuck = asks_stuck(d.question.text)
    elif phase == "Running":
        routed.outcome = Outcome.ASK_PAST_RUN
    else:
        routed.outcome = Outcome.PHASE_ONLY
    return routed


def asks_stuck(text: str | None) -> bool:
    """Whether a question asks if the workload is stuck ("is train-7 stuck?"): its answer then says so first."""
    return bool(text and _STUCK.search(text))


def symptom_confirmed(phase: str, signals: Sequence[Signal]) -> bool:
    """Spec Step 1 phase rule for a non-terminal phase: Pending/Initializing/Creating need a direct
    failed-pod signal; Running needs a crash loop or repeated container crashes."""
    usable = cls.drop_superseded(signals)
    direct = [s for s in usable if s.kind in DIRECT_KINDS and s.kind != Kind.POLICY_STOP]
    if phase in {"Pending", "Initializing", "Creating"}:
        return bool(direct or [s for s in usable if s.kind in {Kind.POD_ERROR, Kind.EXIT_SIGNAL}])
    if phase == "Running":
        return bool(direct or [s for s in usable if s.kind == Kind.CRASHLOOP])
    return False


def tier1_is_thin(d: Diagnosis, tier1: Tier1) -> bool:
    """Tier 1 may miss a failed-pod signal: no events were read, a pod is scheduled but not running,
    or the question names a current symptom."""
    if not d.kube.available:
        return False
    if not tier1.events.ok and not tier1.history.ok:
        return True
    if d.question.effective_intent() == "current":
        return True
    return any(p.node_name and p.k8s_phase not in {"Running", "Pending", "Succeeded"} for p in tier1.pods.value or [])
