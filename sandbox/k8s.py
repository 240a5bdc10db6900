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

from sandbox.server import CLUSTER_SCOPE_KEY, SandboxState


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


def routes(state: SandboxState) -> list[BaseRoute]:
    by_cluster = state.kubernetes_by_cluster
    kube: dict[str, Any] | None = state.snapshot.get("kubernetes")
    if by_cluster is not None:
        clusters = {str(uuid): _Cluster(section) for uuid, section in by_cluster.items()}
        lone = None
    elif isinstance(kube, dict):
        clusters, lone = {}, _Cluster(kube)
    else:
        return []

    def resolve(request: Request) -> tuple[_Cluster | None, Response | None]:
        """The data this request asks (or the refusal): the lone cluster's, or its own cluster's."""
        if lone is not None:
            if not state.authorized(request):
                return None, status(401, "Unauthorized", "Unauthorized")
            return lone, None
        cluster = request.scope.get(CLUSTER_SCOPE_KEY)
        data = clusters.get(cluster) if isinstance(cluster, str) else None
        if data is None or not isinstance(cluster, str):
            return None, status(404, "NotFound", "the server could not find the requested resource")
        if not state.authorized_for(request, cluster):
            return None, status(401, "Unauthorized", "Unauthorized")
        return data, None

    def find_pod(data: _Cluster, ns: str, name: str) -> dict[str, Any] | None:
        return next(
            (
                p
                for p in data.pods
                if p.get("metadata", {}).get("name") == name and p.get("metadata", {}).get("namespace", ns) == ns
            ),
            None,
        )

    async def get_pod(request: Request) -> Response:
        data, refused = resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        ns, name = request.path_params["ns"], request.path_params["name"]
        pod = find_pod(data, ns, name)
        if pod is None:
            return status(404, "NotFound", f'pods "{name}" not found')
        return JSONResponse(pod)

    async def get_log(request: Request) -> Response:
        data, refused = resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        ns, name = request.path_params["ns"], request.path_params["name"]
        if find_pod(data, ns, name) is None:
            return status(404, "NotFound", f'pods "{name}" not found')
        q = request.query_params
        container = q.get("container")
        previous = q.get("previous", "false").lower() == "true"
        entry = next(
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
        if entry is None:
            which = "previous terminated container" if previous else "container"
            return status(400, "BadRequest", f'{which} "{container}" in pod "{name}" not found')
        if "text_b64" in entry:
            body = base64.b64decode(entry["text_b64"])
        else:
            body = str(entry.get("text") or "").encode("utf-8")
        tail = q.get("tailLines")
        if tail and tail.isdigit():
            lines = body.splitlines(keepends=True)
            body = b"".join(lines[-int(tail) :]) if int(tail) else b""
        limit = q.get("limitBytes")
        if limit and limit.isdigit():
            body = body[: int(limit)]
        return Response(body, media_type="text/plain")

    async def list_events(request: Request) -> Response:
        data, refused = resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        ns = request.path_params["ns"]
        selector = request.query_params.get("fieldSelector", "")
        wanted: dict[str, str] = {}
        for part in selector.split(","):
            if "=" in part:
                k, _, v = part.partition("=")
                wanted[k.strip().rstrip("=")] = v.strip()
        items = []
        for ev in data.events:
            if ev.get("metadata", {}).get("namespace", ns) != ns:
                continue
            obj = ev.get("involvedObject") or {}
            if "involvedObject.name" in wanted and obj.get("name") != wanted["involvedObject.name"]:
                continue
            items.append(ev)
        return JSONResponse({"kind": "EventList", "apiVersion": "v1", "metadata": {}, "items": items})

    async def list_all_events(request: Request) -> Response:
        """``GET /api/v1/events`` (every namespace), honouring ``involvedObject.kind`` and ``.name`` selectors."""
        data, refused = resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        wanted: dict[str, str] = {}
        for part in request.query_params.get("fieldSelector", "").split(","):
            if "=" in part:
                k, _, v = part.partition("=")
                wanted[k.strip().rstrip("=")] = v.strip()
        items = []
        for ev in data.events:
            obj = ev.get("involvedObject") or {}
            if "involvedObject.name" in wanted and obj.get("name") != wanted["involvedObject.name"]:
                continue
            if "involvedObject.kind" in wanted and obj.get("kind") != wanted["involvedObject.kind"]:
                continue
            items.append(ev)
        return JSONResponse({"kind": "EventList", "apiVersion": "v1", "metadata": {}, "items": items})

    async def get_node(request: Request) -> Response:
        data, refused = resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        name = request.path_params["name"]
        node = next((n for n in data.nodes if n.get("metadata", {}).get("name") == name), None)
        if node is None:
            return status(404, "NotFound", f'nodes "{name}" not found')
        return JSONResponse(node)

    return [
        Route("/api/v1/namespaces/{ns}/pods/{name}/log", get_log, methods=["GET"]),
        Route("/api/v1/namespaces/{ns}/pods/{name}", get_pod, methods=["GET"]),
        Route("/api/v1/namespaces/{ns}/events", list_events, methods=["GET"]),
        Route("/api/v1/nodes/{name}", get_node, methods=["GET"]),
        Route("/api/v1/events", list_all_events, methods=["GET"]),
    ]
