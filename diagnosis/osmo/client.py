"""Read-only OSMO REST client: one method per endpoint, typed results (``shared/reference/osmo-api.md``).

Transport concerns (read-only guard, retries on 429/5xx/timeouts, per-request timeout, request
log) live in :mod:`diagnosis.http`; the only POST allowed is the token exchange.

Auth (§1): the access token is exchanged at ``POST /api/auth/jwt/access_token`` for a JWT that is
cached until ``expires_at`` minus a safety margin and exchanged once more on a 401/403. No
``x-osmo-client-version`` header is sent (§1 "Version header").

Errors:
- :class:`AuthError`: the token exchange was refused or answered without a token (a ``null`` token
  never becomes a bearer), or a request still got 401/403 after one re-exchange (the caller maps it
  to ``BackendUnavailable``);
- :class:`WorkflowNotFound`: 400 ``DATABASE`` "Workflow <id> is not found." (or a 404);
- :class:`OsmoApiError`: any other non-2xx answer after retries (``status``, ``path``; a 422
  ``HTTPValidationError`` names the fields it rejected);
- :class:`OsmoBadResponse` (an :class:`OsmoApiError`): a 2xx answer that cannot be used: not JSON
  (a proxy's HTML page), or a field that does not fit the model (``message`` names it);
- httpx transport errors (connect, timeout) propagate after retries.

Workflow IDs and task names go into URL paths escaped (``quote(..., safe="")``, dot segments too).

Logs, events and spec are text streams that never end for a live workflow (§6): they are read
by :meth:`OsmoClient.stream_text` with a wall-clock deadline and a byte cap. Logs and events keep
the **end** of a stream longer than the cap (a ring buffer of the last ``max_bytes``: the traceback
is at the end); the spec keeps its start. :class:`StreamText` says whether and why it was cut.
Logs ask for ``last_n_lines`` = :data:`LOG_TAIL_LINES`, below the server's ``max_log_lines``
(10,000 by default): at or above it the server ignores the tail and streams the whole log from the
start (§6).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel, ValidationError

from diagnosis.config import OsmoConfig
from diagnosis.errors import ApiError, BadResponse, BodyCut, NotFound
from diagnosis.fetched import Call, body_broken, raised_in, reads
from diagnosis.http import TAIL_STREAM, RetryPolicy, make_client, request_url
from diagnosis.osmo.models import NodeResources, PoolQuota, TaskRequest, Workflow, WorkflowList
from diagnosis.tail import TailRing

TOKEN_PATH = "/api/auth/jwt/access_token"
# Re-exchange this many seconds before ``expires_at`` (osmo-api.md §1 "about expires_at - 30s").
TOKEN_MARGIN_S = 30.0
STREAM_DEADLINE_S = 5.0  # the OSMO skill's 5 s log-command timeout (§6)
STREAM_MAX_BYTES = 256 * 1024
# A live stream sends its backlog at once and then waits for new lines: stop after this long without
# a byte (the wall-clock deadline still bounds the whole read).
STREAM_IDLE_S = 1.5
#: ``max_log_lines`` of a default OSMO service config: a ``last_n_lines`` at or above it is ignored
#: (the whole log is streamed from the start).
SERVER_MAX_LOG_LINES = 10_000
#: The tail asked for: the spec's ``-n 10000`` less one, so a default server honours it.
LOG_TAIL_LINES = SERVER_MAX_LOG_LINES - 1
Keep = Literal["head", "tail"]
#: A bearer token as RFC 6750 spells one (``b64token``; a JWT is one): ``JwtTokenResponse.token`` is any
#: string in the spec, and one that cannot go into a header is no token.
_BEARER = re.compile(r"^[A-Za-z0-9\-._~+/]+=*$")
M = TypeVar("M", bound=BaseModel)


class OsmoApiError(ApiError):
    """A non-2xx answer after retries. ``status`` is the HTTP status, ``path`` the URL path, ``message`` the
    service's own message (a 422 names the fields it rejected)."""

    def describe(self) -> str:
        """``"HTTP 422: query.pools: Input should be a valid list"``, ``"HTTP 503 (after retries)"``: the
        wording OSMO gaps have always had (tests and cases quote it)."""
        return (
            f"HTTP {self.status}"
            + (f": {self.message}" if self.message else "")
            + (" (after retries)" if self.retried else "")
        )


class WorkflowNotFound(OsmoApiError, NotFound):
    """The service says the workflow ID does not exist (400 DATABASE "... is not found.", or 404)."""


