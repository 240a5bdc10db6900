"""Read-only Run:ai REST client: one method per endpoint, typed results (``shared/reference/runai-api.md``).

Transport concerns (read-only guard, retries, request log) live in :mod:`diagnosis.http`.
Errors: :class:`ApiError` (status, path) for any non-2xx answer after retries;
:class:`NotFoundError` for 404; httpx transport errors propagate after retries.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from datetime import datetime
from typing import Any

import httpx

from diagnosis.config import RunaiConfig
from diagnosis.http import RetryPolicy, make_client
from diagnosis.runai.models import (
    Cluster,
    Event,
    HistoryRecord,
    Metrics,
    Pod,
    Project,
    Workload,
    WorkloadSpec,
)
from diagnosis.units import iso

TOKEN_PATHS = ("/api/v2/token", "/api/v1/token")
PAGE_LIMIT = 500
MAX_PAGES = 200
SPEC_PATHS = {
    "training": "trainings",
    "workspace": "workspaces",
    "distributed": "distributed",
    "inference": "inferences",
    "distributedinference": "distributed-inferences",
}


class ApiError(RuntimeError):
    """A non-2xx answer after retries. ``status`` is the HTTP status, ``path`` the URL path."""

    def __init__(self, status: int, path: str, message: str = "") -> None:
        self.status = status
        self.path = path
        self.message = message
        super().__init__(f"HTTP {status} from {path}" + (f": {message}" if message else ""))


class NotFoundError(ApiError):
    """HTTP 404."""


def _jwt_exp(token: str) -> float | None:
    """The ``exp`` claim (epoch seconds) of a JWT, without verifying it; None when absent."""
    try:
        payload = token.split(".")[1]
        payload += "=" * (-len(payload) % 4)
        exp = json.loads(base64.urlsafe_b64decode(payload)).get("exp")
        return float(exp) if exp is not None else None
    except (IndexError, ValueError, TypeError, AttributeError):
        return None


#: Process-wide token cache: (base_url, client_id) -> (token, expires epoch seconds). Tokens are never logged.
_TOKENS: dict[tuple[str, str], tuple[str, float]] = {}



class RunaiClient:
    """Async read-only client. Use as ``async with RunaiClient(config) as client``.

    ``inner`` lets tests and the benchmark swap the real network transport.
    """

    def __init__(
        self,
        config: RunaiConfig,
        *,
        inner: httpx.AsyncBaseTransport | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.config = config
        self.http, self.transport = make_client(
            config.base_url,
            allowed_post_paths=TOKEN_PATHS,
            timeout=config.request_timeout,
            retry=retry,
            inner=inner,
        )
        cached = _TOKENS.get((config.base_url, config.client_id))
        self._token: str | None = cached[0] if cached else None
        self._token_expires = cached[1] if cached else 0.0
        self._token_lock = asyncio.Lock()
        self._clusters: list[Cluster] | None = None

    async def __aenter__(self) -> RunaiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    # -- auth -------------------------------------------------------------------------------

    async def _fetch_token(self) -> None:
        """``POST /api/v2/token`` (form); on 404/405/400 fall back to ``/api/v1/token`` (JSON)."""
        cfg = self.config
        r = await self.http.post(
            "/api/v2/token",
            data={"grant_type": "client_credentials", "client_id": cfg.client_id, "client_secret": cfg.client_secret},
        )
        if r.status_code in (400, 404, 405, 415):
            r = await self.http.post(
                "/api/v1/token",
                json={"grantType": "client_credentials", "clientId": cfg.client_id, "clientSecret": cfg.client_secret},
            )
        if r.status_code != 200:
            raise ApiError(r.status_code, r.url.path, "token request refused; check RUNAI_CLIENT_ID/SECRET")
        body = r.json()
        token = body.get("access_token") or body.get("accessToken")
        if not token:
            raise ApiError(r.status_code, r.url.path, "token response has no access token")
        lifetime = body.get("expires_in") or body.get("expiresIn")
        now = time.time()
        if lifetime:
            expires = now + float(lifetime)
        else:
            expires = _jwt_exp(token) or now + 3600
        self._token = token
        self._token_expires = expires - 60
        _TOKENS[(cfg.base_url, cfg.client_id)] = (token, self._token_expires)

    async def _auth_header(self, refresh: bool = False) -> dict[str, str]:
        async with self._token_lock:
            if refresh or self._token is None or time.time() >= self._token_expires:
                await self._fetch_token()
        return {"Authorization": f"Bearer {self._token}"}

    async def get_json(self, path: str, params: dict[str, Any] | None = None) -> Any:
        """GET ``path`` with a bearer token (one re-fetch of the token on 401); JSON body or :class:`ApiError`."""
        r = await self.http.get(path, params=params, headers=await self._auth_header())
        if r.status_code == 401:
            r = await self.http.get(path, params=params, headers=await self._auth_header(refresh=True))
        if r.status_code == 404:
            raise NotFoundError(404, path, _message(r))
        if r.status_code >= 300:
            raise ApiError(r.status_code, path, _message(r))
        try:
            return r.json()
        except ValueError as exc:
            raise ApiError(r.status_code, path, "response is not JSON") from exc

    async def _paged(self, path: str, key: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        offset: Any = 0
        for _ in range(MAX_PAGES):
            body = await self.get_json(path, {**params, "offset": offset, "limit": PAGE_LIMIT})
            items.extend((body or {}).get(key) or [])
            nxt = (body or {}).get("next")
            if nxt in (None, "", offset):
                break
            offset = nxt
        return items

    # -- endpoints ----------------------------------------------------------------------------

    async def list_workloads(self, filters: list[str], *, deleted: bool = False) -> list[Workload]:
        """``GET /api/v1/workloads`` with ``filterBy`` comma-joined, sorted by phaseUpdatedAt desc, all pages."""
        params: dict[str, Any] = {"filterBy": ",".join(filters), "sortBy": "phaseUpdatedAt", "sortOrder": "desc"}
        if deleted:
            params["deleted"] = "true"
        return [Workload.model_validate(w) for w in await self._paged("/api/v1/workloads", "workloads", params)]

    async def get_workload(self, workload_id: str) -> Workload:
        """``GET /api/v1/workloads/{id}``."""
        return Workload.model_validate(await self.get_json(f"/api/v1/workloads/{workload_id}"))

    async def get_pods(self, workload_id: str) -> list[Pod]:
        """``GET /api/v1/workloads/{id}/pods``, all pages."""
        raw = await self._paged(f"/api/v1/workloads/{workload_id}/pods", "pods", {})
        return [Pod.model_validate(p) for p in raw]

    async def get_history(self, workload_id: str) -> list[HistoryRecord]:
        """``GET /api/v1/workloads/{id}/history``, every page until ``next`` is absent.

        The record order is not guaranteed, so paging never stops on an old record; the caller
        filters by timestamp (spec Step 3, FORMAT.md "History order").
        """
        raw = await self._paged(f"/api/v1/workloads/{workload_id}/history", "records", {})
        return [HistoryRecord.model_validate(r) for r in raw]

    async def get_events(self, workload_id: str, since: datetime | None = None) -> list[Event]:
        """``GET /api/v1/workloads/{id}/events`` newest first; stops paging once a page ends before ``since``."""
        path = f"/api/v1/workloads/{workload_id}/events"
        events: list[Event] = []
        offset: Any = 0
        for _ in range(MAX_PAGES):
            body = await self.get_json(path, {"offset": offset, "limit": PAGE_LIMIT, "sortOrder": "desc"})
            if body is None:
                raise ApiError(200, path, "events: null")
            page = [Event.model_validate(e) for e in (body.get("events") or [])]
            events.extend(page)
            nxt = body.get("next")
            oldest = min((e.created_at for e in page if e.created_at), default=None)
            if nxt in (None, "", offset) or (since and oldest and oldest < since):
                break
            offset = nxt
        return events

    async def get_metrics(
        self, workload_id: str, metric_types: list[str], start: datetime, end: datetime, samples: int = 500
    ) -> Metrics:
        """``GET /api/v1/workloads/{id}/metrics`` (``metricType`` comma-joined; values are strings)."""
        body = await self.get_json(
            f"/api/v1/workloads/{workload_id}/metrics",
            {"metricType": ",".join(metric_types), "start": iso(start), "end": iso(end), "numberOfSamples": samples},
        )
        return Metrics.model_validate(body or {})

    @staticmethod
    def spec_path(workload_type: str | None, workload_id: str) -> str | None:
        """The kind-specific spec path for a workload type, or None for an unknown type."""
        key = (workload_type or "").lower().replace("-", "").replace("_", "").replace(" ", "")
        segment = SPEC_PATHS.get(key)
        return f"/api/v1/workloads/{segment}/{workload_id}" if segment else None

    async def get_spec(self, workload_type: str | None, workload_id: str) -> WorkloadSpec:
        """``GET /api/v1/workloads/{trainings|workspaces|distributed|inferences}/{id}``."""
        path = self.spec_path(workload_type, workload_id)
        if path is None:
            raise ApiError(0, "spec", f"no spec endpoint for workload type {workload_type!r}")
        return WorkloadSpec.model_validate(await self.get_json(path))

    async def list_clusters(self) -> list[Cluster]:
        """``GET /api/v1/clusters`` (a bare array; ``{"clusters": [...]}`` is tolerated).

        Read once per client (one diagnosis): a question naming its cluster needs the list to resolve
        the name and again for the report's identity."""
        if self._clusters is None:
            body = await self.get_json("/api/v1/clusters")
            items = body.get("clusters", []) if isinstance(body, dict) else body
            self._clusters = [Cluster.model_validate(c) for c in items or []]
        return list(self._clusters)

    async def list_projects(self, name: str, cluster_id: str) -> list[Project]:
        """``GET /api/v1/org-unit/projects`` filtered by exact name and cluster."""
        raw = await self._paged(
            "/api/v1/org-unit/projects", "projects", {"filterBy": f"name=={name},clusterId=={cluster_id}"}
        )
        return [Project.model_validate(p) for p in raw]


def _message(r: httpx.Response) -> str:
    try:
        body = r.json()
    except ValueError:
        return r.text[:200]
    if isinstance(body, dict):
        return str(body.get("message") or body.get("error_description") or body.get("error") or "")[:200]
    return ""
