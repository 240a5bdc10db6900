"""Sandbox routes of the cluster's Kubernetes API (FORMAT.md ``kubernetes``, Tier 2).

Absent ``kubernetes`` section: no routes (the product must act as if it had no Tier 2 credentials).
With ``kubernetes_by_cluster`` each cluster's section is served on its own, under
``/k8s/clusters/<uuid>`` (the server strips that prefix and names the cluster in the request scope),
accepting only that cluster's token; a cluster that is not listed has no API at all.
"""

from __future__ import annotations

import base64
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from sandbox.routes import CLUSTER_SCOPE_KEY, SandboxState


def status(code: int, reason: str, message: str) -> JSONResponse:
    """A Kubernetes ``Status`` failure body."""
    return JSONResponse(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "code": code,
        },
        status_code=code,
    )


class _Cluster:
    """One cluster's Kubernetes data (a FORMAT.md ``kubernetes`` section)."""

    def __init__(self, kube: dict[str, Any]) -> None:
        self.pods: list[dict[str, Any]] = kube.get("pods") or []
        self.events: list[dict[str, Any]] = kube.get("events") or []
        self.nodes: list[dict[str, Any]] = kube.get("nodes") or []
        self.logs: list[dict[str, Any]] = kube.get("logs") or []


def _find_pod(data: _Cluster, ns: str, name: str) -> dict[str, Any] | None:
    return next(
        (
            p
            for p in data.pods
            if p.get("metadata", {}).get("name") == name and p.get("metadata", {}).get("namespace", ns) == ns
        ),
        None,
    )


def _find_log(data: _Cluster, ns: str, name: str, container: str | None, previous: bool) -> dict[str, Any] | None:
    """The snapshot's log entry of the pod's container (any container when None), current or previous."""
    return next(
        (
            lg
            for lg in data.logs
            if lg.get("pod") == name
            and lg.get("namespace", ns) == ns
            and (container is None or lg.get("container") == container)
            and bool(lg.get("previous")) == previous
        ),
        None,
    )


def _log_body(entry: dict[str, Any], request: Request) -> bytes:
    """A log entry's bytes (``text_b64`` or ``text``), cut by ``tailLines`` then ``limitBytes``, as the API server
    does: ``limitBytes`` counts from the start of the tail, and lines end at ``\\n`` only (a progress bar's ``\\r``
    updates are one line)."""
    q = request.query_params
    if "text_b64" in entry:
        body = base64.b64decode(entry["text_b64"])
    else:
        body = str(entry.get("text") or "").encode("utf-8")
    tail = q.get("tailLines")
    if tail and tail.isdigit():
        start = len(body) - 1 if body.endswith(b"\n") else len(body)
        for _ in range(int(tail)):
            start = body.rfind(b"\n", 0, start)
            if start < 0:
                break
        body = body[start + 1 :] if int(tail) else b""
    limit = q.get("limitBytes")
    if limit and limit.isdigit():
        body = body[: int(limit)]
    return body


def _field_selector(request: Request) -> dict[str, str]:
    """The ``fieldSelector`` terms (``involvedObject.name=x,...``) as ``{field: value}``."""
    wanted: dict[str, str] = {}
    for part in request.query_params.get("fieldSelector", "").split(","):
        if "=" in part:
            k, _, v = part.partition("=")
            wanted[k.strip().rstrip("=")] = v.strip()
    return wanted


def _event_list(items: list[dict[str, Any]]) -> JSONResponse:
    return JSONResponse({"kind": "EventList", "apiVersion": "v1", "metadata": {}, "items": items})


