"""Evidence as data: raw Run:ai and Kubernetes objects turned into :class:`Signal` values.

A signal is one observed fact that can support a category: an ``OOMKilled`` reason, an image
pull error, a non-zero exit code, a liveness kill... Each carries the raw text it was read from
(quoted verbatim in the report), the call it came from, its time, pod and container. Nothing
here decides a verdict; :mod:`diagnosis.runai.classify` does, purely, over these values.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from diagnosis import kube_objects as kube
from diagnosis import kube_text as kt
from diagnosis.kube_objects import ContainerState
from diagnosis.kube_text import gpu_hardware_fault
from diagnosis.redact import sanitize
from diagnosis.untrusted import clip


class Kind(StrEnum):
    """What a signal says. Direct kinds name a category by themselves; others support or explain."""

    OOM_KILLED = "oom_killed"
    IMAGE_PULL = "image_pull"
    INIT_FAILED = "init_failed"
    MOUNT_FAILED = "mount_failed"
    NODE_FAILURE = "node_failure"
    POLICY_STOP = "policy_stop"
    APP_EXIT = "app_exit"  # non-zero exit of the program itself (1-127, 132, 134, 136, 139, ...)
    START_ERROR_APP = "start_error_app"  # exec format / executable not found / StartError of the main container
    CUDA_OOM = "cuda_oom"  # CUDA out of memory raised inside the program
    LIVENESS_KILL = "liveness_kill"  # the kubelet killed the container for a failing probe
    LIVENESS_FAILING = "liveness_failing"  # probe failures (supporting)
    EXIT_SIGNAL = "exit_signal"  # 137, 143 or another 128+n without a named sender
    CRASHLOOP = "crashloop"  # CrashLoopBackOff / back-off restarting failed container
    PREEMPTED = "preempted"
    SCHEDULING = "scheduling"  # Unschedulable, over quota, insufficient resources
    POD_ERROR = "pod_error"  # k8sPhase Error: pod failure that still needs a cause
    STARTED = "started"  # a container started (supersedes earlier start-phase errors of that pod)
    LOG_ERROR = "log_error"  # an error line in a container log (explains; never classifies alone)
    FAILURE_REPORT = "failure_report"  # a controller reporting the workload failed (BackoffLimitExceeded, ...)
    CLEANUP_SIGNAL = "cleanup_signal"  # the container was told to stop: SIGTERM, "Stopping container" (a sender)
    COLLECTIVE_TIMEOUT = "collective_timeout"  # NCCL/collective timeout or watchdog abort (waiting for a peer?)


DIRECT_KINDS = frozenset(
    {
        Kind.OOM_KILLED,
        Kind.IMAGE_PULL,
        Kind.INIT_FAILED,
        Kind.MOUNT_FAILED,
        Kind.NODE_FAILURE,
        Kind.POLICY_STOP,
        Kind.APP_EXIT,
        Kind.START_ERROR_APP,
        Kind.CUDA_OOM,
        Kind.LIVENESS_KILL,
    }
)
# Signals that describe a pod that could not start; a later "Started" of the same pod supersedes them.
START_PHASE_KINDS = frozenset({Kind.IMAGE_PULL, Kind.MOUNT_FAILED})
APP_SIGNAL_EXITS = frozenset({132, 134, 136, 139})  # SIGILL, SIGABRT, SIGFPE, SIGSEGV raised by the program


@dataclass(frozen=True)
class Signal:
    """One fact. ``text``: the raw message/reason quoted verbatim; ``source``: the call it came from."""

    kind: Kind
    text: str
    source: str
    at: datetime | None = None
    pod: str | None = None
    container: str | None = None
    exit_code: int | None = None
    reason: str | None = None
    init: bool = False
    node: str | None = None
    label: str | None = None  # where in the object the text was read ("phaseMessage", "phase update Failed")
    replica: str | None = None  # FAILURE_REPORT: the replica type a controller says failed ("Worker")
    scheduler: bool = False  # read from a scheduler message (FailedScheduling, pendingSchedulingMessages)


# -- text patterns (one place) --------------------------------------------------------------------
# Kubernetes wording OSMO reads too lives in :mod:`diagnosis.kube_text` (``kt``); the patterns below either
# add Run:ai's own words to it or are read by Run:ai alone.

#: the pod a scheduler's eviction message names ("Pod runai-llm/x-master-0 was preempted by …")
PREEMPTED_POD = re.compile(r"(?i)\bpods?\s+(?:[\w.-]+/)?([\w.-]+)\s+(?:was|were|is)\s+(?:preempted|evicted)")

_TERMINATED = re.compile(
    r"(?i)\b(init\s+)?container\s+\"?([A-Za-z0-9._-]+)\"?\s+(?:terminated\s+with\s+reason\s+(\w+)\s*"
    r"\(exit\s+code\s+(\d+)\)|exited\s+with\s+(?:exit\s+)?code\s+(\d+))"
)
_IMAGE_PULL_REASONS = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "ImageInspectError"}
_IMAGE_PULL_TEXT = re.compile(
    r"(?i)failed to pull image|back-off pulling image|errimagepull|imagepullbackoff|pull access denied|"
    r"manifest unknown|invalidimagename|failed to resolve reference"
)
_MOUNT_REASONS = {"FailedMount", "FailedAttachVolume", "FailedMapVolume", kt.CREATE_CONTAINER_CONFIG_ERROR}
_MOUNT_TEXT = kt.any_of(
    kt.PVC_NOT_FOUND,
    r"unable to attach or mount volumes|mountvolume\.\w+ failed|secrets?\s+\"[^\"]+\"\s+not\s+found|"
    r"configmaps?\s+\"[^\"]+\"\s+not\s+found|couldn't find key|failed to sync (?:secret|configmap)",
    kt.CONFIG_ERROR,
    kt.UNBOUND_PVC,
    r"persistentvolumeclaim is not bound|volume .* not found|bound to non-existent persistentvolume|"
    r"persistentvolumes?\s+\"[^\"]+\"\s+not\s+found",
)
#: The kubelet refusing to create the container because the image's user breaks the pod's security context
#: (``container has runAsNonRoot and image will run as root``, ``image has non-numeric user (app), cannot verify
#: user is non-root``): a CreateContainerConfigError caused by the image, not a missing Secret or ConfigMap
#: (FORMAT.md: "a start error caused by the image or command ... is CRASH_APP_ERROR").
_SECURITY_CONFLICT = re.compile(
    r"(?i)runAsNonRoot and image will run as root|image has non-numeric user|cannot verify user is non-root"
)
_NODE_REASONS = {
    "NodeNotReady",
    "TaintManagerEviction",
    "NodeLost",
    "NodeShutdown",
    "UnexpectedAdmissionError",
    "Rebooted",
    # the node's runtime or CNI could not create the pod's sandbox (network setup, runtime handler): no container
    # of the workload ran, and nothing of its own is at fault (FORMAT.md: "a container that cannot start because
    # the node's runtime ... fails")
    "FailedCreatePodSandBox",
}
# Node trouble in words is kt.NODE_TROUBLE. OSMO also reads a bare "NotReady" as node trouble; Run:ai cannot:
# "NotReady" is the Run:ai scheduler's pod-group reason (_SCHED_REASONS), which says nothing about a node.
# The node's GPU stack failing (runtime, hook, device plugin): always the node, whatever else the message says.
_NODE_GPU_TEXT = re.compile(
    r"(?i)nvidia-container-cli|nvidia-container-runtime|nvidia-container-toolkit|prestart hook|"
    r"unhealthy (?:gpu|devices?)|cannot allocate unhealthy devices|\bnvml\b|driver/library version mismatch"
)
# The container runtime failing to create or name the container: the node, unless the message shows the
# image or command at fault (exec format error, executable not found), which are the program's own.
_NODE_RUNTIME_TEXT = re.compile(
    r"(?i)failed to reserve container name|name is reserved|container runtime is down|"
    r"failed to create shim|failed to create containerd (?:task|container)|context deadline exceeded"
)
# A controller saying the workload failed: the policy's verdict or the operator's summary, never a cause by itself
# (FORMAT.md "Quote the decisive Tier 1 reasons verbatim even when the answer is UNKNOWN").
_FAILURE_REPORT_REASONS = frozenset({"BackoffLimitExceeded", "DeadlineExceeded"})
_FAILURE_REPORT_TEXT = re.compile(
    r"(?i)job has reached the specified backoff limit|job was active longer than specified deadline|"
    r"has failed because|replicas?\(s\)? failed|\bjob failed\b"
)
_REPLICA_FAILED = re.compile(r"(?i)\b(\d+)\s+([A-Za-z]+)\s+replica(?:\(s\)|s)?\s+(?:has |have )?failed")
# The container was told to stop (the sender of a SIGTERM): the kubelet's "Stopping container" (not a probe kill)
# and a program reporting the SIGTERM it received. A peer's cleanup, a deletion or a drain; never a cause alone.
_STOPPING_CONTAINER = re.compile(r"(?i)^stopping container\b")
_SIGTERM_LOG = re.compile(
    r"(?i)got signal:? 15\b|received (?:signal )?sigterm|\bsigterm received|signal 15 \(sigterm\)|"
    r"terminated by signal sigterm|caught sigterm|signalexception.*\b15\b"
)
_VOLUME_RUNTIME_TEXT = re.compile(
    r"(?i)stale (?:nfs )?file handle|error mounting \"|failed to mount|mount(?:ing)? .{0,200}(?:no such file|"
    r"permission denied|not a directory)|kubernetes\.io~[a-z-]+/|failed to prepare subpath|subpath .{0,80}"
    r"(?:not|no such)|failed to stat \"?/var/lib/kubelet/pods/\S+/volumes/|transport endpoint is not connected|"
    r"input/output error.{0,40}volume"
)
_POLICY_REASONS = {"DeadlineExceeded", "IdleGPUTimeLimitExceeded", "MaxDurationExceeded", "IdleTimeout", "Stopped"}
_POLICY_TEXT = re.compile(
    r"(?i)activedeadlineseconds|deadlineexceeded|job was active longer than specified deadline|"
    r"idle (?:gpu )?time limit|idle[- ]timeout|idle gpu|maximum (?:run ?time|duration|runtime)|"
    r"max(?:imum)?[- ]duration|time limit policy|\bstopped by\b|\bwas stopped\b|"
    r"manually stopped|manual(?:ly)? stop|stopped manually|(?:user|owner) requested (?:a )?(?:stop|termination)|"
    r"stop (?:was )?requested|requested (?:a )?stop|\bworkload stopped\b"
)
_PREEMPT_TEXT = re.compile(r"(?i)\bpreempted\b|\bpreemptionby\w*|preempted and rescheduled")
# A scheduler eviction (KAI/runai-scheduler "Evict") for preempt, reclaim or consolidation is a preemption;
# the gang-scheduling eviction ("doesn't meet the minimum required number of pods") is not.
_EVICT_PREEMPT_TEXT = re.compile(r"(?i)\breclaim|\bconsolidat|bin packing|higher priority")
_SCHED_REASONS = {"Unschedulable", "FailedScheduling", "NotReady", "Pipelined", "NonPreemptibleOverQuota", "OverLimit"}
_SCHED_TEXT = kt.any_of(
    r"\d+/\d+ nodes are available",
    kt.INSUFFICIENT_GPU,
    kt.INSUFFICIENT_CPU,
    kt.INSUFFICIENT_MEMORY,
    kt.OVER_QUOTA,
    r"quota has reached|not enough resources|unschedulable|waiting for \d+ pods",
)
_LIVENESS_KILL = re.compile(r"(?i)failed (?:liveness|startup) probe,? will be restarted")
_PROBE_FAILED = re.compile(r"(?i)(?:liveness|startup) probe failed")
_START_ERROR_REASONS = {"StartError", "RunContainerError", "CreateContainerError", "ContainerCannotRun"}
_START_APP_TEXT = re.compile(
    r"(?i)exec format error|executable file not found|no such file or directory: unknown|"
    r"exec: \"[^\"]+\": (?:stat|permission denied)|permission denied: unknown"
)
# An OOM kill in words is kt.OOM_KILL. OSMO also reads a bare "out of memory" in its own failure message; Run:ai
# cannot: that phrase ends "CUDA out of memory" (kt.CUDA_OOM), the program's own error, never the OOM killer.
_BACKOFF_RESTART = re.compile(r"(?i)back-off restarting failed container\s+\"?([A-Za-z0-9._-]+)")
_LOG_ERROR = re.compile(
    r"(?i)^\s*(?:[\w.]+(?:error|exception)\b|traceback \(most recent call last\)|fatal error|fatal:|panic:|"
    r"error:|\S+: error:|segmentation fault|killed$|.*cuda out of memory|.*nccl.*(?:error|timeout|watchdog))"
)


_MISSING_OBJECT = re.compile(
    r'(?i)(?:persistentvolumeclaims?|persistentvolumes?|secrets?|configmaps?)\s+"[^"]+"\s+not\s+found|'
    r"couldn't find key \S+ in \S+ \S+|"
    r'persistentvolumeclaims?\s+"[^"]+"\s+bound to non-existent persistentvolumes?\s+"[^"]+"'
)


def missing_objects(text: str) -> list[str]:
    """Every missing Secret/ConfigMap/PVC or key a message names, verbatim (``secrets "x" not found``)."""
    return [m.group(0) for m in _MISSING_OBJECT.finditer(text)]


_START_CAUSE = re.compile(
    r'(?i)exec: "[^"]+": (?:executable file not found in \$PATH|stat [^:]+: no such file or directory'
    r"|permission denied)|exec format error|executable file not found in \$PATH|no such file or directory"
    r"|container has runAsNonRoot and image will run as root|image has non-numeric user \([^)\n]{0,64}\)"
)


def start_error_cause(text: str) -> str | None:
    """The verbatim clause of a runtime start error that names the image's or command's fault, or None."""
    m = _START_CAUSE.search(text)
    return m.group(0) if m else None


def classify_exit(code: int) -> Kind:
    """Exit code -> kind: 137/143/other 128+n without a named sender stay unresolved (EXIT_SIGNAL)."""
    if code in APP_SIGNAL_EXITS:
        return Kind.APP_EXIT
    if 128 < code < 160:
        return Kind.EXIT_SIGNAL
    return Kind.APP_EXIT


def text_signals(
    reason: str | None,
    message: str | None,
    *,
    source: str,
    at: datetime | None,
    pod: str | None = None,
    container: str | None = None,
    node: str | None = None,
    label: str | None = None,
) -> list[Signal]:
    """Signals in one (reason, message) pair: an event, a phase update, a condition, a waiting state.
    ``label`` names the field the text came from, for the report."""
    # Evidence text is untrusted: masked and withheld here, before it is matched, quoted or cut (issue 8 §3); a
    # text past MAX_TEXT is clipped first, so neither costs the event loop more than a bounded time (issue 24).
    reason = sanitize(clip(reason or ""))
    message = sanitize(clip(message or ""))
    both = f"{reason} {message}"
    quote = message or reason
    out: list[Signal] = []
    scheduler = reason in _SCHED_REASONS or label == "pendingSchedulingMessages"

    def add(kind: Kind, **kw: Any) -> None:
        out.append(
            Signal(
                kind=kind,
                text=quote,
                source=source,
                at=at,
                pod=pod,
                container=kw.pop("container", container),
                reason=reason or None,
                node=node,
                label=label,
                scheduler=scheduler,
                **kw,
            )
        )

    _exit_rules(reason, message, both, add, out)
    _start_rules(reason, message, both, add, out)
    _lifecycle_rules(reason, message, both, add, out)
    return out


_Add = Callable[..., None]


def _exit_rules(reason: str, message: str, both: str, add: _Add, out: list[Signal]) -> None:
    """Preemption, the container terminations a message reports (exit codes, OOMKilled), an OOM kill in words."""
    if (
        _PREEMPT_TEXT.search(both)
        or reason in {"Preempted", "Preempting"}
        or (reason == "Evict" and _EVICT_PREEMPT_TEXT.search(message))
    ):
        add(Kind.PREEMPTED)
    for m in _TERMINATED.finditer(message):
        is_init = bool(m.group(1))
        name = m.group(2)
        term_reason = m.group(3)
        code = int(m.group(4) or m.group(5))
        if term_reason == "OOMKilled":
            add(Kind.OOM_KILLED, container=name, exit_code=code, init=is_init)
        elif code != 0:
            if is_init:
                add(Kind.INIT_FAILED, container=name, exit_code=code, init=True)
            kind = classify_exit(code)
            add(kind, container=name, exit_code=code, init=is_init)
    if kt.OOM_KILL.search(both) and not any(s.kind == Kind.OOM_KILLED for s in out):
        add(Kind.OOM_KILLED)


#: The kubelet's sync error for an init container that exited non-zero (the init container's name in group 1).
_INIT_REPORT = re.compile(r'RunInitContainerError: "?init container \\?"([\w.-]+)\\?" exited with (\d+)?')


def _start_rules(reason: str, message: str, both: str, add: _Add, out: list[Signal]) -> None:
    """Why a container could not start or stopped from outside: image pull, mount, runtime and start errors,
    node failures and evictions, scheduling-policy stops."""
    if reason in _IMAGE_PULL_REASONS or _IMAGE_PULL_TEXT.search(both):
        add(Kind.IMAGE_PULL)
    if _SECURITY_CONFLICT.search(both):
        add(Kind.START_ERROR_APP)  # a CreateContainerConfigError, but of the image's user, not a data source
    elif reason in _MOUNT_REASONS or _MOUNT_TEXT.search(both):
        add(Kind.MOUNT_FAILED)
    init = _INIT_REPORT.search(message)
    if init and not out:
        # the kubelet's report of an init container's failure (FailedSync: 'failed to "InitContainer" for "init"
        # with RunInitContainerError: "init container \"init\" exited with 1"'): the event that reported it
        code = int(init.group(2)) if init.group(2) else None
        add(Kind.INIT_FAILED, container=init.group(1), init=True, exit_code=code)
    runtime_message = reason in _START_ERROR_REASONS or "OCI runtime" in message or "containerd" in message
    if gpu_hardware_fault(both) or _NODE_GPU_TEXT.search(both):
        add(Kind.NODE_FAILURE)
    elif (runtime_message or reason == "Failed") and _VOLUME_RUNTIME_TEXT.search(both):
        # FORMAT.md: a create/run-container error caused by a volume (a stale NFS handle, a failed mount of a
        # volume path) is the pod's own mount trouble, which wins over the runtime and start-error rules.
        add(Kind.MOUNT_FAILED)
    elif _START_APP_TEXT.search(both):
        add(Kind.START_ERROR_APP)
    elif runtime_message and _NODE_RUNTIME_TEXT.search(both):
        add(Kind.NODE_FAILURE)
    elif reason in _START_ERROR_REASONS:
        add(Kind.START_ERROR_APP)
    if reason in _NODE_REASONS or kt.NODE_TROUBLE.search(both):
        add(Kind.NODE_FAILURE)
    if reason == "Evicted" and not kt.NODE_TROUBLE.search(both) and not any(s.kind == Kind.PREEMPTED for s in out):
        add(Kind.NODE_FAILURE)
    if reason in _POLICY_REASONS - {"Stopped"} or _POLICY_TEXT.search(both):
        add(Kind.POLICY_STOP)


def _lifecycle_rules(reason: str, message: str, both: str, add: _Add, out: list[Signal]) -> None:
    """What happened around the failure: a controller's failure report, a cleanup stop, probe kills, CUDA OOM
    raised by the program, crash loops, scheduling messages, a started container."""
    if reason in _FAILURE_REPORT_REASONS or reason.endswith("JobFailed") or _FAILURE_REPORT_TEXT.search(message):
        replica = _REPLICA_FAILED.search(message)
        add(Kind.FAILURE_REPORT, replica=replica.group(2) if replica else None)
    if reason == "Killing" and _STOPPING_CONTAINER.search(message):
        add(Kind.CLEANUP_SIGNAL)
    if reason == "FailedPostStartHook" or "PostStartHookError" in message:
        # the container's own postStart hook failed and the kubelet killed the container for it (its 137 has a
        # sender): a start error of the workload's own configuration, like a probe kill
        add(Kind.START_ERROR_APP)
    if _LIVENESS_KILL.search(message):
        add(Kind.LIVENESS_KILL)
    elif _PROBE_FAILED.search(message):
        add(Kind.LIVENESS_FAILING)
    if kt.CUDA_OOM.search(message):
        add(Kind.CUDA_OOM)
    backoff = _BACKOFF_RESTART.search(message)
    if backoff:
        add(Kind.CRASHLOOP, container=backoff.group(1))
    elif reason == "CrashLoopBackOff":
        add(Kind.CRASHLOOP)  # the container the caller named
    if (reason in _SCHED_REASONS or _SCHED_TEXT.search(both)) and not any(s.kind == Kind.MOUNT_FAILED for s in out):
        add(Kind.SCHEDULING)
    if reason == "Started" or message.startswith("Started container"):
        add(Kind.STARTED)


def k8s_phase_signals(k8s_phase: str | None, *, source: str, at: datetime | None, pod: str | None) -> list[Signal]:
    """A pod's ``k8sPhase`` from the Run:ai pods endpoint as status evidence (FORMAT.md "Run:ai phases")."""
    phase = (k8s_phase or "").strip()
    if not phase:
        return []
    base = {"text": phase, "source": source, "at": at, "pod": pod, "reason": phase}
    if phase == "OOMKilled":
        return [Signal(Kind.OOM_KILLED, **base)]  # type: ignore[arg-type]
    if phase in _IMAGE_PULL_REASONS:
        return [Signal(Kind.IMAGE_PULL, **base)]  # type: ignore[arg-type]
    # "Init:<waiting reason>" names the init container's waiting reason: a missing Secret/ConfigMap
    # (CreateContainerConfigError) or an image pull means no init container ran (FORMAT.md "Init:" rule).
    waiting = phase.removeprefix("Init:")
    if phase.startswith("Init:") and waiting == kt.CREATE_CONTAINER_CONFIG_ERROR:
        return [Signal(Kind.MOUNT_FAILED, init=True, **base)]  # type: ignore[arg-type]
    if phase.startswith("Init:") and waiting in _IMAGE_PULL_REASONS:
        return [Signal(Kind.IMAGE_PULL, init=True, **base)]  # type: ignore[arg-type]
    if phase.startswith("Init:") and phase not in {"Init:0/1"} and re.search(r"Error|CrashLoop", phase):
        return [Signal(Kind.INIT_FAILED, init=True, **base)]  # type: ignore[arg-type]
    if phase == kt.CREATE_CONTAINER_CONFIG_ERROR:
        return [Signal(Kind.MOUNT_FAILED, **base)]  # type: ignore[arg-type]
    if phase == "CrashLoopBackOff":
        return [Signal(Kind.CRASHLOOP, **base)]  # type: ignore[arg-type]
    if phase in {"Error", "Failed"}:
        return [Signal(Kind.POD_ERROR, **base)]  # type: ignore[arg-type]
    if phase in _START_ERROR_REASONS:
        return [Signal(Kind.START_ERROR_APP, **base)]  # type: ignore[arg-type]
    return []


