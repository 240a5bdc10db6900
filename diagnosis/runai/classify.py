"""Classification: pure functions over :class:`~diagnosis.runai.signals.Signal` values.

One analyzer per category (k8sgpt style), each ``signals -> Finding | None``; the precedence,
"apply the strongest direct signal" (spec Step 4), is written once in :data:`PRECEDENCE`.
House rules of ``shared/cases/FORMAT.md`` are cited where they apply. No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from diagnosis.report import Category, source_label
from diagnosis.runai.signals import DIRECT_KINDS, PREEMPTED_POD, START_PHASE_KINDS, Kind, Signal, missing_objects
from diagnosis.timeline import Entry as TimelineEntry
from diagnosis.timeline import Timeline


@dataclass(frozen=True)
class Finding:
    """A category with the signals that support it and, for UNKNOWN, why nothing more is said."""

    category: Category
    signals: tuple[Signal, ...]
    reason: str = ""
    explained_by: tuple[Signal, ...] = field(default=())


def _of(signals: Sequence[Signal], *kinds: Kind) -> list[Signal]:
    return [s for s in signals if s.kind in kinds]


def oom(signals: Sequence[Signal]) -> Finding | None:
    """``OOMKilled`` (container reason, k8sPhase, event) -> OOM_KILLED. CUDA OOM is not a kernel OOM kill."""
    hits = _of(signals, Kind.OOM_KILLED)
    return Finding(Category.OOM_KILLED, tuple(hits)) if hits else None


def image_pull(signals: Sequence[Signal]) -> Finding | None:
    """ImagePullBackOff / ErrImagePull / failed pull -> IMAGE_PULL_FAILED."""
    hits = _of(signals, Kind.IMAGE_PULL)
    return Finding(Category.IMAGE_PULL_FAILED, tuple(hits)) if hits else None


def init_failed(signals: Sequence[Signal]) -> Finding | None:
    """Non-zero init-container exit (or Init:Error / Init:CrashLoopBackOff) -> INIT_FAILED.

    The back-off restarts of the same pod are kept with it: they name the init container."""
    hits = _of(signals, Kind.INIT_FAILED)
    if not hits:
        return None
    pods = {s.pod for s in hits}
    named = {s.container for s in hits if s.container}
    restarts = [s for s in _of(signals, Kind.CRASHLOOP) if s.pod in pods and s.container and s.container not in named]
    return Finding(Category.INIT_FAILED, tuple(hits + restarts[-1:]))


def missing_object(signals: Sequence[Signal]) -> Finding | None:
    """A message naming a missing Secret, ConfigMap or PVC -> DATASOURCE_MOUNT_FAILED, also under an ``Init:``
    status, unless an init container really ran and exited non-zero (FORMAT.md "Run:ai phases")."""
    hits = [s for s in _of(signals, Kind.MOUNT_FAILED) if missing_objects(s.text)]
    if not hits or any(s.exit_code for s in _of(signals, Kind.INIT_FAILED)):
        return None
    return Finding(Category.DATASOURCE_MOUNT_FAILED, tuple(_of(signals, Kind.MOUNT_FAILED)))


def mount_failed(signals: Sequence[Signal]) -> Finding | None:
    """FailedMount, a missing PVC/Secret/ConfigMap or key, CreateContainerConfigError -> DATASOURCE_MOUNT_FAILED."""
    hits = _of(signals, Kind.MOUNT_FAILED)
    return Finding(Category.DATASOURCE_MOUNT_FAILED, tuple(hits)) if hits else None


def node_failure(signals: Sequence[Signal]) -> Finding | None:
    """NotReady / lost node, taint-manager or node-pressure eviction, a failing GPU runtime -> NODE_FAILURE."""
    hits = _of(signals, Kind.NODE_FAILURE)
    return Finding(Category.NODE_FAILURE, tuple(hits)) if hits else None


def policy_stop(signals: Sequence[Signal]) -> Finding | None:
    """Deadline, idle timeout, maximum duration, manual stop -> SCHEDULING_POLICY_TERMINATED."""
    hits = _of(signals, Kind.POLICY_STOP)
    return Finding(Category.SCHEDULING_POLICY_TERMINATED, tuple(hits)) if hits else None


def app_crash(signals: Sequence[Signal]) -> Finding | None:
    """The container's own program failed -> CRASH_APP_ERROR.

    Non-zero main-container exit without a system signal (132/134/136/139 count as the program's
    own); exec format / executable not found / StartError; CUDA out of memory raised inside the
    program; a liveness or startup probe kill by the kubelet (which names who sent the SIGKILL).
    """
    hits = _of(signals, Kind.APP_EXIT, Kind.START_ERROR_APP, Kind.CUDA_OOM)
    hits = [s for s in hits if not s.init]
    kills = _of(signals, Kind.LIVENESS_KILL)
    if kills:
        probes = _of(signals, Kind.LIVENESS_FAILING)
        return Finding(Category.CRASH_APP_ERROR, tuple(kills + probes[-1:] + hits))
    return Finding(Category.CRASH_APP_ERROR, tuple(hits)) if hits else None


Analyzer = Callable[[Sequence[Signal]], Finding | None]

#: The strongest direct signal wins, in this order (spec Step 4; FORMAT.md house rules: the pod's own
#: mount error beats the node failure that caused it; policy stops and node failures explain a
#: signal exit that a crash would not).
PRECEDENCE: tuple[Analyzer, ...] = (
    oom,
    image_pull,
    missing_object,
    init_failed,
    mount_failed,
    node_failure,
    policy_stop,
    app_crash,
)


def drop_superseded(signals: Sequence[Signal]) -> list[Signal]:
    """Remove start-phase errors (image pull, mount) of a pod that later started a container."""
    last_start: dict[str | None, object] = {}
    for s in signals:
        if s.kind == Kind.STARTED and s.at is not None:
            prev = last_start.get(s.pod)
            if prev is None or s.at > prev:  # type: ignore[operator]
                last_start[s.pod] = s.at
    out = []
    for s in signals:
        started = last_start.get(s.pod)
        if s.kind in START_PHASE_KINDS and s.at is not None and started is not None and s.at < started:  # type: ignore[operator]
            continue
        out.append(s)
    return out


def drop_stale_scheduler(signals: Sequence[Signal]) -> list[Signal]:
    """For Pending, the newest scheduler message decides (FORMAT.md "Run:ai phases"): signals of an earlier
    scheduler message that the newest one no longer repeats (a claim that was still binding) are noise.
    Timeless scheduler messages (``pendingSchedulingMessages``) describe now and are kept."""
    timed = [s for s in signals if s.scheduler and s.at is not None]
    if not timed:
        return list(signals)
    newest = max(s.at for s in timed if s.at is not None)
    current = {s.text for s in timed if s.at == newest}
    return [s for s in signals if not (s.scheduler and s.at is not None and s.at < newest and s.text not in current)]


def classify(signals: Sequence[Signal]) -> Finding | None:
    """The first analyzer in :data:`PRECEDENCE` that finds direct evidence, or None."""
    usable = drop_superseded(signals)
    for analyzer in PRECEDENCE:
        finding = analyzer(usable)
        if finding is not None:
            return finding
    return None


#: Kinds that say a pod failed (its termination, or a failure still in progress).
POD_FAILURE_KINDS = (DIRECT_KINDS - {Kind.POLICY_STOP}) | {
    Kind.EXIT_SIGNAL,
    Kind.POD_ERROR,
    Kind.CRASHLOOP,
    Kind.CLEANUP_SIGNAL,
    Kind.COLLECTIVE_TIMEOUT,
}


def preempted_before_failure(signals: Sequence[Signal]) -> list[Signal]:
    """The preemptions that may route the answer out (FORMAT.md: "Preemption routing applies only when the
    preemption came before the first failure"). A preemption is a consequence when another pod had already failed
    with a direct signal of its own (an OOM kill, an application exit, a node fault: a gang's peers evicted once
    one replica died), whatever reason its own message gives. The preempted pod's own termination never counts
    against it (it is the preemption's doing). Pure."""
    preempted = [s for s in signals if s.kind == Kind.PREEMPTED]
    if not preempted:
        return preempted
    hit = {s.pod for s in preempted if s.pod} | {
        m.group(1) for s in preempted for m in [PREEMPTED_POD.search(s.text)] if m is not None
    }
    own = DIRECT_KINDS - {Kind.POLICY_STOP}
    failures = [s.at for s in signals if s.kind in own and s.at and s.pod and s.pod not in hit]
    if not failures:
        return preempted
    first = min(failures)
    return [s for s in preempted if s.at is None or s.at < first]


#: Kinds that mark a pod's termination as a consequence when a peer failed before it (FORMAT.md "Workloads
#: with several pods": the operator's cleanup SIGTERM, exit 143, NCCL/collective timeouts and watchdog aborts).
CONSEQUENCE_KINDS = frozenset({Kind.CLEANUP_SIGNAL, Kind.COLLECTIVE_TIMEOUT})
#: How long before the end a peer's earlier failure is still part of the same failure (NCCL timeouts are 10-30 min).
PEER_WINDOW = timedelta(minutes=60)


@dataclass(frozen=True)
class PodOrder:
    """The failing pods of one workload in the order they failed (FORMAT.md "the first failing pod decides").

    ``first``: the pod whose own failure came first and is visible (None when no visible pod's failure is its
    own); ``failing``: every pod with a failure signal, earliest first; ``consequences``: pods whose termination
    followed a peer's failure or the controller's failure report and carries a cleanup/collective signal;
    ``report``: the controller's failure report (a "Worker replica(s) failed" event), when there is one;
    ``missing_replica``: the replica type that report names when none of its pods can be seen."""

    first: str | None = None
    failing: tuple[str, ...] = ()
    ended: Mapping[str, datetime] = field(default_factory=dict)
    consequences: tuple[str, ...] = ()
    report: Signal | None = None
    missing_replica: str | None = None
    #: the failing pods as an incident timeline (:mod:`diagnosis.timeline`, which holds the first-failure rule)
    timeline: Timeline = field(default_factory=Timeline)

    @property
    def several(self) -> bool:
        return len(self.failing) > 1 or bool(self.consequences)


def _replica_of(pod: str, replica: str) -> bool:
    """Whether pod ``pod`` is a ``replica`` replica (``llama-ft-worker-0`` is a Worker)."""
    return f"-{replica.lower()}-" in f"{pod.lower()}-"


def order_pods(signals: Sequence[Signal], pod_ended: Mapping[str, datetime]) -> PodOrder:
    """Order the failing pods by when they failed (pure; spec Step 2 evidence ordering over all pods).

    A pod's failure time is its termination time (``pod_ended``: container ``finishedAt``, the pod's
    ``completedAt``) or else its earliest failure signal. A pod is a *consequence* when its evidence carries a
    cleanup or collective signal (SIGTERM, "Stopping container", NCCL timeout) and either a peer failed before
    it or the controller had already reported a replica's failure. The first pod that is not a consequence
    decides; when every visible failing pod is a consequence, the cause is in a pod that cannot be seen."""
    kinds_of: dict[str, set[Kind]] = {}
    first_signal: dict[str, datetime] = {}
    for s in signals:
        if s.pod is None or s.kind not in POD_FAILURE_KINDS:
            continue
        kinds_of.setdefault(s.pod, set()).add(s.kind)
        if s.at is not None and (s.pod not in first_signal or s.at < first_signal[s.pod]):
            first_signal[s.pod] = s.at
    if not kinds_of:
        return PodOrder()
    ended = {p: pod_ended.get(p) or first_signal.get(p) for p in kinds_of}
    far = datetime.max.replace(tzinfo=next(iter(t for t in ended.values() if t), datetime.now().astimezone()).tzinfo)
    failing = sorted(kinds_of, key=lambda p: (ended[p] or far, p))
    reports = sorted((s for s in signals if s.kind == Kind.FAILURE_REPORT and s.replica), key=lambda s: s.at or far)
    report = reports[0] if reports else None
    consequences: list[str] = []
    for i, pod in enumerate(failing):
        at = ended[pod]
        stopped = bool(kinds_of[pod] & CONSEQUENCE_KINDS)
        peer_before = at is not None and any(ended[q] is not None and ended[q] < at for q in failing[:i])  # type: ignore[operator]
        other_replica = report is not None and report.replica is not None and not _replica_of(pod, report.replica)
        reported_before = other_replica and (report.at is None or at is None or report.at <= at)  # type: ignore[union-attr]
        # Ended after the controller had already declared another replica failed: cleanup, even unlabelled.
        reported_strictly = other_replica and at is not None and report.at is not None and report.at < at  # type: ignore[union-attr]
        if (stopped and (peer_before or reported_before)) or reported_strictly:
            consequences.append(pod)
    own_signals: dict[str, list[Signal]] = {}
    for s in signals:
        if s.pod in kinds_of and s.kind in POD_FAILURE_KINDS:
            own_signals.setdefault(s.pod, []).append(s)
    timeline = Timeline.of(
        _ending(pod, ended[pod], own_signals.get(pod, []), own=pod not in consequences) for pod in failing
    )
    first = timeline.first()
    missing = None
    if first is None and report is not None and report.replica:
        if not any(_replica_of(p, report.replica) for p in failing):
            missing = report.replica
    return PodOrder(
        first=first.subject if first is not None else None,
        failing=tuple(failing),
        ended={p: t for p, t in ended.items() if t is not None},
        consequences=tuple(consequences),
        report=report,
        missing_replica=missing,
        timeline=timeline,
    )


#: Which of a pod's failure signals names its ending best, strongest first (the timeline's words).
_ENDING_ORDER: tuple[Kind, ...] = (
    Kind.OOM_KILLED,
    Kind.CUDA_OOM,
    Kind.NODE_FAILURE,
    Kind.IMAGE_PULL,
    Kind.MOUNT_FAILED,
    Kind.INIT_FAILED,
    Kind.START_ERROR_APP,
    Kind.LIVENESS_KILL,
    Kind.APP_EXIT,
    Kind.COLLECTIVE_TIMEOUT,
    Kind.CLEANUP_SIGNAL,
    Kind.EXIT_SIGNAL,
    Kind.POD_ERROR,
    Kind.CRASHLOOP,
)


#: Event reasons that report a failure without naming it (its message does): the timeline names the kind.
_REPORTING_REASONS = frozenset({"PodFailed", "Failed", "BackOff", "Killing", "FailedCreate", "Warning"})


def _names(signal: Signal) -> bool:
    """Whether the signal's reason names its failure (not one of :data:`_REPORTING_REASONS`, nor empty)."""
    return bool(signal.reason) and signal.reason not in _REPORTING_REASONS


def _ending(pod: str, at: datetime | None, signals: Sequence[Signal], *, own: bool) -> TimelineEntry:
    """A pod's ending as a timeline entry: its strongest failure signal in a few words (``"OOMKilled (exit
    137)"``), that signal's source and container."""
    ranked = [s for s in signals if s.kind in _ENDING_ORDER]
    # the strongest kind; of its signals, one whose reason names it (a container's "OOMKilled" over the
    # "PodFailed" of the event that reported it)
    best = min(ranked, key=lambda s: (_ENDING_ORDER.index(s.kind), not _names(s))) if ranked else None
    if best is None:
        return TimelineEntry(pod, at, "failed", own=own)
    what = best.reason if best.reason and _names(best) else _KIND_WORDS.get(best.kind, best.kind.value)
    codes = sorted({x.exit_code for x in signals if x.exit_code is not None})
    exits = f"exit {', '.join(str(c) for c in codes)}"
    if codes and what == _KIND_WORDS[Kind.APP_EXIT]:
        what = exits  # "exit 1", not "exit code (exit 1)"
    elif codes and not any(str(c) in what for c in codes):
        what += f" ({exits})"
    return TimelineEntry(pod, at, what, source=best.source, container=best.container, own=own)


def decisive_signals(signals: Sequence[Signal], order: PodOrder) -> list[Signal]:
    """The signals that may decide the category: those of the first failing pod and those bound to no failing
    pod (the workload's phase, conditions, controller events). Later peers' signals are consequences."""
    if not order.failing:
        return list(signals)
    keep = {order.first} if order.first else set()
    return [s for s in signals if s.pod is None or s.pod not in order.failing or s.pod in keep]


def peer_unknown(order: PodOrder, tier2_available: bool) -> Finding | None:
    """UNKNOWN naming the replica that failed first when no visible pod's failure is its own (FORMAT.md)."""
    if order.first is not None or not order.consequences:
        return None
    report = order.report
    if order.missing_replica and report is not None:
        reason = (
            f"the first failure was in a {order.missing_replica} replica ({report.reason or 'event'}: "
            f"{report.text}), whose pod cannot be seen; "
        )
    else:
        reason = "the pod that failed first cannot be seen; "
    reason += (
        f"pod {', '.join(order.consequences)} ended later, stopped as a consequence (cleanup SIGTERM or a "
        "collective timeout waiting for the failed peer), not by its own fault"
    )
    if not tier2_available:
        reason += "; Tier 2 Kubernetes evidence was not available"
    return Finding(Category.UNKNOWN, (report,) if report is not None else (), reason=reason)


#: Kinds that name their category by themselves (a verbatim reason or message): a *direct* verdict.
NAMING_KINDS = frozenset(
    {
        Kind.OOM_KILLED,
        Kind.IMAGE_PULL,
        Kind.MOUNT_FAILED,
        Kind.NODE_FAILURE,
        Kind.POLICY_STOP,
        Kind.START_ERROR_APP,
        Kind.CUDA_OOM,
        Kind.LIVENESS_KILL,
    }
)


_KIND_WORDS: dict[Kind, str] = {
    Kind.OOM_KILLED: "OOMKilled",
    Kind.IMAGE_PULL: "image pull error",
    Kind.INIT_FAILED: "init container failure",
    Kind.MOUNT_FAILED: "mount error",
    Kind.NODE_FAILURE: "node failure",
    Kind.POLICY_STOP: "policy stop",
    Kind.APP_EXIT: "exit code",
    Kind.START_ERROR_APP: "start error",
    Kind.CUDA_OOM: "CUDA out of memory",
    Kind.LIVENESS_KILL: "liveness probe kill",
    Kind.EXIT_SIGNAL: "signal exit",
    Kind.POD_ERROR: "pod Error",
    Kind.FAILURE_REPORT: "failure report",
}


def _phrase(s: Signal) -> str:
    what = s.reason or _KIND_WORDS.get(s.kind, s.kind.value)
    if s.exit_code is not None:
        what += f" (exit code {s.exit_code})"
    return f"{what} in {source_label(s.source)}"


def signal_phrases(signals: Sequence[Signal], limit: int = 4) -> list[str]:
    """Short verbatim phrases naming ``signals`` ("OOMKilled (exit code 137) in pod status"), once each."""
    return list(dict.fromkeys(_phrase(s) for s in signals))[:limit]


def confidence(finding: Finding) -> tuple[str, list[str]]:
    """How directly ``finding`` rests on its evidence (issue 8 §5): ``direct`` when a signal names the category
    by itself (a reason or message such as OOMKilled, an image pull error, a missing Secret, a node condition,
    a probe kill), ``inferred`` when it follows from an exit code or a status with no message (an init container's
    exit, ``Init:Error``), ``none`` for UNKNOWN. Returns (level, the signals it rests on as short phrases)."""
    phrases = list(dict.fromkeys(_phrase(s) for s in finding.signals))[:4]
    if finding.category == Category.UNKNOWN:
        return "none", phrases
    naming = [s for s in finding.signals if s.kind in NAMING_KINDS or (s.kind == Kind.INIT_FAILED and s.exit_code)]
    if naming:
        return "direct", list(dict.fromkeys(_phrase(s) for s in naming))[:4]
    return "inferred", phrases


def unresolved_exit(signals: Sequence[Signal]) -> list[Signal]:
    """Exit 137/143/128+n signals with no named sender (spec: "Exit 137 without OOMKilled remains unresolved")."""
    return _of(signals, Kind.EXIT_SIGNAL)


def unknown(signals: Sequence[Signal], tier2_available: bool) -> Finding:
    """UNKNOWN: the evidence names no cause (FORMAT.md: exit 137 with nothing that explains it;
    no Tier 2 and thin Tier 1)."""
    exits = unresolved_exit(signals)
    errors = _of(signals, Kind.POD_ERROR)
    if exits:
        codes = sorted({s.exit_code for s in exits if s.exit_code is not None})
        what = ", ".join(str(c) for c in codes)
        reason = (
            f"exit code {what} means the container got a kill signal, but no evidence names who sent it "
            "(no OOMKilled, no probe kill, eviction, preemption or node event)"
        )
    elif errors:
        reason = "the pod shows Error, but no exit code, reason or log names the cause"
    else:
        reason = "no direct failure signal was found"
    if not tier2_available:
        reason += "; Tier 2 Kubernetes evidence (previous logs, pod description, events) was not available"
    return Finding(Category.UNKNOWN, tuple(exits or errors), reason=reason)
