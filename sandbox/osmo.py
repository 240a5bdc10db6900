"""Sandbox routes of the OSMO service (FORMAT.md ``osmo``; shapes in ``reference/osmo-api.md``).

- ``POST /api/auth/jwt/access_token`` ``{"token": …}`` -> ``{"token": <JWT-like>, "expires_at": <epoch s>}``
  (300 s, like ``ACCESS_TOKEN_TIMEOUT``); every other route needs ``Authorization: Bearer <that JWT>``.
- ``GET /api/workflow``: list entries built from the ``query`` objects, newest ``submit_time`` first
  (``order=ASC`` reverses), honouring ``statuses``, ``pools``/``all_pools``, ``users``, ``limit`` (<= 1000),
  ``offset``; ``more_entries`` when more remain.
- ``GET /api/workflow/{id}``: the ``query``; an unknown ID answers 400 ``DATABASE``
  "Workflow <id> is not found.". Without ``verbose=true`` each task is listed once (its highest ``retry_id``);
  with it, every retry the ``query`` holds (osmo-api.md §3).
- ``GET /api/workflow/{id}/error_logs?task_name=T[&retry_id=N]``: from the entry's optional ``error_logs`` map
  (``{"<task>": text}`` or ``{"<task> retry-<n>": text}``; a task it lacks answers 400 ``USER``); without the
  map, the task's log stands in for its error log.
- ``GET /api/workflow/{id}/logs|events|spec``: ``text/plain`` streams of ``logs`` (``task_logs`` or a
  ``[task]`` filter with ``task_name``; ``last_n_lines`` tail), ``events`` (``task_name`` filter, wrapped
  messages kept with their event) and ``spec_template``. ``null`` answers 500. ``last_n_lines`` behaves
  like the real service's: absent or 0 streams the whole log; negative answers 400 ``USER``; not an
  integer answers 422 (``HTTPValidationError``); **at or above** ``max_log_lines`` (the optional
  ``osmo.max_log_lines`` of the snapshot, else :data:`MAX_LOG_LINES`) it is ignored and the whole log
  is streamed from the start; below it, the last N lines. For a live workflow
  (PENDING/RUNNING/WAITING) the stream stays open after the text, sending nothing, until the client
  disconnects or :data:`LIVE_STREAM_HOLD_S` pass (a real live stream never ends).
- ``GET /api/task`` and ``GET /api/workflow/{id}/task/{name}``: from the entry's ``tasks`` list, else derived
  from ``spec_template`` (``resource: <name>`` selects ``resources.<name>``, else ``resources.default``).
- ``GET /api/pool_quota``, ``GET /api/pool`` and ``GET /api/resources`` honour ``pools``;
  ``null`` answers 500.

Where FORMAT.md is silent the service's OpenAPI spec (``shared/reference/specs/osmo-openapi.json``) and
``osmo-api.md`` §2 "Server defaults" decide: ``order`` defaults to ``ASC`` and is ``ASC``/``DESC``; booleans,
integers and enums that do not parse answer FastAPI's 422; ``GET /api/workflow`` and ``GET /api/task`` list
only the caller's own workflows without ``users`` or ``all_users=true`` (the sandbox's caller,
:data:`CALLER`, submits nothing) and answer 400 "No pool selected!" without ``pools`` or ``all_pools=true``
(the caller has no default pool); ``GET /api/task`` pages (``limit`` defaults to 20); ``all_pools`` defaults
to ``true`` for ``/api/pool_quota`` and ``/api/pool`` (``pools`` then filter only with ``all_pools=false``)
and to ``false`` for ``/api/resources``; the token exchange reads its JSON body (``{"token": …}``) only.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import secrets
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import yaml
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from sandbox.routes import SandboxState

ALIVE = frozenset({"PENDING", "RUNNING", "WAITING"})
#: The service's default ``max_log_lines`` config: a ``last_n_lines`` at or above it is ignored.
MAX_LOG_LINES = 10_000
LIVE_STREAM_HOLD_S = 60.0
JWT_LIFETIME_S = 300
_EVENT_START = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}")
#: The sandbox's caller (the token owner, the JWT's ``sub``): it submitted nothing and has no default pool.
CALLER = "sandbox"
#: What FastAPI reads as a boolean query value.
_TRUE, _FALSE = frozenset({"true", "1", "yes", "on"}), frozenset({"false", "0", "no", "off"})
#: ``WorkflowStatus`` and ``TaskGroupStatus`` of the spec (the ``statuses`` filters).
WORKFLOW_STATUSES = frozenset({
    "PENDING", "RUNNING", "WAITING", "COMPLETED", "FAILED", "FAILED_SUBMISSION", "FAILED_SERVER_ERROR",
    "FAILED_EXEC_TIMEOUT", "FAILED_QUEUE_TIMEOUT", "FAILED_CANCELED", "FAILED_BACKEND_ERROR", "FAILED_IMAGE_PULL",
    "FAILED_EVICTED", "FAILED_START_ERROR", "FAILED_START_TIMEOUT", "FAILED_PREEMPTED",
})  # fmt: skip


def osmo_error(
    status: int, message: str, error_code: str | None = None, workflow_id: str | None = None
) -> JSONResponse:
    """The OSMO error body (§8): ``{"message", "error_code", "workflow_id"}``; 500s carry only ``message``."""
    body: dict[str, Any] = {"message": message}
    if error_code is not None:
        body.update({"error_code": error_code, "workflow_id": workflow_id})
    return JSONResponse(body, status_code=status)


def validation_error(loc: list[str | int], msg: str, kind: str, value: Any) -> JSONResponse:
    """FastAPI's 422 ``HTTPValidationError`` body: ``{"detail": [{"loc", "msg", "type", "input"}]}``."""
    return JSONResponse({"detail": [{"loc": loc, "msg": msg, "type": kind, "input": value}]}, status_code=422)


