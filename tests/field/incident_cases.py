"""Field cases of issue 19 §3: distributed training and pods with more than one container.

Each ``case_*`` function embeds one public report (its ``source``) into a small Run:ai world, the same way
``build_cases.py`` does (see that module and README.md): strings quoted from the report are verbatim; what the
report does not say (project, node names, times, limits where none is given) is filled in with plain values and
the description says so. ``expect`` is what a careful SRE answers under ../shared/cases/FORMAT.md's house rules
("Evidence" and "Run:ai phases and precedence": the pod that failed first over every pod either source lists, its
consequences, the OOM ceiling of the killed container, startup probes, question words never overriding the phase
rules, occurrences), not the product's current output.

Every case carries a ``kind`` label (``distributed`` or ``multi-container``) that bench/accuracy.py groups by.
``build_cases.py`` imports ``CASES`` from here and writes them with its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from snap import RunaiCase, at, container, cstatus, running, terminated, uid, waiting

CASES: list[Callable[[], dict[str, Any]]] = []


def case(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    CASES.append(fn)
    return fn


@dataclass
class C:
    """One container of a pod: its spec values, state, last state and logs."""

    name: str
    image: str
    state: dict[str, Any]
    memory: str = "32Gi"
    gpu: float = 0
    last: dict[str, Any] | None = None
    restarts: int = 0
    ready: bool | None = None
    log: str | None = None
    prev_log: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class P:
    """One pod: Tier 1 (Run:ai pods list) and, unless ``k8s`` is False, Tier 2 (core/v1 Pod)."""

    name: str
    node: str | None
    containers: list[C]
    init: list[C] | None = None
    phase: str = "Failed"
    t1: str = "Error"
    replica: str | None = None
    index: int = 0
    k8s: bool = True
    deleted: str | None = None
    completed: str | None = None
    updated: str | None = None
    created: str | None = None
    reason: str | None = None
    message: str | None = None
    conditions: list[dict[str, Any]] | None = None
    restart_policy: str = "Never"
    labels: dict[str, str] = field(default_factory=dict)


def add_pods(
    c: RunaiCase,
    e: dict[str, Any],
    pods: list[P],
    *,
    workload: str,
    created: str,
    run_at: str,
    now: str,
    owner_kind: str = "TrainingWorkload",
    node_kw: dict[str, Any] | None = None,
    replica_label: str = "training.kubeflow.org/replica-type",
) -> None:
    """Write each pod to the Run:ai pods list and (when ``k8s``) to Tier 2, its logs, and its node once."""
    seen: set[str] = set()
    names: set[str] = set()
    for p in pods:
        made = p.created or created
        started = [(k.name, k.image, run_at if "waiting" not in k.state or k.last else None) for k in p.containers]
        t1 = c.t1pod(
            e,
            p.name,
            node=p.node,
            k8s_phase=p.t1,
            created=made,
            updated=p.updated or p.completed or p.deleted or run_at,
            completed=p.completed,
            containers=started,
            gpu=sum(k.gpu for k in p.containers),
        )
        if p.name in names:  # a re-created pod of the same name is another object
            t1["id"] = uid(c.slug, "t1pod", p.name, made)
        names.add(p.name)
        if p.deleted:
            t1["deletedAt"] = p.deleted
        if not p.k8s:
            continue
        labels = dict(p.labels)
        if p.replica:
            labels[replica_label] = p.replica
            labels.setdefault("training.kubeflow.org/replica-index", str(p.index))
        c.k8s_pod(
            p.name,
            workload=workload,
            node=p.node,
            phase=p.phase,
            created=made,
            containers=[container(k.name, k.image, k.gpu, k.memory, **k.extra) for k in p.containers],
            statuses=[_status(k) for k in p.containers],
            init_containers=[container(k.name, k.image, k.gpu, k.memory, **k.extra) for k in p.init]
            if p.init
            else None,
            init_statuses=[_status(k) for k in p.init] if p.init else None,
            reason=p.reason,
            message=p.message,
            conditions=p.conditions,
            labels=labels,
            owner_kind=owner_kind,
            restart_policy=p.restart_policy,
        )
        for k in (p.init or []) + p.containers:
            if k.log is not None:
                c.log(p.name, k.name, k.log)
            if k.prev_log is not None:
                c.log(p.name, k.name, k.prev_log, previous=True)
        if p.node and p.node not in seen:
            seen.add(p.node)
            c.node(p.node, now=now, **({"gpus": 8} | (node_kw or {})))


def _status(k: C) -> dict[str, Any]:
    ready = ("running" in k.state) if k.ready is None else k.ready
    return cstatus(k.name, k.image, k.state, last=k.last, restarts=k.restarts, ready=ready)


def scheduled(c: RunaiCase, e: dict[str, Any], pods: dict[str, str], when: str) -> None:
    """The runai-scheduler's Scheduled event for each pod -> node."""
    for pod, node in pods.items():
        c.event(
            e,
            "Scheduled",
            f"Successfully assigned pod {c.ns}/{pod} to node {node} at node-pool default",
            when,
            obj=pod,
            type_="Normal",
            source="runai-scheduler",
        )


def pod_failed(c: RunaiCase, e: dict[str, Any], pod: str, cname: str, reason: str, code: int, when: str) -> str:
    """The workload controller's PodFailed event (the shape of ../shared/cases/runai/oom-recurring-tier2.json)."""
    msg = f"Pod {c.ns}/{pod} failed: container {cname} terminated with reason {reason} (exit code {code})"
    c.event(e, "PodFailed", msg, when, obj=pod, source="workload-controller")
    return f"Pod {pod} failed: container {cname} terminated with reason {reason} (exit code {code})"


def distributed(
    c: RunaiCase,
    name: str,
    *,
    created: str,
    run_at: str,
    phase: str,
    phase_at: str,
    image: str,
    framework: str,
    workers: int,
    gpu: float,
    memory: str,
    command: str,
    pods_requested: int,
    running_pods: int = 0,
    phase_message: str = "",
) -> dict[str, Any]:
    """A Distributed workload with its Pending / Running history started."""
    e = c.workload(
        name,
        created=created,
        phase=phase,
        phase_at=phase_at,
        image=image,
        type_="Distributed",
        gpu=gpu,
        memory=memory,
        pods_requested=pods_requested,
        running_pods=running_pods,
        framework=framework,
        workers=workers,
        command=command,
        phase_message=phase_message,
    )
    c.phase(e, "Pending", created)
    return e


TORCH_ELASTIC = "torch/distributed/elastic/multiprocessing/api.py"


def watchdog(rank: int, seq: int, ms: int, op: str = "ALLREDUCE", numel: int = 1, timeout: int = 600000) -> str:
    return (
        f"[rank{rank}]:[E ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: "
        f"WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={numel}, NumelOut={numel}, Timeout(ms)={timeout}) ran for "
        f"{ms} milliseconds before timing out.\n"
    )


def _expect(category: str | None, mentions: list[str], outcome: str = "diagnosed", **kw: Any) -> dict[str, Any]:
    exp: dict[str, Any] = {"outcome": outcome}
    if category:
        exp["category"] = category
    if mentions:
        exp["mentions"] = mentions
    exp.update(kw)
    return exp


def _doc(c: RunaiCase, kind: str, **kw: Any) -> dict[str, Any]:
    doc = c.document(**kw)
    doc["kind"] = kind
    return doc


