"""Issue 9 §2 (Run:ai half): spec-valid generated answers through the real Run:ai client and the CLI.

Runs ``bench/runai_fuzz.py``: bodies generated from the Run:ai 2.24 OpenAPI schemas (the workload, the
workloads list, pods, history, events with ``null`` items, metrics, clusters, projects, the kind-specific
spec, both token replies), each checked against its schema, served from a loopback server, each round a
``workload-doctor diagnose … --format json`` run; then odd answers, one endpoint per round. No crash, no
exit 1, every oddity a named gap. Prints the figures (``pytest -s`` shows them). Below it, the client fixes
the fuzz found, each pinned on its own.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from bench import runai_fuzz
from diagnosis.config import RunaiConfig
from diagnosis.http import RetryPolicy
from diagnosis.runai.client import ApiError, RunaiClient
from diagnosis.runai.models import Measurement

WID = "0b5e4c1a-9f3d-4e2b-8a77-3c2d1e0f9a88"


@pytest.mark.skipif(not runai_fuzz.SPEC_PATH.exists(), reason="../shared/reference/specs is absent")
def test_spec_valid_runai_answers_never_crash_or_exit_1() -> None:
    figures = runai_fuzz.run(bodies=400, odd=2 * len(runai_fuzz.ODDITIES), seed=24)
    print("\n" + figures.summary())
    assert figures.crashes == 0 and figures.exits.get(1, 0) == 0
    assert figures.invalid_bodies == 0
    assert figures.problems == [], "\n".join(figures.problems[:20])
    assert figures.rounds == 400 and figures.null_events_rounds >= 50
    for endpoint in ("workload", "workloads", "pods", "history", "events", "metrics", "clusters", "spec", "token_v2"):
        assert figures.bodies[endpoint] >= 50, (endpoint, figures.bodies)
    assert figures.bodies["token_v1"] > 0  # a v2 reply without a usable token falls back to v1
    assert figures.odd_gaps >= len(runai_fuzz.ODDITIES)  # odd answers were read, and each was reported
    assert figures.outcomes["diagnosed"] >= 100


async def _no_wait(_: float) -> None:
    return None


def _client(routes: dict[str, Any], seen: list[httpx.Request] | None = None) -> RunaiClient:
    """A client whose transport answers ``routes`` (path -> JSON body, or an httpx.Response)."""

    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        answer = routes.get(request.url.path)
        if answer is None:
            return httpx.Response(404, json={"message": "not found"})
        return answer if isinstance(answer, httpx.Response) else httpx.Response(200, json=answer)

    # a client id of its own: the token cache is keyed by it, and id(routes) is reused once a test's dict is freed
    config = RunaiConfig("https://runai.test", f"svc-{uuid.uuid4().hex}", "s", console_url="https://runai.test")
    return RunaiClient(config, inner=httpx.MockTransport(handler), retry=RetryPolicy(sleep=_no_wait))


TOKEN = {"/api/v2/token": {"access_token": "a.b.c", "token_type": "Bearer", "expires_in": 3600}}


async def test_null_event_items_are_skipped_and_counted_not_fatal() -> None:
    """Event2 is ``nullable``: a ``null`` item is spec-valid and must never drop the whole events call."""
    event = {"createdAt": "2026-11-28T10:00:00Z", "type": "Warning", "clusterId": WID, "message": "OOMKilled"}
    async with _client({**TOKEN, f"/api/v1/workloads/{WID}/events": {"events": [None, event, None]}}) as c:
        events = await c.get_events(WID)
    assert [e.message for e in events] == ["OOMKilled"] and events.nulls == 2


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"events": None}, "expected a 'events' list, got null"),
        ({"next": 1}, "expected a 'events' list, got null"),
        (httpx.Response(200, content=b"null"), "expected an object with a 'events' list, got null"),
        ([{"message": "x"}], "got list"),
    ],
)
async def test_an_events_answer_without_its_list_is_an_api_error(body: Any, expected: str) -> None:
    async with _client({**TOKEN, f"/api/v1/workloads/{WID}/events": body}) as c:
        with pytest.raises(ApiError, match=expected):
            await c.get_events(WID)


async def test_an_unreadable_workload_is_an_api_error_not_a_validation_error() -> None:
    routes = {
        **TOKEN,
        "/api/v1/workloads": {"workloads": [None, {"id": "w"}]},
        f"/api/v1/workloads/{WID}": {"id": 5, "name": ["x"]},
        f"/api/v1/workloads/{WID}/metrics": [],
    }
    async with _client(routes) as c:
        with pytest.raises(ApiError, match=r"workloads\.1\.name: Field required"):
            await c.list_workloads(["name==x"])
        with pytest.raises(ApiError, match="id: Input should be a valid string"):
            await c.get_workload(WID)
        with pytest.raises(ApiError, match="expected an object with 'measurements', got list"):
            await c.get_metrics(WID, ["CPU_MEMORY_USAGE_BYTES"], datetime(2026, 1, 1, tzinfo=UTC), datetime.now(UTC))


async def test_unreadable_clusters_are_skipped() -> None:
    good = {"uuid": WID, "name": "dgx-prod", "tenantId": 1, "createdAt": "2026-01-01T00:00:00Z"}
    async with _client({**TOKEN, "/api/v1/clusters": [{"name": "x"}, None, 5, good]}) as c:
        assert [cl.name for cl in await c.list_clusters()] == ["dgx-prod"]


def test_metric_values_that_are_not_finite_are_no_measurement() -> None:
    series = Measurement.model_validate(
        {"type": "CPU_MEMORY_USAGE_BYTES", "values": [{"value": v, "timestamp": None} for v in ("inf", "NaN", "8")]}
    )
    assert series.floats() == [(None, 8.0)] and series.peak() == (None, 8.0)


async def test_a_token_that_cannot_be_a_bearer_is_no_token() -> None:
    """A spec-valid reply (``access_token`` is any string) whose token cannot go into a header falls back to
    the next login shape, and the refusal says so, instead of a transport error "after retries"."""
    seen: list[httpx.Request] = []
    routes = {
        "/api/v2/token": {"access_token": "名前 x", "token_type": "Bearer", "expires_in": -5},
        "/api/v1/token": {"accessToken": "v1.token"},
        "/api/v1/clusters": [],
    }
    async with _client(routes, seen) as c:
        assert await c.list_clusters() == []
        assert c._token == "v1.token" and c._token_expires > datetime.now(UTC).timestamp() + 600
    assert [r.url.path for r in seen] == ["/api/v2/token", "/api/v1/token", "/api/v1/clusters"]
    routes = {"/api/v2/token": {"access_token": "a\nb", "token_type": "Bearer"}, "/api/v1/token": {"idToken": "x"}}
    async with _client(routes) as c:
        with pytest.raises(ApiError, match="200 without a usable access token"):
            await c.list_clusters()


def test_the_bodies_the_fuzz_serves_are_spec_valid() -> None:
    """The generator's validity check is known to fail: a body that breaks its schema is caught."""
    if not runai_fuzz.SPEC_PATH.exists():
        pytest.skip("../shared/reference/specs is absent")
    import random

    spec = json.loads(runai_fuzz.SPEC_PATH.read_text())
    rng = random.Random(1)
    world = runai_fuzz.make_world(runai_fuzz.RunaiGen(spec, rng), spec, rng)
    assert runai_fuzz.body_problems(spec, world) == []
    world.pods["pods"].append({"name": 5})
    world.workload["phase"] = "Crashed"  # not in the 2.24 Phase enum
    problems = runai_fuzz.body_problems(spec, world)
    assert any(p.startswith("pods:") for p in problems) and any(p.startswith("workload:") for p in problems)


async def test_a_short_token_lifetime_is_not_a_login_per_request() -> None:
    """``expires_in`` is any integer in the spec: a lifetime under the one-minute margin refreshes halfway."""
    seen: list[httpx.Request] = []
    routes = {
        "/api/v2/token": {"access_token": "a.b.c", "token_type": "Bearer", "expires_in": 8},
        "/api/v1/clusters": [],
    }
    async with _client(routes, seen) as c:
        for _ in range(3):
            c._clusters = None
            await c.list_clusters()
    assert [r.url.path for r in seen].count("/api/v2/token") == 1
