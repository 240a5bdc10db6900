"""The sandbox: serves one snapshot (``shared/cases/FORMAT.md``) over real HTTP on loopback.

It answers like the Run:ai control plane, the cluster's Kubernetes API (when the snapshot has a
``kubernetes`` section; with ``kubernetes_by_cluster``, each cluster's own API under
``/k8s/clusters/<cluster uuid>``, as a Rancher-style proxy serves them) and the OSMO service (``osmo``
section), injects the snapshot's ``faults``, and records every request so tests can assert that nothing
mutating was ever asked.
The diagnosis core never imports this package.

Each system's routes come from its module through :data:`ROUTE_TABLE` (one :class:`~sandbox.routes.Section`
per snapshot section); the modules share :class:`~sandbox.routes.SandboxState` from the leaf
:mod:`sandbox.routes`, never this module. A snapshot field of the wrong shape gives one line, never a
traceback: :func:`validate_snapshot` names it (``kubernetes.pods[0].status must be an object``), and a route
that still fails on one answers 500 and prints one line naming the section and the request.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match

from sandbox import k8s, osmo, runai
from sandbox.rbac import Rbac, project_namespaces
from sandbox.routes import CLUSTER_SCOPE_KEY, Fault, SandboxState, Section, SeenRequest, json_error

__all__ = [
    "CLUSTER_SCOPE_KEY",
    "REQUEST_LOG_PATH",
    "ROUTE_TABLE",
    "Fault",
    "Sandbox",
    "SandboxState",
    "SeenRequest",
    "SnapshotError",
    "json_error",
    "load_snapshot",
    "validate_snapshot",
]

MUTATING = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: Where one cluster's Kubernetes API is served when the snapshot gives ``kubernetes_by_cluster``.
CLUSTER_PREFIX = re.compile(r"^/k8s/clusters/(?P<cluster>[^/]+)(?P<rest>/.*)?$")


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
        for i, entry in enumerate(runai.get("workloads", [])):
            if entry.get("metrics") is not None and not isinstance(entry["metrics"], dict):
                raise SnapshotError(
                    f"{name}: runai.workloads[{i}].metrics must be an object, not {_kind(entry['metrics'])}"
                )
    by_cluster = data.get("kubernetes_by_cluster")
    if by_cluster is not None and (
        not isinstance(by_cluster, dict) or not all(isinstance(v, dict) for v in by_cluster.values())
    ):
        raise SnapshotError(f"{name}: 'kubernetes_by_cluster' must map cluster uuids to 'kubernetes' objects")
    kube_sections = {f"kubernetes_by_cluster.{k}": v for k, v in (by_cluster or {}).items()}
    if "kubernetes" in data:
        kube_sections["kubernetes"] = data["kubernetes"]
    for where, kube in kube_sections.items():
        _validate_kubernetes(kube, f"{name}: {where}")
    if "osmo" in data and not isinstance(data["osmo"], dict):
        raise SnapshotError(f"{name}: 'osmo' must be an object")
    faults = data.get("faults") or []
    if not isinstance(faults, list) or not all(isinstance(f, dict) and "path" in f for f in faults):
        raise SnapshotError(f"{name}: 'faults' must be a list of objects with a 'path'")


def _kind(value: Any) -> str:
    """``"a string"``, ``"a list"``, ``"null"``: how a message names the JSON type it found."""
    if value is None:
        return "null"
    names = {str: "a string", list: "a list", dict: "an object", bool: "a boolean", int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)


def _validate_kubernetes(kube: Any, where: str) -> None:
    """A ``kubernetes`` section's shapes the routes and the Tier 2 reader rely on: lists of objects, and a pod's
    ``metadata``, ``spec`` and ``status`` objects (a string there is a malformed snapshot, not a cluster's answer).
    Raises :class:`SnapshotError` naming the first bad field, e.g. ``kubernetes.pods[0].status``."""
    if not isinstance(kube, dict):
        raise SnapshotError(f"{where} must be an object, not {_kind(kube)}")
    for key in ("pods", "events", "nodes", "logs"):
        items = kube.get(key)
        if items is None:
            continue
        if not isinstance(items, list):
            raise SnapshotError(f"{where}.{key} must be a list, not {_kind(items)}")
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise SnapshotError(f"{where}.{key}[{i}] must be an object, not {_kind(item)}")
            for part in ("metadata", "spec", "status") if key in ("pods", "nodes") else ("metadata",):
                if item.get(part) is not None and not isinstance(item[part], dict):
                    raise SnapshotError(f"{where}.{key}[{i}].{part} must be an object, not {_kind(item[part])}")


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


#: The sandbox's own request log (JSON), for benchmarks that run it in a process of its own.
REQUEST_LOG_PATH = "/_sandbox/requests"

#: The route table: each snapshot section and the module serving it, in matching order.
ROUTE_TABLE: tuple[Section, ...] = (
    Section("runai", runai.routes),
    Section("kubernetes", k8s.routes),
    Section("osmo", osmo.routes),
)


def build_app(state: SandboxState) -> Starlette:
    """The Starlette app: recording + faults + latency middleware around the routes of :data:`ROUTE_TABLE`.

    Raises :class:`SnapshotError` (one line naming the section) when a section's routes cannot be built from
    the snapshot. A route that fails on a malformed field answers 500 and prints one line on stderr (once per
    distinct failure), never a traceback (issue 15 §5)."""
    routes, owners = _table_routes(state)
    app = Starlette(routes=routes)
    app.add_exception_handler(404, _not_found)
    app.add_exception_handler(405, _not_allowed)
    return _Recorder(app, state, owners)  # type: ignore[return-value]


def _table_routes(state: SandboxState) -> tuple[list[BaseRoute], list[tuple[str, BaseRoute]]]:
    """Every section's routes in :data:`ROUTE_TABLE` order, and ``(section name, route)`` for each (to name the
    section of a request that fails)."""
    routes: list[BaseRoute] = []
    owners: list[tuple[str, BaseRoute]] = []
    for section in ROUTE_TABLE:
        try:
            built = section.routes(state)
        except Exception as exc:
            raise SnapshotError(f"snapshot: the '{section.name}' section cannot be served: {_one_line(exc)}") from exc
        routes += built
        owners += [(section.name, r) for r in built]
    return routes, owners


async def _not_found(request: Request, exc: Exception) -> Response:
    return json_error(404, "Resource not found.")


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return json_error(405, "Method not allowed.")


def _seen_request(scope: Any, cluster: str | None) -> SeenRequest:
    """The record of a request arriving now (``scope`` already within its cluster's API)."""
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
    return seen


def _recording_send(seen: SeenRequest, send: Any) -> Any:
    """``send`` recording the response's status and when it started in ``seen``."""

    async def recording_send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            seen.status = message["status"]
            seen.finished = time.monotonic()
        await send(message)

    return recording_send


def _recording_receive(seen: SeenRequest, receive: Any) -> Any:
    """``receive`` recording the body's fields in ``seen`` (its first :data:`_BODY_CAP` bytes)."""
    received = bytearray()

    async def recording_receive() -> MutableMapping[str, Any]:
        message: MutableMapping[str, Any] = await receive()
        if message["type"] == "http.request" and len(received) < _BODY_CAP:
            received.extend(message.get("body", b""))
            if not message.get("more_body"):
                seen.body = body_fields(seen.content_type, bytes(received))
        return message

    return recording_receive


class _Recorder:
    """The ASGI middleware around the app: records every request, injects the snapshot's faults and the latency,
    routes ``/k8s/clusters/<uuid>`` to that cluster's API and turns a route's failure into one line and a 500."""

    def __init__(self, app: Starlette, state: SandboxState, owners: list[tuple[str, BaseRoute]]) -> None:
        self.app = app
        self.state = state
        self.owners = owners

    def section_of(self, scope: Any) -> str:
        return next((name for name, r in self.owners if r.matches(scope)[0] == Match.FULL), "snapshot")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == REQUEST_LOG_PATH and scope["method"] == "GET":
            await self.serve_request_log(scope, receive, send)
            return
        asked_path = scope["path"]
        scope, cluster = self.within_cluster(scope)
        seen = _seen_request(scope, cluster)
        fault = self.record(seen, asked_path)
        delay = self.state.latency + ((fault.delay_ms or 0) / 1000 if fault else 0)
        if delay:
            await asyncio.sleep(delay)
        recording_send = _recording_send(seen, send)
        recording_receive = _recording_receive(seen, receive)
        if fault is not None and fault.status:
            response = json_error(fault.status, "Injected fault.")
            await response(scope, receive, recording_send)
            return
        try:
            await self.app(scope, recording_receive, recording_send)
        except Exception as exc:
            self.report_failure(scope, seen, exc)
            if not seen.status:
                failed = json_error(500, "The sandbox could not serve this from the snapshot.")
                await failed(scope, receive, recording_send)

    async def serve_request_log(self, scope: Any, receive: Any, send: Any) -> None:
        """The request log for a benchmark running in another process (not recorded itself)."""
        with self.state.lock:
            log = [
                {
                    "method": r.method,
                    "path": r.path,
                    "status": r.status,
                    "started": r.started,
                    "finished": r.finished,
                }
                for r in self.state.requests
            ]
        await JSONResponse(log)(scope, receive, send)

    def within_cluster(self, scope: Any) -> tuple[Any, str | None]:
        """``scope`` and its cluster: for ``/k8s/clusters/<uuid>/...`` (with ``kubernetes_by_cluster``) the path
        within that cluster's API, the cluster named in the scope; else ``scope`` as it is, and None."""
        asked_path = scope["path"]
        prefixed = CLUSTER_PREFIX.match(asked_path) if self.state.kubernetes_by_cluster is not None else None
        if prefixed is None:
            return scope, None
        # One cluster's Kubernetes API: route (and record, and match faults on) the path within it.
        cluster = prefixed["cluster"]
        rest = prefixed["rest"] or "/"
        return {**scope, "path": rest, "raw_path": rest.encode("latin-1"), CLUSTER_SCOPE_KEY: cluster}, cluster

    def record(self, seen: SeenRequest, asked_path: str) -> Fault | None:
        """Record ``seen``; the fault it meets (now used once more), if any."""
        with self.state.lock:
            self.state.requests.append(seen)
            # A fault's glob matches the path within a cluster's API, or the whole path to aim at one cluster.
            fault = next((f for f in self.state.faults if f.matches(seen.path) or f.matches(asked_path)), None)
            if fault is not None:
                fault.used += 1
        return fault

    def report_failure(self, scope: Any, seen: SeenRequest, exc: Exception) -> None:
        # A snapshot field of the wrong shape (a string where an object is expected, ...): one line naming
        # the section and the request, instead of the server's traceback; the product sees a 500.
        line = (
            f"workload-doctor sandbox: the '{self.section_of(scope)}' section of the snapshot cannot answer "
            f"{seen.method} {seen.path}: {_one_line(exc)} (a malformed field?)"
        )
        with self.state.lock:
            first = line not in self.state.failures
            self.state.failures.add(line)
        if first:
            print(line, file=sys.stderr, flush=True)


def _one_line(exc: BaseException) -> str:
    """``"AttributeError: 'str' object has no attribute 'get'"``, cut to one short line."""
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Sandbox:
    """Serve ``snapshot`` on ``127.0.0.1:<ephemeral port>`` in a background thread.

    ``latency`` (seconds) is added to every request (benchmarks). Use as a context manager or
    call :meth:`start` / :meth:`stop`. ``url`` is the base URL once started. The Kubernetes API enforces the
    shipped RBAC (:meth:`sandbox.rbac.Rbac.shipped`) unless ``rbac`` gives another (a test of a narrower
    install) or ``enforce_rbac`` is False.
    """

    def __init__(
        self,
        snapshot: dict[str, Any],
        *,
        latency: float = 0.0,
        port: int = 0,
        rbac: Rbac | None = None,
        enforce_rbac: bool = True,
    ) -> None:
        validate_snapshot(snapshot)
        if enforce_rbac and rbac is None:
            rbac = Rbac.shipped(project_namespaces(snapshot))
        self.state = SandboxState(snapshot=snapshot, latency=latency, rbac=rbac if enforce_rbac else None)
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
