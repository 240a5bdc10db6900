"""More field cases of issue 19 §3: distributed training and pods with more than one container (second batch).

Same rules as ``incident_cases.py`` (whose helpers this module reuses): each ``case_*`` function embeds one public
report (its ``source``) into a small Run:ai world; strings quoted from the report are verbatim; what the report does
not say (project, node names, times, limits where none is given, an illustrative log line) is filled in with plain
values and the description says so. ``expect`` is what a careful SRE answers under ../shared/cases/FORMAT.md's house
rules, not the product's current output. Every case carries a ``kind`` label (``distributed`` or
``multi-container``). ``build_cases.py`` imports ``CASES`` from here and writes them with the others.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from incident_cases import (
    C,
    P,
    _backoff,
    _doc,
    _expect,
    _mc,
    _torch_job,
    add_pods,
    distributed,
    pod_failed,
    scheduled,
    watchdog,
)
from snap import RunaiCase, at, running, terminated, waiting

CASES: list[Callable[[], dict[str, Any]]] = []


def case(fn: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    CASES.append(fn)
    return fn


def _conditions(created: str, *, initialized: bool, ready: bool, not_ready: list[str]) -> list[dict[str, Any]]:
    """Pod conditions with an explicit Initialized status (the kubelet's own, not derived from exit codes)."""
    unready = (
        {}
        if ready
        else {"reason": "ContainersNotReady", "message": f"containers with unready status: [{' '.join(not_ready)}]"}
    )
    return [
        {
            "type": "Initialized",
            "status": "True" if initialized else "False",
            "lastProbeTime": None,
            "lastTransitionTime": created,
        }
        | (
            {}
            if initialized
            else {"reason": "ContainersNotInitialized", "message": "containers with incomplete status: []"}
        ),
        {"type": "Ready", "status": "True" if ready else "False", "lastProbeTime": None, "lastTransitionTime": created}
        | unready,
        {
            "type": "ContainersReady",
            "status": "True" if ready else "False",
            "lastProbeTime": None,
            "lastTransitionTime": created,
        }
        | unready,
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": created},
    ]


def _pull_backoff(c: RunaiCase, e: dict[str, Any], pod: str, image: str, when: str, count: int, first: str) -> None:
    c.event(e, "BackOff", f'Back-off pulling image "{image}"', when, obj=pod, type_="Normal", count=count, first=first)


# ============================================================================ init containers
@case
def argo_init_oomkilled_exit0_stuck() -> dict[str, Any]:
    slug, now = "argo-init-oomkilled-exit-0-restart-never-stuck-podinitializing", "2023-03-15T08:00:00Z"
    name, pod = "wf-3365", "wf-3365-1282933487"
    node = "gke--producti-m128-c16-sa-work-e7608549-fq5h"
    img, exe = "registry.example.com/sim/wf-step:1.4", "quay.io/argoproj/argoexec:v3.4.5"
    created, run_at = "2023-03-14T21:42:54Z", "2023-03-14T21:42:58Z"
    oom_end = at(run_at, seconds=41)
    p = P(
        pod,
        node,
        [
            C("wait", exe, waiting("PodInitializing"), memory="256Mi"),
            C("main", img, waiting("PodInitializing"), memory="24Gi", gpu=1),
        ],
        init=[C("init", exe, terminated(0, "OOMKilled", run_at, oom_end), memory="128Mi")],
        phase="Pending",
        t1="PodInitializing",
        conditions=_conditions(created, initialized=False, ready=False, not_ready=["wait", "main"]),
    )
    c, _ = _mc(
        slug,
        project="sim",
        pid="61",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        phase="Initializing",
        memory="24Gi",
        k8s_phase="PodInitializing",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "An Argo workflow step pod (init container init, then wait and main) after an upgrade to Kubernetes 1.23: "
            "'one of the Init containers of a pod exits with Reason OOMKilled (and Exit State: 0)', restartPolicy "
            "Never, and the pod stays Pending in PodInitializing on node gke--producti-m128-c16-sa-work-e7608549-fq5h "
            "instead of failing. The init container's 128Mi limit and the images are illustrative (the report's pod "
            "description is sanitized). An init container OOMKilled is a direct failed-pod signal whatever its exit "
            "code: OOM_KILLED, naming init and its own limit, not the main container's 24Gi."
        ),
        source="https://github.com/kubernetes/kubernetes/issues/116676",
        now=now,
        ask={
            "text": "wf-3365 has been stuck in PodInitializing since last night",
            "workload_name": name,
            "intent": None,
        },
        expect=_expect("OOM_KILLED", [pod, "OOMKilled", "128Mi"]),
    )


@case
def gpu_init_container_oomkilled_podinitializing() -> dict[str, Any]:
    slug, now = "gpu-init-container-oomkilled-exit-0-podinitializing-83m", "2022-08-30T03:14:00Z"
    name = "gpu-pod"
    img = "registry.example.com/vision/pipeline:1.0"
    created, run_at = "2022-08-30T01:50:36Z", "2022-08-30T01:50:38Z"
    p = P(
        f"{name}-0-0",
        "gpu-node-01",
        [C("app3", img, waiting("PodInitializing"), memory="8Gi")],
        init=[
            C("app1", img, terminated(0, "Completed", "2022-08-30T01:50:38Z", "2022-08-30T01:50:44Z"), memory="2Gi"),
            C(
                "app2",
                img,
                terminated(0, "OOMKilled", "2022-08-30T01:50:45Z", "2022-08-30T01:52:10Z"),
                memory="4Gi",
                gpu=1,
            ),
        ],
        phase="Pending",
        t1="PodInitializing",
        conditions=_conditions(created, initialized=False, ready=False, not_ready=["app3"]),
    )
    c, _ = _mc(
        slug,
        project="vision",
        pid="72",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        phase="Initializing",
        memory="8Gi",
        k8s_phase="PodInitializing",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A pod with two init containers (app1, then app2, the only one that uses a GPU) before app3: 'When the "
            "app2 uses too much RAM and is OOM killed, the Pod should be in the OOMKilled status, but it's stuck in "
            "the PodInitializing status' for 83 minutes; app1 is 'Terminated, Completed, Exit Code: 0', app2 "
            "'Terminated, OOMKilled, Exit Code: 0' (driver 515.65.01, containerd v1.6.2). The limits (app2 4Gi) and "
            "app2's finish time are illustrative. OOMKilled wins whatever the exit code: OOM_KILLED, naming app2 and "
            "its own limit."
        ),
        source="https://github.com/NVIDIA/nvidia-container-toolkit/issues/30",
        now=now,
        ask={"text": "why is gpu-pod stuck in PodInitializing?", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["app2", "OOMKilled", "4Gi"]),
    )


@case
def tekton_prepare_init_oomkilled() -> dict[str, Any]:
    slug, now = "tekton-prepare-init-container-oomkilled-pod-failed", "2026-06-02T12:00:00Z"
    name = "build-model-image-run-7xk2p"
    pod = f"{name}-pod"
    step_img, entry = "registry.example.com/ci/kaniko:1.23", "ghcr.io/tektoncd/pipeline/entrypoint:v1.13.0"
    created, run_at = "2026-06-02T10:20:00Z", "2026-06-02T10:20:04Z"
    end = at(run_at, seconds=2)
    p = P(
        pod,
        "ci-node-04",
        [C("step-build", step_img, waiting("PodInitializing"), memory="4Gi")],
        init=[C("prepare", entry, terminated(137, "OOMKilled", run_at, end), memory="32Mi")],
        phase="Failed",
        t1="Init:OOMKilled",
        completed=end,
        conditions=_conditions(created, initialized=False, ready=False, not_ready=["step-build"]),
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, pod, "prepare", "OOMKilled", 137, at(end, seconds=1))

    c, _ = _mc(
        slug,
        project="ci",
        pid="14",
        name=name,
        img=step_img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        phase="Failed",
        phase_at=at(end, seconds=3),
        memory="4Gi",
        gpu=0,
        k8s_phase="Init:OOMKilled",
        phase_message=f"Pod {pod} failed: container prepare terminated with reason OOMKilled (exit code 137)",
        extra=ev,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A Tekton TaskRun pod with enableKubernetesSidecar: its 'prepare init container fails due to "
            "Init:OOMKilled' and, the pod being Failed, the TaskRun stays Running until the pipeline timeout (the "
            "controller bug of the report). The pod itself is plainly Failed: OOM_KILLED, naming the init container "
            "prepare and its own limit (32Mi and exit code 137 here, illustrative), not the step's 4Gi."
        ),
        source="https://github.com/tektoncd/pipeline/issues/10170",
        now=now,
        ask={"text": f"{name} is stuck, prepare says Init:OOMKilled", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["prepare", "OOMKilled", "32Mi"]),
    )


@case
def init_image_pull_never_pending() -> dict[str, Any]:
    slug, now = "init-container-image-pull-backoff-restart-never-pending", "2019-10-08T18:00:00Z"
    name, bad = "test", "some-nonexistent-image"
    created, run_at = "2019-10-08T16:54:24Z", "2019-10-08T16:54:26Z"
    pod = f"{name}-0-0"
    p = P(
        pod,
        "gke-pool-1-node-7",
        [C("main", "ubuntu", waiting("PodInitializing"), memory="1Gi")],
        init=[C("init", bad, waiting("ImagePullBackOff", f'Back-off pulling image "{bad}"'), memory="256Mi")],
        phase="Pending",
        t1="Init:ImagePullBackOff",
        conditions=_conditions(created, initialized=False, ready=False, not_ready=["main"]),
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _pull_backoff(c, e, pod, bad, "2019-10-08T17:58:41Z", 412, at(run_at, seconds=9))

    c, _ = _mc(
        slug,
        project="default-team",
        pid="4",
        name=name,
        img="ubuntu",
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        phase="Initializing",
        memory="1Gi",
        gpu=0,
        k8s_phase="Init:ImagePullBackOff",
        extra=ev,
    )
    c.workloads[0]["workload"]["images"] = ["ubuntu", bad]
    return _doc(
        c,
        "multi-container",
        description=(
            "'A pod with a restartPolicy: Never has an init container with an invalid image. Instead of being marked "
            "Failed, it is marked Pending indefinitely': init container init (image some-nonexistent-image) is "
            "'State: Waiting, Reason: ImagePullBackOff', main (ubuntu) waits. The Back-off event is the kubelet's "
            "usual wording (illustrative count). An init container that cannot pull its image is a direct failed-pod "
            "signal: IMAGE_PULL_FAILED naming init and the image."
        ),
        source="https://github.com/kubernetes/kubernetes/issues/83622",
        now=now,
        ask={"text": "test is stuck in Pending for an hour", "workload_name": name, "intent": None},
        expect=_expect("IMAGE_PULL_FAILED", [bad]),
    )


@case
def init_exit_1_restart_never_init_error() -> dict[str, Any]:
    slug, now = "init-container-exit-1-restart-never-init-error-failed", "2025-01-21T12:00:00Z"
    name, pod = "pod-x", "pod-x"
    created, run_at = "2025-01-21T11:40:00Z", "2025-01-21T11:40:03Z"
    end = at(run_at, seconds=1)
    p = P(
        pod,
        "kind-worker",
        [C("main-container", "nginx", waiting("PodInitializing"), memory="512Mi")],
        init=[
            C(
                "init-container",
                "busybox",
                terminated(1, "Error", run_at, end),
                memory="64Mi",
                extra={"command": ["sh", "-c", "exit 1"]},
            )
        ],
        phase="Failed",
        t1="Init:Error",
        completed=end,
        conditions=_conditions(created, initialized=False, ready=False, not_ready=["main-container"]),
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, pod, "init-container", "Error", 1, at(end, seconds=1))

    c, _ = _mc(
        slug,
        project="docs",
        pid="9",
        name=name,
        img="nginx",
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        phase="Failed",
        phase_at=at(end, seconds=2),
        memory="512Mi",
        gpu=0,
        k8s_phase="Init:Error",
        phase_message=f"Pod {pod} failed: container init-container terminated with reason Error (exit code 1)",
        extra=ev,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "The reproduction of a docs change on kind v1.32: pod-x with restartPolicy Never, main-container nginx "
            "and init-container busybox running `sh -c \"exit 1\"`; `kubectl get pod pod-x` shows 'Init:Error' and "
            "the main container never starts. A non-zero init-container exit: INIT_FAILED naming init-container."
        ),
        source="https://github.com/kubernetes/website/pull/49519",
        now=now,
        ask={"text": "why did pod-x fail?", "workload_name": name, "intent": "terminal"},
        expect=_expect("INIT_FAILED", ["init-container"]),
    )


@case
def istio_validation_init_crashloop() -> dict[str, Any]:
    slug, now = "istio-validation-init-crashloop-connection-refused", "2020-02-24T12:00:00Z"
    name, pod = "helloworld-v1", "helloworld-v1-7fdd67766b-s5p26"
    proxy, app = "docker.io/istio/proxyv2:1.4.5", "docker.io/istio/examples-helloworld-v1"
    created, run_at = "2020-02-24T10:10:00Z", "2020-02-24T10:10:04Z"
    log = "in new validator: 10.40.1.2\nListening on 127.0.0.1:15001\nListening on 127.0.0.1:15006\n" + (
        "Error connecting to 127.0.0.6:15002: dial tcp 127.0.0.1:0->127.0.0.6:15002: connect: connection refused\n" * 6
    )
    p = P(
        pod,
        "gke-istio-dev-pool-2",
        [
            C("helloworld", app, waiting("PodInitializing"), memory="1Gi", gpu=1),
            C("istio-proxy", proxy, waiting("PodInitializing"), memory="1Gi"),
        ],
        init=[
            C(
                "istio-validation",
                proxy,
                waiting(
                    "CrashLoopBackOff",
                    f"back-off 5m0s restarting failed container=istio-validation pod={pod}_runai-hello",
                ),
                memory="50Mi",
                last=terminated(1, "Error", "2020-02-24T11:10:40Z", "2020-02-24T11:15:41Z"),
                restarts=5,
                prev_log=log,
            )
        ],
        phase="Pending",
        t1="Init:CrashLoopBackOff",
        restart_policy="Always",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, pod, "istio-validation", "2020-02-24T11:15:43Z", 5, "2020-02-24T10:16:00Z")

    c, _ = _mc(
        slug,
        project="hello",
        pid="15",
        name=name,
        img=app,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        type_="Inference",
        phase="Initializing",
        memory="1Gi",
        k8s_phase="Init:CrashLoopBackOff",
        extra=ev,
        restart_policy="Always",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "After an upgrade to Istio 1.4.5 with the CNI plugin, the new init container istio-validation crash-loops "
            "on the hello-world sample: its previous log repeats 'Error connecting to 127.0.0.6:15002: dial tcp "
            "127.0.0.1:0->127.0.0.6:15002: connect: connection refused' until it exits (exit code 1 and the times "
            "are illustrative), and the application container never starts. A failing init container: INIT_FAILED "
            "naming istio-validation and its error."
        ),
        source="https://github.com/istio/istio/issues/21409",
        now=now,
        ask={"text": "helloworld-v1 won't start after the istio upgrade", "workload_name": name, "intent": None},
        expect=_expect("INIT_FAILED", ["istio-validation", "connection refused"]),
    )


