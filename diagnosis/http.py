"""The one HTTP layer shared by the Run:ai and OSMO clients (httpx client/transport split).

:class:`GuardedTransport` wraps a real httpx transport and adds, in this order:

1. the **read-only guard**: any method other than GET, and any POST other than to the
   configured token paths, raises :class:`ReadOnlyViolation` before a byte is sent;
2. **retries** with exponential backoff and jitter (tenacity) on connect/read errors and
   timeouts, 429 (honouring ``Retry-After``) and 5xx; at least 3 attempts
   (FORMAT.md "Safe retries");
3. a **request log**: every attempt is recorded as a :class:`RequestRecord` (method, path,
   status, seconds, attempt) for evidence citations, benchmarks and tests;
4. an optional **response recorder** (off by default): inside :func:`recording`, every GET's final
   response (status of each attempt, query, body as the client read it) is kept as a
   :class:`RecordedResponse` (``workload-doctor capture`` turns them into a snapshot).

The clients then read like the API reference: one method per endpoint, no retry loops.

A long-running process (the bot) calls :func:`share_connections` in its event loop: every client made in
that loop from then on borrows one aiohttp-backed connection pool (``httpx_aiohttp``), so connections and
TLS sessions to the Run:ai and OSMO APIs are reused across diagnoses instead of opened for each one,
at about a quarter less CPU per request than a pool per client. The CLI keeps a pool per client.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import email.utils
import functools
import logging
import ssl
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import certifi
import httpx
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception_type,
    retry_if_result,
    wait_exponential_jitter,
)

from diagnosis import metrics
from diagnosis.redact import sanitize

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Statuses that say "try again later" (overload, gateway, unavailable): retried longer than a plain 500.
TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})
READ_METHODS = frozenset({"GET"})
#: Transport failures worth another attempt (reads and token exchanges are safe to repeat): every timeout,
#: network error (connect, read, write, close) and a peer that broke the protocol.
RETRYABLE_ERRORS: tuple[type[Exception], ...] = (
    httpx.TimeoutException,
    httpx.NetworkError,
    httpx.RemoteProtocolError,
)


class ReadOnlyViolation(RuntimeError):
    """Raised before sending any request that could mutate state (non-GET, or POST off the token paths)."""


@dataclass(frozen=True)
class RequestRecord:
    """One attempt of one request: ``started`` is UTC, ``seconds`` the wall time of the attempt."""

    method: str
    path: str
    status: int | None
    seconds: float
    attempt: int
    started: datetime
    error: str | None = None


@dataclass
class RecordedResponse:
    """One read as the diagnosis saw it: ``system`` is ``"http"`` (Run:ai, OSMO) or ``"kubernetes"`` (Tier 2);
    ``status`` the final status (None: a transport error after retries, named in ``error``); ``attempts`` the
    status of every attempt in order; ``body`` the bytes the client read (decoded from any content encoding);
    ``complete`` whether the client read the body to its end (a live stream is cut by the client)."""

    system: str
    method: str
    path: str
    query: list[tuple[str, str]]
    status: int | None
    attempts: list[int | None]
    body: bytes = b""
    content_type: str = ""
    error: str | None = None
    complete: bool = True


class ResponseRecorder:
    """Collects :class:`RecordedResponse` objects in the order the responses arrived (see :func:`recording`)."""

    def __init__(self) -> None:
        self.responses: list[RecordedResponse] = []

    def add(self, response: RecordedResponse) -> RecordedResponse:
        self.responses.append(response)
        return response

    def observe(self, request: httpx.Request, attempts: list[int | None], response: httpx.Response) -> httpx.Response:
        """Keep ``response`` (its body as the caller reads it, through a tee on the stream) and return it."""
        if request.method.upper() != "GET":
            return response  # token exchanges: never kept
        encoding = response.headers.get("content-encoding", "")
        entry = self.add(
            RecordedResponse(
                "http",
                "GET",
                request.url.path,
                list(request.url.params.multi_items()),
                response.status_code,
                list(attempts),
                content_type=response.headers.get("content-type", ""),
                complete=False,
            )
        )
        try:
            entry.body, entry.complete = response.content, True  # a transport that read the body already
        except httpx.ResponseNotRead:
            response.stream = _TeeStream(response.stream, entry, encoding)
        return response

    def failed(self, request: httpx.Request, attempts: list[int | None], exc: BaseException) -> None:
        if request.method.upper() == "GET":
            query = list(request.url.params.multi_items())
            self.add(
                RecordedResponse("http", "GET", request.url.path, query, None, list(attempts), error=type(exc).__name__)
            )


class _TeeStream(httpx.AsyncByteStream):
    """A response stream that copies what the client reads into a :class:`RecordedResponse`."""

    def __init__(self, inner: Any, entry: RecordedResponse, encoding: str) -> None:
        self.inner = inner
        self.entry = entry
        self.encoding = encoding
        self.chunks: list[bytes] = []

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.chunks.append(chunk)
            self._store(complete=False)
            yield chunk
        self._store(complete=True)

    def _store(self, complete: bool) -> None:
        raw = b"".join(self.chunks)
        if self.encoding and self.encoding != "identity":
            try:
                raw = httpx.Response(200, headers={"content-encoding": self.encoding}, content=raw).content
            except httpx.DecodingError:
                pass  # a cut compressed stream: keep what cannot be decoded as it came
        self.entry.body = raw
        self.entry.complete = complete

    async def aclose(self) -> None:
        await self.inner.aclose()


#: The active recorder; None (the default) records nothing.
RECORDER: contextvars.ContextVar[ResponseRecorder | None] = contextvars.ContextVar("wd_recorder", default=None)


@contextlib.contextmanager
def recording(recorder: ResponseRecorder | None = None) -> Iterator[ResponseRecorder]:
    """Record every response read inside this block (and the tasks it starts) into ``recorder``."""
    active = recorder if recorder is not None else ResponseRecorder()
    token = RECORDER.set(active)
    try:
        yield active
    finally:
        RECORDER.reset(token)


@dataclass
class RetryPolicy:
    """Retry settings: ``attempts`` in total (>= 1) for a 500; ``transient_attempts`` for 429/502/503/504,
    connect errors and timeouts (FORMAT.md: at least 3); exponential backoff with jitter in seconds;
    ``Retry-After`` capped at ``max_retry_after`` seconds; ``sleep`` is injectable for tests."""

    def limit_for(self, status: int | None) -> int:
        """How many attempts a request that ended with ``status`` (None: a transport error) gets."""
        return self.transient_attempts if status is None or status in TRANSIENT_STATUSES else self.attempts

    attempts: int = 3
    transient_attempts: int = 5
    initial_backoff: float = 0.2
    max_backoff: float = 2.0
    max_retry_after: float = 10.0
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date); None when absent or invalid."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now if now is not None else time.time()
    return max(0.0, when.timestamp() - current)


@functools.lru_cache(maxsize=1)
def default_ssl_context() -> ssl.SSLContext:
    """One verifying SSL context per process (building one loads the CA bundle: too slow per request)."""
    return ssl.create_default_context(cafile=certifi.where())


@dataclass
class GuardedTransport(httpx.AsyncBaseTransport):
    """Read-only guard + retries + request log around ``inner`` (an httpx async transport).

    ``allowed_post_paths`` are the exact URL paths that may receive POST (token exchanges).
    """

    inner: httpx.AsyncBaseTransport = field(
        default_factory=lambda: httpx.AsyncHTTPTransport(verify=default_ssl_context())
    )
    allowed_post_paths: frozenset[str] = frozenset()
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    records: deque[RequestRecord] = field(default_factory=lambda: deque(maxlen=2000))

    def check(self, request: httpx.Request) -> None:
        """Raise :class:`ReadOnlyViolation` unless ``request`` is a read (or a token POST)."""
        method = request.method.upper()
        if method in READ_METHODS:
            return
        if method == "POST" and request.url.path in self.allowed_post_paths:
            return
        raise ReadOnlyViolation(f"read-only: refusing {method} {request.url.path}")

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.check(request)
        attempt = 0
        statuses: list[int | None] = []  # every attempt's status, for the response recorder

        def wait(state: RetryCallState) -> float:
            backoff = wait_exponential_jitter(
                multiplier=self.retry.initial_backoff, max=self.retry.max_backoff, jitter=self.retry.initial_backoff
            )(state)
            outcome = state.outcome
            if outcome is not None and not outcome.failed:
                response = outcome.result()
                after = parse_retry_after(response.headers.get("retry-after"))
                if after is not None:
                    return min(after, self.retry.max_retry_after)
            return float(backoff)

        async def send_once() -> httpx.Response:
            nonlocal attempt
            attempt += 1
            started = datetime.now(UTC)
            t0 = time.perf_counter()
            try:
                response = await self.inner.handle_async_request(request)
            except Exception as exc:
                self._record(request, None, time.perf_counter() - t0, attempt, started, type(exc).__name__)
                statuses.append(None)
                raise
            self._record(request, response.status_code, time.perf_counter() - t0, attempt, started, None)
            statuses.append(response.status_code)
            if response.status_code in RETRY_STATUSES and attempt < self.retry.limit_for(response.status_code):
                await response.aread()
                await response.aclose()
            return response

        def stop(state: RetryCallState) -> bool:
            outcome = state.outcome
            status = None if outcome is None or outcome.failed else outcome.result().status_code
            return state.attempt_number >= self.retry.limit_for(status)

        retrying = AsyncRetrying(
            stop=stop,
            wait=wait,
            retry=retry_if_exception_type(RETRYABLE_ERRORS)
            | retry_if_result(lambda r: r.status_code in RETRY_STATUSES),
            retry_error_callback=_last_outcome,
            reraise=True,
            sleep=self.retry.sleep,
        )
        recorder = RECORDER.get()
        if recorder is None:
            response: httpx.Response = await retrying(send_once)
            return response
        try:
            response = await retrying(send_once)
        except Exception as exc:
            recorder.failed(request, statuses, exc)
            raise
        return recorder.observe(request, statuses, response)

    def _record(
        self,
        request: httpx.Request,
        status: int | None,
        seconds: float,
        attempt: int,
        started: datetime,
        error: str | None,
    ) -> None:
        record = RequestRecord(request.method, request.url.path, status, seconds, attempt, started, error)
        self.records.append(record)
        backend = metrics.backend_of(record.path)
        metrics.request(backend, record.method, record.path, status if status is not None else error)
        if attempt > 1:
            metrics.retry(backend, record.path)
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "%s %s -> %s in %.3fs (attempt %d)",
                record.method,
                sanitize(str(request.url.copy_with(query=None))),
                status if status is not None else error,
                seconds,
                attempt,
            )

    async def aclose(self) -> None:
        await self.inner.aclose()


def _last_outcome(state: RetryCallState) -> httpx.Response:
    """After the last attempt: return the final response (so the caller sees its status) or re-raise."""
    assert state.outcome is not None
    response: httpx.Response = state.outcome.result()
    return response


#: connections the shared pool keeps open at most (all hosts); more concurrent requests wait for one
SHARED_POOL_CONNECTIONS = 200
#: longest response header line or field the shared pool accepts, bytes (aiohttp's default is 8190;
#: httpx's own transport takes about 16 KiB of headers, and gateways can send large cookies or policies)
SHARED_POOL_MAX_HEADER = 65536
_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncBaseTransport] = weakref.WeakKeyDictionary()


class _Borrowed(httpx.AsyncBaseTransport):
    """A client's handle on the shared pool: closing the client leaves the pool open. aiohttp errors that
    ``httpx_aiohttp`` does not translate become httpx transport errors, so retries and gaps see one kind of
    error whichever pool served the request (it translates body-read errors itself)."""

    def __init__(self, pool: httpx.AsyncBaseTransport) -> None:
        self.pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import aiohttp

        try:
            return await self.pool.handle_async_request(request)
        except TimeoutError as exc:
            raise httpx.ReadTimeout(f"timed out: {type(exc).__name__}", request=request) from exc
        except aiohttp.ClientError as exc:
            raise httpx.RemoteProtocolError(f"{type(exc).__name__}: {exc}", request=request) from exc

    async def aclose(self) -> None:
        pass


def share_connections() -> None:
    """Open a shared pool for the running event loop: clients made in this loop from now on borrow it.

    The pool keeps no cookies (a cookie one request received must not ride along with another
    diagnosis's requests). Raises ``RuntimeError`` outside a running loop. Close it with
    :func:`close_shared_connections`."""
    loop = asyncio.get_running_loop()
    if loop in _POOLS:
        return
    import aiohttp
    from httpx_aiohttp import AiohttpTransport

    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=default_ssl_context(), limit=SHARED_POOL_CONNECTIONS, keepalive_timeout=30),
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=True,  # proxies from the environment, as httpx does
        max_line_size=SHARED_POOL_MAX_HEADER,
        max_field_size=SHARED_POOL_MAX_HEADER,
    )
    _POOLS[loop] = AiohttpTransport(client=session)


async def close_shared_connections() -> None:
    """Close the running loop's shared pool (the bot at shutdown); later clients get a pool of their own."""
    pool = _POOLS.pop(asyncio.get_running_loop(), None)
    if pool is not None:
        await pool.aclose()


def _inner_transport() -> httpx.AsyncBaseTransport:
    """The running loop's shared pool when :func:`share_connections` opened one, else a pool of its own."""
    try:
        pool = _POOLS.get(asyncio.get_running_loop())
    except RuntimeError:
        pool = None
    if pool is None:
        return httpx.AsyncHTTPTransport(verify=default_ssl_context())
    return _Borrowed(pool)


def make_client(
    base_url: str,
    *,
    allowed_post_paths: Iterable[str] = (),
    timeout: float = 10.0,
    retry: RetryPolicy | None = None,
    inner: httpx.AsyncBaseTransport | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[httpx.AsyncClient, GuardedTransport]:
    """An ``httpx.AsyncClient`` on ``base_url`` whose every request goes through a :class:`GuardedTransport`.

    ``timeout`` is the per-request timeout in seconds. Returns the client and its transport
    (whose ``records`` list is the request log).
    """
    transport = GuardedTransport(
        inner=inner or _inner_transport(),
        allowed_post_paths=frozenset(allowed_post_paths),
        retry=retry or RetryPolicy(),
    )
    client = httpx.AsyncClient(
        base_url=base_url,
        transport=transport,
        timeout=httpx.Timeout(timeout),
        headers={"Accept": "application/json", **(headers or {})},
        follow_redirects=False,
    )
    return client, transport
