"""OSMO client and procedure over real HTTP (sandbox): streams, token, read-only guard, outcomes."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from diagnosis.answer import BackendUnavailable
from diagnosis.config import OsmoConfig
from diagnosis.http import ReadOnlyViolation
from diagnosis.osmo.client import OsmoClient
from diagnosis.osmo.procedure import DASHBOARD_NA, GRAFANA_NA, answer_osmo
from diagnosis.question import Question
from diagnosis.render import render_text
from diagnosis.report import Category, Outcome
from sandbox.server import Sandbox
from tests.paths import TESTS

CASES = TESTS / "fixtures" / "cases" / "osmo"
NOW = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)


def case(name: str) -> dict[str, Any]:
    return json.loads((CASES / f"{name}.json").read_text())


class Endless(httpx.AsyncByteStream):
    """A live stream that never ends: a chunk every 10 ms, forever."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            yield b"2026/11/28 10:00:00 [t] still going\n"
            await asyncio.sleep(0.01)


def endless_transport() -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("access_token"):
            return httpx.Response(200, json={"token": "jwt", "expires_at": time.time() + 300})
        return httpx.Response(200, stream=Endless())

    return httpx.MockTransport(handler)


async def test_endless_stream_stops_at_deadline_and_keeps_prefix() -> None:
    cfg = OsmoConfig("http://osmo.test", "tok")
    async with OsmoClient(cfg, inner=endless_transport(), stream_deadline_s=0.3, stream_max_bytes=10**9) as c:
        t0 = time.monotonic()
        got = await c.logs("w-1")
        assert time.monotonic() - t0 < 2
    assert got.truncated and got.reason == "deadline" and got.text.startswith("2026/11/28")
    assert "0.3 s" in (got.cut_note("logs") or "")


async def test_endless_spec_stream_stops_at_byte_cap() -> None:
    """The spec keeps its start: reading stops at the cap (logs and events keep their end instead)."""
    cfg = OsmoConfig("http://osmo.test", "tok")
    async with OsmoClient(cfg, inner=endless_transport(), stream_deadline_s=30, stream_max_bytes=500) as c:
        got = await c.spec("w-1")
    assert got.truncated and got.reason == "byte cap" and got.bytes_read == 500 and got.dropped_bytes == 0


