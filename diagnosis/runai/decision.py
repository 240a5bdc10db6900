"""Decide: the signals and the incident timeline of one Run:ai diagnosis to a finding (spec Steps 2-4), the third
of its four jobs.

Over the pods in the order they failed (the incident timeline, :mod:`diagnosis.timeline`, built by
:func:`diagnosis.runai.classify.order_pods`), the first failing pod's own signals and the workload's decide the
category (:func:`diagnosis.runai.classify.classify`, the strongest direct signal first); later terminations are
consequences. Tier 2 is read when Step 4 calls for it (:func:`needs_tier2`), and the decision is taken again
with its evidence. The occurrences of the category in the lookback are counted (spec Step 3). The result is a
:class:`Decision`; the report is phrased by :func:`diagnosis.runai.reporting.phrase`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from diagnosis.k8s import Tier2Evidence
from diagnosis.report import Category
from diagnosis.runai import classify as cls
from diagnosis.runai import incident, neighbours
from diagnosis.runai import recurrence as rec
from diagnosis.runai.categories import CATEGORIES
from diagnosis.runai.models import Workload
from diagnosis.runai.routing import Routed
from diagnosis.runai.signals import DIRECT_KINDS, Signal
from diagnosis.runai.state import Diagnosis, Nearby
from diagnosis.runai.tier1 import Tier1
from diagnosis.runai.tier2 import diagnosed_pod, namespace_of, read_tier2


@dataclass
class Decision:
    """What the decide job found. ``finding``: the category and the signals it rests on; ``order``: the failing
    pods in the order they failed (with the incident timeline); ``final``: the signals of the diagnosed
    termination, Tier 2's included; ``tier2``: the Tier 2 evidence (None when not read); ``preempted``: a
    preemption Tier 2 showed before the first failure (the answer then routes out, spec Step 1.4);
    ``occurrences``: the failures of the finding's category in the lookback (UTC, oldest first);
    ``pod``/``namespace``: the inspected pod; ``nearby``: the neighbours' read."""

    finding: cls.Finding
    order: cls.PodOrder
    final: list[Signal]
    tier2: Tier2Evidence | None = None
    preempted: list[Signal] = field(default_factory=list)
    occurrences: list[datetime] = field(default_factory=list)
    pod: str | None = None
    namespace: str | None = None
    #: other workloads' pods failed on the first failure's node around it (read after the finding; supporting
    #: evidence, never a cause: :mod:`diagnosis.runai.neighbours`), None when the rule did not ask for them
    nearby: Nearby | None = None


async def decide(d: Diagnosis, workload: Workload, tier1: Tier1, routed: Routed) -> Decision:
    """Spec Steps 2-4: classify from Tier 1, then from Tier 2 where Step 4 calls for it; with several pods the one
    whose failure came first decides (FORMAT.md "Workloads with several pods")."""
    signals, final, end = routed.signals, routed.final, routed.end
    tier2 = routed.tier2
    finding, order = classify_run(tier1, signals, final, end, None)
    if tier2 is None and needs_tier2(d, finding, final):
        neighbours.start(d, workload, tier1, finding, signals, order)  # beside Tier 2, when it may be needed
        tier2 = await read_tier2(d, workload, tier1, finding, signals, order)
    if tier2 is not None:
        t2 = d.t2_signals
        # Tier 2 can name the sender of a signal exit: a preemption routes out (spec Step 1.4).
        preempted = [s for s in cls.preempted_before_failure(signals + t2) if s in t2]
        if preempted:
            return Decision(finding or cls.unknown(final, True), order, list(final), tier2, preempted)
        finding, order = classify_run(tier1, signals + t2, final + t2, end, tier2)
        final = final + t2
    if finding is None:
        finding = cls.unknown(final, tier2_available=tier2 is not None)
    pod = tier2.pod_name if tier2 is not None else diagnosed_pod(tier1, finding, final, order, d.now)[0]
    namespace = tier2.namespace if tier2 is not None else namespace_of(workload, tier1)
    times = occurrences(d, tier1, finding, end, order.first if order is not None else None)
    near = await neighbours.settle(d, workload, tier1, finding, final, order, tier2, pod)  # supporting evidence only
    return Decision(finding, order, list(final), tier2, occurrences=times, pod=pod, namespace=namespace, nearby=near)


