"""Issue 9 §3 (OSMO): logs read from the end, every failed fetch a named gap, models as lenient as the
spec, no ``Bearer None``, escaped path segments; issue 8 §2: an upstream upload failure quoted."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import pytest
from typer.testing import CliRunner

from diagnosis.answer import BackendUnavailable
from diagnosis.config import OsmoConfig
from diagnosis.osmo.client import LOG_TAIL_LINES, SERVER_MAX_LOG_LINES, AuthError, OsmoClient, segment
from diagnosis.osmo.models import NodeResources, PoolQuota, TaskRequest, Workflow
from diagnosis.osmo.procedure import answer_osmo
from diagnosis.question import Question
from diagnosis.render import render_text
from diagnosis.report import Category, Outcome, Report
from sandbox.server import Sandbox
from tests.paths import TESTS

CASES = TESTS / "fixtures" / "cases" / "osmo"
NOW = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)
Handler = Callable[[httpx.Request], httpx.Response | None]


def case(name: str) -> dict[str, Any]:
    return json.loads((CASES / f"{name}.json").read_text())


class Overriding(httpx.AsyncBaseTransport):
    """Real HTTP to the sandbox, except the requests ``handler`` answers itself (it returns None to pass)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.real = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        answer = self.handler(request)
        if answer is not None:
            return answer
        return await self.real.handle_async_request(request)

    async def aclose(self) -> None:
        await self.real.aclose()


def diagnose(snapshot: dict[str, Any], handler: Handler | None = None, **client_kw: Any) -> tuple[Report, Sandbox]:
    """The snapshot's ask through :func:`answer_osmo` and the real client, against the sandbox."""
    sandbox = Sandbox(snapshot)
    ask = snapshot["ask"]
    question = Question(text=ask["text"], workflow_id=ask.get("workflow_id"))

    def make(config: OsmoConfig) -> OsmoClient:
        return OsmoClient(config, inner=Overriding(handler or (lambda r: None)), **client_kw)

    with sandbox, mock.patch("diagnosis.osmo.procedure.OsmoClient", make):
        report = asyncio.run(answer_osmo(question, OsmoConfig(sandbox.url, "tok"), NOW))
    assert sandbox.mutating_requests() == []
    return report, sandbox


def gap_text(report: Report) -> str:
    return "\n".join(f"{g.what}: {g.why}" for g in report.gaps)


# -- (a) logs: a tail the server honours, and the end of a long stream --------------------------------


def long_log_case(lines: int = 12_000, max_log_lines: int | None = None) -> dict[str, Any]:
    """osmo-failed-app with ``lines`` lines of progress before its traceback (about 700 KB)."""
    snap = copy.deepcopy(case("osmo-failed-app"))
    entry = snap["osmo"]["workflows"][0]
    filler = "".join(
        f"2026/11/28 07:{i // 60 % 60:02d}:{i % 60:02d} [train] step {i} loss 0.42\n" for i in range(lines)
    )
    entry["logs"] = "2026/11/28 07:00:00 [train] FIRST LINE OF THE LOG\n" + filler + entry["logs"]
    entry["task_logs"]["train"] = entry["logs"]
    if max_log_lines is not None:
        snap["osmo"]["max_log_lines"] = max_log_lines
    return snap


def test_sandbox_ignores_a_tail_at_or_above_max_log_lines() -> None:
    """The sandbox imitates the service: last_n_lines >= max_log_lines streams the whole log from the start."""
    snap = long_log_case()
    with Sandbox(snap) as sandbox:
        jwt = httpx.post(f"{sandbox.url}/api/auth/jwt/access_token", json={"token": "t"}).json()["token"]
        headers = {"Authorization": f"Bearer {jwt}"}
        url = f"{sandbox.url}/api/workflow/grasp-policy-train-17/logs"

        def get(n: str) -> httpx.Response:
            return httpx.get(url, params={"last_n_lines": n}, headers=headers)

        assert get(str(SERVER_MAX_LOG_LINES)).text.startswith("2026/11/28 07:00:00 [train] FIRST LINE")
        assert "FIRST LINE" in get(str(SERVER_MAX_LOG_LINES + 5)).text
        tail = get(str(LOG_TAIL_LINES)).text
        assert "FIRST LINE" not in tail and len(tail.splitlines()) == LOG_TAIL_LINES
        assert "FIRST LINE" in get("0").text  # 0 is "no tail" on the service too
        assert get("-3").status_code == 400 and get("-3").json()["error_code"] == "USER"
        bad = get("ten")
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["query", "last_n_lines"]


