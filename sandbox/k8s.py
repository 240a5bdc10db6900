"""Sandbox routes of the cluster's Kubernetes API (FORMAT.md ``kubernetes``, Tier 2).

Absent ``kubernetes`` section: no routes (the product must act as if it had no Tier 2 credentials).
"""

from __future__ import annotations

import base64
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from sandbox.server import SandboxState


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


def routes(state: SandboxState) -> list[BaseRoute]:
    kube: dict[str, Any] | None = state.snapshot.get("kubernetes")
    if not isinstance(kube, dict):
        return []
    pods = kube.get("pods") or []
    events = kube.get("events") or []
    nodes = kube.get("nodes") or []
    logs = kube.get("logs") or []

    def denied(request: Request) -> Response | None:
        if not state.authorized(request):
            return status(401, "Unauthorized", "Unauthorized")
        return None

    def find_pod(ns: str, name: str) -> dict[str, Any] | None:
        return next(
            (
                p
                for p in pods
                if p.get("metadata", {}).get("name") == name and p.get("metadata", {}).get("namespace", ns) == ns
            ),
            None,
        )

    async def get_pod(request: Request) -> Response:
        if (d := denied(request)) is not None:
            return d
        ns, name = request.path_params["ns"], request.path_params["name"]
        pod = find_pod(ns, name)
        if pod is None:
            return status(404, "NotFound", f'pods "{name}" not found')
        return JSONResponse(pod)

    async def get_log(request: Request) -> Response:
        if (d := denied(request)) is not None:
            return d
        ns, name = request.path_params["ns"], request.path_params["name"]
        if find_pod(ns, name) is None:
            return status(404, "NotFound", f'pods "{name}" not found')
        q = request.query_params
        container = q.get("container")
        previous = q.get("previous", "false").lower() == "true"
        entry = next(
            (
                lg
                for lg in logs
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
            data = base64.b64decode(entry["text_b64"])
        else:
            data = str(entry.get("text") or "").encode("utf-8")
        tail = q.get("tailLines")
        if tail and tail.isdigit():
            lines = data.splitlines(keepends=True)
            data = b"".join(lines[-int(tail) :]) if int(tail) else b""
        limit = q.get("limitBytes")
        if limit and limit.isdigit():
            data = data[: int(limit)]
        return Response(data, media_type="text/plain")

    async def list_events(request: Request) -> Response:
        if (d := denied(request)) is not None:
            return d
        ns = request.path_params["ns"]
        selector = request.query_params.get("fieldSelector", "")
        wanted: dict[str, str] = {}
        for part in selector.split(","):
            if "=" in part:
                k, _, v = part.partition("=")
                wanted[k.strip().rstrip("=")] = v.strip()
        items = []
        for ev in events:
            if ev.get("metadata", {}).get("namespace", ns) != ns:
                continue
            obj = ev.get("involvedObject") or {}
            if "involvedObject.name" in wanted and obj.get("name") != wanted["involvedObject.name"]:
                continue
            items.append(ev)
        return JSONResponse({"kind": "EventList", "apiVersion": "v1", "metadata": {}, "items": items})

    async def get_node(request: Request) -> Response:
        if (d := denied(request)) is not None:
            return d
        name = request.path_params["name"]
        node = next((n for n in nodes if n.get("metadata", {}).get("name") == name), None)
        if node is None:
            return status(404, "NotFound", f'nodes "{name}" not found')
        return JSONResponse(node)

    return [
        Route("/api/v1/namespaces/{ns}/pods/{name}/log", get_log, methods=["GET"]),
        Route("/api/v1/namespaces/{ns}/pods/{name}", get_pod, methods=["GET"]),
        Route("/api/v1/namespaces/{ns}/events", list_events, methods=["GET"]),
        Route("/api/v1/nodes/{name}", get_node, methods=["GET"]),
    ]
