"""Read-only OSMO REST client: one method per endpoint, typed results (``shared/reference/osmo-api.md``).

Transport concerns (read-only guard, retries on 429/5xx/timeouts, per-request timeout, request
log) live in :mod:`diagnosis.http`; the only POST allowed is the token exchange.

Auth (§1): the access token is exchanged at ``POST /api/auth/jwt/access_token`` for a JWT that is
cached until ``expires_at`` minus a safety margin and exchanged once more on a 401/403. No
``x-osmo-client-version`` header is sent (§1 "Version header").

Errors:
- :class:`AuthError`: the token exchange was refused, or a request still got 401/403 after one
  re-exchange (the caller maps it to ``BackendUnavailable``);
- :class:`WorkflowNotFound`: 400 ``DATABASE`` "Workflow <id> is not found." (or a 404);
- :class:`OsmoApiError`: any other non-2xx answer after retries (``status``, ``path``);
- httpx transport errors (connect, timeout) propagate after retries.

Logs, events and spec are text streams that never end for a live workflow (§6): they are read
by :meth:`OsmoClient.stream_text` with a wall-clock deadline and a byte cap; the prefix that
arrived is kept and :class:`StreamText` says whether and why it was cut.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from diagnosis.config import OsmoConfig
from diagnosis.http import RetryPolicy, make_client
from diagnosis.osmo.models import NodeResources, PoolQuota, TaskRequest, Workflow, WorkflowList

TOKEN_PATH = "/api/auth/jwt/access_token"
# Re-exchange this many seconds before ``expires_at`` (osmo-api.md §1 "about expires_at - 30s").
TOKEN_MARGIN_S = 30.0
STREAM_DEADLINE_S = 5.0  # the OSMO skill's 5 s log-command timeout (§6)
STREAM_MAX_BYTES = 256 * 1024
# A live stream sends its backlog at once and then waits for new lines: stop after this long without
# a byte (the wall-clock deadline still bounds the whole read).
STREAM_IDLE_S = 1.5


class OsmoApiError(RuntimeError):
    """A non-2xx answer after retries. ``status`` is the HTTP status, ``path`` the URL path."""

    def __init__(self, status: int, path: str, message: str = "") -> None:
        self.status = status
        self.path = path
        self.message = message
        super().__init__(f"HTTP {status} from {path}" + (f": {message}" if message else ""))


class WorkflowNotFound(OsmoApiError):
    """The service says the workflow ID does not exist (400 DATABASE "... is not found.", or 404)."""


class AuthError(RuntimeError):
    """The OSMO service refused the access token (exchange failed, or 401/403 after one re-exchange)."""


@dataclass(frozen=True)
class StreamText:
    """The prefix of a text stream that arrived in time.

    ``text``: decoded UTF-8 (invalid bytes replaced); ``bytes_read``: bytes kept; ``truncated``:
    the stream was cut before its end; ``reason``: ``"deadline"`` (wall-clock, ``deadline_s``),
    ``"idle"`` (open but silent for ``idle_s``), ``"byte cap"`` (``max_bytes``) or ``"read error"``;
    None when the stream ended by itself.
    """

    text: str
    bytes_read: int
    truncated: bool
    reason: str | None = None
    deadline_s: float = STREAM_DEADLINE_S
    max_bytes: int = STREAM_MAX_BYTES
    idle_s: float = STREAM_IDLE_S

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
            why = (
                f"the stream was still open after {self.deadline_s:g} s (a live workflow's stream never ends)"
            )
        else:
            why = "the connection broke while reading"
        if self.bytes_read == 0:
            return f"The {what} sent nothing before being cut: {why}."
        return f"The {what} shown are only the first {self.bytes_read} bytes: {why}."


def _message(response: httpx.Response) -> tuple[str, str]:
    """(error_code, message) from an OSMO error body; empty strings when absent."""
    try:
        body = response.json()
    except ValueError:
        return "", response.text[:200]
    if isinstance(body, dict):
        return str(body.get("error_code") or ""), str(body.get("message") or body.get("detail") or "")
    return "", ""


class OsmoClient:
    """Async read-only client. Use as ``async with OsmoClient(config) as client``.

    ``inner`` swaps the network transport (tests); ``stream_deadline_s``/``stream_max_bytes``
    bound every text stream; ``clock`` returns epoch seconds (token expiry).
    """

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
        self.exchanges += 1
        r = await self.http.post(TOKEN_PATH, json={"token": self.config.token})
        if r.status_code in (400, 401, 403):
            raise AuthError(f"OSMO refused the access token (HTTP {r.status_code} from {TOKEN_PATH})")
        if r.status_code >= 300:
            raise OsmoApiError(r.status_code, TOKEN_PATH, _message(r)[1])
        try:
            body = r.json()
            jwt = str(body["token"])
        except (ValueError, KeyError, TypeError) as exc:
            raise AuthError(f"OSMO token exchange answered without a token ({TOKEN_PATH})") from exc
        now = self._clock()
        try:
            expires_at = float(body.get("expires_at"))
        except (TypeError, ValueError):
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
        r = await self.http.get(path, params=params, headers={"Authorization": f"Bearer {jwt}"})
        if r.status_code in (401, 403):
            jwt = await self._bearer(force=True)
            r = await self.http.get(path, params=params, headers={"Authorization": f"Bearer {jwt}"})
            if r.status_code in (401, 403):
                raise AuthError(f"OSMO refused the credentials (HTTP {r.status_code} from {path})")
        return r

    async def _json(self, path: str, params: Any = None) -> Any:
        r = await self._get(path, params)
        if r.status_code >= 300:
            code, message = _message(r)
            raise OsmoApiError(r.status_code, path, message or code)
        return r.json()

    # -- workflows --------------------------------------------------------------------------

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
        return WorkflowList.model_validate(await self._json("/api/workflow", params))

    async def get_workflow(self, workflow_id: str) -> Workflow:
        """``GET /api/workflow/{id}``; :class:`WorkflowNotFound` for an unknown ID (never a similar one)."""
        path = f"/api/workflow/{workflow_id}"
        r = await self._get(path)
        if r.status_code >= 300:
            code, message = _message(r)
            if r.status_code == 404 or (
                r.status_code == 400 and (code in ("DATABASE", "NOTFOUND") or "not found" in message.lower())
            ):
                raise WorkflowNotFound(r.status_code, path, message or "not found")
            raise OsmoApiError(r.status_code, path, message or code)
        return Workflow.model_validate(r.json())

    async def stream_text(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        deadline_s: float | None = None,
        max_bytes: int | None = None,
    ) -> StreamText:
        """Read a ``text/plain`` stream for at most ``deadline_s`` seconds of body and ``max_bytes`` bytes.

        The deadline starts once the response headers arrived (headers are bounded by the
        per-request timeout and retries). Raises :class:`OsmoApiError` for a non-2xx answer.
        """
        deadline = self.stream_deadline_s if deadline_s is None else deadline_s
        cap = self.stream_max_bytes if max_bytes is None else max_bytes
        jwt = await self._bearer()
        for attempt in (1, 2):
            chunks: list[bytes] = []
            size = 0
            reason: str | None = None
            async with self.http.stream(
                "GET", path, params=params, headers={"Authorization": f"Bearer {jwt}", "Accept": "text/plain"}
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
                            if size + len(chunk) >= cap:
                                chunks.append(chunk[: cap - size])
                                size = cap
                                reason = "byte cap"
                                break
                            chunks.append(chunk)
                            size += len(chunk)
                except TimeoutError:
                    reason = "deadline"
                except httpx.HTTPError:
                    reason = "read error"
            data = b"".join(chunks)
            return StreamText(
                text=data.decode("utf-8", errors="replace"),
                bytes_read=len(data),
                truncated=reason is not None,
                reason=reason,
                deadline_s=deadline,
                max_bytes=cap,
                idle_s=idle,
            )
        raise AssertionError("unreachable")

    async def logs(
        self, workflow_id: str, *, last_n_lines: int = 10000, task_name: str | None = None
    ) -> StreamText:
        """``GET /api/workflow/{id}/logs?last_n_lines=N[&task_name=T]`` (streamed text, §6)."""
        params = {"last_n_lines": str(max(1, last_n_lines))}
        if task_name:
            params["task_name"] = task_name
        return await self.stream_text(f"/api/workflow/{workflow_id}/logs", params)

    async def events(self, workflow_id: str, *, task_name: str | None = None) -> StreamText:
        """``GET /api/workflow/{id}/events[?task_name=T]`` (streamed text, §6)."""
        params = {"task_name": task_name} if task_name else None
        return await self.stream_text(f"/api/workflow/{workflow_id}/events", params)

    async def spec(self, workflow_id: str, *, template: bool = True) -> StreamText:
        """``GET /api/workflow/{id}/spec?use_template=true`` (YAML text, credentials redacted server-side)."""
        return await self.stream_text(
            f"/api/workflow/{workflow_id}/spec", {"use_template": "true" if template else "false"}
        )

    async def task_requests(self, workflow_id: str) -> list[TaskRequest]:
        """``GET /api/task?workflow_id=…&all_users=true&all_pools=true``: each task's requested
        gpu/cpu/memory."""
        params = [
            ("workflow_id", workflow_id),
            ("all_users", "true"),
            ("all_pools", "true"),
            ("limit", "1000"),
        ]
        body = await self._json("/api/task", params)
        items = body.get("tasks", []) if isinstance(body, dict) else body
        return [TaskRequest.model_validate(item) for item in items or [] if isinstance(item, dict)]

    async def task_request(self, workflow_id: str, task_name: str) -> TaskRequest:
        """``GET /api/workflow/{id}/task/{name}`` (``TaskEntry``: the task's requested resources)."""
        return TaskRequest.model_validate(await self._json(f"/api/workflow/{workflow_id}/task/{task_name}"))

    # -- pools and resources ----------------------------------------------------------------

    async def pool_quota(self, pools: Sequence[str] = ()) -> PoolQuota:
        """``GET /api/pool_quota?pools=…&all_pools=false`` (or ``all_pools=true``): quota and capacity
        in GPUs."""
        params = [("pools", p) for p in pools] + [("all_pools", "false" if pools else "true")]
        return PoolQuota.model_validate(await self._json("/api/pool_quota", params))

    async def resources(self, pools: Sequence[str] = ()) -> list[NodeResources]:
        """``GET /api/resources?pools=…&all_pools=false``: per-node allocatable and used resources."""
        params = [("pools", p) for p in pools] + [("all_pools", "false" if pools else "true")]
        body = await self._json("/api/resources", params)
        items = body.get("resources", []) if isinstance(body, dict) else []
        return [NodeResources.model_validate(item) for item in items or [] if isinstance(item, dict)]
