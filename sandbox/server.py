"""The sandbox: serves one snapshot (``shared/cases/FORMAT.md``) over real HTTP on loopback.

It answers like the Run:ai control plane, the cluster's Kubernetes API (when the snapshot has a
``kubernetes`` section; with ``kubernetes_by_cluster``, each cluster's own API under
``/k8s/clusters/<cluster uuid>``, as a Rancher-style proxy serves them) and the OSMO service (``osmo``
section), injects the snapshot's ``faults``, and records every request so tests can assert that nothing
mutating was ever asked.
The diagnosis core never imports this package.
"""

from __future__ import annotations

import asyncio
import atexit
import fnmatch
import json
import os
import re
import secrets
import tempfile
import threading
import time
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Where one cluster's Kubernetes API is served when the snapshot gives ``kubernetes_by_cluster``.
CLUSTER_PREFIX = re.compile(r"^/k8s/clusters/(?P<cluster>[^/]+)(?P<rest>/.*)?$")
#: The ASGI scope key that carries the cluster of a request under :data:`CLUSTER_PREFIX` to the routes.
CLUSTER_SCOPE_KEY = "wd.sandbox.cluster"


class SnapshotError(ValueError):
    """The snapshot file is missing, not JSON, or not ``format: snapshot/1``."""


def load_snapshot(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and minimally validate a snapshot file; raises :class:`SnapshotError` with a clear message."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise SnapshotError(f"snapshot file not found: {p}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotError(f"cannot read snapshot {p}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"snapshot {p} is not valid JSON: line {exc.lineno} column {exc.colno}") from exc
    validate_snapshot(data, str(p))
    return data


def validate_snapshot(data: Any, name: str = "snapshot") -> None:
    """Raise :class:`SnapshotError` unless ``data`` looks like a snapshot/1 document."""
    if not isinstance(data, dict):
        raise SnapshotError(f"{name}: the top level must be a JSON object")
    if data.get("format") != "snapshot/1":
        raise SnapshotError(f"{name}: 'format' must be \"snapshot/1\", not {data.get('format')!r}")
    if "runai" not in data and "osmo" not in data:
        raise SnapshotError(f"{name}: needs a 'runai' or an 'osmo' section")
    if "runai" in data:
        runai = data["runai"]
        if not isinstance(runai, dict) or not isinstance(runai.get("workloads", []), list):
            raise SnapshotError(f"{name}: 'runai.workloads' must be a list")
        for i, entry in enumerate(runai.get("workloads", [])):
            wl = entry.get("workload") if isinstance(entry, dict) else None
            if not isinstance(wl, dict) or not wl.get("id") or not wl.get("name"):
                raise SnapshotError(f"{name}: runai.workloads[{i}].workload needs an 'id' and a 'name'")
    by_cluster = data.get("kubernetes_by_cluster")
    if by_cluster is not None and (
        not isinstance(by_cluster, dict) or not all(isinstance(v, dict) for v in by_cluster.values())
    ):
        raise SnapshotError(f"{name}: 'kubernetes_by_cluster' must map cluster uuids to 'kubernetes' objects")
    if "osmo" in data and not isinstance(data["osmo"], dict):
        raise SnapshotError(f"{name}: 'osmo' must be an object")
    faults = data.get("faults") or []
    if not isinstance(faults, list) or not all(isinstance(f, dict) and "path" in f for f in faults):
        raise SnapshotError(f"{name}: 'faults' must be a list of objects with a 'path'")


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
    #: (:func:`body_fields`); None for a request without a body. Spec contract tests read them.
    content_type: str | None = None
    body: dict[str, str] | None = None


#: Body fields whose values are never recorded (client secrets, passwords, access tokens).
_SECRET_FIELD = re.compile(r"secret|password|token", re.IGNORECASE)
_BODY_CAP = 64 * 1024


def body_fields(content_type: str | None, data: bytes) -> dict[str, str] | None:
    """The field names of a JSON-object or form body with their values as text, secrets masked; None when the
    body is empty or neither (a JSON body that is not an object records its type under ``""``)."""
    from urllib.parse import parse_qsl

    if not data:
        return None
    if content_type == "application/x-www-form-urlencoded":
        pairs: list[tuple[str, Any]] = parse_qsl(data.decode("latin-1"), keep_blank_values=True)
    else:
        try:
            parsed = json.loads(data)
        except ValueError:
            return None
        if not isinstance(parsed, dict):
            return {"": type(parsed).__name__}
        pairs = list(parsed.items())
    return {str(k): "<masked>" if _SECRET_FIELD.search(str(k)) else str(v) for k, v in pairs}


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
    return JSONResponse({"code": status, "message": message}, status_code=status)


#: The sandbox's own request log (JSON), for benchmarks that run it in a process of its own.
REQUEST_LOG_PATH = "/_sandbox/requests"


def build_app(state: SandboxState) -> Starlette:
    """The Starlette app: recording + faults + latency middleware around the route modules."""
    from sandbox import k8s, osmo, runai

    routes: list[BaseRoute] = []
    for factory in (runai.routes, k8s.routes, osmo.routes):
        routes += factory(state)
    app = Starlette(routes=routes)

    async def not_found(request: Request, exc: Exception) -> Response:
        return json_error(404, "Resource not found.")

    async def not_allowed(request: Request, exc: Exception) -> Response:
        return json_error(405, "Method not allowed.")

    app.add_exception_handler(404, not_found)
    app.add_exception_handler(405, not_allowed)

    async def middleware(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        if scope["path"] == REQUEST_LOG_PATH and scope["method"] == "GET":
            # The request log for a benchmark running in another process (not recorded itself).
            with state.lock:
                log = [
                    {
                        "method": r.method,
                        "path": r.path,
                        "status": r.status,
                        "started": r.started,
                        "finished": r.finished,
                    }
                    for r in state.requests
                ]
            await JSONResponse(log)(scope, receive, send)
            return
        cluster = None
        asked_path = scope["path"]
        prefixed = CLUSTER_PREFIX.match(asked_path) if state.kubernetes_by_cluster is not None else None
        if prefixed is not None:
            # One cluster's Kubernetes API: route (and record, and match faults on) the path within it.
            cluster = prefixed["cluster"]
            rest = prefixed["rest"] or "/"
            scope = {**scope, "path": rest, "raw_path": rest.encode("latin-1"), CLUSTER_SCOPE_KEY: cluster}
        seen = SeenRequest(
            scope["method"],
            scope["path"],
            scope.get("query_string", b"").decode("latin-1"),
            started=time.monotonic(),
            client_port=(scope.get("client") or (None, None))[1],
            cluster=cluster,
            raw_path=(scope.get("raw_path") or b"").decode("latin-1") or scope["path"],
        )
        headers = dict(scope.get("headers") or [])
        if b"content-type" in headers:
            seen.content_type = headers[b"content-type"].decode("latin-1").split(";")[0].strip().lower()
        with state.lock:
            state.requests.append(seen)
            # A fault's glob matches the path within a cluster's API, or the whole path to aim at one cluster.
            fault = next((f for f in state.faults if f.matches(seen.path) or f.matches(asked_path)), None)
            if fault is not None:
                fault.used += 1
        delay = state.latency + ((fault.delay_ms or 0) / 1000 if fault else 0)
        if delay:
            await asyncio.sleep(delay)

        async def recording_send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                seen.status = message["status"]
                seen.finished = time.monotonic()
            await send(message)

        received = bytearray()

        async def recording_receive() -> MutableMapping[str, Any]:
            message: MutableMapping[str, Any] = await receive()
            if message["type"] == "http.request" and len(received) < _BODY_CAP:
                received.extend(message.get("body", b""))
                if not message.get("more_body"):
                    seen.body = body_fields(seen.content_type, bytes(received))
            return message

        if fault is not None and fault.status:
            response = json_error(fault.status, "Injected fault.")
            await response(scope, receive, recording_send)
            return
        await app(scope, recording_receive, recording_send)

    return middleware  # type: ignore[return-value]


class Sandbox:
    """Serve ``snapshot`` on ``127.0.0.1:<ephemeral port>`` in a background thread.

    ``latency`` (seconds) is added to every request (benchmarks). Use as a context manager or
    call :meth:`start` / :meth:`stop`. ``url`` is the base URL once started.
    """

    def __init__(self, snapshot: dict[str, Any], *, latency: float = 0.0, port: int = 0) -> None:
        validate_snapshot(snapshot)
        self.state = SandboxState(snapshot=snapshot, latency=latency)
        for f in snapshot.get("faults") or []:
            self.state.faults.append(
                Fault(path=f["path"], status=f.get("status"), delay_ms=f.get("delay_ms"), times=f.get("times"))
            )
        self._port = port
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._kubeconfig: str | None = None
        self.url = ""

    @property
    def requests(self) -> list[SeenRequest]:
        return self.state.requests

    def sequential_depth(self, requests: list[SeenRequest] | None = None) -> int:
        """The longest chain of requests each of which started after the previous one answered."""
        reqs = sorted(requests if requests is not None else self.requests, key=lambda r: r.started)
        depth = [1] * len(reqs)
        for i, r in enumerate(reqs):
            for j in range(i):
                if reqs[j].finished <= r.started:
                    depth[i] = max(depth[i], depth[j] + 1)
        return max(depth, default=0)

    def mutating_requests(self) -> list[SeenRequest]:
        """Requests with a mutating method, token exchanges excepted."""
        token_paths = {"/api/v1/token", "/api/v2/token", "/api/auth/jwt/access_token"}
        return [r for r in self.requests if r.method in MUTATING and r.path not in token_paths]

    def start(self) -> str:
        config = uvicorn.Config(
            build_app(self.state),
            host="127.0.0.1",
            port=self._port,
            log_level="warning",
            lifespan="off",
            access_log=False,
        )
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(target=server.run, name="sandbox", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("sandbox did not start")
            time.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._kubeconfig and os.path.exists(self._kubeconfig):
            os.unlink(self._kubeconfig)
        self._server = None
        self._thread = None

    def __enter__(self) -> Sandbox:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def has_kubernetes(self) -> bool:
        return self.state.kubernetes_by_cluster is not None or isinstance(self.state.snapshot.get("kubernetes"), dict)

    def kube_contexts(self) -> dict[str, str] | None:
        """``kubernetes_by_cluster``: each cluster uuid's context in :meth:`kubeconfig` (else None)."""
        by_cluster = self.state.kubernetes_by_cluster
        if by_cluster is None:
            return None
        return {str(uuid): f"sandbox-{uuid}" for uuid in by_cluster}

    def kube_env(self) -> dict[str, str]:
        """The Tier 2 settings that point the product at this sandbox: ``KUBECONFIG`` and, with
        ``kubernetes_by_cluster``, ``WD_KUBE_CONTEXTS`` (one context per cluster); empty without Tier 2."""
        path = self.kubeconfig()
        if path is None:
            return {}
        env = {"KUBECONFIG": path}
        contexts = self.kube_contexts()
        if contexts is not None:
            env["WD_KUBE_CONTEXTS"] = json.dumps(contexts)
        return env

    def kubeconfig(self) -> str | None:
        """Path of a kubeconfig pointing at this sandbox, or None when the snapshot has no Tier 2.

        With ``kubernetes_by_cluster`` it has one context per cluster (:meth:`kube_contexts`), each with the
        server ``<url>/k8s/clusters/<uuid>`` and that cluster's own token, and no current context."""
        if not self.has_kubernetes:
            return None
        if self._kubeconfig is None:
            contexts = self.kube_contexts()
            doc: dict[str, Any]
            if contexts is not None:
                doc = {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {"name": ctx, "cluster": {"server": f"{self.url}/k8s/clusters/{uuid}"}}
                        for uuid, ctx in contexts.items()
                    ],
                    "users": [
                        {"name": ctx, "user": {"token": self.state.cluster_token(uuid)}}
                        for uuid, ctx in contexts.items()
                    ],
                    "contexts": [{"name": ctx, "context": {"cluster": ctx, "user": ctx}} for ctx in contexts.values()],
                }
            else:
                token = self.state.issue_token()
                doc = {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "sandbox", "cluster": {"server": self.url}}],
                    "users": [{"name": "sandbox", "user": {"token": token}}],
                    "contexts": [{"name": "sandbox", "context": {"cluster": "sandbox", "user": "sandbox"}}],
                    "current-context": "sandbox",
                }
            fd, path = tempfile.mkstemp(prefix="wd-kubeconfig-", suffix=".json")
            with os.fdopen(fd, "w") as fh:
                json.dump(doc, fh)
            self._kubeconfig = path
            atexit.register(_remove_quietly, path)  # also when stop() is never called
        return self._kubeconfig


def _remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