class Refused(Exception):
    """A request the service refuses (a 422 for a value that does not parse, a 400 ``USER``)."""

    def __init__(self, response: Response) -> None:
        super().__init__()
        self.response = response


def query_bool(request: Request, name: str, default: bool) -> bool:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if raw.lower() in _TRUE | _FALSE:
        return raw.lower() in _TRUE
    raise Refused(validation_error(["query", name], "Input should be a valid boolean", "bool_parsing", raw))


def query_int(request: Request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        msg = "Input should be a valid integer, unable to parse string as an integer"
        raise Refused(validation_error(["query", name], msg, "int_parsing", raw)) from None


def query_desc(request: Request) -> bool:
    """``order`` (``ListOrder``: ``ASC``, the default, or ``DESC``) -> descending?"""
    raw = request.query_params.get("order", "ASC")
    if raw not in ("ASC", "DESC"):
        raise Refused(validation_error(["query", "order"], "Input should be 'ASC' or 'DESC'", "enum", raw))
    return raw == "DESC"


def scoped(
    request: Request, items: list[dict[str, Any]], user_of: Callable[[dict[str, Any]], Any]
) -> list[dict[str, Any]]:
    """``items`` as the list endpoints scope them (osmo-api.md §2 "Server defaults"): the named ``users``, else
    everyone's with ``all_users=true``, else the caller's own; the named ``pools`` (unless ``all_pools=true``),
    everything with ``all_pools=true``, else 400 "No pool selected!" (the caller has no default pool)."""
    users = set(request.query_params.getlist("users"))
    if users:
        items = [i for i in items if user_of(i) in users]
    elif not query_bool(request, "all_users", False):
        items = [i for i in items if user_of(i) == CALLER]
    pools = set(request.query_params.getlist("pools"))
    all_pools = query_bool(request, "all_pools", False)
    if not pools and not all_pools:
        raise Refused(osmo_error(400, "No pool selected!", "USER"))
    if pools and not all_pools:
        items = [i for i in items if i.get("pool") in pools]
    return items


def refusing(handler: Any) -> Any:
    """``handler`` answering :class:`Refused`'s response."""

    async def wrapped(request: Request) -> Response:
        try:
            response: Response = await handler(request)
        except Refused as exc:
            return exc.response
        return response

    return wrapped


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


def _list_entry(query: dict[str, Any]) -> dict[str, Any]:
    """A ``GET /api/workflow`` list entry from a workflow's ``query`` object."""
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


def _latest_retries(query: dict[str, Any]) -> dict[str, Any]:
    """``query`` with each group's tasks listed once, at their highest ``retry_id`` (osmo-api.md §3)."""
    query = dict(query)
    groups = []
    for group in query.get("groups") or []:
        if not isinstance(group, dict):
            groups.append(group)
            continue
        latest: dict[str, dict[str, Any]] = {}
        for task in group.get("tasks") or []:
            if isinstance(task, dict):
                kept = latest.get(str(task.get("name")))
                if kept is None or int(task.get("retry_id") or 0) > int(kept.get("retry_id") or 0):
                    latest[str(task.get("name"))] = task
        groups.append({**group, "tasks": [t for t in group.get("tasks") or [] if t in latest.values()]})
    query["groups"] = groups
    return query


def _stream(entry: dict[str, Any], text: str) -> Response:
    """``text`` as a ``text/plain`` stream, held open afterwards for a live workflow."""
    live = str((entry.get("query") or {}).get("status") or "") in ALIVE

    async def body() -> AsyncIterator[bytes]:
        if text:
            yield text.encode("utf-8")
        if live:
            # A live workflow's stream is a `tail -f`: nothing more arrives, it never ends.
            await asyncio.sleep(LIVE_STREAM_HOLD_S)

    return StreamingResponse(body(), media_type="text/plain; charset=utf-8")


def _stand_in_error_log(entry: dict[str, Any], task: str) -> str:
    """The task's log, standing in for its stderr when the snapshot has no ``error_logs`` map (an approximation)."""
    logs = entry.get("task_logs") or {}
    text = logs.get(task) if isinstance(logs, dict) else None
    if text is None and entry.get("logs") is not None:
        text = task_filter(str(entry.get("logs")), task)
    return str(text or "")


def _log_text(entry: dict[str, Any], task: str | None) -> str | None:
    """The entry's log, or the task's (its ``task_logs`` text, else its lines of the whole log)."""
    text = entry.get("logs")
    if task:
        task_logs = entry.get("task_logs") or {}
        if isinstance(task_logs, dict) and task in task_logs:
            text = task_logs[task]
        elif text is not None:
            text = task_filter(text, task)
    return text


def _tail_length(request: Request, osmo: dict[str, Any]) -> int | Response:
    """``last_n_lines`` as the service reads it (0: the whole log), or the refusal of a bad value."""
    raw = request.query_params.get("last_n_lines")
    try:
        n = int(raw) if raw not in (None, "") else 0
    except ValueError:
        return validation_error(
            ["query", "last_n_lines"],
            "Input should be a valid integer, unable to parse string as an integer",
            "int_parsing",
            raw,
        )
    if n < 0:
        return osmo_error(400, "Users should specify positive value for flag -n.", "USER")
    configured = osmo.get("max_log_lines")
    max_lines = configured if isinstance(configured, int) else MAX_LOG_LINES
    if n >= max_lines:
        n = 0  # the service ignores a tail at or above its max_log_lines: the whole log, from the start
    return n


def _tasks_of(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The entry's tasks (its ``tasks`` list, else derived from ``spec_template``), with the live task fields."""
    query = entry.get("query") or {}
    if isinstance(entry.get("tasks"), list):
        out = [dict(t) for t in entry["tasks"] if isinstance(t, dict)]
    else:
        out = spec_tasks(entry.get("spec_template"))
    live = {
        t.get("name"): t
        for g in query.get("groups") or []
        if isinstance(g, dict)
        for t in g.get("tasks") or []
        if isinstance(t, dict)
    }
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


def _wanted_pools(request: Request, all_pools_default: bool) -> set[str] | None:
    """The ``pools`` to keep, or None for all of them (``all_pools``, whose spec default is given)."""
    all_pools = query_bool(request, "all_pools", all_pools_default)
    pools = set(request.query_params.getlist("pools"))
    return None if all_pools or not pools else pools


def _pool_quota_view(data: dict[str, Any], pools: set[str] | None) -> dict[str, Any]:
    """``GET /api/pool_quota``: the node sets with only the wanted pools (sets left empty dropped)."""
    if pools is None:
        return data
    node_sets = []
    for ns in data.get("node_sets") or []:
        if not isinstance(ns, dict):
            continue
        kept = [p for p in ns.get("pools") or [] if isinstance(p, dict) and p.get("name") in pools]
        if kept:
            node_sets.append({**ns, "pools": kept})
    return {**data, "node_sets": node_sets}


def _pool_list_view(data: dict[str, Any], pools: set[str] | None) -> dict[str, Any]:
    """``GET /api/pool``: ``{"pools": {name: pool without its resource_usage}}`` from the pool quota."""
    out = {
        p["name"]: {k: v for k, v in p.items() if k != "resource_usage"}
        for ns in data.get("node_sets") or []
        if isinstance(ns, dict)
        for p in ns.get("pools") or []
        if isinstance(p, dict) and p.get("name") and (pools is None or p["name"] in pools)
    }
    return {"pools": out}


def _node_pools(node: Any) -> set[str]:
    """The pools a ``/api/resources`` node belongs to."""
    if not isinstance(node, dict):
        return set()
    names: set[str] = set()
    for key in ("platform_allocatable_fields", "pool_platform_labels"):
        if isinstance(node.get(key), dict):
            names |= set(node[key])
    exposed = node.get("exposed_fields")
    raw = exposed.get("pool/platform") if isinstance(exposed, dict) else None
    items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
    names |= {item.split("/", 1)[0] for item in items if isinstance(item, str)}
    return names


def _resources_view(data: dict[str, Any], pools: set[str] | None) -> dict[str, Any]:
    """``GET /api/resources``: the nodes of the wanted pools."""
    nodes = data.get("resources") or []
    if pools is not None:
        nodes = [n for n in nodes if _node_pools(n) & pools]
    return {**data, "resources": nodes}


#: How a pool-filtered section is served: (its snapshot data, the wanted pools or None for all) -> the body.
SectionView = Callable[[dict[str, Any], set[str] | None], dict[str, Any]]


class _OsmoApi:
    """The OSMO handlers over one snapshot's ``osmo`` section: its workflow entries, found by name or UUID."""

    def __init__(self, state: SandboxState, osmo: dict[str, Any]) -> None:
        self.state = state
        self.osmo = osmo
        self.entries: list[dict[str, Any]] = [e for e in osmo.get("workflows") or [] if isinstance(e, dict)]
        self.by_id: dict[str, dict[str, Any]] = {}
        for entry in self.entries:
            query = entry.get("query") or {}
            for key in (query.get("name"), query.get("uuid")):
                if key:
                    self.by_id[str(key)] = entry

    def denied(self, request: Request) -> Response | None:
        if not self.state.authorized(request):
            return JSONResponse({"message": "Jwt is missing"}, status_code=401)
        return None

    def find(self, request: Request) -> dict[str, Any] | Response:
        """The entry of the path's ``workflow_id`` (or the refusal: unauthorized, unknown workflow)."""
        refused = self.denied(request)
        if refused is not None:
            return refused
        wid = request.path_params["workflow_id"]
        entry = self.by_id.get(wid)
        if entry is None:
            return osmo_error(400, f"Workflow {wid} is not found.", "DATABASE", wid)
        return entry

    async def token(self, request: Request) -> Response:
        # POST takes the token in its JSON body only (``TokenRequest``; the query form is the GET variant's).
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or "token" not in body:
            return validation_error(["body", "token"], "Field required", "missing", body)
        tok = body.get("token")
        if not tok:
            return osmo_error(401, "Access token is invalid or expired.", "USER")
        expires_at = int(time.time()) + JWT_LIFETIME_S
        jwt = make_jwt(expires_at)
        self.state.tokens.add(jwt)
        return JSONResponse({"token": jwt, "expires_at": expires_at})

    async def list_workflows(self, request: Request) -> Response:
        refused = self.denied(request)
        if refused is not None:
            return refused
        qp = request.query_params
        limit, offset = query_int(request, "limit", 20), query_int(request, "offset", 0)
        if limit > 1000 or limit < 1 or offset < 0:
            return osmo_error(400, "limit must be 1..1000 and offset >= 0", "USAGE")
        desc = query_desc(request)
        statuses = set(qp.getlist("statuses"))
        if statuses - WORKFLOW_STATUSES:
            bad = sorted(statuses - WORKFLOW_STATUSES)[0]
            return validation_error(["query", "statuses", 0], "Input should be a WorkflowStatus", "enum", bad)
        items = scoped(request, [_list_entry(e.get("query") or {}) for e in self.entries], lambda i: i.get("user"))
        if statuses:
            items = [i for i in items if i["status"] in statuses]
        name = qp.get("name")
        if name:
            items = [i for i in items if name in str(i["name"])]
        items.sort(key=lambda i: str(i.get("submit_time") or ""), reverse=desc)
        page = items[offset : offset + limit]
        return JSONResponse({"workflows": page, "more_entries": offset + limit < len(items)})

    async def get_workflow(self, request: Request) -> Response:
        entry = self.find(request)
        if isinstance(entry, Response):
            return entry
        if request.query_params.get("verbose", "false").lower() == "true":
            return JSONResponse(entry["query"])
        # Without verbose=true only the latest retry of each task is listed (osmo-api.md §3).
        return JSONResponse(_latest_retries(entry["query"]))

    async def error_logs(self, request: Request) -> Response:
        """``GET /api/workflow/{id}/error_logs?task_name=T[&retry_id=N]`` from the entry's optional ``error_logs``
        map (``{"<task>": text}`` or ``{"<task> retry-<n>": text}``); without it, the task's log."""
        entry = self.find(request)
        if isinstance(entry, Response):
            return entry
        task = request.query_params.get("task_name") or ""
        retry = request.query_params.get("retry_id")
        texts = entry.get("error_logs")
        if not isinstance(texts, dict):
            return _stream(entry, _stand_in_error_log(entry, task))
        text = texts.get(f"{task} retry-{retry}") if retry is not None else None
        text = text if text is not None else texts.get(task)
        if text is None:
            return osmo_error(400, f"No error logs for task {task}.", "USER")
        return _stream(entry, str(text))

    async def logs(self, request: Request) -> Response:
        entry = self.find(request)
        if isinstance(entry, Response):
            return entry
        text = _log_text(entry, request.query_params.get("task_name"))
        if text is None:
            return osmo_error(500, "Internal server error: logs are unavailable")
        n = _tail_length(request, self.osmo)
        if isinstance(n, Response):
            return n
        return _stream(entry, tail_lines(text, n) if n > 0 else text)

    async def events(self, request: Request) -> Response:
        entry = self.find(request)
        if isinstance(entry, Response):
            return entry
        text = entry.get("events")
        if text is None:
            return osmo_error(500, "Internal server error: events are unavailable")
        task = request.query_params.get("task_name")
        return _stream(entry, task_filter(text, task, events=True) if task else text)

    async def spec(self, request: Request) -> Response:
        entry = self.find(request)
        if isinstance(entry, Response):
            return entry
        template = request.query_params.get("use_template", "false").lower() == "true"
        text = entry.get("spec_template") if template else entry.get("spec", entry.get("spec_template"))
        if text is None:
            return osmo_error(500, "Internal server error: spec is unavailable")
        return _stream(entry, text)

    async def list_tasks(self, request: Request) -> Response:
        refused = self.denied(request)
        if refused is not None:
            return refused
        wid = request.query_params.get("workflow_id")
        limit, offset = query_int(request, "limit", 20), query_int(request, "offset", 0)
        desc = query_desc(request)
        chosen = [self.by_id[wid]] if wid and wid in self.by_id else ([] if wid else self.entries)
        pairs = [(task, (e.get("query") or {}).get("submitted_by")) for e in chosen for task in _tasks_of(e)]
        owner = {id(task): user for task, user in pairs}
        items = scoped(request, [task for task, _ in pairs], lambda task: owner[id(task)])
        statuses = set(request.query_params.getlist("statuses"))
        if statuses:
            items = [t for t in items if t.get("status") in statuses]
        if desc:
            items.reverse()
        return JSONResponse({"tasks": items[offset : offset + limit]})

    async def get_task(self, request: Request) -> Response:
        entry = self.find(request)
        if isinstance(entry, Response):
            return entry
        name = request.path_params["task_name"]
        task = next((t for t in _tasks_of(entry) if t.get("task_name") == name), None)
        if task is None:
            wid = request.path_params["workflow_id"]
            return osmo_error(400, f"Task {name} of workflow {wid} is not found.", "DATABASE", wid)
        return JSONResponse(task)

    def section(self, key: str, what: str, render: SectionView, all_pools_default: bool = False) -> Any:
        """A handler serving ``osmo[key]`` through ``render`` to an authorized caller (500 when null), filtered
        by ``pools`` (unless ``all_pools``, whose spec default is ``all_pools_default``)."""

        async def handler(request: Request) -> Response:
            refused = self.denied(request)
            if refused is not None:
                return refused
            data = self.osmo.get(key)
            if data is None:
                return osmo_error(500, f"Internal server error: {what} unavailable")
            return JSONResponse(render(data, _wanted_pools(request, all_pools_default)))

        return handler


def routes(state: SandboxState) -> list[BaseRoute]:
    """The route table of the OSMO service (none when the snapshot has no ``osmo`` section)."""
    osmo = state.snapshot.get("osmo")
    if not isinstance(osmo, dict):
        return []
    api = _OsmoApi(state, osmo)
    pool_quota = api.section("pool_quota", "pool quota is", _pool_quota_view, all_pools_default=True)
    pool_list = api.section("pool_quota", "pools are", _pool_list_view, all_pools_default=True)
    resources = api.section("resources", "resources are", _resources_view)
    wf = "/api/workflow/{workflow_id}"
    return [
        Route("/api/auth/jwt/access_token", api.token, methods=["POST"]),
        Route("/api/workflow", refusing(api.list_workflows), methods=["GET"]),
        Route(wf, api.get_workflow, methods=["GET"]),
        Route(wf + "/logs", api.logs, methods=["GET"]),
        Route(wf + "/error_logs", api.error_logs, methods=["GET"]),
        Route(wf + "/events", api.events, methods=["GET"]),
        Route(wf + "/spec", api.spec, methods=["GET"]),
        Route(wf + "/task/{task_name}", api.get_task, methods=["GET"]),
        Route("/api/task", refusing(api.list_tasks), methods=["GET"]),
        Route("/api/pool_quota", refusing(pool_quota), methods=["GET"]),
        Route("/api/pool", refusing(pool_list), methods=["GET"]),
        Route("/api/resources", refusing(resources), methods=["GET"]),
    ]
