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
   :class:`RecordedResponse` (``workload-doctor capture`` turns them into a snapshot);
5. a **bounded body** (issue 15 §1): every body is read as a stream of at most ``max_body_bytes`` bytes
   (``WD_MAX_BODY_BYTES``, counted after gzip/deflate decoding, so a compressed bomb is cut too) and
   ``body_seconds`` of wall clock after its headers (``WD_DEADLINE``); past either, reading stops, the
   connection is dropped and the read raises :class:`BodyTooLargeError` / :class:`BodyTooSlowError` (a
   :class:`diagnosis.errors.BodyCut` and an ``httpx.ReadError``), which every caller already turns into a
   named gap. A ``Content-Length`` above the cap is refused before a byte of the body is read. A **tail
   stream** (:data:`TAIL_STREAM`: a log whose end matters, which its reader keeps the last bytes of in a ring)
   has no byte cap, only the wall clock (issue 22 §2).

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
import urllib.request
import weakref
import zlib
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

from diagnosis import errors, metrics
from diagnosis.config import DEFAULT_MAX_BODY_BYTES
from diagnosis.config import body_seconds as env_body_seconds
from diagnosis.config import max_body_bytes as env_max_body_bytes
from diagnosis.redact import sanitize
from diagnosis.tail import TailRing

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


class BodyTooLargeError(errors.BodyTooLarge, httpx.ReadError):
    """A body longer than the cap (:class:`diagnosis.errors.BodyTooLarge`); an ``httpx.ReadError`` too, so code
    that handles a broken read (OSMO's streams, Run:ai's "did not answer") handles the cut the same way."""

    def __init__(self, request: httpx.Request, status: int, limit: int, received: int) -> None:
        errors.BodyTooLarge.__init__(self, status, request.url.path, limit, received)
        self._request = request  # what httpx.RequestError.__init__ would set (``exc.request``)


class BodyTooSlowError(errors.BodyTooSlow, httpx.ReadError):
    """A body still arriving at its wall-clock deadline (:class:`diagnosis.errors.BodyTooSlow`; an
    ``httpx.ReadError`` too)."""

    def __init__(self, request: httpx.Request, status: int, seconds: float, received: int) -> None:
        errors.BodyTooSlow.__init__(self, status, request.url.path, seconds, received)
        self._request = request


#: Content encodings the bounded body decodes itself (zlib), so its cap counts the bytes the client will hold.
_ZLIB_ENCODINGS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


#: Bytes of decoded (gzip/deflate) body produced at a time: a compressed chunk never expands past this in memory.
_PIECE = 64 * 1024
#: The request extension that marks a **tail stream** (``client.stream(..., extensions={TAIL_STREAM: True})``):
#: a text stream whose end matters (an OSMO log), which its reader keeps the last bytes of in a ring
#: (:class:`diagnosis.tail.TailRing`) and stops at a wall clock of its own. Its body is bounded by the wall clock
#: (``body_seconds``) and not by ``max_body_bytes`` (issue 22 §2): a log longer than the cap keeps its end
#: instead of ending in a read error at the cap.
TAIL_STREAM = "workload_doctor.tail_stream"


