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
from typing import Any, TypeVar
from urllib.parse import urlsplit

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client import rest as k8s_rest
from kubernetes.client.rest import ApiException

from diagnosis.config import KubeConfig
from diagnosis.http import ReadOnlyViolation

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
        return super().request(method, url, *args, **kwargs)


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
    """The client configuration Tier 2 uses: the kubeconfig (or in-cluster config), a pool of 32, GET retries."""
    cfg = k8s_client.Configuration()
    if config.kubeconfig:
        k8s_config.load_kube_config(config_file=config.kubeconfig, client_configuration=cfg)
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
        return await in_thread(self._json, self.core.read_namespaced_pod, name, namespace)

    async def pod_events(self, namespace: str, name: str) -> list[dict[str, Any]]:
        """Events whose ``involvedObject.name`` is the pod."""
        body = await in_thread(
            self._json, self.core.list_namespaced_event, namespace, field_selector=f"involvedObject.name={name}"
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

        data = await in_thread(call)
        return data.decode("utf-8", errors="replace")

    async def read_node(self, name: str) -> dict[str, Any]:
        """``GET /api/v1/nodes/{name}`` as a dict."""
        return await in_thread(self._json, self.core.read_node, name)

    async def add_node(self, evidence: Tier2Evidence, name: str) -> None:
        """Read node ``name`` into ``evidence`` (a failure is recorded there, never raised)."""
        try:
            evidence.node = await self.read_node(name)
        except ReadOnlyViolation:
            raise
        except Exception as exc:
            evidence.failures.append(Tier2Failure(f"node {name}", _why(exc)))

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
        results = await asyncio.gather(*tasks)
        out.pod, events = results[0], results[1]
        out.events = events or []
        if node_name:
            out.node = results[3]
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


_SOURCES: OrderedDict[tuple[str | None, float, bool], Tier2Source] = OrderedDict()
_SOURCES_MAX = 4


async def shared_source(config: KubeConfig) -> Tier2Source:
    """A process-wide :class:`Tier2Source` per kubeconfig (file path and modification time): loading a
    kubeconfig and building a client costs milliseconds of CPU that every diagnosis would otherwise repeat.
    Raises what loading the configuration raises."""
    mtime = 0.0
    if config.kubeconfig:
        try:
            mtime = os.stat(config.kubeconfig).st_mtime
        except OSError:
            mtime = -1.0
    key = (config.kubeconfig, mtime, config.in_cluster)
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