class OsmoBadResponse(OsmoApiError, BadResponse):
    """A 2xx answer whose body cannot be used: not JSON, or a field the model cannot read.

    ``message`` says what was wrong (``"the body is not JSON (text/html): <html>…"``,
    ``"field node_sets.0.pools: Input should be a valid list"``)."""


class OsmoBodyBroken(OsmoBadResponse):
    """A 2xx answer whose body broke while it was read (the connection closed before its end): read once,
    since a body broken after its headers is not retried; ``message`` says so (never "after retries")."""


def segment(value: object) -> str:
    """``value`` as one escaped URL path segment: ``/``, ``?``, ``#``, ``%`` and spaces are
    percent-encoded, and ``.``/``..`` cannot be read as dot segments."""
    text = quote(str(value), safe="")
    return text.replace(".", "%2E") if text in (".", "..") else text


class OsmoCalls:
    """The calls :class:`OsmoClient` makes, each named once (issue 10 §2): the label a person reads and the
    path shown as the source of what it gave (``str(call)`` is ``"GET /api/workflow/<id>/events"``).

    Paths show IDs and task names as asked (unescaped: they are read, not requested); the query shows only
    what tells two calls apart (``task_name``, ``pools``), not the tail or paging parameters. Pure: no I/O."""

    SYSTEM = "osmo"

    @staticmethod
    def _call(label: str, path: str) -> Call:
        return Call(label=label, path=path, system=OsmoCalls.SYSTEM)

    @staticmethod
    def workflow_list() -> Call:
        """``GET /api/workflow`` (the list)."""
        return OsmoCalls._call("workflow list", "/api/workflow")

    @staticmethod
    def workflow(workflow_id: str) -> Call:
        """``GET /api/workflow/{id}`` (the query; asked with ``verbose=true``)."""
        return OsmoCalls._call("workflow status", f"/api/workflow/{workflow_id}")

    @staticmethod
    def workflow_verbose(workflow_id: str) -> Call:
        """``GET /api/workflow/{id}?verbose=true``: the query as asked, cited for what only it gives (every
        retry of every task)."""
        return OsmoCalls._call("workflow status with every retry", f"/api/workflow/{workflow_id}?verbose=true")

    @staticmethod
    def logs(workflow_id: str, task_name: str | None = None) -> Call:
        """``GET /api/workflow/{id}/logs[?task_name=T]``: "workflow logs" or "logs of task T"."""
        if task_name:
            return OsmoCalls._call(
                f"logs of task {task_name}", f"/api/workflow/{workflow_id}/logs?task_name={task_name}"
            )
        return OsmoCalls._call("workflow logs", f"/api/workflow/{workflow_id}/logs")

    @staticmethod
    def error_logs(workflow_id: str, task_name: str, retry_id: int | None = None) -> Call:
        """``GET /api/workflow/{id}/error_logs?task_name=T[&retry_id=N]``: the retry, when asked, names the call."""
        retry = f"&retry_id={retry_id}" if retry_id is not None else ""
        return OsmoCalls._call(
            f"error log of task {task_name}", f"/api/workflow/{workflow_id}/error_logs?task_name={task_name}{retry}"
        )

    @staticmethod
    def events(workflow_id: str, task_name: str | None = None) -> Call:
        """``GET /api/workflow/{id}/events[?task_name=T]``."""
        if task_name:
            return OsmoCalls._call(
                f"events of task {task_name}", f"/api/workflow/{workflow_id}/events?task_name={task_name}"
            )
        return OsmoCalls._call("events", f"/api/workflow/{workflow_id}/events")

    @staticmethod
    def spec(workflow_id: str, template: bool = True) -> Call:
        """``GET /api/workflow/{id}/spec?use_template=true`` (``false``: the spec as submitted)."""
        if not template:
            return OsmoCalls._call("spec", f"/api/workflow/{workflow_id}/spec?use_template=false")
        return OsmoCalls._call("template spec", f"/api/workflow/{workflow_id}/spec?use_template=true")

    @staticmethod
    def task_requests(workflow_id: str) -> Call:
        """``GET /api/task?workflow_id=…``: every task's requested resources."""
        return OsmoCalls._call("requested resources", f"/api/task?workflow_id={workflow_id}")

    @staticmethod
    def task_request(workflow_id: str, task_name: str) -> Call:
        """``GET /api/workflow/{id}/task/{name}``: one task's requested resources."""
        return OsmoCalls._call(
            f"requested resources of task {task_name}", f"/api/workflow/{workflow_id}/task/{task_name}"
        )

    @staticmethod
    def pool_quota(*pools: str) -> Call:
        """``GET /api/pool_quota?pools=P`` (each pool named; none: ``all_pools=true``)."""
        return OsmoCalls._call("pool quota", "/api/pool_quota?" + _pools_query(pools))

    @staticmethod
    def resources(*pools: str) -> Call:
        """``GET /api/resources?pools=P``: per-node resources of the pool (none: ``all_pools=true``)."""
        return OsmoCalls._call("pool resources", "/api/resources?" + _pools_query(pools))

    @staticmethod
    def endpoint(call: Call) -> str:
        """``"GET /api/workflow/<id>/logs"``: the call without its query (the source of a quoted excerpt,
        which may come from several of the calls to one endpoint)."""
        return f"{call.method} {call.path.split('?', 1)[0]}"


