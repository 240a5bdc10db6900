"""Run:ai mismatches with the official 2.24 spec (issue 9 §3), each through the real client against the
sandbox on loopback where a request is involved: login before 2.24, pods of deleted workloads, Kubernetes
quantities, open workload types, per-pod metrics, pod phase times and null items in lists."""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs

import httpx
import pytest

from diagnosis.config import RunaiConfig
from diagnosis.http import RetryPolicy
from diagnosis.render import render_text
from diagnosis.report import Category, Outcome, Report
from diagnosis.runai.client import ApiError, RunaiClient
from diagnosis.runai.memory import memory_evidence
from diagnosis.runai.models import Metrics, Pod, Records, Workload, WorkloadSpec, parse_records
from diagnosis.units import quantity_bytes, quantity_decimal
from sandbox.server import Sandbox
from tests import builders as b
from tests.conftest import Diagnose

GiB = b.GiB
OOM = "Pod runai-nlp/{p} failed: container {c} terminated with reason OOMKilled (exit code 137)"


async def _no_wait(_: float) -> None:
    return None


def _gap(report: Report, what: str) -> str:
    return " | ".join(g.why for g in report.gaps if g.what == what)


# -- (a) login before 2.24 -------------------------------------------------------------------------------


def _login_snapshot(version: str | None) -> dict[str, Any]:
    snap = b.snapshot(b.entry(b.workload()))
    if version is not None:
        snap["runai"]["control_plane_version"] = version
    return snap


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (None, [("/api/v2/token", 200)]),  # 2.24: the OAuth2 form endpoint
        ("2.22", [("/api/v2/token", 404), ("/api/v1/token", 200)]),  # 2.20-2.23: v1 client_credentials
        ("2.19", [("/api/v2/token", 404), ("/api/v1/token", 400), ("/api/v1/token", 200)]),  # 2.18-2.19: app_token
    ],
    ids=["2.24-v2", "2.22-v1-client-credentials", "2.19-v1-app-token"],
)
async def test_login_works_on_every_token_api_shape(version: str | None, expected: list[tuple[str, int]]) -> None:
    with Sandbox(_login_snapshot(version)) as sb:
        config = RunaiConfig(sb.url, "svc-doctor", "s3cret", console_url=sb.url)
        async with RunaiClient(config, retry=RetryPolicy(sleep=_no_wait)) as client:
            clusters = await client.list_clusters()
            assert [c.name for c in clusters] == ["dgx-prod", "dgx-staging"]
            # A later login goes straight to the shape that worked.
            await client._fetch_token()
        tokens = [(r.path, r.status) for r in sb.requests if r.method == "POST"]
        assert tokens == [*expected, expected[-1]]
        assert sb.mutating_requests() == []


def test_the_sandbox_reads_v1_bodies_with_the_spec_spelling() -> None:
    """The v1 fallback must send ``clientID`` / ``appID`` as the spec spells them (this is what lets the test
    above fail when the client sends ``clientId``)."""
    with Sandbox(_login_snapshot("2.22")) as sb, httpx.Client(base_url=sb.url) as http:
        cc = {"grantType": "client_credentials", "clientSecret": "s"}
        assert http.post("/api/v1/token", json={**cc, "clientId": "x"}).status_code == 400
        assert http.post("/api/v1/token", json={**cc, "clientID": "x"}).status_code == 200
        reply = http.post("/api/v1/token", json={"grantType": "app_token", "appID": "x", "appSecret": "s"}).json()
        assert reply["accessToken"] and "expiresIn" not in reply  # before 2.24: no lifetime in the reply
    with Sandbox(_login_snapshot("2.19")) as sb, httpx.Client(base_url=sb.url) as http:
        assert http.post("/api/v1/token", json={**cc, "clientID": "x"}).status_code == 400


async def test_a_refused_login_names_every_attempt() -> None:
    snap = _login_snapshot(None)
    snap["faults"] = [{"path": "/api/v*/token", "status": 401, "times": 10}]
    with Sandbox(snap) as sb:
        config = RunaiConfig(sb.url, "svc-doctor", "wrong", console_url=sb.url)
        async with RunaiClient(config, retry=RetryPolicy(sleep=_no_wait)) as client:
            with pytest.raises(ApiError) as err:
                await client.list_clusters()
    assert err.value.status == 401
    assert "(v2): HTTP 401" in str(err.value) and "(v1-app-token): HTTP 401" in str(err.value)
    assert "s3cret" not in str(err.value) and "wrong" not in str(err.value)


