"""Tier 2 evidence from the cluster's Kubernetes API (optional, read-only), with the ``kubernetes`` package.

Spec Step 4: ``kubectl describe pod``, ``kubectl logs --previous``, ``kubectl get events
--field-selector involvedObject.name=<pod>`` and, for a node failure, ``kubectl describe node``.
The blocking client runs in worker threads so independent reads go in parallel.

Read-only is enforced where the installed ``kubernetes`` package really sends (see
:class:`ReadOnlyApiClient`): any method but GET raises :class:`ReadOnlyViolation` before a byte is sent.
Retries (GET only, on 429/5xx) are urllib3's, configured here.

Every body is bounded where it is read (:func:`read_bounded`, issue 15 §1): at most ``WD_MAX_BODY_BYTES`` bytes
and the request's read timeout of wall clock, whatever the server sends (an endless body, or headers and then
nothing). Past either, the connection is closed and the read raises :class:`~diagnosis.errors.BodyTooLarge` /
:class:`~diagnosis.errors.BodyTooSlow`: that one read becomes a gap, its worker thread is free again, and the
process can exit.

A log tail keeps its end instead (issue 22 §2). The API server applies ``limitBytes`` to the start of the
``tailLines`` it returns, so a tail longer than :data:`LOG_LIMIT_BYTES` would lose its newest lines, where the
error is. :meth:`Tier2Source.read_log` asks with ``limitBytes`` (one round trip for most logs) and reads the answer
as a tail (:func:`read_tail`: its last :data:`LOG_LIMIT_BYTES`, as whole lines, within :data:`LOG_SECONDS`, however
much a server that ignores ``limitBytes`` sends); an answer that fills ``limitBytes`` is asked again without it and
read the same way. :class:`LogTail` says how much was skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import io
import json
import os
import queue
import re
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Generator, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client import rest as k8s_rest
from kubernetes.client.rest import ApiException

from diagnosis import errors, metrics
from diagnosis.config import KubeConfig
from diagnosis.config import max_body_bytes as env_max_body_bytes
from diagnosis.fetched import Call, Fetched, Read, describe_error, reads
from diagnosis.http import RECORDER, ReadOnlyViolation, RecordedResponse
from diagnosis.tail import Tail, TailRing
from diagnosis.units import parse_time

T = TypeVar("T")
LOG_TAIL_LINES = 200
LOG_LIMIT_BYTES = 64 * 1024
REQUEST_TIMEOUT = (5.0, 15.0)
#: Wall-clock seconds a log tail is read for at most (issue 22 §2): a tail of 200 lines takes far less; a log that
#: never ends (a server ignoring ``tailLines`` and ``limitBytes``) stops here, its end kept.
LOG_SECONDS = 5.0
#: Where Kubernetes records the events about a node (the kubelet's and GPU health monitors').
NODE_EVENTS_NAMESPACE = "default"
#: The label Run:ai puts on every pod of a workload, valued with the workload's name.
WORKLOAD_LABEL = "workloadName"
#: Wall-clock seconds one body may take after its headers when the request names no read timeout.
BODY_SECONDS = 15.0
#: Wall-clock seconds one Tier 2 read may take, its retries included (issue 24: a log read that hung took the pod, its
#: events and every other log with it at the diagnosis deadline). Past it that read alone is a gap.
READ_SECONDS = 20.0
#: Seconds between two checks of a kubeconfig's token for renewal (:func:`_at_most_every`).
TOKEN_CHECK_SECONDS = 10.0
#: Bytes asked of the socket per read while a body is read (the cap is checked between reads).
_READ_CHUNK = 64 * 1024


class DaemonThreads:
    """Daemon threads for blocking calls, each kept ``idle_seconds`` for the next call once it is done (at most
    ``max_idle`` of them): starting a thread per Kubernetes read cost about 0.6 ms of CPU (and a wait for the new
    thread to run) per read.

    Not an executor: a call never waits behind another (with no idle thread, a new one starts), so a read stuck
    where no timeout reaches it (a server sending its headers a byte at a time) holds its own thread only; and a
    daemon thread is abandoned at exit, where ``asyncio.run`` and the interpreter would join an executor's
    threads long after the answer was printed. A waiting thread holds nothing of its last call (a read's result
    or its error stays alive no longer than its caller keeps it). A process forked from this one starts with no
    thread and none counted idle."""

    def __init__(self, idle_seconds: float = 30.0, name: str = "tier2", max_idle: int = 64) -> None:
        self.idle_seconds = idle_seconds
        self.name = name
        self.max_idle = max_idle
        self._reset()
        if hasattr(os, "register_at_fork"):
            # a child inherits the count of idle threads but none of the threads: nothing would run its calls
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = 0  # threads waiting for a job (a job put for one is taken off this count first)
        self._lock = threading.Lock()

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` (which must not raise) in an idle thread, or in a new one. Raises ``RuntimeError`` when
        no thread can be started."""
        with self._lock:
            if self._idle:
                self._idle -= 1
                self._jobs.put(job)
                return
        first = [job]  # handed over, not kept in the thread's arguments for its whole life
        threading.Thread(target=self._run, args=(first,), name=self.name, daemon=True).start()

    def _run(self, first: list[Callable[[], None]]) -> None:
        job: Callable[[], None] | None = first.pop()
        while job is not None:
            job()
            job = None  # the call's closure (its result, its error) is not kept while this thread waits
            with self._lock:
                if self._idle >= self.max_idle:
                    return  # enough threads wait already
                self._idle += 1
            try:
                job = self._jobs.get(timeout=self.idle_seconds)
            except queue.Empty:
                with self._lock:
                    try:  # a job put for an idle thread as this one timed out: this one takes it
                        job = self._jobs.get_nowait()
                    except queue.Empty:
                        self._idle -= 1
                        return


