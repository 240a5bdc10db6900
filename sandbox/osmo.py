"""Sandbox routes of the OSMO service (FORMAT.md ``osmo``; shapes in ``reference/osmo-api.md``).

- ``POST /api/auth/jwt/access_token`` ``{"token": …}`` -> ``{"token": <JWT-like>, "expires_at": <epoch s>}``
  (300 s, like ``ACCESS_TOKEN_TIMEOUT``); every other route needs ``Authorization: Bearer <that JWT>``.
- ``GET /api/workflow``: list entries built from the ``query`` objects, newest ``submit_time`` first
  (``order=ASC`` reverses), honouring ``statuses``, ``pools``/``all_pools``, ``users``, ``limit`` (<= 1000),
  ``offset``; ``more_entries`` when more remain.
- ``GET /api/workflow/{id}``: the ``query``; an unknown ID answers 400 ``DATABASE``
  "Workflow <id> is not found.".
- ``GET /api/workflow/{id}/logs|events|spec``: ``text/plain`` streams of ``logs`` (``task_logs`` or a
  ``[task]`` filter with ``task_name``; ``last_n_lines`` tail), ``events`` (``task_name`` filter, wrapped
  messages kept with their event) and ``spec_template``. ``null`` answers 500. For a live workflow
  (PENDING/RUNNING/WAITING) the stream stays open after the text, sending nothing, until the client
  disconnects or :data:`LIVE_STREAM_HOLD_S` pass (a real live stream never ends).
- ``GET /api/task`` and ``GET /api/workflow/{id}/task/{name}``: from the entry's ``tasks`` list, else derived
  from ``spec_template`` (``resource: <name>`` selects ``resources.<name>``, else ``resources.default``).
- ``GET /api/pool_quota``, ``GET /api/pool`` and ``GET /api/resources`` honour ``pools``;
  ``null`` answers 500.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import yaml
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from sandbox.server import SandboxState

ALIVE = frozenset({"PENDING", "RUNNING", "WAITING"})
LIVE_STREAM_HOLD_S = 60.0
JWT_LIFETIME_S = 300
_EVENT_START = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}")


def osmo_error(
    status: int, message: str, error_code: str | None = None, workflow_id: str | None = None
) -> JSONResponse:
    """The OSMO error body (§8): ``{"message", "error_code", "workflow_id"}``; 500s carry only ``message``."""
    body: dict[str, Any] = {"message": message}
    if error_code is not None:
        body.update({"error_code": error_code, "workflow_id": workflow_id})
    return JSONResponse(body, status_code=status)


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).decode().rstrip("=")


def make_jwt(expires_at: int) -> str:
    """An unsigned JWT-shaped token (header.payload.signature) carrying ``exp``."""
    header = _b64({"alg": "HS256", "typ": "JWT"})
    payload = _b64({"sub": "sandbox", "exp": expires_at, "jti": secrets.token_hex(8)})
    return f"{header}.{payload}.{secrets.token_urlsafe(16)}"


def task_filter(text: str, task_name: str, *, events: bool = False) -> str:
    """Lines of ``text`` belonging to ``task_name`` (``[task]``, ``[task retry-N]``, ``[task][osmo]``).

    For events, continuation lines of a wrapped message stay with the event they belong to.
    """
    pattern = re.compile(r"\[" + re.escape(task_name) + r"(?: retry-\d+)?\]")
    out: list[str] = []
    keep = False
    for line in text.splitlines(keepends=True):
        starts = bool(_EVENT_START.match(line)) if events else True
        if starts:
            head = " ".join(line.split(" ")[:3]) if events else line
            keep = bool(pattern.search(head))
        if keep:
            out.append(line)
    return "".join(out)


def tail_lines(text: str, n: int) -> str:
    lines = text.splitlines(keepends=True)
    return "".join(lines[-n:]) if n > 0 else text


def spec_tasks(spec_text: str | None) -> list[dict[str, Any]]:
    """Every task of a template spec with its requested resources:
    ``[{"task_name", "gpu", "cpu", "memory", "storage"}]``."""
    if not spec_text:
        return []
    try:
        doc = yaml.safe_load(spec_text)
    except yaml.YAMLError:
        return []
    if not isinstance(doc, dict):
        return []
    inner = doc.get("workflow")
    wf: dict[str, Any] = inner if isinstance(inner, dict) else doc
    resources = wf.get("resources") or doc.get("resources") or {}
    tasks: list[dict[str, Any]] = []
    raw_tasks = list(wf.get("tasks") or [])
    for group in wf.get("groups") or []:
        if isinstance(group, dict):
            raw_tasks += list(group.get("tasks") or [])
    for task in raw_tasks:
        if not isinstance(task, dict) or not task.get("name"):
            continue
        res_name = task.get("resource") or "default"
        res = resources.get(res_name) if isinstance(resources, dict) else None
        if not isinstance(res, dict):
            res = (resources or {}).get("default") or {}
        tasks.append(
            {
                "task_name": task["name"],
                "gpu": res.get("gpu", 0),
                "cpu": res.get("cpu"),
                "memory": res.get("memory"),
                "storage": res.get("storage"),
            }
        )
    return tasks


def routes(state: SandboxState) -> list[BaseRoute]:
    osmo = state.snapshot.get("osmo")
    if not isinstance(osmo, dict):
        return []
    entries: list[dict[str, Any]] = [e for e in osmo.get("workflows") or [] if isinstance(e, dict)]
    by_id: dict[str, dict[str, Any]] = {}
    for entry in entries:
        query = entry.get("query") or {}
        for key in (query.get("name"), query.get("uuid")):
            if key:
                by_id[str(key)] = entry

    def denied(request: Request) -> Response | None:
        if not state.authorized(request):
            return JSONResponse({"message": "Jwt is missing"}, status_code=401)
        return None

    def find(request: Request) -> dict[str, Any] | Response:
        refused = denied(request)
        if refused is not None:
            return refused
        wid = request.path_params["workflow_id"]
        entry = by_id.get(wid)
        if entry is None:
            return osmo_error(400, f"Workflow {wid} is not found.", "DATABASE", wid)
        return entry

    async def token(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            body = None
        tok = body.get("token") if isinstance(body, dict) else None
        if not tok:
            tok = request.query_params.get("access_token")
        if not tok:
            return osmo_error(401, "Access token is invalid or expired.", "USER")
        expires_at = int(time.time()) + JWT_LIFETIME_S
        jwt = make_jwt(expires_at)
        state.tokens.add(jwt)
        return JSONResponse({"token": jwt, "expires_at": expires_at})

    def list_entry(query: dict[str, Any]) -> dict[str, Any]:
        status = str(query.get("status") or "")
        return {
            "user": query.get("submitted_by"),
            "name": query.get("name"),
            "workflow_uuid": query.get("uuid"),
            "submit_time": query.get("submit_time"),
            "start_time": query.get("start_time"),
            "end_time": query.get("end_time"),
            "queued_time": query.get("queued_time"),
            "duration": query.get("duration"),
            "status": status,
            "overview": query.get("overview"),
            "logs": query.get("logs"),
            "error_logs": query.get("logs") if status.startswith("FAILED") else None,
            "grafana_url": query.get("grafana_url"),
            "dashboard_url": query.get("dashboard_url"),
            "pool": query.get("pool"),
            "app_owner": query.get("app_owner"),
            "app_name": query.get("app_name"),
            "app_version": query.get("app_version"),
            "priority": query.get("priority"),
            "labels": query.get("labels") or {},
        }

    async def list_workflows(request: Request) -> Response:
        refused = denied(request)
        if refused is not None:
            return refused
        qp = request.query_params
        try:
            limit = int(qp.get("limit", "20"))
            offset = int(qp.get("offset", "0"))
        except ValueError:
            return osmo_error(400, "limit and offset must be integers", "USAGE")
        if limit > 1000 or limit < 1 or offset < 0:
            return osmo_error(400, "limit must be 1..1000 and offset >= 0", "USAGE")
        items = [list_entry(e.get("query") or {}) for e in entries]
        statuses = set(qp.getlist("statuses"))
        if statuses:
            items = [i for i in items if i["status"] in statuses]
        pools = set(qp.getlist("pools"))
        if pools and qp.get("all_pools", "false").lower() != "true":
            items = [i for i in items if i["pool"] in pools]
        users = set(qp.getlist("users"))
        if users:
            items = [i for i in items if i["user"] in users]
        name = qp.get("name")
        if name:
            items = [i for i in items if name in str(i["name"])]
        items.sort(
            key=lambda i: str(i.get("submit_time") or ""), reverse=qp.get("order", "DESC").upper() != "ASC"
        )
        page = items[offset : offset + limit]
        return JSONResponse({"workflows": page, "more_entries": offset + limit < len(items)})

    async def get_workflow(request: Request) -> Response:
        entry = find(request)
        return entry if isinstance(entry, Response) else JSONResponse(entry["query"])

    def stream(entry: dict[str, Any], text: str) -> Response:
        live = str((entry.get("query") or {}).get("status") or "") in ALIVE

        async def body() -> AsyncIterator[bytes]:
            if text:
                yield text.encode("utf-8")
            if live:
                # A live workflow's stream is a `tail -f`: nothing more arrives, it never ends.
                await asyncio.sleep(LIVE_STREAM_HOLD_S)

        return StreamingResponse(body(), media_type="text/plain; charset=utf-8")

    async def logs(request: Request) -> Response:
        entry = find(request)
        if isinstance(entry, Response):
            return entry
        text = entry.get("logs")
        task = request.query_params.get("task_name")
        if task:
            task_logs = entry.get("task_logs") or {}
            if isinstance(task_logs, dict) and task in task_logs:
                text = task_logs[task]
            elif text is not None:
                text = task_filter(text, task)
        if text is None:
            return osmo_error(500, "Internal server error: logs are unavailable")
        try:
            n = int(request.query_params.get("last_n_lines", "0") or 0)
        except ValueError:
            return osmo_error(400, "last_n_lines must be an integer", "USAGE")
        return stream(entry, tail_lines(text, n) if n > 0 else text)

    async def events(request: Request) -> Response:
        entry = find(request)
        if isinstance(entry, Response):
            return entry
        text = entry.get("events")
        if text is None:
            return osmo_error(500, "Internal server error: events are unavailable")
        task = request.query_params.get("task_name")
        return stream(entry, task_filter(text, task, events=True) if task else text)

    async def spec(request: Request) -> Response:
        entry = find(request)
        if isinstance(entry, Response):
            return entry
        template = request.query_params.get("use_template", "false").lower() == "true"
        text = entry.get("spec_template") if template else entry.get("spec", entry.get("spec_template"))
        if text is None:
            return osmo_error(500, "Internal server error: spec is unavailable")
        return stream(entry, text)

    def tasks_of(entry: dict[str, Any]) -> list[dict[str, Any]]:
        query = entry.get("query") or {}
        if isinstance(entry.get("tasks"), list):
            out = [dict(t) for t in entry["tasks"] if isinstance(t, dict)]
        else:
            out = spec_tasks(entry.get("spec_template"))
        live = {t.get("name"): t for g in query.get("groups") or [] for t in g.get("tasks") or []}
        for item in out:
            name = item.get("task_name") or item.get("name")
            item.setdefault("task_name", name)
            item.setdefault("workflow_id", query.get("name"))
            item.setdefault("pool", query.get("pool"))
            task = live.get(name) or {}
            item.setdefault("status", task.get("status"))
            item.setdefault("retry_id", task.get("retry_id", 0))
            item.setdefault("node", task.get("node_name"))
            item.setdefault("start_time", task.get("start_time"))
            item.setdefault("end_time", task.get("end_time"))
        return out

    async def list_tasks(request: Request) -> Response:
        refused = denied(request)
        if refused is not None:
            return refused
        wid = request.query_params.get("workflow_id")
        chosen = [by_id[wid]] if wid and wid in by_id else ([] if wid else entries)
        items = [t for e in chosen for t in tasks_of(e)]
        statuses = set(request.query_params.getlist("statuses"))
        if statuses:
            items = [t for t in items if t.get("status") in statuses]
        return JSONResponse({"tasks": items})

    async def get_task(request: Request) -> Response:
        entry = find(request)
        if isinstance(entry, Response):
            return entry
        name = request.path_params["task_name"]
        task = next((t for t in tasks_of(entry) if t.get("task_name") == name), None)
        if task is None:
            wid = request.path_params["workflow_id"]
            return osmo_error(400, f"Task {name} of workflow {wid} is not found.", "DATABASE", wid)
        return JSONResponse(task)

    def wanted_pools(request: Request) -> set[str] | None:
        pools = set(request.query_params.getlist("pools"))
        if not pools or request.query_params.get("all_pools", "false").lower() == "true":
            return None
        return pools

    def section(key: str, what: str) -> Any:
        """A handler serving ``osmo[key]`` to an authorized caller (500 when null), filtered by ``pools``."""

        def wrap(render: Any) -> Any:
            async def handler(request: Request) -> Response:
                refused = denied(request)
                if refused is not None:
                    return refused
                data = osmo.get(key)
                if data is None:
                    return osmo_error(500, f"Internal server error: {what} unavailable")
                return JSONResponse(render(data, wanted_pools(request)))

            return handler

        return wrap

    @section("pool_quota", "pool quota is")
    def pool_quota(data: dict[str, Any], pools: set[str] | None) -> dict[str, Any]:
        if pools is None:
            return data
        node_sets = []
        for ns in data.get("node_sets") or []:
            kept = [p for p in ns.get("pools") or [] if p.get("name") in pools]
            if kept:
                node_sets.append({**ns, "pools": kept})
        return {**data, "node_sets": node_sets}

    @section("pool_quota", "pools are")
    def pool_list(data: dict[str, Any], pools: set[str] | None) -> dict[str, Any]:
        out = {
            p["name"]: {k: v for k, v in p.items() if k != "resource_usage"}
            for ns in data.get("node_sets") or []
            for p in ns.get("pools") or []
            if p.get("name") and (pools is None or p["name"] in pools)
        }
        return {"pools": out}

    def node_pools(node: dict[str, Any]) -> set[str]:
        names = set((node.get("platform_allocatable_fields") or {}).keys())
        names |= set((node.get("pool_platform_labels") or {}).keys())
        raw = (node.get("exposed_fields") or {}).get("pool/platform") or []
        names |= {str(item).split("/", 1)[0] for item in ([raw] if isinstance(raw, str) else raw)}
        return names

    @section("resources", "resources are")
    def resources(data: dict[str, Any], pools: set[str] | None) -> dict[str, Any]:
        nodes = data.get("resources") or []
        if pools is not None:
            nodes = [n for n in nodes if node_pools(n) & pools]
        return {**data, "resources": nodes}

    wf = "/api/workflow/{workflow_id}"
    return [
        Route("/api/auth/jwt/access_token", token, methods=["POST"]),
        Route("/api/workflow", list_workflows, methods=["GET"]),
        Route(wf, get_workflow, methods=["GET"]),
        Route(wf + "/logs", logs, methods=["GET"]),
        Route(wf + "/events", events, methods=["GET"]),
        Route(wf + "/spec", spec, methods=["GET"]),
        Route(wf + "/task/{task_name}", get_task, methods=["GET"]),
        Route("/api/task", list_tasks, methods=["GET"]),
        Route("/api/pool_quota", pool_quota, methods=["GET"]),
        Route("/api/pool", pool_list, methods=["GET"]),
        Route("/api/resources", resources, methods=["GET"]),
    ]