def _state_signals(state: ContainerState, *, pod: str, source: str, node: str | None) -> list[Signal]:
    """Signals of one container ``state``/``lastState`` (:func:`diagnosis.kube_objects.container_states`)."""
    name, init = state.container, state.init
    out: list[Signal] = []
    term = state.terminated
    if term is not None:
        code = term.exit_code
        at = term.finished_at
        label = f"{term.reason} (exit code {code})" + (f": {term.message}" if term.message else "")
        common: dict[str, Any] = {
            "text": label,
            "source": source,
            "at": at,
            "pod": pod,
            "container": name,
            "exit_code": code,
            "reason": term.reason,
            "init": init,
            "node": node,
        }
        if term.reason == "OOMKilled":
            out.append(Signal(Kind.OOM_KILLED, **common))
        elif isinstance(code, int) and code != 0:
            if init:
                out.append(Signal(Kind.INIT_FAILED, **common))
            if term.reason in _START_ERROR_REASONS or term.message:
                out += text_signals(term.reason, term.message, source=source, at=at, pod=pod, container=name, node=node)
            out.append(Signal(classify_exit(code), **common))
    waiting = state.waiting
    if waiting is not None and waiting.reason not in (None, "ContainerCreating", "PodInitializing"):
        out += text_signals(waiting.reason, waiting.message, source=source, at=None, pod=pod, container=name, node=node)
        if init and waiting.reason == "CrashLoopBackOff":
            out.append(
                Signal(
                    Kind.INIT_FAILED,
                    text="CrashLoopBackOff",
                    source=source,
                    pod=pod,
                    container=name,
                    reason="CrashLoopBackOff",
                    init=True,
                    node=node,
                )
            )
    return out


