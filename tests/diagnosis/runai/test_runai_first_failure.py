"""Issue 8 §2 house rules end to end through the sandbox: the first failing pod decides, GPU hardware faults."""

from __future__ import annotations

import pytest

from diagnosis.render import render_text
from diagnosis.report import Category, Outcome
from tests import builders as b
from tests.conftest import Diagnose

pytestmark = pytest.mark.asyncio


def _pod(name: str, ended: str, k8s_phase: str = "Error") -> dict[str, object]:
    p = b.pod(name=name, k8s_phase=k8s_phase)
    p["completedAt"] = ended
    return p


async def test_a_worker_oom_first_decides_over_the_masters_later_error(diagnose: Diagnose) -> None:
    wl = b.workload(type="Distributed")
    history = b.failed_history("")
    pods = [_pod("train-7-master-0", b.ago(minutes=61)), _pod("train-7-worker-1", b.ago(minutes=95), "OOMKilled")]
    k8s = {
        "pods": [b.k8s_pod("train-7-worker-1", state=b.terminated(137, "OOMKilled"))],
        "events": [],
        "nodes": [b.node()],
        "logs": [],
    }
    k8s["pods"][0]["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = b.ago(minutes=95)
    snap = b.snapshot(b.entry(wl, history, pods=pods), kubernetes=k8s)
    report, sandbox = await diagnose(snap)
    assert report.outcome == Outcome.DIAGNOSED
    assert report.category == Category.OOM_KILLED
    text = render_text(report)
    assert "first failing pod (decides the category): train-7-worker-1" in text
    # Tier 2 reads the pod that failed first, not the newest one.
    assert any(r.path.endswith("/pods/train-7-worker-1") for r in sandbox.requests)


async def test_a_peer_stopped_after_an_unseen_replica_failed_is_unknown_naming_the_replica(
    diagnose: Diagnose,
) -> None:
    wl = b.workload(type="Distributed")
    history = b.failed_history("")
    history.insert(
        -1,
        b.event(
            "PyTorchJobFailed",
            "PyTorchJob runai-nlp/train-7 has failed because 1 Worker replica(s) failed.",
            b.ago(minutes=62),
            pod="train-7",
            kind="PyTorchJob",
        ),
    )
    history.insert(-1, b.event("Killing", "Stopping container train-7", b.ago(minutes=61.9), pod="train-7-master-0"))
    snap = b.snapshot(b.entry(wl, history, pods=[_pod("train-7-master-0", b.ago(minutes=61))]))
    report, _ = await diagnose(snap)
    assert report.category == Category.UNKNOWN
    assert "Worker replica" in report.headline
    assert report.confidence is not None and report.confidence.level == "none"


async def test_a_hardware_xid_in_the_log_is_a_node_failure_naming_the_node_and_the_xid(diagnose: Diagnose) -> None:
    k8s = {
        "pods": [b.k8s_pod(state=b.terminated(1))],
        "events": [],
        "nodes": [b.node("dgx-01")],
        "logs": [
            {
                "namespace": "runai-nlp",
                "pod": "train-7-0-0",
                "container": "train-7",
                "previous": False,
                "text": "step 900\nNVRM: Xid (PCI:0000:3b:00): 79, pid=4242, GPU has fallen off the bus.\n"
                "RuntimeError: CUDA error: unspecified launch failure\n",
            }
        ],
    }
    snap = b.snapshot(b.entry(b.workload(), b.failed_history("")), kubernetes=k8s)
    report, _ = await diagnose(snap)
    assert report.category == Category.NODE_FAILURE
    assert "Xid 79" in report.headline and "dgx-01" in report.headline
    assert report.confidence is not None and report.confidence.level == "direct"


def _node_event(message: str, when: str) -> dict[str, object]:
    return {
        "metadata": {"name": "dgx-01.xid", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": "dgx-01"},
        "reason": "GPUXidError",
        "type": "Warning",
        "message": message,
        "lastTimestamp": when,
    }


@pytest.mark.parametrize(("when", "category"), [(b.ago(minutes=62), Category.NODE_FAILURE), (b.ago(days=3), None)])
async def test_a_gpu_fault_reported_only_as_a_node_event_counts_inside_the_run(
    diagnose: Diagnose, when: str, category: Category | None
) -> None:
    k8s = {
        "pods": [b.k8s_pod(state=b.terminated(1))],
        "events": [_node_event("NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.", when)],
        "nodes": [b.node("dgx-01")],
        "logs": [
            {
                "namespace": "runai-nlp",
                "pod": "train-7-0-0",
                "container": "train-7",
                "previous": False,
                "text": "RuntimeError: CUDA error: unknown error\n",
            }
        ],
    }
    snap = b.snapshot(b.entry(b.workload(), b.failed_history("")), kubernetes=k8s)
    report, sandbox = await diagnose(snap)
    assert any(r.path == "/api/v1/namespaces/default/events" for r in sandbox.requests), "the node's events were read"
    if category is None:  # a fault from three days before the run is another story: the program's error stands
        assert report.category == Category.CRASH_APP_ERROR
    else:
        assert report.category == category and "Xid 79" in report.headline
