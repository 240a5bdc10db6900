"""Spec-valid OSMO answers through the real OSMO client and the CLI (issue 9 §2, OSMO half).

A small generator (:mod:`bench.schemagen`, shared with ``bench/runai_fuzz.py``) builds JSON bodies from
the OSMO service's own OpenAPI schemas (``../shared/reference/specs/osmo-openapi.json``): ``$ref``,
``anyOf``, ``enum``, ``required`` and optional properties, ``additionalProperties``, ``format: date-time``,
nullable fields, numeric strings. Each round builds one small world (a workflow query, its ``/api/task``
list, a ``TaskEntry`` per task, ``/api/pool_quota``, ``/api/resources``, and log/event/spec text), serves
it from a loopback server, and runs ``workload-doctor diagnose --workflow ID --format json`` in-process (the real CLI:
settings from the environment, the real :class:`~diagnosis.osmo.client.OsmoClient` over HTTP, the
renderers). Names, pools and tasks are tied together in most rounds (still spec-valid: they are
plain strings) so the diagnosis reaches the pool, node and task lookups instead of stopping early.

Spec-valid rounds must exit 0 with no gap that blames the answer's shape (a model that rejects a
spec-valid body) and no "unexpected" gap. Odd rounds (a 422, a proxy's HTML page with 200, a field of
the wrong type, ``null`` list items) must exit 0 with a gap naming the endpoint (the workflow query
itself may only exit 2: one line, no traceback). Nothing may exit 1.

Usage: python bench/osmo_fuzz.py [--bodies 440] [--odd 60] [--seed 9]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))
from bench.schemagen import LoopbackServer, SchemaGen  # noqa: E402

SPEC_PATH = ROOT.parent / "shared" / "reference" / "specs" / "osmo-openapi.json"

#: The schemas of the endpoints a diagnosis reads (the answers to what the client asks: no ``summary``,
#: no ``concise``, so ``/api/task`` is ``ListTaskResponse`` and ``/api/resources`` is ``ResourcesResponse``).
ENDPOINTS = {
    "workflow": "WorkflowQueryResponse",
    "task_list": "ListTaskResponse",
    "task_entry": "TaskEntry",
    "pool_quota": "PoolResponse",
    "resources": "ResourcesResponse",
    "workflow_list": "src__service__core__workflow__objects__ListResponse",
}

_IDENT_WORDS = ("train", "eval", "prep", "render", "sdg", "policy", "sim", "h100", "gb200", "node", "pool")
_WEIRD = ("", " ", "x", "名前", "a b", "a/b", "Ω≈ç√", "%2F", "..", "\u202e", "<script>", "null", "0", "`tick`")
_NUMERIC = ("0", "8", "-1", "1.5", "1e3", "", "abc", "99999999999999999999", "NaN", "inf", "-0", " 4 ")
_NUMERIC_KEYS = frozenset(
    {"quota_used", "quota_free", "quota_limit", "total_usage", "total_capacity", "total_free", "gpu", "cpu"}
)
_NAME_KEYS = frozenset(
    {"name", "task_name", "hostname", "pool", "workflow_id", "node", "node_name", "backend", "user", "submitted_by"}
)
_FREE_KEYS = ("gpu", "cpu", "memory", "storage", "pool/platform", "node", "nvidia.com/gpu", "ephemeral-storage")
_LOG_LINES = (
    "[{t}] step 10/100 loss 2.31",
    "[{t}][osmo] Downloading Start",
    "[{t}][osmo] All Inputs Gathered",
    "[{t}] Traceback (most recent call last):",
    '[{t}]   File "train.py", line 3, in <module>',
    "[{t}] RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "[{t}] /tmp/entry.sh: line 3:    57 Killed                  python -u run.py",
    "[{t}] NCCL WARN Watchdog caught collective operation timeout",
    "[{t}][osmo] Upload Start",
    "[{t}][osmo] Upload Failed: AccessDenied writing s3://bucket/out",
    "[{t}][osmo] All Outputs Uploaded",
    "[{t}] ValueError: bad `config` value",
    "raw DUMP line without a prefix",
    "[{t} retry-1] restarted",
)
_EVENT_LINES = (
    "{d} [{t}] PodScheduled: False, Reason: Unschedulable, Message: 0/12 nodes are available: 12 Insufficient "
    "nvidia.com/gpu.",
    "{d} [{t}] FailedScheduling: 0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.",
    '{d} [{t}] Failed: Failed to pull image "nvcr.io/x/y:1": not found',
    "{d} [{t}] Evicted: The node was low on resource: memory.",
    "{d} [{t}] OOMKilling: Memory cgroup out of memory",
    "{d} [{t}] Started: Started container {t}",
    "{d} garbage without a task",
)


class OsmoGen(SchemaGen):
    """:class:`~bench.schemagen.SchemaGen` with OSMO's value shapes: numeric strings for GPU counts, pool and
    task names as identifiers, free-form resource maps keyed like the service's (``pool/platform`` lists)."""

    ident_words = _IDENT_WORDS
    weird = _WEIRD
    numeric = _NUMERIC
    numeric_keys = _NUMERIC_KEYS
    name_keys = _NAME_KEYS
    free_keys = _FREE_KEYS

    def free_value(self, name: str, depth: int) -> Any:
        if name == "pool/platform" and self.rng.random() < 0.7:
            return [f"{self.ident()}/{self.ident()}" for _ in range(self.rng.randint(0, 2))]
        return self.anything(depth + 1, name)


