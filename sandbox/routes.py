"""The sandbox's route table and the state its route modules share (a leaf: it imports no other sandbox module).

Each system's module (:mod:`sandbox.runai`, :mod:`sandbox.k8s`, :mod:`sandbox.osmo`) is a :class:`Section`:
the snapshot key it serves and a factory turning a :class:`SandboxState` into Starlette routes.
:mod:`sandbox.server` holds the table (:data:`sandbox.server.ROUTE_TABLE`) and dispatches to it, so the route
modules never import the server (issue 10 §3: that import was a cycle). Adding a system's API means one
module with a ``routes(state)`` factory and one :class:`Section` in the table.
"""

from __future__ import annotations

import fnmatch
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute

#: The ASGI scope key that carries the cluster of a request under ``/k8s/clusters/<uuid>`` to the routes.
CLUSTER_SCOPE_KEY = "wd.sandbox.cluster"


@dataclass
class SeenRequest:
    """One request the sandbox received (``query`` is the raw query string)."""

    method: str
    path: str
    query: str
    status: int = 0
    started: float = 0.0  # time.monotonic() when the request arrived
    finished: float = 0.0  # time.monotonic() when the response started
    client_port: int | None = None  # the caller's TCP port: one per connection (reuse is visible)
    #: The cluster whose Kubernetes API was asked (``kubernetes_by_cluster``); ``path`` is then the path within
    #: that API, without the ``/k8s/clusters/<uuid>`` prefix, so faults match it as they match a lone cluster's.
    cluster: str | None = None
    #: The path as sent (percent-escapes kept: an escaped ``/`` inside one segment stays visible).
    raw_path: str = ""
    #: A body's ``Content-Type`` (media type only) and its field names with their values, secrets masked
    #: (:func:`sandbox.server.body_fields`); None for a request without a body. Spec contract tests read them.
    content_type: str | None = None
    body: dict[str, str] | None = None


@dataclass
class Fault:
    path: str
    status: int | None = None
    delay_ms: int | None = None
    times: int | None = None
    used: int = 0

    def matches(self, path: str) -> bool:
        if self.times is not None and self.used >= self.times:
            return False
        return fnmatch.fnmatchcase(path, self.path)


@dataclass
class SandboxState:
    """What route modules share: the snapshot, the issued tokens and the extra latency."""

    snapshot: dict[str, Any]
    latency: float = 0.0
    tokens: set[str] = field(default_factory=set)
    #: ``kubernetes_by_cluster``: the one bearer token each cluster's Kubernetes API accepts.
    cluster_tokens: dict[str, str] = field(default_factory=dict)
    requests: list[SeenRequest] = field(default_factory=list)
    faults: list[Fault] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: The one-line reports of snapshot fields a route could not serve, each printed once (see the server).
    failures: set[str] = field(default_factory=set)
    #: What the Kubernetes API enforces (a :class:`sandbox.rbac.Rbac`, typed loosely to keep this module a leaf;
    #: None: nothing, for a test that says so).
    rbac: Any = None
    #: The requests the RBAC refused (``"list events in namespace default"``), each printed once on stderr.
    refused: list[str] = field(default_factory=list)

    def issue_token(self) -> str:
        token = "sbx-" + secrets.token_hex(16)
        self.tokens.add(token)
        return token

    def authorized(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        return header.startswith("Bearer ") and header[7:] in self.tokens

    def cluster_token(self, cluster: str) -> str:
        """The token of ``cluster``'s Kubernetes API (``kubernetes_by_cluster``), issued once."""
        with self.lock:
            return self.cluster_tokens.setdefault(cluster, "sbx-k8s-" + secrets.token_hex(16))

    def authorized_for(self, request: Request, cluster: str) -> bool:
        """Whether the request carries ``cluster``'s own token (another cluster's is refused)."""
        header = request.headers.get("authorization", "")
        token = self.cluster_tokens.get(cluster)
        return token is not None and header == f"Bearer {token}"

    @property
    def kubernetes_by_cluster(self) -> dict[str, dict[str, Any]] | None:
        """The snapshot's ``kubernetes_by_cluster`` (None when it has none: a lone ``kubernetes`` serves all)."""
        by_cluster = self.snapshot.get("kubernetes_by_cluster")
        return by_cluster if isinstance(by_cluster, dict) else None


def json_error(status: int, message: str) -> JSONResponse:
    """The Run:ai-style error body ``{"code": status, "message": message}`` with that HTTP status."""
    return JSONResponse({"code": status, "message": message}, status_code=status)


RouteFactory = Callable[[SandboxState], list[BaseRoute]]


@dataclass(frozen=True)
class Section:
    """One row of the route table: ``name`` is the snapshot section it serves (``"runai"``, ``"kubernetes"``,
    ``"osmo"``: it names the section in the one line a malformed field gives), ``routes`` its factory (an
    empty list when the snapshot has no such section)."""

    name: str
    routes: RouteFactory