# ============================================================================ distributed: the first failure decides
@case
def mpi_orte_lost_daemon_worker_only_in_runai() -> dict[str, Any]:
    slug, now = "mpi-orte-lost-daemon-first-worker-only-in-runai-list", "2019-11-12T09:00:00Z"
    c = RunaiCase(slug, project="libnlp", project_id="77")
    name = "tf-bert-libnlp-token-lr-5e-6-fp32-1572827779"
    img = "registry.example.com/libnlp/horovod-tf:0.18.2"
    created, run_at = "2019-11-12T02:00:00Z", "2019-11-12T02:03:00Z"
    lost, launcher_end, w0_end = "2019-11-12T08:11:47Z", "2019-11-12T08:11:53Z", "2019-11-12T08:12:21Z"
    launcher, w0, w19 = f"{name}-launcher-gdqv7", f"{name}-worker-0", f"{name}-worker-19"
    e = distributed(
        c,
        name,
        created=created,
        run_at=run_at,
        phase="Failed",
        phase_at=at(launcher_end, seconds=3),
        image=img,
        framework="MPI",
        workers=20,
        gpu=8,
        memory="480Gi",
        pods_requested=21,
        command="mpirun -np 160 python run_pretraining.py --learning_rate 5e-6 --fp32",
    )
    scheduled(c, e, {w0: "dgx1-n001", w19: "dgx1-n020", launcher: "cpu-n03"}, at(created, seconds=4))
    c.phase(e, "Running", run_at)
    msg = pod_failed(c, e, launcher, "mpi-launcher", "Error", 1, at(launcher_end, seconds=1))
    c.phase(e, "Failed", at(launcher_end, seconds=3), msg)
    orte = (
        "--------------------------------------------------------------------------\n"
        "ORTE has lost communication with a remote daemon.\n\n"
        f"  HNP daemon   : [[43015,0],0] on node {launcher}\n"
        f"  Remote daemon: [[43015,0],20] on node {w19}\n\n"
        "This is usually due to either a failure of the TCP network\n"
        "connection to the node, or possibly an internal failure of\n"
        "the daemon itself. We cannot recover from this failure, and\n"
        "therefore will terminate the job.\n"
        "--------------------------------------------------------------------------\n"
    )
    pods = [
        P(
            launcher,
            "cpu-n03",
            [C("mpi-launcher", img, terminated(1, "Error", run_at, launcher_end), log=orte)],
            completed=launcher_end,
            labels={"mpi_role_type": "launcher"},
        ),
        P(
            w0,
            "dgx1-n001",
            [
                C(
                    "mpi-worker",
                    img,
                    terminated(143, "Error", run_at, w0_end),
                    gpu=8,
                    memory="480Gi",
                    log="[1,0]<stdout>:Iteration: 41%|####      | 8166/20000\n",
                )
            ],
            completed=w0_end,
            labels={"mpi_role_type": "worker"},
        ),
        P(
            w19,
            "dgx1-n020",
            [C("mpi-worker", img, running(run_at), gpu=8, memory="480Gi")],
            t1="Error",
            completed=lost,
            deleted=at(lost, seconds=2),
            k8s=False,
        ),
    ]
    add_pods(c, e, pods, workload=name, created=created, run_at=run_at, now=now, owner_kind="DistributedWorkload")
    return _doc(
        c,
        "distributed",
        description=(
            "An MPIJob (Horovod BERT pretraining, 20 workers; the snapshot keeps the launcher, worker-0 and "
            "worker-19): worker-19 crashed first (08:11:47; the Run:ai pods list still shows it, Error and deleted, "
            "Kubernetes no longer has it), then the launcher ended with exit 1 on 'ORTE has lost communication with "
            "a remote daemon' naming worker-19, and worker-0 got the cleanup SIGTERM (143). The launcher's exit is a "
            "consequence; the pod that failed first cannot be seen: UNKNOWN, naming worker-19."
        ),
        source="https://github.com/kubeflow/mpi-operator/issues/152",
        now=now,
        ask={
            "text": f"why did {name} fail? the launcher says ORTE lost a daemon",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("UNKNOWN", [w19]),
    )


@case
def mpijob_worker_deleted_launcher_137() -> dict[str, Any]:
    slug, now = "mpijob-worker-deleted-launcher-exit-137", "2023-03-02T11:00:00Z"
    c = RunaiCase(slug, project="mnist", project_id="45")
    name = "tensorflow-mnist"
    img = "docker.io/kubeflow/mpi-horovod-mnist:latest"
    created, run_at = "2023-03-02T10:00:00Z", "2023-03-02T10:01:30Z"
    deleted, launcher_end, recreated = "2023-03-02T10:20:11Z", "2023-03-02T10:20:13Z", "2023-03-02T10:20:14Z"
    launcher, w0, w1 = f"{name}-launcher", f"{name}-worker-0", f"{name}-worker-1"
    e = distributed(
        c,
        name,
        created=created,
        run_at=run_at,
        phase="Failed",
        phase_at=at(launcher_end, seconds=2),
        image=img,
        framework="MPI",
        workers=2,
        gpu=1,
        memory="8Gi",
        pods_requested=3,
        running_pods=2,
        command="mpirun -np 2 python /examples/tensorflow_mnist.py",
    )
    scheduled(c, e, {w0: "gpu-a", w1: "gpu-b", launcher: "cpu-a"}, at(created, seconds=4))
    c.phase(e, "Running", run_at)
    c.event(e, "Killing", "Stopping container mpi-worker", deleted, obj=w1, type_="Normal")
    msg = pod_failed(c, e, launcher, "mpi-launcher", "Error", 137, at(launcher_end, seconds=1))
    c.phase(e, "Failed", at(launcher_end, seconds=2), msg)
    log = (
        f'[{launcher}:00001] Warning: could not find environment variable "LD_LIBRARY_PATH"\n'
        f"+ POD_NAME={w0}\n+ shift\n+ /opt/kube/kubectl exec {w0} -- /bin/sh -c     PATH=/usr/local/bin:$PATH ; "
        'export PATH ;   /usr/local/bin/orted -mca ess "env" -mca ess_base_jobid "3314941952"\n'
    )
    pods = [
        P(
            launcher,
            "cpu-a",
            [C("mpi-launcher", img, terminated(137, "Error", run_at, launcher_end), log=log)],
            completed=launcher_end,
            labels={"mpi_role_type": "launcher"},
        ),
        P(
            w0,
            "gpu-a",
            [C("mpi-worker", img, running(run_at), gpu=1, memory="8Gi", log="")],
            phase="Running",
            t1="Running",
            labels={"mpi_role_type": "worker"},
        ),
        P(
            w1,
            "gpu-b",
            [C("mpi-worker", img, running(run_at), gpu=1, memory="8Gi")],
            t1="Running",
            deleted=deleted,
            k8s=False,
        ),
        P(
            w1,
            "gpu-b",
            [C("mpi-worker", img, running(at(recreated, seconds=5)), gpu=1, memory="8Gi", log="")],
            phase="Running",
            t1="Running",
            created=recreated,
            labels={"mpi_role_type": "worker"},
        ),
    ]
    add_pods(c, e, pods, workload=name, created=created, run_at=run_at, now=now, owner_kind="DistributedWorkload")
    return _doc(
        c,
        "distributed",
        description=(
            "An MPIJob with a launcher restart policy of ExitCode: one running worker (tensorflow-mnist-worker-1) is "
            "deleted; two seconds later the launcher fails with exit code 137 and is never restarted, while the "
            "operator re-creates worker-1 (a new pod of the same name, Running). The deleted pod is only in the "
            "Run:ai pods list (deletedAt). It failed first; nothing says why it went away beyond the kubelet's "
            "'Stopping container': UNKNOWN naming worker-1, never the launcher's 137 as the cause."
        ),
        source="https://github.com/kubeflow/trainer/issues/1768",
        now=now,
        ask={"text": "tensorflow-mnist launcher failed with 137, OOM?", "workload_name": name, "intent": "terminal"},
        expect=_expect("UNKNOWN", [w1]),
    )


def _torch_job(
    slug: str,
    *,
    project: str,
    pid: str,
    name: str,
    img: str,
    created: str,
    run_at: str,
    end: str,
    workers: int,
    gpu: float,
    memory: str,
    command: str,
    pods: list[P],
    now: str,
    phase: str = "Failed",
    phase_message: str = "",
    job_event: str | None = None,
    framework: str = "PyTorch",
    extra: Callable[[RunaiCase, dict[str, Any]], None] | None = None,
    node_kw: dict[str, Any] | None = None,
    running_pods: int = 0,
) -> tuple[RunaiCase, dict[str, Any]]:
    """A Distributed workload: Scheduled events for every pod, Running, ``extra`` events, the job event, Failed."""
    c = RunaiCase(slug, project=project, project_id=pid)
    e = distributed(
        c,
        name,
        created=created,
        run_at=run_at,
        phase=phase,
        phase_at=at(end, seconds=4),
        image=img,
        framework=framework,
        workers=workers,
        gpu=gpu,
        memory=memory,
        pods_requested=len(pods),
        command=command,
        running_pods=running_pods,
        phase_message=phase_message,
    )
    scheduled(c, e, {p.name: p.node for p in pods if p.node}, at(created, seconds=3))
    c.phase(e, "Running", run_at)
    if extra:
        extra(c, e)
    if job_event:
        c.event(
            e,
            f"{framework if framework != 'PyTorch' else 'PyTorchJob'}Failed".replace("TFFailed", "TFJobFailed"),
            job_event,
            at(end, seconds=2),
            obj=name,
            kind="PyTorchJob" if framework == "PyTorch" else "TFJob",
            type_="Normal",
            source="pytorchjob-controller" if framework == "PyTorch" else "tfjob-controller",
        )
    if phase == "Failed":
        c.phase(e, "Failed", at(end, seconds=4), phase_message)
    add_pods(
        c,
        e,
        pods,
        workload=name,
        created=created,
        run_at=run_at,
        now=now,
        owner_kind="DistributedWorkload",
        node_kw=node_kw,
    )
    return c, e


@case
def elastic_scale_down_deleted_worker() -> dict[str, Any]:
    slug, now = "elastic-scale-down-deleted-worker-first", "2023-01-10T09:00:00Z"
    name, img = "elasticjob-resnet50", "registry.example.com/wdk/elasticjob-pytorch:1.13"
    created, run_at = "2023-01-10T06:00:00Z", "2023-01-10T06:02:00Z"
    gone, w0_end = "2023-01-10T08:30:02Z", "2023-01-10T08:30:40Z"
    cmd = (
        "torchrun --nnodes=1:3 --nproc_per_node=1 --rdzv_id=1 --rdzv_backend=c10d --max_restarts=100 "
        "--rdzv_endpoint=172.22.154.120:60001 /wdk/elasticjob/pytorch/main.py --arch resnet50 --epochs 100 "
        "--batch-size 128 /wdk/imagenet/"
    )
    w0_log = (
        "Epoch: [3][ 410/10010]\tTime  0.412 ( 0.420)\tLoss 4.1093e+00 (4.2011e+00)\n"
        f"E0110 08:30:39.881000 139912 {TORCH_ELASTIC}:869] failed (exitcode: 1) local_rank: 0 (pid: 61) of binary: "
        "/usr/bin/python\n"
        "torch.distributed.elastic.rendezvous.api.RendezvousClosedError\n"
    )
    pods = [
        P(
            f"{name}-worker-0",
            "gpu-w01",
            [C("pytorch", img, terminated(1, "Error", run_at, w0_end), gpu=1, memory="24Gi", log=w0_log)],
            replica="worker",
            index=0,
            completed=w0_end,
        ),
        P(
            f"{name}-worker-1",
            "gpu-w02",
            [C("pytorch", img, running(run_at), gpu=1, memory="24Gi")],
            t1="Running",
            deleted=gone,
            k8s=False,
        ),
        P(
            f"{name}-worker-2",
            "gpu-w03",
            [C("pytorch", img, terminated(143, "Error", run_at, at(w0_end, seconds=6)), gpu=1, memory="24Gi", log="")],
            replica="worker",
            index=2,
            completed=at(w0_end, seconds=6),
        ),
    ]
    c, _ = _torch_job(
        slug,
        project="wdk",
        pid="131",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=at(w0_end, seconds=6),
        workers=3,
        gpu=1,
        memory="24Gi",
        command=cmd,
        pods=pods,
        now=now,
        node_kw={"gpus": 4, "product": "Tesla-V100-SXM2-32GB"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "An elastic torchrun job (--nnodes=1:3, three worker pods). The user deletes worker-1 to test scale-down "
            "and expects the job to keep running; instead worker-0 fails 38 s later (exit 1, RendezvousClosedError; "
            "the log lines are illustrative, the report shows screenshots) and worker-2 gets the cleanup SIGTERM. "
            "The deleted pod, which only the Run:ai pods list still shows, went first: UNKNOWN naming worker-1; "
            "worker-0's rendezvous error is a consequence."
        ),
        source="https://github.com/pytorch/pytorch/issues/91943",
        now=now,
        ask={"text": "elasticjob-resnet50 died after scale down, why?", "workload_name": name, "intent": "terminal"},
        expect=_expect("UNKNOWN", [f"{name}-worker-1"]),
    )


@case
def tf_worker_oomkilled_chief_exits() -> dict[str, Any]:
    slug, now = "tfjob-worker-oomkilled-first-chief-exits-later", "2020-06-17T12:00:00Z"
    name, img = "ctr-deepfm-train", "registry.example.com/rec/elasticdl-deepfm:0.2"
    created, run_at = "2020-06-17T08:00:00Z", "2020-06-17T08:01:00Z"
    oom, chief_end = "2020-06-17T11:02:18Z", "2020-06-17T11:04:31Z"
    pods = [
        P(
            f"{name}-chief-0",
            "cpu-big-01",
            [
                C(
                    "tensorflow",
                    img,
                    terminated(1, "Error", run_at, chief_end),
                    memory="16Gi",
                    log="tensorflow.python.framework.errors_impl.UnavailableError: Socket closed\n",
                )
            ],
            replica="chief",
            completed=chief_end,
        ),
        P(
            f"{name}-worker-0",
            "cpu-big-02",
            [C("tensorflow", img, terminated(143, "Error", run_at, chief_end), memory="16Gi", log="")],
            replica="worker",
            index=0,
            completed=chief_end,
        ),
        P(
            f"{name}-worker-1",
            "cpu-big-03",
            [
                C(
                    "tensorflow",
                    img,
                    terminated(137, "OOMKilled", run_at, oom),
                    memory="16Gi",
                    log="I0617 11:02:10.118 worker.py:312] task 1881 done, 40960 records\n",
                )
            ],
            t1="OOMKilled",
            replica="worker",
            index=1,
            completed=oom,
        ),
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, f"{name}-worker-1", "tensorflow", "OOMKilled", 137, at(oom, seconds=1))

    c, _ = _torch_job(
        slug,
        project="rec",
        pid="64",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=chief_end,
        workers=2,
        gpu=0,
        memory="16Gi",
        command="python -m elasticdl.python.worker.main --model_zoo deepfm",
        pods=pods,
        now=now,
        framework="TF",
        extra=ev,
        node_kw={"gpus": 0},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A TF training job whose worker leaks memory (the report: 'master will clear the OOM worker pod and "
            "relaunch a new worker pod', TF 2.0 eager-mode leaks): worker-1 is OOMKilled (137) at its 16Gi limit "
            "at 11:02; two minutes later the chief fails (exit 1, 'Socket closed') and worker-0 gets the cleanup "
            "SIGTERM. The first failure decides: OOM_KILLED, naming worker-1 and its limit."
        ),
        source="https://github.com/sql-machine-learning/elasticdl/issues/2043",
        now=now,
        ask={
            "text": "why did ctr-deepfm-train fail? chief says socket closed",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("OOM_KILLED", [f"{name}-worker-1", "OOMKilled", "16Gi"]),
    )


@case
def deepspeed_mpi_worker_oom_launcher_after() -> dict[str, Any]:
    slug, now = "deepspeed-mpijob-worker-oomkilled-launcher-exits-after", "2023-08-31T10:00:00Z"
    name, img = "llama2-70b-sft", "registry.example.com/llm/llama-x:0.1"
    created, run_at = "2023-08-31T06:00:00Z", "2023-08-31T06:04:00Z"
    oom, launcher_end = "2023-08-31T06:41:09Z", "2023-08-31T06:41:12Z"
    cmd = (
        "deepspeed --num_gpus 8 --num_nodes 3 --master_addr 192.168.0.6 --master_port 34545 --hostfile "
        "/mnt/download/configs/hostfile.txt train.py --model_name_or_path /mnt/model/Llama-2-70b-hf"
    )
    launcher_log = (
        "[2023-08-31 06:41:11,872] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 8816\n"
        "[2023-08-31 06:41:11,904] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', "
        "'--local_rank=7', '--model_name_or_path', '/mnt/model/Llama-2-70b-hf'] exits with return code = -9\n"
    )
    w = [f"{name}-worker-{i}" for i in range(3)]
    pods = [
        P(
            f"{name}-launcher",
            "cpu-n01",
            [C("launcher", img, terminated(1, "Error", run_at, launcher_end), log=launcher_log)],
            completed=launcher_end,
            labels={"mpi_role_type": "launcher"},
        ),
        P(
            w[0],
            "a100-n06",
            [
                C(
                    "worker",
                    img,
                    terminated(143, "Error", run_at, at(launcher_end, seconds=4)),
                    gpu=8,
                    memory="1000Gi",
                    log="",
                )
            ],
            completed=at(launcher_end, seconds=4),
            labels={"mpi_role_type": "worker"},
        ),
        P(
            w[1],
            "a100-n32",
            [
                C(
                    "worker",
                    img,
                    terminated(143, "Error", run_at, at(launcher_end, seconds=4)),
                    gpu=8,
                    memory="1000Gi",
                    log="",
                )
            ],
            completed=at(launcher_end, seconds=4),
            labels={"mpi_role_type": "worker"},
        ),
        P(
            w[2],
            "a100-n23",
            [
                C(
                    "worker",
                    img,
                    terminated(137, "OOMKilled", run_at, oom),
                    gpu=8,
                    memory="1000Gi",
                    log="Loading checkpoint shards:  87%|########6 | 13/15 [05:12<00:48, 24.1s/it]\n",
                )
            ],
            t1="OOMKilled",
            completed=oom,
            labels={"mpi_role_type": "worker"},
        ),
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, w[2], "worker", "OOMKilled", 137, at(oom, seconds=1))

    c, _ = _torch_job(
        slug,
        project="llm",
        pid="88",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=at(launcher_end, seconds=4),
        workers=3,
        gpu=8,
        memory="1000Gi",
        command=cmd,
        pods=pods,
        now=now,
        framework="MPI",
        extra=ev,
        node_kw={"product": "NVIDIA-A100-SXM4-40GB"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "DeepSpeed fine-tuning of llama-2-70B on 3 nodes of 8x A100-40G (an MPIJob: launcher plus 3 workers). "
            "While loading the model, worker-2 is OOMKilled at its 1000Gi limit; three seconds later the launcher "
            "logs 'exits with return code = -9' and exits 1, and the other workers are cleaned up (143). The "
            "launcher's exit follows the worker's kill: OOM_KILLED, naming worker-2 and its limit."
        ),
        source="https://github.com/deepspeedai/DeepSpeed/issues/4239",
        now=now,
        ask={
            "text": "llama2-70b-sft exits with return code -9 but there seems to be enough memory?",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("OOM_KILLED", [w[2], "OOMKilled", "1000Gi"]),
    )


# ============================================================================ attempts and occurrences
@case
def torchrun_lora_oom_backoff_retries() -> dict[str, Any]:
    slug, now = "torchrun-lora-oomkilled-three-job-attempts-recurring", "2025-01-21T12:00:00Z"
    c = RunaiCase(slug, project="vlm", project_id="57")
    name, img = "minicpm-v-lora", "registry.example.com/vlm/minicpm-v-ft:2.6"
    created = "2025-01-21T06:00:00Z"
    starts = ["2025-01-21T06:01:00Z", "2025-01-21T07:52:40Z", "2025-01-21T09:44:30Z"]
    ends = ["2025-01-21T07:52:11Z", "2025-01-21T09:44:02Z", "2025-01-21T11:35:51Z"]
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(ends[2], seconds=4),
        image=img,
        gpu=2,
        memory="96Gi",
        command="torchrun --nproc_per_node 2 finetune.py --use_lora true",
        backoff_limit=2,
    )
    c.phase(e, "Pending", created)
    pods = []
    for i, (s, f) in enumerate(zip(starts, ends, strict=True)):
        pod = f"{name}-0-{i}"
        scheduled(c, e, {pod: "a800-07"}, at(s, seconds=-20))
        c.phase(e, "Running", s)
        msg = pod_failed(c, e, pod, name, "OOMKilled", 1, at(f, seconds=1))
        if i < 2:
            c.phase(e, "Pending", at(f, seconds=12))
        log = (
            " 40%|████      | 1456/3640 [1:50:31<2:45:47,  4.55s/it]\n"
            f"{TORCH_ELASTIC}:826] failed (exitcode: -9) local_rank: 0 (pid: 1322) of binary: "
            "/root/miniconda3/bin/python\n"
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        )
        pods.append(
            P(
                pod,
                "a800-07",
                [C(name, img, terminated(1, "OOMKilled", s, f), gpu=2, memory="96Gi", log=log)],
                t1="OOMKilled",
                completed=f,
                created=at(s, seconds=-25),
            )
        )
    c.event(
        e,
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
        at(ends[2], seconds=2),
        obj=name,
        kind="Job",
        source="job-controller",
    )
    c.phase(e, "Failed", at(ends[2], seconds=4), msg)
    add_pods(
        c,
        e,
        pods,
        workload=name,
        created=created,
        run_at=starts[0],
        now=now,
        node_kw={"product": "NVIDIA-A800-SXM4-80GB"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A LoRA fine-tune (torchrun, 2 GPUs, one pod per attempt; the Job's restartPolicy Never and backoffLimit "
            "2) dies at exactly 40% every time: torchrun reports 'failed (exitcode: -9)' and the kubelet marks the "
            "container OOMKilled (exit code 1: the cgroup OOM killer took the child, not PID 1) at its 96Gi limit. "
            "The Job retried twice with new pods before BackoffLimitExceeded: three attempts, three OOM occurrences "
            "inside the lookback, so the answer is OOM_KILLED and recurring."
        ),
        source="https://github.com/OpenBMB/MiniCPM-V/issues/770",
        now=now,
        ask={
            "text": "minicpm-v-lora ChildFailedError exitcode -9 again at 40%, why?",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("OOM_KILLED", ["OOMKilled", "96Gi"], recurring=True),
    )


@case
def checkpoint_load_oom_onfailure_restarts_one_occurrence() -> dict[str, Any]:
    slug, now = "checkpoint-load-oom-restarts-in-one-pod-not-recurring", "2023-10-20T10:00:00Z"
    c = RunaiCase(slug, project="chat", project_id="39")
    name, img = "baichuan-sft", "registry.example.com/chat/firefly:0.4"
    created, run_at = "2023-10-20T08:00:00Z", "2023-10-20T08:02:00Z"
    kills = ["2023-10-20T08:06:31Z", "2023-10-20T08:11:02Z", "2023-10-20T08:15:40Z"]
    e = c.workload(
        name,
        created=created,
        phase="Failed",
        phase_at=at(kills[2], seconds=4),
        image=img,
        gpu=8,
        memory="160Gi",
        command="torchrun --nproc_per_node=8 train.py --train_args_file train_args/sft/full/baichuan-13b.json",
        backoff_limit=2,
        restart_policy="OnFailure",
    )
    pod = f"{name}-0-0"
    c.phase(e, "Pending", created)
    scheduled(c, e, {pod: "a100-13"}, at(created, seconds=4))
    c.phase(e, "Running", run_at)
    for k in kills[:2]:
        c.event(
            e, "BackOff", f"Back-off restarting failed container {name} in pod {pod}_{c.ns}", at(k, seconds=9), obj=pod
        )
    msg = pod_failed(c, e, pod, name, "OOMKilled", 1, at(kills[2], seconds=1))
    c.event(
        e,
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
        at(kills[2], seconds=2),
        obj=name,
        kind="Job",
        source="job-controller",
    )
    c.phase(e, "Failed", at(kills[2], seconds=4), msg)
    log = (
        "Loading checkpoint shards:   0%|          | 0/2 [00:00<?, ?it/s]"
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 899505 closing signal SIGTERM\n"
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 4 (pid: 899509) of "
        "binary: /home/xdx/miniconda3/envs/baichuanft/bin/python\n"
    )
    add_pods(
        c,
        e,
        [
            P(
                pod,
                "a100-13",
                [
                    C(
                        name,
                        img,
                        terminated(1, "OOMKilled", at(kills[1], seconds=30), kills[2]),
                        gpu=8,
                        memory="160Gi",
                        last=terminated(1, "OOMKilled", at(kills[0], seconds=30), kills[1]),
                        restarts=2,
                        log=log,
                        prev_log=log,
                    )
                ],
                t1="OOMKilled",
                completed=kills[2],
                restart_policy="OnFailure",
            )
        ],
        workload=name,
        created=created,
        run_at=run_at,
        now=now,
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A full SFT of baichuan-13b with torchrun on 8 GPUs is killed while 'Loading checkpoint shards': torch "
            "elastic logs 'failed (exitcode: -9) local_rank: 4' and the container is OOMKilled (exit code 1) at its "
            "160Gi limit. restartPolicy OnFailure restarts the container twice inside the same pod before "
            "BackoffLimitExceeded. Container restarts inside one pod run are one occurrence: OOM_KILLED, not "
            "recurring."
        ),
        source="https://github.com/yangjianxin1/Firefly/issues/171",
        now=now,
        ask={
            "text": "baichuan-sft keeps dying while loading checkpoint shards",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("OOM_KILLED", ["OOMKilled", "160Gi"], recurring=False),
    )


# ============================================================================ preemption and gang eviction
@case
def pytorchjob_worker_preempted_first_peers_sigkill() -> dict[str, Any]:
    slug, now = "pytorchjob-worker-preempted-before-peers-fail", "2023-01-14T10:00:00Z"
    name, img = "dlrm-train", "registry.example.com/rec/dlrm:1.13.1"
    created, run_at = "2023-01-14T06:00:00Z", "2023-01-14T06:02:00Z"
    evict, peers_end = "2023-01-14T09:12:00Z", "2023-01-14T09:12:41Z"
    w1 = f"{name}-worker-1"
    peer_log = (
        f"E0114 09:12:40.118000 1 {TORCH_ELASTIC}:869] failed (exitcode: 1) local_rank: 0 (pid: 41) of binary: "
        "/usr/bin/python\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
    )
    disrupted = [
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "runai-scheduler: preempting to accommodate a higher priority pod",
            "lastProbeTime": None,
            "lastTransitionTime": evict,
        },
        {
            "type": "Ready",
            "status": "False",
            "reason": "PodFailed",
            "lastProbeTime": None,
            "lastTransitionTime": at(evict, seconds=31),
        },
    ]
    pods = [
        P(
            f"{name}-master-0",
            "dgx-11",
            [C("pytorch", img, terminated(1, "Error", run_at, peers_end), gpu=8, memory="256Gi", log=peer_log)],
            replica="master",
            completed=peers_end,
        ),
        P(
            f"{name}-worker-0",
            "dgx-12",
            [C("pytorch", img, terminated(1, "Error", run_at, peers_end), gpu=8, memory="256Gi", log=peer_log)],
            replica="worker",
            completed=peers_end,
        ),
        P(
            w1,
            "dgx-13",
            [C("pytorch", img, terminated(137, "Error", run_at, at(evict, seconds=31)), gpu=8, memory="256Gi", log="")],
            replica="worker",
            index=1,
            completed=at(evict, seconds=31),
            conditions=disrupted,
        ),
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        c.event(
            e,
            "Evict",
            f"Pod {c.ns}/{w1} was preempted by higher priority workload runai-prod/pg-ranker-serve-0-5d1e",
            evict,
            obj=f"pg-{name}-0",
            kind="PodGroup",
            source="runai-scheduler",
        )
        c.event(e, "Killing", "Stopping container pytorch", at(evict, seconds=1), obj=w1, type_="Normal")

    c, _ = _torch_job(
        slug,
        project="rec",
        pid="64",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=peers_end,
        workers=2,
        gpu=8,
        memory="256Gi",
        command="torchrun --nnodes=3 --nproc_per_node=8 dlrm_main.py",
        pods=pods,
        now=now,
        extra=ev,
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A 3-pod PyTorchJob: the scheduler preempts worker-1 for a higher-priority workload (Evict event, "
            "DisruptionTarget PreemptionByScheduler, then the kubelet's SIGKILL: 137); 41 s later the master and "
            "worker-0 fail with ChildFailedError, which is how PyTorch reports that 'one of the workers was killed "
            "by SIGKILL'. The preemption came before the first failure: route_preempted, not a crash."
        ),
        source="https://github.com/pytorch/pytorch/issues/92214",
        now=now,
        ask={"text": "dlrm-train failed, a worker was killed by SIGKILL?", "workload_name": name, "intent": "terminal"},
        expect=_expect(None, [], outcome="route_preempted"),
    )


@case
def kai_gang_evicted_after_worker_crash() -> dict[str, Any]:
    slug, now = "kai-stale-gang-eviction-after-first-worker-crash", "2026-07-24T12:00:00Z"
    name, img = "jobset-vit-pretrain", "registry.example.com/cv/vit:2.4"
    created, run_at = "2026-07-24T07:00:00Z", "2026-07-24T07:03:00Z"
    crash, evict = "2026-07-24T10:40:12Z", "2026-07-24T10:41:13Z"
    names = [f"{name}-worker-{i}" for i in range(4)]
    crash_log = "[rank18] step 88210 loss 1.902\n" + (
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
        "be incorrect.\n"
    )
    pods = [
        P(
            names[2],
            "h100-c3",
            [C("pytorch", img, terminated(1, "Error", run_at, crash), gpu=8, memory="512Gi", log=crash_log)],
            replica="worker",
            index=2,
            completed=crash,
        )
    ]
    for i in (0, 1, 3):
        pods.append(
            P(
                names[i],
                f"h100-c{i + 1}",
                [
                    C(
                        "pytorch",
                        img,
                        terminated(137, "Error", run_at, at(evict, seconds=31)),
                        gpu=8,
                        memory="512Gi",
                        log="",
                    )
                ],
                replica="worker",
                index=i,
                completed=at(evict, seconds=31),
            )
        )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, names[2], "pytorch", "Error", 1, at(crash, seconds=1))
        for i in (0, 1, 3):
            c.event(
                e,
                "Evict",
                "Workload doesn't meet the minimum required number of pods (4), evicting remaining "
                f"pod: {c.ns}/{names[i]}",
                evict,
                obj=f"pg-{name}-0",
                kind="PodGroup",
                source="kai-scheduler",
            )

    c, _ = _torch_job(
        slug,
        project="cv",
        pid="71",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=at(evict, seconds=31),
        workers=4,
        gpu=8,
        memory="512Gi",
        command="torchrun --nnodes=4 pretrain.py",
        pods=pods,
        now=now,
        extra=ev,
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A gang-scheduled 4-pod training job (minMember 4) under KAI: worker-2 crashes with 'CUDA error: an "
            "illegal memory access was encountered' (exit 1); about a minute later the stale-gang eviction evicts "
            "the three remaining pods ('Workload doesn't meet the minimum required number of pods (4), evicting "
            "remaining pod: ...'). The evictions follow the first failure and are consequences, not a preemption: "
            "CRASH_APP_ERROR naming worker-2. (The report is about the same eviction after a pod completes; the "
            "crash is illustrative.)"
        ),
        source="https://github.com/kai-scheduler/KAI-Scheduler/issues/1968",
        now=now,
        ask={"text": "jobset-vit-pretrain was evicted by the scheduler?", "workload_name": name, "intent": "terminal"},
        expect=_expect("CRASH_APP_ERROR", [names[2], "illegal memory access"]),
    )


@case
def elastic_min_replicas_peers_preempted_after_oom() -> dict[str, Any]:
    slug, now = "elastic-worker-oomkilled-then-gang-preempted", "2025-11-26T18:00:00Z"
    name, img = "llm-pretrain-elastic", "nvcr.io/nvidia/pytorch:25.10-py3"
    created, run_at = "2025-11-26T09:00:00Z", "2025-11-26T09:04:00Z"
    oom, evict = "2025-11-26T16:20:44Z", "2025-11-26T16:21:30Z"
    names = [f"{name}-master-0", f"{name}-worker-0", f"{name}-worker-1"]
    pods = [
        P(
            names[2],
            "b200-07",
            [
                C(
                    "pytorch",
                    img,
                    terminated(137, "OOMKilled", run_at, oom),
                    gpu=8,
                    memory="1800Gi",
                    log="[rank20] step 31337 loss 2.0411\n",
                )
            ],
            t1="OOMKilled",
            replica="worker",
            index=1,
            completed=oom,
        ),
    ]
    for i, pod in enumerate(names[:2]):
        pods.append(
            P(
                pod,
                f"b200-0{5 + i}",
                [
                    C(
                        "pytorch",
                        img,
                        terminated(137, "Error", run_at, at(evict, seconds=30)),
                        gpu=8,
                        memory="1800Gi",
                        log="",
                    )
                ],
                replica="master" if i == 0 else "worker",
                completed=at(evict, seconds=30),
            )
        )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, names[2], "pytorch", "OOMKilled", 137, at(oom, seconds=1))
        for pod in names[:2]:
            c.event(
                e,
                "Evict",
                f"Pod {c.ns}/{pod} was preempted by higher priority workload runai-infer/pg-chat-serve-0-77a1",
                evict,
                obj=f"pg-{name}-0",
                kind="PodGroup",
                source="runai-scheduler",
            )

    c, _ = _torch_job(
        slug,
        project="llm",
        pid="88",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=at(evict, seconds=30),
        workers=2,
        gpu=8,
        memory="1800Gi",
        command="torchrun --nnodes=2:3 --nproc_per_node=8 pretrain.py",
        pods=pods,
        now=now,
        extra=ev,
        node_kw={"product": "NVIDIA-B200"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "An elastic PyTorchJob under a gang scheduler that evicts the whole workload when the number of running "
            "pods falls below the minimum threshold: worker-1 is OOMKilled (137) at its 1800Gi limit at 16:20:44; "
            "46 s later the scheduler takes the freed gang's GPUs and its Evict events say the master and worker-0 "
            "'was preempted by higher priority workload'. Those preemptions came after the first failure and are "
            "consequences: OOM_KILLED naming worker-1, not route_preempted."
        ),
        source="https://github.com/kubeflow/website/pull/4248",
        now=now,
        ask={"text": "was llm-pretrain-elastic preempted?", "workload_name": name, "intent": "terminal"},
        expect=_expect("OOM_KILLED", [names[2], "OOMKilled", "1800Gi"]),
    )


# ============================================================================ NCCL and peers
def _two_pod(
    slug: str,
    *,
    project: str,
    pid: str,
    name: str,
    img: str,
    created: str,
    run_at: str,
    first: tuple[str, str, dict[str, Any], str, str],
    later: list[tuple[str, str, dict[str, Any], str, str]],
    gpu: float,
    memory: str,
    command: str,
    now: str,
    extra: Callable[[RunaiCase, dict[str, Any]], None] | None = None,
    node_kw: dict[str, Any] | None = None,
    hidden_first: bool = False,
    job_event: str | None = None,
) -> tuple[RunaiCase, dict[str, Any]]:
    """A PyTorchJob whose ``first`` pod (name, node, state, log, replica) failed before the ``later`` ones."""
    pods = []
    for i, (pod, node, state, log, replica) in enumerate([first, *later]):
        end = state["terminated"]["finishedAt"] if "terminated" in state else None
        hidden = hidden_first and i == 0
        pods.append(
            P(
                pod,
                node,
                [C("pytorch", img, running(run_at) if hidden else state, gpu=gpu, memory=memory, log=log)],
                replica=replica,
                index=0 if replica == "master" else int(pod.rsplit("-", 1)[1]),
                completed=end,
                k8s=not hidden,
                deleted=at(end, seconds=3) if hidden and end else None,
            )
        )
    last_end = max(p.completed or run_at for p in pods)
    c, e = _torch_job(
        slug,
        project=project,
        pid=pid,
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=last_end,
        workers=len(pods) - 1,
        gpu=gpu,
        memory=memory,
        command=command,
        pods=pods,
        now=now,
        extra=extra,
        node_kw=node_kw,
        job_event=job_event,
    )
    return c, e


@case
def all_ranks_watchdog_timeout_first_pod_decides() -> dict[str, Any]:
    slug, now = "all-ranks-nccl-watchdog-timeout-no-earlier-failure", "2025-03-21T04:00:00Z"
    name, img = "qwen-sft-2node", "registry.example.com/llm/llamafactory:0.9.2"
    created, run_at = "2025-03-20T18:00:00Z", "2025-03-20T18:03:00Z"
    t_master, t_worker = "2025-03-21T02:07:08Z", "2025-03-21T02:07:09Z"
    log = (
        "[80746] "
        + watchdog(0, 1580, 600060, numel=466119168)
        + "[80748] [rank0]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an "
        "error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL "
        "work: 1579.\n"
    )
    wlog = "[80747] " + watchdog(4, 1580, 600067, numel=466119168)
    c, _ = _two_pod(
        slug,
        project="llm",
        pid="88",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        first=(f"{name}-master-0", "h800-01", terminated(1, "Error", run_at, t_master), log, "master"),
        later=[(f"{name}-worker-0", "h800-02", terminated(1, "Error", run_at, t_worker), wlog, "worker")],
        gpu=8,
        memory="1024Gi",
        command="llamafactory-cli train examples/train_full/qwen2_5_sft.yaml",
        now=now,
        job_event=f"PyTorchJob {c_ns('llm')}/{name} has failed because 1 Master replica(s) failed.",
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A 2-node full fine-tune: every rank hits 'Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, ...) ran for 600060 milliseconds before timing out' and both "
            "pods exit 1 within a second, the master first. No pod failed before the timeout, no node or kernel "
            "signal is there: the first failing pod's own program ended on an NCCL collective timeout, "
            "CRASH_APP_ERROR, naming the master and the timeout."
        ),
        source="https://github.com/hiyouga/LlamaFactory/issues/7396",
        now=now,
        ask={"text": "qwen-sft-2node watchdog timeout, why?", "workload_name": name, "intent": "terminal"},
        expect=_expect("CRASH_APP_ERROR", [f"{name}-master-0", "Watchdog caught collective operation timeout"]),
    )