# -- worlds -----------------------------------------------------------------------------------------


@dataclass
class World:
    """What the loopback server answers in one round (``raw`` overrides an endpoint with bytes)."""

    workflow: Any = None
    task_list: Any = None
    task_entries: dict[str, Any] = field(default_factory=dict)
    pool_quota: Any = None
    resources: Any = None
    workflow_list: Any = None
    logs: str = ""
    events: str = ""
    spec: str = ""
    raw: dict[str, tuple[int, str, bytes]] = field(default_factory=dict)
    hits: Counter[str] = field(default_factory=Counter)


_STATUS_BIAS = (
    ["PENDING"] * 26 + ["WAITING"] * 2 + ["RUNNING", "COMPLETED"] * 2
    + ["FAILED", "FAILED", "FAILED_EVICTED", "FAILED_IMAGE_PULL", "FAILED_CANCELED", "FAILED_PREEMPTED",
       "FAILED_EXEC_TIMEOUT", "FAILED_SERVER_ERROR", "FAILED_BACKEND_ERROR", "FAILED_START_ERROR"]
)  # fmt: skip


def make_world(gen: OsmoGen, rng: random.Random) -> World:
    """One spec-valid world; names tied together in most rounds (the ties keep it spec-valid)."""
    w = World()
    wf = gen.body(ENDPOINTS["workflow"])
    # A name with "/" cannot be one path segment on any server (the service could never answer for it).
    wf["name"] = str(wf["name"]).replace("/", "-")
    if rng.random() < 0.9:
        wf["status"] = rng.choice(_STATUS_BIAS)
    if wf["status"] in ("PENDING", "WAITING") and rng.random() < 0.95:
        wf["pool"] = gen.ident()
    w.workflow = wf
    tasks = [t for g in wf.get("groups") or [] for t in g.get("tasks") or []]
    names = [t["name"] for t in tasks]
    listing = gen.body(ENDPOINTS["task_list"])
    if names and rng.random() < 0.7:
        for item, name in zip(listing["tasks"], names, strict=False):
            item["task_name"], item["workflow_id"] = name, wf["name"]
        if len(listing["tasks"]) < len(names) and rng.random() < 0.5:
            listing["tasks"] = []  # the per-task fallback (TaskEntry) is read too
    w.task_list = listing
    for name in names:
        entry = gen.body(ENDPOINTS["task_entry"])
        entry["task_name"], entry["workflow_id"] = name, wf["name"]
        w.task_entries[name] = entry
    pool = wf.get("pool")
    w.pool_quota = gen.body(ENDPOINTS["pool_quota"])
    if pool and rng.random() < 0.7:
        pools = [p for ns in w.pool_quota["node_sets"] for p in ns["pools"]]
        if pools:
            rng.choice(pools)["name"] = pool
        else:
            w.pool_quota["node_sets"].append({"pools": [{**gen.body("PoolResourceUsage"), "name": pool}]})
    w.resources = gen.body(ENDPOINTS["resources"])
    if pool and rng.random() < 0.7:
        for node in w.resources["resources"]:
            node["pool_platform_labels"] = {pool: ["p"]}
            if rng.random() < 0.6:
                node["platform_allocatable_fields"] = {pool: {"p": {"gpu": rng.choice((0, 4, 8, "8", -1, 2.5))}}}
            node["usage_fields"] = {"gpu": rng.choice((0, 2, "6", None, "x"))}
    w.workflow_list = gen.body(ENDPOINTS["workflow_list"])
    line_tasks = names or ["t"]
    w.logs = "".join(
        f"2026/11/28 10:{i // 60 % 60:02d}:{i % 60:02d} "
        + rng.choice(_LOG_LINES).format(t=rng.choice(line_tasks))
        + "\n"
        for i in range(rng.randint(0, 30))
    )
    w.events = "".join(
        rng.choice(_EVENT_LINES).format(d="2026-11-28 10:00:00+00:00", t=rng.choice(line_tasks)) + "\n"
        for _ in range(rng.randint(0, 8))
    )
    w.spec = rng.choice(
        (
            "",
            "workflow:\n  name: x\n  tasks:\n  - name: {t}\n    image: i\n    inputs:\n    - task: {u}\n",
            "{{not yaml: [",
            "- just\n- a list\n",
        )
    ).format(t=rng.choice(line_tasks), u=rng.choice(line_tasks))
    return w


