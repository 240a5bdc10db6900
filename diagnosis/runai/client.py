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
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from diagnosis import errors
from diagnosis.config import RunaiConfig
from diagnosis.fetched import Call, reads
from diagnosis.http import RetryPolicy, make_client, request_url
from diagnosis.runai.models import (
    Cluster,
    Event,
    HistoryRecord,
    Metrics,
    Paged,
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
#: The page :meth:`RunaiClient.list_node_pods` asks for: the neighbours' count is one bounded call.
NODE_PODS_LIMIT = 100
#: A Kubernetes node name (an RFC 1123 subdomain): nothing else is put in a ``filterBy`` term.
_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
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


class ApiError(errors.ApiError):
    """A non-2xx answer after retries (the shared :class:`diagnosis.errors.ApiError`: ``status``, ``path``,
    ``message``); the name stays importable from here."""


class NotFoundError(ApiError, errors.NotFound):
    """HTTP 404."""


class NoSpecEndpoint(errors.NotAsked):
    """The workload's ``type`` has no spec endpoint in the 2.24 API: its submitted spec (desiredPhase,
    limits) cannot be read. Not an HTTP error: nothing was asked."""

    def __init__(self, workload_type: str | None) -> None:
        self.workload_type = workload_type
        kinds = ", ".join(sorted(set(SPEC_PATHS.values())))
        super().__init__(
            f"workload type {workload_type!r} has no spec endpoint in the Run:ai API ({kinds}), so its "
            "submitted spec (desiredPhase: was a stop requested?; limits) was not read"
        )


class Calls:
    """The Run:ai calls by name (issue 10 §2): each gives the :class:`~diagnosis.fetched.Call` a result or a
    piece of evidence cites, so no procedure types ``"GET /api/v1/…"`` by hand. ``str(call)`` is the source
    text of the evidence (``"GET /api/v1/workloads/<id>/pods"``); ``call.label`` the ``what`` of a gap."""

    @staticmethod
    def _call(label: str, path: str) -> Call:
        return Call(label=label, path=path, system="runai")

    @staticmethod
    def workload(workload_id: str) -> Call:
        return Calls._call("workload", f"/api/v1/workloads/{workload_id}")

    @staticmethod
    def workloads(deleted: bool = False) -> Call:
        """The workload list, ``?deleted=true`` when it lists deleted workloads (``filterBy`` is named by the
        caller with ``cite``)."""
        return Calls._call("workloads", "/api/v1/workloads" + ("?deleted=true" if deleted else ""))

    @staticmethod
    def pods(workload_id: str, deleted: bool = False) -> Call:
        """The pods list, ``?deleted=true`` when it lists only deleted pods."""
        return Calls._call("pods", f"/api/v1/workloads/{workload_id}/pods" + ("?deleted=true" if deleted else ""))

    @staticmethod
    def node_pods(node: str, since: datetime, until: datetime, exclude: str | None, limit: int) -> Call:
        """One page of the pods of every workload (``GET /api/v1/workloads/pods``) on ``node`` that completed
        between ``since`` and ``until``, but those of workload ``exclude``, with their workloads' names
        (:func:`node_filters`: ``filterBy`` comma-joined as the spec's ``explode: false`` asks)."""
        query = f"filterBy={','.join(node_filters(node, since, until, exclude))}&verbosity=full&limit={limit}"
        return Calls._call("pods of other workloads on the node", f"/api/v1/workloads/pods?{query}")

    @staticmethod
    def history(workload_id: str) -> Call:
        return Calls._call("history", f"/api/v1/workloads/{workload_id}/history")

    @staticmethod
    def events(workload_id: str) -> Call:
        return Calls._call("events", f"/api/v1/workloads/{workload_id}/events")

    @staticmethod
    def metrics(workload_id: str) -> Call:
        return Calls._call("metrics", f"/api/v1/workloads/{workload_id}/metrics")

    @staticmethod
    def spec(spec_path: str | None) -> Call:
        """The submitted spec's call; ``spec_path`` None (a type without a spec endpoint) is named as such."""
        return Calls._call("submitted spec", spec_path or "spec endpoint")

    @staticmethod
    def clusters() -> Call:
        return Calls._call("clusters", "/api/v1/clusters")

    @staticmethod
    def projects() -> Call:
        return Calls._call("project", "/api/v1/org-unit/projects")


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

    Each endpoint method returns a :class:`~diagnosis.fetched.Read`: awaited, its value; its ``call`` (one of
    :class:`Calls`, also :attr:`calls`) is built from the same arguments.

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
        self.calls = Calls
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
            if 200 <= status < 300:
                token, lifetime, problem = _token_fields(r)
                if token is not None:
                    break
                refused.append(f"{path} ({shape}): {status} without a usable access token ({problem})")
                continue
            refused.append(f"{path} ({shape}): HTTP {status}")
            if status not in _LOGIN_FALLBACK:
                raise ApiError(status, path, "token request failed: " + "; ".join(refused))
        if token is None:
            if 200 <= status < 300:
                # The endpoint answered, but not with a token (a proxy's sign-in page, another service):
                # a named bad answer, never an HTTP error status it did not send.
                raise BadResponse(
                    status,
                    path,
                    "no usable access token from the token endpoint: "
                    + "; ".join(refused)
                    + "; check RUNAI_BASE_URL and RUNAI_CLIENT_ID/SECRET",
                )
            raise ApiError(
                status, path, "token request refused: " + "; ".join(refused) + "; check RUNAI_CLIENT_ID/SECRET"
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
        url = request_url(self.http, path, params)
        r = await self.http.get(url, headers=await self._auth_header())
        if r.status_code == 401:
            r = await self.http.get(url, headers=await self._auth_header(refresh=True))
        if r.status_code == 404:
            raise NotFoundError(404, path, _message(r))
        if r.status_code >= 300:
            raise ApiError(r.status_code, path, _message(r))
        try:
            return r.json()
        except ValueError as exc:
            raise BadResponse(r.status_code, path, f"the body is not JSON ({_body_start(r)})") from exc

    async def _paged(
        self,
        path: str,
        key: str,
        params: dict[str, Any],
        *,
        until: Callable[[list[Any]], bool] | None = None,
        each: Callable[[list[Any]], Awaitable[None]] | None = None,
    ) -> Paged:
        """Every item of every page (``null`` items included: the caller counts them), following ``next``.

        A server that pages wrongly must not multiply the evidence (issue 15 §1: a ``next`` that cycled gave
        "200 occurrences"; records served three times counted 6 for 2). So paging stops, and the result's
        ``stopped`` says why, when ``next`` names a cursor already read, when a page brings no item not
        already read (the server ignores ``offset``), and after :data:`MAX_PAGES` pages; an item served
        again is dropped and counted in ``repeated`` (:func:`_page_key`). ``until(page)`` True ends paging
        after that page with nothing left out (the caller has what it needs: events older than asked). ``each``
        streams: every page's items are handed to it, and the next page is read only after it returned, so no two
        pages are held at once (the result then carries only ``repeated`` and ``stopped``)."""
        items = Paged()
        seen: set[Any] = set()
        cursors: list[Any] = []
        offset: Any = 0
        for _ in range(MAX_PAGES):
            cursors.append(offset)
            body = _envelope(await self.get_json(path, {**params, "offset": offset, "limit": PAGE_LIMIT}), path, key)
            page: list[Any] = body[key]
            fresh = 0
            on_page: set[Any] = set()
            for item in page:
                ident, by_id = _page_key(item)
                if ident is not None and ident in seen:
                    items.repeated += 1
                    continue
                if ident is not None:
                    # An item without an id is "the same" only when an earlier page had it (two equal
                    # history records on one page are the server's own listing).
                    (seen if by_id else on_page).add(ident)
                items.append(item)
                fresh += 1
            seen |= on_page
            if each is not None:
                await each(list(items))
                items.clear()
            nxt = body.get("next")
            if nxt is None or nxt == "" or (until is not None and until(page)):
                return items
            if nxt in cursors:
                items.stopped = (
                    f"paging stopped: the server's next cursor ({nxt!r}) named a page already read, "
                    f"after {len(cursors)} page{'s' if len(cursors) != 1 else ''}"
                )
                return items
            if page and not fresh:
                items.stopped = (
                    f"paging stopped: the page at offset {offset!r} repeated only records already read "
                    f"(the server did not advance), after {len(cursors)} pages"
                )
                return items
            offset = nxt
        items.stopped = (
            f"paging stopped after {MAX_PAGES} pages ({MAX_PAGES * PAGE_LIMIT} records asked for) with the "
            f"server still naming a next page ({offset!r}): the rest of the list was not read"
        )
        return items

    # -- endpoints ----------------------------------------------------------------------------

    @reads(lambda deleted, **_: Calls.workloads(deleted))
    async def list_workloads(
        self,
        filters: list[str],
        *,
        deleted: bool = False,
        each: Callable[[list[Workload]], Awaitable[None]] | None = None,
    ) -> Records[Workload]:
        """``GET /api/v1/workloads`` with ``filterBy`` comma-joined, sorted by phaseUpdatedAt desc, all pages.

        A workload served again by a later page is counted once (``repeated``); ``stopped`` says when paging
        ended early. A ``null`` item is skipped and counted; an unreadable workload (a ``null`` id) fails the
        call with a :class:`BadResponse` naming the field: it could be the one asked about. ``each`` streams
        (a digest's fleet scan): each page's workloads go to it and the result holds none of them."""
        params: dict[str, Any] = {"filterBy": ",".join(filters), "sortBy": "phaseUpdatedAt", "sortOrder": "desc"}
        if deleted:
            params["deleted"] = "true"
        if each is not None:
            return await self._stream_workloads(params, each)
        raw = await self._paged("/api/v1/workloads", "workloads", params)
        out = Records(
            [_model(Workload, w, "/api/v1/workloads", f"workloads.{i}") for i, w in enumerate(raw) if w is not None],
            repeated=raw.repeated,
            stopped=raw.stopped,
        )
        out.nulls = sum(w is None for w in raw)
        return out

    async def _stream_workloads(
        self, params: dict[str, Any], each: Callable[[list[Workload]], Awaitable[None]]
    ) -> Records[Workload]:
        nulls = 0

        async def page(raw: list[Any]) -> None:
            nonlocal nulls
            nulls += sum(w is None for w in raw)
            await each(
                [_model(Workload, w, "/api/v1/workloads", f"workloads.{i}") for i, w in enumerate(raw) if w is not None]
            )

        paged = await self._paged("/api/v1/workloads", "workloads", params, each=page)
        out: Records[Workload] = Records(repeated=paged.repeated, stopped=paged.stopped)
        out.nulls = nulls
        return out

    @reads(lambda workload_id, **_: Calls.workload(workload_id))
    async def get_workload(self, workload_id: str) -> Workload:
        """``GET /api/v1/workloads/{id}``."""
        path = f"/api/v1/workloads/{workload_id}"
        return _model(Workload, await self.get_json(path), path)

    @reads(lambda workload_id, deleted, **_: Calls.pods(workload_id, deleted))
    async def get_pods(
        self,
        workload_id: str,
        *,
        deleted: bool = False,
        or_deleted: bool = False,
        deleted_since: datetime | None = None,
    ) -> Records[Pod]:
        """``GET /api/v1/workloads/{id}/pods``, all pages; ``deleted=true`` lists only deleted pods.

        ``or_deleted``: when the live list is empty, ask again with ``deleted=true`` (the pods of a deleted
        or cleaned-up workload are listed only that way); the result then has ``asked_deleted`` set.
        ``deleted_since``: also list the deleted pods, in the same round trip, and keep those that ended (or were
        deleted) at or after that time (UTC): a replica of the same incident that only the Run:ai list still shows
        takes part in the "which pod failed first" order (FORMAT.md); older attempts' pods do not."""
        path = f"/api/v1/workloads/{workload_id}/pods"
        if deleted_since is not None and not deleted:
            live_raw, gone_raw = await asyncio.gather(
                self._paged(path, "pods", {}), self._paged(path, "pods", {"deleted": "true"})
            )
            pods = parse_records(Pod, live_raw)
            gone = parse_records(Pod, gone_raw)
            names = {p.name for p in pods}
            if pods:
                recent = [
                    p
                    for p in gone
                    if p.name not in names and (p.completed_at or p.deleted_at or deleted_since) >= deleted_since
                ]
                gone = Records(
                    recent, nulls=gone.nulls, invalid=gone.invalid, repeated=gone.repeated, stopped=gone.stopped
                )
            pods.add(gone)
            pods.asked_deleted = True
            return pods
        pods = parse_records(Pod, await self._paged(path, "pods", {"deleted": "true"} if deleted else {}))
        if not pods and or_deleted and not deleted:
            pods.add(parse_records(Pod, await self._paged(path, "pods", {"deleted": "true"})))
            pods.asked_deleted = True
        return pods

    @reads(lambda node, since, until, exclude, limit, **_: Calls.node_pods(node, since, until, exclude, limit))
    async def list_node_pods(
        self, node: str, since: datetime, until: datetime, exclude: str | None = None, limit: int = NODE_PODS_LIMIT
    ) -> Records[Pod]:
        """``GET /api/v1/workloads/pods``: one page (at most ``limit``) of the live pods of every workload on node
        ``node`` that completed between ``since`` and ``until`` (UTC), those of workload ``exclude`` left out, with
        their workloads' names and projects (``verbosity=full``). One bounded call: when the server names a next
        page, the result's ``stopped`` says the list goes on. A node name that cannot be put in a filter (not a
        Kubernetes name) is not asked (:class:`~diagnosis.errors.NotAsked`)."""
        if not _NODE_NAME.match(node):
            raise errors.NotAsked(f"the node name {node!r} is not one a filter can carry; it was not asked")
        path = "/api/v1/workloads/pods"
        params = {"filterBy": ",".join(node_filters(node, since, until, exclude)), "verbosity": "full", "limit": limit}
        body = _envelope(await self.get_json(path, params), path, "pods")
        pods = parse_records(Pod, body["pods"])
        if body.get("next") not in (None, ""):
            pods.stopped = f"only the first {limit} pods were read (one bounded call); the list goes on"
        return pods

    @reads(lambda workload_id, **_: Calls.history(workload_id))
    async def get_history(self, workload_id: str) -> Records[HistoryRecord]:
        """``GET /api/v1/workloads/{id}/history``, every page until ``next`` is absent.

        The record order is not guaranteed, so paging never stops on an old record; the caller
        filters by timestamp (spec Step 3, FORMAT.md "History order").
        """
        raw = await self._paged(f"/api/v1/workloads/{workload_id}/history", "records", {})
        return parse_records(HistoryRecord, raw)

    @reads(lambda workload_id, **_: Calls.events(workload_id))
    async def get_events(self, workload_id: str, since: datetime | None = None) -> Records[Event]:
        """``GET /api/v1/workloads/{id}/events`` newest first; stops paging once a page ends before ``since``
        (the pages are read as :meth:`_paged` reads them: each event once, a cycling cursor stopped)."""

        def older_than_since(page: list[Any]) -> bool:
            if since is None:
                return False
            oldest = min((e.created_at for e in parse_records(Event, page) if e.created_at), default=None)
            return oldest is not None and oldest < since

        path = f"/api/v1/workloads/{workload_id}/events"
        return parse_records(Event, await self._paged(path, "events", {"sortOrder": "desc"}, until=older_than_since))

    @reads(lambda workload_id, **_: Calls.metrics(workload_id))
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

    def spec_call_for(self, workload: Workload) -> Call:
        """The call that reads ``workload``'s submitted spec (see :meth:`Calls.spec`)."""
        return Calls.spec(self.spec_path_for(workload))

    @reads(
        lambda self, workload_type, workload_id, source_api: Calls.spec(
            self.spec_path(workload_type, workload_id, source_api)
        )
    )
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

    @reads(lambda self, workload: self.spec_call_for(workload))
    async def get_spec_for(self, workload: Workload) -> WorkloadSpec:
        return await self.get_spec(workload.type, workload.id, workload.source_api)

    @reads(lambda **_: Calls.clusters())
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

    async def list_all_projects(self) -> list[Project]:
        """``GET /api/v1/org-unit/projects``, every page (``doctor``: the namespaces the bot reads)."""
        raw = await self._paged("/api/v1/org-unit/projects", "projects", {})
        return list(parse_records(Project, raw))

    @reads(lambda **_: Calls.projects())
    async def list_projects(self, name: str, cluster_id: str) -> list[Project]:
        """``GET /api/v1/org-unit/projects`` filtered by exact name and cluster."""
        raw = await self._paged(
            "/api/v1/org-unit/projects", "projects", {"filterBy": f"name=={name},clusterId=={cluster_id}"}
        )
        return list(parse_records(Project, raw))  # read only for the namespace: an unreadable one is skipped


def node_filters(node: str, since: datetime, until: datetime, exclude: str | None = None) -> list[str]:
    """The ``filterBy`` terms of :meth:`RunaiClient.list_node_pods` (the spec's ``PodsFilter``)."""
    terms = [f"nodeName=={node}"]
    if exclude:
        terms.append(f"workloadId!={exclude}")
    return [*terms, f"completedAt>={iso(since)}", f"completedAt<={iso(until)}"]


class BadResponse(ApiError, errors.BadResponse):
    """A 2xx answer whose body cannot be used (not JSON, not the spec's shape, a field the model cannot
    read): ``message`` says what was wrong; a gap reads "the answer could not be used: <message>"."""


def _kind(value: Any) -> str:
    """The JSON type of ``value`` as a person reads it: ``null``, ``list (empty: [])``, ``dict``, ``str``."""
    if value is None:
        return "null"
    if isinstance(value, list) and not value:
        return "list (empty: [])"
    return type(value).__name__


def _envelope(body: Any, path: str, key: str) -> dict[str, Any]:
    """A paged reply: an object whose ``key`` is a list (the spec requires it); anything else (a ``null`` body
    or list, a proxy's array, an empty ``[]``) is a :class:`BadResponse` naming what came instead."""
    if not isinstance(body, dict):
        raise BadResponse(200, path, f"expected an object with a '{key}' list, got {_kind(body)}")
    if not isinstance(body.get(key), list):
        raise BadResponse(200, path, f"expected a '{key}' list, got {_kind(body.get(key))}")
    return body


def _page_key(item: Any) -> tuple[Any, bool]:
    """(identity, whether it is an id) of one paged item: its ``id`` (a pod, a workload, an event), a history
    record's event ``id``, else its whole content (a phase update has no id); (None, False) for a ``null``."""
    if item is None:
        return None, False
    if isinstance(item, dict):
        ident = item.get("id")
        if ident is None and isinstance(item.get("spec"), dict) and isinstance(item["spec"].get("event"), dict):
            ident = item["spec"]["event"].get("id")
        if isinstance(ident, str | int) and not isinstance(ident, bool) and ident != "":
            return ("id", ident), True
    try:
        return ("content", json.dumps(item, sort_keys=True, default=str)), False
    except (TypeError, ValueError):
        return None, False


def _model(model: type[M], body: Any, path: str, where: str = "") -> M:
    """``body`` read as ``model``, or a :class:`BadResponse` naming the first field that does not fit
    (``workloads.0.id is null`` for a required value the server sent as ``null``)."""
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        problems = exc.errors()
        first = problems[0] if problems else None
        loc = ".".join(str(p) for p in (where, *(first["loc"] if first else ())) if p != "")
        if first is not None and first.get("input", ...) is None:
            text = f"{loc} is null where the spec requires a value" if loc else "the body is null, not an object"
        else:
            text = f"{loc or 'the answer'}: {first['msg'] if first else 'does not fit'}"
        raise BadResponse(200, path, text) from None


def _token_fields(r: httpx.Response) -> tuple[str | None, float | None, str]:
    """(access token, lifetime in seconds, why there is none) of a token reply (v2 ``access_token``/
    ``expires_in``, v1 ``accessToken``/``expiresIn``; before 2.24 v1 has no lifetime). The token is None when
    the reply has none that can be sent, and the third item then says what came instead (an HTML page, JSON
    that is not an object, an object without the token); "" when there is a token."""
    try:
        body = r.json()
    except ValueError:
        return None, None, f"not JSON: {_body_start(r)}"
    if not isinstance(body, dict):
        return None, None, f"JSON {_kind(body)}, not an object"
    token = body.get("access_token") or body.get("accessToken")
    lifetime = body.get("expires_in") or body.get("expiresIn")
    try:
        seconds = float(lifetime) if lifetime and not isinstance(lifetime, bool) else None
    except (TypeError, ValueError):
        seconds = None
    if seconds is not None and not 0 < seconds < 10 * 365 * 86400:
        seconds = None  # a lifetime that cannot be (negative, zero, centuries): the JWT's exp or an hour
    if isinstance(token, str) and _BEARER.match(token):
        return token, seconds, ""
    if token is None:
        return None, seconds, "no access_token or accessToken field"
    return None, seconds, "the token is not one a bearer header can carry"


def _body_start(r: httpx.Response) -> str:
    """``text/html: <html>SSO</html>``: the content type and the start of a body that is not JSON (for a
    line a person reads; the body of a token reply that is not JSON carries no token to leak)."""
    kind = r.headers.get("content-type", "no content type").split(";")[0].strip() or "no content type"
    start = " ".join(r.text[:80].split())
    return f"{kind}" + (f": {start}" if start else ", empty")


def _message(r: httpx.Response) -> str:
    """The server's own message of an error answer, on one line (a proxy's HTML page too), at most 200
    characters; "" when it gives none."""
    try:
        body = r.json()
    except ValueError:
        return " ".join(r.text[:200].split())
    if isinstance(body, dict):
        return str(body.get("message") or body.get("error_description") or body.get("error") or "")[:200]
    return ""
