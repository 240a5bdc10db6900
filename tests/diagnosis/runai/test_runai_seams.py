"""Issue 10 seams of the Run:ai backend, pure and without HTTP: the clients name their calls (the cited source
texts stay what they were), one error describer, the generic Kubernetes object reading, the Pending decision
split into decide and phrase, and the "is it stuck?" answer (issue 11)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from diagnosis import kube_objects as kube
from diagnosis.builder import ReportBuilder as BaseReportBuilder
from diagnosis.errors import ApiError as SharedApiError
from diagnosis.errors import NotFound
from diagnosis.fetched import Call, Fetched, describe_error
from diagnosis.k8s import KubeCalls, Tier2Evidence, describe_tier2_error
from diagnosis.report import Outcome
from diagnosis.runai.client import ApiError, Calls, NoSpecEndpoint, NotFoundError
from diagnosis.runai.models import Workload
from diagnosis.runai.reporting import (
    ReportBuilder,
    pending_facts,
    pending_for,
    pending_reasons,
    pending_step,
)
from diagnosis.runai.routing import asks_stuck
from diagnosis.runai.signals import Kind, Signal, node_signals, pod_object_signals

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


# -- the clients name their calls ----------------------------------------------------------------------------


def test_runai_calls_cite_the_same_sources_as_before() -> None:
    assert str(Calls.workload("w")) == "GET /api/v1/workloads/w"
    assert Calls.pods("w").cite("nodeName") == "GET /api/v1/workloads/w/pods (nodeName)"
    assert (
        Calls.metrics("w").cite("CPU_MEMORY_USAGE_BYTES") == "GET /api/v1/workloads/w/metrics (CPU_MEMORY_USAGE_BYTES)"
    )
    assert [c.label for c in (Calls.pods("w"), Calls.history("w"), Calls.events("w"), Calls.spec(None))] == [
        "pods",
        "history",
        "events",
        "submitted spec",
    ]
    assert str(Calls.spec(None)) == "GET spec endpoint"
    assert Calls.workloads().cite("deleted=true") == "GET /api/v1/workloads (deleted=true)"
    assert Calls.projects().cite("or scheduler message") == "GET /api/v1/org-unit/projects (or scheduler message)"


def test_tier2_calls_cite_the_kubectl_commands() -> None:
    assert KubeCalls.pod("ns", "p").source == "kubectl describe pod p -n ns"
    assert KubeCalls.pod_events("ns", "p").source == "kubectl get events -n ns --field-selector involvedObject.name=p"
    assert KubeCalls.log("ns", "p", "c", True).source == "kubectl logs p -n ns -c c --previous"
    assert KubeCalls.log("ns", "p", "c", False).source == "kubectl logs p -n ns -c c"
    assert KubeCalls.node("n1").source == "kubectl describe node n1"
    assert (
        KubeCalls.node_events("n1").source
        == "kubectl get events -n default --field-selector involvedObject.kind=Node,involvedObject.name=n1"
    )
    assert KubeCalls.log("ns", "p", "c", True).label == "logs of container c"
    assert str(KubeCalls.pod("ns", "p")) == "GET /api/v1/namespaces/ns/pods/p"


# -- one error vocabulary ------------------------------------------------------------------------------------


def test_runai_errors_are_the_shared_errors() -> None:
    assert issubclass(ApiError, SharedApiError) and issubclass(NotFoundError, NotFound)
    assert describe_error(ApiError(503, "/x")) == "HTTP 503 after retries"
    assert describe_error(NotFoundError(404, "/x", "no such workload")) == "HTTP 404 (no such workload)"
    exc = NoSpecEndpoint("odd")
    assert describe_error(exc) == str(exc) and "no spec endpoint" in str(exc)


@pytest.mark.parametrize(
    ("status", "body", "reason", "why"),
    [
        (403, json.dumps({"message": 'pods "p" is forbidden'}), "Forbidden", 'HTTP 403 (pods "p" is forbidden)'),
        (503, "not json", "Service Unavailable", "HTTP 503 (Service Unavailable)"),
        (404, "{}", None, "HTTP 404"),
        (400, json.dumps({"message": "x" * 300}), None, f"HTTP 400 ({'x' * 160})"),
    ],
)
def test_tier2_errors_are_described_as_before(status: int, body: str, reason: str | None, why: str) -> None:
    exc = ApiException(status=status, reason=reason)
    exc.body = body
    assert describe_tier2_error(exc) == why


def test_a_failed_tier2_read_is_a_gap_named_by_its_call() -> None:
    t2 = Tier2Evidence(namespace="ns", pod_name="p")
    t2.failed(KubeCalls.pod_events("ns", "p"), ApiException(status=403, reason="Forbidden"))
    b = BaseReportBuilder(now=NOW)
    for failure in t2.failures:
        assert not b.fetched(failure)
    assert [(g.what, g.why) for g in b.gaps] == [("events of pod p", "HTTP 403")]  # no body: the status alone


def test_the_shared_builder_builds_a_report_of_either_system() -> None:
    b = BaseReportBuilder(now=NOW, system="osmo")
    call = Call(label="events", path="/api/workflow/w/events", system="osmo")
    b.fetched(Fetched(call, why="HTTP 500 after retries"), with_call=True)
    b.add("exit code", "137", str(call))
    report = b.build(Outcome.FAILED, "w failed.")
    assert report.system == "osmo" and report.gaps[0].why == "HTTP 500 after retries [GET /api/workflow/w/events]"
    assert report.evidence[0].source == "GET /api/workflow/w/events" and report.generated_at == NOW
    assert isinstance(ReportBuilder(now=NOW, console_url="https://r"), BaseReportBuilder)


# -- generic Kubernetes objects ------------------------------------------------------------------------------


def _pod() -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "ns", "creationTimestamp": "2026-11-28T10:00:00Z"},
        "spec": {"nodeName": "n1"},
        "status": {
            "initContainerStatuses": [
                {"name": "init", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
            ],
            "containerStatuses": [
                {
                    "name": "main",
                    "restartCount": 2,
                    "state": {
                        "terminated": {
                            "exitCode": 137,
                            "reason": "OOMKilled",
                            "finishedAt": "2026-11-28T11:00:00Z",
                        }
                    },
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "message": "boom"}},
                },
                "not a status",
            ],
            "conditions": [
                {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager", "message": "x"}
            ],
        },
    }


def test_kube_objects_read_container_states_restarts_and_disruptions() -> None:
    pod = _pod()
    states = kube.container_states(pod)
    assert [(s.container, s.init, s.which) for s in states] == [
        ("init", True, "state"),
        ("init", True, "lastState"),
        ("main", False, "state"),
        ("main", False, "lastState"),
    ]
    main = states[2].terminated
    assert main is not None and main.exit_code == 137 and main.reason == "OOMKilled"
    assert states[1].terminated is None and states[1].waiting is None
    assert kube.restart_counts(pod) == [("main", 2)]
    assert kube.terminated_now(pod) == {"init", "main"}
    assert kube.main_finished_at(pod) == datetime(2026, 11, 28, 11, 0, tzinfo=UTC)
    assert [c.reason for c in kube.disruptions(pod)] == ["DeletionByTaintManager"]
    facts = kube.pod_facts(pod)
    assert (facts.name, facts.namespace, facts.node) == ("p", "ns", "n1")


def test_kube_objects_read_events_and_node_conditions() -> None:
    [ev] = kube.events(
        [
            {
                "reason": "Warning",
                "message": "m",
                "eventTime": "2026-11-28T11:00:00Z",
                "involvedObject": {"kind": "Node", "name": "n1"},
            },
            None,
        ]
    )
    assert (ev.reason, ev.kind, ev.name, ev.at) == ("Warning", "Node", "n1", datetime(2026, 11, 28, 11, tzinfo=UTC))
    node = {
        "metadata": {"name": "n1"},
        "spec": {"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "stopped posting"},
                {"type": "GpuHealthy", "status": "False", "reason": "XidError", "message": "Xid 79"},
                {"type": "MemoryPressure", "status": "False"},
            ]
        },
    }
    conds = kube.node_conditions(node)
    assert [c.bad for c in conds] == [True, True, False]
    assert [t.key for t in kube.node_taints(node)] == ["node.kubernetes.io/unreachable"]


def test_the_runai_signals_of_a_pod_and_a_node_are_read_through_kube_objects() -> None:
    signals = pod_object_signals(_pod(), source="kubectl describe pod p -n ns")
    kinds = [s.kind for s in signals]
    assert Kind.OOM_KILLED in kinds and Kind.NODE_FAILURE in kinds and Kind.APP_EXIT in kinds
    oom = next(s for s in signals if s.kind == Kind.OOM_KILLED)
    assert (oom.container, oom.exit_code, oom.node, oom.text) == ("main", 137, "n1", "OOMKilled (exit code 137)")
    node = {
        "metadata": {"name": "n1"},
        "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "m"}]},
    }
    [sig] = node_signals(node, source="kubectl describe node n1")
    assert sig.kind == Kind.NODE_FAILURE and sig.text == "Ready=False reason KubeletNotReady: m"


# -- Pending: decide, then phrase; "is it stuck?" ------------------------------------------------------------


def _workload(**kw: Any) -> Workload:
    base = {"id": "w1", "name": "vit", "clusterId": "c1", "projectName": "vision", "phase": "Pending"}
    return Workload.model_validate(base | kw)


def _sched(text: str) -> Signal:
    return Signal(Kind.SCHEDULING, text=text, source="events", at=NOW - timedelta(minutes=5), reason="Unschedulable")


@pytest.mark.parametrize(
    ("message", "preemptible", "reasons", "step"),
    [
        (
            "requested 4 GPUs but the project's quota is 8 GPUs and 6 GPUs are already allocated",
            False,
            ["project vision has 8 GPUs of quota with 6 allocated, so 2 free for the 4 it asks for"],
            "Submit it as preemptible",
        ),
        (
            "0/8 nodes are available: 8 Insufficient nvidia.com/gpu.",
            None,
            ["the node pool is out of free GPUs (physical capacity, not quota)"],
            "Wait for GPUs in node pool",
        ),
        (
            "0/8 nodes are available: 8 node(s) didn't match Pod's node affinity/selector.",
            None,
            ["no nodes match the workload's hardware requirements (selector, affinity or taints)"],
            "Relax the node selector",
        ),
        ("something else entirely", None, [], "Check the project's quota"),
    ],
)
def test_pending_facts_decide_and_phrase(message: str, preemptible: bool | None, reasons: list[str], step: str) -> None:
    facts = pending_facts(_workload(), [_sched(message)])
    assert pending_reasons(facts) == reasons
    assert pending_step(facts, preemptible).startswith(step)


def test_stuck_questions_and_how_long_it_has_been_pending() -> None:
    assert asks_stuck("is vit stuck?") and asks_stuck("vit has been STUCK for hours")
    assert not asks_stuck("why is vit still pending?") and not asks_stuck(None)
    since = (NOW - timedelta(hours=3, minutes=12)).isoformat()
    assert pending_for(_workload(phaseUpdatedAt=since), NOW) == "3 h 12 min"
    assert pending_for(_workload(totalPendingTimeSeconds=600), NOW) == "10 min"
    assert pending_for(_workload(), NOW) is None