#: Odd answers (not spec-valid, as a proxy or a validation error gives them), one endpoint per round.
ODDITIES: tuple[tuple[str, str, tuple[int, str, bytes] | None], ...] = (
    ("pool_quota", "422", (422, "application/json", b'{"detail":[{"loc":["query","pools"],"msg":"bad","type":"x"}]}')),
    ("pool_quota", "html", (200, "text/html", b"<html><body>Proxy login</body></html>")),
    ("pool_quota", "wrong type", (200, "application/json", b'{"node_sets": "none", "resource_sum": 5}')),
    ("pool_quota", "null", (200, "application/json", b"null")),
    ("resources", "422", (422, "application/json", b'{"detail":[{"loc":["query"],"msg":"bad","type":"x"}]}')),
    ("resources", "html", (200, "text/html", b"<!doctype html><title>502</title>")),
    ("resources", "wrong type", (200, "application/json", b'{"resources": {"hostname": 1}}')),
    ("resources", "null items", (200, "application/json", b'{"resources": [null, 7, {"taints": []}]}')),
    ("resources", "per-pool shape", (200, "application/json", b'{"pools": []}')),
    ("task_list", "422", (422, "application/json", b'{"detail":[{"loc":["query","limit"],"msg":"bad","type":"x"}]}')),
    ("task_list", "html", (200, "text/html", b"<html>Sign in</html>")),
    ("task_list", "null items", (200, "application/json", b'{"tasks": [null, {"task_name": 5}, "x"]}')),
    ("task_list", "list body", (200, "application/json", b"[1, 2]")),
    (
        "task_entry",
        "422",
        (422, "application/json", b'{"detail":[{"loc":["path","task_name"],"msg":"bad","type":"x"}]}'),
    ),
    ("task_entry", "html", (200, "text/html", b"<html>oops</html>")),
    ("task_entry", "wrong type", (200, "application/json", b'{"task_name": {"a": 1}, "gpu": []}')),
    ("logs", "422", (422, "application/json", b'{"detail":[{"loc":["query","last_n_lines"],"msg":"bad","type":"x"}]}')),
    ("events", "404", (404, "application/json", b'{"detail":"Not Found"}')),
    ("spec", "422", (422, "application/json", b'{"detail":[]}')),
    ("workflow", "html", (200, "text/html", b"<html>proxy</html>")),
    ("workflow", "wrong type", (200, "application/json", b'{"name": 5, "groups": "x"}')),
    ("workflow", "422", (422, "application/json", b'{"detail":[{"loc":["query","verbose"],"msg":"bad","type":"x"}]}')),
)
#: Words of the gap ``what`` that name each endpoint.
GAP_NAMES = {
    "pool_quota": "/api/pool_quota",
    "resources": "/api/resources",
    "task_list": "/api/task",
    "task_entry": "/task/",
    "logs": "logs",
    "events": "events",
    "spec": "spec",
}