class _KubeApi:
    """The Kubernetes API handlers: one lone cluster's data, or each cluster's of ``kubernetes_by_cluster``."""

    def __init__(self, state: SandboxState, clusters: dict[str, _Cluster], lone: _Cluster | None) -> None:
        self.state = state
        self.clusters = clusters
        self.lone = lone

    def resolve(self, request: Request) -> tuple[_Cluster | None, Response | None]:
        """The data this request asks (or the refusal): the lone cluster's, or its own cluster's."""
        if self.lone is not None:
            if not self.state.authorized(request):
                return None, status(401, "Unauthorized", "Unauthorized")
            return self.lone, None
        cluster = request.scope.get(CLUSTER_SCOPE_KEY)
        data = self.clusters.get(cluster) if isinstance(cluster, str) else None
        if data is None or not isinstance(cluster, str):
            return None, status(404, "NotFound", "the server could not find the requested resource")
        if not self.state.authorized_for(request, cluster):
            return None, status(401, "Unauthorized", "Unauthorized")
        return data, None

    async def get_pod(self, request: Request) -> Response:
        data, refused = self.resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        ns, name = request.path_params["ns"], request.path_params["name"]
        pod = _find_pod(data, ns, name)
        if pod is None:
            return status(404, "NotFound", f'pods "{name}" not found')
        return JSONResponse(pod)

    async def get_log(self, request: Request) -> Response:
        data, refused = self.resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        ns, name = request.path_params["ns"], request.path_params["name"]
        if _find_pod(data, ns, name) is None:
            return status(404, "NotFound", f'pods "{name}" not found')
        container = request.query_params.get("container")
        previous = request.query_params.get("previous", "false").lower() == "true"
        entry = _find_log(data, ns, name, container, previous)
        if entry is None:
            which = "previous terminated container" if previous else "container"
            return status(400, "BadRequest", f'{which} "{container}" in pod "{name}" not found')
        return Response(_log_body(entry, request), media_type="text/plain")

    async def list_events(self, request: Request) -> Response:
        data, refused = self.resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        ns = request.path_params["ns"]
        wanted = _field_selector(request)
        items = []
        for ev in data.events:
            if ev.get("metadata", {}).get("namespace", ns) != ns:
                continue
            obj = ev.get("involvedObject") or {}
            if "involvedObject.name" in wanted and obj.get("name") != wanted["involvedObject.name"]:
                continue
            items.append(ev)
        return _event_list(items)

    async def list_all_events(self, request: Request) -> Response:
        """``GET /api/v1/events`` (every namespace), honouring ``involvedObject.kind`` and ``.name`` selectors."""
        data, refused = self.resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        wanted = _field_selector(request)
        items = []
        for ev in data.events:
            obj = ev.get("involvedObject") or {}
            if "involvedObject.name" in wanted and obj.get("name") != wanted["involvedObject.name"]:
                continue
            if "involvedObject.kind" in wanted and obj.get("kind") != wanted["involvedObject.kind"]:
                continue
            items.append(ev)
        return _event_list(items)

    async def get_node(self, request: Request) -> Response:
        data, refused = self.resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        name = request.path_params["name"]
        node = next((n for n in data.nodes if n.get("metadata", {}).get("name") == name), None)
        if node is None:
            return status(404, "NotFound", f'nodes "{name}" not found')
        return JSONResponse(node)


def routes(state: SandboxState) -> list[BaseRoute]:
    """The route table of the Kubernetes API (none when the snapshot has neither Kubernetes section)."""
    by_cluster = state.kubernetes_by_cluster
    kube: dict[str, Any] | None = state.snapshot.get("kubernetes")
    if by_cluster is not None:
        clusters = {str(uuid): _Cluster(section) for uuid, section in by_cluster.items()}
        lone = None
    elif isinstance(kube, dict):
        clusters, lone = {}, _Cluster(kube)
    else:
        return []
    api = _KubeApi(state, clusters, lone)
    return [
        Route("/api/v1/namespaces/{ns}/pods/{name}/log", api.get_log, methods=["GET"]),
        Route("/api/v1/namespaces/{ns}/pods/{name}", api.get_pod, methods=["GET"]),
        Route("/api/v1/namespaces/{ns}/events", api.list_events, methods=["GET"]),
        Route("/api/v1/nodes/{name}", api.get_node, methods=["GET"]),
        Route("/api/v1/events", api.list_all_events, methods=["GET"]),
    ]