def _pools_query(pools: Sequence[str]) -> str:
    """``pools=a&pools=b``, or ``all_pools=true`` for none (as :meth:`OsmoClient.pool_quota` asks)."""
    return "&".join(f"pools={p}" for p in pools) if pools else "all_pools=true"


class AuthError(RuntimeError):
    """The OSMO service refused the access token (exchange failed, or 401/403 after one re-exchange)."""


@dataclass(frozen=True)
class StreamText:
    """What was kept of a text stream that arrived in time.

    ``text``: decoded UTF-8 (invalid bytes replaced); ``bytes_read``: bytes kept; ``truncated``:
    something is missing (its end was cut, or its start dropped); ``reason``: why the *end* is
    missing: ``"deadline"`` (wall-clock, ``deadline_s``), ``"idle"`` (open but silent for
    ``idle_s``), ``"byte cap"`` (``max_bytes``, head mode only) or ``"read error"``; None when the
    stream ended by itself. ``dropped_bytes``: bytes dropped from the *start* (tail mode: the stream
    was longer than ``max_bytes``, so only its end, from a line start, is kept).
    """

    text: str
    bytes_read: int
    truncated: bool
    reason: str | None = None
    deadline_s: float = STREAM_DEADLINE_S
    max_bytes: int = STREAM_MAX_BYTES
    idle_s: float = STREAM_IDLE_S
    dropped_bytes: int = 0

    def cut_note(self, what: str) -> str | None:
        """A sentence saying that ``what`` was cut and why, or None when complete."""
        if not self.truncated:
            return None
        if self.reason == "byte cap":
            why = f"it reached the {self.max_bytes // 1024} KiB cap"
        elif self.reason == "idle":
            why = (
                f"the stream was still open but sent nothing more for {self.idle_s:g} s "
                "(a live workflow's stream never ends)"
            )
        elif self.reason == "deadline":
            why = f"the stream was still open after {self.deadline_s:g} s (a live workflow's stream never ends)"
        elif self.reason == "read error":
            why = "the connection broke while reading"
        else:
            why = ""
        if self.dropped_bytes:
            head = (
                f"The {what} shown are only the last {self.bytes_read} bytes: the stream was longer than the "
                f"{self.max_bytes // 1024} KiB cap, so its first {self.dropped_bytes} bytes were dropped"
            )
            return head + (f", and it was cut: {why}." if why else ".")
        if self.bytes_read == 0:
            return f"The {what} sent nothing before being cut: {why}."
        return f"The {what} shown are only the first {self.bytes_read} bytes: {why}."


class _Ring:
    """The last ``cap`` bytes of a stream (``keep="tail"``: a :class:`~diagnosis.tail.TailRing`) or its first
    ``cap`` (``keep="head"``)."""

    def __init__(self, cap: int, keep: Keep) -> None:
        self.cap = max(0, cap)
        self.keep = keep
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.tail = TailRing(self.cap)

    def add(self, chunk: bytes) -> bool:
        """Keep ``chunk``; True when a head-mode buffer is full (stop reading)."""
        if self.keep == "tail":
            self.tail.add(chunk)
            return False
        room = self.cap - self.size
        self.chunks.append(chunk[:room])
        self.size += min(room, len(chunk))
        return len(chunk) >= room

    def data(self) -> tuple[bytes, int]:
        """(bytes kept, bytes dropped from the start); a tail that starts mid-line starts at the next line."""
        if self.keep == "head":
            return b"".join(self.chunks), 0
        kept = self.tail.tail()
        return kept.data, kept.skipped