class _BoundedBody(httpx.AsyncByteStream):
    """The body of one answer, read at most ``limit`` bytes (None: no byte cap, a tail stream) and ``seconds`` of
    wall clock after its headers.

    ``encoding`` (gzip or deflate) is decoded here, in pieces of at most :data:`_PIECE` bytes (and, with a cap,
    never past it), so ``limit`` bounds the decoded bytes and no chunk can expand in memory; the caller's response
    then carries no ``Content-Encoding``. Raises :class:`BodyTooLargeError` or :class:`BodyTooSlowError` from the
    iteration; closing it closes the connection's stream (an unfinished body is never reused)."""

    def __init__(
        self,
        inner: Any,
        request: httpx.Request,
        status: int,
        limit: int | None,
        seconds: float,
        declared: int | None = None,
        encoding: str = "",
    ) -> None:
        self.inner = inner
        self.request = request
        self.status = status
        self.limit = limit
        self.seconds = seconds
        self.declared = declared
        self.wbits = _ZLIB_ENCODINGS.get(encoding)
        self.decoder: Any = None

    def _too_large(self, received: int) -> BodyTooLargeError:
        return BodyTooLargeError(self.request, self.status, self.limit or 0, received)

    def _over(self, received: int) -> bool:
        return self.limit is not None and received > self.limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.limit is not None and self.declared is not None and self.declared > self.limit:
            raise self._too_large(0)  # refused on its Content-Length: not one byte of it is read
        received = 0
        end = time.monotonic() + self.seconds
        self.decoder = zlib.decompressobj(self.wbits) if self.wbits is not None else None
        chunks = self.inner.__aiter__()
        while True:
            try:
                # the wall clock bounds the whole body: a server trickling a byte per read timeout never ends it
                async with asyncio.timeout(end - time.monotonic()):
                    chunk = await anext(chunks)
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise BodyTooSlowError(self.request, self.status, self.seconds, received) from None
            for piece in self._decoded(chunk, received):
                received += len(piece)
                if self._over(received):
                    raise self._too_large(received)
                yield piece
            if time.monotonic() > end:  # a compressed chunk may take a while to decode
                raise BodyTooSlowError(self.request, self.status, self.seconds, received)
        if self.decoder is not None:
            tail = self.decoder.flush()
            if self._over(received + len(tail)):
                raise self._too_large(received + len(tail))
            if tail:
                yield tail

    def _decoded(self, chunk: bytes, received: int) -> Iterator[bytes]:
        """``chunk`` as it came (no encoding), or decoded in pieces of at most :data:`_PIECE` bytes, none past the
        cap (``received`` bytes came before it): the caller stops at the first piece over it."""
        if self.decoder is None:
            if chunk:
                yield chunk
            return
        data = chunk
        while data:
            room = _PIECE if self.limit is None else max(1, min(_PIECE, self.limit - received + 1))
            try:
                out: bytes = self.decoder.decompress(data, room)
            except zlib.error as exc:
                if self.wbits == zlib.MAX_WBITS and received == 0:
                    # "deflate" sent raw (no zlib header), as some servers do: httpx accepts both, and so does this
                    self.wbits = -zlib.MAX_WBITS
                    self.decoder = zlib.decompressobj(self.wbits)
                    continue
                raise httpx.DecodingError(f"{type(exc).__name__}: {exc}", request=self.request) from exc
            data = self.decoder.unconsumed_tail
            received += len(out)
            if out:
                yield out
            if self._over(received):
                return

    async def aclose(self) -> None:
        await self.inner.aclose()


def bound_body(response: httpx.Response, request: httpx.Request, limit: int | None, seconds: float) -> httpx.Response:
    """Put ``response``'s body behind :class:`_BoundedBody` (``limit`` bytes, None for no byte cap; ``seconds``
    wall clock) and return it. A gzip/deflate body is decoded by the bound, so its ``Content-Encoding`` is
    removed."""
    declared: int | None = None
    raw_length = response.headers.get("content-length")
    if raw_length is not None and raw_length.strip().isdigit():
        declared = int(raw_length.strip())
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in _ZLIB_ENCODINGS:
        del response.headers["content-encoding"]
        response.headers.pop("content-length", None)  # the decoded length differs
    else:
        if encoding not in ("", "identity"):
            # a stacked ("gzip, gzip") or unknown encoding is not decoded at all: httpx would inflate it whole,
            # after any cap. Its raw bytes (capped) cannot be read as JSON, which the reader names as a gap.
            del response.headers["content-encoding"]
        encoding = ""
    response.stream = _BoundedBody(response.stream, request, response.status_code, limit, seconds, declared, encoding)
    return response


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

    def observe(
        self, request: httpx.Request, attempts: list[int | None], response: httpx.Response, keep: int | None = None
    ) -> httpx.Response:
        """Keep ``response`` (its body as the caller reads it, through a tee on the stream) and return it; ``keep``
        bytes: a tail stream (:data:`TAIL_STREAM`) is kept as its last ``keep`` bytes, as its reader keeps it."""
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
            response.stream = _TeeStream(response.stream, entry, encoding, keep)
        return response

    def failed(self, request: httpx.Request, attempts: list[int | None], exc: BaseException) -> None:
        if request.method.upper() == "GET":
            query = list(request.url.params.multi_items())
            self.add(
                RecordedResponse("http", "GET", request.url.path, query, None, list(attempts), error=type(exc).__name__)
            )


