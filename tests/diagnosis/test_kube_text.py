"""The shared Kubernetes wording (diagnosis.kube_text): what each pattern matches, with strings from the cases,
and that both backends read it from there instead of keeping a copy of their own."""

from __future__ import annotations

import ast
import inspect
import re
from types import ModuleType

import pytest

from diagnosis import kube_objects
from diagnosis import kube_text as kt
from diagnosis.osmo import classify as osmo_classify
from diagnosis.osmo import logsummary as osmo_logsummary
from diagnosis.osmo import pending as osmo_pending
from diagnosis.runai import signals as runai_signals
from diagnosis.runai.signals import Kind, text_signals

SHARED: dict[str, re.Pattern[str]] = {
    name: value for name, value in vars(kt).items() if isinstance(value, re.Pattern) and name.isupper()
}
BACKENDS: tuple[ModuleType, ...] = (runai_signals, osmo_classify, osmo_pending, osmo_logsummary)

# (pattern, text from a case, what it should find in it; None: no match)
EXAMPLES: list[tuple[str, str, str | None]] = [
    (
        "OOM_KILL",
        "Pod runai-research/eval-0-0 failed: container eval terminated with reason OOMKilled (exit code 137)",
        "OOMKilled",
    ),
    ("OOM_KILL", "Memory cgroup out of memory: Killed process 4242 (python)", "Memory cgroup out of memory"),
    ("OOM_KILL", "copy-vault (which copies the pilot binary) is being oom-killed", "oom-kill"),
    (
        "OOM_KILL",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 1 has a total",
        None,
    ),
    (
        "CUDA_OOM",
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB.",
        "torch.cuda.OutOfMemoryError",
    ),
    (
        "CUDA_OOM",
        "err == cudaSuccess || err == cudaErrorInvalidValue Unexpected CUDA error: out of memory",
        "CUDA error: out of memory",
    ),
    ("CUDA_OOM", "RuntimeError: CUDA error: cudaErrorMemoryAllocation", "cudaErrorMemoryAllocation"),
    ("CUDA_OOM", "Pod runai-nlp/llama-ft-3-0-0 failed: container llama-ft-3 terminated with reason OOMKilled", None),
    ("CONFIG_ERROR", "CreateContainerConfigError", "CreateContainerConfigError"),
    ("CONFIG_ERROR", 'Error: configmap "autotune-config-key" not found', None),
    (
        "NODE_TROUBLE",
        "The node was low on resource: memory. Container backfill was using 35505620Ki, which exceeds its request",
        "low on resource",
    ),
    ("NODE_TROUBLE", "The node had condition: [DiskPressure].", "The node had condition"),
    ("NODE_TROUBLE", "Node is not ready", "Node is not ready"),
    ("XID", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.", "Xid (PCI:0000:3b:00): 79"),
    ("GPU_HARDWARE_TEXT", "RuntimeError: CUDA error: uncorrectable ECC error encountered", "uncorrectable ECC"),
    ("GPU_HARDWARE_TEXT", "NCCL version 2.18.1+cuda12.1", None),
    (
        "COLLECTIVE_TIMEOUT",
        "[Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)",
        "Watchdog caught collective operation timeout",
    ),
    ("COLLECTIVE_TIMEOUT", "NCCL version 2.18.1+cuda12.1", None),
    (
        "COLLECTIVE_TIMEOUT",
        "[W ProcessGroupNCCL.cpp:1250] Warning: WARNING: process group has NOT been destroyed before we destruct "
        "ProcessGroupNCCL. On normal program exit, the application should call destroy_process_group",
        None,
    ),
    ("NODE_TROUBLE", "Node ip-172-31-23-131.ec2.internal status is now: NodeNotReady", "NodeNotReady"),
    ("NODE_TROUBLE", "Kubelet stopped posting node status.", "Kubelet stopped posting node status"),
    ("NODE_TROUBLE", "Marking for deletion Pod runai-vision/clip-ft-0-0", "Marking for deletion Pod"),
    ("NODE_TROUBLE", "Pod was terminated in response to imminent node shutdown.", "node shutdown"),
    ("NODE_TROUBLE", "containers with unready status: [kv-secrets-train]", None),
    ("NODE_TROUBLE", "Node gpu-3 status is now: NodeHasNoDiskPressure", None),
    ("NODE_TROUBLE", "0/3 nodes are available: 3 Insufficient ephemeral-storage.", None),
    (
        "INSUFFICIENT_GPU",
        "No nodes with enough resources were found: 6 node(s) didn't have enough resources: GPUs. The workload needs",
        "didn't have enough resources: GPUs",
    ),
    ("INSUFFICIENT_GPU", "0/6 nodes are available: 6 Insufficient nvidia.com/gpu.", "Insufficient nvidia.com/gpu"),
    ("INSUFFICIENT_GPU", "1 node(s) didn't have enough resources: rdma/shared_mlx5.", None),
    ("INSUFFICIENT_CPU", "0/3 nodes are available: 3 Insufficient cpu.", "Insufficient cpu"),
    ("INSUFFICIENT_MEMORY", "0/3 nodes are available: 3 Insufficient memory.", "Insufficient memory"),
    ("INSUFFICIENT_MEMORY", "The node was low on resource: memory.", None),
    ("OVER_QUOTA", "Non-preemptible workload is over quota. Workload requested 4 GPUs", "over quota"),
    ("OVER_QUOTA", "NonPreemptibleOverQuota", "NonPreemptibleOverQuota"),
    (
        "UNBOUND_PVC",
        "0/4 nodes are available: 4 pod has unbound immediate PersistentVolumeClaims.",
        "unbound immediate PersistentVolumeClaims",
    ),
    ("UNBOUND_PVC", "pod has unbound PersistentVolumeClaims", "unbound PersistentVolumeClaims"),
    (
        "PVC_NOT_FOUND",
        'failed to fetch PVC from API server: persistentvolumeclaims "eval-sets" not found',
        'persistentvolumeclaims "eval-sets" not found',
    ),
    (
        "PVC_NOT_FOUND",
        '[SchedulerPredicates failed due to persistentvolumeclaim "claim-jdoe" not found, which is unexpected.',
        'persistentvolumeclaim "claim-jdoe" not found',
    ),
    (
        "PVC_NOT_FOUND",
        '0/4 nodes are available: persistentvolumeclaim "storage-mariadb-0" bound to non-existent persistentvolume',
        None,
    ),
]


@pytest.mark.parametrize(("name", "text", "found"), EXAMPLES)
def test_shared_pattern_matches(name: str, text: str, found: str | None) -> None:
    m = SHARED[name].search(text)
    assert (m.group(0) if m else None) == found


def test_every_shared_pattern_has_examples_and_composes() -> None:
    """Each pattern is shown matching something here, and carries no inline flag (so :func:`kt.any_of` can join it)."""
    assert set(SHARED) == {name for name, _, found in EXAMPLES if found is not None}
    for pattern in SHARED.values():
        assert pattern.flags & re.I and not pattern.pattern.startswith("(?")


def test_any_of_keeps_the_order_of_its_parts() -> None:
    assert kt.any_of("node", kt.NODE_TROUBLE).search("node was lost").group(0) == "node"  # type: ignore[union-attr]
    assert kt.any_of(kt.NODE_TROUBLE, "node").search("node was lost").group(0) == "node was lost"  # type: ignore[union-attr]


def test_pressure_conditions_live_only_in_kube_text() -> None:
    assert kt.PRESSURE_CONDITIONS == {"MemoryPressure", "DiskPressure", "PIDPressure"}
    assert not hasattr(kube_objects, "PRESSURE_CONDITIONS")


# -- the backends read the shared patterns -------------------------------------------------------------------


def test_osmo_pending_translations_are_the_shared_objects() -> None:
    patterns = [pattern for pattern, _, _ in osmo_pending.TRANSLATIONS]
    for shared in (kt.INSUFFICIENT_GPU, kt.OVER_QUOTA, kt.INSUFFICIENT_CPU, kt.INSUFFICIENT_MEMORY):
        assert any(p is shared for p in patterns)
    pvc = next(p for p, _, kind in osmo_pending.TRANSLATIONS if "PVC" in _ and kind == "constraint")
    assert kt.UNBOUND_PVC.pattern in pvc.pattern and kt.PVC_NOT_FOUND.pattern in pvc.pattern


@pytest.mark.parametrize(
    ("backend_pattern", "shared"),
    [
        (runai_signals._MOUNT_TEXT, kt.PVC_NOT_FOUND),
        (runai_signals._MOUNT_TEXT, kt.UNBOUND_PVC),
        (runai_signals._MOUNT_TEXT, kt.CONFIG_ERROR),
        (runai_signals._SCHED_TEXT, kt.INSUFFICIENT_GPU),
        (runai_signals._SCHED_TEXT, kt.INSUFFICIENT_CPU),
        (runai_signals._SCHED_TEXT, kt.INSUFFICIENT_MEMORY),
        (runai_signals._SCHED_TEXT, kt.OVER_QUOTA),
        (osmo_classify.OOM_HINT, kt.OOM_KILL),
        (osmo_classify.NODE_PRESSURE, kt.NODE_TROUBLE),
        (osmo_classify.CONFIG_ERROR, kt.CONFIG_ERROR),
    ],
)
def test_backend_patterns_are_built_from_the_shared_ones(
    backend_pattern: re.Pattern[str], shared: re.Pattern[str]
) -> None:
    assert shared.pattern in backend_pattern.pattern


def _literals(module: ModuleType) -> list[str]:
    """The string literals of a module's code (docstrings left out: they may name a phrase in prose)."""
    tree = ast.parse(inspect.getsource(module))
    docs = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda m: m.__name__)