async def test_a_whole_diagnosis_runs_on_a_2_19_control_plane(diagnose: Diagnose) -> None:
    msg = OOM.format(p="train-7-0-0", c="train-7")
    snap = b.snapshot(b.entry(b.workload(phaseMessage=msg), history=b.failed_history(msg)))
    snap["runai"]["control_plane_version"] = "2.19"
    report, sb = await diagnose(snap)
    assert report.category == Category.OOM_KILLED
    assert [r.status for r in sb.requests if r.path == "/api/v1/token"][-1] == 200


# -- (b) pods of deleted or cleaned-up workloads ----------------------------------------------------------


def _deleted_pod(name: str = "train-7-0-0", phase: str = "OOMKilled") -> dict[str, Any]:
    pod = b.pod(name, k8s_phase=phase)
    pod["k8sPhaseUpdatedAt"] = b.ago(hours=1)
    pod["deletedAt"] = b.ago(minutes=30)
    return pod


async def test_pods_of_a_deleted_workload_are_asked_with_deleted_true(diagnose: Diagnose) -> None:
    wl = b.workload(deletedAt=b.ago(minutes=30))
    snap = b.snapshot(
        b.entry(wl, history=b.failed_history("Job has reached the specified backoff limit"), pods=[_deleted_pod()])
    )
    report, sb = await diagnose(snap)
    pod_calls = [parse_qs(r.query) for r in sb.requests if r.path.endswith("/pods")]
    assert [q.get("deleted") for q in pod_calls] == [None, ["true"]]
    assert report.category == Category.OOM_KILLED, "the deleted pod's k8sPhase was read"
    assert "k8sPhase of pod train-7-0-0" in render_text(report)
    assert not _gap(report, "pods")


async def test_a_live_workload_with_pods_is_not_asked_again(diagnose: Diagnose) -> None:
    msg = OOM.format(p="train-7-0-0", c="train-7")
    snap = b.snapshot(b.entry(b.workload(phaseMessage=msg), history=b.failed_history(msg)))
    _, sb = await diagnose(snap)
    assert [r.query for r in sb.requests if r.path.endswith("/pods")] == ["offset=0&limit=500"]


async def test_no_pods_live_or_deleted_is_a_gap_that_says_both_were_asked(diagnose: Diagnose) -> None:
    snap = b.snapshot(
        b.entry(b.workload(), history=b.failed_history("Job has reached the specified backoff limit"), pods=[])
    )
    report, _ = await diagnose(snap)
    assert "live or deleted" in _gap(report, "pods")


async def test_the_sandbox_lists_a_deleted_pod_only_with_deleted_true() -> None:
    live = b.pod("train-7-0-1", k8s_phase="Running")
    snap = b.snapshot(b.entry(b.workload(), pods=[live, _deleted_pod()]))
    with Sandbox(snap) as sb:
        config = RunaiConfig(sb.url, "id", "secret", console_url=sb.url)
        async with RunaiClient(config, retry=RetryPolicy(sleep=_no_wait)) as client:
            wid = snap["runai"]["workloads"][0]["workload"]["id"]
            assert [p.name for p in await client.get_pods(wid)] == ["train-7-0-1"]
            assert [p.name for p in await client.get_pods(wid, deleted=True)] == ["train-7-0-0"]


# -- (c) quantities: the Kubernetes table ------------------------------------------------------------------