def _message(response: httpx.Response) -> tuple[str, str]:
    """(error_code, message) from an OSMO error body (``{"message", "error_code"}``) or a FastAPI
    ``HTTPValidationError`` (``{"detail": [{"loc", "msg"}]}``: each rejected field named); empty
    strings when absent."""
    try:
        body = response.json()
    except ValueError:
        return "", " ".join(response.text[:200].split())
    if not isinstance(body, dict):
        return "", ""
    detail = body.get("detail")
    if isinstance(detail, list):
        parts = []
        for item in detail[:3]:
            if isinstance(item, dict):
                loc = ".".join(str(p) for p in item.get("loc") or [] if p is not None)
                parts.append(f"{loc}: {item.get('msg')}" if loc else str(item.get("msg")))
        return "VALIDATION", "; ".join(parts) or "validation error"
    return str(body.get("error_code") or ""), str(body.get("message") or detail or "")


def _validation_message(exc: ValidationError) -> str:
    """``field a.0.b: <msg>`` for the first error (and how many more)."""
    errors = exc.errors()
    if not errors:
        return "the body does not fit the expected shape"
    loc = ".".join(str(p) for p in errors[0].get("loc", ()))
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"field {loc or '(body)'}: {errors[0].get('msg', 'invalid')}{more}"


def parse(model: type[M], body: Any, path: str, status: int = 200) -> M:
    """``model.model_validate(body)`` or :class:`OsmoBadResponse` naming the field that does not fit; a body
    that is not an object at all (``null``, ``[]``, a string) is named as such, not as a field."""
    if not isinstance(body, dict | model):
        raise OsmoBadResponse(status, path, f"the body is {_json_kind(body)} where an object is due")
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise OsmoBadResponse(status, path, _validation_message(exc)) from exc


