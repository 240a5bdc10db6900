"""Sandbox routes of the Run:ai control plane (FORMAT.md ``runai``).

Where FORMAT.md is silent the 2.24 OpenAPI spec (``shared/reference/specs``) decides:

- ``runai.control_plane_version`` (optional, default ``"2.24"``) picks the login the control plane
  offers: 2.24+ answers ``POST /api/v2/token`` (OAuth2 form) and ``POST /api/v1/token``; before 2.24
  ``/api/v2/token`` answers 404 and the v1 reply has no ``expiresIn``; before 2.20 v1 refuses
  ``grantType: client_credentials`` (400) and takes only ``app_token``. v1 bodies are read with the
  spec's field names (``clientID``/``clientSecret``, ``appID``/``appSecret``).
- A pod with ``deletedAt`` set is listed only with ``deleted=true`` (and then only such pods), as the
  real pods endpoint does for deleted or cleaned-up workloads.
- A workload with ``sourceApi: "WorkloadsV2"`` has its spec at ``GET /api/v2/workloads/{id}``
  (``{"workload": {"metadata", "desiredPhase", ...}}``; a v1-shaped ``spec`` entry is wrapped).
- ``null`` items of pods, history, events and measurements are served as they are.
- Query parameters are held to the spec (400 ``"<param>: ..."`` otherwise): ``offset`` an integer and
  ``limit`` 1..500; ``filterBy`` one comma-separated value (``explode: false``) of terms on the fields the
  spec's pattern lists for that endpoint, with its operators (dates only ``==``, ``!=``, ``<=``, ``>=``,
  with an RFC 3339 value); ``sortBy`` one of the spec's fields and ``sortOrder`` ``asc``/``desc``;
  ``deleted`` ``true``/``false``; metrics ``metricType`` one comma-separated value of
  ``WorkloadMetricType`` names, ``start``/``end`` RFC 3339 date-times and ``numberOfSamples`` 0..1000.
- ``GET /api/v1/workloads/pods`` (every workload's pods, the spec's ``list_pods``) is served from the snapshot's
  workloads' ``pods`` lists (``workloadId``/``clusterId`` filled in from the workload where a snapshot leaves them
  out, as the real list always has them): ``filterBy`` on the ``PodsFilter`` fields (dates compared as instants,
  with every date operator), ``deleted`` as for one workload's pods, ``completed``, ``sortBy`` (``PodsSort``),
  ``offset``/``limit``, and ``verbosity=full`` adding ``workloadName``/``projectName`` from the workload
  (``brief``, the default, leaves them out). A captured snapshot's ``runai.other_pods`` (the pods of other
  workloads this listing returned, each naming its workload) are listed too, and nowhere else.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from sandbox.routes import SandboxState, json_error

SPEC_SEGMENTS = {
    "trainings": "Training",
    "workspaces": "Workspace",
    "distributed": "Distributed",
    "inferences": "Inference",
    "distributed-inferences": "DistributedInference",
}
_FILTER = re.compile(r"^([A-Za-z0-9]+)(==|!=|<=|>=|=@|!@|=\^|=\$)(.+)$")
#: The ``filterBy`` pattern fields (also the ``sortBy`` enum) of ``GET /api/v1/workloads`` in the 2.24 spec, and the
#: ones that are dates (``format: date-time`` in ``Workload``), numbers, of ``GET /api/v1/org-unit/projects``.
WORKLOAD_FIELDS = (
    "type", "name", "clusterId", "projectId", "projectName", "departmentId", "departmentName", "createdAt",
    "deletedAt", "submittedBy", "phase", "completedAt", "nodepool", "distributedFramework", "allocatedGPU",
    "idleGpus", "idleAllocatedGpus", "phaseUpdatedAt", "category", "totalPendingTimeSeconds",
    "totalRunningTimeSeconds", "priority", "priorityClassName", "guaranteedRuntimeEndsAt", "aiApplicationId",
    "aiApplicationName",
)  # fmt: skip
WORKLOAD_DATES = frozenset({"createdAt", "deletedAt", "completedAt", "phaseUpdatedAt", "guaranteedRuntimeEndsAt"})
PROJECT_FIELDS = (
    "name", "clusterId", "departmentId", "parentId", "parentName", "phase", "totalGpuQuota", "gpuAllocated",
    "createdAt", "avgGpuAllocation24h", "avgGpuUtilization24h", "avgGpuMemoryUtilization24h", "avgGpuAllocation7d",
    "avgGpuUtilization7d", "avgGpuMemoryUtilization7d", "avgGpuAllocation30d", "avgGpuUtilization30d",
    "avgGpuMemoryUtilization30d",
)  # fmt: skip
PROJECT_DATES = frozenset({"createdAt"})
#: The ``PodsFilter`` pattern fields (``GET /api/v1/workloads/pods``), its dates, and the ``PodsSort`` enum.
POD_FIELDS = (
    "clusterId", "workloadId", "revisionId", "nodeName", "currentNodepool", "createdAt", "completedAt", "deletedAt",
)  # fmt: skip
POD_DATES = frozenset({"createdAt", "completedAt", "deletedAt"})
#: A filter field whose pod field is spelled otherwise (the spec's pattern says ``currentNodepool``).
POD_FIELD_NAMES = {"currentNodepool": "currentNodePool"}
#: ``PodVerbosity``: ``full`` adds these fields of the pod's workload.
POD_VERBOSE_FIELDS = ("workloadName", "projectName")
DATE_OPERATORS = frozenset({"==", "!=", "<=", ">="})
#: ``WorkloadMetricType`` of the 2.24 spec.
METRIC_TYPES = frozenset({
    "GPU_UTILIZATION", "GPU_MEMORY_USAGE_BYTES", "GPU_MEMORY_REQUEST_BYTES", "CPU_USAGE_CORES", "CPU_REQUEST_CORES",
    "CPU_LIMIT_CORES", "CPU_MEMORY_USAGE_BYTES", "CPU_MEMORY_REQUEST_BYTES", "CPU_MEMORY_LIMIT_BYTES", "POD_COUNT",
    "RUNNING_POD_COUNT", "GPU_ALLOCATION", "NIM_NUM_REQUESTS_RUNNING", "NIM_NUM_REQUESTS_WAITING",
    "NIM_NUM_REQUEST_MAX", "NIM_REQUEST_SUCCESS_TOTAL", "NIM_REQUEST_FAILURE_TOTAL", "NIM_GPU_CACHE_USAGE_PERC",
    "NIM_TIME_TO_FIRST_TOKEN_SECONDS", "NIM_E2E_REQUEST_LATENCY_SECONDS",
    "NIM_TIME_TO_FIRST_TOKEN_SECONDS_PERCENTILES", "NIM_E2E_REQUEST_LATENCY_SECONDS_PERCENTILES",
    "NVLINK_BANDWIDTH_TOTAL",
})  # fmt: skip
#: RFC 3339 (``format: date-time``): a zone is required.
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
DEFAULT_VERSION = (2, 24)
#: ``TokenRequestGrantTypeEnum`` of the 2.24 spec; 2.18-2.19 lack client_credentials (and external_token_exchange).
V1_GRANTS = frozenset({"app_token", "client_credentials", "refresh_token", "exchange_token", "password"})


def control_plane_version(runai: dict[str, Any]) -> tuple[int, int]:
    """``runai.control_plane_version`` (``"2.19"``) as ``(2, 19)``; the default is 2.24."""
    raw = str(runai.get("control_plane_version") or "")
    m = re.match(r"^\s*(\d+)\.(\d+)", raw)
    return (int(m.group(1)), int(m.group(2))) if m else DEFAULT_VERSION


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace("Z", "+00:00").replace(" ", "T", 1)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class BadQuery(ValueError):
    """A query the spec does not allow (answered 400 with the message)."""


def _date_time(value: str | None) -> datetime | None:
    """An RFC 3339 date-time (a zone required), or None."""
    return _parse_time(value) if value and _DATE_TIME.match(value) else None


def _matches(
    item: dict[str, Any], expr: str, dates: frozenset[str] = frozenset(), names: dict[str, str] | None = None
) -> bool:
    """Whether ``item`` passes one ``filterBy`` term; a field of ``dates`` is compared as an instant with every
    operator (``2026-01-01T10:00:00+02:00`` equals ``2026-01-01T08:00:00Z``); ``names`` maps a filter field to the
    item's spelling of it."""
    m = _FILTER.match(expr)
    if not m:
        raise BadQuery(f"filterBy: {expr!r} is not <field><operator><value>")
    field, op, want = m.groups()
    have = item.get((names or {}).get(field, field))
    if field in dates:
        return _date_matches(have, op, want)
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


