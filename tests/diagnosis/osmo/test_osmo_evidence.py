"""Issue 9 §5 (OSMO): every retry of a task (``verbose=true``), the failed task's stage times and error log,
and the workflow's warnings become evidence; without ``verbose`` the sandbox lists only the latest retry."""

from __future__ import annotations

import copy
from typing import Any

import httpx
import pytest

from diagnosis.render import render_text
from diagnosis.report import Outcome
from sandbox.server import Sandbox
from tests.conftest import Diagnose
from tests.slack_mock import osmo_snapshot

pytestmark = pytest.mark.asyncio
WF = "grasp-policy-train-17"


def with_retries() -> dict[str, Any]:
    snap = osmo_snapshot("osmo-failed-app")
    entry = snap["osmo"]["workflows"][0]
    query = entry["query"]
    query["warnings"] = ["label 'team' is not in the pool's allowed labels"]
    task = query["groups"][0]["tasks"][0]
    task["retry_id"] = 1
    task["error_logs"] = f"https://osmo.example/api/workflow/{WF}/error_logs?task_name={task['name']}&retry_id=1"
    task["initializing_start_time"] = "2026-11-28T08:04:10.000000"
    earlier = copy.deepcopy(task)
    earlier.update({"retry_id": 0, "status": "FAILED_EVICTED", "exit_code": None, "error_logs": None})
    query["groups"][0]["tasks"].append(earlier)
    entry["error_logs"] = {task["name"]: "step 4100\nRuntimeError: loss is NaN at step 4113\n"}
    # the task's own log shows only progress: the error log is where the error is
    entry["logs"] = "".join(f"2026/11/28 08:4{i}:00 [{task['name']}] step {4100 + i}\n" for i in range(5))
    entry.pop("task_logs", None)
    return snap


async def test_retries_stages_warnings_and_the_error_log_are_evidence(diagnose: Diagnose) -> None:
    snap = with_retries()
    report, sandbox = await diagnose(snap)
    assert report.outcome == Outcome.FAILED
    text = render_text(report)
    assert "attempts (2)" in text and "retry 1 FAILED" in text and "retry 0 FAILED_EVICTED" in text
    assert "stages (UTC)" in text and "initializing 2026-11-28 08:04:10" in text
    assert "label 'team' is not in the pool's allowed labels" in text
    assert "RuntimeError: loss is NaN at step 4113" in text
    assert any(r.path.endswith("/error_logs") for r in sandbox.requests)
    assert any("verbose=true" in r.query for r in sandbox.requests if r.path == f"/api/workflow/{WF}")


async def test_without_verbose_only_the_latest_retry_is_listed() -> None:
    with Sandbox(with_retries()) as sandbox:
        async with httpx.AsyncClient(base_url=sandbox.url) as http:
            token = (await http.post("/api/auth/jwt/access_token", json={"token": "sandbox"})).json()
            headers = {"Authorization": f"Bearer {token['token']}"}
            plain = (await http.get(f"/api/workflow/{WF}", headers=headers)).json()
            verbose = (await http.get(f"/api/workflow/{WF}", params={"verbose": "true"}, headers=headers)).json()
    assert [t["retry_id"] for t in plain["groups"][0]["tasks"]] == [1]
    assert sorted(t["retry_id"] for t in verbose["groups"][0]["tasks"]) == [0, 1]