class OsmoClient:
    """Async read-only client. Use as ``async with OsmoClient(config) as client``.

    Each endpoint method returns a :class:`~diagnosis.fetched.Read`: awaited, its value; its ``call`` (one of
    :class:`OsmoCalls`) is built from the same arguments.

    ``inner`` swaps the network transport (tests); ``stream_deadline_s``/``stream_max_bytes``
    bound every text stream; ``clock`` returns epoch seconds (token expiry).
    """

    #: the calls this client makes, named once (:class:`OsmoCalls`)
    calls = OsmoCalls

    def __init__(
        self,
        config: OsmoConfig,
        *,
        inner: httpx.AsyncBaseTransport | None = None,
        retry: RetryPolicy | None = None,
        stream_deadline_s: float = STREAM_DEADLINE_S,
        stream_max_bytes: int = STREAM_MAX_BYTES,
        stream_idle_s: float = STREAM_IDLE_S,
        clock: Any = time.time,
    ) -> None:
        self.config = config
        self.http, self.transport = make_client(
            config.url,
            allowed_post_paths=(TOKEN_PATH,),
            timeout=config.request_timeout,
            retry=retry,
            inner=inner,
        )
        self.stream_deadline_s = stream_deadline_s
        self.stream_idle_s = stream_idle_s
        self.stream_max_bytes = stream_max_bytes
        self._clock = clock
        self._jwt: str | None = None
        self._jwt_refresh_at = 0.0
        self._lock = asyncio.Lock()
        self.exchanges = 0

    async def __aenter__(self) -> OsmoClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    # -- auth -------------------------------------------------------------------------------

    async def _exchange(self) -> None:
        """``POST /api/auth/jwt/access_token`` ``{"token": <access token>}``
        -> ``{"token", "expires_at"}``."""
        if not isinstance(self.config.token, str) or not self.config.token.strip():
            raise AuthError("no OSMO access token is configured (OSMO_TOKEN is empty)")
        self.exchanges += 1
        r = await self.http.post(TOKEN_PATH, json={"token": self.config.token})
        if r.status_code in (400, 401, 403, 422):
            raise AuthError(f"OSMO refused the access token (HTTP {r.status_code} from {TOKEN_PATH})")
        if r.status_code >= 300:
            raise OsmoApiError(r.status_code, TOKEN_PATH, _message(r)[1])
        try:
            body = r.json()
        except ValueError as exc:
            raise AuthError(f"OSMO token exchange answered a body that is not JSON ({TOKEN_PATH})") from exc
        # JwtTokenResponse: token and expires_at are nullable, and ``error`` says why there is none.
        jwt = body.get("token") if isinstance(body, dict) else None
        if not isinstance(jwt, str) or not _BEARER.match(jwt):  # null, empty, or not sendable as a bearer
            error = body.get("error") if isinstance(body, dict) else None
            raise AuthError(
                f"OSMO token exchange answered without a token ({TOKEN_PATH})"
                + (f": {str(error)[:200]}" if error else "")
            )
        now = self._clock()
        raw_expiry = body.get("expires_at")
        if isinstance(raw_expiry, int | float) and not isinstance(raw_expiry, bool) and raw_expiry > now:
            expires_at = float(raw_expiry)
        else:
            expires_at = now + 300.0  # ACCESS_TOKEN_TIMEOUT
        lifetime = max(0.0, expires_at - now)
        self._jwt = jwt
        self._jwt_refresh_at = expires_at - min(TOKEN_MARGIN_S, lifetime / 2)

    async def _bearer(self, force: bool = False) -> str:
        async with self._lock:
            if force or self._jwt is None or self._clock() >= self._jwt_refresh_at:
                await self._exchange()
            assert self._jwt is not None
            return self._jwt

    async def _get(self, path: str, params: Any = None) -> httpx.Response:
        """GET with the cached JWT; on 401/403 exchange once more and retry once (then :class:`AuthError`)."""
        jwt = await self._bearer()
        url = request_url(self.http, path, params)
        r = await self.http.get(url, headers={"Authorization": f"Bearer {jwt}"})
        if r.status_code in (401, 403):
            jwt = await self._bearer(force=True)
            r = await self.http.get(url, headers={"Authorization": f"Bearer {jwt}"})
            if r.status_code in (401, 403):
                raise AuthError(f"OSMO refused the credentials (HTTP {r.status_code} from {path})")
        return r

    async def _json(self, path: str, params: Any = None) -> Any:
        """The JSON body of a 2xx answer; :class:`OsmoApiError` otherwise, :class:`OsmoBadResponse`
        when a 2xx body is not JSON (a proxy's login or error page)."""
        r = await self._read(path, params)
        if r.status_code >= 300:
            code, message = _message(r)
            raise OsmoApiError(r.status_code, path, message or code)
        return _decode(r, path)

    async def _read(self, path: str, params: Any = None) -> httpx.Response:
        """:meth:`_get`, with a body whose read broke after its headers (the connection closed mid-body, a
        read error) raised as :class:`OsmoBodyBroken`: the service answered, once (that read is not
        retried), so the caller names a bad answer, never an unreachable service "after retries"."""
        try:
            return await self._get(path, params)
        except httpx.TransportError as exc:
            if isinstance(exc, BodyCut) or raised_in(exc) != "body":
                raise  # a body the HTTP layer cut at its cap names itself (diagnosis.errors.BodyCut)
            # the headers came (their status is in the request log, under the path as sent); the body did not
            try:
                asked = exc.request.url.path
            except RuntimeError:  # httpx sets the request on errors it raises; one built elsewhere may lack it
                asked = path
            status = next((r.status for r in reversed(self.transport.records) if r.path == asked), None)
            raise OsmoBodyBroken(status or 200, path, body_broken(exc)) from exc

    # -- workflows --------------------------------------------------------------------------

    @reads(lambda **_: OsmoCalls.workflow_list())
    async def list_workflows(
        self,
        *,
        statuses: Sequence[str] = (),
        pools: Sequence[str] = (),
        users: Sequence[str] = (),
        all_users: bool = True,
        limit: int = 20,
        offset: int = 0,
    ) -> WorkflowList:
        """``GET /api/workflow`` newest first (``order=DESC``); ``all_pools=true`` unless ``pools``
        (the server otherwise falls back to the caller's default pool, §2). ``limit`` <= 1000."""
        params: list[tuple[str, str]] = [
            ("limit", str(min(max(limit, 1), 1000))),
            ("offset", str(max(offset, 0))),
        ]
        params.append(("order", "DESC"))
        params += [("pools", p) for p in pools] if pools else [("all_pools", "true")]
        if users:
            params += [("users", u) for u in users]
        elif all_users:
            params.append(("all_users", "true"))
        params += [("statuses", s) for s in statuses]
        return parse(WorkflowList, await self._json("/api/workflow", params), "/api/workflow")

    def workflow_pages(
        self,
        *,
        statuses: Sequence[str] = (),
        pools: Sequence[str] = (),
        limit: int = 1000,
        max_pages: int = 50,
    ) -> WorkflowPages:
        """Every page of ``GET /api/workflow`` (``offset`` advancing by ``limit``, while ``more_entries``), each
        workflow once: see :class:`WorkflowPages`."""
        return WorkflowPages(self, tuple(statuses), tuple(pools), limit, max_pages)

    @reads(lambda workflow_id, **_: OsmoCalls.workflow(workflow_id))
    async def get_workflow(self, workflow_id: str) -> Workflow:
        """``GET /api/workflow/{id}?verbose=true`` (every retry of every task, §3); :class:`WorkflowNotFound` for an
        unknown ID (never a similar one)."""
        path = f"/api/workflow/{segment(workflow_id)}"
        r = await self._read(path, {"verbose": "true"})
        if r.status_code >= 300:
            code, message = _message(r)
            if r.status_code == 404 or (
                r.status_code == 400 and (code in ("DATABASE", "NOTFOUND") or "not found" in message.lower())
            ):
                raise WorkflowNotFound(r.status_code, path, message or "not found")
            raise OsmoApiError(r.status_code, path, message or code)
        return parse(Workflow, _decode(r, path), path)

    async def stream_text(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        deadline_s: float | None = None,
        max_bytes: int | None = None,
        keep: Keep = "tail",
    ) -> StreamText:
        """Read a ``text/plain`` stream for at most ``deadline_s`` seconds of body, keeping ``max_bytes``.

        ``keep="tail"`` reads on past the cap and keeps the last ``max_bytes`` (from a line start);
        ``keep="head"`` stops at the cap. The deadline starts once the response headers arrived
        (headers are bounded by the per-request timeout and retries). Raises :class:`OsmoApiError`
        for a non-2xx answer.
        """
        deadline = self.stream_deadline_s if deadline_s is None else deadline_s
        cap = self.stream_max_bytes if max_bytes is None else max_bytes
        jwt = await self._bearer()
        for attempt in (1, 2):
            ring = _Ring(cap, keep)
            reason: str | None = None
            async with self.http.stream(
                "GET",
                path,
                params=params,
                headers={"Authorization": f"Bearer {jwt}", "Accept": "text/plain"},
                # the tail is kept in a ring and read for ``deadline``: no byte cap cuts the end (issue 22 §2)
                extensions={TAIL_STREAM: keep == "tail"},
            ) as r:
                if r.status_code in (401, 403) and attempt == 1:
                    jwt = await self._bearer(force=True)
                    continue
                if r.status_code in (401, 403):
                    raise AuthError(f"OSMO refused the credentials (HTTP {r.status_code} from {path})")
                if r.status_code >= 300:
                    await r.aread()
                    code, message = _message(r)
                    raise OsmoApiError(r.status_code, path, message or code)
                idle = min(self.stream_idle_s, deadline)
                stop_at = time.monotonic() + deadline
                try:
                    async with asyncio.timeout(deadline):
                        body = r.aiter_raw().__aiter__()
                        while True:
                            try:
                                chunk = await asyncio.wait_for(anext(body), idle)
                            except StopAsyncIteration:
                                break
                            except TimeoutError:
                                reason = "idle"
                                break
                            if ring.add(chunk):
                                reason = "byte cap"
                                break
                            if time.monotonic() >= stop_at:
                                # a stream that always has bytes ready may never let the timeout's cancellation in
                                reason = "deadline"
                                break
                except TimeoutError:
                    reason = "deadline"
                except httpx.HTTPError:
                    reason = "read error"
            data, dropped = ring.data()
            return StreamText(
                text=data.decode("utf-8", errors="replace"),
                bytes_read=len(data),
                truncated=reason is not None or dropped > 0,
                reason=reason,
                deadline_s=deadline,
                max_bytes=cap,
                idle_s=idle,
                dropped_bytes=dropped,
            )
        raise AssertionError("unreachable")

    @reads(lambda workflow_id, task_name, **_: OsmoCalls.logs(workflow_id, task_name))
    async def logs(
        self, workflow_id: str, *, last_n_lines: int = LOG_TAIL_LINES, task_name: str | None = None
    ) -> StreamText:
        """``GET /api/workflow/{id}/logs?last_n_lines=N[&task_name=T]`` (streamed text, §6).

        ``N`` is held to 1..:data:`LOG_TAIL_LINES` (the server ignores a tail at or above its
        ``max_log_lines``); the end of a log longer than the byte cap is kept."""
        params = {"last_n_lines": str(min(max(1, last_n_lines), LOG_TAIL_LINES))}
        if task_name:
            params["task_name"] = task_name
        return await self.stream_text(f"/api/workflow/{segment(workflow_id)}/logs", params)

    @reads(lambda workflow_id, task_name, retry_id, **_: OsmoCalls.error_logs(workflow_id, task_name, retry_id))
    async def error_logs(self, workflow_id: str, task_name: str, retry_id: int | None = None) -> StreamText:
        """``GET /api/workflow/{id}/error_logs?task_name=T[&retry_id=N]``: the failed task's error log (streamed
        text; the end kept)."""
        params = {"task_name": task_name, "last_n_lines": str(LOG_TAIL_LINES)}
        if retry_id is not None:
            params["retry_id"] = str(retry_id)
        return await self.stream_text(f"/api/workflow/{segment(workflow_id)}/error_logs", params)

    @reads(lambda workflow_id, task_name, **_: OsmoCalls.events(workflow_id, task_name))
    async def events(self, workflow_id: str, *, task_name: str | None = None) -> StreamText:
        """``GET /api/workflow/{id}/events[?task_name=T]`` (streamed text, §6; the newest events kept)."""
        params = {"task_name": task_name} if task_name else None
        return await self.stream_text(f"/api/workflow/{segment(workflow_id)}/events", params)

    @reads(lambda workflow_id, template, **_: OsmoCalls.spec(workflow_id, template))
    async def spec(self, workflow_id: str, *, template: bool = True) -> StreamText:
        """``GET /api/workflow/{id}/spec?use_template=true`` (YAML text, credentials redacted server-side;
        the start of a spec longer than the cap is kept)."""
        return await self.stream_text(
            f"/api/workflow/{segment(workflow_id)}/spec",
            {"use_template": "true" if template else "false"},
            keep="head",
        )

    @reads(lambda workflow_id, **_: OsmoCalls.task_requests(workflow_id))
    async def task_requests(self, workflow_id: str) -> ItemList[TaskRequest]:
        """``GET /api/task?workflow_id=…&all_users=true&all_pools=true``: each task's requested
        gpu/cpu/memory."""
        params = [
            ("workflow_id", workflow_id),
            ("all_users", "true"),
            ("all_pools", "true"),
            ("limit", "1000"),
        ]
        body = await self._json("/api/task", params)
        return _items(body, "tasks", TaskRequest, "/api/task")

    @reads(lambda workflow_id, task_name, **_: OsmoCalls.task_request(workflow_id, task_name))
    async def task_request(self, workflow_id: str, task_name: str) -> TaskRequest:
        """``GET /api/workflow/{id}/task/{name}`` (``TaskEntry``: the task's requested resources)."""
        if not task_name:
            raise ValueError("a task without a name cannot be asked for")
        path = f"/api/workflow/{segment(workflow_id)}/task/{segment(task_name)}"
        return parse(TaskRequest, await self._json(path), path)

    # -- pools and resources ----------------------------------------------------------------

    @reads(lambda pools, **_: OsmoCalls.pool_quota(*pools))
    async def pool_quota(self, pools: Sequence[str] = ()) -> PoolQuota:
        """``GET /api/pool_quota?pools=…&all_pools=false`` (or ``all_pools=true``): quota and capacity
        in GPUs."""
        params = [("pools", p) for p in pools] + [("all_pools", "false" if pools else "true")]
        return parse(PoolQuota, await self._json("/api/pool_quota", params), "/api/pool_quota")

    @reads(lambda pools, **_: OsmoCalls.resources(*pools))
    async def resources(self, pools: Sequence[str] = ()) -> ItemList[NodeResources]:
        """``GET /api/resources?pools=…&all_pools=false``: per-node allocatable and used resources."""
        params = [("pools", p) for p in pools] + [("all_pools", "false" if pools else "true")]
        body = await self._json("/api/resources", params)
        if isinstance(body, dict) and "resources" not in body and "pools" in body:
            raise OsmoBadResponse(
                200, "/api/resources", "per-pool totals (PoolResourcesResponse) instead of per-node resources"
            )
        return _items(body, "resources", NodeResources, "/api/resources")