def _date_matches(have: Any, op: str, want: str) -> bool:
    """A date term (``==``, ``!=``, ``<=``, ``>=``; the value checked by :func:`_filters`) over instants; a date the
    item does not have (``null``) is unequal to every instant and neither before nor after one."""
    a, b = _parse_time(have), _parse_time(want)
    if a is None or b is None:
        return op == "!="
    return {"==": a == b, "!=": a != b, "<=": a <= b, ">=": a >= b}.get(op, False)


def _kind(workload_type: Any) -> str:
    """``Training``, ``training``, ``TrainingWorkload`` -> ``training``; ``InteractiveWorkload`` -> ``workspace``."""
    key = re.sub(r"[-_ ]", "", str(workload_type or "")).lower()
    key = key.removesuffix("workload") or key
    return "workspace" if key == "interactive" else key


def _created_at(event: Any) -> str:
    return str(event.get("createdAt") or "") if isinstance(event, dict) else ""


def _one(request: Request, name: str) -> str | None:
    """The value of a query parameter the spec gives once (``explode: false`` arrays too), or None."""
    values = request.query_params.getlist(name)
    if len(values) > 1:
        raise BadQuery(f"{name}: given {len(values)} times; the spec takes one (comma-separated) value")
    return values[0] if values else None


def _filters(request: Request, fields: tuple[str, ...], dates: frozenset[str]) -> list[str]:
    """The ``filterBy`` terms, each checked against the endpoint's spec pattern (fields, operators, dates)."""
    raw = _one(request, "filterBy")
    out: list[str] = []
    for term in raw.split(",") if raw is not None else []:
        m = _FILTER.match(term)
        if m is None:
            raise BadQuery(f"filterBy: {term!r} is not <field><operator><value>")
        name, op, value = m.groups()
        if name not in fields:
            raise BadQuery(f"filterBy: {name!r} is not a filterable field")
        if name in dates and (op not in DATE_OPERATORS or _date_time(value) is None):
            raise BadQuery(f"filterBy: {term!r}: dates take ==, !=, <= or >= and an ISO 8601 timestamp")
        out.append(term)
    return out


