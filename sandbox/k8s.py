"""Sandbox routes of the cluster's Kubernetes API (FORMAT.md ``kubernetes``, Tier 2).

Absent ``kubernetes`` section: no routes (the product must act as if it had no Tier 2 credentials).
With ``kubernetes_by_cluster`` each cluster's section is served on its own, under
``/k8s/clusters/<uuid>`` (the server strips that prefix and names the cluster in the request scope),
accepting only that cluster's token; a cluster that is not listed has no API at all.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from sandbox.rbac import Attributes, attributes_of, forbidden
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


def _event_matches(ev: dict[str, Any], wanted: dict[str, str]) -> bool:
    """Whether event ``ev`` meets the ``involvedObject.kind`` / ``involvedObject.name`` terms of ``wanted``."""
    obj = ev.get("involvedObject") or {}
    return all(
        obj.get(field) == wanted[f"involvedObject.{field}"]
        for field in ("name", "kind")
        if f"involvedObject.{field}" in wanted
    )


_SET_TERM = re.compile(r"^\s*(?P<key>[A-Za-z0-9_./-]+)\s+(?P<op>in|notin)\s+\((?P<values>[^)]*)\)\s*$")
_EQ_TERM = re.compile(r"^\s*(?P<key>[A-Za-z0-9_./-]+)\s*(?P<op>==|=|!=)\s*(?P<value>[A-Za-z0-9_.-]*)\s*$")
_EXISTS_TERM = re.compile(r"^\s*(?P<neg>!?)\s*(?P<key>[A-Za-z0-9_./-]+)\s*$")


def _selector_terms(selector: str) -> list[str] | None:
    """``selector`` split at the commas outside parentheses (None when its parentheses do not balance)."""
    terms, depth, current = [], 0, ""
    for ch in selector:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return None
        if ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += ch
    return None if depth else [*terms, current]


def label_matcher(selector: str) -> Any:
    """A predicate over a labels dict for a ``labelSelector`` (equality ``=``/``==``/``!=``, set-based
    ``in``/``notin``, existence ``key``/``!key``, comma-joined), or None when the selector is malformed (the API
    server answers 400 then)."""
    checks = []
    for term in _selector_terms(selector) or [None]:  # type: ignore[list-item]
        if term is None:
            return None
        if not term.strip():
            continue
        if m := _SET_TERM.match(term):
            key, values = m["key"], {v.strip() for v in m["values"].split(",")}
            if m["op"] == "in":
                checks.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
            else:
                checks.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif m := _EQ_TERM.match(term):
            key, value = m["key"], m["value"]
            if m["op"] == "!=":
                checks.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                checks.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif m := _EXISTS_TERM.match(term):
            key, negated = m["key"], bool(m["neg"])
            checks.append(lambda labels, k=key, n=negated: (k in labels) != n)
        else:
            return None
    return lambda labels: all(check(labels) for check in checks)


class _KubeApi:
    """The Kubernetes API handlers: one lone cluster's data, or each cluster's of ``kubernetes_by_cluster``."""

    def __init__(self, state: SandboxState, clusters: dict[str, _Cluster], lone: _Cluster | None) -> None:
        self.state = state
        self.clusters = clusters
        self.lone = lone

    def resolve(self, request: Request) -> tuple[_Cluster | None, Response | None]:
        """The data this request asks (or the refusal): the lone cluster's, or its own cluster's; a request the
        shipped RBAC does not allow is refused with 403 (:mod:`sandbox.rbac`), after authentication."""
        data, refused = self._authenticated(request)
        if data is None or self.state.rbac is None:
            return data, refused
        attrs = attributes_of(request.method, request.url.path, dict(request.query_params))
        if attrs is not None and not self.state.rbac.allows(attrs):
            self._report_refusal(attrs.describe())
            return None, forbidden(attrs)
        return data, None

    def _report_refusal(self, what: str) -> None:
        """Keep a refusal and print it once on stderr (a case run must show none: the product asks only what
        the shipped RBAC grants)."""
        line = f"workload-doctor sandbox: refused by the shipped RBAC (sandbox/rbac.yaml): {what}"
        with self.state.lock:
            first = what not in self.state.refused
            self.state.refused.append(what)
        if first:
            print(line, file=sys.stderr, flush=True)

    def _authenticated(self, request: Request) -> tuple[_Cluster | None, Response | None]:
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
        """``GET /api/v1/namespaces/{ns}/events``, honouring ``involvedObject.kind`` and ``.name`` selectors (an
        event without a namespace is in every one)."""
        data, refused = self.resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        ns = request.path_params["ns"]
        wanted = _field_selector(request)
        items = [
            ev for ev in data.events if ev.get("metadata", {}).get("namespace", ns) == ns and _event_matches(ev, wanted)
        ]
        return _event_list(items)

    async def list_all_events(self, request: Request) -> Response:
        """``GET /api/v1/events`` (every namespace), honouring ``involvedObject.kind`` and ``.name`` selectors."""
        data, refused = self.resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        wanted = _field_selector(request)
        return _event_list([ev for ev in data.events if _event_matches(ev, wanted)])

    async def list_pods(self, request: Request) -> Response:
        """``GET /api/v1/namespaces/{ns}/pods``, honouring ``labelSelector`` (400 when it is malformed, as the
        API server answers) and ``metadata.name`` / ``spec.nodeName`` field selectors."""
        data, refused = self.resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        ns = request.path_params["ns"]
        matches = label_matcher(request.query_params.get("labelSelector", ""))
        if matches is None:
            selector = request.query_params.get("labelSelector", "")
            return status(400, "BadRequest", f"unable to parse requirement: invalid label selector {selector!r}")
        wanted = _field_selector(request)
        items = []
        for pod in data.pods:
            meta = pod.get("metadata") or {}
            if meta.get("namespace", ns) != ns or not matches(meta.get("labels") or {}):
                continue
            if "metadata.name" in wanted and meta.get("name") != wanted["metadata.name"]:
                continue
            if "spec.nodeName" in wanted and (pod.get("spec") or {}).get("nodeName") != wanted["spec.nodeName"]:
                continue
            items.append(pod)
        return JSONResponse({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})

    async def unknown(self, request: Request) -> Response:
        """A Kubernetes path or method the sandbox does not serve: 403 when the RBAC does not grant it, else
        404 (405 for a method other than GET)."""
        data, refused = self.resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        if request.method != "GET":
            return status(405, "MethodNotAllowed", f"the server does not allow this method: {request.method}")
        return status(404, "NotFound", "the server could not find the requested resource")

    async def access_review(self, request: Request) -> Response:
        """``POST .../selfsubjectaccessreviews``: whether the shipped RBAC allows ``spec.resourceAttributes``
        (the review ``doctor`` makes; it changes nothing)."""
        data, refused = self.resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        body = await _json_body(request)
        attrs = (body.get("spec") or {}).get("resourceAttributes") or {}
        rbac = self.state.rbac
        asked = Attributes(
            verb=str(attrs.get("verb") or ""),
            resource=str(attrs.get("resource") or ""),
            subresource=str(attrs.get("subresource") or ""),
            namespace=attrs.get("namespace") or None,
            name=str(attrs.get("name") or ""),
            group=str(attrs.get("group") or ""),
        )
        allowed = rbac is None or rbac.allows(asked)
        return JSONResponse({**body, "status": {"allowed": allowed}}, status_code=201)

    async def rules_review(self, request: Request) -> Response:
        """``POST .../selfsubjectrulesreviews``: the resource rules the shipped RBAC gives in ``spec.namespace``."""
        data, refused = self.resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        body = await _json_body(request)
        namespace = (body.get("spec") or {}).get("namespace") or None
        rbac = self.state.rbac
        rules = [r.as_resource_rule() for r in rbac.rules_in(namespace)] if rbac is not None else []
        review = {"resourceRules": rules, "nonResourceRules": [], "incomplete": rbac is None}
        return JSONResponse({**body, "status": review}, status_code=201)

    async def get_node(self, request: Request) -> Response:
        data, refused = self.resolve(request)
        if data is None:
            return refused or status(404, "NotFound", "not found")
        name = request.path_params["name"]
        node = next((n for n in data.nodes if n.get("metadata", {}).get("name") == name), None)
        if node is None:
            return status(404, "NotFound", f'nodes "{name}" not found')
        return JSONResponse(node)


_AUTHZ = "/apis/authorization.k8s.io/v1"
#: The Kubernetes API's paths that no other API of the sandbox serves (Run:ai shares ``/api/v1``).
_KUBE_ONLY = ("/api/v1/namespaces/{rest:path}", "/api/v1/nodes/{rest:path}", "/apis/{rest:path}")
_EVERY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]


async def _json_body(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body() or b"{}")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


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
        Route("/api/v1/namespaces/{ns}/pods", api.list_pods, methods=["GET"]),
        Route(f"{_AUTHZ}/selfsubjectaccessreviews", api.access_review, methods=["POST"]),
        Route(f"{_AUTHZ}/selfsubjectrulesreviews", api.rules_review, methods=["POST"]),
        Route("/api/v1/nodes/{name}", api.get_node, methods=["GET"]),
        Route("/api/v1/events", api.list_all_events, methods=["GET"]),
        # Last: anything else of the Kubernetes API is authorized before it is found, as the API server does: a
        # request the RBAC does not grant is 403 (secrets, a DELETE), not 404 or 405.
        *(Route(path, api.unknown, methods=_EVERY_METHOD) for path in _KUBE_ONLY),
    ]
