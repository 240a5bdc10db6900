"""Kubernetes wording both backends recognise: one pattern per phrase, read by Run:ai and OSMO alike.

The kubelet, the schedulers (kube-scheduler, KAI/runai-scheduler), the node lifecycle controller and the
GPU stack say the same things whichever backend runs the pod: ``OOMKilled``, ``CreateContainerConfigError``,
``The node was low on resource: memory.``, ``Insufficient nvidia.com/gpu``, ``persistentvolumeclaim "x" not
found``... :mod:`diagnosis.runai.signals` and :mod:`diagnosis.osmo.classify` / :mod:`diagnosis.osmo.pending`
both read this module, so a phrase is recognised the same way in both (``tests/diagnosis/test_kube_text.py``
checks neither keeps its own copy). A backend's own wording stays with it: Run:ai scheduler messages and
OSMO's status text and service codes, and the places where one backend must read a phrase more widely or
more narrowly than the other (each says why beside its pattern).

Every pattern is compiled case-insensitive, without inline flags, so a backend can add its own words with
:func:`any_of`. Pure: no I/O, no imports from the rest of the product.
"""

from __future__ import annotations

import re


def any_of(*parts: re.Pattern[str] | str) -> re.Pattern[str]:
    """One case-insensitive pattern matching any of ``parts`` (shared patterns or a backend's own words).

    Alternatives keep their order: where two match at the same leftmost place the earlier one is the match,
    exactly as in one written-out alternation."""
    return re.compile("|".join(p.pattern if isinstance(p, re.Pattern) else p for p in parts), re.I)


# -- memory ------------------------------------------------------------------------------------------------

#: The kernel OOM killer ended a container: the kubelet's ``OOMKilled`` reason, the kernel's ``Memory cgroup
#: out of memory: Killed process 4242 (python)``, a node's ``OOMKilling`` event, ``oom-kill``/``oom_kill``
#: counters and ``OOM kill`` in prose. Not a CUDA OOM (:data:`CUDA_OOM`), which is the program's own error.
OOM_KILL = re.compile(r"OOMKilled|OOM[- ]?kill|oom_kill|Memory cgroup out of memory", re.I)

#: The program ran out of GPU memory (CUDA, PyTorch, cuBLAS): ``torch.cuda.OutOfMemoryError: CUDA out of
#: memory. Tried to allocate 2.00 GiB``, ``CUDA error: out of memory``, ``cudaErrorMemoryAllocation``,
#: ``CUBLAS_STATUS_ALLOC_FAILED``. Never the kernel OOM killer.
CUDA_OOM = re.compile(
    r"cuda out of memory|torch\.cuda\.outofmemoryerror|cuda error: out of memory|CUBLAS_STATUS_ALLOC_FAILED|"
    r"cudaErrorMemoryAllocation",
    re.I,
)

# -- container configuration -------------------------------------------------------------------------------

#: The kubelet's waiting reason when a container's configuration cannot be built (a missing Secret or
#: ConfigMap, a missing key): ``CreateContainerConfigError``.
CREATE_CONTAINER_CONFIG_ERROR = "CreateContainerConfigError"
#: :data:`CREATE_CONTAINER_CONFIG_ERROR` anywhere in a text (``Error: CreateContainerConfigError``).
CONFIG_ERROR = re.compile(CREATE_CONTAINER_CONFIG_ERROR, re.I)

# -- nodes -------------------------------------------------------------------------------------------------

#: Node conditions that evict pods when True (``MemoryPressure``, ``DiskPressure``, ``PIDPressure``).
PRESSURE_CONDITIONS = frozenset({"MemoryPressure", "DiskPressure", "PIDPressure"})

#: The node failed or pushed the pod off: the kubelet's eviction ``The node was low on resource: memory.``
#: (and ``The node had condition: [DiskPressure].``), ``NodeNotReady`` / ``Node is not ready`` /
#: ``node dgx-a100-09 NotReady``, ``node was lost``, the taint manager's ``TaintManagerEviction`` /
#: ``DeletionByTaintManager`` / ``Marking for deletion Pod x``, the unreachable/not-ready taints
#: (``node.kubernetes.io/unreachable``), ``Kubelet stopped posting node status.``, an imminent ``node
#: shutdown``, and the kubelet's ``UnexpectedAdmissionError`` (its device plugins could not admit the pod).
#: Node *condition names* are not here (:data:`PRESSURE_CONDITIONS`): a healthy node's event
#: ``NodeHasNoDiskPressure`` carries them too.
NODE_TROUBLE = re.compile(
    r"low on resource|NodeNotReady|node (?:was )?lost|TaintManagerEviction|UnexpectedAdmissionError|"
    r"node is not ready|node\s+\S+\s+(?:is\s+)?not\s*ready|the node had condition|node shutdown|"
    r"node\.kubernetes\.io/(?:unreachable|not-ready)|DeletionByTaintManager|marking for deletion pod|"
    r"which was running pod .* is unresponsive|node .* (?:is )?unreachable|kubelet stopped posting node status",
    re.I,
)

# -- GPUs --------------------------------------------------------------------------------------------------