def test_long_log_keeps_the_traceback_at_its_end() -> None:
    report, sandbox = diagnose(long_log_case())
    asked = [r.query for r in sandbox.requests if r.path.endswith("/logs")]
    assert asked and all(f"last_n_lines={LOG_TAIL_LINES}" in q for q in asked)
    assert LOG_TAIL_LINES < SERVER_MAX_LOG_LINES
    text = render_text(report)
    assert report.category == Category.CRASH_APP_ERROR and "RuntimeError: shape mismatch" in text
    assert "only the last" in text and "first" in text  # the cut note says the start was dropped
    assert "FIRST LINE" not in text


def test_server_that_ignores_the_tail_still_gives_the_end() -> None:
    """An admin lowered max_log_lines: our tail is ignored and the whole log streams from the top."""
    report, _ = diagnose(long_log_case(max_log_lines=500))
    assert report.category == Category.CRASH_APP_ERROR and "RuntimeError: shape mismatch" in render_text(report)


class Chunked(httpx.AsyncByteStream):
    """``data`` in chunks of odd sizes (a chunk may be larger than the cap)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    async def __aiter__(self) -> AsyncIterator[bytes]:
        i, sizes = 0, (700, 9000, 1, 4096, 333)
        while i < len(self.data):
            size = sizes[i % len(sizes)]
            yield self.data[i : i + size]
            i += size


async def test_ring_buffer_keeps_the_last_bytes_from_a_line_start() -> None:
    body = b"".join(b"2026/11/28 10:00:00 [t] line %06d\n" % i for i in range(50_000)) + b"[t] THE END\n"

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("access_token"):
            return httpx.Response(200, json={"token": "jwt", "expires_at": time.time() + 300})
        return httpx.Response(200, stream=Chunked(body))

    async with OsmoClient(
        OsmoConfig("http://osmo.test", "tok"), inner=httpx.MockTransport(handler), stream_max_bytes=4096
    ) as c:
        got = await c.logs("w-1")
    assert got.text.endswith("[t] THE END\n") and got.text.startswith("2026/11/28")
    assert got.bytes_read <= 4096 and got.dropped_bytes + got.bytes_read == len(body)
    assert got.truncated and got.reason is None
    note = got.cut_note("logs") or ""
    assert "only the last" in note and "dropped" in note


# -- (b) every failed fetch is a named gap ------------------------------------------------------------


def answer_on(path_suffix: str, response: Callable[[], httpx.Response]) -> Handler:
    return lambda request: response() if request.url.path.endswith(path_suffix) else None


VALIDATION_422 = {"detail": [{"loc": ["query", "pools"], "msg": "Input should be a valid list", "type": "list_type"}]}


@pytest.mark.parametrize(
    ("path", "response", "why"),
    [
        ("/api/pool_quota", lambda: httpx.Response(422, json=VALIDATION_422), "HTTP 422: query.pools: Input should"),
        ("/api/pool_quota", lambda: httpx.Response(200, text="<html>Sign in</html>"), "not JSON (text/plain)"),
        (
            "/api/pool_quota",
            lambda: httpx.Response(200, json={"node_sets": [{"pools": 3}], "resource_sum": {}}),
            "field node_sets.0.pools",
        ),
        (
            "/api/resources",
            lambda: httpx.Response(200, content=b"<html/>", headers={"content-type": "text/html"}),
            "not JSON (text/html)",
        ),
        ("/api/resources", lambda: httpx.Response(200, json={"pools": []}), "per-pool totals"),
        ("/api/resources", lambda: httpx.Response(200, json=[]), "expected an object"),
    ],
)
def test_pending_lookups_that_fail_are_gaps(path: str, response: Callable[[], httpx.Response], why: str) -> None:
    report, _ = diagnose(case("osmo-pending-quota"), answer_on(path, response))
    assert report.outcome != Outcome.FAILED and report.identity is not None
    gaps = gap_text(report)
    assert path in gaps and why in gaps, gaps


def test_a_pool_without_name_is_read() -> None:
    """The spec defaults PoolResourceUsage.name to "": such a pool is skipped, never fatal."""
    snap = copy.deepcopy(case("osmo-pending-quota"))
    snap["osmo"]["pool_quota"]["node_sets"].insert(0, {"pools": [{"backend": "b", "resource_usage": {}}]})
    report, _ = diagnose(snap)
    assert report.outcome == Outcome.PENDING_QUOTA and not report.gaps
    assert PoolQuota.model_validate({"node_sets": [{"pools": [{"backend": "x"}]}]}).find("") is None


def test_task_lookups_that_fail_are_gaps_and_the_diagnosis_goes_on() -> None:
    def handler(request: httpx.Request) -> httpx.Response | None:
        if request.url.path == "/api/task":
            return httpx.Response(200, json={"tasks": [None, {"task_name": 5, "gpu": "x"}]})
        if "/task/" in request.url.path:
            return httpx.Response(200, text="<html>proxy</html>")
        return None

    report, _ = diagnose(case("osmo-failed-app"), handler)
    assert report.category == Category.CRASH_APP_ERROR
    gaps = gap_text(report)
    assert "2 of 2 items could not be read" in gaps and "/task/train" in gaps and "not JSON" in gaps


def test_events_422_is_a_gap() -> None:
    report, _ = diagnose(
        case("osmo-failed-app"), answer_on("/events", lambda: httpx.Response(422, json={"detail": []}))
    )
    assert report.category == Category.CRASH_APP_ERROR and "events" in gap_text(report)


def test_unusable_workflow_query_is_backend_unavailable_not_a_crash() -> None:
    handler = answer_on("/api/workflow/grasp-policy-train-17", lambda: httpx.Response(200, text="<html/>"))
    with pytest.raises(BackendUnavailable, match="could not be used: the body is not JSON"):
        diagnose(case("osmo-failed-app"), handler)


def test_cli_exits_0_with_a_gap_for_a_422_from_pool_quota(tmp_path: Path) -> None:
    from bot.cli import app

    snap = copy.deepcopy(case("osmo-pending-quota"))
    snap["faults"] = [{"path": "/api/pool_quota", "status": 422}]
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap))
    result = CliRunner().invoke(app, ["diagnose", "--snapshot", str(path), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert any("/api/pool_quota" in g["what"] and "422" in g["why"] for g in data["gaps"])


@pytest.mark.parametrize(
    ("model", "body"),
    [
        (Workflow, {"name": "w-1", "groups": None, "submit_time": "9999-12-31T23:59:59-23:59", "status": "X"}),
        (Workflow, {"name": "w-1", "groups": [{"name": "g", "status": "RUNNING", "tasks": None}]}),
        (PoolQuota, {"node_sets": [{"pools": [{"backend": "b", "resource_usage": {"total_free": "inf"}}]}]}),
        (NodeResources, {"hostname": "n", "platform_allocatable_fields": {"p": None}, "exposed_fields": {}}),
        (NodeResources, {"hostname": "n", "exposed_fields": {"pool/platform": 7}, "usage_fields": {"gpu": "NaN"}}),
        (TaskRequest, {"task_name": "t", "workflow_id": "w", "status": "FAILED", "cpu": 4, "memory": 64.0, "gpu": 1}),
    ],
)
def test_models_accept_what_the_spec_allows(model: Any, body: dict[str, Any]) -> None:
    parsed = model.model_validate(body)
    if isinstance(parsed, NodeResources):
        assert parsed.gpu_free("p") is None
    if isinstance(parsed, PoolQuota):
        assert parsed.pools()[0].name == "" and parsed.pools()[0].resource_usage.total_free is None
    if isinstance(parsed, TaskRequest):
        assert parsed.memory == "64"


# -- (c) no Bearer None; escaped path segments -----------------------------------------------------


async def test_null_jwt_never_becomes_bearer_none() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path.endswith("access_token"):
            return httpx.Response(200, json={"token": None, "expires_at": None, "error": "token revoked"})
        return httpx.Response(200, json={"workflows": [], "more_entries": False})

    async with OsmoClient(OsmoConfig("http://osmo.test", "tok"), inner=httpx.MockTransport(handler)) as c:
        with pytest.raises(AuthError, match=r"without a token.*token revoked"):
            await c.list_workflows()
    assert [r.method for r in seen] == ["POST"]
    assert not any("None" in r.headers.get("authorization", "") for r in seen)


async def test_empty_access_token_is_refused_before_any_request() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"token": "jwt"})

    async with OsmoClient(OsmoConfig("http://osmo.test", ""), inner=httpx.MockTransport(handler)) as c:
        with pytest.raises(AuthError, match="no OSMO access token"):
            await c.get_workflow("w-1")
    assert seen == []


async def test_task_and_workflow_names_are_escaped_in_paths() -> None:
    paths: list[bytes] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("access_token"):
            return httpx.Response(200, json={"token": "jwt", "expires_at": time.time() + 300})
        paths.append(request.url.raw_path)
        return httpx.Response(
            200, json={"workflow_id": "w", "task_name": "t", "status": "RUNNING", "cpu": 1, "gpu": 0, "memory": 1}
        )

    async with OsmoClient(OsmoConfig("http://osmo.test", "tok"), inner=httpx.MockTransport(handler)) as c:
        await c.task_request("w 1", "prep/1?x#y")
        await c.task_request("w-1", "..")
        await c.task_request("w-1", "50%")
    assert paths == [
        b"/api/workflow/w%201/task/prep%2F1%3Fx%23y",
        b"/api/workflow/w-1/task/%2E%2E",
        b"/api/workflow/w-1/task/50%25",
    ]
    assert segment("sdg-render-7") == "sdg-render-7"


# -- (e) an upstream task that COMPLETED with a failed output upload ------------------------------


def _task(name: str, status: str, exit_code: int | None, end: str, message: str | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "retry_id": 0,
        "status": status,
        "failure_message": message,
        "exit_code": exit_code,
        "logs": f"https://osmo.example/api/workflow/etl-3/logs?task_name={name}",
        "events": f"https://osmo.example/api/workflow/etl-3/events?task_name={name}",
        "start_time": "2026-11-28T09:00:00",
        "end_time": end,
        "pod_name": f"pod-{name}",
        "task_uuid": f"uuid-{name}",
        "node_name": "dgx-01",
        "lead": True,
    }


PREP_LOG = (
    "2026/11/28 09:00:01 [prepare][osmo] Downloading Start\n"
    "2026/11/28 09:00:05 [prepare][osmo] All Inputs Gathered\n"
    "2026/11/28 09:20:00 [prepare] wrote 4096 shards to /osmo/data/output\n"
    "2026/11/28 09:20:01 [prepare][osmo] Upload Start\n"
    "2026/11/28 09:24:13 [prepare][osmo] Upload Failed: AccessDenied: s3://acme-osmo/etl-3/prepare is not "
    "writable with credential etl-writer\n"
)
TRAIN_LOG = (
    "2026/11/28 09:25:02 [train][osmo] Downloading Start\n"
    "2026/11/28 09:25:09 [train][osmo] All Inputs Gathered\n"
    "2026/11/28 09:25:12 [train] Traceback (most recent call last):\n"
    '2026/11/28 09:25:12 [train]   File "/workspace/train.py", line 40, in <module>\n'
    "2026/11/28 09:25:12 [train] FileNotFoundError: [Errno 2] No such file or directory: "
    "'/osmo/data/input/0/index.json'\n"
)
SPEC = """workflow:
  name: etl
  tasks:
  - name: prepare
    image: nvcr.io/acme/etl:1
    command: [python, prepare.py]
    outputs:
    - url: s3://acme-osmo/etl-3/prepare
  - name: train
    image: nvcr.io/acme/etl:1
    command: [python, train.py]
    inputs:
    - task: prepare
  - name: report
    image: nvcr.io/acme/etl:1
    command: [python, report.py]
