"""Generic reading of core/v1 Kubernetes objects as JSON dicts (issue 10 §2): container states and
terminations, restart counts, pod disruption conditions, events, node conditions and taints.

Shared by every backend that reads Kubernetes objects (Run:ai Tier 2, OSMO, a future plain Kubernetes Jobs
backend). Nothing here knows a category: a backend maps these typed views to its own signals. Pure: no I/O.
Malformed parts (a non-dict where an object is due) are skipped, never raised; times are parsed with
:func:`diagnosis.units.parse_time` (timezone-aware UTC, None when absent or unreadable).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from diagnosis.units import parse_time


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


# -- pods ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Terminated:
    """``state.terminated`` of a container: ``exit_code`` as the API gave it (normally an int; kept raw so a
    malformed value is never taken for 0), ``reason`` ("" when absent), ``message`` (None when absent)."""

    exit_code: Any
    reason: str
    message: str | None
    started_at: datetime | None
    finished_at: datetime | None


@dataclass(frozen=True)
class Waiting:
    """``state.waiting`` of a container (``reason`` e.g. ``CrashLoopBackOff``, ``ImagePullBackOff``)."""

    reason: str | None
    message: str | None


@dataclass(frozen=True)
class ContainerState:
    """One ``state`` or ``lastState`` of one container status. ``container`` is None when the status has no
    name; ``init`` is True for ``initContainerStatuses``."""

    container: str | None
    init: bool
    which: Literal["state", "lastState"]
    terminated: Terminated | None
    waiting: Waiting | None


def container_statuses(pod: dict[str, Any]) -> Iterator[tuple[bool, dict[str, Any]]]:
    """``(init, status)`` of every container status of ``pod``: init containers first, in API order."""
    status = _dict(pod.get("status"))
    for init, key in ((True, "initContainerStatuses"), (False, "containerStatuses")):
        for cs in _dicts(status.get(key)):
            yield init, cs


def _state(cs: dict[str, Any], which: Literal["state", "lastState"], init: bool) -> ContainerState:
    state = _dict(cs.get(which))
    term = _dict(state.get("terminated"))
    wait = _dict(state.get("waiting"))
    name = cs.get("name")
    return ContainerState(
        container=str(name) if name is not None else None,
        init=init,
        which=which,
        terminated=Terminated(
            exit_code=term.get("exitCode"),
            reason=term.get("reason") or "",
            message=term.get("message"),
            started_at=parse_time(term.get("startedAt")),
            finished_at=parse_time(term.get("finishedAt")),
        )
        if term
        else None,
        waiting=Waiting(reason=wait.get("reason"), message=wait.get("message")) if wait else None,
    )


def container_states(pod: dict[str, Any]) -> list[ContainerState]:
    """Every container's ``state`` then ``lastState``, init containers first (``kubectl describe pod``)."""
    return [_state(cs, which, init) for init, cs in container_statuses(pod) for which in ("state", "lastState")]


def restart_counts(pod: dict[str, Any]) -> list[tuple[str, int]]:
    """``(container, restartCount)`` of every container that restarted (a count above 0), init first."""
    out: list[tuple[str, int]] = []
    for _, cs in container_statuses(pod):
        count = cs.get("restartCount")
        if count:
            out.append((str(cs.get("name")), count))
    return out


def terminated_now(pod: dict[str, Any]) -> set[str]:
    """Names of the containers whose current ``state`` is ``terminated``."""
    return {str(cs.get("name")) for _, cs in container_statuses(pod) if _dict(cs.get("state")).get("terminated")}


#: Waiting reasons of a container that is only on its way to start, not failing.
_STARTING = frozenset({"ContainerCreating", "PodInitializing"})


def failing_now(pod: dict[str, Any]) -> bool:
    """Whether ``pod`` is failing now: its phase is ``Failed``, or a container's current state is terminated
    other than by a clean exit 0 (``OOMKilled`` counts whatever its code), or waiting for a reason other than
    starting (``CrashLoopBackOff``, ``ImagePullBackOff``, ...). A container running again after a past restart
    is not failing."""
    if _dict(pod.get("status")).get("phase") == "Failed":
        return True
    for state in container_states(pod):
        if state.which != "state":
            continue
        term = state.terminated
        if term is not None and (term.exit_code != 0 or term.reason == "OOMKilled"):
            return True
        if state.waiting is not None and state.waiting.reason and state.waiting.reason not in _STARTING:
            return True
    return False


def container_names(pod: dict[str, Any]) -> list[str]:
    """Names of every container status (init first), without empty names."""
    return [str(cs["name"]) for _, cs in container_statuses(pod) if cs.get("name")]


def main_finished_at(pod: dict[str, Any]) -> datetime | None:
    """The latest ``state.terminated.finishedAt`` of the main (not init) containers: when the pod ended."""
    times = [
        s.terminated.finished_at
        for s in container_states(pod)
        if not s.init and s.which == "state" and s.terminated is not None and s.terminated.finished_at is not None
    ]
    return max(times) if times else None


@dataclass(frozen=True)
class ContainerSpec:
    """One container of a pod's spec: ``name``, whether it is an init container, its memory limit as written
    (``"256Mi"``, None when it has none) and whether it asks for a GPU (``nvidia.com/gpu`` limit or request)."""

    name: str
    init: bool
    memory_limit: str | None
    gpu: bool