#: DisruptionTarget reasons that name the node as the sender of a pod's end (FORMAT.md: node NotReady, node lost, a
#: kubelet eviction, a TaintManagerEviction are NODE_FAILURE; spec: "a node eviction ... supports NODE_FAILURE"):
#: the taint manager (NotReady/unreachable), the kubelet (pressure, graceful shutdown), PodGC (the node no longer
#: exists) and the Eviction API (a drain). A preemption by the scheduler is told apart.
_NODE_DISRUPTIONS = frozenset(
    {"DeletionByTaintManager", "TerminationByKubelet", "DeletionByPodGC", "EvictionByEvictionAPI"}
)


def pod_object_signals(pod: dict[str, Any], *, source: str) -> list[Signal]:
    """Signals in a core/v1 Pod (``kubectl describe pod``): container states, lastStates, pod reason, conditions."""
    facts = kube.pod_facts(pod)
    name, node = facts.name, facts.node
    out: list[Signal] = []
    if facts.reason or facts.message:
        out += text_signals(facts.reason, facts.message, source=source, at=None, pod=name, node=node)
    for cond in kube.disruptions(pod):
        reason = cond.reason or ""
        text = f"{reason}: {cond.message}"
        at = cond.at
        if reason.startswith("Preemption"):
            out.append(Signal(Kind.PREEMPTED, text=text, source=source, at=at, pod=name, reason=reason, node=node))
        elif reason in _NODE_DISRUPTIONS:
            out += text_signals(reason, cond.message, source=source, at=at, pod=name, node=node)
            out.append(Signal(Kind.NODE_FAILURE, text=text, source=source, at=at, pod=name, reason=reason, node=node))
    for state in kube.container_states(pod):
        out += _state_signals(state, pod=str(name), source=source, node=node)
    return out