"""


def upload_snapshot(
    *, graph: bool = True, upload_failed: bool = True, unrelated_failure: bool = False
) -> dict[str, Any]:
    """etl-3: prepare COMPLETED (its upload failed), then train FAILED with exit 1 reading its input;
    ``report`` COMPLETED too, not upstream of train (``unrelated_failure``: its own upload failed).
    ``graph`` False drops downstream_groups (then only the spec's ``inputs: - task: prepare`` says it)."""
    prep_log = PREP_LOG if upload_failed else PREP_LOG.replace("Upload Failed: AccessDenied", "All Outputs Uploaded")
    groups = [
        {
            "name": "prepare",
            "status": "COMPLETED",
            "downstream_groups": ["train"] if graph else None,
            "tasks": [_task("prepare", "COMPLETED", 0, "2026-11-28T09:24:14")],
        },
        {
            "name": "report",
            "status": "COMPLETED",
            "downstream_groups": None,
            "tasks": [_task("report", "COMPLETED", 0, "2026-11-28T09:10:00")],
        },
        {
            "name": "train",
            "status": "FAILED",
            "remaining_upstream_groups": None,
            "tasks": [_task("train", "FAILED", 1, "2026-11-28T09:25:13", "Failure reason:\n- Exit code 1 ")],
        },
    ]
    report_log = "2026/11/28 09:09:00 [report] done\n"
    if unrelated_failure:
        report_log += "2026/11/28 09:09:59 [report][osmo] Upload Failed: timeout\n"
    query = {
        "name": "etl-3",
        "uuid": "u-etl-3",
        "submitted_by": "ana@example.com",
        "status": "FAILED",
        "pool": "h100-train",
        "priority": "NORMAL",
        "submit_time": "2026-11-28T08:59:00",
        "start_time": "2026-11-28T09:00:00",
        "end_time": "2026-11-28T09:25:13",
        "duration": 1513.0,
        "queued_time": 60.0,
        "groups": groups,
        "grafana_url": None,
        "dashboard_url": None,
    }
    logs = prep_log + report_log + TRAIN_LOG
    return {
        "format": "snapshot/1",
        "id": "t-osmo-upstream-upload",
        "now": "2026-11-28T16:00:00Z",
        "osmo": {
            "workflows": [
                {
                    "query": query,
                    "logs": logs,
                    "task_logs": {"prepare": prep_log, "report": report_log, "train": TRAIN_LOG},
                    "events": "",
                    "spec_template": SPEC,
                }
            ],
            "pool_quota": None,
            "resources": None,
        },
        "ask": {"text": "why did train of etl-3 fail?", "workflow_id": "etl-3"},
    }


@pytest.mark.parametrize("graph", [True, False], ids=["group graph", "spec inputs"])
def test_upstream_upload_failure_is_quoted_as_the_probable_cause(graph: bool) -> None:
    report, sandbox = diagnose(upload_snapshot(graph=graph))
    text = render_text(report)
    assert report.outcome == Outcome.FAILED and report.category == Category.CRASH_APP_ERROR  # its own signal
    assert "Probable cause" in report.headline and "upstream task prepare" in report.headline
    assert "Upload Failed: AccessDenied" in report.headline and "Upload Failed: AccessDenied" in text
    assert "FileNotFoundError" in text
    assert report.next_action and "prepare" in report.next_action.split(";")[0]
    spec_reads = [r for r in sandbox.requests if r.path.endswith("/spec")]
    assert len(spec_reads) == (0 if graph else 1)  # the spec is read only when the graph does not say


@pytest.mark.parametrize("graph", [True, False], ids=["group graph", "spec inputs"])
def test_upload_that_succeeded_or_an_unrelated_upload_failure_is_not_a_cause(graph: bool) -> None:
    for snap in (
        upload_snapshot(graph=graph, upload_failed=False),
        upload_snapshot(graph=graph, upload_failed=False, unrelated_failure=True),
    ):
        report, _ = diagnose(snap)
        assert report.category == Category.CRASH_APP_ERROR and "Probable cause" not in report.headline
        assert "report" not in (report.next_action or "").split(";")[0]