def container_specs(pod: dict[str, Any]) -> list[ContainerSpec]:
    """Every container of ``spec.initContainers`` then ``spec.containers``."""
    spec = _dict(pod.get("spec"))
    out: list[ContainerSpec] = []
    for init, key in ((True, "initContainers"), (False, "containers")):
        for c in _dicts(spec.get(key)):
            if not c.get("name"):
                continue
            res = _dict(c.get("resources"))
            limits, requests = _dict(res.get("limits")), _dict(res.get("requests"))
            memory = limits.get("memory")
            gpu = any(k.startswith("nvidia.com/") for k in (*limits, *requests))
            out.append(ContainerSpec(str(c["name"]), init, str(memory) if memory is not None else None, gpu))
    return out


def main_container(pod: dict[str, Any], workload_name: str | None) -> str | None:
    """The workload's own container in ``pod`` (not a sidecar, not an init container): the one named like the
    workload, else the one that asks for a GPU, else the first of ``spec.containers``; None without a spec."""
    mains = [c for c in container_specs(pod) if not c.init]
    for pick in (
        [c for c in mains if workload_name and c.name == workload_name],
        [c for c in mains if c.gpu],
        mains,
    ):
        if len(pick) >= 1:
            return pick[0].name
    return None


@dataclass(frozen=True)
class PodFacts:
    """The identity and pod-level status of a pod: ``name``, ``namespace``, ``node`` (``spec.nodeName``),
    ``reason``/``message`` (``status.reason``/``status.message``, e.g. ``Evicted``), ``created_at``."""

    name: str | None
    namespace: str | None
    node: str | None
    reason: str | None
    message: str | None
    created_at: datetime | None


def pod_facts(pod: dict[str, Any]) -> PodFacts:
    meta = _dict(pod.get("metadata"))
    status = _dict(pod.get("status"))
    stamp = meta.get("creationTimestamp")
    return PodFacts(
        name=meta.get("name"),
        namespace=meta.get("namespace"),
        node=_dict(pod.get("spec")).get("nodeName"),
        reason=status.get("reason"),
        message=status.get("message"),
        created_at=parse_time(stamp) if isinstance(stamp, str) else None,
    )


@dataclass(frozen=True)
class Condition:
    """One condition of a pod or a node: ``type`` ("" when absent), ``status`` ("True", "False", "Unknown";
    None when absent), ``reason`` (None when absent), ``message`` ("" when absent), ``at``
    (``lastTransitionTime``)."""

    type: str
    status: str | None
    reason: str | None
    message: str
    at: datetime | None

    @property
    def bad(self) -> bool:
        """A condition reporting trouble: a ``…Ready`` (``…Healthy``, ``…Available``) condition that is not True,
        or a problem condition (``GpuXidError``, ``KernelDeadlock``, ``MemoryPressure``…) that is True
        (node-problem-detector, GPU health monitors)."""
        healthy_when_true = self.type.endswith(("Ready", "Healthy", "Available"))
        status = str(self.status or "")
        return status != "True" if healthy_when_true else status == "True"


def _condition(cond: dict[str, Any]) -> Condition:
    return Condition(
        type=str(cond.get("type") or ""),
        status=cond.get("status"),
        reason=cond.get("reason"),
        message=str(cond.get("message") or ""),
        at=parse_time(cond.get("lastTransitionTime")),
    )


def pod_conditions(pod: dict[str, Any]) -> list[Condition]:
    """``status.conditions`` of a pod."""
    return [_condition(c) for c in _dicts(_dict(pod.get("status")).get("conditions"))]


def disruptions(pod: dict[str, Any]) -> list[Condition]:
    """The pod's true ``DisruptionTarget`` conditions: why Kubernetes is removing it (``PreemptionByScheduler``,
    ``DeletionByTaintManager``, ``TerminationByKubelet``, ``EvictionByEvictionAPI``)."""
    return [c for c in pod_conditions(pod) if c.type == "DisruptionTarget" and c.status == "True"]


# -- events ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KubeEvent:
    """One core/v1 Event: ``at`` is ``lastTimestamp``, else ``eventTime``, else ``firstTimestamp``;
    ``kind``/``name`` are the involved object's; ``count`` as given (None when absent)."""

    reason: str | None
    message: str | None
    at: datetime | None
    kind: str | None
    name: str | None
    type: str | None = None
    count: int | None = None


def event(raw: dict[str, Any]) -> KubeEvent:
    involved = _dict(raw.get("involvedObject"))
    count = raw.get("count")
    return KubeEvent(
        reason=raw.get("reason"),
        message=raw.get("message"),
        at=parse_time(raw.get("lastTimestamp") or raw.get("eventTime") or raw.get("firstTimestamp")),
        kind=involved.get("kind"),
        name=involved.get("name"),
        type=raw.get("type"),
        count=count if isinstance(count, int) and not isinstance(count, bool) else None,
    )


def events(items: Any) -> list[KubeEvent]:
    """The events of an event list's ``items`` (non-dict items skipped), in the order given."""
    return [event(raw) for raw in _dicts(items)]


# -- nodes -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Taint:
    key: str | None
    effect: str | None
    added: datetime | None


def node_name(node: dict[str, Any]) -> str | None:
    return _dict(node.get("metadata")).get("name")


def node_conditions(node: dict[str, Any]) -> list[Condition]:
    """``status.conditions`` of a node (``kubectl describe node``)."""
    return [_condition(c) for c in _dicts(_dict(node.get("status")).get("conditions"))]


def node_taints(node: dict[str, Any]) -> list[Taint]:
    """``spec.taints`` of a node (``node.kubernetes.io/unreachable``, ``…/not-ready`` when it was lost)."""
    return [
        Taint(key=t.get("key"), effect=t.get("effect"), added=parse_time(t.get("timeAdded")))
        for t in _dicts(_dict(node.get("spec")).get("taints"))
    ]


#: Taints the node controller sets on a node it lost.
LOST_NODE_TAINTS = frozenset({"node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready"})
