"""Spec-valid Run:ai answers through the real Run:ai client and the CLI (issue 9 §2, Run:ai half).

The generator of :mod:`bench.schemagen` (shared with ``bench/osmo_fuzz.py``) builds bodies from the Run:ai
2.24 OpenAPI schemas (``../shared/reference/specs/runai-2.24-openapi.json``): ``WorkloadDetailed`` (the
workload), the ``GET /api/v1/workloads`` envelope, pods (``Pod1``), history (``HistoryRecord1``), events
(``Event2``, which the spec makes ``nullable``: ``null`` items are spec-valid and come up often), metrics
(``MetricsCompositeResponse``), clusters (``DisplayedCluster``), projects, the kind-specific spec
(``Training1`` … ``DistributedInference``, or ``WorkloadV2GetResponse``) and both token replies
(``OAuth2TokenResponse``, ``TokenResponse``). Every body served as spec-valid is checked against its schema
first (:func:`bench.schemagen.violations`), the round's own edits included.

Each round builds one small world, serves it from a loopback server and runs
``workload-doctor diagnose … --format json`` in-process (the real CLI: settings from ``RUNAI_BASE_URL``,
``RUNAI_CLIENT_ID``/``SECRET``, the real :class:`~diagnosis.runai.client.RunaiClient` over HTTP, the
renderers), asking by workload id, by name and project, or by cluster name. Ids, names, the cluster and pod
names are tied together in most rounds (still spec-valid) so the diagnosis reaches every endpoint.

Spec-valid rounds must exit 0 with no gap that blames the answer's shape (a model rejecting a spec-valid
body: "unreadable", a Python error name) and no "unexpected" gap; a login whose spec-valid reply carries no
usable token may end with exit 2 (one line naming the token), nothing else may. Odd rounds (``null`` items
where the spec has none, a proxy's HTML page with 200, a field of the wrong type, a list where an object is
due, a 4xx/5xx) must exit 0 with a gap naming the endpoint; the workload lookup and the login may exit 2
with one line. Nothing may exit 1 or crash.

Usage: python bench/runai_fuzz.py [--bodies 400] [--odd 60] [--seed 24]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))
from bench.schemagen import LoopbackServer, SchemaGen, violations  # noqa: E402

SPEC_PATH = ROOT.parent / "shared" / "reference" / "specs" / "runai-2.24-openapi.json"

_QUANTITIES = ("129e6", "1e3", "+1Gi", ".5Gi", "32Gi", "16G", "8", "0", "1.5", "500m", "2Ti", "1e-3", ".", "1.2.3")
_MESSAGES = (
    "Pod runai-nlp/{p} failed: container {c} terminated with reason OOMKilled (exit code 137)",
    'Back-off pulling image "nvcr.io/x/y:1"',
    "0/12 nodes are available: 12 Insufficient nvidia.com/gpu.",
    "Error: container {c} exited with code 1",
    "Preempted by a higher priority workload",
    "The node was low on resource: memory. Container {c} was using 40Gi, request is 8Gi.",
    "Started container {c}",
    "Liveness probe failed: HTTP probe failed with statuscode: 500",
    'Traceback (most recent call last):\n  File "train.py", line 3\nRuntimeError: CUDA out of memory.',
    'MountVolume.SetUp failed for volume "data" : secret "creds" not found',
)
_REASONS = ("OOMKilled", "BackOff", "FailedScheduling", "Failed", "Preempted", "Evicted", "Started", "Unhealthy")
_TYPES = ("Training", "Workspace", "Distributed", "Inference", "DistributedInference", "runai-job", "TrainingWorkload")
_PHASES = ("Failed", "Failed", "Failed", "Completed", "Stopped", "Running", "Pending", "Degraded", "Unknown")
#: What the product asks for (diagnosis/runai/tier1.py ``METRIC_TYPES``), so the series are read.
_METRICS = ("CPU_MEMORY_USAGE_BYTES", "CPU_MEMORY_LIMIT_BYTES", "CPU_MEMORY_REQUEST_BYTES")
SPEC_SCHEMAS = {
    "trainings": "Training1",
    "workspaces": "Workspace1",
    "distributed": "DistributedWorkload",
    "inferences": "Inference1",
    "distributed-inferences": "DistributedInference",
}


class RunaiGen(SchemaGen):
    """:class:`~bench.schemagen.SchemaGen` with Run:ai's value shapes: RFC 3339 times, Kubernetes quantities
    and names for the patterns, numeric strings for metric values, event-like messages, pod label keys."""

    zones = ("Z", "Z", "+00:00", "-07:00", "+14:00", "-23:59")
    numeric = ("0", "8", "-1", "1.5", "1e3", "", "abc", "99999999999999999999", "NaN", "inf", "-0", "17179869184")
    numeric_keys = frozenset({"value"})
    name_keys = frozenset(
        {"name", "projectName", "namespace", "nodeName", "workloadName", "nodePool", "submittedBy", "kind"}
    )
    free_keys = ("pod", "podName", "pod_name", "podId", "container", "gpu", "node", "namespace")
    pattern_candidates = (*_QUANTITIES, "train-7", "a", "a1", "x_1:2", "/mnt/data", "0755", "my.app-1")

    def _string(self, schema: dict[str, Any], key: str, depth: int) -> str:
        if key in ("message", "phaseMessage", "userMessage") and self.rng.random() < 0.6:
            return self.rng.choice(_MESSAGES).format(p=self.ident(), c=self.ident())
        if key == "reason" and self.rng.random() < 0.6:
            return self.rng.choice(_REASONS)
        return super()._string(schema, key, depth)


@dataclass
class World:
    """What the loopback server answers in one round (``raw`` overrides an endpoint with bytes)."""

    workload: dict[str, Any]
    listing: dict[str, Any]
    deleted_listing: dict[str, Any]
    pods: dict[str, Any]
    history: dict[str, Any]
    events: dict[str, Any]
    metrics: dict[str, Any]
    clusters: list[Any]
    projects: dict[str, Any]
    spec: dict[str, Any]
    token_v2: dict[str, Any]
    token_v1: dict[str, Any]
    cluster_id: str
    raw: dict[str, tuple[int, str, bytes]] = field(default_factory=dict)
    hits: Counter[str] = field(default_factory=Counter)
    #: endpoint -> the schema (a ``$ref`` or an inline one) its spec-valid body must fit
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _answer_schema(spec: dict[str, Any], path: str) -> dict[str, Any]:
    content = spec["paths"][path]["get"]["responses"]["200"]["content"]
    schema: dict[str, Any] = content["application/json"]["schema"]
    return schema


def spec_path(workload: dict[str, Any]) -> tuple[str, str] | None:
    """(endpoint key, schema name) of the spec the client asks for this workload, or None (no endpoint)."""
    if workload.get("sourceApi") == "WorkloadsV2":
        return "spec_v2", "WorkloadV2GetResponse"
    key = str(workload.get("type") or "").lower().replace("-", "").replace("_", "").replace(" ", "")
    key = key.removesuffix("workload") or key
    segment = {
        "training": "trainings",
        "workspace": "workspaces",
        "interactive": "workspaces",
        "distributed": "distributed",
        "inference": "inferences",
        "distributedinference": "distributed-inferences",
    }.get(key)
    return (segment, SPEC_SCHEMAS[segment]) if segment else None


def make_world(gen: RunaiGen, spec: dict[str, Any], rng: random.Random) -> World:
    cluster_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    wl = gen.body("WorkloadDetailed")
    wl["name"] = gen.ident()
    wl["projectName"] = rng.choice(("nlp", "vision", gen.ident()))
    if rng.random() < 0.9:
        wl["clusterId"] = cluster_id
    if rng.random() < 0.85:
        wl["type"] = rng.choice(_TYPES)
    if rng.random() < 0.85:
        wl["phase"] = rng.choice(_PHASES)
    if rng.random() < 0.15:
        wl["sourceApi"] = "WorkloadsV2"
    elif rng.random() < 0.8:
        wl.pop("sourceApi", None)
    listed = {k: v for k, v in wl.items() if k != "pendingSchedulingMessages"}
    listing = gen.value(_answer_schema(spec, "/api/v1/workloads"), "", 0)
    deleted_listing = gen.value(_answer_schema(spec, "/api/v1/workloads"), "", 0)
    listing.pop("next", None)
    deleted_listing.pop("next", None)
    if rng.random() < 0.8:
        listing["workloads"].insert(rng.randrange(len(listing["workloads"]) + 1), listed)
    elif rng.random() < 0.7:
        deleted_listing["workloads"].append(listed)
    for other in listing["workloads"] + deleted_listing["workloads"]:
        if other is not listed and rng.random() < 0.3:
            other["name"], other["projectName"] = wl["name"], wl["projectName"]  # several of the same name
    pods = gen.value(_answer_schema(spec, "/api/v1/workloads/{workloadId}/pods"), "", 0)
    for i, pod in enumerate(pods["pods"]):
        if rng.random() < 0.7:
            pod["name"] = f"{wl['name']}-{rng.choice(('', 'worker-', 'leader-', 'master-'))}{i}"
            pod["workloadId"] = wl["id"]
    history = gen.value(_answer_schema(spec, "/api/v1/workloads/{workloadId}/history"), "", 0)
    events = gen.value(_answer_schema(spec, "/api/v1/workloads/{workloadId}/events"), "", 0)
    if rng.random() < 0.3:
        events["events"] += [None] * rng.randint(1, 3)  # Event2 is nullable: null items are spec-valid
        rng.shuffle(events["events"])
    for page in (pods, history, events):
        if rng.random() < 0.7:
            page.pop("next", None)
    metrics = gen.body("MetricsCompositeResponse")
    for series in metrics["measurements"]:
        if rng.random() < 0.8:
            series["type"] = rng.choice(_METRICS)
        if rng.random() < 0.5 and pods["pods"] and isinstance(series.get("labels"), dict):
            series["labels"]["pod"] = rng.choice(pods["pods"])["name"]
    clusters = gen.value(_answer_schema(spec, "/api/v1/clusters"), "", 0)
    if rng.random() < 0.9:
        mine = gen.body("DisplayedCluster")
        mine["uuid"], mine["name"] = cluster_id, rng.choice(("dgx-prod", gen.ident()))
        clusters.insert(rng.randrange(len(clusters) + 1), mine)
    projects = gen.value(_answer_schema(spec, "/api/v1/org-unit/projects"), "", 0)
    for project in projects["projects"]:
        if rng.random() < 0.5:
            project["name"], project["clusterId"] = wl["projectName"], cluster_id
    kind = spec_path(wl)
    body = gen.body(kind[1]) if kind else {}
    token_v2 = gen.body("OAuth2TokenResponse")
    token_v1 = gen.body("TokenResponse")
    if rng.random() < 0.9:
        token_v2["access_token"] = "fuzz.jwt.token"
    if rng.random() < 0.9:
        token_v1["accessToken"] = "fuzz.v1.token"
    world = World(
        workload=wl,
        listing=listing,
        deleted_listing=deleted_listing,
        pods=pods,
        history=history,
        events=events,
        metrics=metrics,
        clusters=clusters,
        projects=projects,
        spec=body,
        token_v2=token_v2,
        token_v1=token_v1,
        cluster_id=cluster_id,
    )
    world.schemas = {
        "workload": _ref("WorkloadDetailed"),
        "workloads": _answer_schema(spec, "/api/v1/workloads"),
        "pods": _answer_schema(spec, "/api/v1/workloads/{workloadId}/pods"),
        "history": _answer_schema(spec, "/api/v1/workloads/{workloadId}/history"),
        "events": _answer_schema(spec, "/api/v1/workloads/{workloadId}/events"),
        "metrics": _ref("MetricsCompositeResponse"),
        "clusters": _answer_schema(spec, "/api/v1/clusters"),
        "projects": _answer_schema(spec, "/api/v1/org-unit/projects"),
        "token_v2": _ref("OAuth2TokenResponse"),
        "token_v1": _ref("TokenResponse"),
    }
    if kind:
        world.schemas["spec"] = _ref(kind[1])
    return world


def body_problems(spec: dict[str, Any], world: World) -> list[str]:
    """Every way a body served as spec-valid is not (the generator and the round's edits are checked)."""
    schemas = spec["components"]["schemas"]
    bodies: dict[str, Any] = {
        "workload": world.workload,
        "workloads": world.listing,
        "pods": world.pods,
        "history": world.history,
        "events": world.events,
        "metrics": world.metrics,
        "clusters": world.clusters,
        "projects": world.projects,
        "token_v2": world.token_v2,
        "token_v1": world.token_v1,
        "spec": world.spec,
    }
    out: list[str] = []
    for kind, schema in world.schemas.items():
        out += [f"{kind}: {v}" for v in violations(schemas, schema, bodies[kind])[:3]]
    out += [f"workloads (deleted): {v}" for v in violations(schemas, world.schemas["workloads"], world.deleted_listing)]
    return out


#: Odd answers (not spec-valid, as a proxy, a version skew or a bug gives them), one endpoint per round.
ODDITIES: tuple[tuple[str, str, tuple[int, str, bytes]], ...] = (
    ("pods", "null items", (200, "application/json", b'{"pods": [null, null]}')),
    ("pods", "html", (200, "text/html", b"<html><body>Proxy login</body></html>")),
    ("pods", "wrong type", (200, "application/json", b'{"pods": "none"}')),
    ("pods", "list body", (200, "application/json", b"[1, 2]")),
    ("pods", "bad items", (200, "application/json", b'{"pods": [{"name": 5}, 7, {"name": "p", "containers": 3}]}')),
    ("pods", "403", (403, "application/json", b'{"code": 403, "message": "Forbidden"}')),
    ("history", "null items", (200, "application/json", b'{"records": [null, {"meta": null}]}')),
    ("history", "html", (200, "text/html", b"<!doctype html><title>502</title>")),
    ("history", "wrong type", (200, "application/json", b'{"records": {"meta": {}}}')),
    ("history", "500", (500, "application/json", b'{"code": 500, "message": "Something went wrong."}')),
    ("events", "null list", (200, "application/json", b'{"events": null}')),
    ("events", "html", (200, "text/html", b"<html>Sign in</html>")),
    ("events", "bad items", (200, "application/json", b'{"events": [{"message": {"a": 1}}, "x", null]}')),
    ("events", "null body", (200, "application/json", b"null")),
    ("metrics", "html", (200, "text/html", b"<html>oops</html>")),
    ("metrics", "wrong type", (200, "application/json", b'{"measurements": "x"}')),
    ("metrics", "list body", (200, "application/json", b"[]")),
    ("metrics", "400", (400, "application/json", b'{"code": 400, "message": "metricType: bad"}')),
    ("spec", "404", (404, "application/json", b'{"code": 404, "message": "Resource id not found."}')),
    ("spec", "html", (200, "text/html", b"<html>proxy</html>")),
    ("spec", "list body", (200, "application/json", b"[1]")),
    ("clusters", "html", (200, "text/html", b"<html>proxy</html>")),
    ("clusters", "bad items", (200, "application/json", b'[{"name": "x"}, null, 5]')),
    ("workload", "html", (200, "text/html", b"<html>proxy</html>")),
    ("workload", "wrong type", (200, "application/json", b'{"id": 5, "name": ["x"]}')),
    ("workloads", "bad items", (200, "application/json", b'{"workloads": [{"id": "w"}, null, 3]}')),
    ("workloads", "wrong type", (200, "application/json", b'{"workloads": {"id": "w"}}')),
    ("token_v2", "html", (200, "text/html", b"<html>SSO</html>")),
)
#: The gap ``what`` each endpoint's failure is reported under (diagnosis/runai/tier1.py ``collect``).
GAP_NAMES = {
    "pods": "pods",
    "history": "history",
    "events": "events",
    "metrics": "metrics",
    "spec": "submitted spec",
    "clusters": "cluster",
}
#: Endpoints whose failure may end the diagnosis with exit 2 (the workload itself could not be read, or the
#: login failed): one line on stderr, never a traceback.
FATAL = frozenset({"workload", "workloads", "token_v2", "clusters"})


# -- loopback server --------------------------------------------------------------------------------


class FuzzServer(LoopbackServer):
    """A loopback Run:ai imitation answering from the current :class:`World` (any bearer is accepted)."""

    name = "runai-fuzz"

    def __init__(self) -> None:
        super().__init__()
        self.world: World | None = None

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route

        def answer(kind: str, body: Any, request: Request | None = None, key: str | None = None) -> Response:
            world = self.world
            assert world is not None
            world.hits[kind] += 1
            if kind in world.raw:
                status, ctype, data = world.raw[kind]
                return Response(data, status_code=status, media_type=ctype)
            if request is not None and key is not None and request.query_params.get("offset", "0") != "0":
                return JSONResponse({key: []})  # a later page: the end
            return JSONResponse(body)

        def w() -> World:
            assert self.world is not None
            return self.world

        async def workloads(request: Request) -> Response:
            if request.query_params.get("deleted") == "true":
                return answer("workloads", w().deleted_listing, request, "workloads")
            return answer("workloads", w().listing, request, "workloads")

        async def spec_kind(request: Request) -> Response:
            return answer("spec", w().spec)

        routes = [
            Route("/api/v2/token", lambda r: answer("token_v2", w().token_v2), methods=["POST"]),
            Route("/api/v1/token", lambda r: answer("token_v1", w().token_v1), methods=["POST"]),
            Route("/api/v1/workloads", workloads),
            *[Route(f"/api/v1/workloads/{segment}/{{wid}}", spec_kind) for segment in SPEC_SCHEMAS],
            Route("/api/v1/workloads/{wid}", lambda r: answer("workload", w().workload)),
            Route("/api/v1/workloads/{wid}/pods", lambda r: answer("pods", w().pods, r, "pods")),
            Route("/api/v1/workloads/{wid}/history", lambda r: answer("history", w().history, r, "records")),
            Route("/api/v1/workloads/{wid}/events", lambda r: answer("events", w().events, r, "events")),
            Route("/api/v1/workloads/{wid}/metrics", lambda r: answer("metrics", w().metrics)),
            Route("/api/v2/workloads/{wid}", spec_kind),
            Route("/api/v1/clusters", lambda r: answer("clusters", w().clusters)),
            Route("/api/v1/org-unit/projects", lambda r: answer("projects", w().projects, r, "projects")),
        ]
        return Starlette(routes=routes)


# -- runs -------------------------------------------------------------------------------------------


@dataclass
class Figures:
    """What a run saw: rounds, bodies served per endpoint, exit codes, and every problem found."""

    rounds: int = 0
    odd_rounds: int = 0
    odd_gaps: int = 0  # odd answers read and reported as a named gap (or a one-line exit 2 where allowed)
    null_events_rounds: int = 0  # spec-valid rounds whose events list had null items
    bodies: Counter[str] = field(default_factory=Counter)
    exits: Counter[int] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    crashes: int = 0
    invalid_bodies: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def bodies_tried(self) -> int:
        return sum(self.bodies.values())

    def summary(self) -> str:
        per = ", ".join(f"{k} {v}" for k, v in sorted(self.bodies.items()))
        return (
            f"Run:ai spec fuzz: {self.rounds} spec-valid rounds ({self.null_events_rounds} with null event items) "
            f"+ {self.odd_rounds} odd rounds through the CLI ({self.odd_gaps} odd answers read, each a named gap "
            f"or a one-line exit 2); bodies tried {self.bodies_tried} ({per}); crashes: {self.crashes}, "
            f"exit 1: {self.exits.get(1, 0)}, exit 2: {self.exits.get(2, 0)} (no usable token, or the workload "
            f"lookup itself odd), bodies not spec-valid: {self.invalid_bodies}, problems: {len(self.problems)}; "
            f"outcomes {dict(sorted(self.outcomes.items()))}"
        )


#: Words of a gap that blame the answer's shape or the product: never for a spec-valid answer.
_SHAPE_WORDS = ("unexpected", "unreadable", "ValidationError", "TypeError", "ValueError", "KeyError", "AttributeError")


def _question(world: World, rng: random.Random) -> list[str]:
    wl = world.workload
    pick = rng.random()
    cluster = world.cluster_id
    if pick < 0.1:
        named = next((c for c in world.clusters if isinstance(c, dict) and c.get("uuid") == cluster), None)
        if named is not None:
            cluster = str(named.get("name"))
    if pick < 0.6:
        return [f"why did {wl['name']} fail", "--workload-id", wl["id"], "--cluster-id", cluster]
    return [
        f"why did {wl['name']} fail",
        "--workload",
        wl["name"],
        "--project",
        wl["projectName"],
        "--cluster-id",
        cluster,
    ]


def run_round(server: FuzzServer, world: World, args: list[str], odd: str | None, figures: Figures, n: int) -> None:
    """One CLI run against ``world``; records exit codes, outcomes, served bodies and problems."""
    from typer.testing import CliRunner

    from bot.cli import app

    server.world = world
    env = {"RUNAI_BASE_URL": server.url, "RUNAI_CLIENT_ID": f"fuzz-{n}", "RUNAI_CLIENT_SECRET": "fuzz-secret"}
    env |= {"OSMO_URL": "", "OSMO_TOKEN": "", "KUBECONFIG": "", "WD_KUBE_CONTEXTS": "", "WD_IN_CLUSTER_ID": ""}
    env |= {"WD_DEADLINE": "20", "WD_REQUEST_TIMEOUT": "5"}
    result = CliRunner().invoke(app, ["diagnose", *args, "--format", "json"], env=env, catch_exceptions=True)
    code = result.exit_code
    figures.exits[code] += 1
    for kind, hits in world.hits.items():
        if kind not in world.raw:
            figures.bodies[kind] += hits
    tag = f"[{odd or 'valid'}] {' '.join(args)[:70]}"
    kind = (odd or "").split(":", 1)[0]
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        figures.crashes += 1
        figures.problems.append(f"{tag}: crash {type(result.exception).__name__}: {result.exception}")
        return
    err = (result.stderr or "").strip()
    if code == 1:
        figures.problems.append(f"{tag}: exit 1: {err[-300:]}")
        return
    if code == 2:
        login = "token" in err
        if "Traceback" in err or len(err.splitlines()) != 1:
            figures.problems.append(f"{tag}: exit 2 without one clean line: {err[-300:]}")
        elif odd is None and not login:
            figures.problems.append(f"{tag}: exit 2 on spec-valid answers: {err[-300:]}")
        elif odd is not None and kind not in FATAL:
            figures.problems.append(f"{tag}: exit 2 for an odd {kind}: {err[-300:]}")
        elif odd is not None:
            figures.odd_gaps += 1
        return
    try:
        data = json.loads(result.stdout)
    except ValueError:
        figures.problems.append(f"{tag}: stdout is not JSON: {result.stdout[:200]}")
        return
    figures.outcomes[str(data.get("outcome"))] += 1
    gaps = [f"{g.get('what')}: {g.get('why')}" for g in data.get("gaps") or []]
    for gap in gaps:
        if "unexpected" in gap or (odd is None and any(w in gap for w in _SHAPE_WORDS)):
            figures.problems.append(f"{tag}: gap {gap[:300]}")
    if odd is not None and world.hits.get(kind) and kind in GAP_NAMES:
        if any(g.startswith(GAP_NAMES[kind]) for g in gaps):
            figures.odd_gaps += 1
        elif kind not in ("clusters",):
            figures.problems.append(f"{tag}: {odd} was read but no gap names it; gaps: {gaps}")
        else:
            figures.odd_gaps += 1  # clusters only name the report's cluster: an odd list changes nothing else
    elif odd is not None and world.hits.get(kind):
        figures.odd_gaps += 1  # the workload or login oddity was read and the answer still came: exit 0


def run(bodies: int = 400, odd: int = 2 * len(ODDITIES), seed: int = 24) -> Figures:
    """``bodies`` spec-valid rounds and ``odd`` odd ones (cycling through :data:`ODDITIES`)."""
    spec = json.loads(SPEC_PATH.read_text())
    rng = random.Random(seed)
    gen = RunaiGen(spec, rng)
    figures = Figures()
    with FuzzServer() as server:
        for n in range(bodies):
            world = make_world(gen, spec, rng)
            invalid = body_problems(spec, world)
            if invalid:
                figures.invalid_bodies += 1
                figures.problems += [f"[not spec-valid] {p}" for p in invalid[:3]]
                continue
            figures.rounds += 1
            figures.null_events_rounds += any(e is None for e in world.events["events"])
            run_round(server, world, _question(world, rng), None, figures, n)
        for i in range(odd):
            kind, label, raw = ODDITIES[i % len(ODDITIES)]
            world = make_world(gen, spec, rng)
            world.workload["clusterId"] = world.cluster_id
            world.workload["phase"] = "Failed"
            world.workload["type"] = "Training"
            world.workload.pop("sourceApi", None)
            world.spec = gen.body("Training1")
            listed = copy.deepcopy({k: v for k, v in world.workload.items() if k != "pendingSchedulingMessages"})
            world.listing["workloads"] = [listed]
            if kind == "token_v2":
                world.token_v1["accessToken"] = "fuzz.v1.token"
            world.raw[kind] = raw
            figures.odd_rounds += 1
            by_name = kind == "workloads" or rng.random() < 0.3
            wl = world.workload
            if by_name:
                args = [f"why did {wl['name']} fail", "--workload", wl["name"], "--project", wl["projectName"]]
            else:
                args = [f"why did {wl['name']} fail", "--workload-id", wl["id"]]
            cluster = "dgx-prod" if kind == "clusters" else world.cluster_id
            if kind == "clusters":
                mine = [c for c in world.clusters if isinstance(c, dict) and c.get("uuid") == world.cluster_id]
                if mine:
                    mine[0]["name"] = "dgx-prod"
            run_round(server, world, [*args, "--cluster-id", cluster], f"{kind}: {label}", figures, bodies + i)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--bodies", type=int, default=400, help="spec-valid rounds")
    parser.add_argument("--odd", type=int, default=2 * len(ODDITIES), help="rounds with one odd answer")
    parser.add_argument("--seed", type=int, default=24)
    opts = parser.parse_args()
    t0 = time.perf_counter()
    figures = run(opts.bodies, opts.odd, opts.seed)
    print(figures.summary() + f"; {time.perf_counter() - t0:.1f} s")
    for problem in figures.problems[:40]:
        print("  " + problem)
    raise SystemExit(1 if figures.problems or figures.crashes or figures.exits.get(1) else 0)


if __name__ == "__main__":
    main()