def c_ns(project: str) -> str:
    return f"runai-{project}"


@case
def megatron_watchdog_master_first_worker_only_in_runai() -> dict[str, Any]:
    slug, now = "megatron-master-watchdog-after-worker-gone-from-kubernetes", "2024-10-09T12:00:00Z"
    name, img = "megatron-gpt-345m", "nvcr.io/nvidia/pytorch:24.07-py3"
    created, run_at = "2024-10-09T09:00:00Z", "2024-10-09T09:02:00Z"
    w_end, m_end = "2024-10-09T09:05:51Z", "2024-10-09T09:15:52Z"
    mlog = watchdog(0, 5, 600013) + (
        "[rank0]:[E ProcessGroupNCCL.cpp:630] [Rank 0] Some NCCL operations have failed or timed out. Due to the "
        "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.\n"
    )
    c, _ = _two_pod(
        slug,
        project="nlp",
        pid="98",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        first=(f"{name}-worker-0", "dgx-b07", terminated(1, "Error", run_at, w_end), "", "worker"),
        later=[(f"{name}-master-0", "dgx-b06", terminated(1, "Error", run_at, m_end), mlog, "master")],
        gpu=8,
        memory="1024Gi",
        command="torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py",
        now=now,
        hidden_first=True,
    )
    return _doc(
        c,
        "distributed",
        description=(
            "Megatron-LM GPT pretraining on 2 pods: the master ends with 'Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            "600013 milliseconds before timing out.' ten minutes after worker-0 ended at 09:05:51; worker-0 is gone "
            "from Kubernetes and only the Run:ai pods list still shows it (Error, deleted). The master's timeout is a "
            "consequence and the first failing pod cannot be seen: UNKNOWN, naming worker-0."
        ),
        source="https://github.com/NVIDIA/Megatron-LM/issues/1207",
        now=now,
        ask={
            "text": "megatron-gpt-345m master watchdog timeout SeqNum=5, why?",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("UNKNOWN", [f"{name}-worker-0"]),
    )


@case
def tf_chief_nccl_unhandled_system_error_first() -> dict[str, Any]:
    slug, now = "tf-chief-nccl-unhandled-system-error-workers-follow", "2023-11-03T10:00:00Z"
    name, img = "job-1111-2222", "registry.example.com/rec/tf-multiworker:2.13"
    created, run_at = "2023-11-03T07:00:00Z", "2023-11-03T07:02:00Z"
    t0 = "2023-11-03T07:02:41Z"
    chief_log = (
        "2023-11-03 07:02:40.551 E tensorflow/core/common_runtime/base_collective_executor.cc:249] "
        "BaseCollectiveExecutor::StartAbort INTERNAL: NCCL: unhandled system error\n"
        "NCCL communication aborted: unhandled system error\n"
    )
    later = [
        (
            f"{name}-worker-{i}",
            "gpu-single-01",
            terminated(1, "Error", run_at, at(t0, seconds=5 + i)),
            "tensorflow.python.framework.errors_impl.UnavailableError: Collective ops is aborted by: NCCL "
            "communication aborted: unhandled system error\n",
            "worker",
        )
        for i in range(3)
    ]
    c, _ = _two_pod(
        slug,
        project="rec",
        pid="64",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        first=(f"{name}-chief-0", "gpu-single-01", terminated(1, "Error", run_at, t0), chief_log, "master"),
        later=later,
        gpu=1,
        memory="32Gi",
        command="python train_multiworker.py",
        now=now,
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A TensorFlow MultiWorkerMirroredStrategy job (1 chief, 3 workers, all four pods on one node, TF_CONFIG "
            "naming job-1111-2222-0..3): the chief aborts first with 'NCCL communication aborted: unhandled system "
            "error' (exit 1); the workers then fail with the same abort relayed by their collective executors. The "
            "chief's own program failed first: CRASH_APP_ERROR naming the chief and the NCCL error."
        ),
        source="https://github.com/NVIDIA/nccl/issues/1039",
        now=now,
        ask={
            "text": "job-1111-2222 NCCL unhandled system error on all workers",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("CRASH_APP_ERROR", [f"{name}-chief-0", "unhandled system error"]),
    )


@case
def pytorchjob_worker_host_not_found_master_pending() -> dict[str, Any]:
    slug, now = "pytorchjob-worker-fails-before-master-is-up", "2019-01-11T06:30:00Z"
    name, img = "optimizer", "registry.example.com/rl/optimizer:0.4"
    created, run_at, w_end = "2019-01-11T05:43:00Z", "2019-01-11T05:43:28Z", "2019-01-11T05:43:31Z"
    log = (
        "2019-01-11 05:43:30,310 INFO     main(rmq_host=rmq.default.svc.cluster.local, rmq_port=5672, "
        "batch_size=12)\n2019-01-11 05:43:30,310 INFO     init_distribution\n"
        "Traceback (most recent call last):\n"
        '  File "optimizer.py", line 413, in init_distribution\n'
        "    torch.distributed.init_process_group(backend=backend)\n"
        '  File "/root/.local/lib/python3.7/site-packages/torch/distributed/rendezvous.py", line 143, in '
        "_env_rendezvous_handler\n    store = TCPStore(master_addr, master_port, start_daemon)\n"
        "ValueError: host not found: Name or service not known\n"
    )
    pods = [
        P(
            f"{name}-worker-0",
            "gpu-3",
            [C("pytorch", img, terminated(1, "Error", run_at, w_end), gpu=1, memory="16Gi", log=log)],
            replica="worker",
            completed=w_end,
        ),
        P(
            f"{name}-master-0",
            None,
            [C("pytorch", img, waiting("ContainerCreating"), gpu=1, memory="16Gi")],
            phase="Pending",
            t1="Pending",
            replica="master",
            created=at(created, seconds=20),
        ),
    ]
    c, _ = _torch_job(
        slug,
        project="rl",
        pid="19",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=w_end,
        workers=1,
        gpu=1,
        memory="16Gi",
        command="python optimizer.py",
        pods=pods,
        now=now,
        job_event=f"PyTorchJob {name} is failed because 1 Worker replica(s) failed.",
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A PyTorchJob with restartPolicy Never whose worker starts before the master: the worker's "
            "init_process_group cannot resolve the master ('ValueError: host not found: Name or service not known', "
            "exit 1) and the job is Failed while the master pod is still being created. The worker failed first and "
            "its own program raised: CRASH_APP_ERROR naming worker-0 and the error."
        ),
        source="https://github.com/kubeflow/pytorch-operator/issues/125",
        now=now,
        ask={"text": "why did optimizer fail?", "workload_name": name, "intent": "terminal"},
        expect=_expect("CRASH_APP_ERROR", [f"{name}-worker-0", "host not found"]),
    )


# ============================================================================ the first failing pod's node
@case
def nvlink_xid74_on_first_worker_node() -> dict[str, Any]:
    slug, now = "worker-uncorrectable-nvlink-xid74-on-its-node-master-later", "2021-06-25T08:00:00Z"
    name, img = "a100-pretrain-4node", "registry.example.com/nlp/pretrain:1.9"
    created, run_at = "2021-06-21T09:00:00Z", "2021-06-21T09:05:00Z"
    xid, w_end, m_end = "2021-06-25T03:14:27Z", "2021-06-25T03:14:29Z", "2021-06-25T03:24:31Z"
    wlog = (
        "terminate called after throwing an instance of 'std::system_error'\n"
        "  what():  Transport endpoint is not connected\n"
        "terminate called after throwing an instance of 'c10::Error'\n"
        "  what():  CUDA error: uncorrectable NVLink error detected during the execution\n"
        "Exception raised from create_event_internal at /pytorch/c10/cuda/CUDACachingAllocator.cpp:733 (most recent "
        "call first):\n"
    )
    mlog = watchdog(0, 910233, 600041)

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        c.k8s_event(
            "p4d-n14",
            "XidError",
            "NVRM: Xid (PCI:0000:a0:1c): 74, pid=40912, name=python, NVLink: fatal "
            "error detected on link 4(0x10000, 0x0, 0x0, 0x0, 0x0, 0x0, 0x0)",
            xid,
            kind="Node",
            component="nvidia-node-problem-detector",
        )

    c, _ = _two_pod(
        slug,
        project="nlp",
        pid="98",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        first=(f"{name}-worker-2", "p4d-n14", terminated(134, "Error", run_at, w_end), wlog, "worker"),
        later=[(f"{name}-master-0", "p4d-n11", terminated(1, "Error", run_at, m_end), mlog, "master")],
        gpu=8,
        memory="1000Gi",
        command="torchrun --nnodes=4 --nproc_per_node=8 pretrain.py",
        now=now,
        extra=ev,
        node_kw={"product": "NVIDIA-A100-SXM4-40GB"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A multi-day A100 pretraining run fails: worker-2 aborts with 'CUDA error: uncorrectable NVLink error "
            "detected during the execution' (exit 134, SIGABRT from terminate), and ten minutes later the master is "
            "taken down by the NCCL watchdog. The worker's node p4d-n14 shows an Xid 74 (NVLink) Node event two "
            "seconds before (the event text is illustrative). The first failing pod decides and its node has a GPU "
            "hardware fault: NODE_FAILURE naming worker-2, Xid 74 and the node (the snapshot keeps two of the pods)."
        ),
        source="https://github.com/pytorch/pytorch/issues/58155",
        now=now,
        ask={
            "text": "a100-pretrain-4node crashed after 4 days, NCCL watchdog on master",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("NODE_FAILURE", [f"{name}-worker-2", "74", "p4d-n14"]),
    )


@case
def app_class_xid13_on_first_worker_node() -> dict[str, Any]:
    slug, now = "worker-illegal-instruction-app-class-xid13-43-on-node", "2026-08-06T12:00:00Z"
    name, img = "grug-512gpu", "registry.example.com/marin/grug:2026.08"
    created, run_at = "2026-08-05T20:00:00Z", "2026-08-05T20:06:00Z"
    xid, w_end, m_end = "2026-08-06T07:31:05Z", "2026-08-06T07:31:06Z", "2026-08-06T07:31:40Z"
    wlog = (
        "jax.errors.JaxRuntimeError: INTERNAL: CUDA error: : CUDA_ERROR_ILLEGAL_INSTRUCTION: an illegal instruction "
        "was encountered\n"
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        for n, x in ((13, xid), (43, at(xid, seconds=1))):
            c.k8s_event(
                "gb200-r3-n12",
                "XidError",
                f"NVRM: Xid (PCI:0018:01:00): {n}, pid=2211, name=python, Graphics Exception",
                x,
                kind="Node",
                component="nvidia-dcgm-exporter",
            )

    c, _ = _two_pod(
        slug,
        project="marin",
        pid="7",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        first=(f"{name}-worker-5", "gb200-r3-n12", terminated(1, "Error", run_at, w_end), wlog, "worker"),
        later=[
            (
                f"{name}-master-0",
                "gb200-r1-n01",
                terminated(1, "Error", run_at, m_end),
                "shutdown barrier failed: a peer task exited\n",
                "master",
            )
        ],
        gpu=4,
        memory="800Gi",
        command="python -m marin.grug.train --config grug_512.yaml",
        now=now,
        extra=ev,
        node_kw={"gpus": 4, "product": "NVIDIA-GB200"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A 512-GPU GB200 run: worker-5's rank dies with CUDA_ERROR_ILLEGAL_INSTRUCTION and the gang aborts at "
            "the shutdown barrier. Its node shows Xid 13 and Xid 43 (the report: 'Xid 13 — user application fault: "
            "illegal memory access, out-of-range arrays, or instruction errors'; 'Xid 43 — GPU stopped processing "
            "after a software-induced fault'). These are application-class Xids: the first failing pod's own "
            "program, CRASH_APP_ERROR naming worker-5, not a GPU hardware fault."
        ),
        source="https://github.com/marin-community/marin/issues/7344",
        now=now,
        ask={
            "text": "grug-512gpu died, Xid alerts on the node, is the GPU bad?",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("CRASH_APP_ERROR", [f"{name}-worker-5", "CUDA_ERROR_ILLEGAL_INSTRUCTION"]),
    )


@case
def spot_worker_node_lost_first() -> dict[str, Any]:
    slug, now = "spot-worker-node-notready-first-master-nccl-later", "2022-04-20T10:00:00Z"
    name, img = "resnet-ddp-spot", "registry.example.com/cv/resnet-ddp:1.11"
    created, run_at = "2022-04-20T07:00:00Z", "2022-04-20T07:03:00Z"
    lost, evicted, m_end = "2022-04-20T08:40:02Z", "2022-04-20T08:45:10Z", "2022-04-20T08:40:41Z"
    node = "ip-172-31-23-131.ec2.internal"
    mlog = (
        "(node-0 pid=26831) Local Rank: 0, Epoch: 10, Training ...\n"
        "RuntimeError: NCCL communicator was aborted on rank 0. Original reason for failure was: NCCL error: remote "
        "process exited or there was a network error\n"
    )
    w = f"{name}-worker-0"
    not_ready = [
        {
            "type": "Ready",
            "status": "Unknown",
            "reason": "NodeStatusUnknown",
            "message": "Kubelet stopped posting node status.",
            "lastHeartbeatTime": at(lost, seconds=-40),
            "lastTransitionTime": lost,
        },
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        c.k8s_event(
            node,
            "NodeNotReady",
            f"Node {node} status is now: NodeNotReady",
            lost,
            kind="Node",
            type_="Normal",
            component="node-controller",
        )
        c.event(e, "NodeNotReady", "Node is not ready", at(lost, seconds=3), obj=w, source="node-controller")
        c.event(
            e,
            "TaintManagerEviction",
            f"Marking for deletion Pod {c.ns}/{w}",
            evicted,
            obj=w,
            type_="Normal",
            source="taint-controller",
        )

    pods = [
        P(
            w,
            node,
            [C("pytorch", img, running(run_at), gpu=1, memory="60Gi")],
            phase="Running",
            t1="Unknown",
            updated=lost,
        ),
        P(
            f"{name}-master-0",
            "ip-172-31-20-7.ec2.internal",
            [C("pytorch", img, terminated(1, "Error", run_at, m_end), gpu=1, memory="60Gi", log=mlog)],
            replica="master",
            completed=m_end,
        ),
    ]
    c, _ = _torch_job(
        slug,
        project="cv",
        pid="71",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=evicted,
        workers=1,
        gpu=1,
        memory="60Gi",
        command="torchrun --nnodes=2 train_ddp.py",
        pods=pods,
        now=now,
        extra=ev,
        node_kw={"gpus": 1, "product": "Tesla-T4"},
    )
    c.kube["nodes"][0]["status"]["conditions"] = not_ready + [
        cnd for cnd in c.kube["nodes"][0]["status"]["conditions"] if cnd["type"] != "Ready"
    ]
    return _doc(
        c,
        "distributed",
        description=(
            "A 2-node DDP run on spot instances: the worker's node is lost at 08:40:02 ('Kubelet stopped posting "
            "node status.', NodeNotReady, the pod's own 'Node is not ready' event at 08:40:05; it stays "
            "Running/Unknown until the taint manager marks it for deletion five minutes later); the master aborts "
            "at 08:40:41 on 'remote process exited or there was a network error'. The worker's node went first: "
            "NODE_FAILURE naming the worker and its node, the master's NCCL error a consequence."
        ),
        source="https://github.com/skypilot-org/skypilot/issues/825",
        now=now,
        ask={"text": "resnet-ddp-spot master NCCL error, why?", "workload_name": name, "intent": "terminal"},
        expect=_expect("NODE_FAILURE", [w, node]),
    )


# ============================================================================ multi-container pods
def _mc(
    slug: str,
    *,
    project: str,
    pid: str,
    name: str,
    img: str,
    created: str,
    run_at: str,
    pod: P,
    now: str,
    type_: str = "Training",
    phase: str = "Running",
    phase_at: str | None = None,
    memory: str = "32Gi",
    gpu: float = 1,
    command: str = "python train.py",
    k8s_phase: str | None = None,
    phase_message: str = "",
    extra: Callable[[RunaiCase, dict[str, Any]], None] | None = None,
    restart_policy: str = "Never",
) -> tuple[RunaiCase, dict[str, Any]]:
    """A one-pod workload whose pod has sidecars or init containers; history Pending, Scheduled, Running, extra."""
    c = RunaiCase(slug, project=project, project_id=pid)
    e = c.workload(
        name,
        created=created,
        phase=phase,
        phase_at=phase_at or run_at,
        image=img,
        type_=type_,
        gpu=gpu,
        memory=memory,
        command=command,
        k8s_phase=k8s_phase,
        phase_message=phase_message,
        running_pods=1 if phase == "Running" else 0,
        restart_policy=restart_policy,
    )
    c.phase(e, "Pending", created)
    scheduled(c, e, {pod.name: pod.node} if pod.node else {}, at(created, seconds=3))
    if phase != "Initializing":
        c.phase(e, "Initializing", at(created, seconds=4))
        c.phase(e, "Running", run_at)
    else:
        c.phase(e, "Initializing", run_at)
    if extra:
        extra(c, e)
    if phase in ("Failed", "Completed"):
        c.phase(e, phase, phase_at or run_at, phase_message)
    add_pods(
        c,
        e,
        [pod],
        workload=name,
        created=created,
        run_at=run_at,
        now=now,
        owner_kind="InferenceWorkload" if type_ == "Inference" else "TrainingWorkload",
    )
    return c, e


def _backoff(c: RunaiCase, e: dict[str, Any], pod: str, cname: str, when: str, count: int, first: str) -> None:
    c.event(
        e,
        "BackOff",
        f"Back-off restarting failed container {cname} in pod {pod}_{c.ns}",
        when,
        obj=pod,
        count=count,
        first=first,
    )


def _sidecar_oom_loop(
    slug: str,
    *,
    project: str,
    pid: str,
    name: str,
    img: str,
    sidecar: str,
    sidecar_img: str,
    limit: str,
    created: str,
    run_at: str,
    last_start: str,
    last_end: str,
    restarts: int,
    now: str,
    type_: str = "Inference",
    main: str | None = None,
    memory: str = "32Gi",
    gpu: float = 1,
    message: str | None = None,
    log: str | None = None,
) -> tuple[RunaiCase, dict[str, Any]]:
    """A Running workload whose pod's sidecar is in CrashLoopBackOff, OOMKilled at its own limit each time."""
    pod = f"{name}-0-0"
    main = main or ("kserve-container" if type_ == "Inference" else name)
    last = terminated(137, "OOMKilled", last_start, last_end, message=message)
    p = P(
        pod,
        "gpu-node-11",
        [
            C(main, img, running(run_at), memory=memory, gpu=gpu, log=""),
            C(
                sidecar,
                sidecar_img,
                waiting(
                    "CrashLoopBackOff", f"back-off 5m0s restarting failed container={sidecar} pod={pod}_runai-{project}"
                ),
                memory=limit,
                last=last,
                restarts=restarts,
                prev_log=log,
            ),
        ],
        phase="Running",
        t1="CrashLoopBackOff",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, pod, sidecar, at(last_end, seconds=2), restarts, at(run_at, minutes=12))

    return _mc(
        slug,
        project=project,
        pid=pid,
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        type_=type_,
        memory=memory,
        gpu=gpu,
        k8s_phase="Running",
        extra=ev,
    )


@case
def istio_proxy_oom_loop_inference() -> dict[str, Any]:
    slug, now = "istio-proxy-sidecar-oomkilled-crashloop-inference", "2022-05-26T10:00:00Z"
    name = "recsys-infer"
    c, _ = _sidecar_oom_loop(
        slug,
        project="recsys",
        pid="52",
        name=name,
        img="registry.example.com/recsys/triton-ranker:22.04",
        sidecar="istio-proxy",
        sidecar_img="docker.io/istio/proxyv2:1.13.4",
        limit="256Mi",
        created="2022-05-25T08:00:00Z",
        run_at="2022-05-25T08:02:00Z",
        last_start="2022-05-26T09:41:12Z",
        last_end="2022-05-26T09:52:40Z",
        restarts=17,
        now=now,
        memory="48Gi",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "An inference workload with Istio injection shows intermittent gaps in its istio_request_duration "
            "metrics; the application pod's sidecar istio-proxy 'is getting killed with Reason: OOMKilled - exit "
            "code: 137' over and over (CrashLoopBackOff, 17 restarts) while the model container stays Ready. The "
            "workload is Running and its status confirms a crash loop now, so it is diagnosed whatever the question "
            "says: OOM_KILLED, naming istio-proxy and its own 256Mi limit (illustrative; the report gives none), not "
            "the model container's 48Gi."
        ),
        source="https://github.com/istio/istio/issues/39139",
        now=now,
        ask={"text": "why are there gaps in the recsys-infer metrics?", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["istio-proxy", "256Mi", "OOMKilled"]),
    )


@case
def istio_proxy_grpc_stream_oom_1g() -> dict[str, Any]:
    slug, now = "istio-proxy-oomkilled-at-1g-grpc-stream-says-fail", "2022-12-23T10:00:00Z"
    name = "grpc-chunk-server"
    c, _ = _sidecar_oom_loop(
        slug,
        project="data",
        pid="33",
        name=name,
        img="registry.example.com/data/chunk-server:3.1",
        sidecar="istio-proxy",
        sidecar_img="docker.io/istio/proxyv2:1.16.0",
        limit="1Gi",
        created="2022-12-23T06:00:00Z",
        run_at="2022-12-23T06:01:00Z",
        last_start="2022-12-23T09:31:00Z",
        last_end="2022-12-23T09:48:33Z",
        restarts=6,
        now=now,
        memory="16Gi",
        gpu=0,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A gRPC service streams 3-4GB of binary data in chunks to clients outside the mesh; with 8 long-running "
            "clients the Istio-Proxy sidecar gets OOMKilled (the default memory limit is 1.0 GB, written here as "
            "1Gi) and restarts in a loop. The question says 'fail' but the workload is Running with a crash loop "
            "confirmed now: diagnosed as the current failure, OOM_KILLED naming istio-proxy and its 1Gi limit."
        ),
        source="https://github.com/istio/istio/issues/42560",
        now=now,
        ask={"text": "why did grpc-chunk-server fail under load?", "workload_name": name, "intent": "terminal"},
        expect=_expect("OOM_KILLED", ["istio-proxy", "1Gi", "OOMKilled"]),
    )


@case
def telegraf_sidecar_oom_training() -> dict[str, Any]:
    slug, now = "telegraf-istio-sidecar-oomkilled-training-pod", "2022-09-08T12:00:00Z"
    name = "asr-conformer-train"
    c, _ = _sidecar_oom_loop(
        slug,
        project="speech",
        pid="27",
        name=name,
        img="nvcr.io/nvidia/nemo:22.08",
        sidecar="telegraf-istio",
        sidecar_img="docker.io/library/telegraf:1.23",
        limit="200Mi",
        created="2022-09-08T08:00:00Z",
        run_at="2022-09-08T08:03:00Z",
        last_start="2022-09-08T11:40:02Z",
        last_end="2022-09-08T11:50:09Z",
        restarts=21,
        now=now,
        type_="Training",
        memory="120Gi",
        gpu=4,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A training pod gets the telegraf-operator's telegraf-istio sidecar injected (--enable-istio-injection"
            "=true); its default memory limit is 200Mi and the OOM killer kills the sidecar approximately every 10 "
            "minutes (CrashLoopBackOff, 21 restarts) while the trainer keeps running. OOM_KILLED, naming "
            "telegraf-istio and its 200Mi limit, not the trainer's 120Gi."
        ),
        source="https://github.com/influxdata/telegraf-operator/issues/107",
        now=now,
        ask={"text": "asr-conformer-train pod keeps restarting", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["telegraf-istio", "200Mi", "OOMKilled"]),
    )


@case
def linkerd_proxy_oom_regular_basis() -> dict[str, Any]:
    slug, now = "linkerd-proxy-oomkilled-regularly-stable-6mb", "2021-02-17T12:00:00Z"
    name = "feature-api"
    msg = 'time="2021-02-17T11:22:47Z" level=info msg="running version edge-21.1.2"'
    c, _ = _sidecar_oom_loop(
        slug,
        project="platform",
        pid="15",
        name=name,
        img="registry.example.com/platform/feature-api:5.2",
        sidecar="linkerd-proxy",
        sidecar_img="824725208937.dkr.ecr.eu-central-1.amazonaws.com/linkerd2-proxy:v2.132.0-no-authority",
        limit="64Mi",
        created="2021-02-16T08:00:00Z",
        run_at="2021-02-16T08:01:00Z",
        last_start="2021-02-17T11:22:47Z",
        last_end="2021-02-17T11:23:06Z",
        restarts=9,
        now=now,
        memory="8Gi",
        gpu=0,
        message=msg,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "The linkerd proxy is getting killed with OOM on a regular basis although its memory usage before the "
            "kill is stable at ~6MB; kubectl describe shows linkerd-proxy with Last State Terminated, Reason "
            'OOMKilled, Message \'time="2021-02-17T11:22:47Z" level=info msg="running version edge-21.1.2"\', and '
            "it is now in CrashLoopBackOff. OOM_KILLED naming linkerd-proxy and its own limit (64Mi, illustrative)."
        ),
        source="https://github.com/linkerd/linkerd2/issues/5764",
        now=now,
        ask={"text": "is feature-api crashing?", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["linkerd-proxy", "64Mi", "OOMKilled"]),
    )


@case
def linkerd_proxy_oom_once_ready_again() -> dict[str, Any]:
    slug, now = "linkerd-proxy-oomkilled-once-ready-again-ask-past-run", "2021-04-28T12:00:00Z"
    name, img = "grpc-ingress-api", "registry.example.com/edge/grpc-api:1.9"
    created, run_at = "2021-04-27T09:00:00Z", "2021-04-27T09:01:00Z"
    pod = f"{name}-0-0"
    p = P(
        pod,
        "cpu-node-04",
        [
            C(name, img, running(run_at), memory="2Gi", log=""),
            C(
                "linkerd-proxy",
                "cr.l5d.io/linkerd/proxy:stable-2.10.1",
                running("2021-04-28T07:14:12Z"),
                memory="250Mi",
                last=terminated(137, "OOMKilled", run_at, "2021-04-28T07:14:09Z"),
                restarts=1,
            ),
        ],
        phase="Running",
        t1="Running",
    )
    c, _ = _mc(
        slug,
        project="edge",
        pid="21",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        type_="Inference",
        memory="2Gi",
        gpu=0,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A pod receiving gRPC ingress traffic from an AWS ALB: its linkerd-proxy sidecar (limit 250 MB, the "
            "default adapted from values-ha.yaml) was OOM killed once this morning and restarted; it is Running and "
            "Ready again, the app never restarted. One past restart of a container that is ready again is not a "
            "crash loop, whatever the question asks: ask_past_run."
        ),
        source="https://github.com/linkerd/linkerd2/issues/6066",
        now=now,
        ask={"text": "why did grpc-ingress-api get OOM killed?", "workload_name": name, "intent": None},
        expect=_expect(None, [], outcome="ask_past_run"),
    )


@case
def fluent_bit_log_router_oom_training() -> dict[str, Any]:
    slug, now = "log-router-fluent-bit-sidecar-oomkilled-training", "2021-12-14T07:00:00Z"
    name = "ctr-ranker-train"
    log = "[2021/12/14 06:38:32] [debug] [input:tail:tail.0] inode=519581 events: IN_MODIFY \n" * 3
    c, _ = _sidecar_oom_loop(
        slug,
        project="ads",
        pid="48",
        name=name,
        img="registry.example.com/ads/ranker-train:4.0",
        sidecar="log-router",
        sidecar_img="public.ecr.aws/aws-observability/aws-for-fluent-bit:2.21.1",
        limit="100Mi",
        created="2021-12-14T02:00:00Z",
        run_at="2021-12-14T02:02:00Z",
        last_start="2021-12-14T06:23:08Z",
        last_end="2021-12-14T06:39:00Z",
        restarts=12,
        now=now,
        type_="Training",
        memory="64Gi",
        gpu=2,
        log=log,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A training pod ships its logs to CloudWatch through an aws-for-fluent-bit sidecar (cloudwatch_logs "
            "output). The sidecar's Last State is 'Terminated, Reason: OOMKilled, Exit Code: 137, Started: Tue, 14 "
            "Dec 2021 14:23:08 +0800, Finished: 14:39:00' and it restarts in a loop; its logs before the kill look "
            "fine. OOM_KILLED naming the log-router sidecar and its own limit (100Mi, illustrative), not the "
            "trainer's 64Gi."
        ),
        source="https://github.com/aws/aws-for-fluent-bit/issues/274",
        now=now,
        ask={"text": "ctr-ranker-train logs keep stopping", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["log-router", "100Mi", "OOMKilled"]),
    )


@case
def logging_sidecar_oom_main_completed_pod_failed() -> dict[str, Any]:
    slug, now = "logging-sidecar-oomkilled-main-completed-pod-failed", "2024-10-08T08:00:00Z"
    name, img = "nightly-embed-batch", "registry.example.com/search/embed-batch:7.3"
    created, run_at = "2024-10-08T03:00:00Z", "2024-10-08T03:02:00Z"
    oom, main_end = "2024-10-08T05:11:23Z", "2024-10-08T05:40:02Z"
    pod = f"{name}-0-0"
    p = P(
        pod,
        "gpu-l4-09",
        [
            C(
                name,
                img,
                terminated(0, "Completed", run_at, main_end),
                memory="24Gi",
                gpu=1,
                log="wrote 1.2M vectors\n",
            ),
            C(
                "newrelic-logging",
                "newrelic/newrelic-fluentbit-output:2.0.0",
                terminated(137, "OOMKilled", run_at, oom),
                memory="256Mi",
                log="[2024/10/08 05:11:20] [ warn] [input] tail.0 paused (mem buf overlimit)\n",
            ),
        ],
        completed=main_end,
        t1="Error",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        c.k8s_event(
            "gpu-l4-09",
            "OOMKilling",
            "Memory cgroup out of memory: Killed process 1360652 (flb-pipeline) "
            "total-vm:1307336kB, anon-rss:259736kB, file-rss:19648kB, shmem-rss:0kB, UID:0 pgtables:1104kB "
            "oom_score_adj:996",
            oom,
            kind="Node",
            component="kernel-monitor",
        )
        pod_failed(c, e, pod, "newrelic-logging", "OOMKilled", 137, at(main_end, seconds=1))

    c, _ = _mc(
        slug,
        project="search",
        pid="29",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        phase="Failed",
        phase_at=at(main_end, seconds=3),
        memory="24Gi",
        extra=ev,
        phase_message=f"Pod {pod} failed: container newrelic-logging terminated with reason OOMKilled (exit code 137)",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A nightly batch job with a New Relic fluent-bit logging sidecar limited to 256Mi: the node's kernel "
            "logs 'Memory cgroup out of memory: Killed process 1360652 (flb-pipeline) ...' and the sidecar is "
            "OOMKilled (137); the job's own container finishes with exit 0 half an hour later, but the pod (never "
            "restarted) is Failed because a container failed. OOM_KILLED, naming newrelic-logging and its 256Mi "
            "limit; the main container did not fail."
        ),
        source="https://github.com/newrelic/helm-charts/issues/1500",
        now=now,
        ask={"text": "nightly-embed-batch failed but the job finished?", "workload_name": name, "intent": "terminal"},
        expect=_expect("OOM_KILLED", ["newrelic-logging", "256Mi", "OOMKilled"]),
    )


def _init_oom(
    slug: str,
    *,
    project: str,
    pid: str,
    name: str,
    img: str,
    init: str,
    init_img: str,
    limit: str,
    created: str,
    run_at: str,
    now: str,
    exit_code: int = 137,
    loop: bool = True,
    memory: str = "32Gi",
    gpu: float = 1,
    restarts: int = 4,
) -> tuple[RunaiCase, dict[str, Any]]:
    """An init container OOMKilled at its own limit: in a loop (Initializing) or once with restartPolicy Never."""
    pod = f"{name}-0-0"
    first_end = at(run_at, seconds=9)
    if loop:
        state = waiting(
            "CrashLoopBackOff", f"back-off 1m20s restarting failed container={init} pod={pod}_runai-{project}"
        )
        last = terminated(exit_code, "OOMKilled", at(run_at, minutes=4), at(run_at, minutes=4, seconds=9))
    else:
        state, last, restarts = terminated(exit_code, "OOMKilled", run_at, first_end), None, 0
    p = P(
        pod,
        "gpu-node-21",
        [C(name, img, waiting("PodInitializing"), memory=memory, gpu=gpu)],
        init=[C(init, init_img, state, memory=limit, last=last, restarts=restarts)],
        phase="Pending" if loop else "Failed",
        t1="Init:CrashLoopBackOff" if loop else "Init:OOMKilled",
        completed=None if loop else first_end,
        restart_policy="Always" if loop else "Never",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        if loop:
            _backoff(c, e, pod, init, at(run_at, minutes=4, seconds=11), restarts, at(run_at, seconds=11))
        else:
            pod_failed(c, e, pod, init, "OOMKilled", exit_code, at(first_end, seconds=1))

    msg = "" if loop else f"Pod {pod} failed: container {init} terminated with reason OOMKilled (exit code {exit_code})"
    return _mc(
        slug,
        project=project,
        pid=pid,
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        phase="Initializing" if loop else "Failed",
        phase_at=run_at if loop else at(first_end, seconds=3),
        memory=memory,
        gpu=gpu,
        extra=ev,
        k8s_phase="Init:CrashLoopBackOff" if loop else "Init:OOMKilled",
        phase_message=msg,
        restart_policy="Always" if loop else "Never",
    )


@case
def copy_vault_env_init_oom() -> dict[str, Any]:
    slug, now = "copy-vault-env-init-container-oomkilled-blocks-start", "2024-12-17T14:00:00Z"
    name = "payments-scoring"
    c, _ = _init_oom(
        slug,
        project="fintech",
        pid="83",
        name=name,
        img="registry.example.com/fintech/scoring:3.3",
        init="copy-vault-env",
        init_img="ghcr.io/bank-vaults/vault-env:v1.21.7",
        limit="64Mi",
        created="2024-12-17T13:40:00Z",
        run_at="2024-12-17T13:40:06Z",
        now=now,
        restarts=5,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "After the Vault Secrets Webhook bumped vault-env from 1.21.6 to 1.21.7, the injected copy-vault-env "
            "init container 'is keep being restarted but still getting: terminated Reason: OOMKilled - exit code: "
            "137', which blocks the application pod from starting (Initializing, Init:CrashLoopBackOff). OOM_KILLED, "
            "naming copy-vault-env and its own 64Mi limit (illustrative), not the workload's 32Gi."
        ),
        source="https://github.com/bank-vaults/vault-env/issues/392",
        now=now,
        ask={"text": "payments-scoring won't start", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["copy-vault-env", "64Mi", "OOMKilled"]),
    )


@case
def datadog_lib_init_oom_job_failed() -> dict[str, Any]:
    slug, now = "datadog-lib-java-init-oomkilled-job-failed", "2024-10-03T09:00:00Z"
    name = "spark-feature-join"
    c, _ = _init_oom(
        slug,
        project="features",
        pid="91",
        name=name,
        img="registry.example.com/features/spark-join:3.5",
        init="datadog-lib-java-init",
        init_img="gcr.io/datadoghq/dd-lib-java-init:v1.39.0",
        limit="50Mi",
        created="2024-10-03T08:30:00Z",
        run_at="2024-10-03T08:30:05Z",
        now=now,
        loop=False,
        memory="48Gi",
        gpu=0,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "Datadog's admission controller injects the datadog-lib-java-init container (auto-instrumentation, beta) "
            "into a batch job's pod; it 'dies with OOMKilled' (the maintainers later raised the default "
            "requests/limits to 100Mi; this pod has 50Mi, the value of the DD_ADMISSION_CONTROLLER_AUTO_"
            "INSTRUMENTATION_INIT_RESOURCES_MEMORY example). restartPolicy Never: the pod and the job fail before "
            "the main container starts. OOM_KILLED naming the init container and its 50Mi limit."
        ),
        source="https://github.com/DataDog/helm-charts/issues/1519",
        now=now,
        ask={"text": "why did spark-feature-join fail?", "workload_name": name, "intent": "terminal"},
        expect=_expect("OOM_KILLED", ["datadog-lib-java-init", "50Mi", "OOMKilled"]),
    )


