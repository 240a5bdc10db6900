"""The sandbox enforces the shipped RBAC (issue 22 §1): the rendered file equals what ``kubectl kustomize
deploy/base`` renders, a request the RBAC does not grant gets the API server's 403 ``Status``, the product's reads
are all granted, and a refused read becomes a gap that names the missing permission."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from diagnosis.render import render_text
from diagnosis.report import Category
from sandbox.rbac import RBAC_FILE, Attributes, Rbac, attributes_of, project_namespaces
from sandbox.render_rbac import render
from sandbox.server import Sandbox
from tests import builders as b
from tests.conftest import Diagnose

ROOT = Path(__file__).resolve().parents[2]
KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")
def test_the_kept_rbac_is_what_deploy_base_renders() -> None:
    assert KUBECTL is not None
    out = subprocess.run(
        [KUBECTL, "kustomize", str(ROOT / "deploy" / "base")], capture_output=True, text=True, timeout=60, check=True
    )
    assert RBAC_FILE.read_text() == render(out.stdout), "run `make rbac` after changing deploy/base"


def test_request_attributes_are_read_as_the_authorizer_reads_them() -> None:
    assert attributes_of("GET", "/api/v1/namespaces/ns/pods/p/log", {}) == Attributes("get", "pods", "log", "ns", "p")
    assert attributes_of("GET", "/api/v1/events", {}) == Attributes("list", "events")
    assert attributes_of("GET", "/api/v1/namespaces/ns/pods", {"watch": "true"}) == Attributes(
        "watch", "pods", namespace="ns"
    )
    assert attributes_of("GET", "/api/v1/namespaces/ns", {}) == Attributes("get", "namespaces", name="ns")
    assert attributes_of("DELETE", "/api/v1/nodes/n", {}) == Attributes("delete", "nodes", name="n")
    assert attributes_of("GET", "/version", {}) is None


def test_the_shipped_rbac_grants_the_reads_and_nothing_else() -> None:
    rbac = Rbac.shipped({"runai-nlp"})
    granted = [
        Attributes("get", "pods", namespace="runai-nlp", name="p"),
        Attributes("get", "pods", "log", namespace="runai-nlp", name="p"),
        Attributes("list", "pods", namespace="runai-nlp"),
        Attributes("list", "events", namespace="runai-nlp"),
        Attributes("list", "events", namespace="default"),
        Attributes("get", "nodes", name="dgx-01"),
        Attributes("create", "selfsubjectaccessreviews", group="authorization.k8s.io"),
    ]
    refused = [
        Attributes("list", "events"),  # every namespace's events
        Attributes("get", "pods", namespace="runai-other", name="p"),  # not a project of this install
        Attributes("get", "pods", namespace="default", name="p"),  # only events are granted in default
        Attributes("get", "secrets", namespace="runai-nlp", name="s"),
        Attributes("delete", "pods", namespace="runai-nlp", name="p"),
        Attributes("create", "pods", "exec", namespace="runai-nlp", name="p"),
    ]
    assert [a.describe() for a in granted if not rbac.allows(a)] == []
    assert [a.describe() for a in refused if rbac.allows(a)] == []


def test_project_namespaces_come_from_projects_and_workloads() -> None:
    snap = b.snapshot(b.entry(b.workload(namespace="team-x")))
    assert project_namespaces(snap) == {"runai-nlp", "team-x"}


def _node_event(reason: str, message: str, when: str, node: str = "dgx-01") -> dict[str, Any]:
    return {
        "metadata": {"name": f"{node}.{reason.lower()}", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": node},
        "reason": reason,
        "message": message,
        "type": "Warning",
        "firstTimestamp": when,
        "lastTimestamp": when,
    }


def _xid_snapshot() -> dict[str, Any]:
    """A worker that exits 1 while its node reports Xid 79 (in the namespace ``default``, where Kubernetes keeps
    node events)."""
    history = b.failed_history("Workload failed", event_message="Pod train-7-0-0 failed")
    return b.snapshot(
        b.entry(b.workload(), history=history),
        kubernetes={
            "pods": [b.k8s_pod(state=b.terminated(1))],
            "events": [_node_event("GPUXid", "Xid 79: GPU has fallen off the bus", b.ago(minutes=62))],
            "nodes": [b.node()],
        },
    )


def _get(sb: Sandbox, path: str) -> httpx.Response:
    env = sb.kube_env()
    config = yaml.safe_load(Path(env["KUBECONFIG"]).read_text())
    token = config["users"][0]["user"]["token"]
    return httpx.get(sb.url + path, headers={"Authorization": f"Bearer {token}"})


def test_a_refused_request_gets_the_api_servers_forbidden_status() -> None:
    with Sandbox(_xid_snapshot()) as sb:
        refused = _get(sb, "/api/v1/events?fieldSelector=involvedObject.kind%3DNode")
        allowed = _get(sb, "/api/v1/namespaces/default/events?fieldSelector=involvedObject.kind%3DNode")
        secret = _get(sb, "/api/v1/namespaces/runai-nlp/secrets/s")
        node = _get(sb, "/api/v1/nodes/dgx-01")
    assert node.status_code == 200 and node.json()["metadata"]["name"] == "dgx-01"
    assert refused.status_code == 403
    body = refused.json()
    assert body["kind"] == "Status" and body["reason"] == "Forbidden" and body["code"] == 403
    assert 'cannot list resource "events" in API group "" at the cluster scope' in body["message"]
    assert allowed.status_code == 200 and [e["reason"] for e in allowed.json()["items"]] == ["GPUXid"]
    assert secret.status_code == 403
    assert sb.state.refused == ["list events at the cluster scope", "get secrets in namespace runai-nlp"]


@pytest.mark.asyncio
async def test_every_read_of_a_diagnosis_is_granted_and_node_events_decide(diagnose: Diagnose) -> None:
    report, sb = await diagnose(_xid_snapshot())
    assert sb.state.refused == []
    assert report.category == Category.NODE_FAILURE
    assert "Xid 79" in render_text(report)
    assert any(r.path == "/api/v1/namespaces/default/events" for r in sb.requests)


@pytest.mark.asyncio
async def test_a_refused_read_is_a_gap_naming_the_missing_permission(diagnose: Diagnose) -> None:
    objects = [d for d in yaml.safe_load_all(RBAC_FILE.read_text()) if isinstance(d, dict)]
    narrower = [d for d in objects if d["metadata"]["name"] != "workload-doctor-node-events"]
    report, sb = await diagnose(_xid_snapshot(), sandbox={"rbac": Rbac(narrower, {"runai-nlp"})})
    assert sb.state.refused == ["list events in namespace default"]
    gaps = {g.what: g.why for g in report.gaps}
    assert "events in namespace default: list is forbidden" in gaps["events of node dgx-01"]
    assert report.category != Category.NODE_FAILURE  # the Xid was not seen: never guessed


def test_the_access_reviews_answer_from_the_same_rbac() -> None:
    with Sandbox(_xid_snapshot()) as sb:
        env = sb.kube_env()
        token = yaml.safe_load(Path(env["KUBECONFIG"]).read_text())["users"][0]["user"]["token"]
        headers = {"Authorization": f"Bearer {token}"}
        review = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"

        def can(**attrs: str) -> bool:
            body = {"spec": {"resourceAttributes": attrs}}
            return bool(httpx.post(sb.url + review, json=body, headers=headers).json()["status"]["allowed"])

        rules = httpx.post(
            sb.url + "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            json={"spec": {"namespace": "runai-nlp"}},
            headers=headers,
        ).json()["status"]["resourceRules"]
        assert can(verb="get", resource="pods", namespace="runai-nlp")
        assert not can(verb="get", resource="pods", namespace="kube-system")
        assert can(verb="list", resource="events", namespace="default")
        assert not can(verb="list", resource="secrets", namespace="runai-nlp")
    assert {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["events", "pods", "pods/log"]} in rules


@pytest.mark.asyncio
async def test_a_run_ai_refusal_is_a_gap_naming_what_was_refused(diagnose: Diagnose) -> None:
    """A 403 from any system names what the credentials may not read (issue 22 §1)."""
    snap = _xid_snapshot()
    snap["faults"] = [{"path": "/api/v1/workloads/*/metrics", "status": 403, "times": 10}]
    report, _ = await diagnose(snap)
    refused = [g.why for g in report.gaps if "403" in g.why]
    assert refused and all("the credentials may not GET /api/v1/workloads/" in why for why in refused), report.gaps