class _TeeStream(httpx.AsyncByteStream):
    """A response stream that copies what the client reads into a :class:`RecordedResponse`; with ``keep``, only
    its last ``keep`` bytes (a tail stream, stored when it ends or is closed)."""

    def __init__(self, inner: Any, entry: RecordedResponse, encoding: str, keep: int | None = None) -> None:
        self.inner = inner
        self.entry = entry
        self.encoding = encoding
        self.chunks: list[bytes] = []
        self.ring = TailRing(keep) if keep is not None else None
        self.done = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            if self.ring is not None:
                self.ring.add(chunk)
            else:
                self.chunks.append(chunk)
                self._store(complete=False)
            yield chunk
        self.done = True
        self._store(complete=True)

    async def aclose(self) -> None:
        if self.ring is not None and not self.done:
            self._store(complete=False)
        await self.inner.aclose()

    def _store(self, complete: bool) -> None:
        raw = self.ring.tail().data if self.ring is not None else b"".join(self.chunks)
        if self.encoding and self.encoding != "identity":
            try:
                raw = httpx.Response(200, headers={"content-encoding": self.encoding}, content=raw).content
            except httpx.DecodingError:
                pass  # a cut compressed stream: keep what cannot be decoded as it came
        self.entry.body = raw
        self.entry.complete = complete


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
    #: the most bytes of one body (decoded), and the wall-clock seconds it may take after its headers
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    body_seconds: float = 60.0

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
            # a tail stream is bounded by its reader's ring and the wall clock, not by the bytes read (issue 22 §2)
            limit = None if request.extensions.get(TAIL_STREAM) else self.max_body_bytes
            bound_body(response, request, limit, self.body_seconds)
            if response.status_code in RETRY_STATUSES and attempt < self.retry.limit_for(response.status_code):
                # drained before the next attempt (the connection goes back to the pool) within the same bound;
                # a cut error body only means this connection is dropped instead
                with contextlib.suppress(errors.BodyCut, httpx.HTTPError):
                    await response.aread()
                await response.aclose()
            return response

        recorder = RECORDER.get()
        if recorder is None:
            return await self._attempts(send_once)
        try:
            response = await self._attempts(send_once)
        except Exception as exc:
            recorder.failed(request, statuses, exc)
            raise
        keep = self.max_body_bytes if request.extensions.get(TAIL_STREAM) else None
        return recorder.observe(request, statuses, response, keep)

    async def _attempts(self, send_once: Callable[[], Awaitable[httpx.Response]]) -> httpx.Response:
        """The first attempt alone; tenacity, from its outcome on, only when it would be retried (building the
        retry machinery for every request cost a tenth of a request's CPU, and almost every request succeeds)."""
        first: httpx.Response | BaseException
        try:
            first = await send_once()
        except RETRYABLE_ERRORS as exc:
            first = exc
        else:
            if first.status_code not in RETRY_STATUSES:
                return first
        replayed = False

        async def attempt() -> httpx.Response:
            nonlocal replayed
            if replayed:
                return await send_once()
            replayed = True  # tenacity's attempt 1 is the one made above: its outcome, as it was
            if isinstance(first, BaseException):
                raise first
            return first

        retrying = AsyncRetrying(
            stop=self._stop,
            wait=self._wait,
            retry=retry_if_exception_type(RETRYABLE_ERRORS)
            | retry_if_result(lambda r: r.status_code in RETRY_STATUSES),
            retry_error_callback=_last_outcome,
            reraise=True,
            sleep=self.retry.sleep,
        )
        again: httpx.Response = await retrying(attempt)
        return again

    def _stop(self, state: RetryCallState) -> bool:
        outcome = state.outcome
        status = None if outcome is None or outcome.failed else outcome.result().status_code
        return state.attempt_number >= self.retry.limit_for(status)

    def _wait(self, state: RetryCallState) -> float:
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


@functools.lru_cache(maxsize=256)
def env_proxy(scheme: str, host: str, port: int | None = None) -> str | None:
    """The proxy URL the environment names for ``scheme://host:port`` (``HTTPS_PROXY``, ``HTTP_PROXY``,
    ``ALL_PROXY``, any case; ``NO_PROXY`` honoured, an entry with a port too), or None: read once per host and
    process, as httpx reads them once per client. aiohttp's own ``trust_env`` read the environment and ``~/.netrc``
    again, in a thread, on every request (0.7 ms of CPU each, most of a shared-pool request's cost).

    A proxy named without a scheme (``proxy.corp:3128``) is an HTTP proxy, as httpx takes it. One aiohttp cannot
    speak (``socks5://``: an SSH tunnel's ``ALL_PROXY``) is not used: the request goes direct, as it did before."""
    proxies = urllib.request.getproxies_environment()
    where = f"{host}:{port}" if port else host
    # proxy_bypass_environment: the standard library's NO_PROXY matching (typeshed does not list it)
    if proxies.get("no") and urllib.request.proxy_bypass_environment(where, proxies):  # type: ignore[attr-defined]
        return None
    proxy = (proxies.get(scheme) or proxies.get("all") or "").strip()
    if proxy and "://" not in proxy:
        proxy = f"http://{proxy}"
    return proxy if proxy.lower().startswith(("http://", "https://")) else None