@case
def vcluster_init_cp_oom_128mi() -> dict[str, Any]:
    slug, now = "vcluster-init-cp-k3s-oomkilled-128mi", "2023-12-18T12:00:00Z"
    name = "lde-dep-test"
    c, _ = _init_oom(
        slug,
        project="devenv",
        pid="12",
        name=name,
        img="registry.example.com/devenv/syncer:0.18",
        init="vcluster",
        init_img="rancher/k3s:v1.28.2-k3s1",
        limit="128Mi",
        created="2023-12-18T11:50:00Z",
        run_at="2023-12-18T11:50:04Z",
        now=now,
        memory="2Gi",
        gpu=0,
        restarts=3,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "vcluster create fails with frequent OOMKilled failures: the rendered init container 'vcluster' runs "
            "'cp /bin/k3s /k3s-binary/k3s' with resources limits cpu 100m, memory 128Mi and is OOMKilled in a loop "
            "(Init:CrashLoopBackOff). OOM_KILLED naming the init container vcluster and its 128Mi limit."
        ),
        source="https://github.com/loft-sh/vcluster/issues/1420",
        now=now,
        ask={"text": "lde-dep-test is stuck initializing", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["vcluster", "128Mi", "OOMKilled"]),
    )


@case
def navigator_init_cp_oom_8mi() -> dict[str, Any]:
    slug, now = "cassandra-init-cp-oomkilled-8mi-limit", "2018-03-21T12:00:00Z"
    name = "cass-cluster-ringnodes-0"
    c, _ = _init_oom(
        slug,
        project="data",
        pid="33",
        name=name,
        img="docker.io/library/cassandra:3.11.2",
        init="install-pilot",
        init_img="quay.io/jetstack/navigator-pilot-cassandra:v0.1.0",
        limit="8Mi",
        created="2018-03-21T11:30:00Z",
        run_at="2018-03-21T11:30:04Z",
        now=now,
        memory="4Gi",
        gpu=0,
        restarts=6,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "Cassandra pods aren't starting because the `cp` process in the init container (here install-pilot, "
            "which copies the pilot binary) is being oom-killed; the limits chosen are cpu 10m, memory 8Mi. "
            "OOM_KILLED naming the init container and its 8Mi limit, not the Cassandra container's 4Gi."
        ),
        source="https://github.com/jetstack/navigator/issues/297",
        now=now,
        ask={"text": "why is cass-cluster-ringnodes-0 not starting?", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["install-pilot", "8Mi", "OOMKilled"]),
    )