def node_signals(node: dict[str, Any], *, source: str) -> list[Signal]:
    """A node whose Ready condition is not True, a GPU or pressure condition reporting trouble, or a node carrying
    the unreachable/not-ready taints (:mod:`diagnosis.kube_objects` reads the node)."""
    name = kube.node_name(node)
    out: list[Signal] = []
    for cond in kube.node_conditions(node):
        about = f"{cond.type} {cond.reason or ''} {cond.message}"
        if cond.type == "Ready" and cond.status != "True":
            text = f"Ready={cond.status} reason {cond.reason}: {cond.message}".strip()
            out.append(Signal(Kind.NODE_FAILURE, text=text, source=source, at=cond.at, reason=cond.reason, node=name))
        elif (cond.bad and (gpu_hardware_fault(about) or _NODE_GPU_TEXT.search(about))) or (
            cond.type in kt.PRESSURE_CONDITIONS and cond.status == "True"
        ):
            text = f"{cond.type}=True: {cond.message}"
            out.append(Signal(Kind.NODE_FAILURE, text=text, source=source, at=cond.at, node=name, reason=cond.reason))
    for taint in kube.node_taints(node):
        if taint.key in kube.LOST_NODE_TAINTS:
            text = f"taint {taint.key}:{taint.effect}"
            out.append(Signal(Kind.NODE_FAILURE, text=text, source=source, at=taint.added, node=name))
    return out