#: apimachinery ``resource/quantity_test.go`` TestQuantityParse (the entries that need no rounding:
#: ``decQuantity(m, e)`` is m * 10**e) and the Kubernetes docs' memory examples ("the following represent
#: roughly the same value: 128974848, 129e6, 129M, 128974848000m, 123Mi"), plus the quantity.go comment's
#: examples (1.5 = 1500m, 1.5Gi = 1536Mi) and the forms of issue 9.
K8S_QUANTITIES: list[tuple[str, Decimal]] = [
    ("0", Decimal(0)),
    ("0n", Decimal(0)),
    ("0u", Decimal(0)),
    ("0m", Decimal(0)),
    ("0Ki", Decimal(0)),
    ("0k", Decimal(0)),
    ("0Mi", Decimal(0)),
    ("0M", Decimal(0)),
    ("0Gi", Decimal(0)),
    ("0G", Decimal(0)),
    ("0Ti", Decimal(0)),
    ("0T", Decimal(0)),
    ("1", Decimal(1)),
    ("1Ki", Decimal(1024)),
    ("8Ki", Decimal(8 * 1024)),
    ("7Mi", Decimal(7 * 1024**2)),
    ("6Gi", Decimal(6 * 1024**3)),
    ("5Ti", Decimal(5 * 1024**4)),
    ("4Pi", Decimal(4 * 1024**5)),
    ("3Ei", Decimal(3 * 1024**6)),
    ("10Ti", Decimal(10 * 1024**4)),
    ("100Ti", Decimal(100 * 1024**4)),
    ("5n", Decimal("5e-9")),
    ("4u", Decimal("4e-6")),
    ("3m", Decimal("3e-3")),
    ("9", Decimal(9)),
    ("8k", Decimal(8000)),
    ("50k", Decimal(50000)),
    ("7M", Decimal(7 * 10**6)),
    ("6G", Decimal(6 * 10**9)),
    ("5T", Decimal(5 * 10**12)),
    ("40T", Decimal(40 * 10**12)),
    ("300T", Decimal(300 * 10**12)),
    ("2P", Decimal(2 * 10**15)),
    ("1E", Decimal(10**18)),
    ("1E-3", Decimal("0.001")),
    ("1e3", Decimal(1000)),
    ("1E6", Decimal(10**6)),
    ("1e9", Decimal(10**9)),
    ("1E12", Decimal(10**12)),
    ("1e15", Decimal(10**15)),
    ("1E18", Decimal(10**18)),
    ("1e14", Decimal(10**14)),
    ("1e13", Decimal(10**13)),
    ("100.035k", Decimal(100035)),
    ("0.001", Decimal("0.001")),
    ("0.0005k", Decimal("0.5")),
    ("0.005", Decimal("0.005")),
    ("0.05", Decimal("0.05")),
    ("0.5", Decimal("0.5")),
    ("0.00050k", Decimal("0.5")),
    ("0.00500", Decimal("0.005")),
    ("0.05000", Decimal("0.05")),
    ("0.50000", Decimal("0.5")),
    ("0.5e0", Decimal("0.5")),
    ("0.5e-1", Decimal("0.05")),
    ("0.5e-2", Decimal("0.005")),
    ("10.035M", Decimal(10035000)),
    ("1.2e3", Decimal(1200)),
    ("1.3E+6", Decimal(1300000)),
    ("1.40e9", Decimal(1400000000)),
    ("1.53E12", Decimal(1530000000000)),
    ("1.6e15", Decimal(16 * 10**14)),
    ("1.7E18", Decimal(17 * 10**17)),
    ("9.01", Decimal("9.01")),
    ("8.1k", Decimal(8100)),
    ("7.123456M", Decimal(7123456)),
    ("6.987654321G", Decimal(6987654321)),
    ("5.444T", Decimal(5444 * 10**9)),
    ("40.1T", Decimal(401 * 10**11)),
    ("300.2T", Decimal(3002 * 10**11)),
    ("2.5P", Decimal(25 * 10**14)),
    ("1.01E", Decimal(101 * 10**16)),
    ("12E", Decimal(12 * 10**18)),
    ("100.035Ki", Decimal("102435.84")),
    ("0.5Mi", Decimal(512 * 1024)),
    ("0.05Gi", Decimal("53687091.2")),
    ("0.025Ti", Decimal("27487790694.4")),
    (".001", Decimal("0.001")),
    (".0001k", Decimal("0.1")),
    ("1.", Decimal(1)),
    ("1.G", Decimal(10**9)),
    # the Kubernetes docs' memory example: all roughly 123 MiB
    ("128974848", Decimal(128974848)),
    ("129e6", Decimal(129000000)),
    ("129M", Decimal(129000000)),
    ("128974848000m", Decimal(128974848)),
    ("123Mi", Decimal(128974848)),
    # quantity.go's serialization examples and issue 9's forms
    ("1500m", Decimal("1.5")),
    ("1.5Gi", Decimal(1536 * 1024**2)),
    ("1536Mi", Decimal(1536 * 1024**2)),
    ("+1Gi", Decimal(1024**3)),
    (".5Gi", Decimal(512 * 1024**2)),
    ("-1.025Ti", Decimal("-1.025") * 1024**4),
]