@case
def init_oomkilled_exit_code_zero() -> dict[str, Any]:
    slug, now = "init-container-oomkilled-exit-code-0-pod-failed", "2021-08-19T14:00:00Z"
    name = "feature-prep-job"
    c, _ = _init_oom(
        slug,
        project="ml-team",
        pid="212",
        name=name,
        img="registry.example.com/ml/prep:1.4",
        init="warm-cache",
        init_img="registry.example.com/ml/cache-warmer:0.3",
        limit="100Mi",
        created="2021-08-19T13:22:20Z",
        run_at="2021-08-19T13:22:29Z",
        now=now,
        loop=False,
        exit_code=0,
        memory="16Gi",
        gpu=0,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "An init container whose child process is OOM-killed ends 'State: Terminated, Reason: OOMKilled, Exit "
            "Code: 0' (the report; since the fix in kubernetes PR 104650 'Pod will not start when Init container "
            "was OOM killed'). With restartPolicy Never the pod fails before the main container starts. OOMKilled "
            "wins whatever the exit code, 0 included: OOM_KILLED naming the init container and its 100Mi limit "
            "(illustrative)."
        ),
        source="https://github.com/kubernetes/kubernetes/issues/104454",
        now=now,
        ask={"text": "feature-prep-job failed with exit code 0?", "workload_name": name, "intent": "terminal"},
        expect=_expect("OOM_KILLED", ["warm-cache", "100Mi", "OOMKilled"]),
    )


