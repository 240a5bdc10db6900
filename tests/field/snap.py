"""Small builders of field snapshots (../shared/cases/FORMAT.md) used by build_cases.py.

Every object mirrors the shape of the shared real cases: Run:ai REST objects for Tier 1, core/v1
objects for Tier 2, OSMO query/events/logs text for OSMO. Ids are derived from the case slug so a
rebuild writes byte-identical files.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

CLUSTER = "71f69d83-ba66-4822-adf5-55ce55efd210"
STAGING = "0b5e4c1a-9f3d-4e2b-8a77-3c2d1e0f9a88"
CLUSTERS = [{"uuid": CLUSTER, "name": "dgx-prod"}, {"uuid": STAGING, "name": "dgx-staging"}]


def uid(*parts: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "field/" + "/".join(parts)))


def hexid(*parts: str, n: int = 64) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:n]


def parse(ts: str) -> datetime:
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def at(base: str, seconds: float = 0, minutes: float = 0, hours: float = 0, days: float = 0) -> str:
    d = parse(base) + timedelta(seconds=seconds, minutes=minutes, hours=hours, days=days)
    return d.strftime("%Y-%m-%dT%H:%M:%SZ")


class RunaiCase:
    """One Run:ai workload (optionally several) with Tier 1 history and optional Tier 2."""

    def __init__(self, slug: str, project: str = "ml-team", project_id: str = "212") -> None:
        self.slug = slug
        self.project = project
        self.project_id = project_id
        self.ns = f"runai-{project}"
        self.workloads: list[dict[str, Any]] = []
        # Always collected (history events are mirrored here); ``document(tier2=False)`` leaves it out.
        self.kube: dict[str, Any] | None = {"pods": [], "events": [], "nodes": [], "logs": []}

    # ---------------------------------------------------------------- Tier 1
    def workload(
        self,
        name: str,
        *,
        created: str,
        phase: str,
        phase_at: str,
        image: str,
        type_: str = "Training",
        phase_message: str = "",
        k8s_phase: str | None = None,
        gpu: float = 1,
        memory: str = "32Gi",
        command: str = "python train.py",
        running_pods: int = 0,
        pods_requested: int = 1,
        framework: str | None = None,
        workers: int | None = None,
        desired: str = "Running",
        backoff_limit: int = 6,
        restart_policy: str = "Never",
        deleted_at: str | None = None,
        conditions: list[dict[str, Any]] | None = None,
        key: str = "",
    ) -> dict[str, Any]:
        wid = uid(self.slug, "workload", name, key)
        terminal = phase in ("Failed", "Completed", "Succeeded", "Stopped")
        w: dict[str, Any] = {
            "id": wid,
            "name": name,
            "type": type_,
            "source": "CLI",
            "tenantId": 1001,
            "clusterId": CLUSTER,
            "projectId": self.project_id,
            "projectName": self.project,
            "departmentId": "3",
            "departmentName": "research",
            "namespace": self.ns,
            "submittedBy": "user@example.com",
            "createdAt": created,
            "updatedAt": phase_at,
            "phase": phase,
            "phaseMessage": phase_message,
            "phaseReason": None,
            "phaseUpdatedAt": phase_at,
            "k8sPhase": k8s_phase or phase,
            "k8sPhaseUpdatedAt": phase_at,
            "completedAt": phase_at if terminal else None,
            "deletedAt": deleted_at,
            "conditions": conditions or [],
            "runningPods": running_pods,
            "requestedPods": {"number": pods_requested},
            "podsRequestedResources": {
                "gpuRequestType": "portion",
                "gpu": {"request": gpu},
                "cpuMemory": {"request": memory, "limit": memory},
            },
            "allocatedResources": {"gpu": 0 if terminal else gpu, "cpu": 0, "cpuMemory": "0B"},
            "priority": 50,
            "priorityClassName": "train" if type_ in ("Training", "Distributed") else "inference",
            "preemptible": type_ in ("Training", "Distributed"),
            "category": "Train" if type_ in ("Training", "Distributed") else "Deploy",
            "requestedNodePools": ["default"],
            "currentNodePools": ["default"],
            "images": [image],
            "urls": [],
            "pendingSchedulingMessages": None,
        }
        if framework:
            w["distributedFramework"] = framework
        spec_inner: dict[str, Any] = {
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "command": command,
            "args": "",
            "environmentVariables": [],
            "compute": {
                "gpuDevicesRequest": gpu,
                "gpuRequestType": "portion",
                "cpuMemoryRequest": memory,
                "cpuMemoryLimit": memory,
            },
            "storage": {},
            "restartPolicy": restart_policy,
            "backoffLimit": backoff_limit,
            "annotations": [],
        }
        if framework:
            spec_inner["distributedFramework"] = framework
            spec_inner["numWorkers"] = workers or 1
        spec = {
            "name": name,
            "requestedName": name,
            "workloadId": wid,
            "projectId": self.project_id,
            "clusterId": CLUSTER,
            "createdBy": "user@example.com",
            "createdAt": created,
            "deletedAt": deleted_at,
            "desiredPhase": desired,
            "actualPhase": phase,
            "spec": spec_inner,
        }
        entry = {"workload": w, "spec": spec, "pods": [], "history": [], "metrics": {"measurements": []}}
        self.workloads.append(entry)
        return entry

    def t1pod(
        self,
        entry: dict[str, Any],
        name: str,
        *,
        node: str | None,
        k8s_phase: str,
        created: str,
        updated: str,
        containers: list[tuple[str, str, str | None]],
        completed: str | None = None,
        gpu: float | None = None,
    ) -> dict[str, Any]:
        w = entry["workload"]
        g = w["podsRequestedResources"]["gpu"]["request"] if gpu is None else gpu
        mem = w["podsRequestedResources"]["cpuMemory"]["request"]
        pod = {
            "id": uid(self.slug, "t1pod", name),
            "name": name,
            "workloadId": w["id"],
            "clusterId": CLUSTER,
            "projectId": self.project_id,
            "projectName": self.project,
            "workloadName": w["name"],
            "tenantId": 1001,
            "priorityClassName": w["priorityClassName"],
            "nodeName": node,
            "k8sPhase": k8s_phase,
            "k8sPhaseUpdatedAt": updated,
            "createdAt": created,
            "completedAt": completed,
            "updatedAt": updated,
            "deletedAt": None,
            "currentNodePool": "default",
            "requestedNodePools": ["default"],
            "containers": [{"name": c, "image": i, "startedAt": s} for c, i, s in containers],
            "requestedResources": {
                "gpuRequestType": "portion",
                "gpu": {"request": g},
                "cpuMemory": {"request": mem, "limit": mem},
            },
            "allocatedResources": {
                "gpu": g if node else 0,
                "cpu": 8 if node else 0,
                "cpuMemory": mem if node else "0B",
            },
        }
        entry["pods"].append(pod)
        return pod

    @staticmethod
    def phase(entry: dict[str, Any], phase: str, when: str, message: str = "") -> None:
        entry["history"].append(
            {
                "meta": {"type": "PhaseUpdate", "creationTimestamp": when},
                "spec": {"phaseUpdate": {"phase": phase, "phaseMessage": message}},
            }
        )

    def event(
        self,
        entry: dict[str, Any],
        reason: str,
        message: str,
        when: str,
        *,
        obj: str,
        kind: str = "Pod",
        type_: str = "Warning",
        source: str = "kubelet",
        mirror: bool = True,
        count: int = 1,
        first: str | None = None,
    ) -> None:
        """A Tier 1 history Event; ``mirror`` also adds it to Tier 2 events (when Tier 2 exists)."""
        entry["history"].append(
            {
                "meta": {"type": "Event", "creationTimestamp": when},
                "spec": {
                    "event": {
                        "createdAt": when,
                        "id": uid(self.slug, "event", obj, reason, when, message[:40]),
                        "type": type_,
                        "clusterId": CLUSTER,
                        "message": message,
                        "reason": reason,
                        "source": source,
                        "involvedObject": {
                            "uid": uid(self.slug, "obj", kind, obj),
                            "kind": kind,
                            "name": obj,
                            "namespace": self.ns,
                        },
                    }
                },
            }
        )
        if mirror and self.kube is not None and kind == "Pod":
            self.k8s_event(obj, reason, message, when, type_=type_, component=source, count=count, first=first)

    # ---------------------------------------------------------------- Tier 2
    def tier2(self) -> dict[str, Any]:
        if self.kube is None:
            self.kube = {"pods": [], "events": [], "nodes": [], "logs": []}
        return self.kube

    def k8s_pod(
        self,
        name: str,
        *,
        workload: str,
        node: str | None,
        phase: str,
        created: str,
        containers: list[dict[str, Any]],
        statuses: list[dict[str, Any]],
        init_containers: list[dict[str, Any]] | None = None,
        init_statuses: list[dict[str, Any]] | None = None,
        reason: str | None = None,
        message: str | None = None,
        conditions: list[dict[str, Any]] | None = None,
        labels: dict[str, str] | None = None,
        owner_kind: str = "TrainingWorkload",
        restart_policy: str = "Never",
        qos: str = "Guaranteed",
        active_deadline: int | None = None,
    ) -> dict[str, Any]:
        kube = self.tier2()
        lab = {"workloadName": workload, "project": self.project, "runai/queue": self.project}
        lab.update(labels or {})
        spec: dict[str, Any] = {
            "restartPolicy": restart_policy,
            "schedulerName": "runai-scheduler",
            "priorityClassName": "train",
            "containers": containers,
        }
        if init_containers:
            spec["initContainers"] = init_containers
        if node:
            spec["nodeName"] = node
        if active_deadline is not None:
            spec["activeDeadlineSeconds"] = active_deadline
        ready = phase == "Running" and all(s.get("ready") for s in statuses)
        if conditions is None:
            conditions = [
                {
                    "type": "PodScheduled",
                    "status": "True" if node else "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": created,
                },
            ]
            if node:
                not_ready = [s["name"] for s in statuses if not s.get("ready")]
                conditions += [
                    {
                        "type": "Initialized",
                        "status": "True"
                        if not init_statuses
                        or all(
                            "terminated" in s.get("state", {}) and s["state"]["terminated"].get("exitCode") == 0
                            for s in init_statuses
                        )
                        else "False",
                        "lastProbeTime": None,
                        "lastTransitionTime": created,
                    },
                    {
                        "type": "ContainersReady",
                        "status": "True" if ready else "False",
                        **(
                            {}
                            if ready
                            else {
                                "reason": "ContainersNotReady",
                                "message": f"containers with unready status: [{' '.join(not_ready)}]",
                            }
                        ),
                        "lastProbeTime": None,
                        "lastTransitionTime": created,
                    },
                    {
                        "type": "Ready",
                        "status": "True" if ready else "False",
                        **(
                            {}
                            if ready
                            else {
                                "reason": "ContainersNotReady",
                                "message": f"containers with unready status: [{' '.join(not_ready)}]",
                            }
                        ),
                        "lastProbeTime": None,
                        "lastTransitionTime": created,
                    },
                ]
        status: dict[str, Any] = {"phase": phase, "conditions": conditions, "qosClass": qos}
        if reason:
            status["reason"] = reason
        if message:
            status["message"] = message
        if node:
            status["hostIP"] = "10.0.0.1"
            status["startTime"] = created
        if init_statuses is not None:
            status["initContainerStatuses"] = init_statuses
        status["containerStatuses"] = statuses
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": self.ns,
                "uid": uid(self.slug, "obj", "Pod", name),
                "creationTimestamp": created,
                "labels": lab,
                "ownerReferences": [
                    {
                        "apiVersion": "run.ai/v2alpha1",
                        "kind": owner_kind,
                        "name": workload,
                        "uid": uid(self.slug, "owner", workload),
                        "controller": True,
                    }
                ],
            },
            "spec": spec,
            "status": status,
        }
        kube["pods"].append(pod)
        return pod

    def k8s_event(
        self,
        obj: str,
        reason: str,
        message: str,
        when: str,
        *,
        kind: str = "Pod",
        type_: str = "Warning",
        component: str = "kubelet",
        count: int = 1,
        first: str | None = None,
        namespace: str | None = None,
    ) -> None:
        kube = self.tier2()
        ns = namespace or (self.ns if kind == "Pod" else "default")
        involved: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": kind,
            "name": obj,
            "uid": uid(self.slug, "obj", kind, obj),
        }
        if kind == "Pod":
            involved["namespace"] = ns
        kube["events"].append(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    "name": f"{obj}.{hexid(self.slug, obj, reason, when, message, n=16)}",
                    "namespace": ns,
                    "creationTimestamp": first or when,
                },
                "involvedObject": involved,
                "reason": reason,
                "message": message,
                "type": type_,
                "count": count,
                "firstTimestamp": first or when,
                "lastTimestamp": when,
                "source": {"component": component} if kind != "Node" else {"component": component, "host": obj},
                "reportingComponent": component,
                "reportingInstance": obj if kind == "Node" else "",
            }
        )

    def node(
        self,
        name: str,
        *,
        now: str,
        gpus: int = 8,
        allocatable_gpus: int | None = None,
        product: str = "NVIDIA-H100-80GB-HBM3",
        ready: bool = True,
        extra_conditions: list[dict[str, Any]] | None = None,
        conditions: list[dict[str, Any]] | None = None,
        taints: list[dict[str, Any]] | None = None,
        arch: str = "amd64",
        labels: dict[str, str] | None = None,
        kubelet: str = "v1.29.4",
        runtime: str = "containerd://1.7.13",
        kernel: str = "5.15.0-105-generic",
        os_image: str = "Ubuntu 22.04.4 LTS",
    ) -> dict[str, Any]:
        kube = self.tier2()
        since = at(now, days=-45)
        hb = at(now, seconds=-12)
        if conditions is None:
            conditions = [
                {
                    "type": "MemoryPressure",
                    "status": "False",
                    "reason": "KubeletHasSufficientMemory",
                    "message": "kubelet has sufficient memory available",
                    "lastHeartbeatTime": hb,
                    "lastTransitionTime": since,
                },
                {
                    "type": "DiskPressure",
                    "status": "False",
                    "reason": "KubeletHasNoDiskPressure",
                    "message": "kubelet has no disk pressure",
                    "lastHeartbeatTime": hb,
                    "lastTransitionTime": since,
                },
                {
                    "type": "PIDPressure",
                    "status": "False",
                    "reason": "KubeletHasSufficientPID",
                    "message": "kubelet has sufficient PID available",
                    "lastHeartbeatTime": hb,
                    "lastTransitionTime": since,
                },
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status" if ready else "container runtime is down",
                    "lastHeartbeatTime": hb,
                    "lastTransitionTime": since,
                },
            ]
        conditions = list(extra_conditions or []) + conditions
        lab = {
            "kubernetes.io/hostname": name,
            "kubernetes.io/arch": arch,
            "kubernetes.io/os": "linux",
            "node-role.kubernetes.io/runai-gpu-worker": "true",
        }
        if gpus:
            lab["nvidia.com/gpu.product"] = product
            lab["nvidia.com/gpu.present"] = "true"
        lab.update(labels or {})
        cap: dict[str, str] = {
            "cpu": "112",
            "memory": "2113389048Ki",
            "ephemeral-storage": "1843269236Ki",
            "pods": "110",
        }
        alloc: dict[str, str] = {
            "cpu": "111",
            "memory": "2012725752Ki",
            "ephemeral-storage": "1698752017148",
            "pods": "110",
        }
        if gpus:
            cap["nvidia.com/gpu"] = str(gpus)
            alloc["nvidia.com/gpu"] = str(gpus if allocatable_gpus is None else allocatable_gpus)
        n = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "uid": uid(self.slug, "obj", "Node", name),
                "labels": lab,
                "creationTimestamp": since,
            },
            "spec": {"taints": taints or []},
            "status": {
                "conditions": conditions,
                "capacity": cap,
                "allocatable": alloc,
                "nodeInfo": {
                    "architecture": arch,
                    "operatingSystem": "linux",
                    "kernelVersion": kernel,
                    "containerRuntimeVersion": runtime,
                    "kubeletVersion": kubelet,
                    "osImage": os_image,
                },
            },
        }
        kube["nodes"].append(n)
        return n

    def log(self, pod: str, container: str, text: str, previous: bool = False) -> None:
        self.tier2()["logs"].append(
            {"namespace": self.ns, "pod": pod, "container": container, "previous": previous, "text": text}
        )

    # ---------------------------------------------------------------- output
    def document(
        self,
        *,
        description: str,
        source: str,
        now: str,
        ask: dict[str, Any],
        expect: dict[str, Any],
        tier2: bool = True,
    ) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "format": "snapshot/1",
            "id": self.slug,
            "description": description,
            "source": source,
            "now": now,
            "runai": {
                "clusters": CLUSTERS,
                "projects": [
                    {
                        "id": self.project_id,
                        "name": self.project,
                        "clusterId": CLUSTER,
                        "status": {"namespace": self.ns},
                    }
                ],
                "workloads": self.workloads,
            },
        }
        if tier2 and self.kube is not None:
            doc["kubernetes"] = self.kube
        full_ask = {"cluster_id": CLUSTER, "project": self.project, "lookback": "7d"}
        full_ask.update(ask)
        doc["ask"] = full_ask
        doc["expect"] = expect
        return doc


# -------------------------------------------------------------------- container helpers
def container(name: str, image: str, gpu: float = 1, memory: str = "32Gi", **extra: Any) -> dict[str, Any]:
    res: dict[str, Any] = {"requests": {"memory": memory}, "limits": {"memory": memory}}
    if gpu:
        res["requests"]["nvidia.com/gpu"] = str(int(gpu))
        res["limits"]["nvidia.com/gpu"] = str(int(gpu))
    c = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent", "resources": res}
    c.update(extra)
    return c


def terminated(
    exit_code: int, reason: str, started: str, finished: str, message: str | None = None, key: str = ""
) -> dict[str, Any]:
    t: dict[str, Any] = {"exitCode": exit_code, "reason": reason, "startedAt": started, "finishedAt": finished}
    if message is not None:
        t["message"] = message
    t["containerID"] = "containerd://" + hexid(reason, started, finished, str(exit_code), key)
    return {"terminated": t}


def waiting(reason: str, message: str | None = None) -> dict[str, Any]:
    w: dict[str, Any] = {"reason": reason}
    if message is not None:
        w["message"] = message
    return {"waiting": w}


def running(started: str) -> dict[str, Any]:
    return {"running": {"startedAt": started}}


def cstatus(
    name: str,
    image: str,
    state: dict[str, Any],
    last: dict[str, Any] | None = None,
    restarts: int = 0,
    ready: bool = False,
    pulled: bool = True,
) -> dict[str, Any]:
    s: dict[str, Any] = {
        "name": name,
        "image": image,
        "imageID": (image.split(":")[0] + "@sha256:" + hexid(image)) if pulled else "",
        "ready": ready,
        "restartCount": restarts,
        "started": "running" in state,
        "state": state,
        "lastState": last or {},
    }
    if pulled:
        s["containerID"] = "containerd://" + hexid(name, image, str(restarts))
    return s


# -------------------------------------------------------------------- OSMO
OSMO_HOST = "https://osmo.acme-robotics.example"


def osmo_pool_quota(pool: str, backend: str, platform: str, capacity: int = 64, used: int = 40) -> dict[str, Any]:
    usage = {
        "quota_used": str(used),
        "quota_free": str(capacity - used),
        "quota_limit": str(capacity),
        "total_usage": str(used),
        "total_capacity": str(capacity),
        "total_free": str(capacity - used),
    }
    return {
        "node_sets": [
            {
                "pools": [
                    {
                        "name": pool,
                        "description": f"{pool} pool",
                        "status": "ONLINE",
                        "download_type": None,
                        "enable_maintenance": False,
                        "backend": backend,
                        "default_platform": platform,
                        "default_exec_timeout": "7d",
                        "default_queue_timeout": "3d",
                        "max_exec_timeout": "30d",
                        "max_queue_timeout": "14d",
                        "default_exit_actions": {},
                        "resources": {"gpu": {"guarantee": capacity, "maximum": -1, "weight": 1}},
                        "topology_keys": [],
                        "platforms": {
                            platform: {
                                "description": platform,
                                "host_network_allowed": False,
                                "privileged_allowed": False,
                                "allowed_mounts": [],
                                "default_mounts": [],
                            }
                        },
                        "resource_usage": usage,
                    }
                ]
            }
        ],
        "resource_sum": usage,
    }


def osmo_node(hostname: str, pool: str, platform: str, backend: str, gpus: int = 8, used: int = 8) -> dict[str, Any]:
    return {
        "hostname": hostname,
        "exposed_fields": {
            "node": hostname,
            "pool/platform": [f"{pool}/{platform}"],
            "storage": "27940",
            "cpu": "224",
            "memory": "2015",
            "gpu": str(gpus),
        },
        "taints": [],
        "usage_fields": {"storage": "3145728000Ki", "cpu": "200", "memory": "1552063232Ki", "gpu": str(used)},
        "conditions": ["Ready"],
        "non_workflow_usage_fields": {
            "cpu": "3",
            "memory": "6291456Ki",
            "ephemeral-storage": "0Ki",
            "nvidia.com/gpu": "0",
        },
        "allocatable_fields": {"storage": "30000346562560", "cpu": "224", "memory": "2112880640Ki", "gpu": str(gpus)},
        "platform_allocatable_fields": {
            pool: {platform: {"storage": 29892972380160, "cpu": 222, "memory": "2104492032Ki", "gpu": gpus}}
        },
        "platform_available_fields": {
            pool: {platform: {"storage": 26671746908160, "cpu": 22, "memory": "552428800Ki", "gpu": gpus - used}}
        },
        "platform_workflow_allocatable_fields": {
            pool: {platform: {"storage": 26671746908160, "cpu": 22, "memory": "552428800Ki", "gpu": gpus - used}}
        },
        "config_fields": {
            pool: {platform: {"host_network": False, "privileged": False, "default_mounts": [], "allowed_mounts": []}}
        },
        "backend": backend,
        "label_fields": None,
        "pool_platform_labels": {pool: [platform]},
        "resource_type": "SHARED",
    }


def osmo_task(
    wf: str,
    uuid_hex: str,
    name: str,
    *,
    status: str,
    exit_code: int | None,
    failure: str | None,
    node: str,
    times: dict[str, str | None],
    lead: bool = True,
) -> dict[str, Any]:
    tuuid = hexid(wf, name, n=32)
    return {
        "name": name,
        "retry_id": 0,
        "status": status,
        "failure_message": failure,
        "exit_code": exit_code,
        "logs": f"{OSMO_HOST}/api/workflow/{wf}/logs?last_n_lines=1000&task_name={name}&retry_id=0",
        "error_logs": None
        if status.startswith("FAILED_") and status != "FAILED_UPSTREAM"
        else (f"{OSMO_HOST}/api/workflow/{wf}/error_logs?task_name={name}&retry_id=0"),
        "processing_start_time": times.get("processing"),
        "scheduling_start_time": times.get("scheduling"),
        "initializing_start_time": times.get("initializing"),
        "events": f"{OSMO_HOST}/api/workflow/{wf}/events?task_name={name}&retry_id=0",
        "start_time": times.get("start"),
        "end_time": times.get("end"),
        "input_download_start_time": times.get("download_start"),
        "input_download_end_time": times.get("download_end"),
        "output_upload_start_time": None,
        "dashboard_url": None,
        "pod_name": f"{uuid_hex[:16]}-{tuuid[:16]}",
        "pod_ip": "10.42.7." + str(int(tuuid[:2], 16) % 250 + 2),
        "task_uuid": tuuid,
        "node_name": node,
        "lead": lead,
    }


def osmo_query(
    wf: str,
    *,
    status: str,
    pool: str,
    backend: str,
    submitted_by: str,
    times: dict[str, str | None],
    groups: list[dict[str, Any]],
    cancelled_by: str | None = None,
    priority: str = "NORMAL",
) -> dict[str, Any]:
    uuid_hex = hexid(wf, n=32)
    start, end, submit = times.get("start"), times.get("end"), times["submit"]

    def naive(s: str | None) -> datetime | None:
        return datetime.fromisoformat(s) if s else None

    s_, e_, q_ = naive(start), naive(end), naive(submit)
    return {
        "name": wf,
        "uuid": uuid_hex,
        "submitted_by": submitted_by,
        "cancelled_by": cancelled_by,
        "spec": f"{OSMO_HOST}/api/workflow/{wf}/spec",
        "template_spec": f"{OSMO_HOST}/api/workflow/{wf}/spec?use_template=true",
        "logs": f"{OSMO_HOST}/api/workflow/{wf}/logs?last_n_lines=1000",
        "events": f"{OSMO_HOST}/api/workflow/{wf}/events",
        "overview": f"{OSMO_HOST}/workflows/{wf}",
        "parent_name": None,
        "parent_job_id": None,
        "dashboard_url": None,
        "grafana_url": None,
        "tags": [],
        "submit_time": submit,
        "start_time": start,
        "end_time": end,
        "exec_timeout": None,
        "queue_timeout": None,
        "duration": round((e_ - s_).total_seconds(), 6) if s_ and e_ else None,
        "queued_time": round((s_ - q_).total_seconds(), 6) if s_ and q_ else None,
        "status": status,
        "outputs": f"s3://acme-osmo-intermediate/workflows/{wf}",
        "groups": groups,
        "pool": pool,
        "backend": backend,
        "app_owner": None,
        "app_name": None,
        "app_version": None,
        "plugins": {"rsync": False},
        "priority": priority,
        "labels": {},
        "warnings": [],
    }


def osmo_group(
    name: str, *, status: str, failure: str | None, tasks: list[dict[str, Any]], times: dict[str, str | None]
) -> dict[str, Any]:
    return {
        "name": name,
        "status": status,
        "start_time": times.get("start"),
        "end_time": times.get("end"),
        "processing_start_time": times.get("processing"),
        "scheduling_start_time": times.get("scheduling"),
        "initializing_start_time": times.get("initializing"),
        "remaining_upstream_groups": None,
        "downstream_groups": None,
        "failure_message": failure,
        "tasks": tasks,
    }


def osmo_document(
    slug: str,
    *,
    description: str,
    source: str,
    now: str,
    workflow: dict[str, Any],
    pool_quota: dict[str, Any],
    resources: list[dict[str, Any]],
    ask: dict[str, Any],
    expect: dict[str, Any],
) -> dict[str, Any]:
    return {
        "format": "snapshot/1",
        "id": slug,
        "description": description,
        "source": source,
        "now": now,
        "osmo": {"workflows": [workflow], "pool_quota": pool_quota, "resources": {"resources": resources}},
        "ask": ask,
        "expect": expect,
    }
