"""A read is one object (issue 20): a client method returns a :class:`~diagnosis.fetched.Read` whose call is built
from exactly the arguments of the read, :func:`~diagnosis.fetched.fetch` turns a failed read into a
:class:`~diagnosis.fetched.Fetched` carrying that call, and both digest scans name a failed read the same way
(:func:`~diagnosis.digests.read_gap`: :func:`~diagnosis.fetched.describe_error` and the call)."""

from __future__ import annotations

import asyncio
import gc
import inspect
import warnings
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from diagnosis.config import OsmoConfig, RunaiConfig
from diagnosis.digests import read_gap
from diagnosis.errors import ApiError
from diagnosis.fetched import Call, Fetched, Read, describe_error, fetch, reads
from diagnosis.http import ReadOnlyViolation, RetryPolicy
from diagnosis.k8s import KubeCalls, Tier2Source
from diagnosis.osmo import digest_source as osmo_digest
from diagnosis.osmo.client import OsmoCalls, OsmoClient
from diagnosis.runai.client import Calls, RunaiClient
from diagnosis.runai.models import Workload

CALL = Call(label="history", path="/api/v1/workloads/w/history", system="runai")


async def _no_wait(_: float) -> None:
    return None


def osmo(handler: Any = None) -> OsmoClient:
    transport = httpx.MockTransport(handler or (lambda request: httpx.Response(500)))
    return OsmoClient(OsmoConfig("http://osmo.test", "tok"), inner=transport, retry=RetryPolicy(sleep=_no_wait))


def runai() -> RunaiClient:
    config = RunaiConfig("https://runai.test", "svc-fetched", "s", console_url="https://runai.test")
    transport = httpx.MockTransport(lambda request: httpx.Response(500))
    return RunaiClient(config, inner=transport, retry=RetryPolicy(sleep=_no_wait))


# -- a read's call is built from its arguments ----------------------------------------------------------------


def test_the_osmo_error_log_of_a_retry_names_the_retry_in_its_call() -> None:
    client = osmo()
    read = client.error_logs("w-1", "train", 2)
    assert read.call == OsmoCalls.error_logs("w-1", "train", 2)
    assert str(read.call) == "GET /api/workflow/w-1/error_logs?task_name=train&retry_id=2"
    assert client.error_logs("w-1", "train", retry_id=0).call.path.endswith("&retry_id=0")  # retry 0 is a retry
    assert str(client.error_logs("w-1", "train").call) == "GET /api/workflow/w-1/error_logs?task_name=train"
    assert read.call.label == "error log of task train"


def test_each_osmo_read_names_the_call_of_its_own_arguments() -> None:
    client = osmo()
    assert client.logs("w-1", task_name="prep").call == OsmoCalls.logs("w-1", "prep")
    assert client.logs("w-1").call == OsmoCalls.logs("w-1")
    assert str(client.events("w-1", task_name="t").call) == "GET /api/workflow/w-1/events?task_name=t"
    assert client.events("w-1").call == OsmoCalls.events("w-1")
    assert client.spec("w-1").call == OsmoCalls.spec("w-1")
    assert str(client.spec("w-1", template=False).call) == "GET /api/workflow/w-1/spec?use_template=false"
    assert client.get_workflow("w-1").call == OsmoCalls.workflow("w-1")
    assert client.list_workflows(limit=5).call == OsmoCalls.workflow_list()
    assert client.task_requests("w-1").call == OsmoCalls.task_requests("w-1")
    assert client.task_request("w-1", "t").call == OsmoCalls.task_request("w-1", "t")
    assert client.pool_quota(["h100"]).call == OsmoCalls.pool_quota("h100")
    assert str(client.pool_quota().call) == "GET /api/pool_quota?all_pools=true"
    assert str(client.resources(["a", "b"]).call) == "GET /api/resources?pools=a&pools=b"


def test_each_runai_and_tier2_read_names_the_call_of_its_own_arguments() -> None:
    client = runai()
    assert client.get_pods("w", or_deleted=True).call == Calls.pods("w")
    assert str(client.get_pods("w", deleted=True).call) == "GET /api/v1/workloads/w/pods?deleted=true"
    assert client.get_history("w").call == Calls.history("w")
    assert client.get_events("w", since=datetime.now(UTC)).call == Calls.events("w")
    assert client.get_workload("w").call == Calls.workload("w")
    assert client.list_workloads(["name==x"], deleted=True).call == Calls.workloads(deleted=True)
    assert client.list_clusters().call == Calls.clusters()
    assert client.list_projects("nlp", "c").call == Calls.projects()
    workload = Workload.model_validate({"id": "w", "name": "n", "type": "Training"})
    assert client.get_spec_for(workload).call == Calls.spec("/api/v1/workloads/trainings/w")
    assert client.get_spec("Unknown", "w").call == Calls.spec(None)
    source = Tier2Source.__new__(Tier2Source)  # no cluster: only the calls are built
    assert source.read_log("ns", "p", "c", previous=True).call == KubeCalls.log("ns", "p", "c", True)
    assert source.read_pod("ns", "p").call == KubeCalls.pod("ns", "p")
    assert source.pod_events("ns", "p").call == KubeCalls.pod_events("ns", "p")
    assert source.read_node("n").call == KubeCalls.node("n")
    assert source.node_events("n").call == KubeCalls.node_events("n")


