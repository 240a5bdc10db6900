#!/usr/bin/env python3
"""Build the field corpus: one snapshot case (../shared/cases/FORMAT.md) per public report.

Each ``case_*`` function below embeds the facts of one public report (its ``source``) into a small
Run:ai or OSMO world. Strings quoted from the report (error messages, log lines, reasons, names)
are kept verbatim; what the report does not say (project, times, image tags) is filled in with
plain values, and the description says what was embedded. The expected answer follows FORMAT.md's
house rules, not the product's current output.

Run ``python tests/field/build_cases.py`` to rewrite tests/field/cases/ (and tests/field/pending/
for the slugs listed in PENDING, which the product answers wrongly today).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from incident_cases import CASES as INCIDENT_CASES
from incident_cases_2 import CASES as INCIDENT_CASES_2
from snap import (
    RunaiCase,
    at,
    container,
    cstatus,
    hexid,
    osmo_document,
    osmo_group,
    osmo_node,
    osmo_pool_quota,
    osmo_query,
    osmo_task,
    running,
    terminated,
    waiting,
)

from bench.accuracy import case_kind

HERE = Path(__file__).resolve().parent
CASES: list[Callable[[], dict[str, Any]]] = []

# Cases the product answers wrongly today (see README.md "Pending"); written to pending/.
#: Slugs the product answers wrongly today (kept in pending/, not run by the tests). The first five kinds found
#: (GPU faults only in node events or non-standard node conditions, a claim bound to a deleted PV) are fixed; the
#: first batch of issue 19's incident cases (incident_cases.py, README.md "Pending (issue 19)": the OOM ceiling of a
#: sidecar or init container, a preemption after a failure, a first failing replica only the Run:ai pods list shows)
#: are fixed too. The ones below are from the second batch (incident_cases_2.py).
PENDING: set[str] = set()


def case(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    CASES.append(fn)
    return fn


def started(
    c: RunaiCase,
    e: dict[str, Any],
    pod: str,
    node: str,
    created: str,
    run_at: str | None,
    scheduler: str = "runai-scheduler",
) -> None:
    """Pending, the Scheduled event and (when ``run_at``) Running: the usual start of a history."""
    c.phase(e, "Pending", created)
    c.event(
        e,
        "Scheduled",
        f"Successfully assigned pod {c.ns}/{pod} to node {node} at node-pool default",
        at(created, seconds=3),
        obj=pod,
        type_="Normal",
        source=scheduler,
    )
    if run_at:
        c.phase(e, "Running", run_at)


# ============================================================================ GPU hardware faults
@case
def xid79_admission_every_pod() -> dict[str, Any]:
    slug, now = "xid79-unexpected-admission-every-pod", "2026-09-17T08:40:00Z"
    c = RunaiCase(slug, project="vision", project_id="318")
    img = "registry.example.com/vision/clip-embed:1.8.2"
    name, pod, node = "clip-embed-batch", "clip-embed-batch-0-0", "gpu-5090-07"
    created = "2026-09-17T08:20:00Z"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(created, seconds=6),
        image=img,
        gpu=1,
        memory="48Gi",
        command="python embed.py --shard 12",
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase="UnexpectedAdmissionError",
        created=created,
        updated=at(created, seconds=4),
        completed=at(created, seconds=4),
        containers=[(name, img, None)],
    )
    c.tier2()
    msg = (
        "Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: code = "
        "Unknown desc = error getting list of preferred allocation devices: unable to get device link "
        "information"
    )
    started(c, e, pod, node, created, None)
    c.event(e, "UnexpectedAdmissionError", msg, at(created, seconds=4), obj=pod)
    c.phase(e, "Failed", at(created, seconds=6))
    c.k8s_pod(
        pod,
        workload=name,
        node=node,
        phase="Failed",
        created=created,
        reason="UnexpectedAdmissionError",
        message="Pod was rejected: " + msg,
        containers=[container(name, img, 1, "48Gi")],
        statuses=[],
        conditions=[],
    )
    c.node(
        node,
        now=now,
        gpus=8,
        allocatable_gpus=7,
        product="NVIDIA-GeForce-RTX-5090",
        kubelet="v1.34.3+rke2r1",
        runtime="containerd://2.1.5",
        kernel="5.15.0-179-generic",
        os_image="Ubuntu 22.04.5 LTS",
    )
    return c.document(
        description=(
            "One GPU of an 8x RTX 5090 node fell off the bus (Xid 79); the device plugin marked it unhealthy "
            "(allocatable nvidia.com/gpu 7 of 8) but from then on every GPU pod on the node, even a 1-GPU "
            "pod, is rejected at kubelet admission with UnexpectedAdmissionError from GetPreferredAllocation. "
            "The container never ran: the node's GPU stack failed, NODE_FAILURE. The report elides the tail "
            "of the message; it is cut at the same place here."
        ),
        source="https://github.com/NVIDIA/k8s-device-plugin/issues/2038",
        now=now,
        ask={"text": "why did clip-embed-batch fail? it never started", "workload_name": name, "intent": "terminal"},
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["UnexpectedAdmissionError", node]},
    )


def _torch_traceback(frames: list[tuple[str, int, str, str]], tail: list[str]) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, line, fn, code in frames:
        lines.append(f'  File "{path}", line {line}, in {fn}')
        lines.append(f"    {code}")
    return "\n".join(lines + tail) + "\n"


CUDA_ASYNC = [
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
    "be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]


def _single_failed(
    slug: str,
    *,
    now: str,
    project: str,
    pid: str,
    name: str,
    node: str,
    img: str,
    created: str,
    run_at: str,
    end: str,
    exit_code: int,
    reason: str,
    log: str,
    gpu: float = 1,
    memory: str = "64Gi",
    command: str = "python train.py",
    product: str = "NVIDIA-H100-80GB-HBM3",
    node_kw: dict[str, Any] | None = None,
    extra_events: Callable[[RunaiCase, dict[str, Any]], None] | None = None,
    type_: str = "Training",
) -> tuple[RunaiCase, dict[str, Any]]:
    """A one-pod workload that ran and failed, with Tier 2 pod, node and log."""
    c = RunaiCase(slug, project=project, project_id=pid)
    pod = f"{name}-0-0"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(end, seconds=4),
        image=img,
        gpu=gpu,
        memory=memory,
        command=command,
        type_=type_,
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase="Error",
        created=created,
        updated=end,
        completed=end,
        containers=[(name, img, run_at)],
    )
    c.tier2()
    started(c, e, pod, node, created, run_at)
    if extra_events:
        extra_events(c, e)
    c.phase(e, "Failed", at(end, seconds=4))
    c.k8s_pod(
        pod,
        workload=name,
        node=node,
        phase="Failed",
        created=created,
        containers=[container(name, img, gpu, memory)],
        statuses=[cstatus(name, img, terminated(exit_code, reason, run_at, end, key=slug))],
    )
    nk: dict[str, Any] = {"gpus": 8, "product": product}
    nk.update(node_kw or {})
    c.node(node, now=now, **nk)
    c.log(pod, name, log)
    return c, e


@case
def ecc_uncorrectable_dgk713() -> dict[str, Any]:
    slug, now = "ecc-uncorrectable-pytorch-node-dgk713", "2024-05-03T11:20:00Z"
    log = "epoch 3 step 1850 loss 0.4127\nepoch 3 step 1900 loss 0.4093\n" + _torch_traceback(
        [("/workspace/train.py", 212, "<module>", "main()"), ("/workspace/train.py", 187, "main", "loss.backward()")],
        ["RuntimeError: CUDA error: uncorrectable ECC error encountered", *CUDA_ASYNC],
    )
    c, _ = _single_failed(
        slug,
        now=now,
        project="medseg",
        pid="402",
        name="unet-train-632651",
        node="dgk713",
        img="nvcr.io/nvidia/pytorch:24.03-py3",
        created="2024-05-03T08:02:00Z",
        run_at="2024-05-03T08:03:10Z",
        end="2024-05-03T10:41:37Z",
        exit_code=1,
        reason="Error",
        log=log,
        product="Tesla-V100-SXM2-32GB",
    )
    return c.document(
        description=(
            "A PyTorch training job on node dgk713 dies with 'CUDA error: uncorrectable ECC error encountered' "
            "(exit 1); the reporter saw many jobs fail on that node and the site later fixed the hardware. An "
            "uncorrectable ECC error is a GPU hardware fault: NODE_FAILURE although the program exited non-zero."
        ),
        source="https://github.com/jade-hpc-gpu/jade-hpc-gpu.github.io/issues/194",
        now=now,
        ask={
            "text": "unet-train-632651 failed again, is it my code?",
            "workload_name": "unet-train-632651",
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["uncorrectable ECC error", "dgk713"]},
    )


@case
def ecc_nccl_watchdog_two_h100() -> dict[str, Any]:
    slug, now = "ecc-uncorrectable-nccl-watchdog-2xh100", "2024-08-02T15:10:00Z"
    log = (
        _torch_traceback(
            [
                ("/workspace/sd-scripts/sdxl_train_network.py", 185, "<module>", "trainer.train(args)"),
                (
                    "/workspace/sd-scripts/library/sdxl_original_unet.py",
                    257,
                    "get_timestep_embedding",
                    "exponent = exponent / (half_dim - downscale_freq_shift)",
                ),
            ],
            ["RuntimeError: CUDA error: uncorrectable ECC error encountered", *CUDA_ASYNC, ""],
        )
        + "[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with exception: CUDA error: "
        "uncorrectable ECC error encountered\n" + "\n".join(CUDA_ASYNC) + "\n"
        "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44 (most recent "
        "call first):\n"
    )
    c, _ = _single_failed(
        slug,
        now=now,
        project="genart",
        pid="233",
        name="sdxl-lora-2gpu",
        node="h100-node-02",
        img="registry.example.com/genart/kohya-ss:24.1",
        created="2024-08-02T13:00:00Z",
        run_at="2024-08-02T13:02:40Z",
        end="2024-08-02T14:37:12Z",
        exit_code=1,
        reason="Error",
        log=log,
        gpu=2,
        memory="128Gi",
        command="accelerate launch --num_processes 2 sdxl_train_network.py --config lora.toml",
    )
    return c.document(
        description=(
            "A 2x H100 SDXL LoRA run (accelerate, one pod) fails: rank 1 raises 'CUDA error: uncorrectable ECC "
            "error encountered' and its NCCL watchdog thread terminates with the same ECC error. The NCCL "
            "watchdog line is a consequence of the ECC fault on the same GPU, not a network or peer timeout: "
            "NODE_FAILURE."
        ),
        source="https://github.com/kohya-ss/sd-scripts/issues/1434",
        now=now,
        ask={
            "text": "sdxl-lora-2gpu crashed with an NCCL watchdog error, is NCCL broken?",
            "workload_name": "sdxl-lora-2gpu",
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["uncorrectable ECC error"]},
    )


@case
def ecc_cuda_runtime_39_sigabrt() -> dict[str, Any]:
    slug, now = "ecc-cuda-runtime-error-39-exit-134", "2019-10-08T09:30:00Z"
    log = (
        "Epoch 18 [2850/2975] loss 0.2214 lr 0.00731\nEpoch 18 [2900/2975] loss 0.2198 lr 0.00731\n"
        "RuntimeError: cuda runtime error (39) : uncorrectable ECC error encountered at "
        "/pytorch/aten/src/THC/THCCachingHostAllocator.cpp:265\n"
        "terminate called without an active exception\n"
    )
    c, _ = _single_failed(
        slug,
        now=now,
        project="auto-perception",
        pid="115",
        name="semseg-cityscapes-8gpu",
        node="dgx1-v100-03",
        img="nvcr.io/nvidia/pytorch:19.05-py3",
        created="2019-10-07T14:00:00Z",
        run_at="2019-10-07T14:03:21Z",
        end="2019-10-08T07:52:48Z",
        exit_code=134,
        reason="Error",
        log=log,
        gpu=8,
        memory="480Gi",
        command="python -m torch.distributed.launch --nproc_per_node=8 train.py",
        product="Tesla-V100-SXM2-16GB",
        node_kw={
            "kubelet": "v1.14.6",
            "runtime": "docker://18.9.7",
            "kernel": "4.15.0-62-generic",
            "os_image": "Ubuntu 18.04.3 LTS",
        },
    )
    return c.document(
        description=(
            "An 8-GPU semantic-segmentation run trains fine on 4 GPUs but on 8 GPUs dies after 18 epochs with "
            "'cuda runtime error (39) : uncorrectable ECC error encountered' followed by 'terminate called "
            "without an active exception' (exit 134, SIGABRT). The abort is the program reacting to a GPU memory "
            "hardware fault: the ECC error outranks the exit code, NODE_FAILURE."
        ),
        source="https://github.com/NVIDIA/semantic-segmentation/issues/33",
        now=now,
        ask={
            "text": "why did semseg-cityscapes-8gpu die after 18 epochs?",
            "workload_name": "semseg-cityscapes-8gpu",
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["uncorrectable ECC error"]},
    )


@case
def gpu_fallen_off_bus_node_event() -> dict[str, Any]:
    slug, now = "gpu-fallen-off-bus-node-event-no-xid", "2025-10-25T07:30:00Z"
    node = "l40-node-11"
    log = "step 4100/20000 | loss 1.873 | 2.41 it/s\nstep 4150/20000 | loss 1.866 | 2.40 it/s\n" + _torch_traceback(
        [("/app/train.py", 141, "train_step", "torch.cuda.synchronize()")],
        ["RuntimeError: CUDA error: unknown error", *CUDA_ASYNC],
    )

    def node_event(c: RunaiCase, e: dict[str, Any]) -> None:
        c.k8s_event(
            node,
            "SysLogsGPUFallenOff",
            "NVRM: The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has fallen off "
            "the bus and is not responding to commands.",
            "2025-10-25T06:44:03Z",
            kind="Node",
            component="syslog-health-monitor",
        )

    c, _ = _single_failed(
        slug,
        now=now,
        project="robotics",
        pid="510",
        name="vla-policy-ft",
        node=node,
        img="nvcr.io/nvidia/pytorch:25.08-py3",
        created="2025-10-25T05:10:00Z",
        run_at="2025-10-25T05:12:30Z",
        end="2025-10-25T06:44:05Z",
        exit_code=1,
        reason="Error",
        log=log,
        gpu=1,
        memory="96Gi",
        product="NVIDIA-L40",
        extra_events=node_event,
        node_kw={"kernel": "6.8.0-85-generic", "labels": {"nvidia.com/cuda.driver-version.full": "570.158.01"}},
    )
    return c.document(
        description=(
            "The GPU at 0000:b3:00.0 fell off the PCIe bus; dmesg has only the NVRM 'fallen off the bus' line "
            "and no Xid, which the health monitor reports as a Warning event on the Node. The training pod on "
            "that node dies at the same second with a bare 'CUDA error: unknown error' (exit 1; the log line is "
            "illustrative, the report has only the kernel side). Node events count: NODE_FAILURE."
        ),
        source="https://github.com/NVIDIA/NVSentinel/issues/155",
        now=now,
        ask={
            "text": "why did vla-policy-ft crash with a CUDA unknown error?",
            "workload_name": "vla-policy-ft",
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["fallen off the bus", node]},
    )


@case
def xid119_gsp_timeout_node_condition() -> dict[str, Any]:
    slug, now = "xid119-gsp-rpc-timeout-node-condition", "2023-03-03T05:10:00Z"
    node = "a100-node-61"
    xid = (
        "NVRM: Xid (PCI:0000:61:00): 119, pid=1346198, name=nvidia-smi, Timeout waiting for RPC from GSP! "
        "Expected function 103 (GSP_RM_ALLOC) (0x80 0x38)."
    )
    cond = [
        {
            "type": "AcceleratedHardwareReady",
            "status": "False",
            "reason": "NvidiaXID119Error",
            "message": xid,
            "lastHeartbeatTime": "2023-03-03T05:09:40Z",
            "lastTransitionTime": "2023-03-03T04:27:09Z",
        }
    ]
    log = "[2023-03-03 04:26:51] batch 88120 tokens/s 41822\n" + _torch_traceback(
        [("/srv/app/serve_batch.py", 77, "run", "out = model.generate(**inputs)")],
        ["RuntimeError: CUDA error: unspecified launch failure", *CUDA_ASYNC],
    )
    c, _ = _single_failed(
        slug,
        now=now,
        project="search-ranking",
        pid="144",
        name="rerank-batch-0303",
        node=node,
        img="registry.example.com/search/reranker:3.2.0",
        created="2023-03-02T22:00:00Z",
        run_at="2023-03-02T22:01:40Z",
        end="2023-03-03T04:27:12Z",
        exit_code=1,
        reason="Error",
        log=log,
        gpu=1,
        memory="64Gi",
        product="NVIDIA-A100-SXM4-80GB",
        node_kw={"extra_conditions": cond},
    )
    return c.document(
        description=(
            "The GPU's GSP firmware stopped answering (dmesg 'Xid ... 119 ... Timeout waiting for RPC from GSP!', "
            "quoted from the report); the node's health agent turns it into a node condition "
            "AcceleratedHardwareReady=False / NvidiaXID119Error (the condition shape of the EKS node monitoring "
            "agent). A batch job on that GPU died at the same time with a generic CUDA launch failure "
            "(illustrative). Xid 119 is in FORMAT.md's hardware list: NODE_FAILURE, quoting the Xid."
        ),
        source="https://github.com/NVIDIA/open-gpu-kernel-modules/issues/446",
        now=now,
        ask={
            "text": "rerank-batch-0303 failed overnight, why?",
            "workload_name": "rerank-batch-0303",
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["119", node]},
    )


@case
def xid31_node_condition_app_class() -> dict[str, Any]:
    slug, now = "xid31-node-condition-is-app-class", "2025-06-23T19:00:00Z"
    node = "gke-weitong-cluster-p100-22d24db3-kd6j"
    cond = [
        {
            "type": "XidCriticalError",
            "status": "True",
            "reason": '{"31":true}',
            "message": "6e43a052-e544-467b-a972-63d7cd2ce80a",
            "lastHeartbeatTime": "2025-06-23T18:58:44Z",
            "lastTransitionTime": "2025-06-23T18:44:57Z",
        }
    ]
    log = (
        "[Vector addition of 50000 elements]\nCopy input data from the host memory to the CUDA device\n"
        "CUDA kernel launch with 196 blocks of 256 threads\n"
        "Failed to copy vector C from device to host (error code an illegal memory access was encountered)!\n"
    )
    c, _ = _single_failed(
        slug,
        now=now,
        project="gpu-infra",
        pid="77",
        name="illegal-memory-access-demo",
        node=node,
        img="us-docker.pkg.dev/example/gpu-error/illegal-memory-access:v1",
        created="2025-06-23T18:44:30Z",
        run_at="2025-06-23T18:44:52Z",
        end="2025-06-23T18:44:56Z",
        exit_code=1,
        reason="Error",
        log=log,
        gpu=1,
        memory="4Gi",
        command="./vectorAdd",
        product="Tesla-P100-PCIE-16GB",
        node_kw={
            "extra_conditions": cond,
            "kubelet": "v1.32.4-gke.1415000",
            "runtime": "containerd://1.7.27",
            "os_image": "Container-Optimized OS from Google",
        },
    )
    return c.document(
        description=(
            'GKE\'s device plugin raises a node condition XidCriticalError with reason {"31":true} after the '
            "illegal-memory-access demo (a vectorAdd with a bad pointer) triggers Xid 31. Xid 31 is an "
            "application-class Xid (an MMU fault caused by the program): the node condition must not turn the "
            "program's own bug into a node failure. CRASH_APP_ERROR."
        ),
        source="https://github.com/GoogleCloudPlatform/container-engine-accelerators/pull/497",
        now=now,
        ask={
            "text": "illegal-memory-access-demo failed and the node now shows XidCriticalError, is the GPU bad?",
            "workload_name": "illegal-memory-access-demo",
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "CRASH_APP_ERROR", "mentions": ["illegal memory access"]},
    )


@case
def xid94_contained_ecc_h100() -> dict[str, Any]:
    slug, now = "xid94-contained-ecc-allocatable-drop", "2024-10-25T02:40:00Z"
    node = "h100-node-14"
    log = "iter 61200 | lm loss 2.0931 | grad norm 0.402\n" + _torch_traceback(
        [("/workspace/megatron/training.py", 1204, "train_step", "loss.backward()")],
        ["RuntimeError: CUDA error: uncorrectable ECC error encountered", *CUDA_ASYNC],
    )

    def node_event(c: RunaiCase, e: dict[str, Any]) -> None:
        c.k8s_event(
            node,
            "XidCriticalError",
            "XidCriticalError: Xid=94 on Device=GPU-3a1c7f0e-5d2b-4c61-9e0a-7b12c4d8e915, the device will "
            "go unhealthy.",
            "2024-10-25T02:19:08Z",
            kind="Node",
            component="nvidia-device-plugin",
        )

    c, _ = _single_failed(
        slug,
        now=now,
        project="llm-research",
        pid="122",
        name="gpt-moe-pretrain-14",
        node=node,
        img="nvcr.io/nvidia/nemo:24.07",
        created="2024-10-24T18:00:00Z",
        run_at="2024-10-24T18:04:10Z",
        end="2024-10-25T02:19:10Z",
        exit_code=1,
        reason="Error",
        log=log,
        gpu=8,
        memory="1024Gi",
        extra_events=node_event,
        node_kw={"allocatable_gpus": 7, "labels": {"nvidia.com/cuda.driver-version.full": "535.129.03"}},
    )
    return c.document(
        description=(
            "On an 8x H100 node (gpu-operator v23.9.2, driver 535.129.03) one GPU reports Xid 94 (contained ECC "
            "error); the device plugin marks it unhealthy and allocatable nvidia.com/gpu drops from 8 to 7, "
            "which the report shows. The job using that GPU dies with an uncorrectable-ECC CUDA error; the Xid "
            "reaches the API as a Warning event on the Node. NODE_FAILURE, quoting Xid 94."
        ),
        source="https://github.com/NVIDIA/gpu-operator/issues/1065",
        now=now,
        ask={
            "text": "why did gpt-moe-pretrain-14 fail at 2am?",
            "workload_name": "gpt-moe-pretrain-14",
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["94", node]},
    )


# ============================================================================ several pods
def _dist_pod(
    c: RunaiCase,
    e: dict[str, Any],
    name: str,
    pod: str,
    node: str,
    img: str,
    created: str,
    run_at: str,
    state: dict[str, Any],
    k8s_phase: str,
    phase: str,
    gpu: float,
    memory: str,
    replica: str,
    index: int,
    restarts: int = 0,
    last: dict[str, Any] | None = None,
    completed: str | None = None,
) -> None:
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase=k8s_phase,
        created=created,
        updated=completed or run_at,
        completed=completed,
        containers=[("pytorch", img, run_at)],
        gpu=gpu,
    )
    c.k8s_pod(
        pod,
        workload=name,
        node=node,
        phase=phase,
        created=created,
        containers=[container("pytorch", img, gpu, memory)],
        statuses=[cstatus("pytorch", img, state, last=last, restarts=restarts, ready="running" in state)],
        labels={"training.kubeflow.org/replica-type": replica, "training.kubeflow.org/replica-index": str(index)},
        owner_kind="DistributedWorkload",
    )


@case
def mpijob_rank_killed_signal9() -> dict[str, Any]:
    slug, now = "mpijob-launcher-rank-killed-signal-9", "2019-02-09T10:20:00Z"
    c = RunaiCase(slug, project="hpc-bench", project_id="61")
    name = "mpi-test-2-mpijob"
    img = "registry.example.com/hpc/horovod-tf:0.15.2"
    created, run_at = "2019-02-09T10:00:00Z", "2019-02-09T10:01:10Z"
    e = c.workload(
        name,
        created=created,
        phase="Running",
        phase_at=run_at,
        image=img,
        type_="Distributed",
        gpu=1,
        memory="16Gi",
        running_pods=2,
        pods_requested=3,
        framework="MPI",
        workers=2,
        command="mpirun -np 2 python tensorflow_mnist.py",
        restart_policy="OnFailure",
    )
    launcher = "mpi-test-2-mpijob-launcher-lv2fx"
    log = (
        "-------------------------------------------------------\n"
        "Primary job  terminated normally, but 1 process returned\n"
        "a non-zero exit code. Per user-direction, the job has been aborted.\n"
        "-------------------------------------------------------\n"
        "--------------------------------------------------------------------------\n"
        "mpirun.real noticed that process rank 1 with PID 39 on node mpi-test-2-mpijob-worker-1 exited on "
        "signal 9 (Killed).\n"
        "--------------------------------------------------------------------------\n"
    )
    started(c, e, "mpi-test-2-mpijob-worker-0", "gpu-node-04", created, None)
    c.event(
        e,
        "Scheduled",
        f"Successfully assigned pod {c.ns}/mpi-test-2-mpijob-worker-1 to node gpu-node-05 at node-pool default",
        at(created, seconds=3),
        obj="mpi-test-2-mpijob-worker-1",
        type_="Normal",
        source="runai-scheduler",
    )
    c.event(
        e,
        "Scheduled",
        f"Successfully assigned pod {c.ns}/{launcher} to node cpu-node-01 at node-pool default",
        at(created, seconds=20),
        obj=launcher,
        type_="Normal",
        source="runai-scheduler",
    )
    c.phase(e, "Running", run_at)
    c.event(
        e,
        "BackOff",
        "Back-off restarting failed container",
        "2019-02-09T10:14:40Z",
        obj=launcher,
        count=3,
        first="2019-02-09T10:06:20Z",
    )
    for i, node in enumerate(["gpu-node-04", "gpu-node-05"]):
        pod = f"mpi-test-2-mpijob-worker-{i}"
        c.t1pod(
            e,
            pod,
            node=node,
            k8s_phase="Running",
            created=created,
            updated=run_at,
            containers=[("mpi-worker", img, run_at)],
        )
        c.k8s_pod(
            pod,
            workload=name,
            node=node,
            phase="Running",
            created=created,
            containers=[container("mpi-worker", img, 1, "16Gi")],
            statuses=[cstatus("mpi-worker", img, running(run_at), ready=True)],
            labels={"mpi_role_type": "worker"},
            owner_kind="DistributedWorkload",
            restart_policy="OnFailure",
        )
        c.node(
            node,
            now=now,
            gpus=4,
            product="Tesla-V100-PCIE-16GB",
            kubelet="v1.13.2",
            runtime="docker://18.6.1",
            kernel="4.15.0-45-generic",
            os_image="Ubuntu 16.04.5 LTS",
        )
    c.t1pod(
        e,
        launcher,
        node="cpu-node-01",
        k8s_phase="CrashLoopBackOff",
        created=at(created, seconds=20),
        updated="2019-02-09T10:14:40Z",
        containers=[("mpi-launcher", img, "2019-02-09T10:12:02Z")],
        gpu=0,
    )
    c.k8s_pod(
        launcher,
        workload=name,
        node="cpu-node-01",
        phase="Running",
        created=at(created, seconds=20),
        containers=[container("mpi-launcher", img, 0, "2Gi")],
        statuses=[
            cstatus(
                "mpi-launcher",
                img,
                waiting(
                    "CrashLoopBackOff", f"back-off 40s restarting failed container=mpi-launcher pod={launcher}_{c.ns}"
                ),
                last=terminated(137, "Error", "2019-02-09T10:12:02Z", "2019-02-09T10:14:31Z", key=slug),
                restarts=2,
            )
        ],
        labels={"mpi_role_type": "launcher"},
        owner_kind="DistributedWorkload",
        restart_policy="OnFailure",
    )
    c.node(
        "cpu-node-01",
        now=now,
        gpus=0,
        kubelet="v1.13.2",
        runtime="docker://18.6.1",
        kernel="4.15.0-45-generic",
        os_image="Ubuntu 16.04.5 LTS",
    )
    c.log(launcher, "mpi-launcher", log, previous=True)
    c.log(launcher, "mpi-launcher", "", previous=False)
    return c.document(
        description=(
            "An MPIJob's launcher keeps crashing (CrashLoopBackOff, exit 137 from mpirun) while both workers "
            "show Running and their events are clean. The launcher's log names the first failure: rank 1 on "
            "mpi-test-2-mpijob-worker-1 'exited on signal 9 (Killed)'. The reporter later found it was an OOM, "
            "but nothing visible says who sent the SIGKILL (no OOMKilled anywhere): UNKNOWN, naming worker-1, "
            "never the launcher's own exit as the cause."
        ),
        source="https://github.com/kubeflow/mpi-operator/issues/90",
        now=now,
        ask={"text": "mpi-test-2-mpijob launcher keeps crashing, why?", "workload_name": name, "intent": "current"},
        expect={"outcome": "diagnosed", "category": "UNKNOWN", "mentions": ["mpi-test-2-mpijob-worker-1", "signal 9"]},
    )


@case
def ddp_worker_cuda_oom_peers_timeout() -> dict[str, Any]:
    slug, now = "ddp-worker-cuda-oom-peers-nccl-timeout", "2026-02-22T11:00:00Z"
    c = RunaiCase(slug, project="nlp", project_id="98")
    name = "ddp-finetune-3node"
    img = "registry.example.com/nlp/llm-ft:2.6.0"
    created, run_at = "2026-02-22T09:30:00Z", "2026-02-22T09:32:00Z"
    oom_at, peers_at = "2026-02-22T10:14:05Z", "2026-02-22T10:24:07Z"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(peers_at, seconds=5),
        image=img,
        type_="Distributed",
        gpu=8,
        memory="512Gi",
        pods_requested=3,
        framework="PyTorch",
        workers=2,
        command="torchrun --nnodes=3 --nproc-per-node=8 finetune.py",
    )
    nodes = {
        "ddp-finetune-3node-master-0": "dgx-a100-01",
        "ddp-finetune-3node-worker-0": "dgx-a100-02",
        "ddp-finetune-3node-worker-1": "dgx-a100-03",
    }
    c.phase(e, "Pending", created)
    for pod, node in nodes.items():
        c.event(
            e,
            "Scheduled",
            f"Successfully assigned pod {c.ns}/{pod} to node {node} at node-pool default",
            at(created, seconds=3),
            obj=pod,
            type_="Normal",
            source="runai-scheduler",
        )
    c.phase(e, "Running", run_at)
    c.event(
        e,
        "PyTorchJobFailed",
        f"PyTorchJob {c.ns}/{name} has failed because 1 Worker replica(s) failed.",
        at(peers_at, seconds=3),
        obj=name,
        kind="PyTorchJob",
        type_="Normal",
        source="pytorchjob-controller",
    )
    c.phase(e, "Failed", at(peers_at, seconds=5))
    oom_log = (
        "[rank17] step 3120 loss 1.1934\n"
        + _torch_traceback(
            [
                ("/workspace/finetune.py", 233, "<module>", "main()"),
                ("/workspace/finetune.py", 201, "main", "outputs = model(**batch)"),
            ],
            [
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 1 has a total "
                "capacity of 79.14 GiB of which 2.11 GiB is free. Of the allocated memory 71.20 GiB is allocated by "
                "PyTorch, and 4.36 GiB is reserved by PyTorch but unallocated."
            ],
        )
        + "E0222 10:14:04.118000 41 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 1 (pid: 58) of binary: /usr/bin/python\n"
    )
    timeout_log = (
        "[rank{r}]:[E222 10:24:05.771022 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=9412, OpType=ALLREDUCE, NumelIn=65536000, NumelOut=65536000, "
        "Timeout(ms)=600000) ran for 600043 milliseconds before timing out.\n"
        "[rank{r}]:[E222 10:24:05.771388 ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
        "Exception (either an error or timeout) detected by watchdog at work: 9412, last enqueued NCCL work: 9412, "
        "last completed NCCL work: 9411.\n"
    )
    for i, (pod, node) in enumerate(nodes.items()):
        replica = "master" if "master" in pod else "worker"
        end = oom_at if pod.endswith("worker-1") else peers_at
        _dist_pod(
            c,
            e,
            name,
            pod,
            node,
            img,
            created,
            run_at,
            terminated(1, "Error", run_at, end, key=pod),
            "Error",
            "Failed",
            8,
            "512Gi",
            replica,
            0 if replica == "master" else i - 1,
            completed=end,
        )
        c.node(node, now=now, gpus=8, product="NVIDIA-A100-SXM4-80GB")
        c.log(pod, "pytorch", oom_log if pod.endswith("worker-1") else timeout_log.format(r=8 * i))
    return c.document(
        description=(
            "A 3-pod DDP fine-tune: worker-1 hits 'CUDA out of memory' inside its training step at 10:14 and "
            "exits 1; master-0 and worker-0 then sit in an all-reduce until the 600 s NCCL watchdog aborts them "
            "at 10:24 (exit 1, 'Watchdog caught collective operation timeout'). The first failing pod decides: "
            "worker-1's CUDA OOM, a fault of the program (CRASH_APP_ERROR); the peers' timeouts are consequences. "
            "Memory numbers in the OOM line are illustrative."
        ),
        source="https://github.com/flyteorg/flyte-sdk/pull/698",
        now=now,
        ask={
            "text": "ddp-finetune-3node died with NCCL timeouts on the master, is the network flaky?",
            "workload_name": name,
            "intent": "terminal",
        },
        expect={
            "outcome": "diagnosed",
            "category": "CRASH_APP_ERROR",
            "mentions": ["ddp-finetune-3node-worker-1", "CUDA out of memory"],
        },
    )


@case
def elastic_peer_killed_137() -> dict[str, Any]:
    slug, now = "elastic-peer-killed-137-survivor-nccl-remote-error", "2025-04-09T10:30:00Z"
    c = RunaiCase(slug, project="dist-proto", project_id="415")
    name = "elastic-proto"
    img = "registry.example.com/proto/elastic-ddp:0.3"
    created, run_at = "2025-04-09T09:00:00Z", "2025-04-09T09:01:30Z"
    kill_at, peer_at = "2025-04-09T09:41:12Z", "2025-04-09T09:41:19Z"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(peer_at, seconds=4),
        image=img,
        type_="Distributed",
        gpu=1,
        memory="32Gi",
        pods_requested=2,
        framework="PyTorch",
        workers=1,
        command="torchrun --nnodes=1:2 --nproc-per-node=1 --rdzv-backend=c10d train.py",
    )
    pods = {
        "elastic-proto-master-0": "ip-172-31-36-217.eu-north-1.compute.internal",
        "elastic-proto-worker-0": "ip-172-31-40-12.eu-north-1.compute.internal",
    }
    c.phase(e, "Pending", created)
    for pod, node in pods.items():
        c.event(
            e,
            "Scheduled",
            f"Successfully assigned pod {c.ns}/{pod} to node {node} at node-pool default",
            at(created, seconds=3),
            obj=pod,
            type_="Normal",
            source="runai-scheduler",
        )
    c.phase(e, "Running", run_at)
    c.phase(e, "Failed", at(peer_at, seconds=4))
    peer_log = (
        "terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread terminated with "
        "exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5\n"
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
        "Last error:\n"
        "socketProgress: Connection closed by remote peer ip-172-31-36-217.eu-north-1.compute.internal<59116>\n"
        "Exception raised from checkForNCCLErrorsInternal at /pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:2363 (most recent call first):\n"
    )
    for pod, node in pods.items():
        master = pod.endswith("master-0")
        end = kill_at if master else peer_at
        _dist_pod(
            c,
            e,
            name,
            pod,
            node,
            img,
            created,
            run_at,
            terminated(137 if master else 1, "Error", run_at, end, key=pod),
            "Error",
            "Failed",
            1,
            "32Gi",
            "master" if master else "worker",
            0,
            completed=end,
        )
        c.node(
            node,
            now=now,
            gpus=1,
            product="Tesla-T4",
            kubelet="v1.31.6-eks-1552ad0",
            runtime="containerd://1.7.25",
            kernel="6.1.131-143.221.amzn2023.x86_64",
            os_image="Amazon Linux 2023.7.20250331",
        )
        c.log(
            pod,
            "pytorch",
            "epoch 7 batch 300/938 loss 0.0412\n" if master else "epoch 7 batch 300/938 loss 0.0409\n" + peer_log,
        )
    return c.document(
        description=(
            "Two-node elastic PyTorch: the rendezvous agent on the master's node is killed (SIGKILL; the "
            "container ends with exit 137, reason Error, no OOMKilled, no event naming a sender). Seven seconds "
            "later the surviving worker aborts on 'NCCL error: remote process exited or there was a network "
            "error' ('Connection closed by remote peer ip-172-31-36-217...'). The first failing pod is the "
            "master and its 137 is unexplained: UNKNOWN naming elastic-proto-master-0; the worker's NCCL error is "
            "a consequence, not the cause."
        ),
        source="https://github.com/pytorch/pytorch/issues/150916",
        now=now,
        ask={
            "text": "why did elastic-proto fail? the worker shows an NCCL remote error",
            "workload_name": name,
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "UNKNOWN", "mentions": ["elastic-proto-master-0", "137"]},
    )


@case
def pytorchjob_worker_exit1_master_running() -> dict[str, Any]:
    slug, now = "pytorchjob-worker-exit1-master-still-running", "2022-04-27T10:30:00Z"
    c = RunaiCase(slug, project="kubeflow", project_id="20")
    name = "pytorchjob"
    img = "centos:7"
    created, run_at, fail_at = "2022-04-27T10:15:00Z", "2022-04-27T10:15:31Z", "2022-04-27T10:15:51Z"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(fail_at, seconds=2),
        image=img,
        type_="Distributed",
        gpu=0,
        memory="1Gi",
        pods_requested=2,
        framework="PyTorch",
        workers=1,
        command="/bin/sleep 3600",
        running_pods=1,
    )
    c.phase(e, "Pending", created)
    for pod, node in (("pytorchjob-master-0", "node-a"), ("pytorchjob-worker-0", "node-b")):
        c.event(
            e,
            "Scheduled",
            f"Successfully assigned pod {c.ns}/{pod} to node {node} at node-pool default",
            at(created, seconds=3),
            obj=pod,
            type_="Normal",
            source="runai-scheduler",
        )
    c.phase(e, "Running", run_at)
    c.event(
        e,
        "PyTorchJobFailed",
        f"PyTorchJob {name} is failed because 1 Worker replica(s) failed.",
        at(fail_at, seconds=1),
        obj=name,
        kind="PyTorchJob",
        type_="Normal",
        source="pytorch-operator",
    )
    c.phase(e, "Failed", at(fail_at, seconds=2))
    _dist_pod(
        c,
        e,
        name,
        "pytorchjob-master-0",
        "node-a",
        img,
        created,
        run_at,
        running(run_at),
        "Running",
        "Running",
        0,
        "1Gi",
        "master",
        0,
    )
    _dist_pod(
        c,
        e,
        name,
        "pytorchjob-worker-0",
        "node-b",
        img,
        created,
        run_at,
        terminated(1, "Error", run_at, fail_at, key=slug),
        "Error",
        "Failed",
        0,
        "1Gi",
        "worker",
        0,
        completed=fail_at,
    )
    for node in ("node-a", "node-b"):
        c.node(node, now=now, gpus=0, kubelet="v1.21.5", runtime="containerd://1.4.12")
    c.log("pytorchjob-master-0", "pytorch", "")
    c.log("pytorchjob-worker-0", "pytorch", "")
    return c.document(
        description=(
            "A PyTorchJob whose worker runs 'sleep 20 && exit 1': the worker pod ends Error/exit 1 after 20 s and "
            "the job is Failed, while the master pod (sleep 3600) is still Running. The healthy master must not "
            "make this look like a running job, and the failed worker decides: its own program exited 1, "
            "CRASH_APP_ERROR, naming pytorchjob-worker-0."
        ),
        source="https://github.com/kubeflow/trainer/issues/1579",
        now=now,
        ask={
            "text": "why is pytorchjob failed when the master is still running?",
            "workload_name": name,
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "CRASH_APP_ERROR", "mentions": ["pytorchjob-worker-0"]},
    )


@case
def pytorchjob_worker_xid79_first() -> dict[str, Any]:
    slug, now = "pytorchjob-worker-xid79-first-master-timeout", "2025-04-02T08:00:00Z"
    c = RunaiCase(slug, project="llm-research", project_id="122")
    name = "llm-sft-16gpu"
    img = "nvcr.io/nvidia/pytorch:25.02-py3"
    created, run_at = "2025-04-02T02:00:00Z", "2025-04-02T02:03:00Z"
    xid_at, worker_end, master_end = "2025-04-02T06:51:40Z", "2025-04-02T06:51:43Z", "2025-04-02T07:01:46Z"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(master_end, seconds=4),
        image=img,
        type_="Distributed",
        gpu=8,
        memory="1024Gi",
        pods_requested=2,
        framework="PyTorch",
        workers=1,
        command="torchrun --nnodes=2 --nproc-per-node=8 sft.py --cfg sft-70b.yaml",
    )
    pods = {"llm-sft-16gpu-master-0": "h100-sxm-ad", "llm-sft-16gpu-worker-0": "h100-sxm-ae"}
    c.phase(e, "Pending", created)
    for pod, node in pods.items():
        c.event(
            e,
            "Scheduled",
            f"Successfully assigned pod {c.ns}/{pod} to node {node} at node-pool default",
            at(created, seconds=3),
            obj=pod,
            type_="Normal",
            source="runai-scheduler",
        )
    c.phase(e, "Running", run_at)
    c.event(
        e,
        "PyTorchJobFailed",
        f"PyTorchJob {c.ns}/{name} has failed because 1 Worker replica(s) failed.",
        at(master_end, seconds=2),
        obj=name,
        kind="PyTorchJob",
        type_="Normal",
        source="pytorchjob-controller",
    )
    c.phase(e, "Failed", at(master_end, seconds=4))
    worker_log = "[rank12] step 20310 loss 0.8127\n" + _torch_traceback(
        [("/workspace/sft.py", 318, "train", "loss.backward()")],
        ["RuntimeError: CUDA error: unknown error", *CUDA_ASYNC],
    )
    master_log = (
        "[rank3]:[E402 07:01:44.120551 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=81250, OpType=ALLREDUCE, NumelIn=262144000, NumelOut=262144000, "
        "Timeout(ms)=600000) ran for 600031 milliseconds before timing out.\n"
        "[rank3]:[E402 07:01:44.121002 ProcessGroupNCCL.cpp:630] [Rank 3] Some NCCL operations have failed or timed "
        "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
        "corrupted/incomplete data.\n"
    )
    for pod, node in pods.items():
        worker = "worker" in pod
        end = worker_end if worker else master_end
        _dist_pod(
            c,
            e,
            name,
            pod,
            node,
            img,
            created,
            run_at,
            terminated(1, "Error", run_at, end, key=pod),
            "Error",
            "Failed",
            8,
            "1024Gi",
            "worker" if worker else "master",
            0,
            completed=end,
        )
        c.node(node, now=now, gpus=8, allocatable_gpus=7 if worker else 8)
        c.log(pod, "pytorch", worker_log if worker else master_log)
    c.k8s_event(
        "h100-sxm-ae",
        "XIDError",
        "XID 79(GPU has fallen off the bus) detected on PCI:0000:ae:00",
        xid_at,
        kind="Node",
        component="gpud",
    )
    return c.document(
        description=(
            "A 2-node SFT run: at 06:51:40 the worker's node logs 'XID 79(GPU has fallen off the bus) detected on "
            "PCI:0000:ae:00' (a Node event from gpud; its NVML calls then return ERROR_GPU_IS_LOST) and the worker "
            "dies 3 s later with 'CUDA error: unknown error'; the master waits in an all-reduce and is aborted by "
            "the NCCL watchdog ten minutes later. The first failing pod decides and its node has a GPU hardware "
            "fault: NODE_FAILURE, naming the worker and Xid 79, not the master's timeout."
        ),
        source="https://github.com/leptonai/gpud/issues/604",
        now=now,
        ask={
            "text": "llm-sft-16gpu master hit an NCCL watchdog timeout, why?",
            "workload_name": name,
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["llm-sft-16gpu-worker-0", "79"]},
    )


# ============================================================================ device plugin / runtime
def _rejected(
    slug: str,
    *,
    now: str,
    project: str,
    pid: str,
    name: str,
    node: str,
    img: str,
    created: str,
    reason: str,
    message: str,
    tier2: bool,
    product: str,
    command: str,
) -> RunaiCase:
    c = RunaiCase(slug, project=project, project_id=pid)
    pod = f"{name}-0-0"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(created, seconds=6),
        image=img,
        gpu=1,
        memory="16Gi",
        command=command,
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase=reason,
        created=created,
        updated=at(created, seconds=4),
        completed=at(created, seconds=4),
        containers=[(name, img, None)],
    )
    if tier2:
        c.tier2()
    started(c, e, pod, node, created, None)
    c.event(e, reason, message, at(created, seconds=4), obj=pod)
    c.phase(e, "Failed", at(created, seconds=6))
    if tier2:
        c.k8s_pod(
            pod,
            workload=name,
            node=node,
            phase="Failed",
            created=created,
            reason=reason,
            message="Pod was rejected: " + message,
            containers=[container(name, img, 1, "16Gi")],
            statuses=[],
            conditions=[],
        )
        c.node(node, now=now, gpus=8, product=product)
    return c


@case
def mig_mixed_insufficient_permissions() -> dict[str, Any]:
    slug, now = "mig-mixed-full-gpu-nvml-insufficient-permissions", "2021-07-27T09:30:00Z"
    msg = (
        "Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: code = "
        "Unknown desc = Unable to retrieve list of available devices: error creating nvml.Device 5: nvml: "
        "Insufficient Permissions, which is unexpected"
    )
    c = _rejected(
        slug,
        now=now,
        project="dgx-lab",
        pid="31",
        name="cuda-vector-add",
        node="dgx-a100-3",
        img="k8s.gcr.io/cuda-vector-add:v0.1",
        created="2021-07-27T09:12:00Z",
        reason="UnexpectedAdmissionError",
        message=msg,
        tier2=False,
        product="NVIDIA-A100-SXM4-40GB",
        command="./vectorAdd",
    )
    return c.document(
        description=(
            "A DGX A100 with MIG enabled on GPUs 5-7 and full GPUs 0-4 (device plugin mixed strategy): a pod "
            "asking for one full GPU is rejected at admission because the plugin cannot create nvml.Device 5 "
            "('nvml: Insufficient Permissions'). The node's GPU stack (plugin/NVML) fails, not the program: "
            "NODE_FAILURE. Tier 1 only."
        ),
        source="https://github.com/NVIDIA/k8s-device-plugin/issues/260",
        now=now,
        ask={
            "text": "why did cuda-vector-add fail on the dgx?",
            "workload_name": "cuda-vector-add",
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["Insufficient Permissions"]},
        tier2=False,
    )


@case
def device_plugin_nvml_init_admission() -> dict[str, Any]:
    slug, now = "device-plugin-nvml-init-admission-rejected", "2025-04-06T12:00:00Z"
    msg = (
        "Allocate failed due to device plugin GetPreferredAllocation; unable to get device link information: "
        "error calling nvml.Init"
    )
    c = _rejected(
        slug,
        now=now,
        project="forecasting",
        pid="57",
        name="demand-forecast-a100",
        node="aks-a100pool-31415926-vmss000004",
        img="forecastacr.azurecr.io/forecast/train:5.2",
        created="2025-04-06T11:40:00Z",
        reason="UnexpectedAdmissionError",
        message=msg,
        tier2=True,
        product="NVIDIA-A100-80GB-PCIe",
        command="python train.py --horizon 28",
    )
    return c.document(
        description=(
            "On an AKS full-A100 node (MIG-enabled cluster, this node without MIG, device plugin v0.17.1) the "
            "device plugin lost NVML ('error calling nvml.Init') and every GPU pod is rejected at admission; "
            "thousands of UnexpectedAdmissionError pods piled up until the plugin pod was restarted. A node "
            "GPU-stack failure: NODE_FAILURE."
        ),
        source="https://github.com/NVIDIA/k8s-device-plugin/issues/1223",
        now=now,
        ask={
            "text": "demand-forecast-a100 failed instantly, UnexpectedAdmissionError?",
            "workload_name": "demand-forecast-a100",
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["error calling nvml.Init"]},
    )


def _start_error(
    slug: str,
    *,
    now: str,
    project: str,
    pid: str,
    name: str,
    node: str,
    img: str,
    created: str,
    reason: str,
    message: str,
    exit_code: int | None,
    restarts: int,
    event_message: str,
    product: str,
    node_kw: dict[str, Any] | None = None,
    k8s_phase: str = "CrashLoopBackOff",
    phase: str = "Running",
    tier2: bool = True,
    gpu: float = 1,
) -> RunaiCase:
    """A pod whose main container cannot start (StartError / RunContainerError / CreateContainerError)."""
    c = RunaiCase(slug, project=project, project_id=pid)
    pod = f"{name}-0-0"
    e = c.workload(
        name,
        created=created,
        phase=phase,
        phase_at=at(created, seconds=20),
        image=img,
        gpu=gpu,
        memory="32Gi",
        running_pods=1 if phase == "Running" else 0,
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase=k8s_phase,
        created=created,
        updated=at(created, minutes=6),
        containers=[(name, img, None)],
    )
    if tier2:
        c.tier2()
    started(c, e, pod, node, created, at(created, seconds=20) if phase == "Running" else None)
    c.event(
        e, "Failed", event_message, at(created, minutes=6), obj=pod, count=restarts + 1, first=at(created, seconds=15)
    )
    if k8s_phase == "CrashLoopBackOff":
        c.event(
            e,
            "BackOff",
            "Back-off restarting failed container",
            at(created, minutes=6, seconds=10),
            obj=pod,
            count=restarts,
            first=at(created, seconds=40),
        )
    if tier2:
        if exit_code is None:
            st = cstatus(name, img, waiting(reason, message), restarts=restarts, pulled=True)
        else:
            st = cstatus(
                name,
                img,
                waiting("CrashLoopBackOff", f"back-off 2m40s restarting failed container={name} pod={pod}_{c.ns}"),
                last=terminated(
                    exit_code, reason, "1970-01-01T00:00:00Z", at(created, minutes=6), message=message, key=slug
                ),
                restarts=restarts,
            )
        c.k8s_pod(
            pod,
            workload=name,
            node=node,
            phase="Pending" if exit_code is None else "Running",
            created=created,
            containers=[container(name, img, gpu, "32Gi")],
            statuses=[st],
        )
        c.node(node, now=now, gpus=8, product=product, **(node_kw or {}))
    return c


@case
def hami_cdi_unresolvable_mig() -> dict[str, Any]:
    slug, now = "cdi-injection-unresolvable-mig-device", "2026-05-26T10:10:00Z"
    msg = (
        "failed to create containerd container: CDI device injection failed: unresolvable CDI devices "
        "k8s.device-plugin.nvidia.com/gpu=MIG-4c0f3a50-17a4-52eb-8450-e29e24c80885"
    )
    c = _start_error(
        slug,
        now=now,
        project="platform",
        pid="12",
        name="mig-smoke",
        node="a800-node-2",
        img="nvidia/cuda:12.4.1-base-ubuntu22.04",
        created="2026-05-26T09:58:00Z",
        reason="CreateContainerError",
        message=msg,
        exit_code=None,
        restarts=0,
        event_message="Error: " + msg,
        product="NVIDIA-A800-80GB-PCIe",
        k8s_phase="CreateContainerError",
        phase="Pending",
    )
    return c.document(
        description=(
            "With HAMi's MIG mode a MIG instance is created, but the test pod never gets a container: "
            "CreateContainerError 'CDI device injection failed: unresolvable CDI devices "
            "k8s.device-plugin.nvidia.com/gpu=MIG-...' (the runtime has no CDI spec for the new MIG device). The "
            "node's runtime/GPU stack cannot create the container: NODE_FAILURE, not the image or command."
        ),
        source="https://github.com/Project-HAMi/HAMi/issues/1903",
        now=now,
        ask={"text": "mig-smoke is stuck, CreateContainerError", "workload_name": "mig-smoke", "intent": "current"},
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["unresolvable CDI devices"]},
    )


HOOK = (
    "failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create "
    "failed: unable to start container process: error during container init: error running hook #0: error "
    "running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
)


@case
def nvml_driver_library_mismatch() -> dict[str, Any]:
    slug, now = "nvml-driver-library-mismatch-starterror-128", "2024-07-30T09:20:00Z"
    msg = HOOK + "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown"
    c = _start_error(
        slug,
        now=now,
        project="nlp",
        pid="98",
        name="bert-pretrain-ja",
        node="gpu-node-09",
        img="nvcr.io/nvidia/pytorch:24.05-py3",
        created="2024-07-30T09:00:00Z",
        reason="StartError",
        message=msg,
        exit_code=128,
        restarts=5,
        event_message="Error: " + msg,
        product="NVIDIA-A100-SXM4-80GB",
    )
    return c.document(
        description=(
            "After a driver upgrade on the node without a reboot, every GPU container fails in the NVIDIA hook: "
            "StartError, exit 128, 'nvidia-container-cli: initialization error: nvml error: driver/library "
            "version mismatch' (the report shows it on the GPU operator's validator; embedded here in a user's "
            "pod on that node). The node's GPU stack is broken: NODE_FAILURE, not the program."
        ),
        source="https://github.com/NVIDIA/gpu-operator/issues/898",
        now=now,
        ask={
            "text": "bert-pretrain-ja keeps crashing before it even starts",
            "workload_name": "bert-pretrain-ja",
            "intent": "current",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["driver/library version mismatch"]},
    )


@case
def hook_cuda_11_old_driver() -> dict[str, Any]:
    slug, now = "nvidia-hook-unsatisfied-cuda-11-old-driver", "2021-01-04T10:00:00Z"
    msg = (
        'Error: failed to start container "tf2-train": Error response from daemon: OCI runtime create failed: '
        "container_linux.go:370: starting container process caused: process_linux.go:459: container init "
        "caused: Running hook #0:: error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: "
        "requirement error: unsatisfied condition: cuda>=11.0, please update your driver to a newer version, "
        "or use an earlier cuda container: unknown"
    )
    c = _start_error(
        slug,
        now=now,
        project="cv-lab",
        pid="44",
        name="tf2-train",
        node="gpu-ws-01",
        img="tensorflow/tensorflow:2.4.0-gpu",
        created="2021-01-04T09:40:00Z",
        reason="RunContainerError",
        message=msg,
        exit_code=None,
        restarts=4,
        event_message=msg,
        product="GeForce-GTX-1080-Ti",
        k8s_phase="CrashLoopBackOff",
        tier2=False,
    )
    return c.document(
        description=(
            "A CUDA 11 image on a node whose driver is older than 450: the NVIDIA hook refuses it with "
            "'unsatisfied condition: cuda>=11.0, please update your driver to a newer version, or use an earlier "
            "cuda container' and the container never starts. House rule: the runtime refused it, NODE_FAILURE; "
            "the report names both remedies. Tier 1 only (the kubelet's Failed event carries the message)."
        ),
        source="https://github.com/NVIDIA/nvidia-docker/issues/1442",
        now=now,
        ask={"text": "tf2-train won't start on gpu-ws-01", "workload_name": "tf2-train", "intent": "current"},
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["cuda>=11.0"]},
        tier2=False,
    )


@case
def hook_cuda_12_8_driver_551() -> dict[str, Any]:
    slug, now = "nvidia-hook-unsatisfied-cuda-12-8-driver-551", "2025-11-21T09:45:00Z"
    msg = (
        "failed to create task for container: failed to create shim task: OCI runtime create failed: runc create "
        "failed: unable to start container process: error during container init: error running prestart hook "
        "#0: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: requirement "
        "error: unsatisfied condition: cuda>=12.8, please update your driver to a newer version, or use an "
        "earlier cuda container"
    )
    c = _start_error(
        slug,
        now=now,
        project="recon",
        pid="88",
        name="petric2-recon",
        node="rtx-node-03",
        img="ghcr.io/synerbi/sirf:petric2",
        created="2025-11-21T09:29:00Z",
        reason="StartError",
        message=msg,
        exit_code=128,
        restarts=3,
        event_message="Error: " + msg,
        product="NVIDIA-GeForce-RTX-4090",
        node_kw={
            "labels": {"nvidia.com/cuda.driver-version.full": "551.78", "nvidia.com/cuda.runtime-version.full": "12.4"}
        },
    )
    return c.document(
        description=(
            "The PETRIC2 image needs CUDA 12.8 but the node's driver 551.78 supports CUDA 12.4: the prestart hook "
            "refuses to start it ('unsatisfied condition: cuda>=12.8'). StartError/exit 128 in a crash loop. "
            "House rule: NODE_FAILURE (an image built for that driver, or a newer driver). The report ran Docker "
            "Desktop; embedded here in a Kubernetes node with that driver."
        ),
        source="https://github.com/SyneRBI/PETRIC2/issues/27",
        now=now,
        ask={
            "text": "petric2-recon keeps failing to start, is cuda 12.4 too old?",
            "workload_name": "petric2-recon",
            "intent": "current",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["cuda>=12.8"]},
    )


@case
def nvml_unknown_error_detection() -> dict[str, Any]:
    slug, now = "nvidia-hook-nvml-unknown-error-tier1", "2026-04-28T07:30:00Z"
    msg = (
        "Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: runc "
        "create failed: unable to start container process: error during container init: error running hook #0: "
        "error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
        "nvidia-container-cli: detection error: nvml error: unknown error: unknown"
    )
    c = _start_error(
        slug,
        now=now,
        project="vgpu-share",
        pid="73",
        name="vgpu-infer-test",
        node="master-02",
        img="registry.example.com/vgpu/infer-test:1.0",
        created="2026-04-28T07:05:00Z",
        reason="StartError",
        message=msg,
        exit_code=128,
        restarts=6,
        event_message=msg,
        product="NVIDIA-A10",
        tier2=False,
    )
    return c.document(
        description=(
            "On a Volcano vGPU node one GPU is unhealthy and every container start that gets it fails in the "
            "NVIDIA hook: 'nvidia-container-cli: detection error: nvml error: unknown error' (containerd's "
            "StartContainer error, quoted from the node journal in the report). No Tier 2: the kubelet's Failed "
            "event in Run:ai history carries it. NODE_FAILURE."
        ),
        source="https://github.com/Project-HAMi/volcano-vgpu-device-plugin/issues/123",
        now=now,
        ask={"text": "vgpu-infer-test is crash looping", "workload_name": "vgpu-infer-test", "intent": "current"},
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["nvml error: unknown error"]},
        tier2=False,
    )


# ============================================================================ data sources and mounts
def _pending_pod(
    slug: str,
    *,
    now: str,
    project: str,
    pid: str,
    name: str,
    node: str | None,
    img: str,
    created: str,
    k8s_phase: str,
    events: list[tuple[str, str, str, str, int]],
    tier2: bool,
    type_: str = "Training",
    pod: str | None = None,
    waiting_reason: str = "ContainerCreating",
    waiting_message: str | None = None,
    phase: str = "Pending",
    init: dict[str, Any] | None = None,
    gpu: float = 1,
) -> RunaiCase:
    """A pod stuck before its container runs. ``events`` are (reason, message, source, when, count)."""
    c = RunaiCase(slug, project=project, project_id=pid)
    pod = pod or f"{name}-0-0"
    e = c.workload(name, created=created, phase=phase, phase_at=created, image=img, type_=type_, gpu=gpu, memory="16Gi")
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase=k8s_phase,
        created=created,
        updated=events[-1][3] if events else created,
        containers=[(name, img, None)],
    )
    if tier2:
        c.tier2()
    c.phase(e, "Pending", created)
    if node:
        c.event(
            e,
            "Scheduled",
            f"Successfully assigned pod {c.ns}/{pod} to node {node} at node-pool default",
            at(created, seconds=2),
            obj=pod,
            type_="Normal",
            source="runai-scheduler",
        )
    for reason, message, source, when, count in events:
        c.event(e, reason, message, when, obj=pod, source=source, count=count, first=at(created, seconds=5))
    if tier2:
        st = [cstatus(name, img, waiting(waiting_reason, waiting_message), pulled=False)]
        kw: dict[str, Any] = {}
        if init:
            kw = init
        c.k8s_pod(
            pod,
            workload=name,
            node=node,
            phase="Pending",
            created=created,
            containers=[container(name, img, gpu, "16Gi")],
            statuses=st,
            **kw,
        )
        if node:
            c.node(node, now=now, gpus=8 if gpu else 0)
    return c


@case
def efs_csi_attach_timeout() -> dict[str, Any]:
    slug, now = "efs-csi-attach-timeout-external-attacher", "2023-06-20T15:30:00Z"
    msg = (
        'AttachVolume.Attach failed for volume "pvc-8a00b9f5-58e0-4e2d-a294-8a9c45e57a1a" : timed out waiting '
        "for external-attacher of efs.csi.aws.com CSI driver to attach volume "
        "fs-2a825351::fsap-0d75583a12ada3174"
    )
    created = "2023-06-20T15:09:00Z"
    c = _pending_pod(
        slug,
        now=now,
        project="analytics",
        pid="66",
        name="feature-backfill",
        node="ip-10-116-161-48.us-east-2.compute.internal",
        img="registry.example.com/analytics/backfill:7.1",
        created=created,
        k8s_phase="ContainerCreating",
        events=[("FailedAttachVolume", msg, "attachdetach-controller", "2023-06-20T15:26:13Z", 9)],
        tier2=True,
        gpu=0,
    )
    return c.document(
        description=(
            "Pods mounting EFS CSI volumes sit in ContainerCreating for a long time; the only warning is "
            "FailedAttachVolume (x9 over 19m) 'timed out waiting for external-attacher of efs.csi.aws.com CSI "
            "driver to attach volume'. The data volume, not scheduling and not the program: "
            "DATASOURCE_MOUNT_FAILED."
        ),
        source="https://github.com/kubernetes-sigs/aws-efs-csi-driver/issues/765",
        now=now,
        ask={
            "text": "feature-backfill is stuck in ContainerCreating for 20 minutes",
            "workload_name": "feature-backfill",
            "intent": "current",
        },
        expect={"outcome": "diagnosed", "category": "DATASOURCE_MOUNT_FAILED", "mentions": ["efs.csi.aws.com"]},
    )


@case
def seaweedfs_mount_deadline_exceeded() -> dict[str, Any]:
    slug, now = "seaweedfs-mount-setup-deadline-exceeded", "2020-09-03T12:20:00Z"
    created = "2020-09-03T12:05:00Z"
    events = [
        (
            "FailedMount",
            'MountVolume.SetUp failed for volume "pvc-13e343e1-9eee-4c15-a3d0-75ee751145ce" : rpc error: '
            "code = DeadlineExceeded desc = context deadline exceeded",
            "kubelet",
            "2020-09-03T12:09:12Z",
            3,
        ),
        (
            "FailedMount",
            "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[data "
            "default-token-6wq2x]: timed out waiting for the condition",
            "kubelet",
            "2020-09-03T12:16:20Z",
            2,
        ),
    ]
    c = _pending_pod(
        slug,
        now=now,
        project="media",
        pid="29",
        name="thumbnailer",
        node="worker-3",
        img="registry.example.com/media/thumbnailer:2.0",
        created=created,
        k8s_phase="ContainerCreating",
        events=events,
        tier2=True,
        type_="Inference",
        pod="thumbnailer-6d9f7c5b8-x2vqk",
        gpu=0,
    )
    return c.document(
        description=(
            "A SeaweedFS CSI volume (RWO and RWX alike) fails to mount for minutes: 'MountVolume.SetUp failed ... "
            "rpc error: code = DeadlineExceeded desc = context deadline exceeded' then 'Unable to attach or mount "
            "volumes ... timed out waiting for the condition' (the report redacts the volume name; 'data' here). "
            "The gRPC 'DeadlineExceeded' is the CSI call's timeout, not a Job's activeDeadlineSeconds: "
            "DATASOURCE_MOUNT_FAILED, never SCHEDULING_POLICY_TERMINATED."
        ),
        source="https://github.com/seaweedfs/seaweedfs-csi-driver/issues/3",
        now=now,
        ask={"text": "thumbnailer won't start, stuck mounting?", "workload_name": "thumbnailer", "intent": "current"},
        expect={
            "outcome": "diagnosed",
            "category": "DATASOURCE_MOUNT_FAILED",
            "mentions": ["MountVolume.SetUp failed"],
        },
    )


@case
def configmap_env_not_found_ccce() -> dict[str, Any]:
    slug, now = "ccce-configmap-not-found-autotune", "2021-01-04T11:40:00Z"
    created = "2021-01-04T11:02:00Z"
    c = _pending_pod(
        slug,
        now=now,
        project="monitoring",
        pid="19",
        name="autotune",
        node="minikube",
        img="kruize/autotune:0.0.1",
        created=created,
        k8s_phase="CreateContainerConfigError",
        events=[("Failed", 'Error: configmap "autotune-config-key" not found', "kubelet", "2021-01-04T11:38:00Z", 12)],
        tier2=True,
        type_="Inference",
        pod="autotune-655d8878cc-zz78v",
        waiting_reason="CreateContainerConfigError",
        waiting_message='configmap "autotune-config-key" not found',
        gpu=0,
    )
    return c.document(
        description=(
            "The autotune operator's pod is stuck in CreateContainerConfigError: its env references a ConfigMap "
            "that was never created ('Error: configmap \"autotune-config-key\" not found', x12 over 36m). No "
            "container ran. House rule: a missing ConfigMap is DATASOURCE_MOUNT_FAILED."
        ),
        source="https://github.com/kruize/autotune/issues/35",
        now=now,
        ask={
            "text": "autotune deployment failed, CreateContainerConfigError",
            "workload_name": "autotune",
            "intent": "current",
        },
        expect={"outcome": "diagnosed", "category": "DATASOURCE_MOUNT_FAILED", "mentions": ["autotune-config-key"]},
    )


@case
def init_sidecar_configmap_missing_job_failed() -> dict[str, Any]:
    slug, now = "init-ccce-configmap-missing-job-failed", "2026-07-08T16:30:00Z"
    c = RunaiCase(slug, project="db-bench", project_id="91")
    name, pod = "cassandra-stress", "cassandra-stress-0-0"
    img = "ghcr.io/rustyrazorblade/easy-db-lab-stress:5.0"
    sidecar = "ghcr.io/rustyrazorblade/otel-collector:0.98"
    created = "2026-07-08T15:50:00Z"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at="2026-07-08T16:12:06Z",
        image=img,
        gpu=0,
        memory="8Gi",
        command="cassandra-stress write n=10000000",
    )
    c.t1pod(
        e,
        pod,
        node="db-node-2",
        k8s_phase="Init:CreateContainerConfigError",
        created=created,
        updated="2026-07-08T16:12:00Z",
        containers=[(name, img, None)],
        gpu=0,
    )
    c.tier2()
    started(c, e, pod, "db-node-2", created, None)
    c.event(
        e,
        "Failed",
        'Error: configmap "cluster-config" not found',
        "2026-07-08T16:11:40Z",
        obj=pod,
        count=91,
        first=at(created, seconds=6),
    )
    c.event(
        e,
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
        "2026-07-08T16:12:04Z",
        obj=name,
        kind="Job",
        source="job-controller",
    )
    c.phase(e, "Failed", "2026-07-08T16:12:06Z")
    c.k8s_pod(
        pod,
        workload=name,
        node="db-node-2",
        phase="Pending",
        created=created,
        containers=[container(name, img, 0, "8Gi")],
        init_containers=[container("otel-sidecar", sidecar, 0, "256Mi", restartPolicy="Always")],
        init_statuses=[
            cstatus(
                "otel-sidecar",
                sidecar,
                waiting("CreateContainerConfigError", 'configmap "cluster-config" not found'),
                pulled=False,
            )
        ],
        statuses=[cstatus(name, img, waiting("PodInitializing"), pulled=False)],
    )
    c.node("db-node-2", now=now, gpus=0)
    return c.document(
        description=(
            "A stress Job's otel-sidecar init container reads CLUSTER_NAME from ConfigMap 'cluster-config' that "
            'nothing created: the pod shows Init:CreateContainerConfigError (\'Error: configmap "cluster-config" '
            "not found') and the Job is finally marked Failed with BackoffLimitExceeded. No init container ever "
            "ran, so not INIT_FAILED; BackoffLimitExceeded is the policy's verdict: DATASOURCE_MOUNT_FAILED."
        ),
        source="https://github.com/rustyrazorblade/easy-db-lab/issues/733",
        now=now,
        ask={"text": "why did cassandra-stress fail? the pod never ran", "workload_name": name, "intent": "terminal"},
        expect={"outcome": "diagnosed", "category": "DATASOURCE_MOUNT_FAILED", "mentions": ["cluster-config"]},
    )


@case
def configmap_volume_failedmount() -> dict[str, Any]:
    slug, now = "configmap-volume-not-found-failedmount", "2016-05-03T11:10:00Z"
    created = "2016-05-03T10:38:00Z"
    pod = "nginx-ingress-controller-1626740531-88561"
    events = [
        (
            "FailedMount",
            f'Unable to mount volumes for pod "{pod}_ml-serving(d125e230-1151-11e6-a2d1-0adbaa6061ff)": '
            'configmaps "nginx-template" not found',
            "kubelet",
            "2016-05-03T11:06:10Z",
            22,
        ),
        (
            "FailedSync",
            'Error syncing pod, skipping: configmaps "nginx-template" not found',
            "kubelet",
            "2016-05-03T11:06:10Z",
            22,
        ),
    ]
    c = _pending_pod(
        slug,
        now=now,
        project="ml-serving",
        pid="8",
        name="nginx-ingress-controller",
        node="ip-10-115-0-133.eu-west-1.compute.internal",
        img="gcr.io/google_containers/nginx-ingress-controller:0.8.2",
        created=created,
        k8s_phase="ContainerCreating",
        events=events,
        tier2=False,
        type_="Inference",
        pod=pod,
        gpu=0,
    )
    return c.document(
        description=(
            "An nginx ingress controller pod mounts ConfigMap 'nginx-template' as a volume; the kubelet keeps "
            "failing 'Unable to mount volumes ... configmaps \"nginx-template\" not found' (the reporter's map "
            "exists, but not in the pod's namespace). The pod never starts: DATASOURCE_MOUNT_FAILED. Tier 1 "
            "only."
        ),
        source="https://github.com/kubernetes/kubernetes/issues/25096",
        now=now,
        ask={
            "text": "nginx-ingress-controller is stuck, but the configmap exists!",
            "workload_name": "nginx-ingress-controller",
            "intent": "current",
        },
        expect={"outcome": "diagnosed", "category": "DATASOURCE_MOUNT_FAILED", "mentions": ["nginx-template"]},
        tier2=False,
    )


@case
def secret_key_not_found_ccce() -> dict[str, Any]:
    slug, now = "ccce-secret-key-not-found-rollout", "2023-04-23T14:10:00Z"
    created = "2023-04-23T14:08:58Z"
    secret = "ml-team/aegis-secret-aegis-workload-demo"
    c = _pending_pod(
        slug,
        now=now,
        project="ml-team",
        pid="212",
        name="aegis-workload-demo",
        node="kind-worker",
        img="localhost:5000/aegis-workload-demo-using-init-container:0.15.6",
        created=created,
        k8s_phase="CreateContainerConfigError",
        events=[
            (
                "Pulled",
                'Container image "localhost:5000/aegis-workload-demo-using-init-container:0.15.6" already '
                "present on machine",
                "kubelet",
                "2023-04-23T14:09:56Z",
                5,
            ),
            ("Failed", f"Error: couldn't find key VALUE in Secret {secret}", "kubelet", "2023-04-23T14:09:56Z", 5),
        ],
        tier2=True,
        type_="Inference",
        pod="aegis-workload-demo-76f5f7dc46-vfldl",
        waiting_reason="CreateContainerConfigError",
        waiting_message=f"couldn't find key VALUE in Secret {secret}",
        gpu=0,
    )
    return c.document(
        description=(
            "A smoke test's new replica is stuck in CreateContainerConfigError while the previous one runs: the "
            "Secret exists but lacks key VALUE ('Error: couldn't find key VALUE in Secret ...'; the report's "
            "namespace 'default' is the project namespace here). A missing Secret key is DATASOURCE_MOUNT_FAILED."
        ),
        source="https://github.com/shieldworks/aegis/issues/293",
        now=now,
        ask={
            "text": "aegis-workload-demo shows CreateContainerConfigError",
            "workload_name": "aegis-workload-demo",
            "intent": "current",
        },
        expect={"outcome": "diagnosed", "category": "DATASOURCE_MOUNT_FAILED", "mentions": ["couldn't find key VALUE"]},
    )


@case
def many_secret_volumes_not_found() -> dict[str, Any]:
    slug, now = "five-secret-volumes-not-found", "2023-02-19T13:00:00Z"
    created = "2023-02-19T12:12:00Z"
    pairs = [
        ("ord-tls-rootcert", "ord-tls-rootcert"),
        ("id-key", "hlf-msp-key-user"),
        ("cacert", "hlf-cacert"),
        ("admin-key", "hlf-msp-key-admin"),
        ("tls-client", "hlf-tls-user"),
    ]
    events = [
        (
            "FailedMount",
            f'MountVolume.SetUp failed for volume "{vol}" : secret "{sec}" not found',
            "kubelet",
            "2023-02-19T12:12:40Z",
            2,
        )
        for vol, sec in pairs
    ]
    c = _pending_pod(
        slug,
        now=now,
        project="hlf-dev",
        pid="140",
        name="hlf-hlf-k8s-toolbox",
        node="k8s5",
        img="substra/hlf-k8s:0.2.3",
        created=created,
        k8s_phase="ContainerCreating",
        events=events,
        tier2=True,
        type_="Inference",
        pod="hlf-hlf-k8s-toolbox-775bd96b6f-xph7m",
        gpu=0,
    )
    return c.document(
        description=(
            "A Hyperledger Fabric toolbox pod on OpenStack sits in ContainerCreating with five FailedMount "
            "events, one per missing Secret (ord-tls-rootcert, hlf-msp-key-user, hlf-cacert, hlf-msp-key-admin, "
            "hlf-tls-user). The user suspects the Cinder storage class; the events say secrets. "
            "DATASOURCE_MOUNT_FAILED, naming every missing object."
        ),
        source="https://github.com/Substra/hlf-k8s/issues/150",
        now=now,
        ask={
            "text": "hlf-hlf-k8s-toolbox is stuck in ContainerCreating, is it my storage class?",
            "workload_name": "hlf-hlf-k8s-toolbox",
            "intent": "current",
        },
        expect={"outcome": "diagnosed", "category": "DATASOURCE_MOUNT_FAILED", "mentions": [sec for _, sec in pairs]},
    )


@case
def pvc_not_found_jenkins() -> dict[str, Any]:
    slug, now = "scheduler-pvc-not-found-existing-claim", "2020-01-07T10:30:00Z"
    created = "2020-01-07T09:50:00Z"
    c = _pending_pod(
        slug,
        now=now,
        project="ci",
        pid="5",
        name="jenkins",
        node=None,
        img="jenkins/jenkins:lts",
        created=created,
        k8s_phase="Pending",
        events=[
            (
                "FailedScheduling",
                'persistentvolumeclaim "pvc-hostpath" not found',
                "default-scheduler",
                "2020-01-07T10:28:00Z",
                31,
            )
        ],
        tier2=False,
        type_="Workspace",
        gpu=0,
    )
    return c.document(
        description=(
            "A Jenkins chart installed with persistence.existingClaim=pvc-hostpath stays Pending; the scheduler "
            "says 'persistentvolumeclaim \"pvc-hostpath\" not found' although the user created a PV and PVC (in "
            "another namespace). A scheduler message naming a missing PVC is a data-source failure, not a "
            "scheduling-only Pending: DATASOURCE_MOUNT_FAILED. Tier 1 only."
        ),
        source="https://github.com/helm/charts/issues/19917",
        now=now,
        ask={
            "text": "jenkins stays pending even though the PVC exists",
            "workload_name": "jenkins",
            "intent": "current",
        },
        expect={"outcome": "diagnosed", "category": "DATASOURCE_MOUNT_FAILED", "mentions": ["pvc-hostpath"]},
        tier2=False,
    )


@case
def pvc_bound_to_missing_pv() -> dict[str, Any]:
    slug, now = "scheduler-pvc-bound-to-nonexistent-pv", "2024-02-11T18:20:00Z"
    created = "2024-02-11T18:08:00Z"
    msg = (
        '0/4 nodes are available: persistentvolumeclaim "storage-mariadb-0" bound to non-existent '
        'persistentvolume "pvc-2395f2db-c079-4440-a4b9-2dafaeb79452". preemption: 0/4 nodes are available: 4 '
        "Preemption is not helpful for scheduling."
    )
    c = _pending_pod(
        slug,
        now=now,
        project="db",
        pid="33",
        name="mariadb",
        node=None,
        img="mariadb:11.2.2",
        created=created,
        k8s_phase="Pending",
        events=[
            ("FailedScheduling", msg, "default-scheduler", "2024-02-11T18:14:02Z", 1),
            ("FailedScheduling", msg, "default-scheduler", "2024-02-11T18:19:26Z", 1),
        ],
        tier2=False,
        type_="Inference",
        pod="mariadb-0",
        gpu=0,
    )
    return c.document(
        description=(
            "A MariaDB StatefulSet pod stays Pending: its claim 'storage-mariadb-0' is bound to a PersistentVolume "
            "that no longer exists. The scheduler's newest message names the missing volume (and the usual "
            "'preemption: ... not helpful' tail, which is not a preemption). The claim's volume is missing: read "
            "as FORMAT.md's missing-PVC rule, DATASOURCE_MOUNT_FAILED. Tier 1 only."
        ),
        source="https://github.com/mariadb-operator/mariadb-operator/issues/374",
        now=now,
        ask={"text": "mariadb is pending forever", "workload_name": "mariadb", "intent": "current"},
        expect={"outcome": "diagnosed", "category": "DATASOURCE_MOUNT_FAILED", "mentions": ["storage-mariadb-0"]},
        tier2=False,
    )


# ============================================================================ eviction, OOM, 137
@case
def evicted_ephemeral_request_zero() -> dict[str, Any]:
    slug, now = "evicted-ephemeral-storage-request-zero", "2020-08-18T09:00:00Z"
    c = RunaiCase(slug, project="ebaogi", project_id="71")
    name, pod, node = "ebaogi-report-app", "ebaogi-report-app-0-0", "xen15-142"
    img = "harbor.example.com/ebaogi/report-app:2020.07"
    created, run_at, evict_at = "2020-07-09T02:20:16Z", "2020-07-09T02:20:40Z", "2020-08-18T07:41:10Z"
    msg = (
        "The node was low on resource: ephemeral-storage. Container ebaogi-report-app was using 108488Ki, which "
        "exceeds its request of 0. "
    )
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(evict_at, seconds=5),
        image=img,
        gpu=0,
        memory="2Gi",
        command="java -jar report-app.jar",
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase="Evicted",
        created=created,
        updated=evict_at,
        completed=evict_at,
        containers=[(name, img, run_at)],
        gpu=0,
    )
    c.tier2()
    started(c, e, pod, node, created, run_at)
    c.event(e, "Evicted", msg, evict_at, obj=pod)
    c.event(e, "Killing", f"Stopping container {name}", at(evict_at, seconds=1), obj=pod, type_="Normal")
    c.phase(e, "Failed", at(evict_at, seconds=5), msg)
    c.k8s_pod(
        pod,
        workload=name,
        node=node,
        phase="Failed",
        created=created,
        reason="Evicted",
        message=msg,
        containers=[container(name, img, 0, "2Gi")],
        statuses=[cstatus(name, img, terminated(137, "Error", run_at, at(evict_at, seconds=3), key=slug))],
        qos="Burstable",
    )
    c.node(
        node,
        now=now,
        gpus=0,
        kubelet="v1.14.3",
        runtime="docker://18.9.6",
        kernel="3.10.0-1062.el7.x86_64",
        os_image="CentOS Linux 7 (Core)",
    )
    return c.document(
        description=(
            "Pods without an ephemeral-storage request are evicted when the node runs low on disk: 'The node "
            "was low on resource: ephemeral-storage. Container ebaogi-report-app was using 108488Ki, which "
            "exceeds its request of 0.' (the reporter says the disk looked sufficient). The container's exit 137 "
            "is explained by the eviction. A kubelet eviction for node pressure: NODE_FAILURE."
        ),
        source="https://github.com/kubernetes/kubernetes/issues/91600",
        now=now,
        ask={"text": "why was ebaogi-report-app killed? disk is not full", "workload_name": name, "intent": "terminal"},
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["ephemeral-storage"]},
    )


@case
def oomkilled_operator_manager() -> dict[str, Any]:
    slug, now = "oomkilled-operator-controller-manager", "2019-10-01T08:30:00Z"
    c = RunaiCase(slug, project="platform", project_id="12")
    name, pod, node = "azure-databricks-operator", "azure-databricks-operator-6f7d8c9b5-p8xkq", "aks-nodepool1-0"
    img = "mcr.microsoft.com/k8s/azure-databricks/operator:v0.1"
    created = "2019-10-01T07:10:00Z"
    e = c.workload(
        name,
        created=created,
        phase="Running",
        phase_at=at(created, seconds=30),
        image=img,
        type_="Inference",
        gpu=0,
        memory="30Mi",
        running_pods=1,
        command="/manager",
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase="CrashLoopBackOff",
        created=created,
        updated="2019-10-01T08:22:41Z",
        containers=[("manager", img, "2019-10-01T08:22:10Z")],
        gpu=0,
    )
    c.tier2()
    started(c, e, pod, node, created, at(created, seconds=30))
    c.event(
        e,
        "BackOff",
        "Back-off restarting failed container",
        "2019-10-01T08:22:41Z",
        obj=pod,
        count=14,
        first="2019-10-01T07:31:02Z",
    )
    c.k8s_pod(
        pod,
        workload=name,
        node=node,
        phase="Running",
        created=created,
        containers=[container("manager", img, 0, "30Mi")],
        statuses=[
            cstatus(
                "manager",
                img,
                waiting("CrashLoopBackOff", f"back-off 5m0s restarting failed container=manager pod={pod}_{c.ns}"),
                last=terminated(137, "OOMKilled", "2019-10-01T08:22:10Z", "2019-10-01T08:22:39Z", key=slug),
                restarts=9,
            )
        ],
        owner_kind="InferenceWorkload",
        restart_policy="Always",
    )
    c.node(
        node,
        now=now,
        gpus=0,
        kubelet="v1.14.6",
        runtime="docker://3.0.6",
        kernel="4.15.0-1059-azure",
        os_image="Ubuntu 16.04.6 LTS",
    )
    c.log(
        pod,
        "manager",
        '{"level":"info","ts":1569915750.1,"logger":"controller-runtime.controller","msg":"Starting '
        'workers","controller":"djob","worker count":1}\n',
        previous=True,
    )
    return c.document(
        description=(
            "The operator's controller-manager restarts in a loop: Last State Terminated, Reason OOMKilled, Exit "
            "Code 137, against the scaffold's small memory limit (30Mi here; the report only says the limit must "
            "be bumped). The kernel killed it for its own limit: OOM_KILLED."
        ),
        source="https://github.com/Azure/azure-databricks-operator/issues/62",
        now=now,
        ask={"text": "azure-databricks-operator keeps crashing, why?", "workload_name": name, "intent": "current"},
        expect={"outcome": "diagnosed", "category": "OOM_KILLED", "mentions": ["OOMKilled", "137"]},
    )


@case
def exit137_error_no_oomkilled() -> dict[str, Any]:
    slug, now = "exit-137-reason-error-no-oomkilled-minikube", "2019-03-27T02:10:00Z"
    started_at, finished = "2019-03-27T00:53:04Z", "2019-03-27T01:32:11Z"
    c, _ = _single_failed(
        slug,
        now=now,
        project="fontbakery",
        pid="17",
        name="diffenator-volkorn",
        node="minikube",
        img="gcr.io/fontbakery/worker:py3.6",
        created="2019-03-27T00:52:40Z",
        run_at=started_at,
        end=finished,
        exit_code=137,
        reason="Error",
        log="INFO:diffenator:comparing Vollkorn-Black.ttf against Vollkorn-Black.ttf (glyphs, kerning, marks)\n"
        "INFO:diffenator:rendering 1201 glyph images\n",
        gpu=0,
        memory="2Gi",
        command="python -m worker.diffenator",
        product="",
        node_kw={
            "gpus": 0,
            "kubelet": "v1.13.4",
            "runtime": "docker://18.6.2",
            "kernel": "4.15.0",
            "os_image": "Buildroot 2018.05",
        },
    )
    return c.document(
        description=(
            "A diffenator worker comparing a whole font family is terminated unfinished on minikube: Last State "
            "Terminated, Reason Error, Exit Code 137 after 39 minutes. The reporter guesses OOM (from another "
            "issue), but no OOMKilled reason, event, node pressure or metric says so. House rule: 137 without "
            "OOMKilled and nothing naming the sender stays UNKNOWN, quoting 137."
        ),
        source="https://github.com/googlefonts/fontbakery-dashboard/issues/100",
        now=now,
        ask={
            "text": "diffenator-volkorn got killed with 137, out of memory?",
            "workload_name": "diffenator-volkorn",
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "UNKNOWN", "mentions": ["137"]},
    )


# ============================================================================ liveness, start, exec
@case
def liveness_kill_antrea_ovs() -> dict[str, Any]:
    slug, now = "liveness-kill-exec-probe-antrea-ovs", "2020-06-11T18:10:00Z"
    c = RunaiCase(slug, project="netops", project_id="27")
    name, pod, node = "antrea-agent", "antrea-agent-7xq2p", "os-node-12"
    agent_img, ovs_img = "antrea/antrea-ubuntu:v0.7.1", "antrea/antrea-ubuntu:v0.7.1"
    created = "2020-06-11T09:00:00Z"
    e = c.workload(
        name,
        created=created,
        phase="Running",
        phase_at=at(created, seconds=40),
        image=agent_img,
        type_="Inference",
        gpu=0,
        memory="1Gi",
        running_pods=1,
        command="start_ovs",
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase="CrashLoopBackOff",
        created=created,
        updated="2020-06-11T17:53:10Z",
        containers=[
            ("antrea-agent", agent_img, at(created, seconds=30)),
            ("antrea-ovs", ovs_img, "2020-06-11T17:48:20Z"),
        ],
        gpu=0,
    )
    c.tier2()
    started(c, e, pod, node, created, at(created, seconds=40))
    c.event(
        e,
        "Unhealthy",
        "Liveness probe failed: ",
        "2020-06-11T17:52:33Z",
        obj=pod,
        count=21,
        first="2020-06-11T11:20:03Z",
    )
    c.event(
        e,
        "Killing",
        "Container antrea-ovs failed liveness probe, will be restarted",
        "2020-06-11T17:52:33Z",
        obj=pod,
        type_="Normal",
        count=7,
        first="2020-06-11T11:20:33Z",
    )
    c.event(
        e,
        "BackOff",
        "Back-off restarting failed container",
        "2020-06-11T17:53:10Z",
        obj=pod,
        count=3,
        first="2020-06-11T14:02:10Z",
    )
    probe = {
        "exec": {"command": ["/bin/sh", "-c", "timeout 5 container_liveness_probe ovs"]},
        "initialDelaySeconds": 5,
        "timeoutSeconds": 5,
        "periodSeconds": 10,
        "failureThreshold": 5,
    }
    c.k8s_pod(
        pod,
        workload=name,
        node=node,
        phase="Running",
        created=created,
        containers=[
            container("antrea-agent", agent_img, 0, "512Mi"),
            container("antrea-ovs", ovs_img, 0, "512Mi", livenessProbe=probe),
        ],
        statuses=[
            cstatus("antrea-agent", agent_img, running(at(created, seconds=30)), ready=True),
            cstatus(
                "antrea-ovs",
                ovs_img,
                waiting("CrashLoopBackOff", f"back-off 1m20s restarting failed container=antrea-ovs pod={pod}_{c.ns}"),
                last=terminated(137, "Error", "2020-06-11T17:48:20Z", "2020-06-11T17:52:34Z", key=slug),
                restarts=7,
            ),
        ],
        owner_kind="InferenceWorkload",
        restart_policy="Always",
        qos="Burstable",
    )
    c.node(node, now=now, gpus=0, kubelet="v1.17.6", runtime="docker://19.3.8")
    c.log(
        pod,
        "antrea-ovs",
        "[2020-06-11T17:48:21Z INFO start_ovs]: Starting ovsdb-server\n"
        "[2020-06-11T17:48:22Z INFO start_ovs]: Started ovsdb-server\n"
        "[2020-06-11T17:48:22Z INFO start_ovs]: Starting ovs-vswitchd\n",
        previous=True,
    )
    return c.document(
        description=(
            "The antrea-ovs container restarts frequently: 'Liveness probe failed:' (an exec probe with empty "
            "output) and 'Container antrea-ovs failed liveness probe, will be restarted', lastState Error/137. "
            "The kubelet killed it for its probe (the maintainers suspect an overloaded node making the 5 s probe "
            "time out). House rule: a liveness kill is CRASH_APP_ERROR, not OOM, whatever the 137."
        ),
        source="https://github.com/antrea-io/antrea/issues/833",
        now=now,
        ask={"text": "antrea-agent keeps restarting antrea-ovs, why?", "workload_name": name, "intent": "current"},
        expect={"outcome": "diagnosed", "category": "CRASH_APP_ERROR", "mentions": ["liveness"]},
    )


def _crashloop(
    slug: str,
    *,
    now: str,
    project: str,
    pid: str,
    name: str,
    pod: str,
    node: str,
    img: str,
    created: str,
    ctr: str,
    exit_code: int,
    log: str,
    restarts: int,
    arch: str = "amd64",
    type_: str = "Training",
    tier2: bool = True,
    sidecar: tuple[str, str] | None = None,
    node_kw: dict[str, Any] | None = None,
) -> RunaiCase:
    c = RunaiCase(slug, project=project, project_id=pid)
    e = c.workload(
        name,
        created=created,
        phase="Running",
        phase_at=at(created, seconds=25),
        image=img,
        type_=type_,
        gpu=0,
        memory="1Gi",
        running_pods=1,
    )
    conts = [(ctr, img, at(created, minutes=9))]
    if sidecar:
        conts.insert(0, (sidecar[0], sidecar[1], at(created, seconds=20)))
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase="CrashLoopBackOff",
        created=created,
        updated=at(created, minutes=9),
        containers=conts,
        gpu=0,
    )
    if tier2:
        c.tier2()
    started(c, e, pod, node, created, at(created, seconds=25))
    c.event(
        e,
        "BackOff",
        "Back-off restarting failed container",
        at(created, minutes=9, seconds=5),
        obj=pod,
        count=restarts * 4,
        first=at(created, minutes=1),
    )
    if tier2:
        statuses = [
            cstatus(
                ctr,
                img,
                waiting("CrashLoopBackOff", f"back-off 5m0s restarting failed container={ctr} pod={pod}_{c.ns}"),
                last=terminated(exit_code, "Error", at(created, minutes=9), at(created, minutes=9), key=slug),
                restarts=restarts,
            )
        ]
        containers = [container(ctr, img, 0, "1Gi")]
        if sidecar:
            statuses.insert(0, cstatus(sidecar[0], sidecar[1], running(at(created, seconds=20)), ready=True))
            containers.insert(0, container(sidecar[0], sidecar[1], 0, "4Gi"))
        c.k8s_pod(
            pod,
            workload=name,
            node=node,
            phase="Running",
            created=created,
            containers=containers,
            statuses=statuses,
            restart_policy="Always",
            qos="Burstable",
        )
        c.node(node, now=now, gpus=0, arch=arch, **(node_kw or {}))
        c.log(pod, ctr, log, previous=True)
    return c


@case
def exec_format_arm_sidecar() -> dict[str, Any]:
    slug, now = "exec-format-error-aarch64-sidecar-on-amd64", "2022-08-09T13:00:00Z"
    c = _crashloop(
        slug,
        now=now,
        project="data-platform",
        pid="52",
        name="mongo",
        pod="mongo-0",
        node="worker-amd64-3",
        img="combor/k8s-mongo-labeler-sidecar:latest",
        created="2022-08-09T12:40:00Z",
        ctr="mongo-labeler",
        exit_code=1,
        log="standard_init_linux.go:228: exec user process caused: exec format error\n",
        restarts=8,
        type_="Inference",
        sidecar=("mongo", "mongo:5.0.10"),
    )
    return c.document(
        description=(
            "After upgrading the mongo-labeler sidecar image, the sidecar crash-loops with the single line "
            "'standard_init_linux.go:228: exec user process caused: exec format error'; the binary inside is "
            "'ELF 64-bit LSB executable, ARM aarch64' and the node is amd64, while the mongo container runs fine. "
            "House rule: exec format error is CRASH_APP_ERROR (image/arch mismatch), not an image pull failure."
        ),
        source="https://github.com/combor/k8s-mongo-labeler-sidecar/issues/14",
        now=now,
        ask={
            "text": "the mongo labeler sidecar keeps crashing after the upgrade",
            "workload_name": "mongo",
            "intent": "current",
        },
        expect={"outcome": "diagnosed", "category": "CRASH_APP_ERROR", "mentions": ["exec format error"]},
    )


@case
def exec_format_armv7_no_tier2() -> dict[str, Any]:
    slug, now = "crashloop-exec-format-armv7-no-tier2", "2021-02-09T20:30:00Z"
    c = _crashloop(
        slug,
        now=now,
        project="homelab",
        pid="3",
        name="flaskblog",
        pod="flaskblog-5d8f9c7b6-hk2tq",
        node="raspi0",
        img="magicaljellybeans/flaskblog:latest",
        created="2021-02-09T20:10:00Z",
        ctr="flaskblog",
        exit_code=1,
        log="standard_init_linux.go:219: exec user process caused: exec format error\n",
        restarts=6,
        arch="arm",
        type_="Inference",
        tier2=False,
    )
    return c.document(
        description=(
            "On a Raspberry Pi (armv7l) k3s node a deployment sits in CrashLoopBackOff; the container's only log "
            "line (in the report) is 'exec user process caused: exec format error'. Here there are no Tier 2 "
            "credentials: Run:ai shows CrashLoopBackOff and 'Back-off restarting failed container' and nothing "
            "else, so the cause cannot be seen. House rule: no Tier 2 and no cause in Tier 1 is UNKNOWN, quoting "
            "the symptom; never a guessed category."
        ),
        source="https://github.com/k3s-io/k3s/issues/2912",
        now=now,
        ask={"text": "flaskblog is in crashloopbackoff on my pi", "workload_name": "flaskblog", "intent": "current"},
        expect={"outcome": "diagnosed", "category": "UNKNOWN", "mentions": ["CrashLoopBackOff"]},
        tier2=False,
    )


@case
def job_command_not_found_containercannotrun() -> dict[str, Any]:
    slug, now = "job-command-exit-1-containercannotrun", "2018-06-03T10:10:00Z"
    c = RunaiCase(slug, project="batch", project_id="9")
    name, node, img = "test-job", "k8s-n1", "busybox"
    created = "2018-06-03T10:00:00Z"
    msg = (
        'OCI runtime create failed: container_linux.go:348: starting container process caused "exec: \\"exit '
        '1\\": executable file not found in $PATH": unknown'
    )
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at="2018-06-03T10:00:42Z",
        image=img,
        gpu=0,
        memory="64Mi",
        command="exit 1",
        backoff_limit=2,
    )
    c.tier2()
    c.phase(e, "Pending", created)
    suffixes = ["tqbvl", "g4dn1", "2h5vp", "2klzs"]
    for i, sfx in enumerate(suffixes):
        pod = f"test-job-{sfx}"
        t0 = at(created, seconds=2 + 9 * i)
        c.t1pod(
            e,
            pod,
            node=node,
            k8s_phase="ContainerCannotRun",
            created=t0,
            updated=at(t0, seconds=2),
            completed=at(t0, seconds=2),
            containers=[("pi", img, None)],
            gpu=0,
        )
        c.event(e, "Failed", "Error: " + msg, at(t0, seconds=2), obj=pod, source="kubelet")
        if i == len(suffixes) - 1:
            c.k8s_pod(
                pod,
                workload=name,
                node=node,
                phase="Failed",
                created=t0,
                containers=[container("pi", img, 0, "64Mi", command=["exit 1"])],
                statuses=[
                    cstatus(
                        "pi",
                        img,
                        terminated(
                            127, "ContainerCannotRun", "1970-01-01T00:00:00Z", at(t0, seconds=2), message=msg, key=slug
                        ),
                    )
                ],
            )
    c.event(
        e,
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
        "2018-06-03T10:00:40Z",
        obj=name,
        kind="Job",
        source="job-controller",
    )
    c.phase(e, "Failed", "2018-06-03T10:00:42Z")
    c.node(
        node,
        now=now,
        gpus=0,
        kubelet="v1.10.3",
        runtime="docker://17.3.2",
        kernel="3.10.0-862.el7.x86_64",
        os_image="CentOS Linux 7 (Core)",
    )
    return c.document(
        description=(
            "A Job with command [\"exit 1\"] (one word, so the runtime looks for a binary named 'exit 1') and "
            "backoffLimit 2: every pod ends ContainerCannotRun with 'executable file not found in $PATH' until "
            "the Job fails with BackoffLimitExceeded. The command is wrong: CRASH_APP_ERROR by house rule (a "
            "start error caused by the command), BackoffLimitExceeded being the policy's verdict."
        ),
        source="https://github.com/kubernetes/kubernetes/issues/54870",
        now=now,
        ask={"text": "why did test-job fail?", "workload_name": name, "intent": "terminal"},
        expect={
            "outcome": "diagnosed",
            "category": "CRASH_APP_ERROR",
            "mentions": ["executable file not found", "ContainerCannotRun"],
        },
    )


# ============================================================================ image pull, init
@case
def pull_429_docker_hub_digest() -> dict[str, Any]:
    slug, now = "pull-429-toomanyrequests-by-digest", "2022-08-16T09:05:00Z"
    digest = "sha256:8d0bff43db3ce5c528cb6f957520511d263d7cceee012696e4afdc9087919bb9"
    ref = f"index.docker.io/jaegertracing/all-in-one@{digest}"
    msg = (
        f'Failed to pull image "{ref}": rpc error: code = Unknown desc = failed to pull and unpack image '
        f'"docker.io/jaegertracing/all-in-one@{digest}": failed to copy: httpReadSeeker: failed open: unexpected '
        f"status code https://registry-1.docker.io/v2/jaegertracing/all-in-one/manifests/{digest}: 429 Too Many "
        "Requests - Server message: toomanyrequests: You have reached your pull rate limit. You may increase "
        "the limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit"
    )
    created = "2022-08-16T09:02:35Z"
    c = _pending_pod(
        slug,
        now=now,
        project="observability",
        pid="36",
        name="jaeger",
        node="k3s-microvm",
        img=ref,
        created=created,
        k8s_phase="ImagePullBackOff",
        events=[
            ("Pulling", f'Pulling image "{ref}"', "kubelet", "2022-08-16T09:04:10Z", 4),
            ("Failed", msg, "kubelet", "2022-08-16T09:04:10Z", 4),
            ("Failed", "Error: ErrImagePull", "kubelet", "2022-08-16T09:04:10Z", 4),
            ("BackOff", f'Back-off pulling image "{ref}"', "kubelet", "2022-08-16T09:04:40Z", 6),
        ],
        tier2=True,
        type_="Inference",
        pod="jaeger-23crtq628x848gfajbfhv6btj8",
        waiting_reason="ImagePullBackOff",
        waiting_message=f'Back-off pulling image "{ref}"',
        gpu=0,
    )
    return c.document(
        description=(
            "A test environment's jaeger pod never starts: the anonymous Docker Hub pull of an image pinned by "
            "digest gets '429 Too Many Requests - Server message: toomanyrequests: You have reached your pull "
            "rate limit'. The user only saw the test time out. External and transient, but the pod-level "
            "category is IMAGE_PULL_FAILED."
        ),
        source="https://github.com/namespacelabs/foundation/issues/846",
        now=now,
        ask={"text": "jaeger is stuck and the test times out", "workload_name": "jaeger", "intent": "current"},
        expect={"outcome": "diagnosed", "category": "IMAGE_PULL_FAILED", "mentions": ["toomanyrequests", "429"]},
    )


@case
def init_waiting_job_not_found() -> dict[str, Any]:
    slug, now = "init-crashloop-waits-for-job-not-found", "2023-12-04T10:20:00Z"
    c = RunaiCase(slug, project="qa-tools", project_id="46")
    name, pod, node = "release1-reportportal-uat", "release1-reportportal-uat-68c6d75c97-jq86q", "qa-node-1"
    img, init_img = "reportportal/service-authorization:5.10.0", "bitnami/kubectl:1.28"
    created = "2023-12-04T10:05:00Z"
    e = c.workload(
        name, created=created, phase="Pending", phase_at=created, image=img, type_="Inference", gpu=0, memory="2Gi"
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase="Init:CrashLoopBackOff",
        created=created,
        updated="2023-12-04T10:19:10Z",
        containers=[("uat", img, None)],
        gpu=0,
    )
    c.tier2()
    c.phase(e, "Pending", created)
    c.event(
        e,
        "Scheduled",
        f"Successfully assigned pod {c.ns}/{pod} to node {node} at node-pool default",
        at(created, seconds=2),
        obj=pod,
        type_="Normal",
        source="runai-scheduler",
    )
    c.event(
        e,
        "Started",
        "Started container migrations-waiting-init",
        "2023-12-04T10:16:30Z",
        obj=pod,
        type_="Normal",
        count=5,
        first=at(created, seconds=8),
    )
    c.event(
        e,
        "BackOff",
        f"Back-off restarting failed container migrations-waiting-init in pod {pod}_{c.ns}"
        f"(1f0b6f1e-8d4e-4a51-9c3b-2e7f4a9d6c10)",
        "2023-12-04T10:19:10Z",
        obj=pod,
        count=47,
        first=at(created, seconds=20),
    )
    c.k8s_pod(
        pod,
        workload=name,
        node=node,
        phase="Pending",
        created=created,
        containers=[container("uat", img, 0, "2Gi")],
        init_containers=[
            container(
                "migrations-waiting-init",
                init_img,
                0,
                "128Mi",
                args=["wait", "--for=condition=complete", "job/release1-migrations", "--timeout=300s"],
            )
        ],
        init_statuses=[
            cstatus(
                "migrations-waiting-init",
                init_img,
                waiting(
                    "CrashLoopBackOff",
                    f"back-off 5m0s restarting failed container=migrations-waiting-init pod={pod}_{c.ns}",
                ),
                last=terminated(1, "Error", "2023-12-04T10:16:30Z", "2023-12-04T10:16:31Z", key=slug),
                restarts=5,
            )
        ],
        statuses=[cstatus("uat", img, waiting("PodInitializing"), pulled=False)],
        restart_policy="Always",
        qos="Burstable",
    )
    c.node(node, now=now, gpus=0)
    c.log(
        pod,
        "migrations-waiting-init",
        'Error from server (NotFound): jobs.batch "release1-migrations" not found\n',
        previous=True,
    )
    return c.document(
        description=(
            "A Helm release's UAT pod is stuck in Init:CrashLoopBackOff: its init container migrations-waiting-init "
            "waits for job 'release1-migrations' but the chart named the job 'release1-reportportal-migrations', "
            "so it exits 1 with 'Error from server (NotFound): jobs.batch \"release1-migrations\" not found' "
            "(BackOff x47). The init container ran and failed: INIT_FAILED. A 'not found' Job is not a missing "
            "Secret/ConfigMap/PVC."
        ),
        source="https://github.com/reportportal/kubernetes/issues/335",
        now=now,
        ask={
            "text": "release1-reportportal-uat is stuck in Init:CrashLoopBackOff",
            "workload_name": name,
            "intent": "current",
        },
        expect={
            "outcome": "diagnosed",
            "category": "INIT_FAILED",
            "mentions": ["migrations-waiting-init", 'jobs.batch "release1-migrations" not found'],
        },
    )


# ============================================================================ node, deadline, preemption
@case
def node_notready_notebook_terminating() -> dict[str, Any]:
    slug, now = "node-notready-notebook-stuck-terminating", "2021-04-08T16:00:00Z"
    c = RunaiCase(slug, project="opf-jupyterhub", project_id="23")
    name, pod, node = "jupyterhub-nb-user7", "jupyterhub-nb-user7-0-0", "os-wrk-1"
    img = "quay.io/thoth-station/s2i-minimal-notebook:v0.0.7"
    created, lost = "2021-04-06T09:00:00Z", "2021-04-08T13:12:40Z"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at="2021-04-08T13:18:00Z",
        image=img,
        type_="Workspace",
        gpu=0,
        memory="2Gi",
        command="start-singleuser.sh",
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase="Terminating",
        created=created,
        updated="2021-04-08T13:18:00Z",
        containers=[("notebook", img, at(created, seconds=50))],
        gpu=0,
    )
    c.tier2()
    started(c, e, pod, node, created, at(created, seconds=50))
    c.event(e, "NodeNotReady", "Node is not ready", "2021-04-08T13:13:20Z", obj=pod, source="node-controller")
    c.event(
        e,
        "TaintManagerEviction",
        f"Marking for deletion Pod {c.ns}/{pod}",
        "2021-04-08T13:18:00Z",
        obj=pod,
        type_="Normal",
        source="taint-controller",
    )
    c.phase(e, "Failed", "2021-04-08T13:18:00Z")
    c.k8s_pod(
        pod,
        workload=name,
        node=node,
        phase="Running",
        created=created,
        containers=[container("notebook", img, 0, "2Gi")],
        statuses=[cstatus("notebook", img, running(at(created, seconds=50)), ready=False)],
        conditions=[
            {
                "type": "Ready",
                "status": "False",
                "reason": "NodeNotReady",
                "lastProbeTime": None,
                "lastTransitionTime": "2021-04-08T13:13:20Z",
            }
        ],
        owner_kind="InteractiveWorkload",
        restart_policy="Always",
        qos="Burstable",
    )
    unknown = {
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
        "lastHeartbeatTime": lost,
        "lastTransitionTime": "2021-04-08T13:13:20Z",
    }
    c.node(
        node,
        now=now,
        gpus=0,
        kubelet="v1.20.0+bafe72f",
        runtime="cri-o://1.20.1",
        conditions=[{"type": t, **unknown} for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")],
        taints=[
            {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": "2021-04-08T13:13:20Z"},
            {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "timeAdded": "2021-04-08T13:13:25Z"},
        ],
    )
    return c.document(
        description=(
            "JupyterHub notebook pods on worker os-wrk-1 are stuck Terminating after the node went NotReady "
            "('Kubelet stopped posting node status.', unreachable taints; the taint manager marked the pod for "
            "deletion but nobody on the node can finish it). The notebook's own container shows nothing wrong. "
            "Node lost: NODE_FAILURE. The report's user names are replaced."
        ),
        source="https://github.com/operate-first/operations/issues/245",
        now=now,
        ask={
            "text": "my notebook jupyterhub-nb-user7 is stuck terminating",
            "workload_name": name,
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["os-wrk-1"]},
    )


@case
def node_status_unknown_tier1() -> dict[str, Any]:
    slug, now = "node-stopped-posting-status-pods-deleted", "2017-05-30T09:40:00Z"
    c = RunaiCase(slug, project="ingest", project_id="14")
    name, pod, node = "event-ingest-batch", "event-ingest-batch-0-0", "k8s-agent-3f2a1b9c-2"
    img = "registry.example.com/ingest/batch:1.4"
    created, run_at = "2017-05-30T06:00:00Z", "2017-05-30T06:00:40Z"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at="2017-05-30T09:06:30Z",
        image=img,
        gpu=0,
        memory="4Gi",
        command="python ingest.py --day 2017-05-29",
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase="Unknown",
        created=created,
        updated="2017-05-30T09:06:30Z",
        containers=[(name, img, run_at)],
        gpu=0,
    )
    started(c, e, pod, node, created, run_at)
    c.event(e, "NodeNotReady", "Node is not ready", "2017-05-30T09:01:24Z", obj=pod, source="node-controller")
    c.event(
        e,
        "TaintManagerEviction",
        f"Marking for deletion Pod {c.ns}/{pod}",
        "2017-05-30T09:06:25Z",
        obj=pod,
        type_="Normal",
        source="taint-controller",
    )
    c.phase(e, "Failed", "2017-05-30T09:06:30Z")
    return c.document(
        description=(
            "On Azure the node controller keeps killing pods several times a day: the node's status turns "
            "NodeStatusUnknown ('Kubelet stopped posting node status.') and after the grace period the pods on "
            "it are deleted. Tier 1 only: history has the pod's NodeNotReady and TaintManagerEviction events (in "
            "today's wording) and the Failed phase. Node lost: NODE_FAILURE, naming the node."
        ),
        source="https://github.com/kubernetes/kubernetes/issues/43516",
        now=now,
        ask={
            "text": "event-ingest-batch died in the middle of the night, why?",
            "workload_name": name,
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": [node]},
        tier2=False,
    )


@case
def pod_active_deadline_exceeded() -> dict[str, Any]:
    slug, now = "pod-active-deadline-exceeded-137", "2021-05-19T12:30:00Z"
    c = RunaiCase(slug, project="armada-batch", project_id="38")
    name, pod, node = "montecarlo-sim-4411", "montecarlo-sim-4411-0-0", "batch-node-07"
    img = "registry.example.com/quant/montecarlo:3.3"
    created, run_at, end = "2021-05-19T10:00:00Z", "2021-05-19T10:00:20Z", "2021-05-19T12:00:21Z"
    msg = "Pod was active on the node longer than the specified deadline"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(end, seconds=3),
        image=img,
        gpu=0,
        memory="8Gi",
        command="python simulate.py --paths 5e9",
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase="DeadlineExceeded",
        created=created,
        updated=end,
        completed=end,
        containers=[(name, img, run_at)],
        gpu=0,
    )
    c.tier2()
    started(c, e, pod, node, created, run_at)
    c.event(e, "DeadlineExceeded", msg, at(end, seconds=-1), obj=pod, type_="Normal")
    c.event(e, "Killing", f"Stopping container {name}", at(end, seconds=-1), obj=pod, type_="Normal")
    c.phase(e, "Failed", at(end, seconds=3))
    c.k8s_pod(
        pod,
        workload=name,
        node=node,
        phase="Failed",
        created=created,
        reason="DeadlineExceeded",
        message=msg,
        containers=[container(name, img, 0, "8Gi")],
        statuses=[cstatus(name, img, terminated(137, "Error", run_at, end, key=slug))],
        active_deadline=7200,
    )
    c.node(node, now=now, gpus=0)
    c.log(pod, name, "paths done: 3.81e9 / 5e9\npaths done: 3.83e9 / 5e9\n")
    return c.document(
        description=(
            "A batch pod sets activeDeadlineSeconds 7200; when it runs longer the kubelet kills it and marks the "
            "pod Failed with reason DeadlineExceeded ('Pod was active on the node longer than the specified "
            "deadline'), which the report wants surfaced as the cause. The container's 137 is explained by that "
            "kill. House rule: DeadlineExceeded is SCHEDULING_POLICY_TERMINATED."
        ),
        source="https://github.com/armadaproject/armada/pull/574",
        now=now,
        ask={"text": "montecarlo-sim-4411 was killed with 137, why?", "workload_name": name, "intent": "terminal"},
        expect={"outcome": "diagnosed", "category": "SCHEDULING_POLICY_TERMINATED", "mentions": ["DeadlineExceeded"]},
    )


@case
def job_deadline_exceeded_143() -> dict[str, Any]:
    slug, now = "job-deadline-exceeded-pod-sigterm-143", "2025-02-18T09:30:00Z"
    c = RunaiCase(slug, project="ci-agents", project_id="64")
    name = "buildkite-01951a2c-7f3e-4b8a-9d61-2f0c8e5a4b17"
    pod, node = f"{name}-0-0", "ci-node-11"
    img = "buildkite/agent:3.89.0"
    created, run_at, end = "2025-02-18T08:00:00Z", "2025-02-18T08:00:12Z", "2025-02-18T09:00:04Z"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(end, seconds=2),
        image=img,
        gpu=0,
        memory="4Gi",
        command="buildkite-agent start --acquire-job",
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase="Error",
        created=created,
        updated=end,
        completed=end,
        containers=[("agent", img, run_at)],
        gpu=0,
    )
    c.tier2()
    started(c, e, pod, node, created, run_at)
    c.event(
        e,
        "SuccessfulDelete",
        f"Deleted pod: {pod}",
        at(end, seconds=-4),
        obj=name,
        kind="Job",
        type_="Normal",
        source="job-controller",
    )
    c.event(
        e,
        "DeadlineExceeded",
        "Job was active longer than specified deadline",
        at(end, seconds=-4),
        obj=name,
        kind="Job",
        source="job-controller",
    )
    c.event(e, "Killing", "Stopping container agent", at(end, seconds=-4), obj=pod, type_="Normal")
    c.phase(e, "Failed", at(end, seconds=2))
    c.k8s_pod(
        pod,
        workload=name,
        node=node,
        phase="Failed",
        created=created,
        containers=[container("agent", img, 0, "4Gi")],
        statuses=[cstatus("agent", img, terminated(143, "Error", run_at, end, key=slug))],
    )
    c.node(node, now=now, gpus=0)
    c.log(pod, "agent", "2025-02-18 08:59:59 INFO   Received signal terminated, stopping agent...\n")
    return c.document(
        description=(
            "A CI agent Job's activeDeadlineSeconds elapsed: the Job controller fails it ('Job was active longer "
            "than specified deadline', reason DeadlineExceeded) and terminates its pod, whose container ends with "
            "exit 143 after 'Received signal terminated'. The 143 is explained by the deadline: "
            "SCHEDULING_POLICY_TERMINATED, not UNKNOWN and not a crash."
        ),
        source="https://github.com/buildkite/agent-stack-k8s/pull/517",
        now=now,
        ask={"text": "why did my buildkite job get SIGTERM?", "workload_name": name, "intent": "terminal"},
        expect={"outcome": "diagnosed", "category": "SCHEDULING_POLICY_TERMINATED", "mentions": ["DeadlineExceeded"]},
    )


@case
def preempted_disruption_target() -> dict[str, Any]:
    slug, now = "preempted-disruption-target-preemption-by-scheduler", "2026-03-12T11:00:00Z"
    c = RunaiCase(slug, project="reclaim", project_id="81")
    name, pod, node = "low-prio-trainjob", "low-prio-trainjob-0-0", "gpu-node-21"
    img = "registry.example.com/reclaim/trainer:1.0"
    created, run_at, end = "2026-03-12T09:00:00Z", "2026-03-12T09:01:00Z", "2026-03-12T10:20:33Z"
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(end, seconds=3),
        image=img,
        gpu=8,
        memory="256Gi",
        command="torchrun train.py",
    )
    c.t1pod(
        e,
        pod,
        node=node,
        k8s_phase="Error",
        created=created,
        updated=end,
        completed=end,
        containers=[(name, img, run_at)],
    )
    c.tier2()
    started(c, e, pod, node, created, run_at)
    c.event(e, "Killing", f"Stopping container {name}", at(end, seconds=-30), obj=pod, type_="Normal")
    c.phase(e, "Failed", at(end, seconds=3))
    conds = [
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "volcano: preempting to accommodate a higher priority pod",
            "lastProbeTime": None,
            "lastTransitionTime": at(end, seconds=-30),
        },
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": created},
        {"type": "Ready", "status": "False", "reason": "PodFailed", "lastProbeTime": None, "lastTransitionTime": end},
    ]
    c.k8s_pod(
        pod,
        workload=name,
        node=node,
        phase="Failed",
        created=created,
        conditions=conds,
        containers=[container(name, img, 8, "256Gi")],
        statuses=[cstatus(name, img, terminated(143, "Error", run_at, end, key=slug))],
    )
    c.node(node, now=now, gpus=8)
    c.log(pod, name, "step 5200 loss 0.97\nreceived SIGTERM, exiting\n")
    return c.document(
        description=(
            "Gang-scheduled low-priority training is reclaimed for a higher-priority job: the pod carries condition "
            "DisruptionTarget=True, reason PreemptionByScheduler (the signal the PR detects), and no Preempted "
            "event reached the workload's history; its container ends with 143 and the workload shows Failed. "
            "The pod condition alone names the preemption: route_preempted, quoting its reason."
        ),
        source="https://github.com/kubeflow/trainer/pull/3316",
        now=now,
        ask={"text": "why did low-prio-trainjob fail?", "workload_name": name, "intent": "terminal"},
        expect={"outcome": "route_preempted", "mentions": ["PreemptionByScheduler"]},
    )


# ============================================================================ OSMO
def _osmo(
    slug: str,
    *,
    wf: str,
    now: str,
    pool: str,
    backend: str,
    platform: str,
    node: str,
    task: str,
    status: str,
    exit_code: int | None,
    failure: str | None,
    times: dict[str, str | None],
    logs: str,
    events: str,
    spec: str,
    ask_text: str,
    description: str,
    source: str,
    expect: dict[str, Any],
) -> dict[str, Any]:
    uuid_hex = hexid(wf, n=32)
    t = osmo_task(wf, uuid_hex, task, status=status, exit_code=exit_code, failure=failure, node=node, times=times)
    g = osmo_group(task, status=status, failure=failure, tasks=[t], times=times)
    q = osmo_query(
        wf,
        status=status,
        pool=pool,
        backend=backend,
        submitted_by="ml.engineer@acme-robotics.example",
        times=times,
        groups=[g],
    )
    workflow = {"query": q, "logs": logs, "task_logs": {task: logs}, "events": events, "spec_template": spec}
    return osmo_document(
        slug,
        description=description,
        source=source,
        now=now,
        workflow=workflow,
        pool_quota=osmo_pool_quota(pool, backend, platform),
        resources=[osmo_node(node, pool, platform, backend)],
        ask={"text": ask_text, "workflow_id": wf},
        expect=expect,
    )


def _osmo_events(task: str, pod: str, node: str, image: str, start: str, extra: str = "", ran: bool = True) -> str:
    ev = [
        f"{start}+00:00 [{task}] PodScheduled: True",
        f"{start}+00:00 [{task}] Scheduled: Successfully assigned osmo-prod/{pod} to {node}",
        f'{start}+00:00 [{task}] Pulled: Container image "nvcr.io/nvidia/osmo/init-container:6.1.4" already present '
        "on machine",
        f"{start}+00:00 [{task}] Created: Created container osmo-init",
        f"{start}+00:00 [{task}] Started: Started container osmo-init",
        f"{start}+00:00 [{task}] Initialized: True",
    ]
    if ran:
        ev += [
            f'{start}+00:00 [{task}] Pulled: Container image "{image}" already present on machine',
            f"{start}+00:00 [{task}] Created: Created container {task}",
            f"{start}+00:00 [{task}] Started: Started container {task}",
            f"{start}+00:00 [{task}] Ready: True",
        ]
    return "\n".join(ev) + "\n" + extra


def _spec(name: str, task: str, image: str, cmd: str, gpu: int = 8, memory: str = "512Gi") -> str:
    return (
        f"workflow:\n  name: {name}\n  tasks:\n  - name: {task}\n    image: {image}\n    command:\n    - bash\n"
        f"    args:\n    - /tmp/entry.sh\n    files:\n    - path: /tmp/entry.sh\n      contents: |\n        {cmd}\n"
        f"  resources:\n    default:\n      cpu: 64\n      gpu: {gpu}\n      memory: {memory}\n"
        "      storage: 500Gi\n"
    )


def _times(submit: str, start: str | None, end: str) -> dict[str, str | None]:
    return {
        "submit": submit,
        "processing": submit,
        "scheduling": submit,
        "initializing": start or submit,
        "start": start,
        "end": end,
        "download_start": start,
        "download_end": start,
    }


@case
def osmo_exit_137_training() -> dict[str, Any]:
    slug, wf = "osmo-task-exit-137-model-training", "bugbug-train-stepstoreproduce-4"
    node, image = "dgx-h100-iad-021", "nvcr.io/acme-robotics/bugbug-train:0.0.531"
    times = _times("2023-12-07T09:00:05.120331", "2023-12-07T09:01:12.583002", "2023-12-07T10:47:41.902114")
    logs = (
        "2023/12/07 09:01:13 [train][osmo] Downloading Start\n"
        "2023/12/07 09:01:20 [train][osmo] All Inputs Gathered\n"
        "2023/12/07 09:01:25 [train] Training *stepstoreproduce* model\n"
        "2023/12/07 09:14:02 [train] Retrieving bugs from the database...\n"
        "2023/12/07 10:31:48 [train] Extracting features from 418972 bugs\n"
    )
    events = _osmo_events("train", f"{hexid(wf, n=16)}-{hexid(wf, 'train', n=16)}", node, image, "2023-12-07 09:01:10")
    return _osmo(
        slug,
        wf=wf,
        now="2023-12-07T11:00:00Z",
        pool="h100-train",
        backend="dgx-h100-iad",
        platform="dgx-h100",
        node=node,
        task="train",
        status="FAILED",
        exit_code=137,
        failure="Failure reason:\n- Exit code 137 due to Task train failure. ",
        times=times,
        logs=logs,
        events=events,
        spec=_spec("bugbug-train", "train", image, "python -m scripts.trainer stepstoreproduce", gpu=1, memory="64Gi"),
        ask_text=f"why did {wf} fail?",
        description=(
            "The stepstoreproduce model's training task exits with status code 137 while extracting features "
            "on a smaller worker; the maintainers read it as OOM and move to a bigger worker. OSMO's house "
            "rule reads a task's exit 137 as OOM_KILLED (its troubleshooting guide does), unlike Run:ai."
        ),
        source="https://github.com/mozilla/bugbug/issues/3906",
        expect={"outcome": "failed", "category": "OOM_KILLED", "mentions": ["137"]},
    )


@case
def osmo_image_pull_rate_limit() -> dict[str, Any]:
    slug, wf = "osmo-image-pull-dockerhub-rate-limit", "kbs-e2e-busybox-17"
    node, image = "ovx-l40s-sjc-004", "busybox"
    times = _times("2024-08-01T06:10:02.114021", None, "2024-08-01T06:12:31.551970")
    pull = (
        'Failed: Failed to pull image "busybox": rpc error: code = Unknown desc = failed to pull and unpack image '
        '"docker.io/library/busybox:latest": failed to copy: httpReadSeeker: failed open: unexpected status code '
        "https://registry-1.docker.io/v2/library/busybox/manifests/sha256:50aa4698fa6262977cff89181b2664b99d8a56"
        "dbca847bf62f2ef04854597cf8: 429 Too Many Requests - Server message: toomanyrequests: You have reached "
        "your pull rate limit. You may increase the limit by authenticating and upgrading: "
        "https://www.docker.com/increase-rate-limit"
    )
    extra = (
        f'2024-08-01 06:11:15+00:00 [kbs-client] Pulling: Pulling image "{image}"\n'
        f"2024-08-01 06:11:16+00:00 [kbs-client] {pull}\n"
        "2024-08-01 06:11:16+00:00 [kbs-client] Failed: Error: ErrImagePull\n"
        f'2024-08-01 06:11:17+00:00 [kbs-client] BackOff: Back-off pulling image "{image}"\n'
        "2024-08-01 06:11:17+00:00 [kbs-client] Failed: Error: ImagePullBackOff\n"
    )
    events = _osmo_events(
        "kbs-client",
        f"{hexid(wf, n=16)}-{hexid(wf, 'kbs-client', n=16)}",
        node,
        image,
        "2024-08-01 06:11:10",
        extra=extra,
        ran=False,
    )
    failure = "Failure reason: Exit code 302 due to Task kbs-client failed with ErrImagePull: " + pull.split(": ", 1)[1]
    return _osmo(
        slug,
        wf=wf,
        now="2024-08-01T07:00:00Z",
        pool="l40s-render",
        backend="ovx-l40s-sjc",
        platform="ovx-l40s",
        node=node,
        task="kbs-client",
        status="FAILED_IMAGE_PULL",
        exit_code=302,
        failure=failure,
        times=times,
        logs="",
        events=events,
        spec=_spec("kbs-e2e", "kbs-client", image, "sleep 3600", gpu=0, memory="1Gi"),
        ask_text=f"{wf} failed before running anything",
        description=(
            "A CI deployment pulls 'busybox' anonymously from Docker Hub and hits the pull rate limit "
            "('429 Too Many Requests ... toomanyrequests: You have reached your pull rate limit'): "
            "FAILED_IMAGE_PULL with exit 302 (ErrImagePull). IMAGE_PULL_FAILED; the fix is authenticated "
            "pulls or a mirror, not the image tag."
        ),
        source="https://github.com/kata-containers/kata-containers/issues/10109",
        expect={"outcome": "failed", "category": "IMAGE_PULL_FAILED", "mentions": ["toomanyrequests"]},
    )


@case
def osmo_nccl_watchdog_timeout() -> dict[str, Any]:
    slug, wf = "osmo-nccl-watchdog-allreduce-timeout", "ace-climate-train-348"
    node, image = "dgx-h100-iad-007", "nvcr.io/acme-robotics/ace-train:2024.05"
    times = _times("2024-05-07T14:20:11.902214", "2024-05-07T14:21:40.116301", "2024-05-07T16:21:52.440918")
    logs = (
        "2024-05-07 15:51:09,140 - root - INFO - Starting training step on epoch 3\n"
        + "".join(
            f"[E ProcessGroupNCCL.cpp:457] [Rank {r}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum=1132079, OpType=ALLREDUCE, NumelIn=304640, NumelOut=304640, Timeout(ms)=1800000) ran "
            f"for {ms} milliseconds before timing out.\n"
            for r, ms in ((3, 1800035), (2, 1800558), (1, 1800946))
        )
        + "[E ProcessGroupNCCL.cpp:471] Some NCCL operations have failed or timed out. Due to the asynchronous "
        "nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n"
        "[E ProcessGroupNCCL.cpp:477] To avoid data inconsistency, we are taking the entire process down.\n"
        "torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 1 (pid: 212) of binary: "
        "/usr/bin/python\n"
    )
    events = _osmo_events("train", f"{hexid(wf, n=16)}-{hexid(wf, 'train', n=16)}", node, image, "2024-05-07 14:21:38")
    return _osmo(
        slug,
        wf=wf,
        now="2024-05-07T17:00:00Z",
        pool="h100-train",
        backend="dgx-h100-iad",
        platform="dgx-h100",
        node=node,
        task="train",
        status="FAILED",
        exit_code=1,
        failure="Failure reason:\n- Exit code 1 due to Task train failure. ",
        times=times,
        logs=logs,
        events=events,
        spec=_spec("ace-climate-train", "train", image, "torchrun --nproc-per-node=4 -m fme.train config.yaml", gpu=4),
        ask_text=f"why did {wf} die at the end of epoch 3?",
        description=(
            "A 4-GPU training task dies at the end of an epoch: ranks 1-3 report 'Watchdog caught collective "
            "operation timeout' on the same ALLREDUCE (SeqNum 1132079, 30 min timeout) and torchrun exits 1 "
            "(rank 0 never joined the collective). OSMO house rule: user exit 1-255 is CRASH_APP_ERROR, "
            "naming the collective timeout; nothing shows a node or network fault."
        ),
        source="https://github.com/ai2cm/ace/issues/348",
        expect={"outcome": "failed", "category": "CRASH_APP_ERROR", "mentions": ["collective operation timeout"]},
    )


@case
def osmo_evicted_ephemeral_storage() -> dict[str, Any]:
    slug, wf = "osmo-evicted-ephemeral-storage-not-oom", "ci-worker-soak-8"
    node, image = "dgx-h100-iad-030", "nvcr.io/acme-robotics/ci-worker:7.0.1"
    times = _times("2019-02-15T20:18:40.002113", "2019-02-15T20:18:59.771020", "2019-02-16T03:40:12.190233")
    msg = (
        "The node was low on resource: ephemeral-storage. Container worker was using 73712Ki, which exceeds its "
        "request of 0. "
    )
    extra = (
        f"2019-02-16 03:40:09+00:00 [worker] Evicted: {msg}\n"
        "2019-02-16 03:40:09+00:00 [worker] Killing: Stopping container worker\n"
    )
    events = _osmo_events(
        "worker", f"{hexid(wf, n=16)}-{hexid(wf, 'worker', n=16)}", node, image, "2019-02-15 20:18:58", extra=extra
    )
    return _osmo(
        slug,
        wf=wf,
        now="2019-02-16T04:00:00Z",
        pool="h100-train",
        backend="dgx-h100-iad",
        platform="dgx-h100",
        node=node,
        task="worker",
        status="FAILED_EVICTED",
        exit_code=3004,
        failure="Pod evicted: " + msg,
        times=times,
        logs="2019/02/16 03:30:00 [worker] build 4412 started\n",
        events=events,
        spec=_spec(
            "ci-worker-soak", "worker", image, "concourse worker --work-dir /worker-state", gpu=0, memory="16Gi"
        ),
        ask_text=f"{wf} got evicted, out of memory?",
        description=(
            "A CI worker with an emptyDir size limit is still evicted: 'The node was low on resource: "
            "ephemeral-storage. Container worker was using 73712Ki, which exceeds its request of 0.' "
            "OSMO reports FAILED_EVICTED with the service code 3004 it gives every eviction. The OSMO table "
            "says FAILED_EVICTED without an OOM hint (disk or node pressure) is NODE_FAILURE; the message "
            "names ephemeral-storage, so 3004 alone must not make it OOM_KILLED."
        ),
        source="https://github.com/concourse/hush-house/issues/8",
        expect={"outcome": "failed", "category": "NODE_FAILURE", "mentions": ["ephemeral-storage"]},
    )


@case
def osmo_ccce_backend_error() -> dict[str, Any]:
    slug, wf = "osmo-backend-error-createcontainerconfigerror", "kv-sync-infer-2"
    node, image = "dgx-h100-iad-012", "nvcr.io/acme-robotics/kv-infer:1.3.0"
    times = _times("2020-06-24T10:00:03.551201", None, "2020-06-24T10:10:41.009812")
    extra = (
        '2020-06-24 10:00:41+00:00 [infer] Failed: Error: secret "kv-sync-secret" not found\n'
        '2020-06-24 10:10:38+00:00 [infer] Failed: Error: secret "kv-sync-secret" not found\n'
    )
    events = _osmo_events(
        "infer",
        f"{hexid(wf, n=16)}-{hexid(wf, 'infer', n=16)}",
        node,
        image,
        "2020-06-24 10:00:40",
        extra=extra,
        ran=False,
    )
    return _osmo(
        slug,
        wf=wf,
        now="2020-06-24T11:00:00Z",
        pool="h100-train",
        backend="dgx-h100-iad",
        platform="dgx-h100",
        node=node,
        task="infer",
        status="FAILED_BACKEND_ERROR",
        exit_code=3001,
        failure=(
            "Failure reason: Exit code 3001 due to Task infer failed with CreateContainerConfigError: "
            'secret "kv-sync-secret" not found'
        ),
        times=times,
        logs="",
        events=events,
        spec=_spec("kv-sync-infer", "infer", image, "python serve.py", gpu=1, memory="32Gi"),
        ask_text=f"what happened to {wf}? backend error?",
        description=(
            "The Secret that the secrets-store CSI driver's sync option should create from Key Vault does "
            "not exist yet, so the container's env reference fails: CreateContainerConfigError 'secret ... "
            "not found' (the report's $SECRET_NAME is named kv-sync-secret here). OSMO waits 10 minutes "
            "and then fails the task FAILED_BACKEND_ERROR/3001. House rule: a backend error caused by "
            "CreateContainerConfigError is START_FAILED, not NODE_FAILURE."
        ),
        source="https://github.com/kubernetes-sigs/secrets-store-csi-driver/issues/236",
        expect={"outcome": "failed", "category": "START_FAILED", "mentions": ["CreateContainerConfigError"]},
    )


@case
def pull_rate_limit_daemon_tier1() -> dict[str, Any]:
    slug, now = "pull-rate-limit-docker-daemon-tier1", "2021-04-28T08:40:00Z"
    ref = "docker.io/library/busybox:1.29"
    msg = (
        f'Failed to pull image "{ref}": rpc error: code = Unknown desc = Error response from daemon: '
        "toomanyrequests: You have reached your pull rate limit. You may increase the limit by authenticating "
        "and upgrading: https://www.docker.com/increase-rate-limit"
    )
    created = "2021-04-28T08:30:26Z"
    c = _pending_pod(
        slug,
        now=now,
        project="storage-e2e",
        pid="27",
        name="rbd-pvc-tester",
        node="minikube",
        img=ref,
        created=created,
        k8s_phase="ImagePullBackOff",
        events=[
            ("Pulling", f'Pulling image "{ref}"', "kubelet", "2021-04-28T08:30:26Z", 1),
            ("Failed", msg, "kubelet", "2021-04-28T08:30:27Z", 1),
            ("Failed", "Error: ErrImagePull", "kubelet", "2021-04-28T08:30:27Z", 1),
            ("BackOff", f'Back-off pulling image "{ref}"', "kubelet", "2021-04-28T08:30:27Z", 1),
            ("Failed", "Error: ImagePullBackOff", "kubelet", "2021-04-28T08:30:27Z", 1),
        ],
        tier2=False,
        gpu=0,
    )
    return c.document(
        description=(
            "An external-storage e2e test pod cannot pull busybox: Docker's daemon answers 'toomanyrequests: You "
            "have reached your pull rate limit' (the Docker-shim wording, not the containerd 429 one) and the pod "
            "goes ErrImagePull then ImagePullBackOff. Tier 1 only. IMAGE_PULL_FAILED."
        ),
        source="https://github.com/ceph/ceph-csi/issues/2029",
        now=now,
        ask={
            "text": "rbd-pvc-tester stuck in ImagePullBackOff",
            "workload_name": "rbd-pvc-tester",
            "intent": "current",
        },
        expect={"outcome": "diagnosed", "category": "IMAGE_PULL_FAILED", "mentions": ["toomanyrequests"]},
        tier2=False,
    )


@case
def osmo_nccl_timeout_then_bogus_cuda_oom() -> dict[str, Any]:
    slug, wf = "osmo-nccl-timeout-then-bogus-cuda-oom", "llm-pretrain-ckpt-save-5"
    node, image = "dgx-h100-iad-019", "nvcr.io/acme-robotics/llm-pretrain:24.04"
    times = _times("2024-05-13T01:00:02.771093", "2024-05-13T01:01:31.402210", "2024-05-13T06:32:18.113920")
    logs = (
        "2024-05-13 05:58:40 | INFO | step 38000 | saving sharded optimizer state\n"
        "[rank5]:[E ProcessGroupNCCL.cpp:563] [Rank 5] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=512877, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800084 "
        "milliseconds before timing out.\n"
        + _torch_traceback(
            [("/workspace/pretrain.py", 402, "save_checkpoint", "osd = FSDP.optim_state_dict(model, optimizer)")],
            ["torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate more than 1EB memory."],
        )
    )
    events = _osmo_events("train", f"{hexid(wf, n=16)}-{hexid(wf, 'train', n=16)}", node, image, "2024-05-13 01:01:29")
    return _osmo(
        slug,
        wf=wf,
        now="2024-05-13T07:00:00Z",
        pool="h100-train",
        backend="dgx-h100-iad",
        platform="dgx-h100",
        node=node,
        task="train",
        status="FAILED",
        exit_code=1,
        failure="Failure reason:\n- Exit code 1 due to Task train failure. ",
        times=times,
        logs=logs,
        events=events,
        spec=_spec("llm-pretrain", "train", image, "torchrun --nproc-per-node=8 pretrain.py --cfg 7b.yaml"),
        ask_text=f"{wf} ran out of memory while saving a checkpoint?",
        description=(
            "While saving a sharded optimizer state, rank 5 first hits a 30-minute NCCL BROADCAST timeout "
            "and only then raises 'CUDA out of memory. Tried to allocate more than 1EB memory' (a bogus "
            "size); NCCL's maintainer says the OOM is a cascade of the timeout. Exit 1: a fault of the "
            "program, CRASH_APP_ERROR, and never OOM_KILLED (no 137, no eviction); the report should lead "
            "with the collective timeout."
        ),
        source="https://github.com/NVIDIA/nccl/issues/1284",
        expect={"outcome": "failed", "category": "CRASH_APP_ERROR", "mentions": ["collective operation timeout"]},
    )


@case
def xid48_dbe_in_healthcheck_log() -> dict[str, Any]:
    slug, now = "xid48-dbe-xid64-in-healthcheck-log", "2024-12-02T12:10:00Z"
    node = "worker4"
    log = (
        "gpu-healthcheck: checking 8 GPUs on worker4\n"
        "gpu-healthcheck: nvidia-smi reports 7 of 8 GPUs\n"
        "gpu-healthcheck: kernel messages since boot:\n"
        "[  218.250408] NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)\n"
        "[  218.250668] NVRM: GPU 0000:0a:00.0: rm_init_adapter failed, device minor number 5\n"
        "[  219.470994] NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit "
        "error (DBE) has been detected on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1.\n"
        "[  219.471050] NVRM: Xid (PCI:0000:07:00): 64, pid='<unknown>', name=<unknown>, Dynamic Page Retirement: "
        "Blacklisting failed.  Page should have been blacklisted on boot(0x00000000007fffa8).\n"
        "gpu-healthcheck: FAILED (2 problems)\n"
    )
    c, _ = _single_failed(
        slug,
        now=now,
        project="gpu-infra",
        pid="77",
        name="gpu-healthcheck-worker4",
        node=node,
        img="registry.example.com/infra/gpu-healthcheck:0.9",
        created="2024-12-02T11:40:00Z",
        run_at="2024-12-02T11:40:20Z",
        end="2024-12-02T11:41:02Z",
        exit_code=1,
        reason="Error",
        log=log,
        gpu=0,
        memory="1Gi",
        command="/usr/local/bin/gpu-healthcheck --dmesg",
        product="NVIDIA-A100-PCIE-40GB",
        node_kw={"allocatable_gpus": 7},
    )
    return c.document(
        description=(
            "On worker4 the GPU operator's validator pods crash; the node's kernel log shows RmInitAdapter "
            "failures for 0000:0a:00.0 and 'Xid ... 48 ... An uncorrectable double bit error (DBE)' plus Xid 64 "
            "(page retirement failed) on 0000:07:00. Embedded here in a node health-check Job that prints those "
            "kernel lines in its own log and exits 1. Xid 48/64 in the log: NODE_FAILURE although the container "
            "exited non-zero, quoting the Xid and naming the node."
        ),
        source="https://github.com/NVIDIA/gpu-operator/issues/1146",
        now=now,
        ask={
            "text": "gpu-healthcheck-worker4 failed, what is wrong with worker4?",
            "workload_name": "gpu-healthcheck-worker4",
            "intent": "terminal",
        },
        expect={"outcome": "diagnosed", "category": "NODE_FAILURE", "mentions": ["48", node]},
    )


# ============================================================================ neighbours on the node (issue 19 §2)
def _neighbour(
    c: RunaiCase,
    name: str,
    *,
    project: str,
    pid: str,
    node: str,
    img: str,
    created: str,
    ends: list[str],
    k8s_phase: str = "Error",
    type_: str = "Training",
) -> dict[str, Any]:
    """Another workload (in ``project``) whose pods on ``node`` failed at ``ends``: what the Run:ai pods list of
    every workload shows of it (``GET /api/v1/workloads/pods``); nothing of it is in Tier 2."""
    e = c.workload(name, created=created, phase="Failed", phase_at=at(ends[-1], seconds=3), image=img, type_=type_)
    w = e["workload"]
    w.update({"projectName": project, "projectId": pid, "namespace": f"runai-{project}"})
    for i, end in enumerate(ends):
        pod = c.t1pod(
            e,
            f"{name}-{i}-0",
            node=node,
            k8s_phase=k8s_phase,
            created=at(end, minutes=-3) if i else created,
            updated=end,
            completed=end,
            containers=[(name, img, None if k8s_phase == "UnexpectedAdmissionError" else at(end, minutes=-2))],
        )
        pod.update({"projectName": project, "projectId": pid})
    c.phase(e, "Running", at(created, minutes=1))
    c.phase(e, "Failed", at(ends[-1], seconds=3))
    return e


@case
def xid79_node1_neighbours_failed() -> dict[str, Any]:
    slug, now = "xid79-node-event-other-workloads-failed-same-node", "2024-04-05T22:30:00Z"
    node, xid_at, end = "node1", "2024-04-05T21:29:39Z", "2024-04-05T21:29:41Z"
    log = "step 8800 | loss 0.0912 | 3.2 it/s\nstep 8850 | loss 0.0907 | 3.2 it/s\n" + _torch_traceback(
        [("/workspace/train_lora.py", 96, "training_step", "loss.backward()")],
        ["RuntimeError: CUDA error: unknown error", *CUDA_ASYNC],
    )

    def node_event(c: RunaiCase, e: dict[str, Any]) -> None:
        c.k8s_event(
            node,
            "XidError",
            "NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
            xid_at,
            kind="Node",
            component="gpu-health-monitor",
        )

    c, _ = _single_failed(
        slug,
        now=now,
        project="genai",
        pid="41",
        name="sdxl-lora-ft",
        node=node,
        img="nvcr.io/nvidia/pytorch:24.03-py3",
        created="2024-04-05T19:02:00Z",
        run_at="2024-04-05T19:04:10Z",
        end=end,
        exit_code=1,
        reason="Error",
        log=log,
        gpu=1,
        memory="48Gi",
        command="python train_lora.py --config sdxl.yaml",
        product="NVIDIA-GeForce-RTX-4090",
        extra_events=node_event,
        node_kw={"allocatable_gpus": 7, "kernel": "5.15.0-101-generic", "runtime": "containerd://1.7.13"},
    )
    img = "ghcr.io/example/inference-server:2.4"
    _neighbour(
        c,
        "sd-serve",
        project="genai",
        pid="41",
        node=node,
        img=img,
        created="2024-04-05T18:00:00Z",
        ends=["2024-04-05T21:29:40Z", "2024-04-05T21:33:12Z", "2024-04-05T21:38:40Z"],
        type_="Inference",
    )
    _neighbour(
        c,
        "llm-eval-12",
        project="eval",
        pid="77",
        node=node,
        img=img,
        created="2024-04-05T20:40:00Z",
        ends=["2024-04-05T21:29:42Z"],
    )
    _neighbour(
        c,
        "nightly-bench",
        project="eval",
        pid="77",
        node=node,
        img=img,
        created="2024-04-05T20:00:00Z",
        ends=["2024-04-05T20:41:05Z"],
    )  # 48 min earlier: not a neighbour
    _neighbour(
        c,
        "whisper-ft",
        project="genai",
        pid="41",
        node="node2",
        img=img,
        created="2024-04-05T20:00:00Z",
        ends=["2024-04-05T21:29:45Z"],
    )  # another node
    return c.document(
        description=(
            "An 8x RTX 4090 provider node: at 21:29:39 dmesg logs 'NVRM: Xid (PCI:0000:a1:00): 79, pid='<unknown>', "
            "name=<unknown>, GPU has fallen off the bus.' (here a Node event from the GPU health monitor) and "
            "nvidia-smi then answers 'Unable to determine the device handle for GPU0000:A1:00.0: Unknown Error'; "
            "the provider keeps spewing failed pods. The asked LoRA job on that node dies 2 s later with a bare "
            "'CUDA error: unknown error' (illustrative log): NODE_FAILURE. The other workloads whose pods failed "
            "on node1 within 15 min (an inference service recreated three times, an eval job) are named as "
            "supporting evidence; a job that failed there 48 min earlier and one on node2 are not."
        ),
        source="https://github.com/akash-network/support/issues/209",
        now=now,
        ask={
            "text": "why did sdxl-lora-ft crash with CUDA unknown error?",
            "workload_name": "sdxl-lora-ft",
            "intent": "terminal",
        },
        expect={
            "outcome": "diagnosed",
            "category": "NODE_FAILURE",
            "mentions": ["79", node, "2 other workloads' pods on node node1", "sd-serve (3 pods)", "llm-eval-12"],
            "never_mentions": ["nightly-bench", "whisper-ft"],
        },
    )


@case
def gpu_lost_admission_neighbours() -> dict[str, Any]:
    slug, now = "nvml-gpu-lost-admission-every-pod-neighbours", "2021-03-05T10:30:00Z"
    node = "node-11"
    msg = (
        "Pod Allocate failed due to device plugin GetPreferredAllocation rpc failed with err: rpc error: code = "
        "Unknown desc = Unable to retrieve list of available devices: error creating nvml.Device 3: nvml: GPU is "
        "lost, which is unexpected"
    )
    c = _rejected(
        slug,
        now=now,
        project="speech",
        pid="23",
        name="asr-align",
        node=node,
        img="registry.example.com/speech/asr-align:0.9.1",
        created="2021-03-05T09:41:00Z",
        reason="UnexpectedAdmissionError",
        message=msg,
        tier2=False,
        product="NVIDIA-A100-PCIE-40GB",
        command="python align.py --shard 3",
    )
    img = "registry.example.com/speech/transcribe-api:3.2"
    ends = [at("2021-03-05T09:36:30Z", minutes=2 * i) for i in range(6)]  # the Deployment's pods, recreated
    _neighbour(
        c,
        "transcribe-api",
        project="speech",
        pid="23",
        node=node,
        img=img,
        created="2021-03-04T08:00:00Z",
        ends=ends,
        k8s_phase="UnexpectedAdmissionError",
        type_="Inference",
    )
    _neighbour(
        c,
        "kws-train",
        project="research",
        pid="31",
        node=node,
        img=img,
        created="2021-03-05T09:40:00Z",
        ends=["2021-03-05T09:40:04Z"],
        k8s_phase="UnexpectedAdmissionError",
    )
    return c.document(
        description=(
            "A node with 4 GPUs: one GPU crashed ('nvml: GPU is lost'; nvidia-smi: 'Unable to determine the device "
            "handle for GPU 0000:C1:00.0: GPU is lost. Reboot the system to recover this GPU'), and from then on "
            "every pod scheduled on the node fails admission with the device plugin's GetPreferredAllocation error "
            "(UnexpectedAdmissionError), the 3 healthy GPUs unallocatable; a Deployment keeps recreating its pods "
            "there (the report saw 12k failed pods). Tier 1 only: the asked job never started, NODE_FAILURE. The "
            "other workloads rejected on node-11 within 15 min (the Deployment's 6 pods, a training job) are named "
            "as supporting evidence."
        ),
        source="https://github.com/NVIDIA/k8s-device-plugin/issues/231",
        now=now,
        ask={"text": "why did asr-align fail?", "workload_name": "asr-align", "intent": "terminal"},
        expect={
            "outcome": "diagnosed",
            "category": "NODE_FAILURE",
            "mentions": ["GPU is lost", node, "2 other workloads' pods on node node-11", "transcribe-api (6 pods)"],
        },
        tier2=False,
    )


@case
def unknown_137_neighbours_killed_same_minute() -> dict[str, Any]:
    slug, now = "exit-137-unexplained-other-workloads-killed-same-node", "2022-05-26T16:00:00Z"
    node, run_at, end = "c022", "2022-05-26T14:31:20Z", "2022-05-26T14:39:22Z"
    log = "".join(f"{1653575600.5 + 120 * i:.7f}\n" for i in range(4))  # print(time.time()) every 2 min
    c, _ = _single_failed(
        slug,
        now=now,
        project="chem",
        pid="64",
        name="test-gpu-crash",
        node=node,
        img="registry.example.com/chem/python:3.9",
        created="2022-05-26T14:30:55Z",
        run_at=run_at,
        end=end,
        exit_code=137,
        reason="Error",
        log=log,
        gpu=1,
        memory="16Gi",
        command="python test.py",
        product="NVIDIA-A100-SXM4-40GB",
    )
    img = "registry.example.com/chem/python:3.9"
    _neighbour(
        c,
        "dft-relax-17",
        project="chem",
        pid="64",
        node=node,
        img=img,
        created="2022-05-26T12:10:00Z",
        ends=["2022-05-26T14:39:21Z"],
    )
    _neighbour(
        c,
        "md-sim-ligand",
        project="bio",
        pid="65",
        node=node,
        img=img,
        created="2022-05-26T13:05:00Z",
        ends=["2022-05-26T14:39:23Z"],
    )
    return c.document(
        description=(
            "A trivial GPU job (a loop that sleeps 120 s and prints time.time(); the printed values are "
            "illustrative) 'failed after 8 mins for no reason' on node c022, 'possibly on all gpu nodes'; the "
            "cluster's kill bot turned out to have gone rogue. Here: exit 137, reason Error, no OOMKilled, no "
            "event naming a sender: UNKNOWN. Two other workloads' pods on c022 were killed within the same "
            "two seconds: supporting evidence that the cause is outside the job, which never changes the category "
            "on its own."
        ),
        source="https://github.com/ArjunaCluster/ArjunaUsers/issues/134",
        now=now,
        ask={
            "text": "test-gpu-crash failed after 8 minutes for no reason, why?",
            "workload_name": "test-gpu-crash",
            "intent": "terminal",
        },
        expect={
            "outcome": "diagnosed",
            "category": "UNKNOWN",
            "mentions": ["137", node, "2 other workloads' pods on node c022", "dft-relax-17", "md-sim-ligand"],
        },
    )


def main() -> int:
    out_dir, pend_dir = HERE / "cases", HERE / "pending"
    out_dir.mkdir(exist_ok=True)
    pend_dir.mkdir(exist_ok=True)
    slugs = set()
    for fn in CASES + INCIDENT_CASES + INCIDENT_CASES_2:
        doc = fn()
        doc.setdefault("kind", case_kind(doc))
        slug = doc["id"]
        if slug in slugs:
            raise SystemExit(f"duplicate slug {slug}")
        slugs.add(slug)
        target = (pend_dir if slug in PENDING else out_dir) / f"{slug}.json"
        other = (out_dir if slug in PENDING else pend_dir) / f"{slug}.json"
        if other.exists():
            other.unlink()
        target.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    unknown = PENDING - slugs
    if unknown:
        raise SystemExit(f"PENDING names unknown slugs: {sorted(unknown)}")
    print(f"{len(slugs)} cases: {len(slugs) - len(PENDING)} in cases/, {len(PENDING)} in pending/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