@case
def vault_busybox_init_chown_not_permitted() -> dict[str, Any]:
    slug, now = "vault-busybox-init-chown-operation-not-permitted", "2023-11-06T09:00:00Z"
    name, pod = "vault", "vault-0"
    img = "hashicorp/vault:1.13.1"
    created, run_at = "2023-11-06T08:55:47Z", "2023-11-06T08:55:50Z"
    p = P(
        pod,
        "node01",
        [C("vault", img, waiting("PodInitializing"), memory="2Gi")],
        init=[
            C(
                "busybox",
                "busybox:1.36",
                waiting(
                    "CrashLoopBackOff", f"back-off 1m20s restarting failed container=busybox pod={pod}_runai-security"
                ),
                memory="64Mi",
                last=terminated(1, "Error", "2023-11-06T08:58:59Z", "2023-11-06T08:59:00Z"),
                restarts=5,
                prev_log="chown: /vault/logs: Operation not permitted\nchown: /vault/logs: Operation not permitted\n",
            )
        ],
        phase="Pending",
        t1="Init:CrashLoopBackOff",
        restart_policy="Always",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, pod, "busybox", "2023-11-06T08:59:02Z", 5, "2023-11-06T08:56:10Z")

    c, _ = _mc(
        slug,
        project="security",
        pid="33",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        type_="Inference",
        phase="Initializing",
        memory="2Gi",
        gpu=0,
        k8s_phase="Init:CrashLoopBackOff",
        extra=ev,
        restart_policy="Always",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "The vault Helm chart (0.24.1) with an added init container: `kubectl logs -f vault-0 -c busybox` shows "
            "'chown: /vault/logs: Operation not permitted' twice and vault-0 is 'Init:CrashLoopBackOff 5 (60s ago)' "
            "on node01 (vault-1 the same; the snapshot keeps vault-0). The busybox image tag, its exit code 1 and "
            "its limit are illustrative. A failing init container: INIT_FAILED naming busybox and its error."
        ),
        source="https://github.com/hashicorp/vault-helm/issues/972",
        now=now,
        ask={"text": "vault is in Init:CrashLoopBackOff", "workload_name": name, "intent": None},
        expect=_expect("INIT_FAILED", ["busybox", "Operation not permitted"]),
    )


@case
def vault_agent_init_403() -> dict[str, Any]:
    slug, now = "vault-agent-init-403-permission-denied-crashloop", "2023-05-25T07:00:00Z"
    name, pod = "tenant-sync", "tenant-sync-0-0"
    img, agent = "registry.example.com/platform/tenant-sync:2.3", "hashicorp/vault:1.13.2"
    created, run_at = "2023-05-25T05:45:00Z", "2023-05-25T05:45:04Z"
    log = (
        "2023-05-25T05:49:05.463Z [ERROR] agent.template.server: template server error:\n"
        "  error=\n"
        "  | vault.read(kv/tenant): vault.read(kv/tenant): Error making API request.\n"
        "  | \n"
        "  | URL: GET https://vault/v1/kv/tenant\n"
        "  | Code: 403. Errors:\n"
        "  | \n"
        "  | * 1 error occurred:\n"
        "  | \\t* permission denied\n"
        "  | \n"
        "  \n"
        "2023-05-25T05:49:05.463Z [INFO] (runner) stopping\n"
        "2023-05-25T05:49:05.463Z [INFO]  agent.auth.handler: auth handler stopped\n"
        "2023-05-25T05:49:05.463Z [ERROR] agent: runtime error encountered:\n"
        "  error=\n"
        "  | template server: vault.read(kv/buhler): vault.read(kv/buhler): Error making API request.\n"
        "  | \n"
        "  | URL: GET https://vault/v1/kv/buhler\n"
        "  | Code: 403. Errors:\n"
        "  | \n"
        "  | * 1 error occurred:\n"
        "  | \\t* permission denied\n"
        "  | \n"
        "  \n"
        "Error encountered during run, refer to logs for more details.\n"
    )
    p = P(
        pod,
        "gpu-node-17",
        [
            C(name, img, waiting("PodInitializing"), memory="16Gi", gpu=1),
            C("vault-agent", agent, waiting("PodInitializing"), memory="128Mi"),
        ],
        init=[
            C(
                "vault-agent-init",
                agent,
                waiting(
                    "CrashLoopBackOff",
                    f"back-off 5m0s restarting failed container=vault-agent-init pod={pod}_runai-tenants",
                ),
                memory="128Mi",
                last=terminated(1, "Error", "2023-05-25T05:48:35Z", "2023-05-25T05:49:05Z"),
                restarts=4,
                prev_log=log,
            )
        ],
        phase="Pending",
        t1="Init:CrashLoopBackOff",
        restart_policy="Always",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, pod, "vault-agent-init", "2023-05-25T05:49:07Z", 4, "2023-05-25T05:46:00Z")

    c, _ = _mc(
        slug,
        project="tenants",
        pid="27",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        phase="Initializing",
        memory="16Gi",
        k8s_phase="Init:CrashLoopBackOff",
        extra=ev,
        restart_policy="Always",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "An injected vault-agent-init init container fails: its template server reads kv/tenant and kv/buhler and "
            "Vault answers 'Code: 403. Errors: * permission denied', then 'Error encountered during run, refer to "
            "logs for more details.' (the report's log, verbatim). The pod, its crash loop and the training container "
            "are illustrative. A failing init container: INIT_FAILED naming vault-agent-init and the 403."
        ),
        source="https://github.com/hashicorp/vault/issues/20772",
        now=now,
        ask={"text": "tenant-sync is stuck in init", "workload_name": name, "intent": None},
        expect=_expect("INIT_FAILED", ["vault-agent-init", "permission denied"]),
    )


@case
def gofabric8_init_runinitcontainererror() -> dict[str, Any]:
    slug, now = "busybox-init-exited-1-runinitcontainererror-pvc-permissions", "2017-02-11T12:00:00Z"
    name, pod = "jenkins", "jenkins-1-4mt2x"
    img = "fabric8/jenkins-openshift:2.0.64"
    created, run_at = "2017-02-11T10:30:00Z", "2017-02-11T10:30:05Z"
    msg = 'failed to "InitContainer" for "init" with RunInitContainerError: "init container \\"init\\" exited with 1"'
    p = P(
        pod,
        "gce-node-2",
        [C("jenkins", img, waiting("PodInitializing"), memory="2Gi")],
        init=[
            C(
                "init",
                "busybox",
                waiting("CrashLoopBackOff", f"back-off 5m0s restarting failed container=init pod={pod}_runai-fabric8"),
                memory="64Mi",
                last=terminated(1, "Error", "2017-02-11T11:40:11Z", "2017-02-11T11:40:11Z"),
                restarts=14,
            )
        ],
        phase="Pending",
        t1="Init:CrashLoopBackOff",
        restart_policy="Always",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        c.event(e, "FailedSync", msg, "2017-02-11T11:40:12Z", obj=pod, count=14, first="2017-02-11T10:31:02Z")

    c, _ = _mc(
        slug,
        project="fabric8",
        pid="8",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        type_="Inference",
        phase="Initializing",
        memory="2Gi",
        gpu=0,
        k8s_phase="Init:CrashLoopBackOff",
        extra=ev,
        restart_policy="Always",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "gofabric8 on OpenShift Origin 1.4 (Kubernetes 1.4): dynamic PVs bind, but the busybox init containers of "
            "the gogs, nexus, jenkins and registry pods fail on file permissions of the volumes, reported as "
            '\'failed to "InitContainer" for "init" with RunInitContainerError: "init container \\"init\\" '
            "exited with 1\"' (the snapshot keeps the jenkins pod; names and times are illustrative). The volume is "
            "mounted; the init container's own command fails: INIT_FAILED naming init, quoting RunInitContainerError."
        ),
        source="https://github.com/fabric8io/gofabric8/issues/350",
        now=now,
        ask={"text": "jenkins pod stuck initializing after gofabric8 deploy", "workload_name": name, "intent": None},
        expect=_expect("INIT_FAILED", ["RunInitContainerError"]),
    )


@case
def linkerd_init_iptables_no_chain() -> dict[str, Any]:
    slug, now = "linkerd-init-iptables-no-chain-crashloop-openshift", "2020-08-13T22:00:00Z"
    name, pod = "linkerd-controller", "linkerd-controller-588d778444-7dfc5"
    img, init_img = "gcr.io/linkerd-io/controller:stable-2.8.1", "gcr.io/linkerd-io/proxy-init:v1.3.3"
    created, run_at = "2020-08-13T21:05:00Z", "2020-08-13T21:05:04Z"
    msg = (
        "o 4140\n\n"
        "2020/08/13 21:11:31 Executing commands:\n\n"
        "2020/08/13 21:11:31 > iptables -t nat -N PROXY_INIT_REDIRECT -m comment --comment "
        "proxy-init/redirect-common-chain/1597353091\n\n"
        "2020/08/13 21:11:31 < \n\n"
        "2020/08/13 21:11:31 > iptables -t nat -A PROXY_INIT_REDIRECT -p tcp --match multiport --dports 4190,4191 "
        "-j RETURN -m comment --comment proxy-init/ignore-port-4190,4191/1597353091\n\n"
        "2020/08/13 21:11:31 < \n\n"
        "2020/08/13 21:11:31 > iptables -t nat -A PROXY_INIT_REDIRECT -p tcp -j REDIRECT --to-port 4143 -m comment "
        "--comment proxy-init/redirect-all-incoming-to-proxy-port/1597353091\n\n"
        "2020/08/13 21:11:31 < iptables: No chain/target/match by that name.\n\n"
        "2020/08/13 21:11:31 Aborting firewall configuration\n"
    )
    p = P(
        pod,
        "ocp-worker-2",
        [
            C("public-api", img, waiting("PodInitializing"), memory="250Mi"),
            C("linkerd-proxy", "gcr.io/linkerd-io/proxy:stable-2.8.1", waiting("PodInitializing"), memory="250Mi"),
        ],
        init=[
            C(
                "linkerd-init",
                init_img,
                waiting(
                    "CrashLoopBackOff",
                    "back-off 10s restarting failed container=linkerd-init "
                    "pod=linkerd-controller-588d778444-7dfc5_linkerd(946ae8fa-6b67-4794-b044-56079cdff6a6)",
                ),
                memory="50Mi",
                last=terminated(1, "Error", "2020-08-13T21:11:31Z", "2020-08-13T21:11:31Z", message=msg),
                restarts=3,
            )
        ],
        phase="Pending",
        t1="Init:CrashLoopBackOff",
        restart_policy="Always",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, pod, "linkerd-init", "2020-08-13T21:11:33Z", 3, "2020-08-13T21:05:40Z")

    c, _ = _mc(
        slug,
        project="linkerd",
        pid="19",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        type_="Inference",
        phase="Initializing",
        memory="250Mi",
        gpu=0,
        k8s_phase="Init:CrashLoopBackOff",
        extra=ev,
        restart_policy="Always",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "Linkerd on OpenShift 4.5 with Calico: the linkerd-init init container of linkerd-controller is "
            "'waiting: reason: CrashLoopBackOff' with lastState 'terminated: exitCode: 1, reason: Error' and a "
            "termination message ending 'iptables: No chain/target/match by that name.' / 'Aborting firewall "
            "configuration' (verbatim; the images, limits and restart count are illustrative). A failing init "
            "container: INIT_FAILED naming linkerd-init and the iptables error."
        ),
        source="https://github.com/linkerd/linkerd2/issues/4851",
        now=now,
        ask={"text": "linkerd-controller Init:CrashLoopBackOff", "workload_name": name, "intent": None},
        expect=_expect("INIT_FAILED", ["linkerd-init", "No chain/target/match by that name"]),
    )


@case
def vault_agent_init_still_running_phase_only() -> dict[str, Any]:
    slug, now = "vault-agent-init-still-running-init-0-1-phase-only", "2021-01-12T17:33:40Z"
    name, pod = "app", "app-c45774854-9fbz6"
    node = "gke-anubbhav-demo-k8test-290716-anubb-820a053f-5rjs"
    img, agent = "jweissig/app:0.0.1", "vault:1.6.1"
    created, run_at = "2021-01-12T17:10:25Z", "2021-01-12T17:10:27Z"
    p = P(
        pod,
        node,
        [
            C(name, img, waiting("PodInitializing"), memory="256Mi"),
            C("vault-agent", agent, waiting("PodInitializing"), memory="128Mi"),
        ],
        init=[C("vault-agent-init", agent, running(run_at), memory="128Mi", ready=False, log="")],
        phase="Pending",
        t1="Init:0/1",
        restart_policy="Always",
    )
    c, _ = _mc(
        slug,
        project="anubbhav",
        pid="38",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        type_="Inference",
        phase="Initializing",
        memory="256Mi",
        gpu=0,
        k8s_phase="Init:0/1",
        restart_policy="Always",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "vault-k8s injection on GKE: the new app pod app-c45774854-9fbz6 is '0/2 Init:0/1 0 23m' while the old "
            "one runs; vault-agent-init is running, has not failed and has not restarted (the report later traces it "
            "to firewall rules; nothing in the pod says so). The workload is Initializing with no direct failed-pod "
            "signal: the current phase is reported and no category is assigned (phase_only)."
        ),
        source="https://github.com/hashicorp/vault-k8s/issues/206",
        now=now,
        ask={"text": "app is stuck in Init:0/1 for 20 minutes", "workload_name": name, "intent": None},
        expect=_expect(None, [], outcome="phase_only"),
    )


# ============================================================================ sidecars
@case
def istio_proxy_keeps_job_running() -> dict[str, Any]:
    slug, now = "istio-proxy-keeps-job-pod-running-after-main-completed", "2019-02-11T08:34:00Z"
    name, pod = "backup-at-uk-1549872000", "backup-at-uk-1549872000-7hrx7"
    img = "registry.example.com/search/solr-backup:8.0"
    created, run_at = "2019-02-11T08:00:00Z", "2019-02-11T08:00:03Z"
    p = P(
        pod,
        "gke-uk-pool-3",
        [
            C(
                "backup",
                img,
                terminated(0, "Completed", run_at, "2019-02-11T08:06:40Z"),
                memory="2Gi",
                log="backup done\n",
            ),
            C("istio-proxy", "docker.io/istio/proxyv2:1.0.5", running(run_at), memory="128Mi", log=""),
        ],
        phase="Running",
        t1="Running",
        restart_policy="Never",
    )
    c, _ = _mc(
        slug,
        project="search",
        pid="41",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        memory="2Gi",
        gpu=0,
        k8s_phase="Running",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            'A CronJob in an Istio-injected namespace: \'when the primary pod completes, the "Job" never completes '
            "because istio-proxy is still running' (backup-at-uk-1549872000-7hrx7, '1/2 Running 0 34m'); the "
            "report's main container finished, and pilot-agent keeps running even after /quitquitquit. The backup "
            "container's name, image and finish time are illustrative. Nothing failed: the workload is Running "
            "without a confirmed failure, so the answer asks whether a past run was meant (ask_past_run)."
        ),
        source="https://github.com/istio/istio/issues/11659",
        now=now,
        ask={"text": "backup-at-uk-1549872000 is stuck, it never completes", "workload_name": name, "intent": None},
        expect=_expect(None, [], outcome="ask_past_run"),
    )