async def test_token_cached_and_reexchanged_once_on_401() -> None:
    calls = {"exchange": 0, "get": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/api/auth/jwt/access_token":
            calls["exchange"] += 1
            return httpx.Response(200, json={"token": f"jwt{calls['exchange']}", "expires_at": time.time() + 300})
        calls["get"] += 1
        if request.headers["authorization"] == "Bearer jwt1" and calls["get"] == 3:
            return httpx.Response(401, json={"message": "expired"})
        return httpx.Response(200, json={"workflows": []})

    async with OsmoClient(OsmoConfig("http://osmo.test", "tok"), inner=httpx.MockTransport(handler)) as c:
        await c.list_workflows()
        await c.list_workflows()
        assert calls["exchange"] == 1  # cached
        await c.list_workflows()  # 401 -> one re-exchange -> retried
        assert calls["exchange"] == 2
    assert "x-osmo-client-version" not in {k.lower() for k in c.http.headers}


async def test_refused_credentials_raise_backend_unavailable() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(403, json={"message": "no"})

    cfg = OsmoConfig("http://osmo.test", "bad")

    async def run() -> None:
        from unittest import mock

        with mock.patch(
            "diagnosis.osmo.procedure.OsmoClient", lambda config: OsmoClient(config, inner=httpx.MockTransport(handler))
        ):
            await answer_osmo(Question(text="status", workflow_id="w-1"), cfg, NOW)

    with pytest.raises(BackendUnavailable):
        await run()


async def test_guard_refuses_mutation() -> None:
    async with OsmoClient(OsmoConfig("http://osmo.test", "t"), inner=endless_transport()) as c:
        with pytest.raises(ReadOnlyViolation):
            await c.http.delete("/api/workflow/w-1")


def run_case(snapshot: dict[str, Any], question: Question | None = None) -> tuple[Any, Sandbox]:
    sandbox = Sandbox(snapshot)
    with sandbox:
        ask = snapshot["ask"]
        q = question or Question(text=ask["text"], workflow_id=ask.get("workflow_id"))
        report = asyncio.run(answer_osmo(q, OsmoConfig(sandbox.url, "tok", deadline=30), NOW))
    assert sandbox.mutating_requests() == []  # read-only: the sandbox saw no mutating request
    return report, sandbox


@pytest.mark.parametrize(
    ("name", "outcome", "pool"),
    [
        ("osmo-pending-quota", Outcome.PENDING_QUOTA, "h100-train"),
        ("osmo-pending-capacity", Outcome.PENDING_CAPACITY, "h100-research"),
        ("osmo-pending-fragmentation", Outcome.PENDING_FRAGMENTATION, "h100-shared"),
    ],
)
def test_pending_cases_say_the_numbers(name: str, outcome: Outcome, pool: str) -> None:
    report, sandbox = run_case(case(name))
    text = render_text(report)
    assert report.outcome == outcome and pool in text
    for label in ("GPUs asked", "quota_free", "total_free", "largest free on one node"):
        assert label in text
    assert any(r.path == "/api/pool_quota" for r in sandbox.requests)


def test_pool_offline_is_pool_unavailable() -> None:
    snap = copy.deepcopy(case("osmo-pending-quota"))
    for ns in snap["osmo"]["pool_quota"]["node_sets"]:
        for pool in ns["pools"]:
            pool["status"] = "MAINTENANCE"
    report, _ = run_case(snap)
    assert report.outcome == Outcome.POOL_UNAVAILABLE


def test_links_null_named_unavailable() -> None:
    report, _ = run_case(case("osmo-running-links-null"))
    text = render_text(report)
    assert GRAFANA_NA in text and DASHBOARD_NA in text and report.outcome == Outcome.STATUS
    assert "still open" in text  # the live log stream was cut and the report says so


def test_completed_offers_download_never_runs_it() -> None:
    report, sandbox = run_case(case("osmo-completed"))
    text = render_text(report)
    assert "osmo data download s3://acme-osmo-intermediate/workflows/tactile-pretrain-9 ~/" in text
    assert "App suggestion" in text
    assert all(r.method == "GET" or r.path == "/api/auth/jwt/access_token" for r in sandbox.requests)


def test_not_found_never_substitutes() -> None:
    report, _ = run_case(case("osmo-not-found"))
    assert report.outcome == Outcome.NOT_FOUND
    assert "grasp-policy-train-70" not in render_text(report)


def test_multi_task_logs_fetched_per_task_and_root_named() -> None:
    report, sandbox = run_case(case("osmo-multi-task-failed"))
    assert report.category == Category.CRASH_APP_ERROR and "trainer-1" in report.headline
    per_task = [r for r in sandbox.requests if r.path.endswith("/logs") and "task_name=" in r.query]
    assert len(per_task) == 3


def test_failed_fetch_becomes_named_gap() -> None:
    snap = copy.deepcopy(case("osmo-failed-app"))
    snap["osmo"]["workflows"][0]["events"] = None
    report, _ = run_case(snap)
    assert report.category == Category.CRASH_APP_ERROR
    assert any("events" in g.what and "500" in g.why for g in report.gaps)


def test_explain_and_list() -> None:
    snap = case("osmo-failed-app")
    report, _ = run_case(
        snap,
        Question(text="what does grasp-policy-train-17 do", kind="osmo_explain", workflow_id="grasp-policy-train-17"),
    )
    text = render_text(report)
    assert "WANDB_PROJECT" in text and "grasp-act" not in text  # names, never values
    report, _ = run_case(snap, Question(text="list recent workflows", kind="osmo_list"))
    assert report.tables and report.tables[0].columns[:4] == ["Workflow ID", "Pool", "Status", "Duration"]


def test_missing_pool_quota_falls_back_to_node_totals_not_fragmentation() -> None:
    """pool_quota answers 500: the physical free GPUs come from the pool's nodes, so a short pool is capacity."""
    snap = copy.deepcopy(case("osmo-pending-capacity"))
    snap["osmo"]["pool_quota"] = None
    report, _ = run_case(snap)
    text = render_text(report)
    assert report.outcome == Outcome.PENDING_CAPACITY
    assert "free GPUs summed over the nodes of h100-research" in text
    assert any("pool quota" in g.what for g in report.gaps)
