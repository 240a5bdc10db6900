"""Classification: pure functions over :class:`~diagnosis.runai.signals.Signal` values.

One analyzer per category (k8sgpt style), each ``signals -> Finding | None``; the precedence,
"apply the strongest direct signal" (spec Step 4), is written once in :data:`PRECEDENCE`.
House rules of ``shared/cases/FORMAT.md`` are cited where they apply. No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from diagnosis.report import Category
from diagnosis.runai.signals import START_PHASE_KINDS, Kind, Signal


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
PRECEDENCE: tuple[Analyzer, ...] = (oom, image_pull, init_failed, mount_failed, node_failure, policy_stop, app_crash)


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


def classify(signals: Sequence[Signal]) -> Finding | None:
    """The first analyzer in :data:`PRECEDENCE` that finds direct evidence, or None."""
    usable = drop_superseded(signals)
    for analyzer in PRECEDENCE:
        finding = analyzer(usable)
        if finding is not None:
            return finding
    return None


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