# -- loopback server --------------------------------------------------------------------------------


class FuzzServer(LoopbackServer):
    """A loopback OSMO imitation answering from the current :class:`World` (any bearer is accepted)."""

    name = "osmo-fuzz"

    def __init__(self) -> None:
        super().__init__()
        self.world = World()

    def app(self) -> Any:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route

        def answer(kind: str, body: Any, text: bool = False) -> Response:
            world = self.world
            world.hits[kind] += 1
            if kind in world.raw:
                status, ctype, data = world.raw[kind]
                return Response(data, status_code=status, media_type=ctype)
            if text:
                return Response(str(body), media_type="text/plain; charset=utf-8")
            return JSONResponse(body)

        async def token(request: Request) -> Response:
            return JSONResponse({"token": "fuzz.jwt.token", "expires_at": int(time.time()) + 300, "error": None})

        async def workflow(request: Request) -> Response:
            return answer("workflow", self.world.workflow)

        async def task_entry(request: Request) -> Response:
            entry = self.world.task_entries.get(request.path_params["task"])
            if entry is None and "task_entry" not in self.world.raw:
                return JSONResponse({"message": "Task is not found.", "error_code": "DATABASE"}, status_code=400)
            return answer("task_entry", entry)

        routes = [
            Route("/api/auth/jwt/access_token", token, methods=["POST"]),
            Route("/api/workflow", lambda r: answer("workflow_list", self.world.workflow_list)),
            Route("/api/workflow/{name}", workflow),
            Route("/api/workflow/{name}/logs", lambda r: answer("logs", self.world.logs, text=True)),
            Route("/api/workflow/{name}/events", lambda r: answer("events", self.world.events, text=True)),
            Route("/api/workflow/{name}/spec", lambda r: answer("spec", self.world.spec, text=True)),
            Route("/api/workflow/{name}/task/{task}", task_entry),
            Route("/api/task", lambda r: answer("task_list", self.world.task_list)),
            Route("/api/pool_quota", lambda r: answer("pool_quota", self.world.pool_quota)),
            Route("/api/resources", lambda r: answer("resources", self.world.resources)),
        ]
        return Starlette(routes=routes)


# -- runs -------------------------------------------------------------------------------------------


@dataclass
class Figures:
    """What a run saw: rounds, bodies served per endpoint, exit codes, and every problem found."""

    rounds: int = 0
    odd_rounds: int = 0
    odd_gaps: int = 0  # odd answers that were read and came back as a named gap
    bodies: Counter[str] = field(default_factory=Counter)
    exits: Counter[int] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    crashes: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def bodies_tried(self) -> int:
        return sum(self.bodies.values())

    def summary(self) -> str:
        per = ", ".join(f"{k} {v}" for k, v in sorted(self.bodies.items()))
        return (
            f"OSMO spec fuzz: {self.rounds} spec-valid rounds + {self.odd_rounds} odd rounds through the CLI "
            f"({self.odd_gaps} odd answers read, each a named gap); "
            f"bodies tried {self.bodies_tried} ({per}); crashes: {self.crashes}, exit 1: {self.exits.get(1, 0)}, "
            f"exit 2: {self.exits.get(2, 0)} (odd workflow answers only), problems: {len(self.problems)}; "
            f"outcomes {dict(sorted(self.outcomes.items()))}"
        )


def _question(world: World, rng: random.Random) -> tuple[list[str], str]:
    """CLI arguments for this round and what kind of question they ask."""
    wid = str(world.workflow.get("name"))
    pick = rng.random()
    if pick < 0.05:
        return ["list recent workflows"], "list"
    if pick < 0.1:
        return [f"what does {wid} do", "--workflow", wid], "explain"
    return [f"why did {wid} fail", "--workflow", wid], "diagnose"


