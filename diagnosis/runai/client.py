"""Read-only Run:ai REST client: one method per endpoint, typed results (``shared/reference/runai-api.md``).

Transport concerns (read-only guard, retries, request log) live in :mod:`diagnosis.http`.
Errors: :class:`ApiError` (status, path) for any non-2xx answer after retries;
:class:`NotFoundError` for 404; :class:`NoSpecEndpoint` for a workload type without a spec endpoint;
httpx transport errors propagate after retries.

Lists (pods, history, events) come back as :class:`~diagnosis.runai.models.Records`: a ``null`` or
unreadable item is skipped and counted, never fatal for the whole call. An answer that does not fit its
spec schema at all (a ``null`` body or list where the spec requires the list, a list where an object is due,
a workload the model cannot read) is an :class:`ApiError` (status 200) naming what was wrong, so the caller
reports it as a gap (or, for the workload itself, as one line), never as an unexpected error.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
from datetime import datetime
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from diagnosis.config import RunaiConfig
from diagnosis.http import RetryPolicy, make_client
from diagnosis.runai.models import (
    Cluster,
    Event,
    HistoryRecord,
    Metrics,
    Pod,
    Project,
    Records,
    Workload,
    WorkloadSpec,
    parse_records,
)
from diagnosis.units import iso

TOKEN_PATHS = ("/api/v2/token", "/api/v1/token")
#: A bearer token as RFC 6750 spells one (``b64token``): anything else cannot go into a header, so a reply
#: carrying it is treated as one without a token.
_BEARER = re.compile(r"^[A-Za-z0-9\-._~+/]+=*$")
M = TypeVar("M", bound=BaseModel)
PAGE_LIMIT = 500
MAX_PAGES = 200
#: Workload ``type`` (lowercased, without ``-``, ``_`` and spaces) -> its spec endpoint segment. ``type`` is an
#: open string (the spec's example is ``runai-job``); the Run:ai CRD kinds are accepted as well.
SPEC_PATHS = {
    "training": "trainings",
    "trainingworkload": "trainings",
    "workspace": "workspaces",
    "interactiveworkload": "workspaces",
    "distributed": "distributed",
    "distributedworkload": "distributed",
    "inference": "inferences",
    "inferenceworkload": "inferences",
    "distributedinference": "distributed-inferences",
    "distributedinferenceworkload": "distributed-inferences",
}
V2_SOURCE_API = "WorkloadsV2"
#: Token statuses after which the next login shape is tried: the endpoint is absent (2.18-2.23 have no
#: /api/v2/token), or the grant or the body is refused (2.18-2.19 refuse client_credentials).
_LOGIN_FALLBACK = frozenset({400, 401, 403, 404, 405, 415, 422, 501})


class ApiError(RuntimeError):
    """A non-2xx answer after retries. ``status`` is the HTTP status, ``path`` the URL path."""

    def __init__(self, status: int, path: str, message: str = "") -> None:
        self.status = status
        self.path = path
        self.message = message
        super().__init__(f"HTTP {status} from {path}" + (f": {message}" if message else ""))


class NotFoundError(ApiError):
    """HTTP 404."""


class NoSpecEndpoint(LookupError):
    """The workload's ``type`` has no spec endpoint in the 2.24 API: its submitted spec (desiredPhase,
    limits) cannot be read. Not an HTTP error: nothing was asked."""

    def __init__(self, workload_type: str | None) -> None:
        self.workload_type = workload_type
        kinds = ", ".join(sorted(set(SPEC_PATHS.values())))
        super().__init__(
            f"workload type {workload_type!r} has no spec endpoint in the Run:ai API ({kinds}), so its "
            "submitted spec (desiredPhase: was a stop requested?; limits) was not read"
        )


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
#: The login shape that worked last per (base_url, client_id): a refresh tries it first.
_LOGIN_SHAPES: dict[tuple[str, str], str] = {}
#: The login shapes in the order a control plane of unknown version is tried (see ``_fetch_token``).
LOGIN_SHAPES = ("v2", "v1", "v1-app-token")


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

    async def _token_request(self, shape: str) -> httpx.Response:
        """One token request in a login shape (spec ``grant_token_v2`` / ``grant_token``; field names as the
        spec spells them)."""
        cfg = self.config
        if shape == "v2":
            form = {"grant_type": "client_credentials", "client_id": cfg.client_id, "client_secret": cfg.client_secret}
            return await self.http.post("/api/v2/token", data=form)
        if shape == "v1":
            body = {"grantType": "client_credentials", "clientID": cfg.client_id, "clientSecret": cfg.client_secret}
        else:  # 2.18-2.19: only the (later deprecated) application-token grant
            body = {"grantType": "app_token", "appID": cfg.client_id, "appSecret": cfg.client_secret}
        return await self.http.post("/api/v1/token", json=body)

    async def _fetch_token(self) -> None:
        """Log in, whatever the control plane's version:

        1. ``POST /api/v2/token`` (OAuth2 form; 2.24+);
        2. ``POST /api/v1/token`` with ``grantType: client_credentials``, ``clientID``, ``clientSecret`` (2.20+);
        3. ``POST /api/v1/token`` with ``grantType: app_token``, ``appID``, ``appSecret`` (2.18-2.19, which
           refuse ``client_credentials``; also an application's credentials on a later control plane).

        The next shape is tried when one is absent or refused (4xx); the shape that worked is tried first
        on the next login. A 5xx (after retries) or a transport error ends the login.
        """
        cfg = self.config
        key = (cfg.base_url, cfg.client_id)
        remembered = _LOGIN_SHAPES.get(key)
        shapes = [remembered] if remembered else []
        shapes += [s for s in LOGIN_SHAPES if s != remembered]
        refused: list[str] = []
        token: str | None = None
        lifetime: float | None = None
        status, path = 0, "/api/v1/token"
        for shape in shapes:
            r = await self._token_request(shape)
            status, path = r.status_code, r.url.path
            if status == 200:
                token, lifetime = _token_fields(r)
                if token is not None:
                    break
                refused.append(f"{path} ({shape}): 200 without a usable access token")
                continue
            refused.append(f"{path} ({shape}): HTTP {status}")
            if status not in _LOGIN_FALLBACK:
                raise ApiError(status, path, "token request failed: " + "; ".join(refused))
        if token is None:
            raise ApiError(
                status if status != 200 else 502,
                path,
                "token request refused: " + "; ".join(refused) + "; check RUNAI_CLIENT_ID/SECRET",
            )
        _LOGIN_SHAPES[key] = shape
        now = time.time()
        if lifetime:
            expires = now + lifetime
        else:
            expires = _jwt_exp(token) or now + 3600
        self._token = token
        # Refresh a minute early, or halfway through a shorter lifetime (never one login per request).
        self._token_expires = expires - min(60.0, max(0.0, expires - now) / 2)
        _TOKENS[key] = (token, self._token_expires)

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

    async def _paged(self, path: str, key: str, params: dict[str, Any]) -> list[Any]:
        """Every item of every page (``null`` items included: the caller counts them)."""
        items: list[Any] = []
        offset: Any = 0
        for _ in range(MAX_PAGES):
            body = _envelope(await self.get_json(path, {**params, "offset": offset, "limit": PAGE_LIMIT}), path, key)
            items.extend(body[key])
            nxt = body.get("next")
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
        # A null item is skipped; an unreadable workload fails the call (it could be the one asked about).
        raw = await self._paged("/api/v1/workloads", "workloads", params)
        return [_model(Workload, w, "/api/v1/workloads", f"workloads.{i}") for i, w in enumerate(raw) if w is not None]

    async def get_workload(self, workload_id: str) -> Workload:
        """``GET /api/v1/workloads/{id}``."""
        path = f"/api/v1/workloads/{workload_id}"
        return _model(Workload, await self.get_json(path), path)

    async def get_pods(self, workload_id: str, *, deleted: bool = False, or_deleted: bool = False) -> Records[Pod]:
        """``GET /api/v1/workloads/{id}/pods``, all pages; ``deleted=true`` lists only deleted pods.

        ``or_deleted``: when the live list is empty, ask again with ``deleted=true`` (the pods of a deleted
        or cleaned-up workload are listed only that way); the result then has ``asked_deleted`` set."""
        path = f"/api/v1/workloads/{workload_id}/pods"
        pods = parse_records(Pod, await self._paged(path, "pods", {"deleted": "true"} if deleted else {}))
        if not pods and or_deleted and not deleted:
            pods.add(parse_records(Pod, await self._paged(path, "pods", {"deleted": "true"})))
            pods.asked_deleted = True
        return pods

    async def get_history(self, workload_id: str) -> Records[HistoryRecord]:
        """``GET /api/v1/workloads/{id}/history``, every page until ``next`` is absent.

        The record order is not guaranteed, so paging never stops on an old record; the caller
        filters by timestamp (spec Step 3, FORMAT.md "History order").
        """
        raw = await self._paged(f"/api/v1/workloads/{workload_id}/history", "records", {})
        return parse_records(HistoryRecord, raw)

    async def get_events(self, workload_id: str, since: datetime | None = None) -> Records[Event]:
        """``GET /api/v1/workloads/{id}/events`` newest first; stops paging once a page ends before ``since``."""
        path = f"/api/v1/workloads/{workload_id}/events"
        events: Records[Event] = Records()
        offset: Any = 0
        for _ in range(MAX_PAGES):
            body = _envelope(
                await self.get_json(path, {"offset": offset, "limit": PAGE_LIMIT, "sortOrder": "desc"}), path, "events"
            )
            page = parse_records(Event, body["events"])
            events.add(page)
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
        path = f"/api/v1/workloads/{workload_id}/metrics"
        if not isinstance(body, dict):
            raise ApiError(200, path, f"expected an object with 'measurements', got {_kind(body)}")
        return _model(Metrics, body, path)

    @staticmethod
    def spec_path(workload_type: str | None, workload_id: str, source_api: str | None = None) -> str | None:
        """The spec path of a workload: ``/api/v2/workloads/{id}`` when it was submitted through the v2 API
        (``sourceApi: WorkloadsV2``), else the kind-specific v1 path of its type; None for an unknown type."""
        if source_api == V2_SOURCE_API:
            return f"/api/v2/workloads/{workload_id}"
        key = (workload_type or "").lower().replace("-", "").replace("_", "").replace(" ", "")
        segment = SPEC_PATHS.get(key)
        return f"/api/v1/workloads/{segment}/{workload_id}" if segment else None

    def spec_path_for(self, workload: Workload) -> str | None:
        return self.spec_path(workload.type, workload.id, workload.source_api)

    async def get_spec(
        self, workload_type: str | None, workload_id: str, source_api: str | None = None
    ) -> WorkloadSpec:
        """``GET /api/v1/workloads/{trainings|workspaces|distributed|inferences|distributed-inferences}/{id}``, or
        ``GET /api/v2/workloads/{id}`` for a v2 workload. :class:`NoSpecEndpoint` for an unknown type."""
        path = self.spec_path(workload_type, workload_id, source_api)
        if path is None:
            raise NoSpecEndpoint(workload_type)
        body = await self.get_json(path)
        if source_api == V2_SOURCE_API:
            try:
                return WorkloadSpec.from_v2(body)
            except ValueError as exc:
                raise ApiError(200, path, str(exc)) from exc
        if not isinstance(body, dict):
            raise ApiError(200, path, "the spec response is not a JSON object")
        return _model(WorkloadSpec, body, path)

    async def get_spec_for(self, workload: Workload) -> WorkloadSpec:
        return await self.get_spec(workload.type, workload.id, workload.source_api)

    async def list_clusters(self) -> list[Cluster]:
        """``GET /api/v1/clusters`` (a bare array; ``{"clusters": [...]}`` is tolerated).

        Read once per client (one diagnosis): a question naming its cluster needs the list to resolve
        the name and again for the report's identity. A ``null`` or unreadable item (no ``uuid``) is skipped:
        it can be neither resolved nor named."""
        if self._clusters is None:
            body = await self.get_json("/api/v1/clusters")
            items = body.get("clusters", []) if isinstance(body, dict) else body
            if not isinstance(items, list):
                raise ApiError(200, "/api/v1/clusters", f"expected a list of clusters, got {_kind(items)}")
            self._clusters = list(parse_records(Cluster, items))
        return list(self._clusters)

    async def list_projects(self, name: str, cluster_id: str) -> list[Project]:
        """``GET /api/v1/org-unit/projects`` filtered by exact name and cluster."""
        raw = await self._paged(
            "/api/v1/org-unit/projects", "projects", {"filterBy": f"name=={name},clusterId=={cluster_id}"}
        )
        return list(parse_records(Project, raw))  # read only for the namespace: an unreadable one is skipped


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _envelope(body: Any, path: str, key: str) -> dict[str, Any]:
    """A paged reply: an object whose ``key`` is a list (the spec requires it); anything else (a ``null`` body
    or list, a proxy's array) is an :class:`ApiError`."""
    if not isinstance(body, dict):
        raise ApiError(200, path, f"expected an object with a '{key}' list, got {_kind(body)}")
    if not isinstance(body.get(key), list):
        raise ApiError(200, path, f"expected a '{key}' list, got {_kind(body.get(key))}")
    return body


def _model(model: type[M], body: Any, path: str, where: str = "") -> M:
    """``body`` read as ``model``, or an :class:`ApiError` naming the first field that does not fit."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        errors = exc.errors()
        loc = ".".join(str(p) for p in (where, *(errors[0]["loc"] if errors else ())) if p != "")
        msg = errors[0]["msg"] if errors else "does not fit"
        raise ApiError(200, path, f"{loc or 'the answer'}: {msg}") from None


def _token_fields(r: httpx.Response) -> tuple[str | None, float | None]:
    """(access token, lifetime in seconds) of a token reply (v2 ``access_token``/``expires_in``, v1
    ``accessToken``/``expiresIn``; before 2.24 v1 has no lifetime). (None, None) when it has no token."""
    try:
        body = r.json()
    except ValueError:
        return None, None
    if not isinstance(body, dict):
        return None, None
    token = body.get("access_token") or body.get("accessToken")
    lifetime = body.get("expires_in") or body.get("expiresIn")
    try:
        seconds = float(lifetime) if lifetime and not isinstance(lifetime, bool) else None
    except (TypeError, ValueError):
        seconds = None
    if seconds is not None and not 0 < seconds < 10 * 365 * 86400:
        seconds = None  # a lifetime that cannot be (negative, zero, centuries): the JWT's exp or an hour
    usable = isinstance(token, str) and bool(_BEARER.match(token))
    return (token if usable else None), seconds


def _message(r: httpx.Response) -> str:
    try:
        body = r.json()
    except ValueError:
        return r.text[:200]
    if isinstance(body, dict):
        return str(body.get("message") or body.get("error_description") or body.get("error") or "")[:200]
    return ""
