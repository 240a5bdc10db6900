"""One Kubernetes context per Run:ai cluster (issue 9 §4): WD_KUBE_CONTEXTS / WD_IN_CLUSTER_ID, the sandbox's
``kubernetes_by_cluster``, and the check that a Tier 2 pod is the pod Run:ai reported."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from diagnosis.config import NO_CREDENTIALS, ConfigError, KubeConfig
from diagnosis.k8s import pod_mismatch
from diagnosis.render import render_text
from diagnosis.report import Category, Outcome
from diagnosis.units import parse_time
from sandbox.server import Sandbox
from tests import builders as b
from tests.conftest import Diagnose

PROD, STAGING = b.CLUSTER, b.OTHER_CLUSTER  # named dgx-prod and dgx-staging in the builders' clusters list
POD = "train-7-0-0"
POD_PATH = f"/api/v1/namespaces/runai-nlp/pods/{POD}"
EXIT_137 = f"Pod runai-nlp/{POD} failed: container train-7 terminated with reason Error (exit code 137)"
CLI = str(Path(sys.executable).parent / "workload-doctor")


def k8s_pod(*, created: str, **kw: Any) -> dict[str, Any]:
    pod = b.k8s_pod(**kw)
    pod["metadata"]["creationTimestamp"] = created
    return pod


def cluster_data(pod: dict[str, Any], log: str) -> dict[str, Any]:
    return {
        "pods": [pod],
        "events": [],
        "nodes": [b.node()],
        "logs": [{"namespace": "runai-nlp", "pod": POD, "container": "train-7", "previous": False, "text": log}],
    }


#: The same pod name in the same namespace on both clusters, with different facts: staging's was OOMKilled, prod's
#: exited 1 with a traceback. Both were created when Run:ai says its pod was (3 h ago, within a minute).
STAGING_DATA = cluster_data(
    k8s_pod(created=b.ago(hours=3, seconds=-40), state=b.terminated(137, reason="OOMKilled")),
    "epoch 3 step 900 loss 1.93\n",
)
PROD_DATA = cluster_data(
    k8s_pod(created=b.ago(hours=3), state=b.terminated(1)),
    "Traceback (most recent call last):\nValueError: prod-only failure\n",
)


def two_clusters(cluster: str = STAGING, by_cluster: dict[str, Any] | None = None, **pod_kw: Any) -> dict[str, Any]:
    """A failed train-7 (exit 137, unexplained in Tier 1) on ``cluster``; each cluster has its own Kubernetes API."""
    wl = b.workload(clusterId=cluster, id=b.wid("train-7" + cluster))
    pod = b.pod(**pod_kw)
    snap = b.snapshot(b.entry(wl, history=b.failed_history("x", event_message=EXIT_137), pods=[pod]))
    snap["ask"]["cluster_id"] = cluster
    snap["kubernetes_by_cluster"] = by_cluster if by_cluster is not None else {PROD: PROD_DATA, STAGING: STAGING_DATA}
    return snap


def k8s_requests(sb: Sandbox) -> dict[str | None, list[str]]:
    out: dict[str | None, list[str]] = {}
    for r in sb.requests:
        if r.path.startswith("/api/v1/namespaces") or r.path.startswith("/api/v1/nodes"):
            out.setdefault(r.cluster, []).append(r.path)
    return out


# -- end to end, through the sandbox ----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_staging_workload_reads_stagings_kubernetes_api(diagnose: Diagnose) -> None:
    report, sb = await diagnose(two_clusters(STAGING))
    assert report.outcome == Outcome.DIAGNOSED
    assert report.category == Category.OOM_KILLED, render_text(report)
    seen = k8s_requests(sb)
    assert POD_PATH in seen.get(STAGING, []), seen
    assert PROD not in seen and None not in seen, "no Tier 2 read went to another cluster's API"
    text = render_text(report)
    assert "prod-only failure" not in text
    assert sb.mutating_requests() == []


@pytest.mark.asyncio
async def test_a_prod_workload_reads_prods_kubernetes_api(diagnose: Diagnose) -> None:
    report, sb = await diagnose(two_clusters(PROD))
    seen = k8s_requests(sb)
    assert POD_PATH in seen.get(PROD, []) and STAGING not in seen, seen
    assert report.category != Category.OOM_KILLED  # prod's pod exited 1: staging's OOM kill is not its evidence


@pytest.mark.asyncio
async def test_a_cluster_without_a_context_has_no_tier2_and_says_so(diagnose: Diagnose) -> None:
    report, sb = await diagnose(two_clusters(STAGING, by_cluster={PROD: PROD_DATA}))
    assert k8s_requests(sb) == {}, "nothing is read from another cluster's API"
    assert report.category == Category.UNKNOWN  # exit 137 with no Tier 2: never a guess
    why = [g.why for g in report.gaps if "Tier 2" in g.what]
    assert why == [f"no Kubernetes context is configured for cluster dgx-staging ({STAGING}) (WD_KUBE_CONTEXTS)"]
    assert "WD_KUBE_CONTEXTS" in render_text(report)


@pytest.mark.asyncio
async def test_a_pod_created_at_another_time_is_another_pod_and_its_evidence_is_dropped(diagnose: Diagnose) -> None:
    recreated = cluster_data(
        k8s_pod(created=b.ago(minutes=20), state=b.terminated(137, reason="OOMKilled")), "fresh replica\n"
    )
    report, sb = await diagnose(two_clusters(STAGING, by_cluster={PROD: PROD_DATA, STAGING: recreated}))
    assert POD_PATH in k8s_requests(sb).get(STAGING, [])
    assert report.category == Category.UNKNOWN, "the other pod's OOMKilled is not this pod's evidence"
    gaps = [g for g in report.gaps if g.what.startswith(f"Tier 2 evidence of pod runai-nlp/{POD}")]
    assert len(gaps) == 1, report.gaps
    assert "another pod of the same name" in gaps[0].why and "not used" in gaps[0].why
    assert "fresh replica" not in render_text(report)


@pytest.mark.asyncio
async def test_a_lone_kubernetes_section_still_serves_every_cluster(diagnose: Diagnose) -> None:
    snap = two_clusters(STAGING)
    del snap["kubernetes_by_cluster"]
    snap["kubernetes"] = STAGING_DATA
    report, sb = await diagnose(snap)
    assert report.category == Category.OOM_KILLED
    assert POD_PATH in k8s_requests(sb).get(None, [])


def test_each_clusters_api_takes_only_its_own_token() -> None:
    with Sandbox(two_clusters(STAGING, by_cluster={PROD: PROD_DATA, STAGING: STAGING_DATA})) as sb:
        assert sb.kubeconfig() is not None
        env = sb.kube_env()
        assert json.loads(env["WD_KUBE_CONTEXTS"]) == {PROD: f"sandbox-{PROD}", STAGING: f"sandbox-{STAGING}"}
        prod_token = sb.state.cluster_tokens[PROD]
        staging_token = sb.state.cluster_tokens[STAGING]
        with httpx.Client(base_url=sb.url) as http:

            def get(cluster: str, token: str) -> httpx.Response:
                return http.get(f"/k8s/clusters/{cluster}{POD_PATH}", headers={"Authorization": f"Bearer {token}"})

            assert (
                get(STAGING, staging_token).json()["status"]["containerStatuses"][0]["state"]["terminated"]["reason"]
                == "OOMKilled"
            )
            assert (
                get(PROD, prod_token).json()["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 1
            )
            assert get(STAGING, prod_token).status_code == 401
            assert get("00000000-0000-0000-0000-000000000000", staging_token).status_code == 404
            assert http.get(POD_PATH, headers={"Authorization": f"Bearer {staging_token}"}).status_code == 404
        assert {r.cluster for r in sb.requests if r.path == POD_PATH} >= {PROD, STAGING}


def test_the_cli_snapshot_mode_wires_one_context_per_cluster(tmp_path: Path) -> None:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(two_clusters(STAGING)))
    r = subprocess.run(
        [CLI, "diagnose", "--snapshot", str(path), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["category"] == "OOM_KILLED"


def test_live_settings_map_a_cluster_by_name(tmp_path: Path) -> None:
    """The real settings, by environment: WD_KUBE_CONTEXTS maps the cluster's *name* to its context."""
    with Sandbox(two_clusters(STAGING)) as sb:
        kubeconfig = sb.kubeconfig()
        assert kubeconfig is not None
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "RUNAI_BASE_URL": sb.url,
            "RUNAI_CLIENT_ID": "a",
            "RUNAI_CLIENT_SECRET": "b",
            "KUBECONFIG": kubeconfig,
            "WD_KUBE_CONTEXTS": f"dgx-staging: sandbox-{STAGING}\ndgx-prod: sandbox-{PROD}\n",
        }
        args = ["--workload", "train-7", "--project", "nlp", "--cluster-id", STAGING, "--format", "json"]
        r = subprocess.run([CLI, "diagnose", *args], capture_output=True, text=True, timeout=60, env=env)
        seen = k8s_requests(sb)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["category"] == "OOM_KILLED"
    assert POD_PATH in seen.get(STAGING, []) and PROD not in seen