def _sort(request: Request, fields: tuple[str, ...], default: str = "asc") -> tuple[str | None, bool]:
    """(``sortBy`` or None, descending?) as the spec allows them."""
    sort_by = _one(request, "sortBy")
    if sort_by is not None and sort_by not in fields:
        raise BadQuery(f"sortBy: {sort_by!r} is not one of the allowed values")
    order = _one(request, "sortOrder") or default
    if order not in ("asc", "desc"):
        raise BadQuery(f"sortOrder: {order!r} is not one of asc, desc")
    return sort_by, order == "desc"


def _deleted(request: Request) -> bool:
    value = _one(request, "deleted")
    if value not in (None, "true", "false"):
        raise BadQuery(f"deleted: {value!r} is not a boolean")
    return value == "true"


def _int(request: Request, name: str, default: int, low: int | None = None, high: int | None = None) -> int:
    raw = _one(request, name)
    try:
        value = int(raw) if raw is not None else default
    except ValueError:
        raise BadQuery(f"{name}: {raw!r} is not an integer") from None
    if (low is not None and value < low) or (high is not None and value > high):
        raise BadQuery(f"{name}: {value} is outside {low}..{high}")
    return value


def _page(request: Request, items: list[Any], key: str) -> JSONResponse:
    offset = _int(request, "offset", 0, low=0)
    limit = _int(request, "limit", 50, low=1, high=500)
    page = items[offset : offset + limit]
    body: dict[str, Any] = {key: page}
    if offset + limit < len(items):
        body["next"] = offset + limit
    return JSONResponse(body)


def _v1_credentials_given(body: dict[str, Any], grant: Any) -> bool:
    """Whether a v1 token request carries its grant's credentials (the spec's field names)."""
    if grant == "client_credentials":
        return bool(body.get("clientID") and body.get("clientSecret"))
    if grant == "app_token":
        return bool(body.get("appID") and body.get("appSecret"))
    return False  # the product logs in with its service account only


def _history_events(entry: dict[str, Any]) -> list[Any]:
    """The events of a workload whose snapshot entry has no ``events``: those its history records carry."""
    history = entry.get("history") or []
    return [
        r["spec"]["event"]
        for r in history
        if isinstance(r, dict) and isinstance(r.get("spec"), dict) and r["spec"].get("event")
    ]