_THREADS = DaemonThreads()


async def in_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run a blocking call in a daemon thread (:class:`DaemonThreads`: never behind another call, abandoned at
    exit) and await its result; the awaiting side stops waiting at its own deadline."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def run() -> None:
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:  # delivered to the awaiting side, which names it as a gap
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                loop.call_soon_threadsafe(settle, False, exc)
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, True, result)

    _THREADS.submit(run)
    return await future


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

    def normalized(self, path: str) -> str:
        """``path`` as a server may read it (issue 23): every segment percent-decoded (again, until it no longer
        changes: a proxy may decode once more), duplicate slashes collapsed. Raises :class:`ReadOnlyViolation` for
        a segment holding an encoded ``/`` (or ``\\``), or a dot segment: a read never needs one, and a server
        that splits or resolves it would see another path than the one checked."""
        segments: list[str] = []
        for raw in path.split("/"):
            segment = raw
            for _ in range(5):
                decoded = unquote(segment)
                if decoded == segment:
                    break
                segment = decoded
            if "/" in segment or "\\" in segment or segment in (".", ".."):
                raise ReadOnlyViolation(f"read-only: refusing {path} (an encoded '/' or a dot segment)")
            if segment:
                segments.append(segment)
        return "/" + "/".join(segments)

    def check(self, method: str, url: str) -> None:
        """Raise :class:`ReadOnlyViolation` unless ``method url`` is a plain GET read or explicitly allowed. The
        path compared is the decoded, normalized one (:meth:`normalized`), the forbidden subresources in any
        letter case."""
        verb = str(method).upper()
        raw = self.path(url)
        path = self.normalized(raw)
        if (verb, raw) in self.allow and raw == path:
            return
        if verb != "GET":
            raise ReadOnlyViolation(f"read-only: refusing {verb} {raw}")
        if _ACTING_SUBRESOURCE.match(path.lower()):
            raise ReadOnlyViolation(f"read-only: refusing {verb} {raw} (acts on the workload)")


def _socket_of(response: urllib3.HTTPResponse) -> socket.socket | None:
    """The socket ``response`` is read from (None once released, or for a response not read from a socket)."""
    connection = response.connection
    sock = getattr(connection, "sock", None) if connection is not None else None
    return sock if isinstance(sock, socket.socket) else None


def _body_chunks(
    response: urllib3.HTTPResponse, path: str, seconds: float, read_timeout: float | None
) -> Generator[bytes]:
    """The (decoded) chunks of ``response``'s body (a urllib3 response opened with ``preload_content=False``) as
    they arrive, for at most ``seconds`` of wall clock from now: past it, raises
    :class:`~diagnosis.errors.BodyTooSlow`.

    Each socket read waits at most the time left (and at most ``read_timeout`` seconds, the request's own), so a
    server that sends nothing cannot hold the thread past ``seconds``. A body read to its end gives its
    connection back to the pool; one left unfinished (an error, or the generator closed) closes it (unread bytes
    must never reach the next request)."""
    status = int(response.status or 0)
    end = time.monotonic() + seconds
    sock = _socket_of(response)
    received = 0
    done = False
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise errors.BodyTooSlow(status, path, seconds, received)
            if sock is not None:
                # why: the socket timeout is what bounds a blocked read; the request's read timeout bounds only
                # each read, so without this a trickle (or silence) would hold this thread for that long again
                sock.settimeout(min(left, read_timeout) if read_timeout else left)
            try:
                # read1: one read of the socket per call, so the wall clock is checked between reads (read(n)
                # waits for n bytes, and a trickle would hold it far past the deadline)
                chunk = response.read1(_READ_CHUNK, decode_content=True)
            except (urllib3.exceptions.ReadTimeoutError, TimeoutError):
                if time.monotonic() >= end - 0.01:
                    raise errors.BodyTooSlow(status, path, seconds, received) from None
                raise
            if not chunk:
                done = True
                return
            received += len(chunk)
            yield chunk
    finally:
        if done:
            response.release_conn()
        else:
            response.close()