@case
def git_sync_sidecar_crashloop() -> dict[str, Any]:
    slug, now = "git-sync-sidecar-crashloop-could-not-read-from-remote", "2018-08-20T21:00:00Z"
    name, pod = "kube-applier", "kube-applier-6949c7675b-g626g"
    img, gs = "registry.example.com/infra/kube-applier:0.2", "k8s.gcr.io/git-sync:v2.0.6"
    created, run_at = "2018-08-20T20:43:35Z", "2018-08-20T20:43:40Z"
    prev = (
        'I0820 20:43:42.280722       1 main.go:164] starting up: ["/git-sync"]\n'
        "I0820 20:43:47.214284       1 main.go:326] cloned ssh://<redacted>.git\n"
        "I0820 20:43:47.215581       1 main.go:270] syncing to HEAD (c5d769d3bd5d18c99e22f0b3e06e1d1280170808)\n"
        "E0820 20:43:52.225918       1 main.go:171] error syncing repo: error running command: exit status 128: "
        '"fatal: Could not read from remote repository.\\n\\nPlease make sure you have the correct access rights\\n'
        'and the repository exists.\\n"\n'
    )
    p = P(
        pod,
        "ip-10-0-3-17",
        [
            C(name, img, running(run_at), memory="512Mi", log="waiting for /git/repo\n"),
            C(
                "git-sync",
                gs,
                waiting(
                    "CrashLoopBackOff", f"back-off 2m40s restarting failed container=git-sync pod={pod}_runai-infra"
                ),
                memory="256Mi",
                last=terminated(1, "Error", "2018-08-20T20:43:42Z", "2018-08-20T20:43:52Z"),
                restarts=5,
                prev_log=prev,
            ),
        ],
        phase="Running",
        t1="CrashLoopBackOff",
        restart_policy="Always",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, pod, "git-sync", "2018-08-20T20:58:02Z", 5, "2018-08-20T20:44:05Z")

    c, _ = _mc(
        slug,
        project="infra",
        pid="3",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        type_="Inference",
        memory="512Mi",
        gpu=0,
        k8s_phase="Running",
        extra=ev,
        restart_policy="Always",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "'Git-Sync goes into a crash-loop forever if it fails after the initial clone': the git-sync sidecar of "
            "kube-applier clones, then logs 'error syncing repo: error running command: exit status 128: \"fatal: "
            "Could not read from remote repository...' and exits; every restart then fails on the existing "
            "destination. The previous log shown is the report's first run (verbatim); the image tags, exit code 1 "
            "and restart count are illustrative. The main container runs; the sidecar's own program fails in a loop: "
            "CRASH_APP_ERROR naming git-sync."
        ),
        source="https://github.com/kubernetes/git-sync/issues/105",
        now=now,
        ask={"text": "kube-applier stopped applying, why?", "workload_name": name, "intent": None},
        expect=_expect("CRASH_APP_ERROR", ["git-sync", "Could not read from remote repository"]),
    )


@case
def consul_lifecycle_sidecar_oom() -> dict[str, Any]:
    slug, now = "consul-lifecycle-sidecar-oomkilled-at-25mi", "2020-07-13T12:00:00Z"
    name, pod = "ranker-api", "ranker-api-0-0"
    img = "registry.example.com/search/ranker:4.1"
    sc, sc_img = "consul-connect-lifecycle-sidecar", "hashicorp/consul-k8s:0.16.0"
    created, run_at = "2020-07-12T18:00:00Z", "2020-07-12T18:00:05Z"
    p = P(
        pod,
        "gpu-node-23",
        [
            C(name, img, running(run_at), memory="16Gi", gpu=1, log=""),
            C("envoy-sidecar", "envoyproxy/envoy-alpine:v1.14.2", running(run_at), memory="128Mi", log=""),
            C(
                sc,
                sc_img,
                waiting("CrashLoopBackOff", f"back-off 5m0s restarting failed container={sc} pod={pod}_runai-search"),
                memory="25Mi",
                last=terminated(137, "OOMKilled", "2020-07-13T11:30:02Z", "2020-07-13T11:41:18Z"),
                restarts=9,
                prev_log="",
            ),
        ],
        phase="Running",
        t1="CrashLoopBackOff",
        restart_policy="Always",
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, pod, sc, "2020-07-13T11:41:20Z", 9, "2020-07-12T21:10:00Z")
        c.k8s_event(
            "gpu-node-23",
            "SystemOOM",
            "System OOM encountered, victim process: consul-k8s, pid: 21893",
            "2020-07-13T11:41:18Z",
            kind="Node",
            component="kubelet",
        )

    c, _ = _mc(
        slug,
        project="search",
        pid="41",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        type_="Inference",
        memory="16Gi",
        k8s_phase="Running",
        extra=ev,
        restart_policy="Always",
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "consul-k8s 0.16 added resource limits to the injected lifecycle sidecar (lifecycleContainerMemoryLimit "
            "= \"25Mi\"); with it, the kernel reports 'memory: usage 25600kB, limit 25600kB, failcnt 3986' and the "
            "sidecar is OOM-killed again and again while the application and Envoy keep running. The application, "
            "restart count, times and the SystemOOM node event are illustrative. OOM_KILLED, naming the lifecycle "
            "sidecar and its own 25Mi limit, not the application's 16Gi."
        ),
        source="https://github.com/hashicorp/consul-k8s/issues/294",
        now=now,
        ask={"text": "ranker-api keeps restarting something, consul?", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", [sc, "25Mi", "OOMKilled"]),
    )


@case
def istio_envoy_not_ready_main_connection_refused() -> dict[str, Any]:
    slug, now = "istio-envoy-not-ready-training-main-connection-refused", "2021-04-20T22:30:00Z"
    name, pod = "ravnml-w8857", "ravnml-w8857-3116787102"
    img, exe = "registry.example.com/ravnml/training:0.7", "gcr.io/ml-pipeline/argoexec:v2.12.9-license-compliance"
    proxy = "docker.io/istio/proxyv2:1.9.2"
    created, run_at = "2021-04-20T21:37:50Z", "2021-04-20T21:37:52Z"
    end = "2021-04-20T21:37:55Z"
    proxy_log = (
        "2021-04-20T21:37:52.745567Z info Epoch 0 starting\n"
        "2021-04-20T21:37:52.746060Z info Opening status port 15020\n"
        "2021-04-20T21:37:53.024006Z info cache Root cert has changed, start rotating root cert\n"
        "2021-04-20T21:37:53.024033Z info ads XDS: Incremental Pushing:0 ConnectedEndpoints:0 Version:\n"
        "2021-04-20T21:37:53.024046Z info cache generated new workload certificate latency=295.635545ms "
        "ttl=23h59m59.975961542s\n"
        "2021-04-20T21:37:53.753728Z warn HTTP request unsuccessful with status: 400 Bad Request\n"
    )
    main_log = (
        "Downloading training data from minio-service.kubeflow:9000 ...\n"
        "urllib3.exceptions.NewConnectionError: <urllib3.connection.HTTPConnection object at 0x7f2b1c3d4e50>: Failed "
        "to establish a new connection: [Errno 111] Connection refused\n"
    )
    p = P(
        pod,
        "aks-mleff3-11574466-vmss000006",
        [
            C("wait", exe, terminated(0, "Completed", run_at, at(end, seconds=2)), memory="256Mi", log=""),
            C("main", img, terminated(1, "Error", run_at, end), memory="8Gi", log=main_log),
            C(
                "istio-proxy",
                proxy,
                terminated(0, "Completed", run_at, at(end, seconds=4)),
                memory="1Gi",
                log=proxy_log,
            ),
        ],
        completed=at(end, seconds=4),
        labels={"app": "training", "workflows.argoproj.io/completed": "true"},
    )

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, pod, "main", "Error", 1, at(end, seconds=1))

    c, _ = _mc(
        slug,
        project="ravnml-dev",
        pid="66",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        pod=p,
        now=now,
        phase="Failed",
        phase_at=at(end, seconds=5),
        memory="8Gi",
        gpu=0,
        phase_message=f"Pod {pod} failed: container main terminated with reason Error (exit code 1)",
        extra=ev,
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A Kubeflow pipelines (Argo) training step in an Istio mesh: 'because the envoy is not ready I get "
            "connection refused error from main application'; istio-proxy's log (verbatim) is still bootstrapping "
            "when main starts. The main container's log line and the exit codes are illustrative. The main "
            "container's own program failed on a refused connection (its sidecar not ready yet is the probable "
            "cause, named in the report): CRASH_APP_ERROR naming main."
        ),
        source="https://github.com/istio/istio/issues/32233",
        now=now,
        ask={"text": "ravnml-w8857 failed, is istio broken?", "workload_name": name, "intent": "terminal"},
        expect=_expect("CRASH_APP_ERROR", ["main", "Connection refused"]),
    )


# ============================================================================ distributed: launchers and workers
@case
def mpi_launcher_crashloop_ssh_resolve() -> dict[str, Any]:
    slug, now = "mpi-launcher-crashloop-ssh-could-not-resolve-worker", "2022-11-03T10:00:00Z"
    name, img = "tensorflow-benchmarks", "mpioperator/tensorflow-benchmarks:latest"
    created, run_at = "2022-11-03T09:40:00Z", "2022-11-03T09:40:30Z"
    launcher = f"{name}-launcher-5x9kq"
    log = (
        f"ssh: Could not resolve hostname {name}-worker-0.{name}-worker: Name or service not known\n"
        f"ssh: Could not resolve hostname {name}-worker-1.{name}-worker: Name or service not known\n"
        "--------------------------------------------------------------------------\n"
        "ORTE was unable to reliably start one or more daemons.\n"
        "This usually is caused by:\n"
    )
    pods = [
        P(
            launcher,
            "cpu-n02",
            [
                C(
                    "launcher",
                    img,
                    waiting(
                        "CrashLoopBackOff",
                        f"back-off 2m40s restarting failed container=launcher pod={launcher}_runai-bench",
                    ),
                    memory="4Gi",
                    last=terminated(1, "Error", "2022-11-03T09:52:10Z", "2022-11-03T09:52:13Z"),
                    restarts=5,
                    prev_log=log,
                )
            ],
            phase="Running",
            t1="CrashLoopBackOff",
            restart_policy="OnFailure",
            labels={"training.kubeflow.org/job-role": "launcher"},
        )
    ] + [
        P(
            f"{name}-worker-{i}",
            f"gpu-n0{i + 1}",
            [C("worker", img, running(run_at), gpu=1, memory="32Gi", log="Server listening on 0.0.0.0 port 22.\n")],
            phase="Running",
            t1="Running",
            labels={"training.kubeflow.org/job-role": "worker"},
        )
        for i in range(2)
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, launcher, "launcher", "2022-11-03T09:52:15Z", 5, "2022-11-03T09:41:05Z")

    c, _ = _torch_job(
        slug,
        project="bench",
        pid="24",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end="2022-11-03T09:52:13Z",
        workers=2,
        gpu=1,
        memory="32Gi",
        command=(
            "mpirun --allow-run-as-root -np 2 -bind-to none -map-by slot "
            "python scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py"
        ),
        pods=pods,
        now=now,
        phase="Running",
        framework="MPI",
        extra=ev,
        running_pods=2,
    )
    return _doc(
        c,
        "distributed",
        description=(
            "The v2beta1 tensorflow-benchmarks MPIJob example: the launcher is in CrashLoopBackOff and its log shows "
            "'ssh: Could not resolve hostname tensorflow-benchmarks-worker-0.tensorflow-benchmarks-worker: Name or "
            "service not known' for both workers, then 'ORTE was unable to reliably start one or more daemons.' "
            "while the two workers run. The launcher's pod name suffix, exit code 1 and restart count are "
            "illustrative. The workload is Running with a crash loop confirmed now; the launcher's own mpirun fails: "
            "CRASH_APP_ERROR naming the launcher and the resolution error."
        ),
        source="https://github.com/kubeflow/mpi-operator/issues/481",
        now=now,
        ask={
            "text": "tensorflow-benchmarks launcher never finishes initialization",
            "workload_name": name,
            "intent": None,
        },
        expect=_expect("CRASH_APP_ERROR", [launcher, "Could not resolve hostname"]),
    )


@case
def mpijob_worker_evicted_pod_gone() -> dict[str, Any]:
    slug, now = "mpijob-one-of-8-workers-evicted-pod-gone-unknown", "2024-08-15T09:00:00Z"
    c = RunaiCase(slug, project="nlp", project_id="98")
    name, img = "bert-large-mpi", "registry.example.com/nlp/horovod-bert:0.28"
    created, run_at = "2024-08-14T19:45:39Z", "2024-08-14T19:48:02Z"
    evicted, l_end, failed = "2024-08-15T04:01:31Z", "2024-08-15T04:01:40Z", "2024-08-15T04:01:42Z"
    launcher, gone = f"{name}-launcher-m2x8d", f"{name}-worker-5"
    e = distributed(
        c,
        name,
        created=created,
        run_at=run_at,
        phase="Failed",
        phase_at=at(failed, seconds=3),
        image=img,
        framework="MPI",
        workers=8,
        gpu=8,
        memory="900Gi",
        pods_requested=9,
        running_pods=7,
        command="mpirun -np 64 python run_pretraining.py",
        phase_message="1/8 workers are evicted",
    )
    workers = [f"{name}-worker-{i}" for i in (0, 1)]
    scheduled(
        c,
        e,
        {launcher: "cpu-n07", gone: "h100-n15", **{w: f"h100-n1{i}" for i, w in enumerate(workers)}},
        at(created, seconds=4),
    )
    c.phase(e, "Running", run_at)
    c.event(
        e,
        "MPIJobEvicted",
        "1/8 workers are evicted",
        failed,
        obj=name,
        kind="MPIJob",
        source="mpi-job-controller",
    )
    c.phase(e, "Failed", at(failed, seconds=3), "1/8 workers are evicted")
    pods = [
        P(
            gone,
            "h100-n15",
            [C("worker", img, running(run_at), gpu=8, memory="900Gi")],
            t1="Failed",
            completed=evicted,
            deleted=at(evicted, seconds=2),
            k8s=False,
        ),
        P(
            launcher,
            "cpu-n07",
            [C("launcher", img, terminated(1, "Error", run_at, l_end), memory="8Gi", log="")],
            completed=l_end,
            labels={"training.kubeflow.org/job-role": "launcher"},
        ),
    ] + [
        P(
            w,
            f"h100-n1{i}",
            [C("worker", img, running(run_at), gpu=8, memory="900Gi", log="")],
            phase="Running",
            t1="Running",
            labels={"training.kubeflow.org/job-role": "worker"},
        )
        for i, w in enumerate(workers)
    ]
    add_pods(c, e, pods, workload=name, created=created, run_at=run_at, now=now, owner_kind="DistributedWorkload")
    return _doc(
        c,
        "distributed",
        description=(
            "An MPIJob with 8 workers (runPolicy cleanPodPolicy Running, backoffLimit 1): 'If the worker pod got "
            "evicted, the entire MPIJob will run into Failed state' with condition reason MPIJobEvicted, message '1/8 "
            "workers are evicted', replicaStatuses Launcher failed 1, Worker active 7 failed 1, and the other workers "
            "keep running. The evicted worker (worker-5 here) is gone from Kubernetes and only the Run:ai pods list "
            "shows it; nothing says why it was evicted. Names, nodes and the launcher's exit are illustrative. The "
            "pod that failed first cannot be seen: UNKNOWN, naming the evicted worker and quoting the condition."
        ),
        source="https://github.com/kubeflow/mpi-operator/issues/647",
        now=now,
        ask={"text": "why did bert-large-mpi fail overnight?", "workload_name": name, "intent": "terminal"},
        expect=_expect("UNKNOWN", [gone, "1/8 workers are evicted"]),
    )