class WorkflowPages:
    """The pages of ``GET /api/workflow`` as an async iterator of :class:`WorkflowList`, each workflow once.

    A service that pages wrongly must not multiply the list (issue 15 §1: records served three times gave 6
    for 2): a workflow an earlier page listed (its ``name``, the workflow ID) is dropped and counted in
    ``repeated``; paging stops, and ``stopped`` says why, when a page lists only workflows already listed
    while ``more_entries`` is still true (the service ignores ``offset``), or after ``max_pages`` pages. The
    caller may stop early (``break``); :meth:`gap_why` is then the ``why`` of a gap, or None."""

    def __init__(
        self, client: OsmoClient, statuses: tuple[str, ...], pools: tuple[str, ...], limit: int, max_pages: int
    ) -> None:
        self.client = client
        self.statuses = statuses
        self.pools = pools
        self.limit = min(max(limit, 1), 1000)
        self.max_pages = max_pages
        self.pages = 0
        self.repeated = 0
        self.stopped: str | None = None

    def __aiter__(self) -> AsyncIterator[WorkflowList]:
        return self._pages()

    async def _pages(self) -> AsyncIterator[WorkflowList]:
        seen: set[str] = set()
        for page in range(self.max_pages):
            listed = await self.client.list_workflows(
                statuses=self.statuses, pools=self.pools, limit=self.limit, offset=page * self.limit
            )
            self.pages += 1
            fresh = [e for e in listed.workflows if e.name not in seen]
            self.repeated += len(listed.workflows) - len(fresh)
            seen.update(e.name for e in fresh)
            served = bool(listed.workflows)
            listed.workflows = fresh
            yield listed
            if not listed.more_entries:
                return
            if served and not fresh:
                self.stopped = (
                    f"paging stopped: page {page + 1} listed only workflows already listed while the service "
                    "still said more_entries (it did not advance)"
                )
                return
        self.stopped = f"paging stopped after {self.max_pages} pages with the service still saying more_entries"

    def gap_why(self) -> str | None:
        """What paging left out, one line (``"4 workflows listed again by a later page dropped …"``), or None."""
        parts = []
        if self.repeated:
            s = "s" if self.repeated != 1 else ""
            parts.append(f"{self.repeated} workflow{s} listed again by a later page dropped (counted once)")
        if self.stopped:
            parts.append(self.stopped)
        return "; ".join(parts) or None