def read_bounded(
    response: urllib3.HTTPResponse, path: str, *, limit: int, seconds: float, read_timeout: float | None = None
) -> bytes:
    """The whole (decoded) body of ``response`` (see :func:`_body_chunks`), read in chunks: at most ``limit`` bytes
    and ``seconds`` of wall clock from now.

    Raises :class:`~diagnosis.errors.BodyTooLarge` (more than ``limit`` bytes, or a ``Content-Length`` above it:
    then nothing is read), :class:`~diagnosis.errors.BodyTooSlow` (the wall clock), or what urllib3 raises for a
    broken read."""
    status = int(response.status or 0)
    declared = response.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared.strip()) > limit:
        response.close()
        raise errors.BodyTooLarge(status, path, limit, 0)
    parts: list[bytes] = []
    received = 0
    with contextlib.closing(_body_chunks(response, path, seconds, read_timeout)) as chunks:
        for chunk in chunks:
            received += len(chunk)
            if received > limit:
                raise errors.BodyTooLarge(status, path, limit, received)
            parts.append(chunk)
    return b"".join(parts)


def read_tail(
    response: urllib3.HTTPResponse, path: str, *, keep: int, seconds: float, read_timeout: float | None = None
) -> Tail:
    """The end of ``response``'s body (see :func:`_body_chunks`): its last ``keep`` bytes, as whole lines
    (:class:`~diagnosis.tail.TailRing`), read for at most ``seconds`` of wall clock, however many bytes come
    (issue 22 §2: a log's end is where its error is; memory and time bound the read, not its length).

    A body still arriving at the wall clock is stopped there, and one whose connection breaks ends there: what
    was kept is returned (``stopped``, ``broken``), unless it holds no whole line, when the error is raised
    (:class:`~diagnosis.errors.BodyTooSlow`, or urllib3's): nothing of it is usable."""
    ring = TailRing(keep)
    try:
        with contextlib.closing(_body_chunks(response, path, seconds, read_timeout)) as chunks:
            for chunk in chunks:
                ring.add(chunk)
    except errors.BodyTooSlow:
        tail = ring.tail(stopped=seconds)
        if not tail.data:
            raise
        return tail
    except (urllib3.exceptions.HTTPError, OSError):
        tail = ring.tail(broken=True)
        if not tail.data:
            raise
        return tail
    return ring.tail()


def _preloaded(response: urllib3.HTTPResponse, data: bytes, method: str, url: str) -> urllib3.HTTPResponse:
    """A urllib3 response holding ``data`` (already decoded) with ``response``'s status and headers: what the
    ``kubernetes`` package and its callers read (``.data``, ``.status``, ``getheaders()``) as before."""
    headers = urllib3.HTTPHeaderDict(response.headers)
    for name in ("content-encoding", "content-length", "transfer-encoding"):
        headers.discard(name)
    return urllib3.HTTPResponse(
        body=io.BytesIO(data),
        headers=headers,
        status=response.status,
        reason=response.reason,
        preload_content=False,
        decode_content=False,
        request_method=method,
        request_url=url,
    )


def _read_timeout(timeout: Any) -> float | None:
    """The read timeout, seconds, of a ``_request_timeout`` (a number is the total; a pair is (connect, read))."""
    if isinstance(timeout, int | float) and not isinstance(timeout, bool):
        return float(timeout)
    if isinstance(timeout, tuple) and len(timeout) == 2 and isinstance(timeout[1], int | float):
        return float(timeout[1])
    return None


@dataclass
class _TailRead:
    """A read whose 2xx body is kept as its last ``keep`` bytes (:func:`read_tail`) instead of whole: set in
    :data:`_TAIL_READ` around one request, which puts the :class:`~diagnosis.tail.Tail` in ``tail``."""

    keep: int
    seconds: float = LOG_SECONDS
    tail: Tail | None = None


#: The tail read of the request this thread is sending (see :class:`_TailRead`); None: bodies are read whole.
_TAIL_READ: contextvars.ContextVar[_TailRead | None] = contextvars.ContextVar("k8s_tail_read", default=None)


class _ReadOnlyRESTClient(k8s_rest.RESTClientObject):
    """The package's REST client with the guard in front of it and in front of its urllib3 pool.

    ``RESTClientObject.request`` is where every generated API method ends (``call_api`` calls it in the
    37.x client; ``ApiClient.request`` called it in the older generator), and ``pool_manager.urlopen`` is
    where urllib3 sends (``request``, redirects and retries all go through it). Both check first.

    Every body is read here, bounded (:func:`read_bounded`: ``max_body_bytes`` bytes; the request's read
    timeout, else ``body_seconds``, of wall clock), before the package or a caller sees the response, so
    ``_preload_content=False`` callers get a body already in memory and error bodies are bounded too. A log tail
    asked for with :data:`_TAIL_READ` keeps its last bytes instead (:func:`read_tail`: memory and a wall clock,
    at most the read timeout, bound it, not its length).
    """

    def __init__(
        self,
        configuration: Any,
        guard: ReadOnlyGuard,
        *args: Any,
        max_body_bytes: int | None = None,
        body_seconds: float = BODY_SECONDS,
        **kwargs: Any,
    ) -> None:
        super().__init__(configuration, *args, **kwargs)
        self.guard = guard
        self.max_body_bytes = max_body_bytes if max_body_bytes is not None else env_max_body_bytes()
        self.body_seconds = body_seconds
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
            raw = getattr(response, "response", None)
            if isinstance(raw, urllib3.HTTPResponse):
                read_timeout = _read_timeout(kwargs.get("_request_timeout"))
                seconds = read_timeout or self.body_seconds
                wanted = _TAIL_READ.get()
                if wanted is not None and 200 <= int(raw.status or 0) < 300:
                    seconds = min(seconds, wanted.seconds)
                    wanted.tail = read_tail(raw, path, keep=wanted.keep, seconds=seconds, read_timeout=read_timeout)
                    data = wanted.tail.data
                else:
                    data = read_bounded(
                        raw, path, limit=self.max_body_bytes, seconds=seconds, read_timeout=read_timeout
                    )
                response.response = _preloaded(raw, data, method, url)
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
        self,
        configuration: Any = None,
        *args: Any,
        allow: Iterable[tuple[str, str]] = (),
        max_body_bytes: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(configuration, *args, **kwargs)
        self.guard = ReadOnlyGuard(self.configuration.host, allow)
        unguarded = self.rest_client
        # ``max_body_bytes`` None: ``WD_MAX_BODY_BYTES`` (see :func:`read_bounded`)
        self.rest_client = _ReadOnlyRESTClient(self.configuration, self.guard, max_body_bytes=max_body_bytes)
        unguarded.pool_manager.clear()  # never used: it has sent nothing and holds no connection
        object.__setattr__(self, "_sealed", True)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._SEALED and self.__dict__.get("_sealed"):
            if value == getattr(self, name, None):
                return  # putting back what is already there (kubernetes.stream's ``finally``)
            raise ReadOnlyViolation(f"read-only: refusing to replace {name} of the Kubernetes client")
        super().__setattr__(name, value)


