"""Small builders of snapshot documents (shared/cases/FORMAT.md) for rule tests."""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
CLUSTER = "71f69d83-ba66-4822-adf5-55ce55efd210"
OTHER_CLUSTER = "0b5e4c1a-9f3d-4e2b-8a77-3c2d1e0f9a88"
GiB = 2**30


def ts(delta: timedelta) -> str:
    return (NOW + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


def ago(**kw: float) -> str:
    return ts(-timedelta(**kw))


def wid(seed: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, seed))


def workload(name: str = "train-7", project: str = "nlp", phase: str = "Failed", **kw: Any) -> dict[str, Any]:
    w: dict[str, Any] = {
        "id": wid(name + phase),
        "name": name,
        "type": "Training",
        "clusterId": CLUSTER,
        "projectId": "1",
        "projectName": project,
        "namespace": f"runai-{project}",
        "createdAt": ago(hours=3),
        "phase": phase,
        "phaseMessage": "",
        "phaseUpdatedAt": ago(hours=1),
        "k8sPhase": phase,
        "deletedAt": None,
        "conditions": [],
        "podsRequestedResources": {"cpuMemory": {"request": "8Gi", "limit": "16Gi"}},
    }
    w.update(kw)
    return w


def phase_update(phase: str, when: str, message: str = "") -> dict[str, Any]:
    return {
        "meta": {"type": "PhaseUpdate", "creationTimestamp": when},
        "spec": {"phaseUpdate": {"phase": phase, "phaseMessage": message}},
    }


def event(
    reason: str,
    message: str,
    when: str,
    pod: str = "train-7-0-0",
    kind: str = "Pod",
    type_: str = "Warning",
    source: str = "kubelet",
) -> dict[str, Any]:
    return {
        "meta": {"type": "Event", "creationTimestamp": when},
        "spec": {
            "event": {
                "createdAt": when,
                "id": str(uuid.uuid4()),
                "type": type_,
                "clusterId": CLUSTER,
                "message": message,
                "reason": reason,
                "source": source,
                "involvedObject": {"uid": "u", "kind": kind, "name": pod, "namespace": "runai-nlp"},
            }
        },
    }


def pod(
    name: str = "train-7-0-0", k8s_phase: str = "Error", node: str = "dgx-01", limit: str = "16Gi"
) -> dict[str, Any]:
    return {
        "id": wid(name),
        "name": name,
        "nodeName": node,
        "k8sPhase": k8s_phase,
        "createdAt": ago(hours=3),
        "containers": [{"name": "train-7", "image": "img:1"}],
        "requestedResources": {"cpuMemory": {"request": "8Gi", "limit": limit}},
    }


def metrics(usage: list[float] | None, limit: float = 16 * GiB, request: float = 8 * GiB) -> dict[str, Any]:
    usage_values = [{"value": str(v), "timestamp": ago(minutes=90 - i)} for i, v in enumerate(usage or [])]
    return {
        "measurements": [
            {"type": "CPU_MEMORY_USAGE_BYTES", "labels": None, "values": usage_values},
            {
                "type": "CPU_MEMORY_LIMIT_BYTES",
                "labels": None,
                "values": [{"value": str(limit), "timestamp": ago(hours=1)}],
            },
            {
                "type": "CPU_MEMORY_REQUEST_BYTES",
                "labels": None,
                "values": [{"value": str(request), "timestamp": ago(hours=1)}],
            },
        ]
    }


_DEFAULT: Any = object()


def entry(
    wl: dict[str, Any], history: list[dict[str, Any]] | None = None, pods: Any = _DEFAULT, **kw: Any
) -> dict[str, Any]:
    e: dict[str, Any] = {
        "workload": wl,
        "spec": {
            "name": wl["name"],
            "workloadId": wl["id"],
            "desiredPhase": "Running",
            "spec": {
                "image": "img:1",
                "command": "python train.py",
                "compute": {"cpuMemoryRequest": "8Gi", "cpuMemoryLimit": "16Gi"},
            },
        },
        "pods": [pod()] if pods is _DEFAULT else pods,
        "history": history if history is not None else [],
        "metrics": metrics([]),
    }
    e.update(kw)
    return e


def snapshot(
    *entries: dict[str, Any],
    ask: dict[str, Any] | None = None,
    kubernetes: dict[str, Any] | None = None,
    faults: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    snap: dict[str, Any] = {
        "format": "snapshot/1",
        "id": "test",
        "description": "test",
        "source": "synthetic",
        "now": ts(timedelta()),
        "runai": {
            "clusters": [{"uuid": CLUSTER, "name": "dgx-prod"}, {"uuid": OTHER_CLUSTER, "name": "dgx-staging"}],
            "projects": [{"id": "1", "name": "nlp", "clusterId": CLUSTER, "status": {"namespace": "runai-nlp"}}],
            "workloads": list(entries),
        },
        "ask": ask
        or {
            "text": "why did train-7 fail?",
            "cluster_id": CLUSTER,
            "workload_name": "train-7",
            "project": "nlp",
            "intent": "terminal",
            "lookback": "7d",
        },
        "expect": {"outcome": "diagnosed"},
    }
    if kubernetes is not None:
        snap["kubernetes"] = kubernetes
    if faults:
        snap["faults"] = faults
    return copy.deepcopy(snap)


def k8s_pod(
    name: str = "train-7-0-0",
    *,
    state: dict[str, Any] | None = None,
    last: dict[str, Any] | None = None,
    restarts: int = 0,
    init: list[dict[str, Any]] | None = None,
    node: str = "dgx-01",
    reason: str | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "phase": "Failed",
        "containerStatuses": [
            {"name": "train-7", "restartCount": restarts, "state": state or {}, "lastState": last or {}}
        ],
    }
    if init is not None:
        status["initContainerStatuses"] = init
    if reason:
        status["reason"] = reason
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "runai-nlp"},
        "spec": {"nodeName": node, "containers": [{"name": "train-7", "resources": {"limits": {"memory": "16Gi"}}}]},
        "status": status,
    }


def terminated(code: int, reason: str = "Error", message: str | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {
        "terminated": {"exitCode": code, "reason": reason, "startedAt": ago(hours=2), "finishedAt": ago(minutes=61)}
    }
    if message:
        t["terminated"]["message"] = message
    return t


def node(name: str = "dgx-01", ready: str = "True") -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {},
        "status": {
            "conditions": [
                {
                    "type": "Ready",
                    "status": ready,
                    "reason": "KubeletReady" if ready == "True" else "NodeStatusUnknown",
                    "message": "",
                    "lastTransitionTime": ago(hours=1),
                }
            ]
        },
    }


def failed_history(
    message: str, *, pod_name: str = "train-7-0-0", event_reason: str = "PodFailed", event_message: str | None = None
) -> list[dict[str, Any]]:
    """A normal run that ends in a pod-failure event and a Failed phase update one hour ago."""
    h = [
        phase_update("Creating", ago(hours=3)),
        phase_update("Pending", ago(hours=3)),
        phase_update("Running", ago(minutes=170)),
    ]
    if event_message is not None:
        h.append(event(event_reason, event_message, ago(minutes=61), pod=pod_name, source="workload-controller"))
    h.append(phase_update("Failed", ago(hours=1), message))
    return h