def test_a_bad_wd_kube_contexts_is_one_line_from_the_cli(tmp_path: Path) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "RUNAI_BASE_URL": "http://127.0.0.1:9",
        "RUNAI_CLIENT_ID": "a",
        "RUNAI_CLIENT_SECRET": "b",
        "WD_KUBE_CONTEXTS": '{"dgx-prod": ["not", "a", "context"]}',
    }
    r = subprocess.run(
        [CLI, "diagnose", "--workload", "train-7", "--project", "nlp", "--cluster-id", PROD],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "WD_KUBE_CONTEXTS" in r.stderr and "dgx-prod" in r.stderr


# -- settings ---------------------------------------------------------------------------------------------------


def test_neither_setting_keeps_one_kubeconfig_for_every_cluster() -> None:
    kube = KubeConfig.from_env({"KUBECONFIG": "/etc/kube/config"})
    assert kube.available and not kube.routed
    assert kube.for_cluster(PROD, "dgx-prod") is kube
    assert kube.for_cluster(STAGING, "dgx-staging") is kube
    in_pod = KubeConfig.from_env({"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert in_pod.in_cluster and in_pod.for_cluster(STAGING) is in_pod
    assert KubeConfig.from_env({}).available is False
    assert KubeConfig.from_env({}).for_cluster(PROD).why_unavailable == NO_CREDENTIALS


@pytest.mark.parametrize(
    "raw",
    [
        # YAML, with a file value, a context value and an explicit pair
        f"{PROD}: prod-ctx\ndgx-staging: /etc/kube/staging.yaml\nedge: {{kubeconfig: ~/edge.conf, context: e1}}\n",
        # JSON of the same map
        json.dumps(
            {
                PROD: "prod-ctx",
                "dgx-staging": "/etc/kube/staging.yaml",
                "edge": {"kubeconfig": "~/edge.conf", "context": "e1"},
            }
        ),
    ],
    ids=["yaml", "json"],
)
def test_wd_kube_contexts_parses_yaml_and_json(raw: str) -> None:
    kube = KubeConfig.from_env({"KUBECONFIG": "/home/bot/.kube/config", "WD_KUBE_CONTEXTS": raw})
    assert kube.routed and kube.available
    prod = kube.for_cluster(PROD, "dgx-prod")
    assert (prod.kubeconfig, prod.context) == ("/home/bot/.kube/config", "prod-ctx")
    staging = kube.for_cluster(STAGING, "dgx-staging")  # by name: the id is not mapped
    assert (staging.kubeconfig, staging.context) == ("/etc/kube/staging.yaml", None)
    edge = kube.for_cluster("3f1c", "Edge")  # a name differing only in case still matches
    assert edge.kubeconfig is not None and edge.kubeconfig.endswith("/edge.conf") and edge.context == "e1"
    other = kube.for_cluster("9e9e", "dgx-lab")
    assert not other.available
    assert other.why_unavailable == "no Kubernetes context is configured for cluster dgx-lab (9e9e) (WD_KUBE_CONTEXTS)"


def test_an_id_mapping_wins_and_names_need_the_clusters_list() -> None:
    kube = KubeConfig.from_env({"WD_KUBE_CONTEXTS": json.dumps({PROD: "by-id", "dgx-prod": "by-name"})})
    assert kube.for_cluster(PROD, "dgx-prod").context == "by-id"
    named = KubeConfig.from_env({"WD_KUBE_CONTEXTS": "dgx-staging: stg"})
    unknown = named.for_cluster(STAGING, None, names_known=False)
    assert not unknown.available and "clusters list could not be read" in unknown.why_unavailable


def test_wd_kube_contexts_may_be_the_path_of_a_file(tmp_path: Path) -> None:
    f = tmp_path / "contexts.yaml"
    f.write_text(f"{STAGING}: stg\n")
    kube = KubeConfig.from_env({"WD_KUBE_CONTEXTS": str(f)})
    assert kube.for_cluster(STAGING).context == "stg"


def test_wd_in_cluster_id_serves_one_cluster_only() -> None:
    env = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "WD_IN_CLUSTER_ID": "dgx-prod", "WD_KUBE_CONTEXTS": "dgx-lab: lab"}
    kube = KubeConfig.from_env(env)
    prod = kube.for_cluster(PROD, "dgx-prod")
    assert prod.in_cluster and prod.available and prod.kubeconfig is None
    assert kube.for_cluster("abc", "dgx-lab").context == "lab"
    assert not kube.for_cluster(STAGING, "dgx-staging").available
    only = KubeConfig.from_env({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "WD_IN_CLUSTER_ID": PROD})
    assert only.for_cluster(PROD).in_cluster and not only.for_cluster(STAGING).available


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"WD_KUBE_CONTEXTS": "{prod: ctx"}, "not valid YAML or JSON"),
        ({"WD_KUBE_CONTEXTS": "[a, b]"}, "not a map"),
        ({"WD_KUBE_CONTEXTS": "prod: [a]"}, "cluster 'prod'"),
        ({"WD_KUBE_CONTEXTS": "prod: ''"}, "cluster 'prod'"),
        ({"WD_KUBE_CONTEXTS": "prod: {context: 3}"}, "non-empty strings"),
        ({"WD_KUBE_CONTEXTS": "/nonexistent/contexts.yaml"}, "neither a map nor a readable file"),
        ({"WD_IN_CLUSTER_ID": PROD}, "KUBERNETES_SERVICE_HOST"),
        (
            {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "WD_IN_CLUSTER_ID": "p", "WD_KUBE_CONTEXTS": "p: ctx"},
            "give it one of them",
        ),
    ],
)
def test_a_bad_setting_is_one_clear_line(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError) as caught:
        KubeConfig.from_env(env)
    message = str(caught.value)
    assert needle in message and "\n" not in message
    assert "WD_KUBE_CONTEXTS" in message or "WD_IN_CLUSTER_ID" in message


# -- the pod identity check -------------------------------------------------------------------------------------


def test_pod_identity_is_namespace_name_and_creation_time() -> None:
    created = parse_time(b.ago(hours=3))
    assert created is not None
    pod = k8s_pod(created=b.ago(hours=3, minutes=-4))
    assert pod_mismatch(pod, "runai-nlp", POD, created) is None  # 4 min apart: within the tolerance
    assert pod_mismatch(pod, "runai-nlp", POD, None) is None  # Run:ai's time unknown: name and namespace decide
    late = pod_mismatch(pod, "runai-nlp", POD, created - timedelta(minutes=3))
    assert late is not None and "another pod of the same name" in late
    assert "namespace 'runai-nlp'" in (pod_mismatch(pod, "runai-other", POD, created) or "")
    assert "'train-7-0-0'" in (pod_mismatch(pod, "runai-nlp", "train-7-0-1", created) or "")
    untimed = b.k8s_pod()
    assert pod_mismatch(untimed, "runai-nlp", POD, created) is None
    untimed["metadata"]["creationTimestamp"] = 12  # not a time: nothing to compare, no crash
    assert pod_mismatch(untimed, "runai-nlp", POD, created) is None