def _whole_lines(data: bytes, limit: int) -> bytes:
    """``data`` without its last line when the server cut it at ``limit`` bytes (``limitBytes``) mid-line: a cut
    line may end inside a credential, which the redaction rules only recognise whole ("AKIAIOSFOD…")."""
    if len(data) < limit or data.endswith(b"\n"):
        return data
    cut = data.rfind(b"\n")
    return data[: cut + 1] if cut >= 0 else b""


@dataclass(frozen=True)
class LogTail:
    """A container's log tail as read (issue 22 §2): ``text`` its newest whole lines, at most
    :data:`LOG_LIMIT_BYTES` (UTF-8, decoded lossily); ``skipped`` the bytes of the tail before ``text``, not
    shown; ``stopped`` the wall-clock seconds after which the read was stopped, ``broken`` whether its connection
    broke (either way its newest lines may be missing); ``unread`` why the end of a tail that filled
    ``limitBytes`` could not be read (``text`` is then its start)."""

    text: str
    skipped: int = 0
    stopped: float | None = None
    broken: bool = False
    unread: str | None = None

    @classmethod
    def of(cls, tail: Tail) -> LogTail:
        text = tail.data.decode("utf-8", errors="replace")
        return cls(text, skipped=tail.skipped, stopped=tail.stopped, broken=tail.broken)

    @property
    def cut(self) -> bool:
        """Whether part of the tail is not in :attr:`text`."""
        return bool(self.skipped) or self.stopped is not None or self.broken or self.unread is not None

    def note(self, container: str, previous: bool) -> str | None:
        """The report's sentence on what of this log is not shown (None: nothing): how much was skipped, and
        why. ``container`` and ``previous`` name the log."""
        whose = f"{'previous ' if previous else ''}log of container {container}"
        lines, keep = f"last {LOG_TAIL_LINES} lines", errors.size(LOG_LIMIT_BYTES)
        if self.unread is not None:
            return (
                f"The {whose} shown is only the start of its {lines}: they are longer than {keep}, "
                f"and their end could not be read ({self.unread})."
            )
        said: list[str] = []
        if self.skipped and self.text:
            said.append(
                f"The {whose} shown is the end of its {lines}: their first {errors.size(self.skipped)} were skipped "
                f"(Tier 2 keeps the last {keep} of a log)."
            )
        elif self.skipped:
            said.append(
                f"The {whose} is not shown: its last line alone is longer than the {keep} Tier 2 "
                f"keeps ({errors.size(self.skipped)} skipped)."
            )
        if self.stopped is not None:
            said.append(f"The {whose} was still arriving after {self.stopped:g} s: its newest lines may be missing.")
        elif self.broken:
            said.append(f"The connection broke while the {whose} was read: its newest lines may be missing.")
        return " ".join(said) or None


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
    if cfg.refresh_api_key_hook is not None:
        cfg.refresh_api_key_hook = _at_most_every(cfg.refresh_api_key_hook, TOKEN_CHECK_SECONDS)
    # connections kept open for the next read (not a bound on reads at once): a worker answers up to 32 questions
    # at once, about 6 reads each; a smaller pool closed the connections it could not keep ("pool is full")
    cfg.connection_pool_maxsize = 128
    cfg.retries = urllib3.Retry(
        total=3,
        backoff_factor=0.2,
        status_forcelist=(429, 500, 502, 503, 504),
        allowed_methods=frozenset({"GET"}),
        raise_on_status=False,
        respect_retry_after_header=True,
    )
    return cfg


