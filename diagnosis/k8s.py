"""Tier 2 evidence from the cluster's Kubernetes API (optional, read-only), with the ``kubernetes`` package.

Spec Step 4: ``kubectl describe pod``, ``kubectl logs --previous``, ``kubectl get events
--field-selector involvedObject.name=<pod>`` and, for a node failure, ``kubectl describe node``.
The blocking client runs in worker threads so independent reads go in parallel.

Read-only is enforced where the installed ``kubernetes`` package really sends (see
:class:`ReadOnlyApiClient`): any method but GET raises :class:`ReadOnlyViolation` before a byte is sent.
Retries (GET only, on 429/5xx) are urllib3's, configured here.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import urlsplit

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client import rest as k8s_rest
from kubernetes.client.rest import ApiException

from diagnosis import metrics
from diagnosis.config import KubeConfig
from diagnosis.http import RECORDER, ReadOnlyViolation, RecordedResponse
from diagnosis.units import parse_time

T = TypeVar("T")
LOG_TAIL_LINES = 200
LOG_LIMIT_BYTES = 64 * 1024
REQUEST_TIMEOUT = (5.0, 15.0)


#: Blocking Kubernetes reads run here: enough workers that concurrent diagnoses (4-6 reads each) do not
#: queue behind the default executor's few threads.
_EXECUTOR = ThreadPoolExecutor(max_workers=32, thread_name_prefix="tier2")


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking call in the Tier 2 thread pool."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_EXECUTOR, functools.partial(fn, *args, **kwargs))


def preload() -> None:
    """Import the lazily loaded ``CoreV1Api`` now (about 1 s the first time)."""
    _ = k8s_client.CoreV1Api


#: Subresources that act on a pod, node or service even when asked with GET (exec runs a command; proxy
#: forwards anything to the workload): refused whatever the method.
_ACTING_SUBRESOURCE = re.compile(
    r"^/api/v1/(?:namespaces/[^/]+/)?(?:pods|services|nodes)/[^/]+/(?:exec|attach|portforward|proxy)(?:/|$)"
)


class ReadOnlyGuard:
    """The one read-only check of a Kubernetes client: GET only, except an explicit allow-list.

    ``allow`` holds exact ``(method, path)`` pairs a particular client may send besides GET (for example a
    ``SelfSubjectAccessReview`` POST); paths are relative to the configured host (a host with a path prefix,
    such as a Rancher proxy, is stripped first) and compared without the query string. Empty by default.
    """

    def __init__(self, host: str, allow: Iterable[tuple[str, str]] = ()) -> None:
        self.prefix = urlsplit(host or "").path.rstrip("/")
        self.allow = frozenset((method.upper(), path) for method, path in allow)

    def path(self, url: str) -> str:
        path = urlsplit(url).path or "/"
        if self.prefix and (path == self.prefix or path.startswith(self.prefix + "/")):
            path = path[len(self.prefix) :] or "/"
        return path

    def check(self, method: str, url: str) -> None:
        """Raise :class:`ReadOnlyViolation` unless ``method url`` is a plain GET read or explicitly allowed."""
        verb = str(method).upper()
        path = self.path(url)
        if (verb, path) in self.allow:
            return
        if verb != "GET":
            raise ReadOnlyViolation(f"read-only: refusing {verb} {path}")
        if _ACTING_SUBRESOURCE.match(path):
            raise ReadOnlyViolation(f"read-only: refusing {verb} {path} (acts on the workload)")


class _ReadOnlyRESTClient(k8s_rest.RESTClientObject):
    """The package's REST client with the guard in front of it and in front of its urllib3 pool.

    ``RESTClientObject.request`` is where every generated API method ends (``call_api`` calls it in the
    37.x client; ``ApiClient.request`` called it in the older generator), and ``pool_manager.urlopen`` is
    where urllib3 sends (``request``, redirects and retries all go through it). Both check first.
    """

    def __init__(self, configuration: Any, guard: ReadOnlyGuard, *args: Any, **kwargs: Any) -> None:
        super().__init__(configuration, *args, **kwargs)
        self.guard = guard
        pool = self.pool_manager
        urlopen = pool.urlopen

        def guarded_urlopen(method: str, url: str, *a: Any, **kw: Any) -> Any:
            guard.check(method, url)
            return urlopen(method, url, *a, **kw)

        pool.urlopen = guarded_urlopen  # type: ignore[method-assign]

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        self.guard.check(method, url)
        path = self.guard.path(url)
        try:
            response = super().request(method, url, *args, **kwargs)
        except ApiException as exc:
            metrics.request("kubernetes", method, path, exc.status or "error")
            raise
        except Exception as exc:
            metrics.request("kubernetes", method, path, type(exc).__name__)
            raise
        metrics.request("kubernetes", method, path, getattr(response, "status", None) or "ok")
        return response


class ReadOnlyApiClient(k8s_client.ApiClient):
    """An ``ApiClient`` whose every non-GET request raises :class:`ReadOnlyViolation` before a byte is sent.

    The generated ``CoreV1Api`` methods go ``call_api`` -> ``self.rest_client.request`` -> urllib3, so the
    guard sits in the REST client (:class:`_ReadOnlyRESTClient`), not in an ``ApiClient`` method the
    generator may stop calling. ``rest_client``, ``call_api`` and ``request`` cannot be replaced on this
    object afterwards: that is how ``kubernetes.stream`` (exec, attach, port-forward over a WebSocket that
    never touches urllib3) takes over a client, so streaming through it raises too.

    ``allow`` is an explicit list of ``(method, path)`` this one client may send besides GET (see
    :class:`ReadOnlyGuard`); empty unless a caller names them.
    """

    _SEALED = frozenset({"rest_client", "call_api", "request"})

    def __init__(
        self, configuration: Any = None, *args: Any, allow: Iterable[tuple[str, str]] = (), **kwargs: Any
    ) -> None:
        super().__init__(configuration, *args, **kwargs)
        self.guard = ReadOnlyGuard(self.configuration.host, allow)
        unguarded = self.rest_client
        self.rest_client = _ReadOnlyRESTClient(self.configuration, self.guard)
        unguarded.pool_manager.clear()  # never used: it has sent nothing and holds no connection
        object.__setattr__(self, "_sealed", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._SEALED and self.__dict__.get("_sealed"):
            if value == getattr(self, name, None):
                return  # putting back what is already there (kubernetes.stream's ``finally``)
            raise ReadOnlyViolation(f"read-only: refusing to replace {name} of the Kubernetes client")
        super().__setattr__(name, value)


def build_configuration(config: KubeConfig) -> k8s_client.Configuration:
    """The client configuration Tier 2 uses: the kubeconfig and its context (or in-cluster config), a pool of 32,
    GET retries. ``config`` serves one cluster (:meth:`KubeConfig.for_cluster`); a routed config has no context."""
    cfg = k8s_client.Configuration()
    if config.kubeconfig or config.context:
        # ``config_file=None`` is the package's default (``KUBECONFIG``, else ``~/.kube/config``); ``context=None``
        # is that file's current context.
        k8s_config.load_kube_config(config_file=config.kubeconfig, context=config.context, client_configuration=cfg)
    else:
        k8s_config.load_incluster_config(client_configuration=cfg)
    cfg.connection_pool_maxsize = 32  # one client serves concurrent diagnoses (the executor's 32 threads)
    cfg.retries = urllib3.Retry(
        total=3,
        backoff_factor=0.2,
        status_forcelist=(429, 500, 502, 503, 504),
        allowed_methods=frozenset({"GET"}),
        raise_on_status=False,
        respect_retry_after_header=True,
    )
    return cfg


def build_api_client(config: KubeConfig, allow: Iterable[tuple[str, str]] = ()) -> ReadOnlyApiClient:
    """The read-only ``ApiClient`` for ``config`` (``allow``: see :class:`ReadOnlyGuard`)."""
    return ReadOnlyApiClient(configuration=build_configuration(config), allow=allow)


@dataclass
class Tier2Failure:
    """A Tier 2 read that failed: ``what`` (e.g. "previous logs of container x") and ``why`` ("HTTP 403")."""

    what: str
    why: str


@dataclass
class Tier2Evidence:
    """What Tier 2 returned for one pod. ``logs`` maps (container, previous) to text (UTF-8, lossy)."""

    namespace: str
    pod_name: str
    pod: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[tuple[str, bool], str] = field(default_factory=dict)
    node: dict[str, Any] | None = None
    node_events: list[dict[str, Any]] = field(default_factory=list)
    failures: list[Tier2Failure] = field(default_factory=list)


def _why(exc: BaseException) -> str:
    if isinstance(exc, ApiException):
        reason = ""
        try:
            reason = json.loads(exc.body or "{}").get("message", "")
        except (ValueError, AttributeError):
            reason = str(exc.reason or "")
        return f"HTTP {exc.status}" + (f" ({reason[:160]})" if reason else "")
    return f"{type(exc).__name__}: {str(exc)[:160]}"


async def _recorded(path: str, query: list[tuple[str, str]], read: Any) -> Any:
    """Await ``read`` (a Tier 2 read of ``GET path?query``); inside :func:`diagnosis.http.recording` its answer
    is kept too (the body as bytes: JSON for objects, the log's exact bytes), as is an HTTP error's status."""
    recorder = RECORDER.get()
    if recorder is None:
        return await read
    try:
        result = await read
    except ApiException as exc:
        body = exc.body if isinstance(exc.body, bytes) else str(exc.body or "").encode()
        status = int(exc.status) if exc.status else None
        recorder.add(RecordedResponse("kubernetes", "GET", path, query, status, [status], body, error=exc.reason))
        raise
    except Exception as exc:
        recorder.add(RecordedResponse("kubernetes", "GET", path, query, None, [None], error=type(exc).__name__))
        raise
    data = result if isinstance(result, bytes) else json.dumps(result).encode()
    recorder.add(RecordedResponse("kubernetes", "GET", path, query, 200, [200], data))
    return result


class Tier2Source:
    """Read-only Kubernetes reads for one diagnosis. Raises nothing: failures become :class:`Tier2Failure`."""

    def __init__(self, config: KubeConfig) -> None:
        self.api_client = build_api_client(config)
        self.core = k8s_client.CoreV1Api(self.api_client)

    def close(self) -> None:
        self.api_client.close()

    def _json(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        response = fn(*args, _preload_content=False, _request_timeout=REQUEST_TIMEOUT, **kwargs)
        return json.loads(response.data)

    async def read_pod(self, namespace: str, name: str) -> dict[str, Any]:
        """``GET /api/v1/namespaces/{ns}/pods/{name}`` as a dict."""
        return await _recorded(
            f"/api/v1/namespaces/{namespace}/pods/{name}",
            [],
            in_thread(self._json, self.core.read_namespaced_pod, name, namespace),
        )

    async def pod_events(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """Events whose ``involvedObject.name`` is the pod."""
        body = await _recorded(
            f"/api/v1/namespaces/{namespace}/events",
            [("fieldSelector", f"involvedObject.name={name}")],
            in_thread(
                self._json, self.core.list_namespaced_event, namespace, field_selector=f"involvedObject.name={name}"
            ),
        )
        return list(body.get("items") or [])

    async def node_events(self, name: str) -> list[dict[str, Any]]:
        """Events of node ``name`` in every namespace (``GET /api/v1/events?fieldSelector=involvedObject.kind=Node,
        involvedObject.name=<node>``): where GPU health monitors and the kubelet report Xid and ECC faults."""
        selector = f"involvedObject.kind=Node,involvedObject.name={name}"
        body = await _recorded(
            "/api/v1/events",
            [("fieldSelector", selector)],
            in_thread(self._json, self.core.list_event_for_all_namespaces, field_selector=selector),
        )
        return list(body.get("items") or [])

    async def read_log(self, namespace: str, name: str, container: str, previous: bool) -> str:
        """The last :data:`LOG_TAIL_LINES` lines (at most :data:`LOG_LIMIT_BYTES` bytes), decoded lossily."""

        def call() -> bytes:
            response = self.core.read_namespaced_pod_log(
                name,
                namespace,
                container=container,
                previous=previous,
                tail_lines=LOG_TAIL_LINES,
                limit_bytes=LOG_LIMIT_BYTES,
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT,
            )
            return bytes(response.data)  # type: ignore[attr-defined]

        query = [("container", container), ("previous", str(previous).lower())]
        query += [("tailLines", str(LOG_TAIL_LINES)), ("limitBytes", str(LOG_LIMIT_BYTES))]
        data = await _recorded(f"/api/v1/namespaces/{namespace}/pods/{name}/log", query, in_thread(call))
        return str(data.decode("utf-8", errors="replace"))

    async def read_node(self, name: str) -> dict[str, Any]:
        """``GET /api/v1/nodes/{name}`` as a dict."""
        return await _recorded(f"/api/v1/nodes/{name}", [], in_thread(self._json, self.core.read_node, name))

    async def add_node(self, evidence: Tier2Evidence, name: str) -> None:
        """Read node ``name`` and its events into ``evidence``, concurrently (a failure is recorded there, never
        raised)."""
        node, events = await asyncio.gather(self.read_node(name), self.node_events(name), return_exceptions=True)
        for what, result in ((f"node {name}", node), (f"events of node {name}", events)):
            if isinstance(result, ReadOnlyViolation):
                raise result
            if isinstance(result, BaseException):
                evidence.failures.append(Tier2Failure(what, _why(result)))
        if isinstance(node, dict):
            evidence.node = node
        if isinstance(events, list):
            evidence.node_events = events

    async def collect(
        self,
        namespace: str,
        pod_name: str,
        containers: list[str],
        node_name: str | None,
    ) -> Tier2Evidence:
        """Pod, its events, current and previous logs of ``containers``, and ``node_name`` (if given), in parallel.

        Logs of containers discovered only in the pod (init containers) are fetched in a second round.
        """
        out = Tier2Evidence(namespace=namespace, pod_name=pod_name)

        async def guarded(what: str, coro: Any) -> Any:
            try:
                return await coro
            except ReadOnlyViolation:
                raise
            except Exception as exc:
                out.failures.append(Tier2Failure(what, _why(exc)))
                return None

        async def logs_for(names: list[str]) -> None:
            pairs = [(c, prev) for c in names for prev in (True, False)]
            texts = await asyncio.gather(*(self._log_or_none(namespace, pod_name, c, prev) for c, prev in pairs))
            failed: dict[str, str] = {}
            for (c, prev), text in zip(pairs, texts, strict=True):
                if isinstance(text, str):
                    out.logs[(c, prev)] = text
                else:
                    failed[c] = text[1]
            for c, why in failed.items():
                if (c, True) not in out.logs and (c, False) not in out.logs:
                    out.failures.append(Tier2Failure(f"logs of container {c}", why))

        tasks: list[Any] = [
            guarded(f"pod {namespace}/{pod_name}", self.read_pod(namespace, pod_name)),
            guarded(f"events of pod {pod_name}", self.pod_events(namespace, pod_name)),
            logs_for(containers),
        ]
        if node_name:
            tasks.append(guarded(f"node {node_name}", self.read_node(node_name)))
            tasks.append(guarded(f"events of node {node_name}", self.node_events(node_name)))
        results = await asyncio.gather(*tasks)
        out.pod, events = results[0], results[1]
        out.events = events or []
        if node_name:
            out.node = results[3]
            out.node_events = results[4] or []
        if out.pod:
            status = out.pod.get("status") or {}
            known = set(containers)
            extra = [
                cs.get("name")
                for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
                if cs.get("name") and cs.get("name") not in known
            ]
            if extra:
                await logs_for([str(c) for c in extra])
        return out

    async def _log_or_none(self, namespace: str, pod: str, container: str, previous: bool) -> str | tuple[None, str]:
        """The log text, or ``(None, why)`` when it cannot be read (400: no such container run)."""
        try:
            return await self.read_log(namespace, pod, container, previous)
        except ReadOnlyViolation:
            raise
        except Exception as exc:
            return (None, _why(exc))


_SourceKey = tuple[str | None, float, bool, str | None]
_SOURCES: OrderedDict[_SourceKey, Tier2Source] = OrderedDict()
#: One source per cluster's context (and per kubeconfig version): room for a tenant's clusters.
_SOURCES_MAX = 32


def _mtime(paths: str | None) -> float:
    """The newest modification time of a kubeconfig path list (``KUBECONFIG`` may join several); -1 if unreadable."""
    if not paths:
        return 0.0
    try:
        return max(os.stat(os.path.expanduser(p)).st_mtime for p in paths.split(os.pathsep) if p)
    except (OSError, ValueError):
        return -1.0


async def shared_source(config: KubeConfig) -> Tier2Source:
    """A process-wide :class:`Tier2Source` per kubeconfig (file path and modification time) and context: loading a
    kubeconfig and building a client costs milliseconds of CPU that every diagnosis would otherwise repeat.
    ``config`` serves one cluster (:meth:`KubeConfig.for_cluster`). Raises what loading the configuration raises."""
    key: _SourceKey = (config.kubeconfig, _mtime(config.kubeconfig), config.in_cluster, config.context)
    source = _SOURCES.get(key)
    if source is None:
        source = await in_thread(Tier2Source, config)
        _SOURCES[key] = source
        while len(_SOURCES) > _SOURCES_MAX:
            _, old = _SOURCES.popitem(last=False)
            old.close()
    else:
        _SOURCES.move_to_end(key)
    return source


#: How far a Tier 2 pod's ``creationTimestamp`` may be from the ``createdAt`` Run:ai reported for the pod of that
#: name before it is taken for another pod of the same name (a recreated replica, another cluster's pod).
POD_CREATED_TOLERANCE = timedelta(minutes=5)


def pod_mismatch(
    pod: dict[str, Any],
    namespace: str,
    name: str,
    created_at: datetime | None,
    tolerance: timedelta = POD_CREATED_TOLERANCE,
) -> str | None:
    """Why the Kubernetes ``pod`` is not the pod Run:ai reported as ``namespace/name`` created at ``created_at``,
    or None when it is (or cannot be told apart). Run:ai's pod ``id`` is not the Kubernetes ``metadata.uid``, so
    identity is namespace, name and a creation time within ``tolerance`` (checked when both times are known)."""
    raw_meta = pod.get("metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    got_ns, got_name = meta.get("namespace"), meta.get("name")
    if got_name is not None and got_name != name:
        return f"Kubernetes answered with pod {got_name!r}, not {name!r}"
    if got_ns is not None and got_ns != namespace:
        return f"Kubernetes answered with a pod in namespace {got_ns!r}, not {namespace!r}"
    stamp = meta.get("creationTimestamp")
    created = parse_time(stamp) if isinstance(stamp, str) else None
    reported = parse_time(created_at)
    if created is not None and reported is not None:
        created, reported = created.astimezone(UTC), reported.astimezone(UTC)
        if abs(created - reported) > tolerance:
            return (
                f"the Kubernetes pod of that name was created at {created:%Y-%m-%d %H:%M:%S}Z, but Run:ai reports its "
                f"pod created at {reported:%Y-%m-%d %H:%M:%S}Z (more than "
                f"{int(tolerance.total_seconds() // 60)} min apart): it is another pod of the same name"
            )
    return None