def _decode(response: httpx.Response, path: str) -> Any:
    """The JSON body of ``response`` or :class:`OsmoBadResponse` saying what came instead (the content type
    and the start of the body, on one line; a body that is not UTF-8 is named so, not shown)."""
    try:
        return response.json()
    except ValueError as exc:
        kind = response.headers.get("content-type", "no content type").split(";")[0].strip() or "no content type"
        if isinstance(exc, UnicodeDecodeError) or "\ufffd" in response.text[:200]:
            raise OsmoBadResponse(
                response.status_code, path, f"the body is not JSON ({kind}): its bytes are not UTF-8 text"
            ) from exc
        start = " ".join(response.text[:80].split())
        raise OsmoBadResponse(
            response.status_code, path, f"the body is not JSON ({kind})" + (f": {start}" if start else ", empty")
        ) from exc


def _json_kind(value: Any) -> str:
    """``null``, ``an empty list ([])``, ``a list``, ``a string``: what a JSON body is, for a person."""
    if value is None:
        return "null"
    if isinstance(value, list):
        return "an empty list ([])" if not value else "a list"
    names = {str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)


def _items(body: Any, key: str, model: type[M], path: str) -> ItemList[M]:
    """The items of ``body[key]`` as ``model``; ``null`` or unreadable items are skipped and counted
    (``skipped``, ``first_problem``); a body without the list is :class:`OsmoBadResponse`."""
    if not isinstance(body, dict) or not isinstance(body.get(key), list):
        got = _json_kind(body) if not isinstance(body, dict) else "an object without a " + repr(key) + " list"
        raise OsmoBadResponse(200, path, f"expected an object with a {key!r} list, got {got}")
    out: ItemList[M] = ItemList()
    for i, item in enumerate(body[key]):
        try:
            out.append(model.model_validate(item))
        except ValidationError as exc:
            out.skipped += 1
            if out.first_problem is None:
                out.first_problem = f"{key}.{i}: " + _validation_message(exc)
    return out


class ItemList(list[M]):
    """A list of parsed items that also counts the items it had to skip (``null`` or unreadable)."""

    skipped: int = 0
    first_problem: str | None = None

    def gap_why(self, total_what: str) -> str | None:
        """A reason sentence for a gap when items were skipped, else None."""
        if not self.skipped:
            return None
        return f"{self.skipped} of {self.skipped + len(self)} {total_what} could not be read ({self.first_problem})"