def _at_most_every(hook: Callable[[Any], None], seconds: float) -> Callable[[Any], None]:
    """``hook`` (the kubernetes package's token refresh, which re-sets the whole configuration and reads the
    proxy environment again) run at most once per ``seconds``, not before every request: the loaders renew a token
    5 minutes before it expires, so checking every ``seconds`` loses nothing. One thread checks at a time (the
    Tier 2 reads run in several); a check that raised (an exec plugin failing) is tried again at the next request."""
    last = -float("inf")
    lock = threading.Lock()

    def hook_at_most_every(configuration: Any) -> None:
        nonlocal hook, last
        with lock:
            if time.monotonic() - last < seconds:
                return
            hook(configuration)
            last = time.monotonic()
            # the loader's refresh installs its hook again: keep this one in front of the new one
            if configuration.refresh_api_key_hook is not hook_at_most_every:
                hook = configuration.refresh_api_key_hook
                configuration.refresh_api_key_hook = hook_at_most_every

    return hook_at_most_every


def build_api_client(config: KubeConfig, allow: Iterable[tuple[str, str]] = ()) -> ReadOnlyApiClient:
    """The read-only ``ApiClient`` for ``config`` (``allow``: see :class:`ReadOnlyGuard`)."""
    return ReadOnlyApiClient(configuration=build_configuration(config), allow=allow)


class KubeCalls:
    """The Tier 2 reads by name (issue 10 §2): each :class:`~diagnosis.fetched.Call` carries the gap's ``label``,
    the REST path and the ``kubectl`` command a person can rerun, which the evidence cites (``call.source``)."""

    @staticmethod
    def pod(namespace: str, name: str) -> Call:
        return Call(
            label=f"pod {namespace}/{name}",
            path=f"/api/v1/namespaces/{namespace}/pods/{name}",
            system="kubernetes",
            command=f"kubectl describe pod {name} -n {namespace}",
        )

    @staticmethod
    def pod_events(namespace: str, name: str) -> Call:
        return Call(
            label=f"events of pod {name}",
            path=f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name={name}",
            system="kubernetes",
            command=f"kubectl get events -n {namespace} --field-selector involvedObject.name={name}",
        )

    @staticmethod
    def log(namespace: str, name: str, container: str, previous: bool) -> Call:
        flag = " --previous" if previous else ""
        return Call(
            label=f"logs of container {container}",
            path=f"/api/v1/namespaces/{namespace}/pods/{name}/log?container={container}&previous={str(previous).lower()}",
            system="kubernetes",
            command=f"kubectl logs {name} -n {namespace} -c {container}{flag}",
        )

    @staticmethod
    def node(name: str | None) -> Call:
        return Call(
            label=f"node {name}",
            path=f"/api/v1/nodes/{name}",
            system="kubernetes",
            command=f"kubectl describe node {name}",
        )

    @staticmethod
    def node_events(name: str | None) -> Call:
        selector = f"involvedObject.kind=Node,involvedObject.name={name}"
        return Call(
            label=f"events of node {name}",
            path=f"/api/v1/namespaces/{NODE_EVENTS_NAMESPACE}/events?fieldSelector={selector}",
            system="kubernetes",
            command=f"kubectl get events -n {NODE_EVENTS_NAMESPACE} --field-selector {selector}",
        )

    @staticmethod
    def workload_pods(namespace: str, workload: str) -> Call:
        return Call(
            label=f"pods of workload {workload}",
            path=f"/api/v1/namespaces/{namespace}/pods?labelSelector={WORKLOAD_LABEL}={workload}",
            system="kubernetes",
            command=f"kubectl get pods -n {namespace} -l {WORKLOAD_LABEL}={workload} -o yaml",
        )


@dataclass
class Tier2Evidence:
    """What Tier 2 returned for one pod. ``logs`` maps (container, previous) to text (UTF-8, lossy);
    ``failures`` are the reads that failed, as :class:`~diagnosis.fetched.Fetched` results without a value
    (``what`` the gap's subject, ``why`` from :func:`describe_tier2_error`)."""

    namespace: str
    pod_name: str
    pod: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[tuple[str, bool], str] = field(default_factory=dict)
    node: dict[str, Any] | None = None
    node_events: list[dict[str, Any]] = field(default_factory=list)
    failures: list[Fetched[Any]] = field(default_factory=list)
    #: the logs of ``logs`` that are not whole (:attr:`LogTail.cut`): how much was skipped, for the report
    log_cuts: dict[tuple[str, bool], LogTail] = field(default_factory=dict)
    #: the pod objects of the inspected pod's failing peers, by name (their terminal container states: when each
    #: ended and how, for the incident timeline), read beside it
    peers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the pods Kubernetes lists with the workload's label (every replica and attempt it still has), by name;
    #: None when they were not listed
    workload_pods: dict[str, dict[str, Any]] | None = None

    def failed(self, call: Call, exc: BaseException) -> None:
        """Record that ``call`` failed with ``exc`` (the gap "what" is the call's label)."""
        self.failures.append(Fetched(call, why=describe_tier2_error(exc)))


#: The API server's RBAC refusal: ``... cannot list resource "events" in API group "" in the namespace "default"``
#: (or ``at the cluster scope``).
_FORBIDDEN = re.compile(
    r'cannot (?P<verb>[a-z]+) resource "(?P<resource>[^"]+)" in API group "(?P<group>[^"]*)"'
    r'(?: in the namespace "(?P<namespace>[^"]+)"| at the cluster scope)'
)