@case
def pytorchjob_master_image_pull_worker_initializing() -> dict[str, Any]:
    slug, now = "pytorchjob-master-failing-to-pull-worker-podinitializing", "2020-04-21T09:27:00Z"
    c = RunaiCase(slug, project="kubeflow", project_id="20")
    name, img = "pytorch-dist-mnist-gloo", "gcr.io/kubeflow-ci/pytorch_dist_mnist:latest"
    created, run_at = "2020-04-21T09:00:00Z", "2020-04-21T09:00:05Z"
    m, w = f"{name}-master-0", f"{name}-worker-0"
    e = distributed(
        c,
        name,
        created=created,
        run_at=run_at,
        phase="Initializing",
        phase_at=run_at,
        image=img,
        framework="PyTorch",
        workers=1,
        gpu=0,
        memory="4Gi",
        pods_requested=2,
        command="python /var/mnist.py --backend gloo",
    )
    scheduled(c, e, {m: "microk8s-node", w: "microk8s-node"}, at(created, seconds=2))
    c.phase(e, "Initializing", run_at)
    c.event(
        e, "Failed", "Error: ImagePullBackOff", "2020-04-21T09:26:10Z", obj=m, count=98, first="2020-04-21T09:01:02Z"
    )
    _pull_backoff(c, e, m, img, "2020-04-21T09:26:10Z", 101, "2020-04-21T09:01:02Z")
    pods = [
        P(
            m,
            "microk8s-node",
            [C("pytorch", img, waiting("ImagePullBackOff", f'Back-off pulling image "{img}"'), memory="4Gi")],
            phase="Pending",
            t1="ImagePullBackOff",
            replica="master",
            restart_policy="OnFailure",
        ),
        P(
            w,
            "microk8s-node",
            [C("pytorch", img, waiting("PodInitializing"), memory="4Gi")],
            init=[
                C(
                    "init-pytorch",
                    "alpine:3.10",
                    running(run_at),
                    memory="20Mi",
                    ready=False,
                    log=f"nslookup: can't resolve '{m}'\n",
                )
            ],
            phase="Pending",
            t1="Init:0/1",
            replica="worker",
            restart_policy="OnFailure",
        ),
    ]
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
        "distributed",
        description=(
            "The PyTorchJob gloo example on MicroK8s with the image changed to gcr.io/kubeflow-ci/pytorch_dist_mnist:"
            'latest: both pods stay Pending for 27 minutes; `kubectl logs` of the master says \'container "pytorch" '
            'in pod "pytorch-dist-mnist-gloo-master-0" is waiting to start: trying and failing to pull image\', and '
            "the worker's 'is waiting to start: PodInitializing' (its init-pytorch waits for the master). The pull "
            "events and the init log are illustrative. A direct image-pull signal on the master: IMAGE_PULL_FAILED "
            "naming the master and the image; the worker's wait follows from it."
        ),
        source="https://github.com/kubeflow/pytorch-operator/issues/264",
        now=now,
        ask={"text": "pytorch-dist-mnist-gloo is not starting", "workload_name": name, "intent": None},
        expect=_expect("IMAGE_PULL_FAILED", [m, img]),
    )


@case
def pytorchjob_worker_init_pytorch_ecr_name_unknown() -> dict[str, Any]:
    slug, now = "pytorchjob-worker-init-pytorch-alpine-ecr-name-unknown", "2021-06-16T12:00:00Z"
    c = RunaiCase(slug, project="ml-platform", project_id="36")
    name, img = "pytorch-dist-mnist-nccl", "gcr.io/kubeflow-images-public/pytorch-dist-mnist-test:latest"
    created, run_at = "2021-06-16T11:20:00Z", "2021-06-16T11:20:40Z"
    m, w = f"{name}-master-0", f"{name}-worker-0"
    pull_msg = (
        'Failed to pull image "alpine:3.10": rpc error: code = Unknown desc = Error reading manifest 3.10 in '
        "OUR_AWS_ACCOUNT.dkr.ecr.us-west-2.amazonaws.com/alpine: name unknown: The repository with name 'alpine' "
        "does not exist in the registry with id 'OUR_AWS_ACCOUNT'"
    )
    e = distributed(
        c,
        name,
        created=created,
        run_at=run_at,
        phase="Initializing",
        phase_at=run_at,
        image=img,
        framework="PyTorch",
        workers=1,
        gpu=1,
        memory="16Gi",
        pods_requested=2,
        command="python /var/dist_mnist.py --backend nccl",
    )
    scheduled(
        c,
        e,
        {m: "ip-10-2-41-7.us-west-2.compute.internal", w: "ip-10-2-43-112.us-west-2.compute.internal"},
        at(created, seconds=3),
    )
    c.phase(e, "Initializing", run_at)
    c.event(e, "Failed", pull_msg, "2021-06-16T11:58:12Z", obj=w, count=11, first="2021-06-16T11:20:45Z")
    _pull_backoff(c, e, w, "alpine:3.10", "2021-06-16T11:58:40Z", 160, "2021-06-16T11:20:47Z")
    pods = [
        P(
            m,
            "ip-10-2-41-7.us-west-2.compute.internal",
            [
                C(
                    "pytorch",
                    img,
                    running(run_at),
                    gpu=1,
                    memory="16Gi",
                    log="Using distributed PyTorch with nccl backend\n",
                )
            ],
            phase="Running",
            t1="Running",
            replica="master",
            restart_policy="OnFailure",
        ),
        P(
            w,
            "ip-10-2-43-112.us-west-2.compute.internal",
            [C("pytorch", img, waiting("PodInitializing"), gpu=1, memory="16Gi")],
            init=[
                C(
                    "init-pytorch",
                    "alpine:3.10",
                    waiting("ImagePullBackOff", 'Back-off pulling image "alpine:3.10"'),
                    memory="20Mi",
                )
            ],
            phase="Pending",
            t1="Init:ImagePullBackOff",
            replica="worker",
            restart_policy="OnFailure",
        ),
    ]
    add_pods(
        c,
        e,
        pods,
        workload=name,
        created=created,
        run_at=run_at,
        now=now,
        owner_kind="DistributedWorkload",
        node_kw={"gpus": 1, "product": "Tesla-V100-SXM2-16GB"},
    )
    return _doc(
        c,
        "multi-container",
        description=(
            "A PyTorchJob on EKS whose registry rewrites image references to a private ECR: the worker pods fail "
            "'with ImagePullBackOff Errors' on their init container init-pytorch, 'Failed to pull image "
            '"alpine:3.10": rpc error: code = Unknown desc = Error reading manifest 3.10 in '
            "OUR_AWS_ACCOUNT.dkr.ecr.us-west-2.amazonaws.com/alpine: name unknown: ...', while the master runs and "
            "waits. Nodes and times are illustrative. IMAGE_PULL_FAILED, naming the init container init-pytorch and "
            "its image alpine:3.10 (not the training image)."
        ),
        source="https://github.com/kubeflow/pytorch-operator/issues/319",
        now=now,
        ask={"text": "pytorch-dist-mnist-nccl workers never start", "workload_name": name, "intent": None},
        expect=_expect("IMAGE_PULL_FAILED", ["init-pytorch", "alpine:3.10"]),
    )


@case
def mpi_launcher_unprotected_key_istio() -> dict[str, Any]:
    slug, now = "mpi-launcher-unprotected-private-key-istio-injected", "2021-09-29T10:00:00Z"
    name, img = "tensorflow-benchmarks", "mpioperator/tensorflow-benchmarks:latest"
    proxy = "docker.io/istio/proxyv2:1.9.6"
    created, run_at = "2021-09-29T09:30:00Z", "2021-09-29T09:30:20Z"
    launcher = f"{name}-launcher-62t7l"
    log = (
        f"Warning: Permanently added '{name}-worker-1.{name}-worker,10.42.138.147' (ECDSA) to the list of known "
        "hosts.\n"
        f"Warning: Permanently added '{name}-worker-0.{name}-worker,10.42.91.237' (ECDSA) to the list of known "
        "hosts.\n"
        "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
        "@         WARNING: UNPROTECTED PRIVATE KEY FILE!          @\n"
        "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
        "Permissions 0640 for '/root/.ssh/id_rsa' are too open.\n"
    )
    pods = [
        P(
            launcher,
            "node-10-210-152-99",
            [
                C(
                    "tensorflow-benchmarks",
                    img,
                    waiting(
                        "CrashLoopBackOff",
                        "back-off 2m40s restarting failed container=tensorflow-benchmarks "
                        f"pod={launcher}_runai-ping-wang",
                    ),
                    memory="4Gi",
                    last=terminated(255, "Error", "2021-09-29T09:51:02Z", "2021-09-29T09:51:04Z"),
                    restarts=6,
                    prev_log=log,
                ),
                C("istio-proxy", proxy, running(run_at), memory="1Gi", log=""),
            ],
            init=[
                C(
                    "istio-init",
                    proxy,
                    terminated(0, "Completed", "2021-09-29T09:30:18Z", "2021-09-29T09:30:19Z"),
                    memory="1Gi",
                )
            ],
            phase="Running",
            t1="CrashLoopBackOff",
            restart_policy="OnFailure",
            labels={"training.kubeflow.org/job-role": "launcher"},
        )
    ] + [
        P(
            f"{name}-worker-{i}",
            f"node-10-210-152-{100 + i}",
            [
                C("tensorflow-benchmarks", img, running(run_at), gpu=1, memory="32Gi", log=""),
                C("istio-proxy", proxy, running(run_at), memory="1Gi", log=""),
            ],
            phase="Running",
            t1="Running",
            labels={"training.kubeflow.org/job-role": "worker"},
        )
        for i in range(2)
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, launcher, "tensorflow-benchmarks", "2021-09-29T09:51:06Z", 6, "2021-09-29T09:31:10Z")

    c, _ = _torch_job(
        slug,
        project="ping-wang",
        pid="90",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end="2021-09-29T09:51:04Z",
        workers=2,
        gpu=1,
        memory="32Gi",
        command="mpirun --allow-run-as-root -np 2 python scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py",
        pods=pods,
        now=now,
        phase="Running",
        framework="MPI",
        extra=ev,
        running_pods=2,
    )
    return _doc(
        c,
        "distributed",
        description=(
            "The tensorflow-benchmarks MPIJob in an Istio-injected namespace (launcher containers "
            "'tensorflow-benchmarks, istio-proxy, istio-init (init)'): `kubectl exec` into the launcher says 'error: "
            'unable to upgrade connection: container not found ("tensorflow-benchmarks")\' and its log ends with '
            "'WARNING: UNPROTECTED PRIVATE KEY FILE!' / \"Permissions 0640 for '/root/.ssh/id_rsa' are too open.\"; "
            "the workers run. The exit code 255 (ssh), restart count and nodes are illustrative. The launcher's own "
            "container fails in a loop: CRASH_APP_ERROR naming the launcher and the key-permission error."
        ),
        source="https://github.com/kubeflow/mpi-operator/issues/424",
        now=now,
        ask={"text": "tensorflow-benchmarks launcher keeps restarting", "workload_name": name, "intent": None},
        expect=_expect("CRASH_APP_ERROR", [launcher, "UNPROTECTED PRIVATE KEY FILE"]),
    )


@case
def mpi_launcher_restarted_twice_then_running() -> dict[str, Any]:
    slug, now = "mpi-launcher-restarted-twice-before-network-up-backoff-diagnosed", "2022-07-29T10:05:00Z"
    name, img = "nccl-tests-efa-16", "public.ecr.aws/w6p6i9i7/aws-efa-nccl-rdma:22.03-pt-py3"
    created, run_at = "2022-07-29T10:03:30Z", "2022-07-29T10:03:31Z"
    launcher = f"{name}-launcher-mkjgm"
    pods = [
        P(
            launcher,
            "ip-192-168-12-4",
            [
                C(
                    "nccl-tests",
                    img,
                    running("2022-07-29T10:03:53Z"),
                    memory="8Gi",
                    last=terminated(1, "Error", "2022-07-29T10:03:38Z", "2022-07-29T10:03:40Z"),
                    restarts=2,
                    log=(
                        "# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
                        "iters: 100\n"
                    ),
                )
            ],
            phase="Running",
            t1="Running",
            restart_policy="OnFailure",
            labels={"training.kubeflow.org/job-role": "launcher"},
        ),
        P(
            f"{name}-worker-0",
            "p4d-n01",
            [C("nccl-tests", img, running(run_at), gpu=8, memory="900Gi", log="")],
            phase="Running",
            t1="Running",
            labels={"training.kubeflow.org/job-role": "worker"},
        ),
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, launcher, "nccl-tests", "2022-07-29T10:03:45Z", 1, "2022-07-29T10:03:45Z")

    c, _ = _torch_job(
        slug,
        project="hpc",
        pid="31",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end="2022-07-29T10:03:40Z",
        workers=1,
        gpu=8,
        memory="900Gi",
        command="mpirun --allow-run-as-root -np 8 /opt/nccl-tests/build/all_reduce_perf -b 8 -e 1G -f 2",
        pods=pods,
        now=now,
        phase="Running",
        framework="MPI",
        extra=ev,
        running_pods=2,
        node_kw={"product": "NVIDIA-A100-SXM4-40GB"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "nccl-tests as a v2beta1 MPIJob on EFA: the launcher starts before pod networking is up, shows 'Error' "
            "after 5 s, then 'CrashLoopBackOff 1 (15s ago)', and on the next restart runs normally ('1/1 Running "
            "2 (21s ago) 28s'). The exit code and log line are illustrative. The launcher is running again, but two "
            "restarts with the kubelet's BackOff event are repeated container crashes (the house rule spares only "
            "one past restart): the Running workload is diagnosed, CRASH_APP_ERROR naming the launcher's own exit."
        ),
        source="https://github.com/kubeflow/mpi-operator/issues/470",
        now=now,
        ask={"text": "nccl-tests-efa-16 launcher crashed on start, why?", "workload_name": name, "intent": None},
        expect=_expect("CRASH_APP_ERROR", [launcher]),
    )