@pytest.mark.parametrize(("text", "value"), K8S_QUANTITIES, ids=[t for t, _ in K8S_QUANTITIES])
def test_quantities_parse_like_kubernetes(text: str, value: Decimal) -> None:
    assert quantity_decimal(text) == value
    # Bytes are whole: a fraction rounds up away from zero, as Quantity.Value() does.
    whole = int(value) if value == int(value) else int(value) + (1 if value > 0 else -1)
    assert quantity_bytes(text) == whole


@pytest.mark.parametrize("text", ["", "Gi", "1e", "1ki", "1.5.5", "NaN", "Infinity", "1_000", "12 apples", "--1"])
def test_what_is_not_a_quantity_is_none(text: str) -> None:
    assert quantity_decimal(text) is None and quantity_bytes(text) is None


def test_byte_units_and_numbers_are_still_read() -> None:
    assert quantity_bytes("0B") == 0
    assert quantity_bytes("32GiB") == 32 * GiB
    assert quantity_bytes("16 GB") == 16 * 10**9
    assert quantity_bytes(17179869184) == 16 * GiB
    assert quantity_bytes(None) is None


async def test_an_exponent_limit_gives_the_percentage(diagnose: Diagnose) -> None:
    msg = OOM.format(p="train-7-0-0", c="train-7")
    wl = b.workload(phaseMessage=msg, podsRequestedResources=None)
    e = b.entry(wl, history=b.failed_history(msg), pods=[b.pod(limit="16e9")], metrics=b.metrics([15.2e9]))
    report, _ = await diagnose(b.snapshot(e))
    peak = next(ev for ev in report.evidence if ev.label.startswith("peak memory"))
    assert "95.0% of the limit" in peak.value


# -- (d) workload kinds -----------------------------------------------------------------------------------


async def test_an_unknown_workload_type_is_a_named_gap_not_a_crash(diagnose: Diagnose) -> None:
    msg = "Workload stopped"
    wl = b.workload(phase="Stopped", type="runai-job", phaseMessage=msg)
    snap = b.snapshot(b.entry(wl, history=b.failed_history(msg)))
    snap["runai"]["workloads"][0]["history"][-1]["spec"]["phaseUpdate"]["phase"] = "Stopped"
    report, sb = await diagnose(snap)
    assert report.outcome == Outcome.DIAGNOSED
    spec_gap = _gap(report, "submitted spec")
    assert "'runai-job'" in spec_gap and "desiredPhase" in spec_gap
    assert "not known" in _gap(report, "stop requested (desiredPhase)")
    assert not [r for r in sb.requests if "/trainings/" in r.path or r.path.startswith("/api/v2/workloads")]


async def test_a_v2_workload_reads_desired_phase_from_the_v2_endpoint(diagnose: Diagnose) -> None:
    wl = b.workload(phase="Stopped", type="Deployment", sourceApi="WorkloadsV2")
    entry = b.entry(wl, history=b.failed_history(""))
    entry["history"][-1]["spec"]["phaseUpdate"]["phase"] = "Stopped"
    entry["spec"]["desiredPhase"] = "Stopped"
    report, sb = await diagnose(b.snapshot(entry))
    assert report.category == Category.SCHEDULING_POLICY_TERMINATED
    assert f"/api/v2/workloads/{wl['id']}" in [r.path for r in sb.requests]
    assert not _gap(report, "submitted spec")


def test_spec_paths_accept_the_spec_kinds_and_crd_kinds() -> None:
    path = RunaiClient.spec_path
    assert path("DistributedInference", "x") == "/api/v1/workloads/distributed-inferences/x"
    assert path("distributed-inference", "x") == "/api/v1/workloads/distributed-inferences/x"
    assert path("TrainingWorkload", "x") == "/api/v1/workloads/trainings/x"
    assert path("InteractiveWorkload", "x") == "/api/v1/workloads/workspaces/x"
    assert path("runai-job", "x") is None
    assert path("runai-job", "x", "WorkloadsV2") == "/api/v2/workloads/x"


