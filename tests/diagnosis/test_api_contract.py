"""Contract tests against the official API specs (issue 9 §2, requests and response fields).

1. Every case in ``../shared/cases`` and ``../shared/cases-next/digest`` runs through the product in-process
   against the sandbox (the CLI's own question and digest merging), in parallel threads; every Run:ai and
   OSMO request the sandbox recorded is checked against the matching spec (``tests/spec_contract.py``):
   path template and method, query parameter names, required parameters, enum values, patterns, integers,
   booleans, date-times, uuids, ``filterBy`` fields and operators, token body content type and field names.
   The client methods no case reaches (projects, every spec kind, the v2 spec, the v1 logins, the OSMO
   workflow list with filters, the per-task entry) are called once each against the sandbox and checked too.
2. Every field the product's response models read (pydantic field names and aliases, nested models) and
   every raw key the clients read exists in the response schema of the operation it is read from
   (:data:`READS`), except the few in :data:`NOT_IN_SPEC`, each with its reason.

Skips cleanly when ``../shared`` (the specs or the cases) is absent. ``pytest -s`` shows the summary.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from diagnosis.osmo import models as om
from diagnosis.runai import models as rm
from sandbox.server import REQUEST_LOG_PATH, Sandbox, SeenRequest
from tests.conftest import CASES, SHARED
from tests.spec_contract import OSMO_SPEC, RUNAI_SPEC, ApiSpec, Checked, model_fields

DIGEST_CASES = SHARED / "cases-next" / "digest"
CASE_FILES = (sorted(CASES.rglob("*.json")) if CASES.is_dir() else []) + (
    sorted(DIGEST_CASES.glob("*.json")) if DIGEST_CASES.is_dir() else []
)
HAVE_SPECS = RUNAI_SPEC.is_file() and OSMO_SPEC.is_file()
needs_specs = pytest.mark.skipif(not HAVE_SPECS, reason="../shared/reference/specs is absent")
#: Kubernetes API paths (Tier 2: pods, logs, events, nodes; in neither spec).
KUBERNETES = ("/api/v1/namespaces/", "/api/v1/nodes/", "/k8s/clusters/")
KUBERNETES_EXACT = frozenset({"/api/v1/events", "/api/v1/nodes"})
WORKERS = 4


@pytest.fixture(scope="module")
def runai_spec() -> ApiSpec:
    return ApiSpec(RUNAI_SPEC, "Run:ai 2.24")


@pytest.fixture(scope="module")
def osmo_spec() -> ApiSpec:
    return ApiSpec(OSMO_SPEC, "OSMO")


# -- 1. requests ------------------------------------------------------------------------------------


def is_api_request(r: SeenRequest) -> bool:
    """A Run:ai or OSMO request (not a Kubernetes one, not the sandbox's request log)."""
    if r.path == REQUEST_LOG_PATH or r.cluster is not None:
        return False
    return r.path not in KUBERNETES_EXACT and not r.path.startswith(KUBERNETES)


def check_request(r: SeenRequest, runai: ApiSpec, osmo: ApiSpec) -> Checked:
    spec = runai if r.path.startswith(("/api/v1/", "/api/v2/")) else osmo
    return spec.check(r.method, r.raw_path or r.path, r.query, r.content_type, r.body)


@dataclass
class CaseRun:
    name: str
    requests: list[SeenRequest]
    error: str | None


def run_case(case_file: Path) -> CaseRun:
    """One case through the product in-process, as ``workload-doctor diagnose --snapshot`` runs it."""
    from bot.cli import build_question
    from bot.cli_digest import digest_ask
    from diagnosis.answer import Backends, answer, answer_digest
    from diagnosis.config import KubeConfig, OsmoConfig, RunaiConfig
    from diagnosis.digests import DigestAsk
    from diagnosis.question import Question
    from diagnosis.units import parse_time

    snapshot = json.loads(case_file.read_text())
    error = None
    with Sandbox(snapshot) as sandbox:
        now = parse_time(snapshot.get("now")) if snapshot.get("now") else None
        backends = Backends(
            runai=RunaiConfig(sandbox.url, "sandbox", "sandbox", console_url=sandbox.url)
            if "runai" in snapshot
            else None,
            kube=KubeConfig.from_env(sandbox.kube_env()),
            osmo=OsmoConfig(sandbox.url, "sandbox-access-token") if "osmo" in snapshot else None,
        )
        if now is not None:
            fixed = now
            backends.now = lambda: fixed
        ask = dict(snapshot.get("ask") or {})
        try:
            if ask.get("kind") == "digest":
                asyncio.run(answer_digest(digest_ask(DigestAsk(), ask), backends))
            else:
                asyncio.run(answer(build_question(Question(), ask), backends))
        except Exception as exc:  # the case suite judges the answer; here only the requests matter
            error = f"{type(exc).__name__}: {exc}"
        requests = list(sandbox.requests)
    return CaseRun(f"{case_file.parent.name}/{case_file.stem}", requests, error)


@pytest.fixture(scope="module")
def case_runs() -> list[CaseRun]:
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return list(pool.map(run_case, CASE_FILES))


@dataclass
class Summary:
    text: str
    operations: Counter[str]
    violations: list[str]


def summarize(label: str, runs: list[CaseRun], runai: ApiSpec, osmo: ApiSpec) -> Summary:
    """Every API request of ``runs`` checked: the figures (requests, operations, violations) as text."""
    checked = 0
    operations: Counter[str] = Counter()
    violations: list[str] = []
    for run in runs:
        for r in run.requests:
            if not is_api_request(r):
                continue
            checked += 1
            result = check_request(r, runai, osmo)
            operations[result.operation.key if result.operation else "?"] += 1
            violations += [f"{run.name}: {v}  [{r.method} {r.path}?{r.query}]" for v in result.violations]
    lines = [
        f"{label}: {len(runs)} runs, requests checked {checked}, distinct operations {len(operations)}, "
        f"violations: {len(violations)}"
    ]
    lines += [f"  {n:5d}  {key}" for key, n in sorted(operations.items())]
    return Summary("\n".join(lines), operations, violations)


@needs_specs
@pytest.mark.skipif(not CASE_FILES, reason="../shared/cases is absent")
def test_every_request_of_every_case_fits_the_spec(
    case_runs: list[CaseRun], runai_spec: ApiSpec, osmo_spec: ApiSpec
) -> None:
    summary = summarize("spec contract (cases)", case_runs, runai_spec, osmo_spec)
    print("\n" + summary.text)
    assert len(case_runs) == len(CASE_FILES)
    assert sum(summary.operations.values()) > len(CASE_FILES)
    assert "?" not in summary.operations
    assert summary.violations == [], "\n".join(summary.violations[:40])


async def _no_wait(_: float) -> None:
    return None


def _runai_sweep(version: str | None) -> list[SeenRequest]:
    """Every Run:ai client method once (every spec kind, the v2 spec, deleted pods, projects) on a
    control plane of ``version``'s login."""
    from datetime import timedelta

    from diagnosis.config import RunaiConfig
    from diagnosis.http import RetryPolicy
    from diagnosis.runai.client import RunaiClient
    from tests import builders as b

    kinds = ["Training", "Workspace", "Distributed", "Inference", "DistributedInference"]
    entries = [b.entry(b.workload(f"w-{k.lower()}", type=k)) for k in kinds]
    entries.append(b.entry(b.workload("w-v2", type="runai-job", sourceApi="WorkloadsV2")))
    snap = b.snapshot(*entries)
    if version is not None:
        snap["runai"]["control_plane_version"] = version

    async def calls(url: str) -> None:
        config = RunaiConfig(url, "svc-doctor", "s3cret", console_url=url)
        async with RunaiClient(config, retry=RetryPolicy(sleep=_no_wait)) as client:
            clusters = await client.list_clusters()
            await client.list_projects("nlp", clusters[0].uuid)
            since = b.NOW - timedelta(hours=24)
            filters = [f"clusterId=={b.CLUSTER}", "projectName==nlp", f"phaseUpdatedAt>={since:%Y-%m-%dT%H:%M:%SZ}"]
            listed = await client.list_workloads([*filters, "phase==Failed"])
            await client.list_workloads(["name==w-training", "projectName==nlp"], deleted=True)
            for wl in listed:
                await client.get_workload(wl.id)
                await client.get_pods(wl.id, or_deleted=True)
                await client.get_pods(wl.id, deleted=True)
                await client.get_history(wl.id)
                await client.get_events(wl.id, since=since)
                types = ["CPU_MEMORY_USAGE_BYTES", "CPU_MEMORY_LIMIT_BYTES", "GPU_MEMORY_USAGE_BYTES"]
                await client.get_metrics(wl.id, types, since, b.NOW)
                await client.get_spec_for(wl)
                await client.list_node_pods("dgx-01", since, b.NOW, exclude=wl.id)  # the neighbours (issue 19 §2)

    with Sandbox(snap) as sandbox:
        asyncio.run(calls(sandbox.url))
        return list(sandbox.requests)


def _osmo_sweep(case_file: Path) -> list[SeenRequest]:
    """Every OSMO client method once (the workflow list with statuses, pools and users; per-task logs, events
    and entries; the pool and resource lookups with and without pools) against a case's snapshot."""
    from diagnosis.config import OsmoConfig
    from diagnosis.osmo.client import OsmoClient

    snap = json.loads(case_file.read_text())

    async def calls(url: str) -> None:
        async with OsmoClient(OsmoConfig(url, "sandbox-access-token"), stream_deadline_s=1.0) as client:
            listing = await client.list_workflows(statuses=["FAILED", "PENDING"], limit=5)
            await client.list_workflows(pools=["h100"], users=["alice@example.com"], offset=5)
            await client.list_workflows(all_users=False)
            for entry in listing[:2] if isinstance(listing, list) else listing.workflows[:2]:
                wf = await client.get_workflow(entry.name)
                task = wf.tasks[0].name if wf.tasks else "t"
                await client.logs(wf.name)
                await client.logs(wf.name, task_name=task, last_n_lines=200)
                await client.events(wf.name, task_name=task)
                await client.spec(wf.name)
                await client.task_requests(wf.name)
                try:
                    await client.task_request(wf.name, task)
                except Exception:  # an unknown task answers 400; only the request matters here
                    pass
            await client.pool_quota(["h100"])
            await client.pool_quota()
            await client.resources(["h100"])
            await client.resources()

    with Sandbox(snap) as sandbox:
        asyncio.run(calls(sandbox.url))
        return list(sandbox.requests)


@needs_specs
def test_client_calls_no_case_reaches_fit_the_spec(runai_spec: ApiSpec, osmo_spec: ApiSpec) -> None:
    osmo_case = next((f for f in CASE_FILES if f.parent.name == "osmo" and "failed" in f.stem), None)
    runs = [CaseRun(f"client sweep, Run:ai {v or '2.24'}", _runai_sweep(v), None) for v in (None, "2.22", "2.19")]
    if osmo_case is not None:
        runs.append(CaseRun("client sweep, OSMO", _osmo_sweep(osmo_case), None))
    summary = summarize("spec contract (client sweep)", runs, runai_spec, osmo_spec)
    print("\n" + summary.text)
    seen = set(summary.operations)
    for key in (
        "GET /api/v1/org-unit/projects",
        "GET /api/v1/workloads/distributed-inferences/{workloadId}",
        "GET /api/v2/workloads/{WorkloadV2Id}",
        "POST /api/v1/token",
    ):
        assert key in seen, (key, seen)
    if osmo_case is not None:
        assert "GET /api/workflow/{name}/task/{task_name}" in seen
    assert summary.violations == [], "\n".join(summary.violations[:40])


WID = "0b5e4c1a-9f3d-4e2b-8a77-3c2d1e0f9a88"
METRICS = f"/api/v1/workloads/{WID}/metrics"
WINDOW = "start=2026-11-28T10%3A00%3A00Z&end=2026-11-28T12%3A00%3A00Z"
JSON, FORM = "application/json", "application/x-www-form-urlencoded"
CC = {"grantType": "client_credentials", "clientSecret": "<masked>"}


@needs_specs
@pytest.mark.parametrize(
    ("method", "path", "query", "content_type", "body", "expected"),
    [
        # what the product sends: no violation
        (
            "GET",
            "/api/v1/workloads",
            "filterBy=name%3D%3Dx%2CphaseUpdatedAt%3E%3D2026-11-27T12%3A00%3A00Z"
            "&sortBy=phaseUpdatedAt&sortOrder=desc&deleted=true&offset=0&limit=500",
            None,
            None,
            None,
        ),
        (
            "GET",
            METRICS,
            f"metricType=CPU_MEMORY_USAGE_BYTES%2CCPU_MEMORY_LIMIT_BYTES&{WINDOW}&numberOfSamples=500",
            None,
            None,
            None,
        ),
        ("POST", "/api/v1/token", "", JSON, {**CC, "clientID": "svc"}, None),
        ("POST", "/api/v1/token", "", JSON, {"grantType": "app_token", "appID": "a", "appSecret": "<masked>"}, None),
        (
            "POST",
            "/api/v2/token",
            "",
            FORM,
            {"grant_type": "client_credentials", "client_id": "svc", "client_secret": "<masked>"},
            None,
        ),
        (
            "GET",
            "/api/workflow",
            "limit=20&order=DESC&statuses=FAILED&statuses=PENDING&all_users=true",
            None,
            None,
            None,
        ),
        ("GET", "/api/workflow/wf%2F1/task/a%2Fb", "", None, None, None),
        # paths and methods
        ("GET", f"/api/v1/workloads/{WID}/logs", "", None, None, "no path template matches"),
        ("DELETE", f"/api/v1/workloads/{WID}", "", None, None, "DELETE is not an operation"),
        ("GET", "/api/v1/workloads/train-7/pods", "", None, None, "is not a uuid"),
        # parameter names, enums, types, bounds
        ("GET", f"/api/v1/workloads/{WID}/events", "verbose=true", None, None, "'verbose' is not in the spec"),
        ("GET", "/api/v1/workloads", "sortBy=updatedAt", None, None, "is not one of"),
        ("GET", "/api/v1/workloads", "sortOrder=DESC", None, None, "is not one of"),
        ("GET", "/api/v1/workloads", "deleted=1", None, None, "is not a boolean"),
        ("GET", "/api/v1/workloads", "limit=1000", None, None, "above the maximum 500"),
        ("GET", "/api/v1/workloads", "offset=next", None, None, "is not an integer"),
        ("GET", METRICS, f"metricType=MEMORY&{WINDOW}", None, None, "is not one of"),
        (
            "GET",
            METRICS,
            "metricType=GPU_UTILIZATION&end=2026-11-28T12%3A00%3A00Z",
            None,
            None,
            "required query parameter start is missing",
        ),
        ("GET", METRICS, f"metricType=GPU_UTILIZATION&metricType=POD_COUNT&{WINDOW}", None, None, "explode: false"),
        (
            "GET",
            METRICS,
            "metricType=GPU_UTILIZATION&start=2026-11-28T10%3A00%3A00&end=2026-11-28T12%3A00%3A00Z",
            None,
            None,
            "not an RFC 3339 date-time",
        ),
        ("GET", METRICS, f"metricType=GPU_UTILIZATION&{WINDOW}&numberOfSamples=5000", None, None, "above the maximum"),
        # filterBy: fields, operators, dates
        ("GET", "/api/v1/workloads", "filterBy=podName%3D%3Dx", None, None, "is not a filterable field"),
        ("GET", "/api/v1/workloads", "filterBy=name~%3Dx", None, None, "is not field-operator-value"),
        ("GET", "/api/v1/workloads", "filterBy=phaseUpdatedAt%3D%402026", None, None, "dates take only"),
        ("GET", "/api/v1/workloads", "filterBy=createdAt%3E%3Dyesterday", None, None, "is not an ISO 8601 timestamp"),
        ("GET", "/api/v1/workloads", "filterBy=name%3D%3Da&filterBy=phase%3D%3DFailed", None, None, "explode: false"),
        ("GET", "/api/v1/org-unit/projects", "filterBy=projectName%3D%3Dnlp", None, None, "not a filterable field"),
        # token bodies
        ("POST", "/api/v1/token", "", JSON, {**CC, "clientId": "svc"}, "field 'clientId' is not in the schema"),
        ("POST", "/api/v1/token", "", JSON, {"grantType": "client_credentials", "clientID": "svc"}, "example"),
        ("POST", "/api/v1/token", "", FORM, {**CC, "clientID": "svc"}, "content type"),
        ("POST", "/api/v2/token", "", JSON, {"grant_type": "client_credentials"}, "content type"),
        ("POST", "/api/v2/token", "", FORM, {"grant_type": "client_credential"}, "is not one of"),
        ("POST", "/api/v2/token", "", FORM, {"client_id": "svc"}, "required field 'grant_type' is missing"),
        # OSMO
        ("GET", "/api/workflow", "order=desc", None, None, "is not one of"),
        ("GET", "/api/workflow", "statuses=BROKEN", None, None, "is not one of"),
        ("GET", "/api/workflow", "all_pools=True", None, None, "is not a boolean"),
        ("GET", "/api/workflow/wf-1/logs", "last_n_lines=ten", None, None, "is not an integer"),
        ("GET", "/api/task", "workflow=wf-1", None, None, "'workflow' is not in the spec"),
        ("POST", "/api/auth/jwt/access_token", "access_token=x", None, None, "is not in the spec"),
        ("POST", "/api/auth/jwt/access_token", "", JSON, {"access_token": "<masked>"}, "not in the schema"),
    ],
)
def test_the_checker_flags_what_the_spec_does_not_allow(
    runai_spec: ApiSpec,
    osmo_spec: ApiSpec,
    method: str,
    path: str,
    query: str,
    content_type: str | None,
    body: dict[str, str] | None,
    expected: str | None,
) -> None:
    """The checker is known to fail: each departure is flagged (and what the product sends is not)."""
    r = SeenRequest(method, path, query, raw_path=path, content_type=content_type, body=body)
    violations = check_request(r, runai_spec, osmo_spec).violations
    if expected is None:
        assert violations == []
    else:
        assert any(expected in v for v in violations), violations


# -- 2. response fields -----------------------------------------------------------------------------

V1 = "GET /api/v1/workloads"
ONE = "GET /api/v1/workloads/{workloadId}"
#: Each response model -> the spec schemas it reads, with the operation whose 200 answer holds each (the
#: schema must be reachable from that answer). A field is in the spec when one of its schemas has it.
MODEL_SCHEMAS: dict[type[BaseModel], tuple[str, list[tuple[str, str]]]] = {
    rm.Workload: ("runai", [(V1, "Workload"), (ONE, "WorkloadDetailed")]),
    rm.Pod: ("runai", [(ONE + "/pods", "Pod1"), (V1 + "/pods", "Pod1")]),
    rm.HistoryRecord: ("runai", [(ONE + "/history", "HistoryRecord1")]),
    rm.Event: ("runai", [(ONE + "/events", "Event2")]),
    rm.Metrics: ("runai", [(ONE + "/metrics", "MetricsCompositeResponse")]),
    rm.Cluster: ("runai", [("GET /api/v1/clusters", "DisplayedCluster")]),
    rm.Project: ("runai", [("GET /api/v1/org-unit/projects", "Project")]),
    rm.WorkloadSpec: (
        "runai",
        [
            ("GET /api/v1/workloads/trainings/{workloadId}", "Training1"),
            ("GET /api/v1/workloads/workspaces/{workloadId}", "Workspace1"),
            ("GET /api/v1/workloads/distributed/{workloadId}", "DistributedWorkload"),
            ("GET /api/v1/workloads/inferences/{workloadId}", "Inference1"),
            ("GET /api/v1/workloads/distributed-inferences/{workloadId}", "DistributedInference"),
        ],
    ),
    om.Workflow: ("osmo", [("GET /api/workflow/{name}", "WorkflowQueryResponse")]),
    om.WorkflowList: ("osmo", [("GET /api/workflow", "src__service__core__workflow__objects__ListResponse")]),
    om.PoolQuota: ("osmo", [("GET /api/pool_quota", "PoolResponse")]),
    om.NodeResources: ("osmo", [("GET /api/resources", "ResourcesEntry")]),
    om.TaskRequest: (
        "osmo",
        [("GET /api/task", "ListTaskEntry"), ("GET /api/workflow/{name}/task/{task_name}", "TaskEntry")],
    ),
}
_COMPUTE = ("cpuMemoryLimit", "cpuMemoryRequest")  # diagnosis/runai/memory.py: WorkloadSpec.compute_value(key)
#: Keys the clients and models read from raw dicts (not pydantic fields): (spec, operation, dotted path in its
#: 200 answer; ``[]`` steps into array items).
RAW_READS: list[tuple[str, str, str]] = [
    # diagnosis/runai/client.py: the paged envelopes (RunaiClient._paged, get_events) and the token replies
    *[("runai", V1, k) for k in ("workloads", "next")],
    *[("runai", ONE + "/pods", k) for k in ("pods", "next")],
    *[("runai", V1 + "/pods", k) for k in ("pods", "next")],  # RunaiClient.list_node_pods
    *[("runai", ONE + "/history", k) for k in ("records", "next")],
    *[("runai", ONE + "/events", k) for k in ("events", "next")],
    *[("runai", "GET /api/v1/org-unit/projects", k) for k in ("projects", "next")],
    ("runai", "POST /api/v2/token", "access_token"),
    ("runai", "POST /api/v2/token", "expires_in"),
    ("runai", "POST /api/v1/token", "accessToken"),
    ("runai", "POST /api/v1/token", "expiresIn"),
    # diagnosis/runai/models.py: WorkloadSpec.from_v2 and WorkloadSpec.compute_sections
    ("runai", "GET /api/v2/workloads/{WorkloadV2Id}", "workload.metadata.name"),
    ("runai", "GET /api/v2/workloads/{WorkloadV2Id}", "workload.desiredPhase"),
    *[
        ("runai", f"GET /api/v1/workloads/{kind}/{{workloadId}}", f"spec.compute.{key}")
        for kind in ("trainings", "workspaces", "distributed", "inferences")
        for key in _COMPUTE
    ],
    *[("runai", "GET /api/v1/workloads/distributed/{workloadId}", f"masterSpec.compute.{key}") for key in _COMPUTE],
    *[
        ("runai", "GET /api/v1/workloads/distributed-inferences/{workloadId}", f"spec.{role}.compute.{key}")
        for role in ("leader", "worker")
        for key in _COMPUTE
    ],
    # diagnosis/osmo/client.py: the token exchange, the item lists, the per-pool shape told apart
    *[("osmo", "POST /api/auth/jwt/access_token", k) for k in ("token", "expires_at", "error")],
    ("osmo", "GET /api/task", "tasks"),
    ("osmo", "GET /api/resources", "resources"),
    ("osmo", "GET /api/resources", "pools"),
]
#: What the product reads that the spec lacks, each with its reason. Keep it short and honest.
NOT_IN_SPEC: dict[str, str] = {
    # RunaiClient.list_clusters: the 2.24 spec answers a bare array of DisplayedCluster; an object with a
    # ``clusters`` list is tolerated (read only when the answer is an object, never required).
    "runai GET /api/v1/clusters: clusters": "tolerated envelope, not in the spec (bare array there)",
    # TaskRequest.task_name is read as ``task_name``, else ``name``: ListTaskEntry and TaskEntry have only
    # ``task_name``. The fallback only widens what is accepted; a spec-valid answer never needs it.
    "osmo TaskRequest: task_name (as name)": "fallback alias, not in ListTaskEntry/TaskEntry",
}


def _reachable(spec: ApiSpec, schema: Any, name: str, seen: set[str] | None = None) -> bool:
    """Whether the component schema ``name`` is ``$ref``-reachable from ``schema``."""
    seen = set() if seen is None else seen
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = ref.rsplit("/", 1)[-1]
            if target == name:
                return True
            if target in seen:
                return False
            seen.add(target)
            if _reachable(spec, spec.schemas[target], name, seen):
                return True
        return any(_reachable(spec, v, name, seen) for k, v in schema.items() if k != "$ref")
    if isinstance(schema, list):
        return any(_reachable(spec, v, name, seen) for v in schema)
    return False


def _operation(spec: ApiSpec, key: str) -> Any:
    op = next((o for o in spec.operations if o.key == key), None)
    assert op is not None, f"{spec.name}: no operation {key}"
    return op


def _answer(spec: ApiSpec, key: str) -> Any:
    content = _operation(spec, key).op["responses"]["200"]["content"]
    return (content.get("application/json") or next(iter(content.values())))["schema"]


def _walk(
    spec: ApiSpec, model: type[BaseModel], schemas: list[dict[str, Any]], prefix: str, seen: Counter[str]
) -> Iterator[str]:
    """``"<Model>: <path> (as <name>)"`` for every wire name a model reads that none of ``schemas`` has
    (``seen`` counts the names checked)."""
    for name, _, f in model_fields(model):
        found: list[Any] = []
        for wire in f.names:
            seen[spec.name] += 1
            here = [props[wire] for s in schemas if wire in (props := spec.properties(s) or {})]
            if not here:
                yield f"{model.__name__}: {prefix}{name}" + (f" (as {wire})" if wire != name else "")
            found += here
        if f.nested is not None and found:
            kids = [spec.item_schema(s) if f.is_list else spec.flatten(s) for s in found]
            yield from _walk(spec, f.nested, [k for k in kids if k], f"{prefix}{f.names[0]}.", seen)


@needs_specs
def test_every_response_field_the_product_reads_is_in_the_spec(runai_spec: ApiSpec, osmo_spec: ApiSpec) -> None:
    specs = {"runai": runai_spec, "osmo": osmo_spec}
    missing: list[str] = []
    seen: Counter[str] = Counter()
    for model, (which, sources) in MODEL_SCHEMAS.items():
        spec = specs[which]
        for key, schema_name in sources:
            assert _reachable(spec, _answer(spec, key), schema_name), f"{schema_name} is not in the answer of {key}"
        schemas = [spec.flatten({"$ref": f"#/components/schemas/{name}"}) for _, name in sources]
        missing += [f"{which} {m}" for m in _walk(spec, model, schemas, "", seen)]
    for which, key, dotted in RAW_READS:
        spec = specs[which]
        if spec.at(_answer(spec, key), dotted) is None:
            missing.append(f"{which} {key}: {dotted}")
    # The tolerated ``clusters`` envelope is read, and is not in the spec: it must stay on the list.
    if runai_spec.at(_answer(runai_spec, "GET /api/v1/clusters"), "clusters") is None:
        missing.append("runai GET /api/v1/clusters: clusters")
    print(
        f"\nresponse fields: {len(MODEL_SCHEMAS)} models, {sum(seen.values())} field names checked "
        f"(nested models walked; {dict(seen)}), {len(RAW_READS)} raw keys; "
        f"not in the spec: {len(missing)} (allow-listed: {len(NOT_IN_SPEC)})"
    )
    assert sorted(missing) == sorted(NOT_IN_SPEC), "\n".join(sorted(set(missing) ^ set(NOT_IN_SPEC)))


@needs_specs
def test_the_field_walk_flags_a_field_the_spec_lacks(runai_spec: ApiSpec) -> None:
    """A model reading a field no schema has (top level or nested) is flagged, with its path."""

    class Reason(rm.ApiModel):
        reason: str | None = None
        why_not: str | None = None

    class Odd(rm.ApiModel):
        phase: str = ""
        phase_typo: str | None = None
        conditions: list[Reason] | None = None

    schemas = [runai_spec.flatten({"$ref": "#/components/schemas/Workload"})]
    assert list(_walk(runai_spec, Odd, schemas, "", Counter())) == [
        "Odd: phase_typo (as phaseTypo)",
        "Reason: conditions.why_not (as whyNot)",
    ]


# -- 3. the sandbox and the spec agree ----------------------------------------------------------------

RUNAI_AGREEMENT: list[tuple[str, str]] = [
    # (path with {wid}, query): the sandbox refuses (400) exactly what the spec does not allow
    ("/api/v1/workloads", "filterBy=name%3D%3Dtrain-7%2CprojectName%3D%3Dnlp&sortBy=phaseUpdatedAt&sortOrder=desc"),
    ("/api/v1/workloads", "filterBy=phaseUpdatedAt%3E%3D2026-11-27T12%3A00%3A00Z%2Cphase%3D%3DFailed"),
    ("/api/v1/workloads", "filterBy=name%3D%5Etrain%2Cname%3D%24-7%2Cname%3D%40ain%2Cname!%40x%2Cname!%3Dx"),
    ("/api/v1/workloads", "deleted=true&offset=0&limit=500"),
    ("/api/v1/workloads", "deleted=false"),
    ("/api/v1/workloads", "filterBy=podName%3D%3Dx"),
    ("/api/v1/workloads", "filterBy=name~x"),
    ("/api/v1/workloads", "filterBy=phaseUpdatedAt%3D%402026"),
    ("/api/v1/workloads", "filterBy=createdAt%3E%3Dyesterday"),
    ("/api/v1/workloads", "filterBy=name%3D%3Da&filterBy=phase%3D%3DFailed"),
    ("/api/v1/workloads", "sortBy=updatedAt"),
    ("/api/v1/workloads", "sortOrder=DESC"),
    ("/api/v1/workloads", "deleted=1"),
    ("/api/v1/workloads", "limit=1000"),
    ("/api/v1/workloads", "limit=0"),
    ("/api/v1/workloads", "offset=next"),
    ("/api/v1/workloads/{wid}/pods", "deleted=true&offset=0&limit=500"),
    ("/api/v1/workloads/{wid}/pods", "deleted=yes"),
    ("/api/v1/workloads/{wid}/pods", "limit=501"),
    # every workload's pods (the neighbours on a node, issue 19 §2)
    (
        "/api/v1/workloads/pods",
        "filterBy=nodeName%3D%3Ddgx-01%2CworkloadId%21%3D{wid}%2CcompletedAt%3E%3D2026-11-28T10%3A44%3A00Z"
        "%2CcompletedAt%3C%3D2026-11-28T11%3A14%3A00Z&verbosity=full&limit=100",
    ),
    ("/api/v1/workloads/pods", "filterBy=currentNodepool%3D%5Edefault&sortBy=completedAt&sortOrder=desc"),
    ("/api/v1/workloads/pods", "filterBy=name%3D%3Dtrain-7-0-0"),
    ("/api/v1/workloads/pods", "filterBy=completedAt%3E%3Dyesterday"),
    ("/api/v1/workloads/pods", "filterBy=nodeName%3D%3Da&filterBy=nodeName%3D%3Db"),
    ("/api/v1/workloads/pods", "verbosity=loud"),
    ("/api/v1/workloads/pods", "sortBy=name"),
    ("/api/v1/workloads/pods", "limit=501"),
    ("/api/v1/workloads/{wid}/events", "offset=0&limit=500&sortOrder=desc"),
    ("/api/v1/workloads/{wid}/events", "sortOrder=newest"),
    ("/api/v1/workloads/{wid}/history", "offset=0&limit=500"),
    ("/api/v1/workloads/{wid}/history", "limit=many"),
    ("/api/v1/workloads/{wid}/metrics", f"metricType=CPU_MEMORY_USAGE_BYTES%2CGPU_UTILIZATION&{WINDOW}"),
    ("/api/v1/workloads/{wid}/metrics", f"metricType=CPU_MEMORY_USAGE_BYTES&{WINDOW}&numberOfSamples=1000"),
    ("/api/v1/workloads/{wid}/metrics", f"metricType=MEMORY&{WINDOW}"),
    ("/api/v1/workloads/{wid}/metrics", f"metricType=POD_COUNT&metricType=GPU_UTILIZATION&{WINDOW}"),
    ("/api/v1/workloads/{wid}/metrics", f"metricType=POD_COUNT&{WINDOW}&numberOfSamples=5000"),
    (
        "/api/v1/workloads/{wid}/metrics",
        "metricType=POD_COUNT&start=2026-11-28T10%3A00%3A00&end=2026-11-28T12%3A00%3A00",
    ),
    ("/api/v1/workloads/{wid}/metrics", "metricType=POD_COUNT&end=2026-11-28T12%3A00%3A00Z"),
    ("/api/v1/org-unit/projects", "filterBy=name%3D%3Dnlp%2CclusterId%3D%3D71f69d83-ba66-4822-adf5-55ce55efd210"),
    ("/api/v1/org-unit/projects", "filterBy=projectName%3D%3Dnlp"),
    ("/api/v1/org-unit/projects", "sortBy=namespace"),
]
OSMO_AGREEMENT: list[tuple[str, str]] = [
    ("/api/workflow", "limit=20&offset=0&order=DESC&all_pools=true&all_users=true&statuses=FAILED"),
    ("/api/workflow", "pools=h100&users=alice%40example.com"),
    ("/api/workflow", "all_pools=true&all_users=true&order=desc"),
    ("/api/workflow", "all_pools=true&all_users=true&statuses=BROKEN"),
    ("/api/workflow", "all_pools=maybe"),
    ("/api/workflow", "all_pools=true&limit=ten"),
    ("/api/task", "workflow_id={wf}&all_users=true&all_pools=true&limit=1000"),
    ("/api/task", "workflow_id={wf}&all_users=true&all_pools=true&order=newest"),
    ("/api/task", "workflow_id={wf}&all_users=true&all_pools=true&offset=x"),
    ("/api/pool_quota", "pools=h100&all_pools=false"),
    ("/api/pool_quota", "all_pools=sometimes"),
    ("/api/resources", "pools=h100&all_pools=false"),
    ("/api/resources", "all_pools=2"),
    ("/api/workflow/{wf}/logs", "last_n_lines=9999&task_name=t"),
    ("/api/workflow/{wf}/logs", "last_n_lines=ten"),
]


def _osmo_case() -> Path | None:
    return next((f for f in CASE_FILES if f.parent.name == "osmo" and "failed" in f.stem), None)


@needs_specs
def test_the_sandbox_refuses_exactly_what_the_spec_does_not_allow(runai_spec: ApiSpec, osmo_spec: ApiSpec) -> None:
    """Where the spec and the sandbox disagreed the spec won: a request the spec allows is answered, one it
    does not allow is refused (400 or FastAPI's 422), for each row of the tables above."""
    import httpx

    from tests import builders as b

    disagreements: list[str] = []
    wl = b.workload()
    with Sandbox(b.snapshot(b.entry(wl))) as sandbox, httpx.Client(base_url=sandbox.url, timeout=10) as http:
        token = http.post("/api/v2/token", data={"grant_type": "client_credentials", "client_id": "a",
                                                 "client_secret": "b"}).json()["access_token"]  # fmt: skip
        for path, query in RUNAI_AGREEMENT:
            path = path.format(wid=wl["id"])
            status = http.get(f"{path}?{query}", headers={"Authorization": f"Bearer {token}"}).status_code
            spec_ok = not runai_spec.check("GET", path, query).violations
            if spec_ok != (status < 300) or (not spec_ok and status != 400):
                disagreements.append(f"GET {path}?{query}: sandbox {status}, spec {'allows' if spec_ok else 'refuses'}")
    osmo_case = _osmo_case()
    if osmo_case is not None:
        snap = json.loads(osmo_case.read_text())
        wf = snap["osmo"]["workflows"][0]["query"]["name"]
        with Sandbox(snap) as sandbox, httpx.Client(base_url=sandbox.url, timeout=10) as http:
            jwt = http.post("/api/auth/jwt/access_token", json={"token": "t"}).json()["token"]
            for path, query in OSMO_AGREEMENT:
                path, query = path.format(wf=wf), query.format(wf=wf)
                with http.stream("GET", f"{path}?{query}", headers={"Authorization": f"Bearer {jwt}"}) as r:
                    status = r.status_code
                spec_ok = not osmo_spec.check("GET", path, query).violations
                if spec_ok != (status < 300) or (not spec_ok and status != 422):
                    disagreements.append(f"GET {path}?{query}: sandbox {status}, spec says {spec_ok}")
    assert disagreements == [], "\n".join(disagreements)


@needs_specs
def test_the_sandbox_filter_and_metric_names_are_the_specs(runai_spec: ApiSpec) -> None:
    """The field lists the sandbox holds ``filterBy``/``sortBy`` to are the 2.24 spec's (no drift)."""
    import re

    from sandbox import runai as sandbox_runai

    for key, fields, dates in (
        ("GET /api/v1/workloads", sandbox_runai.WORKLOAD_FIELDS, sandbox_runai.WORKLOAD_DATES),
        ("GET /api/v1/org-unit/projects", sandbox_runai.PROJECT_FIELDS, sandbox_runai.PROJECT_DATES),
        ("GET /api/v1/workloads/pods", sandbox_runai.POD_FIELDS, sandbox_runai.POD_DATES),
    ):
        op = _operation(runai_spec, key)
        pattern = (runai_spec.item_schema(op.params[("query", "filterBy")]["schema"]) or {})["pattern"]
        match = re.match(r"^\^\(([^)]*)\)", pattern)
        assert match is not None
        assert set(match.group(1).split("|")) == set(fields), key
        assert set(runai_spec.flatten(op.params[("query", "sortBy")]["schema"])["enum"]) == set(fields), key
        props = runai_spec.listed_item_properties(op)
        spec_dates = {f for f in fields if runai_spec.flatten(props.get(f) or {}).get("format") == "date-time"}
        assert spec_dates == set(dates), key
    metric = runai_spec.flatten({"$ref": "#/components/schemas/WorkloadMetricType"})
    assert set(metric["enum"]) == sandbox_runai.METRIC_TYPES


@needs_specs
def test_the_osmo_sandbox_keeps_the_spec_defaults() -> None:
    """The spec's (and osmo-api.md §2's) defaults, which the sandbox used to replace with friendlier ones:
    ``order`` ASC; only the caller's workflows without ``users``/``all_users``; "No pool selected!" without
    ``pools``/``all_pools``; ``/api/task`` pages by 20; ``/api/pool_quota`` ``all_pools`` defaults to true; the
    POST token exchange reads its body only."""
    import httpx

    osmo_case = _osmo_case()
    assert osmo_case is not None
    snap = json.loads(osmo_case.read_text())
    first = snap["osmo"]["workflows"][0]
    many = []
    for i in range(3):
        entry = json.loads(json.dumps(first))
        entry["query"]["name"] = f"wf-{i}"
        entry["query"]["submit_time"] = f"2026-11-2{i}T10:00:00"
        entry["tasks"] = [{"task_name": f"t{n}", "gpu": 1} for n in range(25)] if i == 0 else []
        many.append(entry)
    snap["osmo"]["workflows"] = many
    pools = [p["name"] for ns in snap["osmo"]["pool_quota"]["node_sets"] for p in ns["pools"]]
    with Sandbox(snap) as sandbox, httpx.Client(base_url=sandbox.url, timeout=10) as http:
        assert http.post("/api/auth/jwt/access_token?access_token=t").status_code == 422
        jwt = http.post("/api/auth/jwt/access_token", json={"token": "t"}).json()["token"]
        auth = {"Authorization": f"Bearer {jwt}"}

        def names(query: str) -> list[str]:
            return [w["name"] for w in http.get(f"/api/workflow?{query}", headers=auth).json()["workflows"]]

        assert names("all_pools=true&all_users=true") == ["wf-0", "wf-1", "wf-2"]  # ASC by default
        assert names("all_pools=true&all_users=true&order=DESC") == ["wf-2", "wf-1", "wf-0"]
        assert names("all_pools=true") == []  # the caller's own: the sandbox's caller submitted nothing
        no_pool = http.get("/api/workflow?all_users=true", headers=auth)
        assert (no_pool.status_code, no_pool.json()["message"]) == (400, "No pool selected!")
        tasks = http.get("/api/task?workflow_id=wf-0&all_users=true&all_pools=true", headers=auth).json()["tasks"]
        assert len(tasks) == 20
        url = "/api/task?workflow_id=wf-0&all_users=true&all_pools=true&limit=1000"
        assert len(http.get(url, headers=auth).json()["tasks"]) == 25
        quota = http.get(f"/api/pool_quota?pools={pools[0]}", headers=auth).json()
        assert len([p for ns in quota["node_sets"] for p in ns["pools"]]) == len(pools)  # all_pools=true
        quota = http.get(f"/api/pool_quota?pools={pools[0]}&all_pools=false", headers=auth).json()
        assert [p["name"] for ns in quota["node_sets"] for p in ns["pools"]] == [pools[0]]


async def test_an_osmo_token_that_cannot_be_a_bearer_is_an_auth_error() -> None:
    """``JwtTokenResponse.token`` is any string (or null) in the spec: one that cannot go into a header is
    refused as no token (AuthError, reported as such), never sent (a transport error "after retries")."""
    import httpx

    from diagnosis.config import OsmoConfig
    from diagnosis.osmo.client import AuthError, OsmoClient

    for token in ("名前", "a b", "x\ny", "", None):
        transport = httpx.MockTransport(lambda r, t=token: httpx.Response(200, json={"token": t, "expires_at": None}))
        async with OsmoClient(OsmoConfig("https://osmo.test", "access"), inner=transport) as client:
            with pytest.raises(AuthError, match="without a token"):
                await client.list_workflows()