def test_a_read_runs_only_when_awaited_and_one_never_awaited_leaves_no_warning() -> None:
    started: list[str] = []

    async def read() -> int:
        started.append("read")
        return 7

    one = Read(CALL, read)
    assert not started
    clients = osmo(), runai()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clients[0].logs("w-1"), clients[1].get_history("w")  # made and dropped: no coroutine was created
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]
    assert asyncio.run(_await(one)) == 7 and started == ["read"]


async def _await(read: Read[int]) -> int:
    return await read


def test_a_call_that_names_an_argument_the_read_does_not_take_is_refused_when_declared() -> None:
    with pytest.raises(TypeError, match="task"):

        @reads(lambda workflow_id, task, **_: OsmoCalls.logs(workflow_id, task))
        async def logs(workflow_id: str, task_name: str | None = None) -> str:
            return ""


def test_a_declared_read_keeps_the_signature_and_docstring_of_its_method() -> None:
    assert list(inspect.signature(OsmoClient.error_logs).parameters) == ["self", "workflow_id", "task_name", "retry_id"]
    assert "error_logs" in (OsmoClient.error_logs.__doc__ or "")


# -- fetch: a failed read carries its call ----------------------------------------------------------------------


async def test_fetch_of_a_failing_read_gives_a_fetched_carrying_its_call() -> None:
    exc = ApiError(503, CALL.path, "busy")

    async def failing() -> int:
        raise exc

    got = await fetch(Read(CALL, failing))
    assert got.call is CALL and got.value is None and not got.ok
    assert got.why == describe_error(exc) == "HTTP 503 (busy) after retries"
    assert got.cited_why == "HTTP 503 (busy) after retries [GET /api/v1/workloads/w/history]"


async def test_fetch_within_a_deadline_names_the_timeout_with_the_call() -> None:
    got = await fetch(Read(CALL, lambda: asyncio.sleep(5, 1)), within=0.01)
    assert (got.call, got.why) == (CALL, "timed out (diagnosis deadline)")


async def test_fetch_of_a_client_read_carries_the_call_of_its_arguments() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("access_token"):
            return httpx.Response(200, json={"token": "jwt", "expires_at": 4102444800})
        return httpx.Response(400, json={"message": "no such retry"})

    async with osmo(handler) as client:
        got = await fetch(client.error_logs("w-1", "train", 3))
    assert got.path == "GET /api/workflow/w-1/error_logs?task_name=train&retry_id=3"
    assert got.why == "HTTP 400: no such retry"


async def test_fetch_re_raises_a_read_only_violation() -> None:
    async def write() -> None:
        raise ReadOnlyViolation("DELETE /x")

    with pytest.raises(ReadOnlyViolation):
        await fetch(Read(CALL, write))


# -- digest scans: a gap carries its call and describe_error's wording --------------------------------------------


def test_a_digest_gap_is_the_reads_why_and_its_call() -> None:
    exc = ApiError(500, CALL.path, "boom")
    gap = read_gap("w: history", Fetched.failure(CALL, exc))
    assert (gap.what, gap.why) == ("w: history", f"{describe_error(exc)} [GET /api/v1/workloads/w/history]")


async def test_the_osmo_scan_names_a_failed_read_with_its_call_and_describe_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The failed-workflow listing and each listed workflow's query: ``why`` is describe_error's, then the call."""
    ended = datetime.now(UTC) - timedelta(hours=1)
    listed = {
        "name": "wf-1",
        "user": "maya",
        "status": "FAILED",
        "pool": "default",
        "submit_time": f"{ended - timedelta(hours=1):%Y-%m-%dT%H:%M:%S}",
        "end_time": f"{ended:%Y-%m-%dT%H:%M:%S}",
    }

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("access_token"):
            return httpx.Response(200, json={"token": "jwt", "expires_at": 4102444800})
        if request.url.path == "/api/workflow":
            return httpx.Response(200, json={"workflows": [listed], "more_entries": False})
        return httpx.Response(422, json={"detail": [{"loc": ["query", "verbose"], "msg": "bad"}]})

    scan = await _osmo_scan(monkeypatch, handler, ended)
    [gap] = scan.gaps
    assert gap.what == "workflow wf-1"
    assert gap.why == "HTTP 422: query.verbose: bad [GET /api/workflow/wf-1]"

    def no_list(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("access_token"):
            return handler(request)
        return httpx.Response(200, text="<html>sign in</html>", headers={"content-type": "text/html"})

    scan = await _osmo_scan(monkeypatch, no_list, ended)
    [gap] = scan.gaps
    assert gap.what == "OSMO failed workflows"
    assert (
        gap.why
        == "the answer could not be used: the body is not JSON (text/html): <html>sign in</html> [GET /api/workflow]"
    )


async def _osmo_scan(monkeypatch: pytest.MonkeyPatch, handler: Any, ended: datetime) -> osmo_digest.OsmoScan:
    """``scan_osmo`` over ``handler`` (the scan's own client, on a mock transport)."""

    def client(config: OsmoConfig) -> OsmoClient:
        return OsmoClient(config, inner=httpx.MockTransport(handler), retry=RetryPolicy(sleep=_no_wait))

    monkeypatch.setattr(osmo_digest, "OsmoClient", client)
    config = OsmoConfig("http://osmo.test", "tok")
    return await osmo_digest.scan_osmo(
        config, pools=None, start=ended - timedelta(days=1), end=ended + timedelta(minutes=1), now=ended
    )