@case
def mpijob_launcher_completed_workers_running() -> dict[str, Any]:
    slug, now = "mpijob-launcher-completed-workers-still-running-succeeded", "2022-03-12T12:00:00Z"
    c = RunaiCase(slug, project="elastic", project_id="29")
    name, img = "tensorflow-mnist-elastic", "horovod/horovod:0.20.0-tf2.3.0-torch1.6.0-mxnet1.5.0-py3.7-cpu"
    created, run_at, done = "2022-03-12T10:50:00Z", "2022-03-12T10:50:30Z", "2022-03-12T11:08:14Z"
    launcher = f"{name}-launcher-qd7zk"
    e = distributed(
        c,
        name,
        created=created,
        run_at=run_at,
        phase="Completed",
        phase_at=at(done, seconds=3),
        image=img,
        framework="MPI",
        workers=2,
        gpu=0,
        memory="4Gi",
        pods_requested=3,
        running_pods=2,
        command=(
            "horovodrun -np 2 --min-np 1 --max-np 3 --host-discovery-script /etc/mpi/discover_hosts.sh "
            "python /examples/elastic/tensorflow2_mnist_elastic.py"
        ),
    )
    scheduled(
        c, e, {launcher: "node-a", f"{name}-worker-0": "node-a", f"{name}-worker-1": "node-a"}, at(created, seconds=3)
    )
    c.phase(e, "Running", run_at)
    c.phase(e, "Completed", at(done, seconds=3))
    pods = [
        P(
            launcher,
            "node-a",
            [
                C(
                    "mpi-launcher",
                    img,
                    terminated(0, "Completed", run_at, done),
                    memory="2Gi",
                    log="Step #1000\tLoss: 0.041236\n",
                )
            ],
            phase="Succeeded",
            t1="Succeeded",
            completed=done,
            labels={"training.kubeflow.org/job-role": "launcher"},
        )
    ] + [
        P(
            f"{name}-worker-{i}",
            "node-a",
            [C("mpi-worker", img, running(run_at), memory="4Gi", log="")],
            phase="Running",
            t1="Running",
            labels={"training.kubeflow.org/job-role": "worker"},
        )
        for i in range(2)
    ]
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
        "distributed",
        description=(
            "The Horovod elastic example as a kubeflow/v1 MPIJob under training-operator: 'launcher completed but "
            "workers are still running' (when the workers share the launcher's node they run for another 40-50 "
            "minutes, a cleanPodPolicy labelling bug). The launcher exited 0 and the workload is Completed: the "
            "answer is that it succeeded (the lingering workers may be mentioned; they are not a failure)."
        ),
        source="https://github.com/kubeflow/trainer/issues/1546",
        now=now,
        ask={
            "text": "tensorflow-mnist-elastic launcher completed but workers still running, did it fail?",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect(None, [], outcome="succeeded"),
    )


# ============================================================================ gang scheduling: Pending is routed
def _gang_pending(
    slug: str,
    *,
    project: str,
    pid: str,
    name: str,
    img: str,
    created: str,
    now: str,
    framework: str,
    workers: int,
    gpu: float,
    memory: str,
    command: str,
    pods: list[str],
    messages: list[tuple[str, str, str]],
    scheduler: str,
    group: str,
    type_: str = "Distributed",
    create_pods: bool = True,
) -> RunaiCase:
    """A gang-scheduled workload Pending with only scheduler messages ((reason, type, message) on its PodGroup)."""
    c = RunaiCase(slug, project=project, project_id=pid)
    last = messages[-1][2]
    if type_ == "Distributed":
        e = distributed(
            c,
            name,
            created=created,
            run_at=created,
            phase="Pending",
            phase_at=at(created, seconds=2),
            image=img,
            framework=framework,
            workers=workers,
            gpu=gpu,
            memory=memory,
            pods_requested=max(len(pods), 1),
            command=command,
            phase_message=last,
        )
    else:
        e = c.workload(
            name,
            created=created,
            phase="Pending",
            phase_at=at(created, seconds=2),
            image=img,
            type_=type_,
            gpu=gpu,
            memory=memory,
            command=command,
            phase_message=last,
        )
        c.phase(e, "Pending", created)
    e["workload"]["pendingSchedulingMessages"] = [
        {
            "nodePool": "default",
            "phaseReason": "Unschedulable",
            "reason": "Unschedulable",
            "orgType": "PROJECT",
            "userMessage": last,
        }
    ]
    for i, (reason, kind, msg) in enumerate(messages):
        for minutes in (0, 10, 30):
            c.event(
                e,
                reason,
                msg,
                at(created, minutes=minutes + i, seconds=5),
                obj=group,
                kind="PodGroup",
                type_=kind,
                source=scheduler,
            )
    if create_pods:
        add_pods(
            c,
            e,
            [
                P(
                    p,
                    None,
                    [C("main", img, waiting("ContainerCreating"), gpu=gpu, memory=memory)],
                    phase="Pending",
                    t1="Pending",
                )
                for p in pods
            ],
            workload=name,
            created=created,
            run_at=created,
            now=now,
            owner_kind="DistributedWorkload" if type_ == "Distributed" else "InferenceWorkload",
        )
    return c


@case
def volcano_mpijob_gang_notenoughresources() -> dict[str, Any]:
    slug, now = "volcano-mpijob-podgroup-inqueue-notenoughresources", "2019-09-18T04:00:00Z"
    name = "mxnet-horovod-job"
    msg = "3/0 tasks in gang unschedulable: job is not ready, 3 minAvailable."
    c = _gang_pending(
        slug,
        project="default-team",
        pid="4",
        name=name,
        img="registry.example.com/mxnet/horovod-mxnet:0.16.2",
        created="2019-09-18T03:08:31Z",
        now=now,
        framework="MPI",
        workers=2,
        gpu=1,
        memory="16Gi",
        command="mpirun -np 2 python mxnet_mnist.py",
        pods=[f"{name}-launcher-8c2fw", f"{name}-worker-0", f"{name}-worker-1"],
        messages=[("Unschedulable", "Warning", msg)],
        scheduler="volcano",
        group=name,
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A Horovod MPIJob (2 workers of 1 GPU each plus the launcher) under Volcano: the PodGroup (minMember 3) "
            "stays in phase Inqueue with condition reason NotEnoughResources, '3/0 tasks in gang unschedulable: job "
            "is not ready, 3 minAvailable.', although the reporter is 'sure the cluster has enough gpu resources'. "
            "Image and pod names are illustrative. Pending with scheduling-only evidence: route_pending, quoting "
            "the gang message."
        ),
        source="https://github.com/volcano-sh/volcano/issues/452",
        now=now,
        ask={
            "text": "mxnet-horovod-job failed to launch after installing volcano",
            "workload_name": name,
            "intent": None,
        },
        expect=_expect(None, ["3/0 tasks in gang unschedulable"], outcome="route_pending"),
    )


@case
def kube_batch_min_member_not_enough_resource() -> dict[str, Any]:
    slug, now = "kube-batch-podgroup-min-member-6-not-enough-resource", "2018-10-19T17:40:00Z"
    name = "qj-1"
    c = _gang_pending(
        slug,
        project="default-team",
        pid="4",
        name=name,
        img="registry.example.com/batch/trainer:0.2",
        created="2018-10-19T17:24:44Z",
        now=now,
        framework="PyTorch",
        workers=5,
        gpu=1,
        memory="8Gi",
        command="python train.py",
        pods=[f"{name}-master-0"] + [f"{name}-worker-{i}" for i in range(2)],
        messages=[("Unschedulable", "Warning", "not enough resource for job")],
        scheduler="kube-batch",
        group=name,
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A gang-scheduled job under kube-batch v0.2: `kubectl describe podgroups` of qj-1 shows 'Min Member: 6' "
            "and the event 'Warning Unschedulable 6m kube-batch not enough resource for job'. The framework, image "
            "and the 3 pods kept in the snapshot are illustrative. Pending with scheduling-only evidence: "
            "route_pending, quoting the scheduler's message."
        ),
        source="https://github.com/kubernetes-retired/kube-batch/issues/447",
        now=now,
        ask={"text": "why is qj-1 not running?", "workload_name": name, "intent": None},
        expect=_expect(None, ["not enough resource for job"], outcome="route_pending"),
    )


@case
def volcano_train_insufficient_gpu() -> dict[str, Any]:
    slug, now = "volcano-train-example-insufficient-gpu-pending", "2025-02-24T04:00:00Z"
    name = "train-example"
    c = _gang_pending(
        slug,
        project="training",
        pid="77",
        name=name,
        img="registry.example.com/llm/train:2025.02",
        created="2025-02-24T02:45:39Z",
        now=now,
        framework="PyTorch",
        workers=3,
        gpu=8,
        memory="1000Gi",
        command="torchrun --nnodes 4 --nproc_per_node 8 train.py",
        pods=[f"{name}-master-0"] + [f"{name}-worker-{i}" for i in range(3)],
        messages=[("Unschedulable", "Warning", "0/101 nodes are unavailable: 100 Insufficient nvidia.com/gpu.")],
        scheduler="volcano",
        group=f"{name}-df1b9ff9",
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A mixed inference/training cluster: a Volcano job/podgroup in queue training (capability 320 GPUs) with "
            "priority 1300000 'is stuck in Pending with message volcano 0/101 nodes are unavailable: 100 "
            "Insufficient nvidia.com/gpu.' although lower-priority inference pods of the default scheduler hold the "
            "GPUs (Volcano does not preempt them). Replica counts and image are illustrative. Pending with "
            "scheduling-only evidence: route_pending, quoting the message."
        ),
        source="https://github.com/volcano-sh/volcano/issues/4039",
        now=now,
        ask={"text": "train-example has been pending for an hour, fail?", "workload_name": name, "intent": None},
        expect=_expect(None, ["100 Insufficient nvidia.com/gpu"], outcome="route_pending"),
    )


@case
def volcano_queue_resource_quota_insufficient() -> dict[str, Any]:
    slug, now = "volcano-queue-resource-quota-insufficient-no-pods", "2023-11-22T09:00:00Z"
    name = "nv3090-ddp-13"
    c = _gang_pending(
        slug,
        project="tmp-nv3090-13",
        pid="13",
        name=name,
        img="registry.example.com/ad/ddp-train:1.13",
        created="2023-11-22T08:20:13Z",
        now=now,
        framework="PyTorch",
        workers=1,
        gpu=1,
        memory="32Gi",
        command="torchrun --nnodes 2 train.py",
        pods=[],
        messages=[
            ("Unschedulable", "Warning", "queue resource quota insufficient"),
            ("Unschedulable", "Warning", "0/0 tasks in gang unschedulable: pod group is not ready, 1 minAvailable"),
        ],
        scheduler="volcano",
        group=f"{name}-e71ea131",
        create_pods=False,
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A job in Volcano queue tmp-nv3090-13 (capability nvidia.com/gpu 9999, momenta.ai/rdma 9999; status "
            "allocated cpu 0, pending 1): no pod is ever created and the events are 'queue resource quota "
            "insufficient' and '0/0 tasks in gang unschedulable: pod group is not ready, 1 minAvailable' (removing "
            "the GPU and RDMA entries from the queue unblocks it). Job name and spec are illustrative. Pending with "
            "scheduling-only evidence and no pod: route_pending, quoting the messages."
        ),
        source="https://github.com/volcano-sh/volcano/issues/3220",
        now=now,
        ask={"text": "nv3090-ddp-13 pending, queue has enough resources", "workload_name": name, "intent": None},
        expect=_expect(None, ["tasks in gang unschedulable"], outcome="route_pending"),
    )


@case
def kai_dynamo_mig_rdma_pending() -> dict[str, Any]:
    slug, now = "kai-dynamo-decode-worker-mig-rdma-not-found-pending", "2026-07-10T14:00:00Z"
    name = "qwen3-embedding-0-vllmdecodeworker"
    pod = f"{name}-blgvh"
    msg = (
        "PodSchedulingErrors: Resources were not found for pod dynamo/qwen3-embedding-0-vllmdecodeworker-blgvh due "
        "to: no nodes with enough resources were found: 1 node(s) didn't have enough resources: rdma/shared_mlx5.\n"
        "6 node(s) didn't have enough of mig profile: nvidia.com/mig-1g.5gb.."
    )
    c = _gang_pending(
        slug,
        project="dynamo",
        pid="52",
        name=name,
        img="nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.3.2",
        created="2026-07-10T13:10:18Z",
        now=now,
        framework="PyTorch",
        workers=0,
        gpu=1,
        memory="6Gi",
        command="python -m dynamo.vllm --model Qwen/Qwen3-Embedding-0.6B",
        pods=[pod],
        messages=[("Unschedulable", "Normal", msg)],
        scheduler="kai-scheduler",
        group=f"pg-{name}",
        type_="Inference",
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A Dynamo decode worker under KAI (v0.16.3 plus a MIG fix) with migStrategy=mixed: the PodGroup "
            "requests cpu 2, memory 6Gi, nvidia.com/mig-1g.5gb 1 and rdma/shared_mlx5 1, and its condition "
            "UnschedulableOnNodePool says 'PodSchedulingErrors: Resources were not found for pod ... 1 node(s) "
            "didn't have enough resources: rdma/shared_mlx5. 6 node(s) didn't have enough of mig profile: "
            "nvidia.com/mig-1g.5gb..'. Pending with scheduling-only evidence: route_pending, quoting the message."
        ),
        source="https://github.com/kai-scheduler/KAI-Scheduler/issues/1876",
        now=now,
        ask={"text": f"why won't {name} start?", "workload_name": name, "intent": None},
        expect=_expect(None, ["didn't have enough of mig profile"], outcome="route_pending"),
    )