def log_error_lines(text: str, limit: int = 6) -> list[str]:
    """The most telling error lines of a log, last ones first kept in order (exception lines, ``error:`` lines)."""
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    hits = [ln for ln in lines if _LOG_ERROR.search(ln) and not ln.lower().startswith("traceback")]
    return hits[-limit:]


_GPU_TROUBLE = re.compile(
    r"(?i)unspecified launch failure|cuda error|cudaerror|cuda_error_|illegal memory access|\bxid\b|\becc\b|"
    r"gpu (?:is )?lost|fallen off|nccl (?:error|warn)|ncclunhandledcudaerror|no cuda-capable device|"
    r"cuda driver version is insufficient|device-side assert"
)


def gpu_hardware_in_log(text: str) -> bool:
    """Whether a log shows GPU trouble worth reading the node (and its events) for: a hardware Xid, ECC, a GPU
    fallen off the bus, the GPU stack, or a CUDA/NCCL error that a node fault can cause. Reading the node
    decides nothing by itself: only a hardware fault it reports is a signal."""
    return bool(gpu_hardware_fault(text) or _NODE_GPU_TEXT.search(text) or _GPU_TROUBLE.search(text))


def log_signals(text: str, *, source: str, pod: str, container: str, node: str | None = None) -> list[Signal]:
    """Signals of a container log: error lines (explaining evidence), CUDA OOM raised inside the program, a GPU
    hardware fault (NODE_FAILURE, FORMAT.md), a SIGTERM the program received, an NCCL/collective timeout."""
    out = [
        Signal(Kind.LOG_ERROR, text=line.strip(), source=source, pod=pod, container=container)
        for line in log_error_lines(text)
    ]
    found: set[Kind] = set()
    for line in text.splitlines():
        kind: Kind | None = None
        if Kind.CUDA_OOM not in found and kt.CUDA_OOM.search(line):
            kind = Kind.CUDA_OOM
        elif Kind.NODE_FAILURE not in found and gpu_hardware_fault(line):
            kind = Kind.NODE_FAILURE
        elif Kind.CLEANUP_SIGNAL not in found and _SIGTERM_LOG.search(line):
            kind = Kind.CLEANUP_SIGNAL
        elif Kind.COLLECTIVE_TIMEOUT not in found and kt.COLLECTIVE_TIMEOUT.search(line):
            kind = Kind.COLLECTIVE_TIMEOUT
        if kind is not None:
            found.add(kind)
            out.append(
                Signal(
                    kind, text=line.strip(), source=source, pod=pod, container=container, node=node, label="log line"
                )
            )
    return out
