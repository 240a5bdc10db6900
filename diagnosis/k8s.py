"""Tier 2 evidence from the cluster's Kubernetes API (optional, read-only), with the ``kubernetes`` package.

Spec Step 4: ``kubectl describe pod``, ``kubectl logs --previous``, ``kubectl get events
--field-selector involvedObject.name=<pod>`` and, for a node failure, ``kubectl describe node``.
The blocking client runs in worker threads so independent reads go in parallel.

Read-only is enforced in the HTTP layer: :class:`ReadOnlyApiClient` refuses any method but GET
before a byte is sent. Retries (GET only, on 429/5xx) are urllib3's, configured here.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
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


class ReadOnlyApiClient(k8s_client.ApiClient):
    """An ``ApiClient`` whose every non-GET request raises :class:`ReadOnlyViolation`."""

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if method.upper() != "GET":
            raise ReadOnlyViolation(f"read-only: refusing {method} {url}")
        parent = super()
        return parent.request(method, url, *args, **kwargs)  # type: ignore[attr-defined]


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
        self.api_client = ReadOnlyApiClient(configuration=cfg)
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