def _metric_window(request: Request) -> tuple[set[str], datetime, datetime] | Response:
    """The ``metricType`` names and the ``start``..``end`` window asked (400 when one is missing; a value the
    spec does not allow raises :class:`BadQuery`)."""
    raw_types, raw_start, raw_end = _one(request, "metricType"), _one(request, "start"), _one(request, "end")
    if not raw_types or raw_start is None or raw_end is None:
        return json_error(400, "Required parameter is missing")
    types = set(raw_types.split(","))
    unknown = sorted(types - METRIC_TYPES)
    if unknown:
        raise BadQuery(f"metricType: {', '.join(unknown)} is not one of the allowed values")
    start, end = _date_time(raw_start), _date_time(raw_end)
    if start is None or end is None:
        raise BadQuery("start and end must be RFC 3339 date-times")
    _int(request, "numberOfSamples", 20, low=0, high=1000)
    return types, start, end


def _measurements_in(data: dict[str, Any], types: set[str], start: datetime, end: datetime) -> list[Any]:
    """The measurements of the asked types with their values inside the window (``null`` items kept)."""
    out = []
    for m in data.get("measurements") or []:
        if not isinstance(m, dict):
            out.append(m)
            continue
        if m.get("type") not in types:
            continue
        values = []
        for v in m.get("values") or []:
            ts = _parse_time(v.get("timestamp")) if isinstance(v, dict) else None
            if ts is None or start <= ts <= end:
                values.append(v)
        out.append({**m, "values": values})
    return out


_NO_TIME = datetime.min.replace(tzinfo=UTC)


def _pod_sort_key(pod: Any, sort_by: str) -> tuple[datetime, str]:
    """A pod's place in a sorted list: its date as an instant (none first), or its field's text."""
    value = pod.get(POD_FIELD_NAMES.get(sort_by, sort_by)) if isinstance(pod, dict) else None
    if sort_by in POD_DATES:
        return _parse_time(value) or _NO_TIME, ""
    return _NO_TIME, "" if value is None else str(value)


def _listed_pod(pod: dict[str, Any], workload: dict[str, Any], full: bool) -> dict[str, Any]:
    """One pod as ``GET /api/v1/workloads/pods`` lists it: its workload's id and cluster where the snapshot leaves
    them out (the spec requires both), and ``workloadName``/``projectName`` only with ``verbosity=full``."""
    out = {k: v for k, v in pod.items() if k not in POD_VERBOSE_FIELDS}
    out.setdefault("workloadId", workload.get("id"))
    out.setdefault("clusterId", workload.get("clusterId"))
    if full:
        out["workloadName"] = workload.get("name")
        out["projectName"] = workload.get("projectName")
    return out


