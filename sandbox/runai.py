"""Sandbox routes of the Run:ai control plane (FORMAT.md ``runai``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from sandbox.server import SandboxState, json_error

SPEC_SEGMENTS = {
    "trainings": "Training",
    "workspaces": "Workspace",
    "distributed": "Distributed",
    "inferences": "Inference",
    "distributed-inferences": "DistributedInference",
}
_FILTER = re.compile(r"^([A-Za-z]+)(==|!=|<=|>=|=@|!@|=\^|=\$)(.*)$")


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace("Z", "+00:00").replace(" ", "T", 1)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _matches(item: dict[str, Any], expr: str) -> bool:
    m = _FILTER.match(expr)
    if not m:
        return True
    field, op, want = m.groups()
    have = item.get(field)
    text = "" if have is None else str(have)
    if op == "==":
        return text == want
    if op == "!=":
        return text != want
    if op == "=@":
        return want in text
    if op == "!@":
        return want not in text
    if op == "=^":
        return text.startswith(want)
    if op == "=$":
        return text.endswith(want)
    a, b = _parse_time(text), _parse_time(want)
    if a and b:
        return a <= b if op == "<=" else a >= b
    try:
        return float(text) <= float(want) if op == "<=" else float(text) >= float(want)
    except ValueError:
        return False


def _filters(request: Request) -> list[str]:
    out: list[str] = []
    for raw in request.query_params.getlist("filterBy"):
        out += [part for part in raw.split(",") if part]
    return out


def _page(request: Request, items: list[Any], key: str) -> JSONResponse:
    try:
        offset = int(request.query_params.get("offset", "0") or 0)
        limit = int(request.query_params.get("limit", "50") or 50)
    except ValueError:
        return json_error(400, "offset and limit must be integers")
    limit = max(1, min(limit, 500))
    page = items[offset : offset + limit]
    body: dict[str, Any] = {key: page}
    if offset + limit < len(items):
        body["next"] = offset + limit
    return JSONResponse(body)


def routes(state: SandboxState) -> list[BaseRoute]:
    runai: dict[str, Any] | None = state.snapshot.get("runai")
    if not isinstance(runai, dict):
        return []
    entries: list[dict[str, Any]] = runai.get("workloads") or []
    by_id = {e["workload"]["id"]: e for e in entries}

    def guard(request: Request) -> Response | None:
        if not state.authorized(request):
            return json_error(401, "Issuer is not familiar.")
        return None

    def entry_or_404(request: Request) -> dict[str, Any] | Response:
        denied = guard(request)
        if denied is not None:
            return denied
        entry = by_id.get(request.path_params["workload_id"])
        if entry is None:
            return json_error(404, "Resource id not found.")
        return entry

    async def token_v2(request: Request) -> Response:
        form = await request.form()
        if form.get("grant_type") != "client_credentials" or not form.get("client_id"):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        return JSONResponse({"access_token": state.issue_token(), "token_type": "Bearer", "expires_in": 3600})

    async def token_v1(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return json_error(400, "Required parameter is missing")
        if not isinstance(body, dict) or not (body.get("clientId") or body.get("clientID") or body.get("AppId")):
            return json_error(400, "Required parameter is missing")
        return JSONResponse({"accessToken": state.issue_token(), "expiresIn": 3600})

    async def list_workloads(request: Request) -> Response:
        denied = guard(request)
        if denied is not None:
            return denied
        deleted = request.query_params.get("deleted", "").lower() == "true"
        items = [e["workload"] for e in entries if bool(e["workload"].get("deletedAt")) == deleted]
        for expr in _filters(request):
            items = [w for w in items if _matches(w, expr)]
        sort_by = request.query_params.get("sortBy")
        if sort_by:
            desc = request.query_params.get("sortOrder", "asc") == "desc"
            items.sort(key=lambda w: str(w.get(sort_by) or ""), reverse=desc)
        return _page(request, items, "workloads")

    async def get_workload(request: Request) -> Response:
        entry = entry_or_404(request)
        return entry if isinstance(entry, Response) else JSONResponse(entry["workload"])

    def sub_resource(key: str, envelope: str, *, null_status: int = 500) -> Any:
        async def handler(request: Request) -> Response:
            entry = entry_or_404(request)
            if isinstance(entry, Response):
                return entry
            if key == "events" and "events" not in entry:
                history = entry.get("history") or []
                data: Any = [r["spec"]["event"] for r in history if (r.get("spec") or {}).get("event")]
            else:
                data = entry.get(key)
            if data is None:
                return json_error(null_status, "Something went wrong.")
            if key == "events":
                desc = request.query_params.get("sortOrder", "desc") == "desc"
                data = sorted(data, key=lambda e: str(e.get("createdAt") or ""), reverse=desc)
            return _page(request, list(data), envelope)

        return handler

    async def metrics(request: Request) -> Response:
        entry = entry_or_404(request)
        if isinstance(entry, Response):
            return entry
        data = entry.get("metrics")
        if data is None:
            return json_error(500, "Something went wrong.")
        types = {t for raw in request.query_params.getlist("metricType") for t in raw.split(",") if t}
        start = _parse_time(request.query_params.get("start"))
        end = _parse_time(request.query_params.get("end"))
        if not types or start is None or end is None:
            return json_error(400, "Required parameter is missing")
        out = []
        for m in data.get("measurements") or []:
            if m.get("type") not in types:
                continue
            values = []
            for v in m.get("values") or []:
                ts = _parse_time(v.get("timestamp"))
                if ts is None or start <= ts <= end:
                    values.append(v)
            out.append({**m, "values": values})
        return JSONResponse({"measurements": out})

    def spec_handler(segment: str) -> Any:
        async def spec(request: Request) -> Response:
            entry = entry_or_404(request)
            if isinstance(entry, Response):
                return entry
            if (entry["workload"].get("type") or "") != SPEC_SEGMENTS[segment] or entry.get("spec") is None:
                return json_error(404, "Resource id not found.")
            return JSONResponse(entry["spec"])

        return spec

    async def clusters(request: Request) -> Response:
        denied = guard(request)
        return denied or JSONResponse(runai.get("clusters") or [])

    async def projects(request: Request) -> Response:
        denied = guard(request)
        if denied is not None:
            return denied
        items = list(runai.get("projects") or [])
        for expr in _filters(request):
            items = [p for p in items if _matches(p, expr)]
        return _page(request, items, "projects")

    base = "/api/v1/workloads"
    return [
        Route("/api/v2/token", token_v2, methods=["POST"]),
        Route("/api/v1/token", token_v1, methods=["POST"]),
        Route(base, list_workloads, methods=["GET"]),
        *[
            Route(f"{base}/{segment}/{{workload_id}}", spec_handler(segment), methods=["GET"])
            for segment in SPEC_SEGMENTS
        ],
        Route(base + "/{workload_id}", get_workload, methods=["GET"]),
        Route(base + "/{workload_id}/pods", sub_resource("pods", "pods"), methods=["GET"]),
        Route(base + "/{workload_id}/history", sub_resource("history", "records"), methods=["GET"]),
        Route(base + "/{workload_id}/events", sub_resource("events", "events"), methods=["GET"]),
        Route(base + "/{workload_id}/metrics", metrics, methods=["GET"]),
        Route("/api/v1/clusters", clusters, methods=["GET"]),
        Route("/api/v1/org-unit/projects", projects, methods=["GET"]),
    ]