@case
def consul_connect_inject_init_oom() -> dict[str, Any]:
    slug, now = "consul-connect-inject-init-oomkilled-after-upgrade", "2020-06-26T12:00:00Z"
    name = "apiserver"
    c, _ = _init_oom(
        slug,
        project="platform",
        pid="15",
        name=name,
        img="registry.example.com/platform/apiserver:2.8",
        init="consul-connect-inject-init",
        init_img="consul:1.8.0",
        limit="25Mi",
        created="2020-06-26T11:40:00Z",
        run_at="2020-06-26T11:40:05Z",
        now=now,
        memory="4Gi",
        gpu=0,
        restarts=7,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "After moving to consul-k8s 0.16.0, resource limits were added to the injected init containers and "
            "the 'cp' in consul-connect-inject-init is OOMKilled (Last State: Terminated, Reason: OOMKilled, Exit "
            "Code: 137), looping in Init:CrashLoopBackOff. OOM_KILLED naming consul-connect-inject-init and its own "
            "limit (25Mi, illustrative)."
        ),
        source="https://github.com/hashicorp/consul-k8s/issues/283",
        now=now,
        ask={"text": "apiserver stuck in init", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["consul-connect-inject-init", "25Mi", "OOMKilled"]),
    )


# ============================================================================ startup probes and sidecar crashes
def _probe(path: str = "/healthz", port: int = 8080, threshold: int = 3, period: int = 10) -> dict[str, Any]:
    return {"httpGet": {"path": path, "port": port}, "failureThreshold": threshold, "periodSeconds": period}


@case
def startup_probe_kill_crashloop() -> dict[str, Any]:
    slug, now = "startup-probe-kills-model-server-crashloop", "2021-03-03T12:00:00Z"
    name, img = "llm-serve-13b", "registry.example.com/llm/text-gen-server:0.9"
    created, run_at = "2021-03-03T10:00:00Z", "2021-03-03T10:00:40Z"
    pod = f"{name}-0-0"
    probe = {"exec": {"command": ["false"]}, "initialDelaySeconds": 20, "periodSeconds": 10, "failureThreshold": 5}
    p = P(
        pod,
        "gpu-a10-02",
        [
            C(
                "c1",
                img,
                waiting("CrashLoopBackOff", f"back-off 2m40s restarting failed container=c1 pod={pod}_runai-genai"),
                memory="48Gi",
                gpu=1,
                last=terminated(137, "Error", "2021-03-03T11:48:02Z", "2021-03-03T11:49:12Z"),
                restarts=8,
                extra={"startupProbe": probe},
                prev_log="loading shards 3/6\n",
            ),
            C("metrics-exporter", "registry.example.com/obs/exporter:1.2", running(run_at), memory="128Mi", log=""),
        ],
        phase="Running",
        t1="CrashLoopBackOff",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        c.event(
            e,
            "Unhealthy",
            "Startup probe failed: ",
            "2021-03-03T11:49:02Z",
            obj=pod,
            count=40,
            first="2021-03-03T10:01:00Z",
        )
        c.event(
            e,
            "Killing",
            "Container c1 failed startup probe, will be restarted",
            "2021-03-03T11:49:02Z",
            obj=pod,
            type_="Normal",
            count=8,
            first="2021-03-03T10:01:30Z",
        )
        _backoff(c, e, pod, "c1", "2021-03-03T11:49:14Z", 8, "2021-03-03T10:02:00Z")

    c, _ = _mc(
        slug,
        project="genai",
        pid="61",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        type_="Inference",
        memory="48Gi",
        k8s_phase="Running",
        extra=ev,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A container with an exec startupProbe (command 'false', initialDelaySeconds 20, periodSeconds 10, "
            "failureThreshold 5) restarts again and again: the kubelet's events 'Startup probe failed: ' and "
            "'Container c1 failed startup probe, will be restarted', exit 137 without OOMKilled, CrashLoopBackOff "
            "(the report is about the restarts happening without back-off and losing events). The kubelet killed "
            "it for its probe: CRASH_APP_ERROR, quoting the startup probe, not UNKNOWN and not OOM."
        ),
        source="https://github.com/kubernetes/kubernetes/issues/99697",
        now=now,
        ask={"text": "llm-serve-13b restarts every few minutes", "workload_name": name, "intent": None},
        expect=_expect("CRASH_APP_ERROR", ["c1", "failed startup probe"]),
    )


@case
def startup_probe_failed_once_then_ready() -> dict[str, Any]:
    slug, now = "startup-probe-failed-once-then-ready-ask-past-run", "2021-02-05T12:00:00Z"
    name, img = "mysqlpod", "mysql:5.6"
    created, run_at = "2021-02-05T11:50:00Z", "2021-02-05T11:50:03Z"
    pod = f"{name}-0-0"
    probe = {"exec": {"command": ["mysqladmin", "ping"]}, "periodSeconds": 10, "failureThreshold": 30}
    p = P(
        pod,
        "minikube",
        [
            C("mysql", img, running(run_at), memory="2Gi", extra={"startupProbe": probe}, log=""),
            C("mysqld-exporter", "prom/mysqld-exporter:v0.12.1", running(run_at), memory="64Mi", log=""),
        ],
        phase="Running",
        t1="Running",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        c.event(
            e,
            "Unhealthy",
            "Startup probe failed: Warning: Using a password on the command line interface can "
            "be insecure.\nmysqladmin: connect to server at 'localhost' failed\nerror: 'Can't connect to local "
            "MySQL server through socket '/var/run/mysqld/mysqld.sock' (2)'",
            at(run_at, seconds=2),
            obj=pod,
        )

    c, _ = _mc(
        slug,
        project="data-layer",
        pid="44",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        type_="Inference",
        memory="2Gi",
        gpu=0,
        extra=ev,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A startupProbe fails once ('Startup probe failed: ... mysqladmin: connect to server at 'localhost' "
            "failed') while mysqld is still starting, then the pod becomes Ready and stays healthy with ZERO "
            "restarts (the report thought the probe should have killed it; failureThreshold is not reached). The "
            "workload is Running and healthy: ask_past_run, whatever the question says."
        ),
        source="https://github.com/kubernetes/kubernetes/issues/98780",
        now=now,
        ask={"text": "mysqlpod startup probe failed, why did it fail?", "workload_name": name, "intent": None},
        expect=_expect(None, [], outcome="ask_past_run"),
    )


@case
def startup_probe_kill_explains_137_job_failed() -> dict[str, Any]:
    slug, now = "startup-probe-kill-explains-137-restart-never", "2026-09-02T12:00:00Z"
    name, img = "influxdb3-backfill", "quay.io/influxdb/influxdb3-enterprise:3.4"
    created, run_at = "2026-09-02T10:00:00Z", "2026-09-02T10:00:20Z"
    pod, kill = f"{name}-0-0", "2026-09-02T10:03:00Z"
    probe = _probe("/health", 8181, threshold=30, period=5) | {"initialDelaySeconds": 10}
    p = P(
        pod,
        "cpu-node-02",
        [
            C(
                "influxdb3",
                img,
                terminated(137, "Error", run_at, at(kill, seconds=2)),
                memory="16Gi",
                extra={"startupProbe": probe},
                log="replaying WAL segment 412/1880\n",
            ),
            C(
                "telegraf",
                "telegraf:1.36",
                terminated(0, "Completed", run_at, at(kill, seconds=3)),
                memory="128Mi",
                log="",
            ),
        ],
        completed=at(kill, seconds=3),
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        c.event(
            e,
            "Unhealthy",
            'Startup probe failed: Get "http://10.42.3.17:8181/health": dial tcp '
            "10.42.3.17:8181: connect: connection refused",
            at(kill, seconds=-1),
            obj=pod,
            count=30,
            first=at(run_at, seconds=10),
        )
        c.event(
            e, "Killing", "Container influxdb3 failed startup probe, will be restarted", kill, obj=pod, type_="Normal"
        )

    c, _ = _mc(
        slug,
        project="tsdb",
        pid="36",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        phase="Failed",
        phase_at=at(kill, seconds=6),
        memory="16Gi",
        gpu=0,
        extra=ev,
        phase_message=f"Pod {pod} failed: container influxdb3 terminated with reason Error (exit code 137)",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A backfill job (restartPolicy Never) whose server replays a large WAL longer than its startup window "
            "(10s initial + 30 x 5s): the kubelet's 'Killing' event reads 'Container influxdb3 failed startup "
            "probe, will be restarted' (the PR's wording; 'Startup probe failed' alone is not sufficient) and the "
            "container ends with 137, reason Error. The kill is named by the probe: CRASH_APP_ERROR quoting the "
            "startup probe, not an OOM and not an unexplained 137."
        ),
        source="https://github.com/influxdata/helm-charts/pull/827",
        now=now,
        ask={"text": "influxdb3-backfill died with 137, out of memory?", "workload_name": name, "intent": "terminal"},
        expect=_expect("CRASH_APP_ERROR", ["influxdb3", "failed startup probe"]),
    )


@case
def cloud_sql_proxy_sidecar_crash() -> dict[str, Any]:
    slug, now = "cloud-sql-proxy-sidecar-crashloop-main-running", "2020-02-13T12:00:00Z"
    name, img = "churn-model-train", "registry.example.com/growth/churn-train:1.2"
    created, run_at = "2020-02-13T10:00:00Z", "2020-02-13T10:01:00Z"
    pod = f"{name}-0-0"
    log = (
        "2020/02/13 11:06:01 current FDs rlimit set to 32768, wanted limit is 8500. Nothing to do here.\n"
        "2020/02/13 11:06:02 unable to retrieve the active gcloud project and -instances and -projects are empty: "
        "gcloud has no active project, you can set it by running `gcloud config set project <project>`\n"
    )
    p = P(
        pod,
        "gke-gpu-pool-3",
        [
            C(name, img, running(run_at), memory="30Gi", gpu=1, log="waiting for database on 127.0.0.1:5432\n"),
            C(
                "cloud-sql-proxy",
                "gcr.io/cloudsql-docker/gce-proxy:1.16",
                waiting(
                    "CrashLoopBackOff",
                    f"back-off 5m0s restarting failed container=cloud-sql-proxy pod={pod}_runai-growth",
                ),
                memory="256Mi",
                last=terminated(1, "Error", "2020-02-13T11:06:01Z", "2020-02-13T11:06:02Z"),
                restarts=14,
                prev_log=log,
            ),
        ],
        phase="Running",
        t1="CrashLoopBackOff",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, pod, "cloud-sql-proxy", "2020-02-13T11:06:04Z", 14, "2020-02-13T10:02:00Z")

    c, _ = _mc(
        slug,
        project="growth",
        pid="26",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        memory="30Gi",
        k8s_phase="Running",
        extra=ev,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A training pod reads its features through a cloud-sql-proxy sidecar that 'exited with exit code 1' and "
            "crash-loops; its previous log ends with 'unable to retrieve the active gcloud project and -instances "
            "and -projects are empty: gcloud has no active project' (the maintainer's example of the reason the "
            "proxy prints). The trainer itself is still running. The sidecar's own program failed: CRASH_APP_ERROR "
            "naming cloud-sql-proxy and its error."
        ),
        source="https://github.com/GoogleCloudPlatform/cloud-sql-proxy/issues/351",
        now=now,
        ask={"text": "churn-model-train is waiting for the database forever", "workload_name": name, "intent": None},
        expect=_expect("CRASH_APP_ERROR", ["cloud-sql-proxy", "gcloud has no active project"]),
    )


# ============================================================================ several pods with several containers
@case
def pytorchjob_worker_init_pytorch_backoff() -> dict[str, Any]:
    slug, now = "pytorchjob-workers-init-pytorch-backoff-master-not-started", "2024-03-25T10:00:00Z"
    c = RunaiCase(slug, project="sampler", project_id="58")
    name, img = "random-exp-jw6qxmrm", "docker.io/kubeflowkatib/pytorch-mnist-cpu:latest"
    created, run_at = "2024-03-25T09:50:25Z", "2024-03-25T09:50:28Z"
    init_img = "quay.io/bharathappali/alpine:3.10"
    e = distributed(
        c,
        name,
        created=created,
        run_at=run_at,
        phase="Initializing",
        phase_at=run_at,
        image=img,
        framework="PyTorch",
        workers=2,
        gpu=0,
        memory="4Gi",
        pods_requested=3,
        command="python3 /opt/pytorch-mnist/mnist.py --epochs=1",
    )
    workers = [f"{name}-worker-{i}" for i in range(2)]
    scheduled(c, e, {w: "acorvin-hpo-poc-jfrlm-worker-0-twvtz" for w in workers}, at(created, seconds=1))
    c.phase(e, "Initializing", run_at)
    pods = []
    for i, w in enumerate(workers):
        c.event(
            e,
            "BackOff",
            f"Back-off restarting failed container init-pytorch in pod {w}_sampler"
            "(8d6860a7-204d-45c8-bb57-8d84a6cf8e66)",
            "2024-03-25T09:57:11Z",
            obj=w,
            count=3,
            first="2024-03-25T09:53:40Z",
        )
        pods.append(
            P(
                w,
                "acorvin-hpo-poc-jfrlm-worker-0-twvtz",
                [C("pytorch", img, waiting("PodInitializing"), memory="4Gi")],
                init=[
                    C(
                        "init-pytorch",
                        init_img,
                        waiting(
                            "CrashLoopBackOff",
                            f"back-off 1m20s restarting failed container=init-pytorch pod={w}_runai-sampler",
                        ),
                        memory="20Mi",
                        last=terminated(1, "Error", "2024-03-25T09:56:01Z", "2024-03-25T09:57:00Z"),
                        restarts=3,
                        prev_log=f"nslookup: can't resolve '{name}-master-0'\n" * 3,
                    )
                ],
                phase="Pending",
                t1="Init:CrashLoopBackOff",
                replica="worker",
                index=i,
                restart_policy="OnFailure",
            )
        )
    add_pods(
        c,
        e,
        pods,
        workload=name,
        created=created,
        run_at=run_at,
        now=now,
        owner_kind="DistributedWorkload",
        node_kw={"gpus": 0},
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A Katib-launched PyTorchJob on OpenShift: the worker pods are created but the master never starts; "
            "each worker's init container init-pytorch (which waits for the master's service) fails and backs off "
            "('Back-off restarting failed container init-pytorch in pod random-exp-jw6qxmrm-worker-0_sampler(...)'). "
            "The workload is Initializing with a direct init-container failure: INIT_FAILED naming init-pytorch "
            "(its nslookup log line is illustrative)."
        ),
        source="https://github.com/kubeflow/trainer/issues/2034",
        now=now,
        ask={"text": f"{name} master pod not getting started", "workload_name": name, "intent": None},
        expect=_expect("INIT_FAILED", ["init-pytorch"]),
    )