def _v2_spec(entry: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """A ``WorkloadsV2`` spec body: the snapshot's own, or a v1-shaped ``spec`` entry wrapped."""
    if "workload" in spec:
        return spec
    wl = entry["workload"]
    return {
        "workload": {
            "metadata": {"name": spec.get("name") or wl.get("name"), "projectId": wl.get("projectId")},
            "desiredPhase": spec.get("desiredPhase") or "Running",
            "workloadManifest": spec.get("spec") or {},
            "rawManifest": spec.get("spec") or {},
        }
    }


class _RunaiApi:
    """The Run:ai control-plane handlers over one snapshot's ``runai`` section."""

    def __init__(self, state: SandboxState, runai: dict[str, Any]) -> None:
        self.state = state
        self.runai = runai
        self.entries: list[dict[str, Any]] = runai.get("workloads") or []
        self.by_id = {e["workload"]["id"]: e for e in self.entries}
        #: ``other_pods`` (written by ``capture``, not a FORMAT.md key): pods of other workloads as
        #: ``GET /api/v1/workloads/pods?verbosity=full`` listed them, served by that listing alone
        self.other_pods: list[Any] = runai.get("other_pods") or []
        self.version = control_plane_version(runai)

    def guard(self, request: Request) -> Response | None:
        if not self.state.authorized(request):
            return json_error(401, "Issuer is not familiar.")
        return None

    def entry_or_404(self, request: Request) -> dict[str, Any] | Response:
        """The entry of the path's ``workload_id`` (or the refusal: unauthorized, unknown workload)."""
        denied = self.guard(request)
        if denied is not None:
            return denied
        entry = self.by_id.get(request.path_params["workload_id"])
        if entry is None:
            return json_error(404, "Resource id not found.")
        return entry

    async def token_v2(self, request: Request) -> Response:
        form = await request.form()  # read (and recorded) even when refused
        if self.version < (2, 24):
            return json_error(404, "Resource not found.")
        if form.get("grant_type") != "client_credentials":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        if not form.get("client_id") or not form.get("client_secret"):
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        return JSONResponse({"access_token": self.state.issue_token(), "token_type": "Bearer", "expires_in": 3600})

    async def token_v1(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return json_error(400, "Required parameter is missing")
        if not isinstance(body, dict):
            return json_error(400, "Required parameter is missing")
        grant = body.get("grantType")
        allowed = V1_GRANTS if self.version >= (2, 20) else V1_GRANTS - {"client_credentials"}
        if grant not in allowed:
            return json_error(400, f"grantType: value {grant!r} is not one of the allowed values")
        if not _v1_credentials_given(body, grant):
            return json_error(400, "Required parameter is missing")
        reply: dict[str, Any] = {"accessToken": self.state.issue_token(), "idToken": "", "refreshToken": ""}
        if self.version >= (2, 24):
            reply["expiresIn"] = 3600
        return JSONResponse(reply)

    async def list_workloads(self, request: Request) -> Response:
        denied = self.guard(request)
        if denied is not None:
            return denied
        deleted = _deleted(request)
        items = [e["workload"] for e in self.entries if bool(e["workload"].get("deletedAt")) == deleted]
        for expr in _filters(request, WORKLOAD_FIELDS, WORKLOAD_DATES):
            items = [w for w in items if _matches(w, expr)]
        sort_by, desc = _sort(request, WORKLOAD_FIELDS)
        if sort_by:
            items.sort(key=lambda w: str(w.get(sort_by) or ""), reverse=desc)
        return _page(request, items, "workloads")

    async def list_pods(self, request: Request) -> Response:
        """``GET /api/v1/workloads/pods``: the pods of every workload, filtered, sorted and paged as the spec says."""
        denied = self.guard(request)
        if denied is not None:
            return denied
        deleted = _deleted(request)
        filters = _filters(request, POD_FIELDS, POD_DATES)
        sort_by, desc = _sort(request, POD_FIELDS)
        verbosity = _one(request, "verbosity") or "brief"
        if verbosity not in ("brief", "full"):
            raise BadQuery(f"verbosity: {verbosity!r} is not one of brief, full")
        completed = _one(request, "completed")
        search = (_one(request, "search") or "").lower()
        items: list[Any] = []
        for entry in self.entries:
            for pod in entry.get("pods") or []:
                if not isinstance(pod, dict):
                    # served as it is (with the live pods, as one workload's list does), but it matches no filter
                    items += [] if filters or deleted else [pod]
                    continue
                if bool(pod.get("deletedAt")) != deleted:
                    continue
                items.append(_listed_pod(pod, entry["workload"], verbosity == "full"))
        for pod in self.other_pods:
            # other workloads' pods a capture read through this listing alone (their workloads were not read)
            if isinstance(pod, dict) and bool(pod.get("deletedAt")) == deleted:
                owner = {
                    "id": pod.get("workloadId"),
                    "clusterId": pod.get("clusterId"),
                    "name": pod.get("workloadName"),
                    "projectName": pod.get("projectName"),
                }
                items.append(_listed_pod(pod, owner, verbosity == "full"))
        for expr in filters:
            items = [p for p in items if isinstance(p, dict) and _matches(p, expr, POD_DATES, POD_FIELD_NAMES)]
        if completed in ("true", "false"):
            items = [p for p in items if isinstance(p, dict) and bool(p.get("completedAt")) == (completed == "true")]
        if search:
            items = [p for p in items if isinstance(p, dict) and search in str(p.get("name") or "").lower()]
        if sort_by:
            items.sort(key=lambda p: _pod_sort_key(p, sort_by), reverse=desc)
        return _page(request, items, "pods")

    async def get_workload(self, request: Request) -> Response:
        entry = self.entry_or_404(request)
        return entry if isinstance(entry, Response) else JSONResponse(entry["workload"])

    def sub_resource(self, key: str, envelope: str, *, null_status: int = 500) -> Any:
        """A handler paging the entry's ``key`` list (pods, history, events) under ``envelope``."""

        async def handler(request: Request) -> Response:
            entry = self.entry_or_404(request)
            if isinstance(entry, Response):
                return entry
            data: Any = _history_events(entry) if key == "events" and "events" not in entry else entry.get(key)
            if data is None:
                return json_error(null_status, "Something went wrong.")
            if key == "events":
                _, desc = _sort(request, (), default="desc")
                data = sorted(data, key=_created_at, reverse=desc)
            if key == "pods":
                # Deleted pods (deletedAt set) are listed only with deleted=true, and then only they are.
                deleted = _deleted(request)
                data = [p for p in data if (isinstance(p, dict) and bool(p.get("deletedAt"))) == deleted]
            return _page(request, list(data), envelope)

        return handler

    async def metrics(self, request: Request) -> Response:
        entry = self.entry_or_404(request)
        if isinstance(entry, Response):
            return entry
        data = entry.get("metrics")
        if data is None:
            return json_error(500, "Something went wrong.")
        window = _metric_window(request)
        if isinstance(window, Response):
            return window
        return JSONResponse({"measurements": _measurements_in(data, *window)})

    def spec_handler(self, segment: str) -> Any:
        """The handler of ``GET /api/v1/workloads/<segment>/{id}``: the spec of a workload of that kind."""

        async def spec(request: Request) -> Response:
            entry = self.entry_or_404(request)
            if isinstance(entry, Response):
                return entry
            if _kind(entry["workload"].get("type")) != _kind(SPEC_SEGMENTS[segment]) or entry.get("spec") is None:
                return json_error(404, "Resource id not found.")
            return JSONResponse(entry["spec"])

        return spec

    async def spec_v2(self, request: Request) -> Response:
        entry = self.entry_or_404(request)
        if isinstance(entry, Response):
            return entry
        spec = entry.get("spec")
        if entry["workload"].get("sourceApi") != "WorkloadsV2" or not isinstance(spec, dict):
            return json_error(404, "Resource id not found.")
        return JSONResponse(_v2_spec(entry, spec))

    async def clusters(self, request: Request) -> Response:
        denied = self.guard(request)
        return denied or JSONResponse(self.runai.get("clusters") or [])

    async def projects(self, request: Request) -> Response:
        denied = self.guard(request)
        if denied is not None:
            return denied
        items = list(self.runai.get("projects") or [])
        for expr in _filters(request, PROJECT_FIELDS, PROJECT_DATES):
            items = [p for p in items if _matches(p, expr)]
        sort_by, desc = _sort(request, PROJECT_FIELDS)
        if sort_by:
            items.sort(key=lambda p: str(p.get(sort_by) or ""), reverse=desc)
        return _page(request, items, "projects")


def routes(state: SandboxState) -> list[BaseRoute]:
    """The route table of the Run:ai control plane (none when the snapshot has no ``runai`` section)."""
    runai: dict[str, Any] | None = state.snapshot.get("runai")
    if not isinstance(runai, dict):
        return []
    api = _RunaiApi(state, runai)
    base = "/api/v1/workloads"
    return [
        Route("/api/v2/token", api.token_v2, methods=["POST"]),
        Route("/api/v1/token", api.token_v1, methods=["POST"]),
        Route(base, _checked(api.list_workloads), methods=["GET"]),
        # before ``{workload_id}``: "pods" is not a workload id
        Route(base + "/pods", _checked(api.list_pods), methods=["GET"]),
        *[
            Route(f"{base}/{segment}/{{workload_id}}", api.spec_handler(segment), methods=["GET"])
            for segment in SPEC_SEGMENTS
        ],
        Route(base + "/{workload_id}", api.get_workload, methods=["GET"]),
        Route(base + "/{workload_id}/pods", _checked(api.sub_resource("pods", "pods")), methods=["GET"]),
        Route(base + "/{workload_id}/history", _checked(api.sub_resource("history", "records")), methods=["GET"]),
        Route(base + "/{workload_id}/events", _checked(api.sub_resource("events", "events")), methods=["GET"]),
        Route(base + "/{workload_id}/metrics", _checked(api.metrics), methods=["GET"]),
        Route("/api/v2/workloads/{workload_id}", api.spec_v2, methods=["GET"]),
        Route("/api/v1/clusters", api.clusters, methods=["GET"]),
        Route("/api/v1/org-unit/projects", _checked(api.projects), methods=["GET"]),
    ]


def _checked(handler: Any) -> Any:
    """``handler`` answering 400 for a query the spec does not allow (:class:`BadQuery`)."""

    async def wrapped(request: Request) -> Response:
        try:
            response: Response = await handler(request)
        except BadQuery as exc:
            return json_error(400, str(exc))
        return response

    return wrapped