def run_round(server: FuzzServer, world: World, args: list[str], odd: str | None, figures: Figures) -> None:
    """One CLI run against ``world``; records exit codes, outcomes, served bodies and problems."""
    from typer.testing import CliRunner

    from bot.cli import app

    server.world = world
    env = {"OSMO_URL": server.url, "OSMO_TOKEN": "fuzz-access-token", "RUNAI_BASE_URL": "", "KUBECONFIG": ""}
    env |= {"RUNAI_CLIENT_ID": "", "RUNAI_CLIENT_SECRET": "", "WD_DEADLINE": "20", "WD_REQUEST_TIMEOUT": "5"}
    result = CliRunner().invoke(app, ["diagnose", *args, "--format", "json"], env=env, catch_exceptions=True)
    code = result.exit_code
    figures.exits[code] += 1
    for kind, n in world.hits.items():
        if kind not in world.raw:
            figures.bodies[kind] += n
    tag = f"[{odd or 'valid'}] {' '.join(args)[:60]}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        figures.crashes += 1
        figures.problems.append(f"{tag}: crash {type(result.exception).__name__}: {result.exception}")
        return
    if code == 1:
        figures.problems.append(f"{tag}: exit 1: {(result.stderr or result.output)[-300:]}")
        return
    if code == 2:
        if not (odd or "").startswith("workflow"):
            figures.problems.append(f"{tag}: exit 2: {(result.stderr or result.output)[-300:]}")
        return
    try:
        data = json.loads(result.stdout)
    except ValueError:
        figures.problems.append(f"{tag}: stdout is not JSON: {result.stdout[:200]}")
        return
    figures.outcomes[str(data.get("outcome"))] += 1
    gaps = [f"{g.get('what')}: {g.get('why')}" for g in data.get("gaps") or []]
    for gap in gaps:
        if "unexpected" in gap or (odd is None and "could not be used" in gap):
            figures.problems.append(f"{tag}: gap {gap[:300]}")
    if odd is not None:
        kind = odd.split(":", 1)[0]
        if world.hits.get(kind):
            if any(GAP_NAMES[kind] in g for g in gaps):
                figures.odd_gaps += 1
            else:
                figures.problems.append(f"{tag}: {odd} was read but no gap names it; gaps: {gaps}")


def run(bodies: int = 440, odd: int = 60, seed: int = 9) -> Figures:
    """``bodies`` spec-valid rounds and ``odd`` odd ones (cycling through :data:`ODDITIES`)."""
    spec = json.loads(SPEC_PATH.read_text())
    rng = random.Random(seed)
    gen = OsmoGen(spec, rng)
    figures = Figures()
    with FuzzServer() as server:
        for _ in range(bodies):
            world = make_world(gen, rng)
            args, _kind = _question(world, rng)
            figures.rounds += 1
            run_round(server, world, args, None, figures)
        for i in range(odd):
            kind, label, raw = ODDITIES[i % len(ODDITIES)]
            world = make_world(gen, rng)
            world.workflow["status"] = "PENDING" if kind in ("pool_quota", "resources") else "FAILED"
            if kind in ("pool_quota", "resources"):
                world.workflow["pool"] = world.workflow.get("pool") or "pool-1"
            if kind == "task_entry":
                world.task_list = {"tasks": []}
                if not world.task_entries:
                    group = {"name": "g", "status": "FAILED", "tasks": [copy.deepcopy(_TASK)]}
                    world.workflow["groups"] = [group]
                    world.task_entries["t0"] = {}
            assert raw is not None
            world.raw[kind] = raw
            figures.odd_rounds += 1
            wid = str(world.workflow.get("name"))
            run_round(server, world, [f"why did {wid} fail", "--workflow", wid], f"{kind}: {label}", figures)
    return figures


_TASK = {"name": "t0", "retry_id": 0, "status": "FAILED", "logs": "", "events": "", "pod_name": "p", "task_uuid": "u"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bodies", type=int, default=440, help="spec-valid rounds")
    parser.add_argument("--odd", type=int, default=60, help="rounds with one odd answer")
    parser.add_argument("--seed", type=int, default=9)
    opts = parser.parse_args()
    t0 = time.perf_counter()
    figures = run(opts.bodies, opts.odd, opts.seed)
    print(figures.summary() + f"; {time.perf_counter() - t0:.1f} s")
    for problem in figures.problems[:40]:
        print("  " + problem)
    raise SystemExit(1 if figures.problems or figures.crashes or figures.exits.get(1) else 0)


if __name__ == "__main__":
    main()