@case
def pytorchjob_worker_istio_proxy_oom_first() -> dict[str, Any]:
    slug, now = "pytorchjob-worker-istio-proxy-oomkilled-first-peers-follow", "2021-09-07T12:00:00Z"
    name, img = "bert-kf-ddp", "registry.example.com/nlp/bert-ddp:1.9"
    proxy = "docker.io/istio/proxyv2:1.9.6"
    created, run_at = "2021-09-07T08:00:00Z", "2021-09-07T08:02:00Z"
    oom, w_end, m_end = "2021-09-07T10:31:17Z", "2021-09-07T10:31:49Z", "2021-09-07T10:41:52Z"
    w, m = f"{name}-worker-0", f"{name}-master-0"
    wlog = (
        "RuntimeError: NCCL communicator was aborted on rank 1. Original reason for failure was: NCCL error: "
        "remote process exited or there was a network error\n"
    )
    pods = [
        P(
            w,
            "gpu-k80-2",
            [
                C("pytorch", img, terminated(1, "Error", run_at, w_end), gpu=4, memory="64Gi", log=wlog),
                C("istio-proxy", proxy, terminated(137, "OOMKilled", run_at, oom), memory="128Mi", log=""),
            ],
            replica="worker",
            completed=w_end,
        ),
        P(
            m,
            "gpu-k80-1",
            [
                C(
                    "pytorch",
                    img,
                    terminated(1, "Error", run_at, m_end),
                    gpu=4,
                    memory="64Gi",
                    log=watchdog(0, 120881, 600012),
                ),
                C("istio-proxy", proxy, terminated(0, "Completed", run_at, m_end), memory="128Mi", log=""),
            ],
            replica="master",
            completed=m_end,
        ),
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, w, "pytorch", "Error", 1, at(w_end, seconds=1))

    c, _ = _torch_job(
        slug,
        project="kubeflow-user",
        pid="5",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=m_end,
        workers=1,
        gpu=4,
        memory="64Gi",
        command="python -m torch.distributed.launch --nproc_per_node 4 bert.py",
        pods=pods,
        now=now,
        extra=ev,
        node_kw={"gpus": 4, "product": "Tesla-K80"},
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A PyTorchJob in an Istio-injected Kubeflow namespace: on worker-0 the istio-proxy sidecar 'whose "
            "status is OOMKilled' (137, at its 128Mi limit) dies first at 10:31:17; the worker's pytorch container "
            "loses its network and exits 1 on an NCCL remote-process error half a minute later, and the master is "
            "aborted by the NCCL watchdog ten minutes after that. The first termination is the sidecar's: "
            "OOM_KILLED naming istio-proxy on worker-0 and its own 128Mi limit, not the workload's 64Gi."
        ),
        source="https://github.com/kubeflow/kubeflow/issues/6120",
        now=now,
        ask={"text": "bert-kf-ddp NCCL error on worker-0, why?", "workload_name": name, "intent": "terminal"},
        expect=_expect("OOM_KILLED", ["istio-proxy", w, "128Mi"]),
    )


@case
def envoy_128mi_many_tcp_services() -> dict[str, Any]:
    slug, now = "istio-proxy-128mi-limit-many-tcp-listeners-oom", "2019-03-26T12:00:00Z"
    name = "feature-store-gw"
    c, _ = _sidecar_oom_loop(
        slug,
        project="istio-test",
        pid="17",
        name=name,
        img="registry.example.com/fs/gateway:0.7",
        sidecar="istio-proxy",
        sidecar_img="docker.io/istio/proxyv2:1.1.1",
        limit="128Mi",
        created="2019-03-25T09:00:00Z",
        run_at="2019-03-25T09:01:00Z",
        last_start="2019-03-26T11:20:41Z",
        last_end="2019-03-26T11:21:19Z",
        restarts=31,
        now=now,
        memory="4Gi",
        gpu=0,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "With istio 1.1.1 and ~600-700 TCP services in the cluster, envoy proxies keep dying: 'the proxy "
            "container ran out of memory (limit was set to 128Mi)'; upping the sidecar's limit fixed it. "
            "OOM_KILLED naming istio-proxy and its 128Mi limit; the next action is that container's limit, not the "
            "workload's 4Gi."
        ),
        source="https://github.com/istio/istio/issues/12765",
        now=now,
        ask={"text": "feature-store-gw keeps dying", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["istio-proxy", "128Mi", "OOMKilled"]),
    )


@case
def linkerd_ha_proxy_oom_crashloop() -> dict[str, Any]:
    slug, now = "linkerd-proxy-oomkilled-under-load-training-data-loader", "2021-06-15T06:00:00Z"
    name = "video-dataloader-svc"
    msg = 'time="2021-06-15T04:43:37Z" level=info msg="running version stable-2.10.2"'
    c, _ = _sidecar_oom_loop(
        slug,
        project="video",
        pid="66",
        name=name,
        img="registry.example.com/video/loader:3.0",
        sidecar="linkerd-proxy",
        sidecar_img="acr.azurecr.io/linkerd/proxy:2.10.2",
        limit="250Mi",
        created="2021-06-14T20:00:00Z",
        run_at="2021-06-14T20:01:00Z",
        last_start="2021-06-15T04:43:37Z",
        last_end="2021-06-15T04:52:58Z",
        restarts=11,
        now=now,
        memory="12Gi",
        gpu=0,
        message=msg,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "Linkerd in HA mode under a 20-50K RPS performance test: service pods go Running -> OOMKill -> "
            "CrashLoopBackoff and repeat; kubectl describe shows linkerd-proxy with Last State Terminated, Reason "
            "OOMKilled. OOM_KILLED naming linkerd-proxy and its own limit (250Mi, the chart default), not the "
            "service's 12Gi."
        ),
        source="https://github.com/linkerd/linkerd2/issues/6263",
        now=now,
        ask={"text": "video-dataloader-svc is crashing under load", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["linkerd-proxy", "250Mi", "OOMKilled"]),
    )


@case
def ingressgateway_sidecar_oom_not_ready() -> dict[str, Any]:
    slug, now = "gateway-istio-sidecar-oomkilled-not-ready", "2020-10-22T12:00:00Z"
    name = "kyma-ingress-edge"
    c, _ = _sidecar_oom_loop(
        slug,
        project="kyma-system",
        pid="9",
        name=name,
        img="registry.example.com/kyma/edge-router:1.15.1",
        sidecar="istio-proxy",
        sidecar_img="eu.gcr.io/kyma-project/external/istio/proxyv2:1.5.10-distroless",
        limit="512Mi",
        created="2020-10-22T08:00:00Z",
        run_at="2020-10-22T08:01:00Z",
        last_start="2020-10-22T11:38:00Z",
        last_end="2020-10-22T11:44:21Z",
        restarts=26,
        now=now,
        memory="1Gi",
        gpu=0,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "'The istio sidecar of our istio ingressgateway pod gets OOM killed all the time'; the gateway doesn't "
            "get ready due to OOM of the sidecar and services are unreachable from outside; adding RAM to the "
            "resource limits helps. OOM_KILLED naming istio-proxy and its own limit (512Mi, illustrative)."
        ),
        source="https://github.com/kyma-project/kyma/issues/9751",
        now=now,
        ask={"text": "kyma-ingress-edge not reachable, why?", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["istio-proxy", "512Mi", "OOMKilled"]),
    )