def missing_permission(message: str) -> str | None:
    """The permission a 403 ``Status`` message says is missing, as a person names it: ``events in namespace
    default: list is forbidden``, ``nodes (cluster-wide): get is forbidden``; None when it names none."""
    m = _FORBIDDEN.search(message)
    if m is None:
        return None
    resource = m["resource"] + (f".{m['group']}" if m["group"] else "")
    where = f"in namespace {m['namespace']}" if m["namespace"] else "(cluster-wide)"
    return f"{resource} {where}: {m['verb']} is forbidden"


class KubeApiError(errors.ApiError):
    """A Kubernetes API error answer (``kubernetes.client.ApiException``) in the shared vocabulary. The gap names
    the status and the server's message as ``kubectl`` would: urllib3 retries 429/5xx before it is raised, but
    Tier 2 gaps have always said the status alone, so ``retried`` is False. A 403 names the permission the
    bot's RBAC lacks (issue 22 §1)."""

    @property
    def retried(self) -> bool:
        return False

    def describe(self) -> str:
        missing = missing_permission(self.message) if self.status == 403 else None
        if missing is not None:
            return f"HTTP 403: {missing} (the bot's Kubernetes RBAC does not grant it; see deploy/base/rbac.yaml)"
        return super().describe()


def as_shared_error(exc: BaseException) -> BaseException:
    """``exc`` in the shared vocabulary of :mod:`diagnosis.errors`: an ``ApiException`` becomes a
    :class:`KubeApiError` (its message from the JSON body, else the reason, cut at 160 characters); any other
    error is returned as it is."""
    if not isinstance(exc, ApiException):
        return exc
    reason = ""
    try:
        reason = json.loads(exc.body or "{}").get("message", "")
    except (ValueError, AttributeError):
        reason = str(exc.reason or "")
    status = int(exc.status or 0)
    # a refusal's message is kept whole enough to name the permission (it is the API server's own wording)
    return KubeApiError(status, "", str(reason or "")[: 400 if status == 403 else 160])


def describe_tier2_error(exc: BaseException) -> str:
    """The ``why`` of a failed Tier 2 read: :func:`diagnosis.fetched.describe_error` of
    :func:`as_shared_error` (``"HTTP 403 (pods is forbidden: …)"``; other errors by type and message)."""
    return describe_error(as_shared_error(exc))


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
    if isinstance(result, Tail):
        data = result.data  # a log tail: the bytes kept
    else:
        data = result if isinstance(result, bytes) else json.dumps(result).encode()
    recorder.add(RecordedResponse("kubernetes", "GET", path, query, 200, [200], data))
    return result


def _json_kind(value: Any) -> str:
    """What a JSON value is, for a person: ``a string``, ``a list``, ``a number``, ``null``."""
    if value is None:
        return "null"
    kinds = {str: "a string", list: "a list", int: "a number", float: "a number", bool: "a boolean"}
    return kinds.get(type(value), type(value).__name__)