def test_limits_are_read_from_the_role_of_the_pod() -> None:
    di = WorkloadSpec.model_validate(
        {"spec": {"leader": {"compute": {"cpuMemoryLimit": "32Gi"}}, "worker": {"compute": {"cpuMemoryLimit": "16Gi"}}}}
    )
    assert di.compute_value("cpuMemoryLimit", "llm-leader-0") == ("32Gi", "spec.leader.compute.cpuMemoryLimit")
    assert di.compute_value("cpuMemoryLimit", "llm-worker-1") == ("16Gi", "spec.worker.compute.cpuMemoryLimit")
    assert di.compute_value("cpuMemoryLimit", "llm-0") is None, "ambiguous: never guessed"
    dist = WorkloadSpec.model_validate(
        {"spec": {"compute": {"cpuMemoryLimit": "16Gi"}}, "masterSpec": {"compute": {"cpuMemoryLimit": "8Gi"}}}
    )
    assert dist.compute_value("cpuMemoryLimit", "ddp-master-0") == ("8Gi", "masterSpec.compute.cpuMemoryLimit")
    assert dist.compute_value("cpuMemoryLimit", "ddp-worker-3") == ("16Gi", "compute.cpuMemoryLimit")
    same = WorkloadSpec.model_validate(
        {"spec": {"compute": {"cpuMemoryLimit": "16Gi"}}, "masterSpecSameAsWorker": True}
    )
    assert same.compute_value("cpuMemoryLimit", "ddp-master-0") == ("16Gi", "compute.cpuMemoryLimit")


# -- (e) metrics of several pods --------------------------------------------------------------------------


def _per_pod_metrics(series: dict[str, tuple[list[float], float]], label: str = "pod") -> dict[str, Any]:
    out: list[dict[str, Any]] = []
    for pod, (usage, limit) in series.items():
        values = [{"value": str(v), "timestamp": b.ago(minutes=90 - i)} for i, v in enumerate(usage)]
        out.append({"type": "CPU_MEMORY_USAGE_BYTES", "labels": {label: pod}, "values": values})
        out.append(
            {
                "type": "CPU_MEMORY_LIMIT_BYTES",
                "labels": {label: pod},
                "values": [{"value": str(limit), "timestamp": b.ago(hours=1)}],
            }
        )
    return {"measurements": out}


async def test_peak_and_limit_belong_to_the_oom_killed_pod(diagnose: Diagnose) -> None:
    """The master's series comes first and peaks highest, but the worker was OOM-killed at its own 16Gi limit."""
    msg = OOM.format(p="ddp-worker-0", c="pytorch")
    master, worker = b.pod("ddp-master-0", k8s_phase="Running", limit="32Gi"), b.pod("ddp-worker-0", limit="16Gi")
    wl = b.workload(name="ddp", type="Distributed", phaseMessage=msg, podsRequestedResources=None)
    metrics = _per_pod_metrics(
        {"ddp-master-0": ([10 * GiB, 20 * GiB], 32 * GiB), "ddp-worker-0": ([8 * GiB, 15.9 * GiB], 16 * GiB)}
    )
    snap = b.snapshot(
        b.entry(wl, history=b.failed_history(msg, pod_name="ddp-worker-0"), pods=[master, worker], metrics=metrics),
        ask={"text": "why did ddp fail?", "cluster_id": b.CLUSTER, "workload_name": "ddp", "project": "nlp"},
    )
    report, _ = await diagnose(snap)
    assert report.category == Category.OOM_KILLED
    limit = next(ev for ev in report.evidence if ev.label.startswith("memory limit"))
    peak = next(ev for ev in report.evidence if ev.label.startswith("peak memory"))
    assert limit.value.startswith("16Gi") and "pod ddp-worker-0" in limit.value
    assert "99.4% of the limit" in peak.value and "pod ddp-worker-0" in peak.value
    assert "2 per-pod series" in peak.value and "pod ddp-worker-0" in peak.source
    assert "21474836480" not in render_text(report), "the master's peak is not reported as the worker's"