# ============================================================================ the first failing pod decides
@case
def rdma_worker_cuda_initialization_error_first() -> dict[str, Any]:
    slug, now = "rdma-worker-1-nccl-cuda-initialization-error-first", "2023-09-19T08:00:00Z"
    name, img = "rdma-test-gpu", "nvcr.io/nvidia/pytorch:23.08-py3"
    created, run_at = "2023-09-19T06:40:00Z", "2023-09-19T06:41:00Z"
    w_end, m_end = "2023-09-19T06:43:12Z", "2023-09-19T06:43:40Z"
    wlog = (
        '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/distributed_c10d.py", line 3665, in '
        "barrier\n"
        "    work = default_pg.barrier(opts=opts)\n"
        "torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1197, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version "
        "2.18.3\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\n"
        "Last error:\n"
        "Cuda failure 'initialization error'\n"
    )
    mlog = (
        "torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/pytorch/torch/csrc/distributed/c10d/"
        "ProcessGroupNCCL.cpp:1197, remote process exited or there was a network error, NCCL version 2.18.3\n"
    )
    c, _ = _torch_job(
        slug,
        project="llm-tuning",
        pid="44",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=m_end,
        workers=1,
        gpu=8,
        memory="800Gi",
        command="torchrun --nnodes 2 --nproc_per_node 8 /mnt/nas/workspace/tuning/src/train_bash.py",
        pods=[
            P(
                f"{name}-worker-1",
                "a800-rdma-02",
                [C("pytorch", img, terminated(1, "Error", run_at, w_end), gpu=8, memory="800Gi", log=wlog)],
                replica="worker",
                index=1,
                completed=w_end,
            ),
            P(
                f"{name}-master-0",
                "a800-rdma-01",
                [C("pytorch", img, terminated(1, "Error", run_at, m_end), gpu=8, memory="800Gi", log=mlog)],
                replica="master",
                completed=m_end,
            ),
        ],
        now=now,
        job_event=f"PyTorchJob runai-llm-tuning/{name} has failed because 1 Worker replica(s) failed.",
        node_kw={"product": "NVIDIA-A800-SXM4-80GB"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A 2-node fine-tune over RDMA: rdma-test-gpu-worker-1 fails at the first barrier with "
            "'torch.distributed.DistBackendError: NCCL error in: ... unhandled cuda error (run with NCCL_DEBUG=INFO "
            "for details), NCCL version 2.18.3', 'ncclUnhandledCudaError: Call to CUDA function failed.' and \"Cuda "
            "failure 'initialization error'\" (the report's lines, pod-name prefixes dropped). The master's later "
            "NCCL remote error, the job layout and times are illustrative. No node or GPU fault is in evidence; the "
            "first failing pod's own program failed: CRASH_APP_ERROR naming worker-1 and the CUDA error."
        ),
        source="https://github.com/NVIDIA/nccl/issues/1029",
        now=now,
        ask={"text": "rdma-test-gpu fails with unhandled cuda error", "workload_name": name, "intent": "terminal"},
        expect=_expect("CRASH_APP_ERROR", [f"{name}-worker-1", "initialization error"]),
    )