class ReadTooSlow(Exception):
    """A Tier 2 read that did not answer within its own wall clock (:data:`READ_SECONDS`)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no answer within {seconds:g} s (this read's own deadline; the other reads went on)")


async def within(read: Read[T], seconds: float) -> T:
    """``await read``, for at most ``seconds`` of wall clock; past them :class:`ReadTooSlow` (its worker thread is
    left to end on its own timeouts: a daemon, see :func:`in_thread`)."""
    bound = asyncio.timeout(seconds)
    try:
        async with bound:
            return await read
    except TimeoutError:
        if bound.expired():
            raise ReadTooSlow(seconds) from None
        raise  # the read's own (a socket's): described as such


class Tier2Source:
    """Read-only Kubernetes reads for one diagnosis. Raises nothing (but a read-only violation): a failed read
    becomes one of :attr:`Tier2Evidence.failures`. Each read method returns a :class:`~diagnosis.fetched.Read`
    whose call (one of :class:`KubeCalls`) is built from the same arguments."""

    def __init__(self, config: KubeConfig) -> None:
        self.api_client = build_api_client(config)
        self.core = k8s_client.CoreV1Api(self.api_client)

    def close(self) -> None:
        self.api_client.close()

    def _json(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        response = fn(*args, _preload_content=False, _request_timeout=REQUEST_TIMEOUT, **kwargs)
        return json.loads(response.data)

    @reads(lambda namespace, name, **_: KubeCalls.pod(namespace, name))
    async def read_pod(self, namespace: str, name: str) -> dict[str, Any]:
        """``GET /api/v1/namespaces/{ns}/pods/{name}`` as a dict; a pod that is not an object, or whose ``status``
        is not one, is a :class:`diagnosis.errors.BadResponse` naming it (issue 15 §5: a named gap, not a crash)."""
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        pod = await _recorded(path, [], in_thread(self._json, self.core.read_namespaced_pod, name, namespace))
        if not isinstance(pod, dict):
            raise errors.BadResponse(200, path, f"the pod is {_json_kind(pod)}, not an object")
        if not isinstance(pod.get("status"), dict | None):
            raise errors.BadResponse(200, path, f"the pod's status is {_json_kind(pod['status'])}, not an object")
        return pod

    @reads(lambda namespace, name, **_: KubeCalls.pod_events(namespace, name))
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

    @reads(lambda name, **_: KubeCalls.node_events(name))
    async def node_events(self, name: str) -> list[dict[str, Any]]:
        """Events of node ``name`` (``GET /api/v1/namespaces/default/events?fieldSelector=involvedObject.kind=Node,
        involvedObject.name=<node>``): where the kubelet and GPU health monitors report NotReady, Xid and ECC
        faults. Read in :data:`NODE_EVENTS_NAMESPACE` only, which the shipped RBAC grants with a Role there (a
        cluster-wide list of events would need every namespace's events: issue 22 §1)."""
        selector = f"involvedObject.kind=Node,involvedObject.name={name}"
        body = await _recorded(
            f"/api/v1/namespaces/{NODE_EVENTS_NAMESPACE}/events",
            [("fieldSelector", selector)],
            in_thread(self._json, self.core.list_namespaced_event, NODE_EVENTS_NAMESPACE, field_selector=selector),
        )
        return list(body.get("items") or [])

    @reads(lambda namespace, workload, **_: KubeCalls.workload_pods(namespace, workload))
    async def workload_pods(self, namespace: str, workload: str) -> list[dict[str, Any]]:
        """The pods of ``namespace`` labelled ``workloadName=<workload>`` (``GET /api/v1/namespaces/{ns}/pods?
        labelSelector=...``), as dicts: every attempt and replica Kubernetes still has, with its container
        states (issue 19 §1: the incident timeline)."""
        selector = f"{WORKLOAD_LABEL}={workload}"
        body = await _recorded(
            f"/api/v1/namespaces/{namespace}/pods",
            [("labelSelector", selector)],
            in_thread(self._json, self.core.list_namespaced_pod, namespace, label_selector=selector),
        )
        items = body.get("items") if isinstance(body, dict) else None
        if not isinstance(items, list):
            raise errors.BadResponse(200, f"/api/v1/namespaces/{namespace}/pods", "the pod list has no items list")
        return [p for p in items if isinstance(p, dict)]

    @reads(lambda namespace, name, container, previous, **_: KubeCalls.log(namespace, name, container, previous))
    async def read_log(self, namespace: str, name: str, container: str, previous: bool) -> LogTail:
        """The end of the last :data:`LOG_TAIL_LINES` lines: at most :data:`LOG_LIMIT_BYTES` of whole lines.

        Asked with ``limitBytes`` first: most tails are shorter, and that is the one round trip. The server applies
        ``limitBytes`` to the start of the tail, so an answer that fills it lacks the newest lines: the tail is
        then asked again without it and read as a stream whose last bytes are kept (:func:`read_tail`). A server
        that ignores ``limitBytes`` has its answer trimmed the same way (its end kept)."""
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/log"
        query = [("container", container), ("previous", str(previous).lower()), ("tailLines", str(LOG_TAIL_LINES))]
        limited: Tail = await _recorded(
            path,
            [*query, ("limitBytes", str(LOG_LIMIT_BYTES))],
            in_thread(self._log_tail, namespace, name, container, previous, LOG_LIMIT_BYTES),
        )
        if limited.received != LOG_LIMIT_BYTES or limited.stopped is not None or limited.broken:
            return LogTail.of(limited)  # the whole tail, or the end of what a server ignoring limitBytes sent
        try:
            whole: Tail = await _recorded(
                path, query, in_thread(self._log_tail, namespace, name, container, previous, None)
            )
        except ReadOnlyViolation:
            raise
        except Exception as exc:
            start = _whole_lines(limited.data, LOG_LIMIT_BYTES).decode("utf-8", errors="replace")
            return LogTail(start, unread=describe_tier2_error(exc))
        return LogTail.of(whole)

    def _log_tail(self, namespace: str, name: str, container: str, previous: bool, limit_bytes: int | None) -> Tail:
        """One blocking log read (``limit_bytes`` None: without ``limitBytes``), its body kept as a tail."""
        wanted = _TailRead(LOG_LIMIT_BYTES, LOG_SECONDS)
        token = _TAIL_READ.set(wanted)
        try:
            self.core.read_namespaced_pod_log(
                name,
                namespace,
                container=container,
                previous=previous,
                tail_lines=LOG_TAIL_LINES,
                limit_bytes=limit_bytes,
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT,
            )
        finally:
            _TAIL_READ.reset(token)
        if wanted.tail is None:  # a 2xx answer is always read as a tail: this is no answer the client knows
            raise errors.BadResponse(0, f"/api/v1/namespaces/{namespace}/pods/{name}/log", "no log body was read")
        return wanted.tail

    @reads(lambda name, **_: KubeCalls.node(name))
    async def read_node(self, name: str) -> dict[str, Any]:
        """``GET /api/v1/nodes/{name}`` as a dict."""
        return await _recorded(f"/api/v1/nodes/{name}", [], in_thread(self._json, self.core.read_node, name))

    async def add_node(
        self, evidence: Tier2Evidence, name: str, events_read: bool = False, read_seconds: float = READ_SECONDS
    ) -> None:
        """Read node ``name`` and (unless ``events_read``: read already) its events into ``evidence``,
        concurrently, each within ``read_seconds`` (a failure is recorded there, never raised)."""
        reads: tuple[Read[Any], ...] = (
            (self.read_node(name),) if events_read else (self.read_node(name), self.node_events(name))
        )
        results = await asyncio.gather(*(within(read, read_seconds) for read in reads), return_exceptions=True)
        for read, result in zip(reads, results, strict=True):
            if isinstance(result, ReadOnlyViolation):
                raise result
            if isinstance(result, ReadTooSlow):
                evidence.failures.append(Fetched(read.call, why=str(result)))
            elif isinstance(result, BaseException):
                evidence.failed(read.call, result)
        if isinstance(results[0], dict):
            evidence.node = results[0]
        if len(results) > 1 and isinstance(results[1], list):
            evidence.node_events = results[1]

    async def collect(
        self,
        namespace: str,
        pod_name: str,
        containers: list[str],
        node_name: str | None,
        peers: Sequence[str] = (),
        workload: str | None = None,
        event_node: str | None = None,
        read_seconds: float = READ_SECONDS,
    ) -> Tier2Evidence:
        """Pod, its events, current and previous logs of ``containers``, ``node_name`` (if given: the node and its
        events), the events alone of ``event_node``, the pod objects of ``peers`` (other pods of the same workload
        in ``namespace``) and the pods labelled with ``workload``'s name, in parallel.

        Init containers' logs are read in a second round. Each read has ``read_seconds`` (a hung one is its own gap).
        """
        out = Tier2Evidence(namespace=namespace, pod_name=pod_name)

        async def guarded(read: Read[Any]) -> Any:
            try:
                return await within(read, read_seconds)
            except ReadOnlyViolation:
                raise
            except ReadTooSlow as exc:
                out.failures.append(Fetched(read.call, why=str(exc)))
                return None
            except Exception as exc:
                out.failed(read.call, exc)
                return None

        async def logs_for(names: list[str]) -> None:
            pairs = [(c, prev) for c in names for prev in (True, False)]
            reads = [self.read_log(namespace, pod_name, c, prev) for c, prev in pairs]
            texts = await asyncio.gather(*(self._log_or_none(read, read_seconds) for read in reads))
            failed: dict[str, Fetched[str]] = {}
            for (c, prev), read, text in zip(pairs, reads, texts, strict=True):
                if isinstance(text, LogTail):
                    out.logs[(c, prev)] = text.text
                    if text.cut:
                        out.log_cuts[(c, prev)] = text
                else:
                    failed[c] = Fetched(read.call, why=text[1])
            for c, got in failed.items():
                if (c, True) not in out.logs and (c, False) not in out.logs:
                    out.failures.append(got)

        tasks: list[Any] = [
            guarded(self.read_pod(namespace, pod_name)),
            guarded(self.pod_events(namespace, pod_name)),
            logs_for(containers),
        ]
        extra = self._beside(guarded, namespace, node_name, workload, event_node)
        peer_pods = [guarded(self.read_pod(namespace, peer)) for peer in peers]
        results = await asyncio.gather(*tasks, *extra.values(), *peer_pods)
        got_extra = dict(zip(extra, results[len(tasks) :], strict=False))
        for peer, got in zip(peers, results[len(tasks) + len(extra) :], strict=True):
            if isinstance(got, dict):
                out.peers[peer] = got
        out.pod, events = results[0], results[1]
        out.events = events or []
        out.node = got_extra.get("node")
        out.node_events = got_extra.get("node_events") or []
        if isinstance(got_extra.get("workload_pods"), list):
            out.workload_pods = {
                str((p.get("metadata") or {}).get("name")): p
                for p in got_extra["workload_pods"]
                if (p.get("metadata") or {}).get("name")
            }
        if out.pod:
            status = out.pod.get("status") or {}
            known = set(containers)
            unread = [
                cs.get("name")
                for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
                if cs.get("name") and cs.get("name") not in known
            ]
            if unread:
                await logs_for([str(c) for c in unread])
        return out

    def _beside(
        self, guarded: Any, namespace: str, node_name: str | None, workload: str | None, event_node: str | None
    ) -> dict[str, Any]:
        """The reads :meth:`collect` makes beside the pod's, by what they fill: ``node``, ``node_events``,
        ``workload_pods`` (each wrapped by ``guarded``)."""
        extra: dict[str, Any] = {}
        if node_name:
            extra["node"] = guarded(self.read_node(node_name))
        if node_name or event_node:
            extra["node_events"] = guarded(self.node_events(str(node_name or event_node)))
        if workload:
            extra["workload_pods"] = guarded(self.workload_pods(namespace, workload))
        return extra

    @staticmethod
    async def _log_or_none(read: Read[LogTail], seconds: float = READ_SECONDS) -> LogTail | tuple[None, str]:
        """The log text, or ``(None, why)`` when it cannot be read (400: no such container run; no answer within
        ``seconds``)."""
        try:
            return await within(read, seconds)
        except ReadOnlyViolation:
            raise
        except ReadTooSlow as exc:
            return (None, str(exc))
        except Exception as exc:
            return (None, describe_tier2_error(exc))


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