def test_no_backend_keeps_its_own_copy(backend: ModuleType) -> None:
    """No module-level pattern of a backend is a copy of a shared one, and no literal in its code spells one out
    again (a shared reason or condition name included)."""
    for own_name, value in vars(backend).items():
        for name, shared in SHARED.items():
            if isinstance(value, re.Pattern) and value.pattern == shared.pattern:
                assert value is shared, f"{backend.__name__}.{own_name} is a copy of kube_text.{name}"
    words = [shared.pattern for shared in SHARED.values()] + [kt.CREATE_CONTAINER_CONFIG_ERROR, *kt.PRESSURE_CONDITIONS]
    for literal in _literals(backend):
        for word in words:
            assert word not in literal, f"{backend.__name__} spells {word!r} out again in {literal!r}"


def test_runai_no_longer_has_its_own_oom_cuda_or_node_text() -> None:
    for old in ("_OOM_TEXT", "_CUDA_OOM", "_NODE_TEXT"):
        assert not hasattr(runai_signals, old)
    assert not hasattr(osmo_classify, "CUDA_OOM")


# -- the two backends read the shared wording alike -------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "The node was low on resource: ephemeral-storage. Container worker was using 73712Ki, which exceeds",
        "Node is not ready",
        "Kubelet stopped posting node status.",
        "Marking for deletion Pod runai-nlp-train/train-7-0-0",
    ],
)
def test_node_trouble_is_a_node_failure_in_both_backends(message: str) -> None:
    runai = text_signals("Killing", message, source="test", at=None)
    assert Kind.NODE_FAILURE in {s.kind for s in runai}
    assert osmo_classify.NODE_PRESSURE.search(message)


def test_kept_differences() -> None:
    """OSMO reads a bare "out of memory" and "NotReady" as hints; Run:ai does not (see the comments beside them)."""
    cuda = "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB."
    assert osmo_classify.OOM_HINT.search(cuda) and not kt.OOM_KILL.search(cuda)
    assert Kind.OOM_KILLED not in {s.kind for s in text_signals(None, cuda, source="test", at=None)}
    assert osmo_classify.NODE_PRESSURE.search("NotReady")
    assert Kind.NODE_FAILURE not in {s.kind for s in text_signals("NotReady", "", source="test", at=None)}