@case
def jax_segfault_first_others_abort() -> dict[str, Any]:
    slug, now = "jax-32-node-segfault-first-others-abort", "2023-08-25T12:00:00Z"
    name, img = "paxml-gpt-32n", "ghcr.io/nvidia/pax:nightly-2023-08-24"
    created, run_at = "2023-08-25T10:55:00Z", "2023-08-25T11:05:10Z"
    seg1, seg2, ab = "2023-08-25T11:06:39Z", "2023-08-25T11:06:40Z", "2023-08-25T11:06:44Z"
    seg_log = (
        "2023-08-25 11:06:39.330561: E external/xla/xla/service/gpu/nccl_utils.cc:191] Aborting communicator: "
        "0x5555a108ff90 due to async NCCL error: remote process exited or there was a network error\n"
        "Fatal Python error: Segmentation fault\n"
    )
    abort_log = "Fatal Python error: Aborted\n"
    pods = [
        P(
            f"{name}-worker-7",
            "h100-a07",
            [C("jax", img, terminated(139, "Error", run_at, seg1), gpu=8, memory="1000Gi", log=seg_log)],
            replica="worker",
            index=7,
            completed=seg1,
        ),
        P(
            f"{name}-worker-19",
            "h100-a19",
            [C("jax", img, terminated(139, "Error", run_at, seg2), gpu=8, memory="1000Gi", log=seg_log)],
            replica="worker",
            index=19,
            completed=seg2,
        ),
    ] + [
        P(
            f"{name}-worker-{i}",
            f"h100-a0{i}",
            [C("jax", img, terminated(134, "Error", run_at, ab), gpu=8, memory="1000Gi", log=abort_log)],
            replica="worker",
            index=i,
            completed=ab,
        )
        for i in (0, 1)
    ]
    c, _ = _torch_job(
        slug,
        project="jax",
        pid="58",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=ab,
        workers=32,
        gpu=8,
        memory="1000Gi",
        command="python -m paxml.main --fdl_config=paxml.tasks.lm.params.nvidia.GPT126M --multiprocess_gpu",
        pods=pods,
        now=now,
        framework="JAX",
    )
    return _doc(
        c,
        "distributed",
        description=(
            "Pax/JAX training on 32 nodes crashes at the very first step: 'Only 2-3 out of all the processes "
            "segfault with the above error, and the others abort', the error being 'Aborting communicator: "
            "0x5555a108ff90 due to async NCCL error: remote process exited or there was a network error'. The "
            "snapshot keeps two segfaulting pods (exit 139, worker-7 first) and two aborting ones (exit 134); the "
            "pod names, exit codes and Python fatal lines are illustrative. The pod that failed first ended on "
            "SIGSEGV raised by its own process: CRASH_APP_ERROR naming worker-7; the aborts are consequences."
        ),
        source="https://github.com/NVIDIA/JAX-Toolbox/issues/194",
        now=now,
        ask={
            "text": "paxml-gpt-32n crashed at step 0 with async NCCL error",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("CRASH_APP_ERROR", [f"{name}-worker-7", "139"]),
    )


@case
def tfjob_worker_error_peers_deleted_tier1() -> dict[str, Any]:
    slug, now = "tfjob-worker-3-error-running-peers-cleaned-up-tier1-only", "2019-08-07T10:30:00Z"
    c = RunaiCase(slug, project="kubeflow", project_id="20")
    name, img = "dist-mnist-for-e2e-test", "kubeflow/tf-dist-mnist-test:1.0"
    created, run_at, fail = "2019-08-07T10:10:00Z", "2019-08-07T10:10:05Z", "2019-08-07T10:11:48Z"
    e = distributed(
        c,
        name,
        created=created,
        run_at=run_at,
        phase="Failed",
        phase_at=at(fail, seconds=4),
        image=img,
        framework="TF",
        workers=4,
        gpu=0,
        memory="4Gi",
        pods_requested=6,
        command="python /var/tf_dist_mnist/dist_mnist.py",
    )
    peers = [f"{name}-ps-0", f"{name}-ps-1"] + [f"{name}-worker-{i}" for i in range(3)]
    w3 = f"{name}-worker-3"
    scheduled(c, e, {p: f"node-{i + 1}" for i, p in enumerate([*peers, w3])}, at(created, seconds=3))
    c.phase(e, "Running", run_at)
    c.event(
        e,
        "TFJobFailed",
        f"TFJob {name} has failed because 1 Worker replica(s) failed.",
        at(fail, seconds=1),
        obj=name,
        kind="TFJob",
        type_="Normal",
        source="tf-operator",
    )
    for i, p in enumerate(peers):
        c.event(
            e,
            "SuccessfulDeletePod",
            f"Deleted pod: {p}",
            at(fail, seconds=2 + i),
            obj=name,
            kind="TFJob",
            type_="Normal",
            source="tf-operator",
        )
    c.phase(e, "Failed", at(fail, seconds=4))
    pods = [P(w3, "node-6", [C("tensorflow", img, running(run_at))], t1="Error", completed=fail, k8s=False)] + [
        P(
            p,
            f"node-{i + 1}",
            [C("tensorflow", img, running(run_at))],
            t1="Running",
            deleted=at(fail, seconds=2 + i),
            k8s=False,
        )
        for i, p in enumerate(peers)
    ]
    add_pods(c, e, pods, workload=name, created=created, run_at=run_at, now=now, owner_kind="DistributedWorkload")
    return _doc(
        c,
        "distributed",
        description=(
            "A TFJob with 2 PS and 4 workers and cleanPodPolicy Running: 'If there is one worker failed, then the "
            "other 3 workers and the 2 PS will be deleted since they are still running'; only "
            "dist-mnist-for-e2e-test-worker-3 remains ('0/1 Error'), with the events 'TFJob dist-mnist-for-e2e-test "
            "has failed because 1 Worker replica(s) failed.' and 'Deleted pod: ...'. There is no Tier 2 access and "
            "Tier 1 names no cause (times and nodes are illustrative). The peers' deletions came after worker-3's "
            "failure: UNKNOWN, naming worker-3 and quoting the job event, never a deleted peer as the cause."
        ),
        source="https://github.com/kubeflow/trainer/issues/1059",
        now=now,
        ask={
            "text": "why did dist-mnist-for-e2e-test fail? all pods are gone",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("UNKNOWN", [w3, "has failed because 1 Worker replica(s) failed."]),
        tier2=False,
    )


@case
def pytorchjob_worker_graceful_node_shutdown() -> dict[str, Any]:
    slug, now = "pytorchjob-worker-terminated-by-graceful-node-shutdown", "2022-04-06T12:00:00Z"
    name, img = "restart-failure", "python"
    created, run_at, end = "2022-04-06T09:00:00Z", "2022-04-06T09:01:00Z", "2022-04-06T11:17:44Z"
    w = f"{name}-worker-0"
    node = "gke-train-preemptible-pool-5c1a9e2f-x8kq"
    msg = "Pod was terminated in response to imminent node shutdown."

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        c.k8s_event(
            node,
            "PreemptScheduled",
            "Preemption is scheduled on the node",
            at(end, seconds=-30),
            kind="Node",
            component="node-termination-handler",
        )

    c, _ = _torch_job(
        slug,
        project="ml",
        pid="12",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=end,
        workers=1,
        gpu=1,
        memory="8Gi",
        command="python",
        pods=[
            P(
                w,
                node,
                [C("pytorch", img, terminated(143, "Error", run_at, end), gpu=1, memory="8Gi", log="")],
                replica="worker",
                completed=end,
                reason="Terminated",
                message=msg,
                restart_policy="OnFailure",
            )
        ],
        now=now,
        extra=ev,
        job_event=f"PyTorchJob runai-ml/{name} has failed because 1 Worker replica(s) failed.",
        node_kw={"gpus": 1, "product": "Tesla-T4"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A PyTorchJob (one worker, restartPolicy OnFailure) on GKE preemptible nodes: 'In case the worker pod "
            "status is in Status=Failed due to a graceful node shutdown it won't get recreated, but instead the "
            "PytorchJob will fail'. The pod's status message is the kubelet's graceful-shutdown wording; the exit "
            "code 143, the node's PreemptScheduled event and the times are illustrative. The node going away killed "
            "the pod: NODE_FAILURE naming the worker and the node shutdown."
        ),
        source="https://github.com/kubeflow/trainer/issues/1570",
        now=now,
        ask={"text": "restart-failure failed instead of restarting, why?", "workload_name": name, "intent": "terminal"},
        expect=_expect("NODE_FAILURE", [w, "node shutdown"]),
    )


# ============================================================================ phase rules, restarts and preemption
@case
def tfjob_master_evicted_three_times_running_now() -> dict[str, Any]:
    slug, now = "tfjob-master-evicted-three-times-running-now-ask-past-run", "2018-01-12T10:00:00Z"
    c = RunaiCase(slug, project="rl", project_id="23")
    name, img = "agents-ppo-ant-feedforward-93168c9e", "gcr.io/kubeflow-rl/agents-ppo:0.3"
    created = "2018-01-11T14:40:00Z"
    starts = ["2018-01-11T14:41:00Z", "2018-01-11T15:40:00Z", "2018-01-11T15:55:00Z", "2018-01-12T00:58:00Z"]
    ends = ["2018-01-11T15:39:12Z", "2018-01-11T15:54:31Z", "2018-01-12T00:57:08Z"]
    masters = [
        f"{name}-master-{s}-0-{h}"
        for s, h in (("3ti2", "9st9r"), ("3ti2", "k2v8d"), ("3ti2", "x7m4q"), ("3ti2", "p5n1c"))
    ]
    e = c.workload(
        name,
        created=created,
        phase="Running",
        phase_at=starts[3],
        image=img,
        gpu=0,
        memory="8Gi",
        command="python -m agents.scripts.train --config=pybullet_ant",
        running_pods=1,
    )
    c.phase(e, "Pending", created)
    pods = []
    for i, pod in enumerate(masters):
        scheduled(c, e, {pod: f"gke-rl-pool-{i % 2 + 1}"}, at(starts[i], seconds=-20))
        c.phase(e, "Running", starts[i])
        if i < 3:
            c.event(e, "Evicted", "The node was low on resource: memory.", ends[i], obj=pod)
            c.phase(e, "Pending", at(ends[i], seconds=5))
            pods.append(
                P(
                    pod,
                    f"gke-rl-pool-{i % 2 + 1}",
                    [C("tensorflow", img, terminated(137, "Error", starts[i], ends[i]), memory="8Gi", log="")],
                    t1="Evicted",
                    completed=ends[i],
                    created=at(starts[i], seconds=-25),
                    reason="Evicted",
                    message="The node was low on resource: memory.",
                )
            )
        else:
            pods.append(
                P(
                    pod,
                    f"gke-rl-pool-{i % 2 + 1}",
                    [C("tensorflow", img, running(starts[i]), memory="8Gi", log="step 1208000 mean_score 2411.6\n")],
                    phase="Running",
                    t1="Running",
                    created=at(starts[i], seconds=-25),
                )
            )
    add_pods(c, e, pods, workload=name, created=created, run_at=starts[0], now=now, node_kw={"gpus": 0})
    return _doc(
        c,
        "distributed",
        description=(
            "A TFJob master of an RL training (agents PPO) is evicted three times ('0/1 Evicted', `kubectl describe`: "
            "'Status: Failed, Reason: Evicted, Message: The node was low on resource: memory.') and the fourth "
            "master pod has been Running for 9 hours. Pod name suffixes, nodes and times are illustrative. The "
            "workload is Running and healthy now; the question is about past evictions: ask_past_run."
        ),
        source="https://github.com/kubeflow/trainer/issues/301",
        now=now,
        ask={
            "text": "why does agents-ppo-ant-feedforward-93168c9e keep getting evicted?",
            "workload_name": name,
            "intent": None,
        },
        expect=_expect(None, [], outcome="ask_past_run"),
    )


@case
def elastic_workers_restarted_on_rescale() -> dict[str, Any]:
    slug, now = "elastic-pytorchjob-workers-restarted-on-rescale-ask-past-run", "2022-01-06T10:06:00Z"
    name, img = "elastic-example-imagenet-2", "kubeflow/pytorch-elastic-example-imagenet:1.0.0-sigterm"
    created, run_at, restart = "2022-01-06T10:00:30Z", "2022-01-06T10:00:40Z", "2022-01-06T10:05:48Z"
    log = (
        "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:\n"
        "  restart_count=0\n"
        "  master_addr=elastic-example-imagenet-2-worker-0\n"
        "  master_port=34818\n"
        "  group_rank=0\n"
        "  group_world_size=3\n"
        "INFO:torch.distributed.elastic.agent.server.api:[default] Starting worker group\n"
        "Epoch: [0][   0/1042]\tTime  6.850 ( 6.850)\tData  0.795 ( 0.795)\tLoss 7.2169e+00 (7.2169e+00)\n"
    )
    pods = [
        P(
            f"{name}-worker-{i}",
            f"gpu-w0{i + 1}",
            [
                C(
                    "pytorch",
                    img,
                    running(at(restart, seconds=2)),
                    gpu=1,
                    memory="16Gi",
                    last=terminated(1, "Error", run_at, restart),
                    restarts=1,
                    log=log,
                )
            ],
            phase="Running",
            t1="Running",
            replica="worker",
            index=i,
            restart_policy="OnFailure",
        )
        for i in range(2)
    ] + [
        P(
            f"{name}-worker-2",
            "gpu-w03",
            [C("pytorch", img, waiting("ContainerCreating"), gpu=1, memory="16Gi")],
            phase="Pending",
            t1="ContainerCreating",
            replica="worker",
            index=2,
            created="2022-01-06T10:05:41Z",
        ),
    ]
    c, _ = _torch_job(
        slug,
        project="elastic",
        pid="29",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end=restart,
        workers=3,
        gpu=1,
        memory="16Gi",
        command="python -m torch.distributed.run --nnodes=1:3 --rdzv_backend=c10d /workspace/examples/imagenet.py",
        pods=pods,
        now=now,
        phase="Running",
        running_pods=2,
        node_kw={"gpus": 1, "product": "Tesla-T4"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "An elastic PyTorchJob (c10d rendezvous, --nnodes=1:3) is rescaled by editing Worker.replicas: worker-0 "
            "and worker-1 show '1/1 Running 1' restarts while worker-2 is ContainerCreating, and the log shows a new "
            "rendezvous with group_world_size=3. The restart's exit code is illustrative. Both containers are ready "
            "again; one past restart is not a crash loop: the workload is Running without a confirmed failure "
            "(ask_past_run)."
        ),
        source="https://github.com/kubeflow/trainer/issues/1509",
        now=now,
        ask={"text": "why did the elastic-example-imagenet-2 workers restart?", "workload_name": name, "intent": None},
        expect=_expect(None, [], outcome="ask_past_run"),
    )


@case
def volcano_low_priority_job_preempted() -> dict[str, Any]:
    slug, now = "volcano-low-priority-job-preempted-by-high-priority", "2023-02-16T05:00:00Z"
    c = RunaiCase(slug, project="default-team", project_id="4")
    name, img = "cpu-resource-test-low", "registry.example.com/test/cpu-burn:1.0"
    created, run_at, evict = "2023-02-16T04:05:00Z", "2023-02-16T04:05:33Z", "2023-02-16T04:06:19Z"
    e = distributed(
        c,
        name,
        created=created,
        run_at=run_at,
        phase="Running",
        phase_at=run_at,
        image=img,
        framework="PyTorch",
        workers=4,
        gpu=0,
        memory="4Gi",
        pods_requested=5,
        command="python burn.py",
    )
    pods = [f"{name}-nginx-{i}" for i in range(5)]
    scheduled(c, e, {p: f"node-{i % 2 + 1}" for i, p in enumerate(pods)}, at(created, seconds=30))
    c.phase(e, "Running", run_at)
    for p in pods:
        c.event(
            e,
            "Preempted",
            f"Pod default/{p} was preempted by higher priority job default/cpu-resource-test-high",
            evict,
            obj=f"{name}-podgroup",
            kind="PodGroup",
            source="volcano",
        )
        c.event(e, "Killing", "Stopping container nginx", at(evict, seconds=1), obj=p, type_="Normal")
    add_pods(
        c,
        e,
        [
            P(
                p,
                f"node-{i % 2 + 1}",
                [C("nginx", img, running(run_at))],
                t1="Unknown",
                deleted=at(evict, seconds=32),
                k8s=False,
            )
            for i, p in enumerate(pods)
        ],
        workload=name,
        created=created,
        run_at=run_at,
        now=now,
        owner_kind="DistributedWorkload",
    )
    return _doc(
        c,
        "distributed",
        description=(
            "Volcano with the preempt action: the low-priority job cpu-resource-test-low (minAvailable 5, priority "
            "job-low) is preempted by cpu-resource-test-high (job-high); its status then reads 'phase:Running' with "
            "'unknown:5' while its podGroup is Inqueue. The preemption events' wording, image and nodes are "
            "illustrative. A recent event says it was preempted: route_preempted, not a failure diagnosis."
        ),
        source="https://github.com/volcano-sh/volcano/issues/2685",
        now=now,
        ask={
            "text": "what happened to cpu-resource-test-low? it shows running but nothing runs",
            "workload_name": name,
            "intent": None,
        },
        expect=_expect(None, [], outcome="route_preempted"),
    )


@case
def sglang_rank1_watchdog_rank0_degraded() -> dict[str, Any]:
    slug, now = "sglang-two-node-rank1-watchdog-rank0-stays-degraded-phase-only", "2025-01-24T09:00:00Z"
    c = RunaiCase(slug, project="serving", project_id="47")
    name, img = "deepseek-v3-tp16", "lmsysorg/sglang:v0.4.1.post7-cu124"
    created, run_at, fail = "2025-01-23T20:00:00Z", "2025-01-23T20:25:00Z", "2025-01-24T07:41:09Z"
    e = c.workload(
        name,
        created=created,
        phase="Degraded",
        phase_at=at(fail, seconds=5),
        image=img,
        type_="Inference",
        gpu=8,
        memory="1800Gi",
        command="python3 -m sglang.launch_server --model-path DeepSeek-V3 --tp-size 16 --nnodes 2 --trust-remote-code",
        running_pods=1,
        pods_requested=2,
        restart_policy="Never",
    )
    r0, r1 = f"{name}-0", f"{name}-0-1"
    c.phase(e, "Pending", created)
    scheduled(c, e, {r0: "h800-01", r1: "h800-02"}, at(created, seconds=4))
    c.phase(e, "Running", run_at)
    c.phase(e, "Degraded", at(fail, seconds=5))
    log1 = watchdog(8, 214733, 600042, op="ALLREDUCE", timeout=600000)
    add_pods(
        c,
        e,
        [
            P(
                r0,
                "h800-01",
                [C("sglang", img, running(run_at), gpu=8, memory="1800Gi", log="")],
                phase="Running",
                t1="Running",
            ),
            P(
                r1,
                "h800-02",
                [C("sglang", img, terminated(1, "Error", run_at, fail), gpu=8, memory="1800Gi", log=log1)],
                completed=fail,
            ),
        ],
        workload=name,
        created=created,
        run_at=run_at,
        now=now,
        owner_kind="InferenceWorkload",
        node_kw={"product": "NVIDIA-H800"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "DeepSeek-V3 served by sglang over two H800 machines (--tp-size 16 --nnodes 2): 'when there is a "
            "problem with a node-rank 1 machine, like NCCL WatchDog Timeout, the process on node-rank 0 will not "
            "exit immediately'. Here the node-rank 1 pod ended on an NCCL watchdog timeout (the log line and times "
            "are illustrative) and the workload is Degraded, neither failed nor running. Another non-terminal "
            "phase: the current phase is reported and no category is assigned (phase_only)."
        ),
        source="https://github.com/sgl-project/sglang/issues/3099",
        now=now,
        ask={"text": "why did deepseek-v3-tp16 fail?", "workload_name": name, "intent": "terminal"},
        expect=_expect(None, [], outcome="phase_only"),
    )


@case
def pytorchjob_worker_crashloop_tier1_only() -> dict[str, Any]:
    slug, now = "pytorchjob-worker-crashloop-non-default-namespace-tier1-only", "2020-02-05T10:35:00Z"
    name, img = "pytorch-dist-mnist-gloo", "gcr.io/kubeflow-ci/pytorch-dist-mnist-test:v1.0"
    created, run_at = "2020-02-05T10:02:00Z", "2020-02-05T10:02:30Z"
    w, m = f"{name}-worker-0", f"{name}-master-0"
    proxy = "docker.io/istio/proxyv2:1.1.6"

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        c.event(
            e,
            "BackOff",
            f"Back-off restarting failed container pytorch in pod {w}_i70994(5b1e2c3d-47f7-4a0c-9b8e-2f1d6c0e9a11)",
            "2020-02-05T10:34:10Z",
            obj=w,
            count=11,
            first="2020-02-05T10:04:02Z",
        )

    c, _ = _torch_job(
        slug,
        project="i70994",
        pid="70",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        end="2020-02-05T10:34:05Z",
        workers=1,
        gpu=1,
        memory="8Gi",
        command="python /var/mnist.py --backend gloo",
        pods=[
            P(
                m,
                "0939-jdeml-w03",
                [C("pytorch", img, running(run_at), gpu=1), C("istio-proxy", proxy, running(run_at))],
                phase="Running",
                t1="Running",
                replica="master",
                k8s=False,
            ),
            P(
                w,
                "0939-jdeml-w04",
                [C("pytorch", img, running(run_at), gpu=1), C("istio-proxy", proxy, running(run_at))],
                phase="Running",
                t1="CrashLoopBackOff",
                replica="worker",
                k8s=False,
            ),
        ],
        now=now,
        phase="Running",
        extra=ev,
        running_pods=2,
    )
    return _doc(
        c,
        "distributed",
        description=(
            "The PyTorchJob gloo example in a non-default, Istio-injected namespace on Kubeflow 0.7: "
            "'pytorch-dist-mnist-gloo-master-0 2/2 Running 1 33m' and 'pytorch-dist-mnist-gloo-worker-0 1/2 "
            "CrashLoopBackOff 11 33m' (the logs are only attachments). There is no Tier 2 access: the Run:ai pods "
            "list and the BackOff event confirm a crash loop now but name no cause (event uid and nodes are "
            "illustrative). UNKNOWN, naming the crash-looping worker-0."
        ),
        source="https://github.com/kubeflow/pytorch-operator/issues/258",
        now=now,
        ask={"text": "pytorch-dist-mnist-gloo worker keeps crashing", "workload_name": name, "intent": None},
        expect=_expect("UNKNOWN", [w]),
        tier2=False,
    )


# ============================================================================ Ray (KubeRay)
def _ray(
    slug: str,
    *,
    project: str,
    pid: str,
    name: str,
    img: str,
    created: str,
    run_at: str,
    phase: str,
    phase_at: str,
    pods: list[P],
    now: str,
    memory: str,
    gpu: float,
    command: str,
    running_pods: int = 0,
    extra: Callable[[RunaiCase, dict[str, Any]], None] | None = None,
    phase_message: str = "",
    node_kw: dict[str, Any] | None = None,
) -> tuple[RunaiCase, dict[str, Any]]:
    """A RayCluster / RayJob as a Distributed workload (framework Ray): Scheduled, Running, ``extra``, the phase."""
    c = RunaiCase(slug, project=project, project_id=pid)
    e = distributed(
        c,
        name,
        created=created,
        run_at=run_at,
        phase=phase,
        phase_at=phase_at,
        image=img,
        framework="Ray",
        workers=max(len(pods) - 1, 0),
        gpu=gpu,
        memory=memory,
        pods_requested=len(pods),
        running_pods=running_pods,
        command=command,
        phase_message=phase_message,
    )
    scheduled(c, e, {p.name: p.node for p in pods if p.node}, at(created, seconds=3))
    if phase != "Initializing":
        c.phase(e, "Running", run_at)
    else:
        c.phase(e, "Initializing", run_at)
    if extra:
        extra(c, e)
    if phase in ("Failed", "Completed"):
        c.phase(e, phase, phase_at, phase_message)
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
        replica_label="ray.io/node-type",
    )
    return c, e


@case
def raycluster_head_oomkilled_2g() -> dict[str, Any]:
    slug, now = "raycluster-head-oomkilled-at-2g-on-start", "2025-12-17T11:05:00Z"
    name, img = "raycluster-autoscaler", "rayproject/ray:2.52.0"
    created, run_at = "2025-12-17T10:53:00Z", "2025-12-17T10:53:20Z"
    head = f"{name}-head-8zq4d"
    pods = [
        P(
            head,
            "ack-node-3",
            [
                C(
                    "ray-head",
                    img,
                    waiting(
                        "CrashLoopBackOff",
                        f"back-off 40s restarting failed container=ray-head pod={head}_runai-ray-demo",
                    ),
                    memory="2G",
                    last=terminated(137, "OOMKilled", "2025-12-17T10:56:35Z", "2025-12-17T10:56:44Z"),
                    restarts=3,
                    prev_log="",
                ),
                C("autoscaler", img, running(run_at), memory="512Mi", log=""),
            ],
            phase="Running",
            t1="CrashLoopBackOff",
            replica="head",
            restart_policy="Always",
        )
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        _backoff(c, e, head, "ray-head", "2025-12-17T10:56:46Z", 3, "2025-12-17T10:54:30Z")

    c, _ = _ray(
        slug,
        project="ray-demo",
        pid="81",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        phase="Running",
        phase_at=run_at,
        pods=pods,
        now=now,
        memory="2G",
        gpu=0,
        command="ray start --head --num-cpus=0 --block",
        running_pods=1,
        extra=ev,
        node_kw={"gpus": 0},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "The KubeRay sample ray-cluster.autoscaler.yaml on ACK (Kubernetes 1.34, Ray 2.52): the head pod 'is "
            "OOMKilled when starting', its lastState 'exitCode: 137, finishedAt: \"2025-12-17T10:56:44Z\", reason: "
            'OOMKilled, startedAt: "2025-12-17T10:56:35Z"\'; the sample gives ray-head a 2G memory limit (the fix '
            "raises it to 4Gi) beside the autoscaler sidecar (512Mi). The crash loop, restart count and node are "
            "illustrative. OOM_KILLED, naming ray-head and its own 2G limit."
        ),
        source="https://github.com/ray-project/kuberay/issues/4287",
        now=now,
        ask={"text": "the ray head pod keeps crashing on raycluster-autoscaler", "workload_name": name, "intent": None},
        expect=_expect("OOM_KILLED", ["ray-head", "2G", "OOMKilled"]),
    )


@case
def raycluster_head_gcs_unavailable_crashloop() -> dict[str, Any]:
    slug, now = "raycluster-head-gcs-unavailable-crashloop-days", "2025-07-28T08:45:00Z"
    name, img = "main-ray-cluster", "rayproject/ray:2.46.0"
    created, run_at = "2025-07-24T12:40:00Z", "2025-07-24T12:40:30Z"
    head = f"{name}-kuberay-head-7zw69"
    log = (
        "[2025-07-28 08:40:52,953 W 1 43] retryable_grpc_client.cc:83: GCS has been unavailable for more than 60 "
        "seconds\n"
        "[2025-07-28 08:40:52,953 E 1 43] gcs_rpc_client.h:196: Failed to connect to GCS within 60 seconds. GCS may "
        "have been killed. It's either GCS is terminated by `ray stop` or is killed unexpectedly. If it is killed "
        "unexpectedly, see the log file gcs_server.out. https://docs.ray.io/en/master/ray-observability/user-guides/"
        "configure-logging.html#logging-directory-structure. The program will terminate.\n"
    )
    pods = [
        P(
            head,
            "k3d-ray-agent-0",
            [
                C(
                    "ray-head",
                    img,
                    waiting(
                        "CrashLoopBackOff",
                        f"back-off 5m0s restarting failed container=ray-head pod={head}_runai-ml-platform",
                    ),
                    memory="4Gi",
                    last=terminated(1, "Error", "2025-07-28T08:39:50Z", "2025-07-28T08:40:53Z"),
                    restarts=938,
                    prev_log=log,
                )
            ],
            phase="Running",
            t1="CrashLoopBackOff",
            replica="head",
            restart_policy="Always",
        )
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        c.event(
            e,
            "BackOff",
            "Back-off restarting failed container ray-head in pod "
            f"{head}_default(da4143b0-f4c1-4752-b6b5-396e0ce08e3a)",
            "2025-07-28T08:39:44Z",
            obj=head,
            count=21329,
            first="2025-07-24T12:45:00Z",
        )

    c, _ = _ray(
        slug,
        project="ml-platform",
        pid="26",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        phase="Running",
        phase_at=run_at,
        pods=pods,
        now=now,
        memory="4Gi",
        gpu=0,
        command="ray start --head --block",
        running_pods=1,
        extra=ev,
        node_kw={"gpus": 0},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A default RayCluster from the KubeRay Helm chart: the head's ray-head container has been restarting for "
            "3d20h ('Back-off restarting failed container ray-head in pod "
            "main-ray-cluster-kuberay-head-7zw69_default(...)', x21329) and its log ends 'Failed to connect to GCS "
            "within 60 seconds. GCS may have been killed. ... The program will terminate.' The exit code, memory "
            "and node are illustrative. The head's own program exits in a loop: CRASH_APP_ERROR naming ray-head and "
            "the GCS error; restarts inside one pod are one occurrence (not recurring)."
        ),
        source="https://github.com/ray-project/kuberay/issues/3897",
        now=now,
        ask={"text": "main-ray-cluster head is in CrashLoopBackOff", "workload_name": name, "intent": None},
        expect=_expect("CRASH_APP_ERROR", ["ray-head", "Failed to connect to GCS within 60 seconds"], recurring=False),
    )


@case
def rayjob_first_submitter_failed_then_completed() -> dict[str, Any]:
    slug, now = "rayjob-first-submitter-connectionerror-second-completed-succeeded", "2023-08-31T10:10:00Z"
    name, img = "rayjob-sample", "rayproject/ray:2.6.3"
    created, head_run = "2023-08-31T10:02:00Z", "2023-08-31T10:02:40Z"
    s1, s1_end, s2, s2_end = (
        "2023-08-31T10:04:05Z",
        "2023-08-31T10:04:11Z",
        "2023-08-31T10:04:12Z",
        "2023-08-31T10:04:58Z",
    )
    head = f"{name}-raycluster-vkbxr-head-4pnd5"
    err = (
        '  File "/home/ray/anaconda3/lib/python3.10/site-packages/ray/dashboard/modules/dashboard_sdk.py", line 248, '
        "in _check_connection_and_version\n"
        "    self._check_connection_and_version_with_url(min_version, version_error_message)\n"
        '  File "/home/ray/anaconda3/lib/python3.10/site-packages/ray/dashboard/modules/dashboard_sdk.py", line 278, '
        "in _check_connection_and_version_with_url\n"
        "    raise ConnectionError(\n"
        "ConnectionError: Failed to connect to Ray at address: "
        "http://rayjob-sample-raycluster-vkbxr-head-svc.default.svc.cluster.local:8265.\n"
    )
    pods = [
        P(
            head,
            "kind-worker",
            [C("ray-head", img, running(head_run), memory="4Gi", log="")],
            phase="Running",
            t1="Running",
            replica="head",
            created=created,
        ),
        P(
            f"{name}-hwbgg",
            "kind-worker",
            [C("ray-job-submitter", img, terminated(1, "Error", s1, s1_end), memory="1Gi", log=err)],
            t1="Error",
            completed=s1_end,
            created=at(s1, seconds=-3),
        ),
        P(
            f"{name}-w5nvf",
            "kind-worker",
            [
                C(
                    "ray-job-submitter",
                    img,
                    terminated(0, "Completed", s2, s2_end),
                    memory="1Gi",
                    log="Job 'rayjob-sample-l2kcv' succeeded\n",
                )
            ],
            phase="Succeeded",
            t1="Succeeded",
            completed=s2_end,
            created=at(s2, seconds=-1),
        ),
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, f"{name}-hwbgg", "ray-job-submitter", "Error", 1, at(s1_end, seconds=1))

    c, _ = _ray(
        slug,
        project="default-team",
        pid="4",
        name=name,
        img=img,
        created=created,
        run_at=head_run,
        phase="Completed",
        phase_at=at(s2_end, seconds=3),
        pods=pods,
        now=now,
        memory="4Gi",
        gpu=0,
        command="python /home/ray/samples/sample_code.py",
        running_pods=1,
        extra=ev,
        node_kw={"gpus": 0},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "The RayJob sample: 'the first job submission pod has failed' (rayjob-sample-hwbgg 0/1 Error, its log "
            "ending 'ConnectionError: Failed to connect to Ray at address: http://rayjob-sample-raycluster-vkbxr-"
            "head-svc.default.svc.cluster.local:8265.') and the submitter Job's retry rayjob-sample-w5nvf Completed; "
            "the head runs. The times and the submitter's success line are illustrative. The workload is Completed: "
            "succeeded (the earlier submitter's error may be mentioned; it does not make the workload failed)."
        ),
        source="https://github.com/ray-project/kuberay/issues/1381",
        now=now,
        ask={
            "text": "why did rayjob-sample fail? one submitter pod shows Error",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect(None, [], outcome="succeeded"),
    )


@case
def ray_worker_exit_message_says_memory_no_oom() -> dict[str, Any]:
    slug, now = "rayjob-worker-exit-message-suggests-memory-limit-no-oom", "2024-01-31T09:00:00Z"
    name, img = "redray-search-mmoe-bv3", "rayproject/ray:2.9.1-py310"
    created, run_at, fail = "2024-01-30T20:00:00Z", "2024-01-30T20:01:00Z", "2024-01-31T06:12:41Z"
    head, sub = f"{name}-head-2k7dd", f"{name}-submitter-8wq2p"
    workers = [f"{name}-worker-group-{s}" for s in ("4jzkc", "9xq7m")]
    sub_log = (
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n"
        "\tclass_name: MMoETrainer\n"
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
        "Worker exits unexpectedly. Worker exits with an exit code 1. The worker may have exceeded K8s pod memory "
        "limits. The process receives a SIGTERM\n"
    )
    pods = [
        P(
            head,
            "node-h1",
            [C("ray-head", img, running(run_at), memory="64Gi", log="")],
            phase="Running",
            t1="Running",
            replica="head",
        ),
        P(
            sub,
            "node-h1",
            [C("ray-job-submitter", img, terminated(1, "Error", run_at, fail), memory="1Gi", log=sub_log)],
            t1="Error",
            completed=fail,
        ),
    ] + [
        P(
            w,
            f"node-w{i + 1}",
            [C("ray-worker", img, running(run_at), memory="120Gi", log="")],
            phase="Running",
            t1="Running",
            replica="worker",
        )
        for i, w in enumerate(workers)
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, sub, "ray-job-submitter", "Error", 1, at(fail, seconds=1))

    c, _ = _ray(
        slug,
        project="search",
        pid="41",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        phase="Failed",
        phase_at=at(fail, seconds=4),
        pods=pods,
        now=now,
        memory="120Gi",
        gpu=0,
        command="python train_mmoe.py",
        extra=ev,
        phase_message=f"Pod {sub} failed: container ray-job-submitter terminated with reason Error (exit code 1)",
        node_kw={"gpus": 0},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "A Ray 2.9.1 job on Kubernetes often fails with 'Worker exit type: SYSTEM_ERROR Worker exit detail: "
            "Worker exits unexpectedly. Worker exits with an exit code 1. The worker may have exceeded K8s pod memory "
            "limits. The process receives a SIGTERM', yet dmesg shows no oom-kill and the pods' memory is well below "
            "their limits. No container is OOMKilled: the pods run on, and the job's own driver (the submitter, exit "
            "1) fails on the actor error. Names, limits and times are illustrative. CRASH_APP_ERROR naming the "
            "submitter, never OOM_KILLED from the message's guess."
        ),
        source="https://github.com/ray-project/ray/issues/42864",
        now=now,
        ask={
            "text": "redray-search-mmoe-bv3 failed, did it exceed the pod memory limit?",
            "workload_name": name,
            "intent": "terminal",
        },
        expect=_expect("CRASH_APP_ERROR", [sub]),
    )