def classify_run(
    tier1: Tier1,
    signals: Sequence[Signal],
    final: Sequence[Signal],
    end: datetime | None,
    tier2: Tier2Evidence | None,
) -> tuple[cls.Finding | None, cls.PodOrder]:
    """Spec Step 4 over the pods in the order they failed: the first failing pod's own signals and the
    workload's decide; when every visible failing pod is a consequence, UNKNOWN naming the first replica."""
    window = [
        s for s in signals if end is None or s.at is None or end - cls.PEER_WINDOW <= s.at <= end + timedelta(minutes=1)
    ]
    order = cls.order_pods(window, incident.pod_ended(tier1, tier2))
    if not order.several:
        return cls.classify(final) or cls.classify(signals), order
    unknown = cls.peer_unknown(order, tier2 is not None) or unseen_first(order, tier1, tier2, window)
    if unknown is not None:
        return unknown, order
    finding = (
        cls.classify(cls.decisive_signals(final, order))
        or cls.classify(cls.decisive_signals(window, order))
        or cls.classify(cls.decisive_signals(signals, order))
    )
    return finding, order


def unseen_first(
    order: cls.PodOrder, tier1: Tier1, tier2: Tier2Evidence | None, signals: Sequence[Signal]
) -> cls.Finding | None:
    """UNKNOWN naming the pod that failed first when it cannot be seen (FORMAT.md "Workloads with several
    pods"): deleted, only the Run:ai pods list still shows it, its own evidence names no cause (a bare
    ``Error``), and Tier 2 could not read it. The later pods' exits (a launcher's, a master's) are then
    consequences, never the cause."""
    first = order.first
    if first is None or not order.several:
        return None
    own = [s for s in signals if s.pod == first]
    if any(s.kind in DIRECT_KINDS for s in own):
        return None
    pod = next((p for p in tier1.pods.value or [] if p.name == first), None)
    seen = tier2 is not None and tier2.pod is not None and tier2.pod_name == first
    if seen or pod is None or pod.deleted_at is None:
        return None
    ended = order.ended.get(first)
    when = f" at {ended:%Y-%m-%d %H:%M:%S} UTC" if ended else ""
    later = [p for p in order.failing if p != first]
    reason = (
        f"the pod that failed first, {first}, ended{when} and cannot be seen (deleted; the Run:ai pods list "
        f"says only '{pod.k8s_phase or 'failed'}')"
    )
    if later:
        reason += f"; {', '.join(later)} ended later, as consequences of that failure, not by their own fault"
    return cls.Finding(Category.UNKNOWN, tuple(own), reason=reason)


def occurrences(
    d: Diagnosis, tier1: Tier1, finding: cls.Finding, end: datetime | None, first_pod: str | None = None
) -> list[datetime]:
    """Spec Step 3: the failures of the finding's category in the lookback (history and events; FORMAT.md "one
    failure occurrence"), the diagnosed one included: the occurrence of ``first_pod`` (the pod whose failure
    decided) when one holds it, else the one at ``end``. A Job's later retry that failed otherwise is an occurrence
    of its own, not of the diagnosed category."""
    created = {p.name: p.created_at for p in tier1.pods.value or [] if p.created_at is not None}
    occ = rec.occurrences(tier1.history.value or [], tier1.all_events, d.cutoff, created)
    # A failure still in progress (crash loop, pull back-off) dates from its latest direct signal.
    diagnosed_at = end or max((s.at for s in finding.signals if s.at), default=d.now)
    own = next((o for o in occ if first_pod is not None and first_pod in o.pods), None)
    if own is not None:
        diagnosed_at = own.at
    return [t for t in rec.same_category(occ, finding.category, diagnosed_at) if t >= d.cutoff or t == diagnosed_at]


def needs_tier2(d: Diagnosis, finding: cls.Finding | None, final: Sequence[Signal]) -> bool:
    """Spec Step 4: Tier 2 when container-level evidence is needed, exit 137 is unexplained, or Tier 1
    produces no category. Container-level evidence (exit states, restart counts, previous logs) is what
    explains an OOM kill, a crash and an init failure; a node failure needs ``describe node``. Image pull,
    mount and policy findings are explained by their Tier 1 messages, except which container they failed in
    when Tier 1 says only that it was an init container (``Init:ImagePullBackOff``): the pod's spec names it."""
    if not d.kube.available:
        return False
    if finding is None or cls.unresolved_exit(final):
        return True
    if any(s.text.startswith("Init:") for s in finding.signals) and not any(s.container for s in finding.signals):
        return True
    return CATEGORIES[finding.category].tier2  # the category's own Tier 2 need (diagnosis.runai.categories)