def test_without_a_diagnosed_pod_the_pod_closest_to_its_own_limit_is_chosen() -> None:
    wl = Workload.model_validate(b.workload(name="llm", type="DistributedInference", podsRequestedResources=None))
    pods = [Pod.model_validate({"name": "llm-leader-0", "id": "p-1"}), Pod.model_validate({"name": "llm-worker-0"})]
    spec = WorkloadSpec.model_validate(
        {"spec": {"leader": {"compute": {"cpuMemoryLimit": "32Gi"}}, "worker": {"compute": {"cpuMemoryLimit": "16Gi"}}}}
    )
    # The leader's series is labelled with its Run:ai pod id, the worker's with its name; no limit metric.
    metrics = Metrics.model_validate(
        {
            "measurements": [
                {"type": "CPU_MEMORY_USAGE_BYTES", "labels": {"podId": "p-1"}, "values": [{"value": str(20 * GiB)}]},
                {
                    "type": "CPU_MEMORY_USAGE_BYTES",
                    "labels": {"podName": "llm-worker-0"},
                    "values": [{"value": str(15 * GiB)}],
                },
            ]
        }
    )
    ev = memory_evidence(wl, pods, spec, metrics)
    assert ev.pod == "llm-worker-0" and ev.named
    assert ev.limit is not None and ev.limit.raw == "16Gi"
    assert ev.limit.source == "submitted spec (spec.worker.compute.cpuMemoryLimit)"
    assert ev.peak is not None and ev.peak.bytes == 15 * GiB
    leader = memory_evidence(wl, pods, spec, metrics, prefer_pod="llm-leader-0")
    assert leader.limit is not None and leader.limit.raw == "32Gi" and leader.peak and leader.peak.bytes == 20 * GiB


# -- (f) pod phase time -----------------------------------------------------------------------------------


async def test_an_old_pod_phase_is_not_taken_for_the_recent_termination(diagnose: Diagnose) -> None:
    """The pod has shown OOMKilled for three days (k8sPhaseUpdatedAt); the run that failed an hour ago
    ended with the program's own exit 1."""
    msg = "Pod runai-nlp/train-7-0-0 failed: container train-7 terminated with reason Error (exit code 1)"
    pod = b.pod(k8s_phase="OOMKilled")
    pod["k8sPhaseUpdatedAt"] = b.ago(days=3)
    snap = b.snapshot(b.entry(b.workload(), history=b.failed_history(msg, event_message=msg), pods=[pod]))
    report, _ = await diagnose(snap)
    assert report.category == Category.CRASH_APP_ERROR
    snap["runai"]["workloads"][0]["pods"][0]["k8sPhaseUpdatedAt"] = b.ago(minutes=61)
    report, _ = await diagnose(snap)
    assert report.category == Category.OOM_KILLED, "a recent OOMKilled phase still decides"


# -- (g) null-safe lists ----------------------------------------------------------------------------------


async def test_null_items_are_skipped_and_counted_not_fatal(diagnose: Diagnose) -> None:
    msg = OOM.format(p="train-7-0-0", c="train-7")
    history = b.failed_history("Job has reached the specified backoff limit", event_message=msg)
    events = [None, *(r["spec"]["event"] for r in history if r["spec"].get("event")), None]
    metrics = b.metrics([4 * GiB, 15.9 * GiB])
    metrics["measurements"].insert(0, None)
    with_nulls: list[Any] = [None, *history]
    snap = b.snapshot(b.entry(b.workload(), history=with_nulls, pods=[None, b.pod()], events=events, metrics=metrics))
    report, _ = await diagnose(snap)
    assert report.category == Category.OOM_KILLED
    assert _gap(report, "events").startswith("2 null records skipped"), "the events call was not dropped"
    assert _gap(report, "history").startswith("1 null record skipped")
    assert _gap(report, "pods").startswith("1 null record skipped")
    assert "events call failed" not in render_text(report)
    peak = next(ev for ev in report.evidence if ev.label.startswith("peak memory"))
    assert "of the limit" in peak.value


def test_unreadable_records_are_counted_apart_from_nulls() -> None:
    records = parse_records(Pod, [None, {"name": "a"}, {"no": "name"}, 7])
    assert isinstance(records, Records) and [p.name for p in records] == ["a"]
    assert records.skipped_text() == "1 null record and 2 unreadable records skipped"
    assert Workload.model_validate({"id": "w", "name": "n", "conditions": [None], "images": None}).conditions == []