@case
def verl_ray_uncorrectable_ecc() -> dict[str, Any]:
    slug, now = "verl-ray-4x8-h800-uncorrectable-ecc-in-driver-log", "2025-02-27T10:00:00Z"
    name, img = "verl-grpo-32gpu", "registry.example.com/rl/verl:0.2"
    created, run_at, fail = "2025-02-27T06:00:00Z", "2025-02-27T06:04:00Z", "2025-02-27T08:31:17Z"
    head = f"{name}-head-m4c2v"
    sub_log = (
        "(WorkerDict pid=53871) step 12 actor/pg_loss 0.031\n"
        "ray.exceptions.RayTaskError(RuntimeError): ray::WorkerDict.actor_rollout_update_actor() (pid=53871)\n"
        "RuntimeError: CUDA error: uncorrectable ECC error encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
        "be incorrect.\n"
    )
    pods = [
        P(
            head,
            "h800-01",
            [
                C("ray-head", img, running(run_at), gpu=8, memory="1600Gi", log=""),
                C("ray-job-submitter", img, terminated(1, "Error", run_at, fail), memory="1Gi", log=sub_log),
            ],
            phase="Running",
            t1="Running",
            replica="head",
        ),
    ] + [
        P(
            f"{name}-worker-{i}",
            f"h800-0{i + 2}",
            [C("ray-worker", img, running(run_at), gpu=8, memory="1600Gi", log="")],
            phase="Running",
            t1="Running",
            replica="worker",
        )
        for i in range(3)
    ]

    def ev(c: RunaiCase, e: dict[str, Any]) -> None:
        pod_failed(c, e, head, "ray-job-submitter", "Error", 1, at(fail, seconds=1))

    c, _ = _ray(
        slug,
        project="rl",
        pid="94",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        phase="Failed",
        phase_at=at(fail, seconds=4),
        pods=pods,
        now=now,
        memory="1600Gi",
        gpu=8,
        command="python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo trainer.nnodes=4",
        extra=ev,
        phase_message=f"Pod {head} failed: container ray-job-submitter terminated with reason Error (exit code 1)",
        node_kw={"product": "NVIDIA-H800"},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "verl GRPO training on 4x8 H800 (80G) as a Ray job: after a few steps it fails with 'RuntimeError: CUDA "
            "error: uncorrectable ECC error encountered' (the maintainer: 'ecc error is machine problem'). The Ray "
            "layout (a RayJob in SidecarMode: the submitter is a container of the head pod on h800-01, and the "
            "failing actor ran on the head's GPUs), the actor frame, pod names and times are illustrative. A GPU "
            "hardware fault in the failing container's log decides whatever its exit code: NODE_FAILURE, quoting "
            "the ECC error and the node."
        ),
        source="https://github.com/verl-project/verl/issues/407",
        now=now,
        ask={"text": "verl-grpo-32gpu crashed after a few steps, OOM?", "workload_name": name, "intent": "terminal"},
        expect=_expect("NODE_FAILURE", ["uncorrectable ECC error", "h800-01"]),
    )


@case
def kuberay_worker_init_waiting_phase_only() -> dict[str, Any]:
    slug, now = "kuberay-worker-init-container-waiting-for-head-phase-only", "2023-06-25T11:20:00Z"
    name, img = "raycluster-kuberay", "rayproject/ray:2.5.1"
    created, run_at = "2023-06-25T10:10:00Z", "2023-06-25T10:10:05Z"
    head, worker = f"{name}-head-2x8rf", f"{name}-worker-workergroup-r7rsn"
    pods = [
        P(
            head,
            "node1",
            [C("ray-head", img, running(run_at), memory="2Gi", log="")],
            phase="Running",
            t1="Running",
            replica="head",
        ),
        P(
            worker,
            "node0",
            [C("ray-worker", img, waiting("PodInitializing"), memory="1Gi")],
            init=[
                C(
                    "init",
                    "busybox:1.28",
                    running(at(run_at, seconds=1)),
                    memory="64Mi",
                    ready=False,
                    log=f"waiting for K8s Service {name}-head-svc; GCS address: {name}-head-svc:6379\n",
                )
            ],
            phase="Pending",
            t1="Init:0/1",
            replica="worker",
            restart_policy="Always",
        ),
    ]
    c, _ = _ray(
        slug,
        project="kuberay",
        pid="18",
        name=name,
        img=img,
        created=created,
        run_at=run_at,
        phase="Initializing",
        phase_at=run_at,
        pods=pods,
        now=now,
        memory="2Gi",
        gpu=0,
        command="ray start --head --block",
        running_pods=1,
        node_kw={"gpus": 0},
    )
    return _doc(
        c,
        "distributed",
        description=(
            "The KubeRay 0.5.0 Helm chart (Ray 2.5.1): 'the ray-worker remains in the init state and cannot start' "
            "for over an hour; the worker pod's events end with 'Created container init' / 'Started container init' "
            "(busybox:1.28) and nothing has failed. The head's name and the init log line are illustrative. The "
            "workload is Initializing with no direct failed-pod signal: the current phase is reported and no "
            "category is assigned (phase_only)."
        ),
        source="https://github.com/ray-project/kuberay/issues/1187",
        now=now,
        ask={"text": "ray worker stuck in init state on raycluster-kuberay", "workload_name": name, "intent": None},
        expect=_expect(None, [], outcome="phase_only"),
    )