@dataclass
class SharedPool:
    """One loop's shared connections: an aiohttp session and, per proxy (None: direct), an
    ``httpx_aiohttp`` transport on it."""

    session: Any  # aiohttp.ClientSession
    transports: dict[str | None, httpx.AsyncBaseTransport] = field(default_factory=dict)

    def transport_for(self, url: httpx.URL) -> httpx.AsyncBaseTransport:
        from httpx_aiohttp import AiohttpTransport

        proxy = env_proxy(url.scheme, url.host, url.port)
        transport = self.transports.get(proxy)
        if transport is None:
            # raises httpx.InvalidURL or ValueError for a proxy URL httpx cannot read (the borrower names it)
            transport = AiohttpTransport(client=self.session, proxy=httpx.Proxy(proxy) if proxy else None)
            self.transports[proxy] = transport
        return transport

    async def aclose(self) -> None:
        await self.session.close()


_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, SharedPool] = weakref.WeakKeyDictionary()


class _Borrowed(httpx.AsyncBaseTransport):
    """A client's handle on the shared pool: closing the client leaves the pool open. aiohttp errors that
    ``httpx_aiohttp`` does not translate become httpx transport errors, so retries and gaps see one kind of
    error whichever pool served the request (it translates body-read errors itself)."""

    def __init__(self, pool: SharedPool) -> None:
        self.pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        import aiohttp

        try:
            transport = self.pool.transport_for(request.url)
        except (ValueError, httpx.InvalidURL) as exc:  # the environment's proxy URL cannot be read: a named gap
            raise httpx.ProxyError(f"the proxy from the environment cannot be used: {exc}", request=request) from exc
        try:
            return await transport.handle_async_request(request)
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

    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=default_ssl_context(), limit=SHARED_POOL_CONNECTIONS, keepalive_timeout=30),
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,  # proxies from the environment come from env_proxy, read once per host
        max_line_size=SHARED_POOL_MAX_HEADER,
        max_field_size=SHARED_POOL_MAX_HEADER,
    )
    _POOLS[loop] = SharedPool(session)


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


def request_url(client: httpx.AsyncClient, path: str, params: Any = None) -> httpx.URL:
    """``path`` with ``params`` on ``client``'s base URL, as ``client.get(path, params=params)`` would send it, parsed
    once: httpx parses a relative path, joins it to the base and parses the whole again with its query, about 130 us
    of a Run:ai request's CPU. Anything else than a plain absolute path (a full URL, ``//host``, a path carrying its
    own query or fragment) and a client with default params are merged by httpx itself."""
    if not path.startswith("/") or path.startswith("//") or "?" in path or "#" in path or client.params:
        return client.build_request("GET", path, params=params).url
    base = str(client.base_url)
    query = f"?{httpx.QueryParams(params)}" if params else ""  # as httpx: params given, a "?" even when empty
    return httpx.URL(base + ("" if base.endswith("/") else "/") + path[1:] + query)


def make_client(
    base_url: str,
    *,
    allowed_post_paths: Iterable[str] = (),
    timeout: float = 10.0,
    retry: RetryPolicy | None = None,
    inner: httpx.AsyncBaseTransport | None = None,
    headers: dict[str, str] | None = None,
    max_body_bytes: int | None = None,
    body_seconds: float | None = None,
) -> tuple[httpx.AsyncClient, GuardedTransport]:
    """An ``httpx.AsyncClient`` on ``base_url`` whose every request goes through a :class:`GuardedTransport`.

    ``timeout`` is the per-request timeout in seconds (connect, and each read of the socket);
    ``max_body_bytes`` the most bytes of one body (default ``WD_MAX_BODY_BYTES``), ``body_seconds`` the
    wall-clock seconds one body may take after its headers (default ``WD_DEADLINE``): both are read from the
    process environment when not given, and a malformed value raises
    :class:`~diagnosis.config.ConfigError`. Returns the client and its transport (whose ``records`` list is
    the request log).
    """
    transport = GuardedTransport(
        inner=inner or _inner_transport(),
        allowed_post_paths=frozenset(allowed_post_paths),
        retry=retry or RetryPolicy(),
        max_body_bytes=max_body_bytes if max_body_bytes is not None else env_max_body_bytes(),
        body_seconds=body_seconds if body_seconds is not None else env_body_seconds(),
    )
    client = httpx.AsyncClient(
        base_url=base_url,
        transport=transport,
        timeout=httpx.Timeout(timeout),
        headers={"Accept": "application/json", **(headers or {})},
        follow_redirects=False,
    )
    return client, transport
