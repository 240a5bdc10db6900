"""Malformed snapshot fields (issue 15 §5): one clear line, never a traceback on stderr.

Three layers: :func:`sandbox.server.validate_snapshot` names the first field of the wrong shape (exit 2 from
the CLI); a section whose routes cannot be built is a :class:`SnapshotError` naming the section; and a route
that still fails on a field answers 500 and prints one line naming the section and the request, once.
Also: the route table (issue 10 §3) serves every section through :mod:`sandbox.routes`.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from sandbox import routes as sandbox_routes
from sandbox.server import ROUTE_TABLE, Sandbox, SandboxState, SnapshotError, validate_snapshot
from tests import builders as b

CLI = str(Path(sys.executable).parent / "workload-doctor")


def _tier2() -> dict[str, Any]:
    snap = b.snapshot(b.entry(b.workload()), ask={"text": "why did train-7 fail?", "cluster_id": b.CLUSTER})
    snap["kubernetes"] = {
        "pods": [{"metadata": {"name": "train-7-0-0", "namespace": "runai-nlp"}, "status": {"phase": "Failed"}}],
        "events": [],
        "nodes": [],
        "logs": [],
    }
    return snap


def _osmo() -> dict[str, Any]:
    return {
        "format": "snapshot/1",
        "osmo": {"workflows": [{"query": {"name": "wf-1", "uuid": "u1", "status": "RUNNING"}}]},
        "ask": {"text": "status of workflow wf-1", "workflow_id": "wf-1"},
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s["kubernetes"].__setitem__("pods", "oops"), "kubernetes.pods must be a list, not a string"),
        (lambda s: s["kubernetes"]["pods"].append(7), "kubernetes.pods[1] must be an object, not a number"),
        (
            lambda s: s["kubernetes"]["pods"][0].__setitem__("status", "Running"),
            "kubernetes.pods[0].status must be an object, not a string",
        ),
        (
            lambda s: s["kubernetes"]["pods"][0].__setitem__("metadata", ["x"]),
            "kubernetes.pods[0].metadata must be an object, not a list",
        ),
        (lambda s: s["kubernetes"].__setitem__("events", [None]), "kubernetes.events[0] must be an object, not null"),
        (lambda s: s["kubernetes"].__setitem__("logs", {"a": 1}), "kubernetes.logs must be a list, not an object"),
        (lambda s: s.__setitem__("kubernetes", "x"), "kubernetes must be an object, not a string"),
        (
            lambda s: s["runai"]["workloads"][0].__setitem__("metrics", [1]),
            "runai.workloads[0].metrics must be an object, not a list",
        ),
        (
            lambda s: s.update(kubernetes_by_cluster={"c1": {"nodes": "n"}}),
            "kubernetes_by_cluster.c1.nodes must be a list, not a string",
        ),
    ],
)
def test_a_field_of_the_wrong_shape_is_named(change: Any, message: str) -> None:
    snap = copy.deepcopy(_tier2())
    change(snap)
    with pytest.raises(SnapshotError) as caught:
        validate_snapshot(snap, "snap.json")
    assert str(caught.value) == f"snap.json: {message}"


def test_the_shapes_the_cases_use_still_pass() -> None:
    validate_snapshot(_tier2())
    snap = _tier2()
    snap["kubernetes"]["pods"][0]["status"] = None  # null stays "not there"
    snap["runai"]["workloads"][0]["metrics"] = None
    validate_snapshot(snap)
    validate_snapshot(_osmo())


def _run(tmp_path: Path, snap: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap))
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    return subprocess.run(
        [CLI, "diagnose", "--snapshot", str(path)], capture_output=True, text=True, timeout=60, env=env
    )


def test_a_pod_status_that_is_a_string_is_one_line_from_the_cli(tmp_path: Path) -> None:
    snap = _tier2()
    snap["kubernetes"]["pods"][0]["status"] = "Running"
    r = _run(tmp_path, snap)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr
    assert "kubernetes.pods[0].status must be an object, not a string" in r.stderr


def test_a_section_whose_routes_cannot_be_built_is_one_line_naming_it(tmp_path: Path) -> None:
    snap = _osmo()
    snap["osmo"]["workflows"][0]["query"] = "oops"
    with pytest.raises(SnapshotError, match=r"the 'osmo' section cannot be served: AttributeError"):
        Sandbox(snap).start()
    r = _run(tmp_path, snap)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr
    assert "the 'osmo' section cannot be served" in r.stderr


def test_a_route_failing_on_a_field_answers_500_and_prints_one_line_once(capfd: pytest.CaptureFixture[str]) -> None:
    snap = _tier2()
    # Not base64 (bad padding): the log route cannot decode it; validation does not look inside log texts.
    snap["kubernetes"]["logs"] = [{"pod": "train-7-0-0", "namespace": "runai-nlp", "container": "c", "text_b64": "abc"}]
    with Sandbox(snap) as sb:
        token = sb.state.issue_token()
        url = f"{sb.url}/api/v1/namespaces/runai-nlp/pods/train-7-0-0/log?container=c"
        for _ in range(2):
            r = httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=10)
            assert r.status_code == 500
        ok = httpx.get(
            f"{sb.url}/api/v1/namespaces/runai-nlp/pods/train-7-0-0", headers={"Authorization": f"Bearer {token}"}
        )
        assert ok.status_code == 200  # the sandbox keeps serving
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err
    assert len(lines) == 1, err
    assert lines[0].startswith("workload-doctor sandbox: the 'kubernetes' section of the snapshot cannot answer GET ")
    assert "/pods/train-7-0-0/log" in lines[0] and "Error" in lines[0]


def test_every_section_is_served_through_the_route_table() -> None:
    assert [s.name for s in ROUTE_TABLE] == ["runai", "kubernetes", "osmo"]
    state = SandboxState(snapshot=_tier2())
    assert all(isinstance(s, sandbox_routes.Section) for s in ROUTE_TABLE)
    built = {s.name: s.routes(state) for s in ROUTE_TABLE}
    assert built["runai"] and built["kubernetes"] and built["osmo"] == []


@pytest.mark.parametrize("now", [5, ["x"], {}])
def test_a_now_that_is_not_a_time_is_one_line_from_the_cli(tmp_path: Path, now: Any) -> None:
    snap = _tier2()
    snap["now"] = now
    r = _run(tmp_path, snap)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().count("\n") == 0 and "Traceback" not in r.stderr and "unexpected" not in r.stderr