#: GPU hardware faults (FORMAT.md "GPU hardware faults"): NODE_FAILURE wherever they are seen, also when the
#: container then exits non-zero (for OSMO, the "OSMO categories" table refers to the same signals). Application-
#: class Xids (13, 31, 43, 45) go with a fault of the program.
HARDWARE_XIDS = frozenset({48, 63, 64, 74, 79, 92, 94, 95, 119, 120})
APPLICATION_XIDS = frozenset({13, 31, 43, 45})
#: ``Xid 79``, ``NVRM: Xid (PCI:0000:3b:00): 79``, ``xid=48``: group 1 is the Xid number.
XID = re.compile(r"\bxid\b\s*(?:\([^)\n]{0,40}\))?\s*[:=]?\s*(\d{1,3})\b", re.I)
#: A GPU hardware fault in words: fallen off the bus, uncorrectable/double-bit ECC, a lost GPU, a row-remapping
#: failure, an uncontained error, a GSP timeout.
GPU_HARDWARE_TEXT = re.compile(
    r"fallen off the bus|uncorrectable ecc|ecc error.{0,40}uncorrectable|double[- ]bit ecc|"
    r"gpu (?:is|has|device) lost|gpu is lost|gpu has fallen|row remap(?:ping)? failure|"
    r"uncontained (?:ecc|error)|gsp (?:rpc )?(?:timeout|error)",
    re.I,
)


def gpu_hardware_fault(text: str) -> str | None:
    """The GPU hardware fault a text names (``"Xid 79"``, ``"fallen off the bus"``), or None.

    FORMAT.md "GPU hardware faults": Xid 48, 63, 64, 74, 79, 92, 94, 95, 119, 120, an uncorrectable
    ECC error, a GPU fallen off the bus. Application-class Xids (13, 31, 43, 45) return None."""
    for xid in XID.finditer(text):
        if int(xid.group(1)) in HARDWARE_XIDS and not _denied(text, xid.start()):
            return f"Xid {xid.group(1)}"
    for m in GPU_HARDWARE_TEXT.finditer(text):
        if not _denied(text, m.start()):
            return m.group(0)
    return None


#: A check reporting that it found no fault: ``no Xid 79 (GPU has fallen off the bus) found - OK``, ``not an
#: uncorrectable ECC error``, ``without Xid 48``: a negation shortly before the fault, in the same clause.
_denial = re.compile(r"\b(?:no|not|never|without|zero)\b[^.,;:!?\n]{0,40}$", re.I)


def _denied(text: str, at: int) -> bool:
    """Whether the fault named at ``text[at:]`` is denied by the words just before it on its line."""
    line_start = text.rfind("\n", 0, at) + 1
    return _denial.search(text, max(line_start, at - 48), at) is not None


#: A collective (NCCL, gloo) that timed out or lost its peer: the watchdog's ``Watchdog caught collective
#: operation timeout``, ``ncclRemoteError``, ``remote process exited``, a barrier or heartbeat timing out. The
#: NCCL version banner and ``ProcessGroupNCCL`` shutdown warnings are not: they say nothing failed.
COLLECTIVE_TIMEOUT = re.compile(
    r"watchdog caught collective operation timeout|collective operation timeout|timeout at nccl work|"
    r"nccl (?:communicator|watchdog).{0,40}(?:abort|timeout|timed out)|processgroupnccl.{0,80}time(?:d)? ?out|"
    r"heartbeat monitor.{0,40}timed? ?out|barrier.{0,40}timed? ?out|ncclremoteerror|remote process exited",
    re.I,
)


# -- scheduling --------------------------------------------------------------------------------------------

#: No node has the GPUs the pod asks for: kube-scheduler's ``0/6 nodes are available: 6 Insufficient
#: nvidia.com/gpu.`` and KAI's ``node(s) didn't have enough resources: GPUs``.
INSUFFICIENT_GPU = re.compile(r"Insufficient nvidia\.com/gpu|didn't have enough resources: GPUs", re.I)
#: No node has the CPU the pod asks for: ``0/3 nodes are available: 3 Insufficient cpu.``
INSUFFICIENT_CPU = re.compile(r"Insufficient cpu", re.I)
#: No node has the memory the pod asks for: ``0/3 nodes are available: 3 Insufficient memory.``
INSUFFICIENT_MEMORY = re.compile(r"Insufficient memory", re.I)
#: The queue's quota is used up (KAI): the ``NonPreemptibleOverQuota`` reason, ``... over quota ...``.
OVER_QUOTA = re.compile(r"NonPreemptibleOverQuota|over quota", re.I)

# -- volumes -----------------------------------------------------------------------------------------------

#: The scheduler waits for a claim to bind: ``pod has unbound immediate PersistentVolumeClaims`` (older
#: clusters: ``pod has unbound PersistentVolumeClaims``).
UNBOUND_PVC = re.compile(r"unbound (?:immediate )?PersistentVolumeClaims", re.I)
#: A claim the pod names does not exist: the kubelet's ``persistentvolumeclaims "eval-sets" not found`` and
#: the scheduler's ``persistentvolumeclaim "claim-jdoe" not found``.
PVC_NOT_FOUND = re.compile(r'persistentvolumeclaims?\s+"?[^"\s]+"?\s+not\s+found', re.I)