@case
def grpo_worker_oomkilled_minus9_master_after() -> dict[str, Any]:
    slug, now = "grpo-worker-oomkilled-exitcode-minus-9-master-after", "2025-05-21T18:00:00Z"
    name, img = "grpo-gsm-2node", "registry.example.com/rl/open-r1:0.1"
    created, run_at = "2025-05-21T15:00:00Z", "2025-05-21T15:03:00Z"
    oom, m_end = "2025-05-21T15:43:03Z", "2025-05-21T15:53:06Z"
    w = f"{name}-worker-0"
    wlog = (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\nsrc/open_r1/grpo_gsm.py FAILED\n"
        "------------------------------------------------------------\nRoot Cause (first observed failure):\n[0]:\n"
        "  time      : 2025-05-21_15:43:03\n"
        "  host      : mlxlab115rp2n7682d40d9-20250521025625-6dyyd3-8nir8b-worker\n"
        "  rank      : 0 (local_rank: 0)\n  exitcode  : -9 (pid: 14750)\n  error_file: <N/A>\n"
        "  traceback : Signal 9 (SIGKILL) received by PID 14750\n"
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, w, "pytorch", "OOMKilled", 1, at(oom, seconds=1))

    c, _ = _two_pod(
        slug,
        project="rl",
        pid="19",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        first=(w, "h20-n08", terminated(1, "OOMKilled", run_at, oom), wlog, "worker"),
        later=[
            (f"{name}-master-0", "h20-n07", terminated(1, "Error", run_at, m_end), watchdog(0, 2207, 600009), "master")
        ],
        gpu=8,
        memory="900Gi",
        command="accelerate launch --config_file zero3.yaml src/open_r1/grpo_gsm.py",
        now=now,
        extra=ev,
    )
    c.kube["pods"][0]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = "OOMKilled"
    return _doc(
        c,
        "distributed",
        description=(
            "A 2-pod GRPO run (accelerate + DeepSpeed ZeRO-3): on the worker torch elastic's ChildFailedError names "
            "the root cause 'exitcode  : -9 (pid: 14750)', 'Signal 9 (SIGKILL) received by PID 14750', and the "
            "kubelet marks the container OOMKilled (exit code 1) at its 900Gi limit; the master then hangs in a "
            "collective until the NCCL watchdog ends it ten minutes later. OOM_KILLED naming the worker and its "
            "limit; the master's timeout is a consequence."
        ),
        source="https://github.com/lzhxmu/CPPO/issues/6",
        now=now,
        ask={
            "text": "grpo-gsm-2node failed with a watchdog timeout on the master",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("OOM_KILLED", [w, "OOMKilled", "900Gi"]),
    )


@case
def second_attempt_succeeded_after_oom() -> dict[str, Any]:
    slug, now = "first-attempt-oomkilled-second-attempt-succeeded", "2025-03-26T09:00:00Z"
    c = RunaiCase(slug, project="robotics", project_id="73")
    name, img = "robomamba-eval", "registry.example.com/robotics/robomamba:0.2"
    created = "2025-03-25T20:40:00Z"
    s1, f1, s2, f2 = "2025-03-25T20:41:00Z", "2025-03-25T20:57:27Z", "2025-03-25T20:58:10Z", "2025-03-26T01:12:44Z"
    e = c.workload(
        name,
        created=created,
        phase="Completed",
        phase_at=at(f2, seconds=3),
        image=img,
        gpu=8,
        memory="400Gi",
        command="torchrun --nproc_per_node 8 test.py",
        backoff_limit=2,
    )
    c.phase(e, "Pending", created)
    p1, p2 = f"{name}-0-0", f"{name}-0-1"
    scheduled(c, e, {p1: "a100-x2"}, at(s1, seconds=-30))
    c.phase(e, "Running", s1)
    pod_failed(c, e, p1, name, "OOMKilled", 1, at(f1, seconds=1))
    c.phase(e, "Pending", at(f1, seconds=10))
    scheduled(c, e, {p2: "a100-x2"}, at(s2, seconds=-20))
    c.phase(e, "Running", s2)
    c.phase(e, "Completed", at(f2, seconds=3))
    log1 = (
        f"E0325 20:57:27.620000 2606 site-packages/{TORCH_ELASTIC}:869] failed (exitcode: -9) local_rank: 5 "
        "(pid: 2630) of binary: /root/miniconda3/bin/python\n"
    )
    pods = [
        P(
            p1,
            "a100-x2",
            [C(name, img, terminated(1, "OOMKilled", s1, f1), gpu=8, memory="400Gi", log=log1)],
            t1="OOMKilled",
            completed=f1,
            created=at(s1, seconds=-35),
        ),
        P(
            p2,
            "a100-x2",
            [
                C(
                    name,
                    img,
                    terminated(0, "Completed", s2, f2),
                    gpu=8,
                    memory="400Gi",
                    log="eval done: success rate 0.71\n",
                )
            ],
            phase="Succeeded",
            t1="Succeeded",
            completed=f2,
            created=at(s2, seconds=-25),
        ),
    ]
    add_pods(c, e, pods, workload=name, created=created, run_at=s1, now=now)
    return _doc(
        c,
        "distributed",
        description=(
            "An 8-GPU torchrun evaluation: the first attempt's pod is OOMKilled (torch elastic: 'failed (exitcode: "
            "-9) local_rank: 5'); the Job retries with a new pod, which finishes with exit 0, and the workload is "
            "Completed. The question asks why it failed, but the workload's phase is Completed: succeeded (the "
            "earlier attempt's kill may be mentioned, it does not make the workload failed)."
        ),
        source="https://github.com/lmzpai/roboMamba/issues/10",
        now=now,
        ask={"text": "why did robomamba-eval fail?", "workload_name": name, "intent": "terminal"},
        expect=_expect(None, [], outcome="succeeded"),
    )


# ============================================================================ phase rules over question words
@case
def kai_gang_pending_asked_why_failed() -> dict[str, Any]:
    slug, now = "kai-gang-17-pods-pending-question-says-fail", "2025-10-17T12:00:00Z"
    c = RunaiCase(slug, project="nvl72", project_id="72")
    name, img = "gb200-17node-train", "nvcr.io/nvidia/pytorch:25.09-py3"
    created = "2025-10-17T10:30:00Z"
    msg = (
        "PodSchedulingErrors: Resources were found for 5 pods while 17 are required for gang scheduling. Additional "
        "pods cannot be scheduled due to: no nodes with enough resources were found: 12 cannot allocate all claims."
    )
    e = distributed(
        c,
        name,
        created=created,
        run_at=created,
        phase="Pending",
        phase_at=at(created, seconds=2),
        image=img,
        framework="PyTorch",
        workers=16,
        gpu=4,
        memory="800Gi",
        pods_requested=17,
        command="torchrun --nnodes=17 --nproc_per_node=4 train.py",
        phase_message=msg,
    )
    e["workload"]["pendingSchedulingMessages"] = [
        {
            "nodePool": "default",
            "phaseReason": "PodSchedulingErrors",
            "reason": "Pod scheduling errors",
            "orgType": "PROJECT",
            "userMessage": msg,
        },
    ]
    for minutes in (0, 15, 45, 80):
        c.event(
            e,
            "Unschedulable",
            msg,
            at(created, minutes=minutes, seconds=3),
            obj=f"pg-{name}-0",
            kind="PodGroup",
            source="kai-scheduler",
        )
    pods = [
        P(
            f"{name}-master-0" if i == 0 else f"{name}-worker-{i - 1}",
            None,
            [C("pytorch", img, waiting("ContainerCreating"), gpu=4, memory="800Gi")],
            phase="Pending",
            t1="Pending",
            replica="master" if i == 0 else "worker",
            index=max(0, i - 1),
        )
        for i in range(3)
    ]
    add_pods(c, e, pods, workload=name, created=created, run_at=created, now=now, owner_kind="DistributedWorkload")
    return _doc(
        c,
        "distributed",
        description=(
            "A 17-node (68 GPU) job on a GB200-NVL72 rack seen as 18 nodes of 4 GPUs, gang-scheduled by KAI with a "
            "ComputeDomain: the scheduler reports 'Resources were found for 5 pods while 17 are required for gang "
            "scheduling. Additional pods cannot be scheduled due to: no nodes with enough resources were found: 12 "
            "cannot allocate all claims.' (the snapshot keeps 3 of the 17 pending pods). The question says 'fail', "
            "but the workload is Pending with a scheduling-only reason (DRA claims, not a missing volume): the "
            "Pending rules apply, route_pending, quoting the scheduler's message."
        ),
        source="https://github.com/kai-scheduler/KAI-Scheduler/issues/577",
        now=now,
        ask={"text": "why did gb200-17node-train fail?", "workload_name": name, "intent": "terminal"},
        expect=_expect(None, ["17 are required for gang scheduling"], outcome="route_pending"),
    )


@case
def pytorchjob_worker_crashloop_running_no_crash_words() -> dict[str, Any]:
    slug, now = "pytorchjob-running-worker-crashloop-question-without-crash", "2024-02-21T09:40:00Z"
    name, img = "pytorch-simple", "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"
    created, run_at = "2024-02-21T09:20:00Z", "2024-02-21T09:21:00Z"
    w, m = f"{name}-worker-0", f"{name}-master-0"
    log = (
        "Traceback (most recent call last):\n"
        '  File "/opt/pytorch-mnist/mnist.py", line 160, in <module>\n    main()\n'
        '  File "/opt/pytorch-mnist/mnist.py", line 121, in main\n'
        "    dist.init_process_group(backend=args.backend)\n"
        "RuntimeError: Connection reset by peer\n"
    )
    pods = [
        P(
            m,
            "kind-worker",
            [C("pytorch", img, running(run_at), memory="2Gi", log="Train Epoch: 1 [0/60000]\n")],
            phase="Running",
            t1="Running",
            replica="master",
            restart_policy="OnFailure",
        ),
        P(
            w,
            "kind-worker2",
            [
                C(
                    "pytorch",
                    img,
                    waiting(
                        "CrashLoopBackOff",
                        "back-off 40s restarting failed "
                        f"container=pytorch pod={w}_kubeflow(2e06a4e3-bceb-42b4-b0fd-a32cb53d0d00)",
                    ),
                    memory="2Gi",
                    last=terminated(1, "Error", "2024-02-21T09:32:27Z", "2024-02-21T09:32:29Z"),
                    restarts=3,
                    prev_log=log,
                )
            ],
            phase="Running",
            t1="CrashLoopBackOff",
            replica="worker",
            restart_policy="OnFailure",
        ),
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, w, "pytorch", "2024-02-21T09:32:31Z", 3, "2024-02-21T09:24:10Z")

    c, _ = _torch_job(
        slug,
        project="kubeflow",
        pid="20",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end="2024-02-21T09:32:29Z",
        workers=1,
        gpu=0,
        memory="2Gi",
        command="python /opt/pytorch-mnist/mnist.py",
        pods=pods,
        now=now,
        phase="Running",
        extra=ev,
        node_kw={"gpus": 0},
        running_pods=2,
    )
    c.workloads[0]["workload"]["k8sPhase"] = "Running"
    return _doc(
        c,
        "distributed",
        description=(
            "A PyTorchJob whose worker keeps failing while the master runs: the operator logs 'Error pod "
            "pytorch-simple-worker-0 container pytorch waiting message: back-off 40s restarting failed "
            "container=pytorch ...' and 'Pod: kubeflow.pytorch-simple-worker-0 exited with code 1' (the worker's "
            "traceback here is illustrative). The workload is Running and a worker's crash loop is confirmed now, "
            "so it is diagnosed although the question has no crash word: CRASH_APP_ERROR naming worker-0."
        ),
        source="https://github.com/kubeflow/trainer/issues/2008",
        now=now,
        ask={"text": "is pytorch-simple still training?", "workload_name": name, "intent": None},
        expect=_expect("CRASH_APP_ERROR", [w]),
    )


# ============================================================================ more: deleted launcher, occurrences
@case
def mpi_launcher_failed_first_and_deleted() -> dict[str, Any]:
    slug, now = "mpi-launcher-failed-first-deleted-workers-cleaned-up", "2022-03-21T10:00:00Z"
    c = RunaiCase(slug, project="hpc", project_id="31")
    name, img = "mpi-resnet-sweep", "registry.example.com/hpc/horovod-torch:0.24"
    created, run_at = "2022-03-21T09:00:00Z", "2022-03-21T09:01:30Z"
    l_end, w_end = "2022-03-21T09:01:41Z", "2022-03-21T09:01:49Z"
    launcher = f"{name}-launcher-x7k2p"
    workers = [f"{name}-worker-{i}" for i in range(2)]
    e = distributed(
        c,
        name,
        created=created,
        run_at=run_at,
        phase="Failed",
        phase_at=at(w_end, seconds=4),
        image=img,
        framework="MPI",
        workers=2,
        gpu=4,
        memory="128Gi",
        pods_requested=3,
        command="python launch_sweep.py --np 8",
    )
    scheduled(c, e, {launcher: "cpu-07", workers[0]: "gpu-31", workers[1]: "gpu-32"}, at(created, seconds=5))
    c.phase(e, "Running", run_at)
    c.phase(e, "Failed", at(w_end, seconds=4))
    pods = [
        P(
            launcher,
            "cpu-07",
            [C("launcher", img, running(run_at))],
            completed=l_end,
            deleted=at(l_end, seconds=2),
            k8s=False,
        ),
    ] + [
        P(
            w,
            f"gpu-3{i + 1}",
            [C("worker", img, terminated(143, "Error", run_at, w_end), gpu=4, memory="128Gi", log="")],
            completed=w_end,
            labels={"mpi_role_type": "worker"},
        )
        for i, w in enumerate(workers)
    ]
    add_pods(c, e, pods, workload=name, created=created, run_at=run_at, now=now, owner_kind="DistributedWorkload")
    return _doc(
        c,
        "distributed",
        description=(
            "An MPIJob (v2 controller) whose launcher script checks its parameters and exits 1 before running "
            "mpirun; the launcher pod is then gone ('Mpi operator would clean the failed pod ... I would like to "
            "read the log when the pod failing'): only the Run:ai pods list still shows it (Error, deleted at "
            "09:01:43), and the two workers end with the cleanup SIGTERM (143) six seconds later. The pod that "
            "failed first cannot be seen: UNKNOWN naming the launcher, never the workers' 143 as the cause."
        ),
        source="https://github.com/kubeflow/mpi-operator/issues/461",
        now=now,
        ask={
            "text": "mpi-resnet-sweep failed and the pods are gone, why?",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("UNKNOWN", [launcher]),
    )


@case
def two_workers_oomkilled_one_incident_not_recurring() -> dict[str, Any]:
    slug, now = "two-workers-oomkilled-same-incident-one-occurrence", "2023-04-14T14:00:00Z"
    name, img = "ds-chat-actor-125m", "registry.example.com/rlhf/deepspeed-chat:0.9"
    created, run_at = "2023-04-14T12:40:00Z", "2023-04-14T12:42:00Z"
    k0, k1, l_end = "2023-04-14T13:11:26Z", "2023-04-14T13:11:27Z", "2023-04-14T13:11:28Z"
    launcher_log = (
        "[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] Killing subprocess 13266\n"
        "[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py', "
        "'--local_rank=0', '--model_name_or_path', 'facebook/opt-125m', '--zero_stage', '2', '--deepspeed'] exits "
        "with return code = -9\n"
    )
    w = [f"{name}-worker-{i}" for i in range(2)]
    pods = [
        P(
            f"{name}-launcher",
            "cpu-02",
            [C("launcher", img, terminated(1, "Error", run_at, l_end), log=launcher_log)],
            completed=l_end,
            labels={"mpi_role_type": "launcher"},
        ),
    ] + [
        P(
            x,
            f"a10-0{i + 1}",
            [C("worker", img, terminated(137, "OOMKilled", run_at, k), gpu=1, memory="24Gi", log="")],
            t1="OOMKilled",
            completed=k,
            labels={"mpi_role_type": "worker"},
        )
        for i, (x, k) in enumerate(zip(w, (k0, k1), strict=True))
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, w[0], "worker", "OOMKilled", 137, at(k0, seconds=1))
        pod_failed(c, e, w[1], "worker", "OOMKilled", 137, at(k1, seconds=1))

    c, _ = _torch_job(
        slug,
        project="rlhf",
        pid="94",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=l_end,
        workers=2,
        gpu=1,
        memory="24Gi",
        command="deepspeed --hostfile /etc/mpi/hostfile main.py --zero_stage 2",
        pods=pods,
        now=now,
        framework="MPI",
        extra=ev,
        node_kw={"gpus": 1, "product": "NVIDIA-A10"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "DeepSpeed-Chat step 1 (opt-125m actor, ZeRO-2) as an MPIJob with two workers: both workers are "
            "OOMKilled at their 24Gi limit one second apart while building the dataset, and the launcher logs "
            "'exits with return code = -9' and exits 1. worker-0 failed first and decides (OOM_KILLED); the second "
            "kill and the launcher's exit are the same incident: one occurrence, not recurring."
        ),
        source="https://github.com/deepspeedai/DeepSpeed/issues/3232",
        now=now,
        ask={"text": "ds-chat-actor-125m exits with return code = -9", "workload_name": name, "intent": "terminal"},
        expect=_expect("OOM_KILLED", [w[0], "OOMKilled", "24Gi"], recurring=False),
    )


@case
def resubmitted_distributed_oom_twice_recurring() -> dict[str, Any]:
    slug, now = "distributed-oomkilled-again-after-resume-recurring", "2023-05-05T12:00:00Z"
    name, img = "codegen-6b-rl", "registry.example.com/code/codegen-rl:0.3"
    c = RunaiCase(slug, project="code", project_id="47")
    created = "2023-05-03T08:00:00Z"
    run1, oom1, end1 = "2023-05-03T08:03:00Z", "2023-05-03T08:19:40Z", "2023-05-03T08:19:46Z"
    resume, run2, oom2, end2 = (
        "2023-05-05T09:00:00Z",
        "2023-05-05T09:03:00Z",
        "2023-05-05T09:18:02Z",
        "2023-05-05T09:18:09Z",
    )
    m, w = f"{name}-master-0", f"{name}-worker-0"
    e = distributed(
        c,
        name,
        created=created,
        run_at=run1,
        phase="Failed",
        phase_at=at(end2, seconds=3),
        image=img,
        framework="PyTorch",
        workers=1,
        gpu=8,
        memory="256Gi",
        pods_requested=2,
        command="deepspeed train_rl.py --actor Salesforce/codegen-6B-mono",
    )
    for run, oom, end, first in ((run1, oom1, end1, True), (run2, oom2, end2, False)):
        if not first:
            c.phase(e, "Resuming", resume)
            c.phase(e, "Pending", at(resume, seconds=1))
        scheduled(c, e, {m: "a100-p1", w: "a100-p2"}, at(run, seconds=-60))
        c.phase(e, "Running", run)
        msg = pod_failed(c, e, w, "pytorch", "OOMKilled", 137, at(oom, seconds=1))
        c.event(
            e,
            "PyTorchJobFailed",
            f"PyTorchJob {c.ns}/{name} has failed because 1 Worker replica(s) failed.",
            at(end, seconds=1),
            obj=name,
            kind="PyTorchJob",
            type_="Normal",
            source="pytorchjob-controller",
        )
        c.phase(e, "Failed", at(end, seconds=3) if not first else end, msg)
    pods = [
        P(
            w,
            "a100-p2",
            [
                C(
                    "pytorch",
                    img,
                    terminated(137, "OOMKilled", run2, oom2),
                    gpu=8,
                    memory="256Gi",
                    log="Loading actor and reference model...\n",
                )
            ],
            t1="OOMKilled",
            replica="worker",
            completed=oom2,
            created=at(run2, seconds=-70),
        ),
        P(
            m,
            "a100-p1",
            [C("pytorch", img, terminated(1, "Error", run2, end2), gpu=8, memory="256Gi", log=watchdog(0, 12, 600021))],
            replica="master",
            completed=end2,
            created=at(run2, seconds=-70),
        ),
    ]
    add_pods(c, e, pods, workload=name, created=created, run_at=run2, now=now, owner_kind="DistributedWorkload")
    return _doc(
        c,
        "distributed",
        description=(
            "RL fine-tuning of codegen-6B with an actor-critic and a reference model on 8 A100 (80G) per pod: on "
            "05-03 worker-0 is OOMKilled at its 256Gi limit while loading the models and the job fails; resumed on "
            "05-05, the same happens again (the master's NCCL timeout follows each time). Two attempts of the "
            "workload, each with its own OOM kill: OOM_KILLED and recurring (two occurrences, not four)."
        ),
        source="https://github.com/deepspeedai/DeepSpeed/issues/3458",
        now=now,
        ask={"text": "codegen-6b-rl got killed again", "workload_name": name, "intent": "terminal"},
        expect=_expect("OOM_KILLED", [w, "OOMKilled", "256Gi"], recurring=True),
    )


@case
def master_evicted_disk_pressure_after_worker_crash() -> dict[str, Any]:
    slug, now = "master-evicted-diskpressure-after-worker-crash-consequence", "2020-05-21T12:00:00Z"
    name, img = "dlts-seg-train", "registry.example.com/dlts/seg:1.5"
    created, run_at = "2020-05-21T07:00:00Z", "2020-05-21T07:02:00Z"
    crash, evict = "2020-05-21T10:12:09Z", "2020-05-21T10:14:31Z"
    w, m = f"{name}-worker-0", f"{name}-master-0"
    wlog = (
        "/opt/conda/conda-bld/pytorch_1587428091666/work/aten/src/THCUNN/ClassNLLCriterion.cu:106: "
        "cunn_ClassNLLCriterion_updateOutput_kernel: block: [0,0,0], thread: [7,0,0] Assertion `t >= 0 && t < "
        "n_classes` failed.\n"
        "RuntimeError: CUDA error: device-side assert triggered\n"
    )
    pods = [
        P(
            w,
            "gpu-dl-07",
            [C("pytorch", img, terminated(1, "Error", run_at, crash), gpu=4, memory="96Gi", log=wlog)],
            replica="worker",
            completed=crash,
        ),
        P(
            m,
            "gpu-dl-03",
            [
                C(
                    "pytorch",
                    img,
                    terminated(137, "Error", run_at, at(evict, seconds=30)),
                    gpu=4,
                    memory="96Gi",
                    log="saving checkpoint to /scratch/ckpt/epoch_41.pt\n",
                )
            ],
            t1="Evicted",
            replica="master",
            completed=at(evict, seconds=30),
            reason="Evicted",
            message="The node had condition: [DiskPressure]. ",
        ),
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, w, "pytorch", "Error", 1, at(crash, seconds=1))
        c.event(e, "Evicted", "The node had condition: [DiskPressure].", evict, obj=m)

    c, _ = _torch_job(
        slug,
        project="dlts",
        pid="13",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=at(evict, seconds=30),
        workers=1,
        gpu=4,
        memory="96Gi",
        command="python -m torch.distributed.launch train.py",
        pods=pods,
        now=now,
        extra=ev,
        node_kw={"gpus": 4, "product": "Tesla-V100-SXM2-32GB"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A 2-pod PyTorch job: worker-0 fails first with 'RuntimeError: CUDA error: device-side assert "
            "triggered' (a label out of range, exit 1); two minutes later the master, still writing checkpoints to "
            "local scratch, is evicted by the kubelet ('The node had condition: [DiskPressure].', the event of the "
            "report). The eviction follows the first failure and is a consequence whatever its reason: "
            "CRASH_APP_ERROR naming worker-0, not NODE_FAILURE."
        ),
        source="https://github.com/microsoft/DLWorkspace/pull/1128",
        now=now,
        ask={"text": "dlts-seg-train master evicted for disk pressure?", "workload_name": name, "intent": "terminal"},
        expect=_expect("CRASH_APP_ERROR", [w, "device-side assert triggered"]),
    )
