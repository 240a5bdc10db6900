"""``workload-doctor capture``: recorded responses -> a snapshot that replays to the same answer.

The round trip runs on every open case of ``../shared/cases`` (skipped when that folder is absent): serve
the case in the sandbox, capture through it with the settings a real deployment uses
(``RUNAI_BASE_URL``/``KUBECONFIG``/``OSMO_URL``... pointing at the sandbox), then compare
``diagnose --snapshot captured.json`` with ``diagnose --snapshot case.json``: the same outcome, category,
recurring, evidence lines and gaps (links and the sandbox's address aside).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import functools
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.cli import backends_for, build_question
from diagnosis.answer import Backends, answer
from diagnosis.capture import build_snapshot, capture_world, usable
from diagnosis.config import KubeConfig, OsmoConfig, RunaiConfig
from diagnosis.http import GuardedTransport, RecordedResponse, RetryPolicy, recording
from diagnosis.question import Question
from diagnosis.render import to_json
from diagnosis.report import Outcome, Report
from diagnosis.units import parse_time
from sandbox.server import Sandbox, load_snapshot, validate_snapshot
from tests.conftest import CASES, ROOT

FOLDERS = ("runai", "runai/real", "osmo", "osmo/real")
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
WORKERS = 3


# -- helpers -------------------------------------------------------------------------------------------------


def diagnose_json(path: str | Path) -> dict[str, Any]:
    """What ``workload-doctor diagnose --snapshot PATH --format json`` prints (without the Block Kit), in-process."""
    with backends_for(str(path)) as (backends, ask):
        question = build_question(Question(), ask)
        return to_json(asyncio.run(answer(question, backends)))


def sandbox_env(sandbox: Sandbox, snapshot: dict[str, Any]) -> dict[str, str]:
    """The settings a deployment would have, pointing at ``sandbox``."""
    env: dict[str, str] = {}
    if "runai" in snapshot:
        env.update(RUNAI_BASE_URL=sandbox.url, RUNAI_CLIENT_ID="sandbox", RUNAI_CLIENT_SECRET="sandbox")
    if "osmo" in snapshot:
        env.update(OSMO_URL=sandbox.url, OSMO_TOKEN="sandbox-access-token")
    kube_env = getattr(sandbox, "kube_env", None)
    if callable(kube_env):
        env.update(kube_env())
    elif sandbox.kubeconfig():
        env["KUBECONFIG"] = str(sandbox.kubeconfig())
    return env


def capture_case(snapshot: dict[str, Any]) -> tuple[dict[str, Any], Report]:
    """Serve ``snapshot`` and capture its ``ask`` through it, as ``capture`` does (settings from an environment)."""
    with Sandbox(snapshot) as sandbox:
        env = sandbox_env(sandbox, snapshot)
        backends = Backends(
            runai=RunaiConfig.from_env(env) if "RUNAI_BASE_URL" in env else None,
            kube=KubeConfig.from_env(env),
            osmo=OsmoConfig.from_env(env) if "OSMO_URL" in env else None,
        )
        now = parse_time(snapshot["now"])
        assert now is not None
        backends.now = lambda: now
        ask = {k: v for k, v in (snapshot.get("ask") or {}).items() if v is not None}
        question = build_question(Question.model_validate(ask), {})
        return asyncio.run(capture_world(question, ask, backends))


_URL = re.compile(r"https?://\S+")
_ADDRESS = re.compile(r"127\.0\.0\.1:\d+|localhost:\d+")


def _norm(text: str | None) -> str:
    return _ADDRESS.sub("<sandbox>", _URL.sub("<link>", text or ""))


def answer_key(data: dict[str, Any]) -> dict[str, Any]:
    """What a replay must reproduce: outcome, category, recurring, evidence lines and gaps (links aside)."""
    return {
        "outcome": data["outcome"],
        "category": data["category"],
        "recurring": data["recurring"],
        "evidence": [(_norm(e["label"]), _norm(e["value"]), e.get("at")) for e in data["evidence"]],
        # concurrent reads fail in any order: the gaps are compared as a set
        "gaps": sorted((_norm(g["what"]), _norm(g["why"])) for g in data["gaps"]),
    }


def _differences(want: dict[str, Any], got: dict[str, Any]) -> str:
    out = []
    for key in want:
        if want[key] != got[key]:
            if isinstance(want[key], list):
                missing = [x for x in want[key] if x not in got[key]]
                extra = [x for x in got[key] if x not in want[key]]
                out.append(f"{key}: missing {missing[:3]} extra {extra[:3]}")
            else:
                out.append(f"{key}: {want[key]!r} != {got[key]!r}")
    return "; ".join(out)


def round_trip(name: str, snapshot: dict[str, Any], workdir: Path) -> str | None:
    """None when the captured snapshot replays to the case's answer, else what differs."""
    case_file = workdir / f"{name}.case.json"
    case_file.write_text(json.dumps(snapshot), encoding="utf-8")
    want = answer_key(diagnose_json(case_file))
    captured, report = capture_case(snapshot)
    validate_snapshot(captured, name)
    out = workdir / f"{name}.captured.json"
    out.write_text(json.dumps(captured, indent=2, ensure_ascii=False), encoding="utf-8")
    live = answer_key(to_json(report))
    if live != want:
        return f"{name}: the capture's own answer differs: {_differences(want, live)}"
    replay = diagnose_json(out)
    got = answer_key(replay)
    if got != want:
        return f"{name}: the replay differs: {_differences(want, got)}"
    expect = captured["expect"]
    missing = [m for m in expect.get("mentions", []) if m not in replay["report_text"]]
    if missing:
        return f"{name}: the replay does not mention {missing}"
    if (expect["outcome"], expect.get("category"), expect.get("recurring")) != (
        want["outcome"],
        want["category"],
        want["recurring"],
    ):
        return f"{name}: expect {expect} does not hold today's answer"
    leaked = [m for m in (snapshot.get("expect") or {}).get("never_mentions") or [] if m in out.read_text()]
    if leaked:
        return f"{name}: the captured file holds never_mentions {leaked[:2]}"
    return None


def open_cases() -> tuple[list[Path], list[tuple[Path, str]]]:
    """(cases to capture, [(case, why skipped)])."""
    take: list[Path] = []
    skipped: list[tuple[Path, str]] = []
    for folder in FOLDERS:
        for path in sorted((CASES / folder).glob("*.json")):
            ask = json.loads(path.read_text(encoding="utf-8")).get("ask") or {}
            if ask.get("kind") == "digest":
                skipped.append((path, "a digest asks about many workloads, not one"))
            else:
                take.append(path)
    return take, skipped


def run_all(jobs: list[tuple[str, Callable[[], dict[str, Any]]]], workdir: Path) -> list[str]:
    def one(job: tuple[str, Callable[[], dict[str, Any]]]) -> str | None:
        name, load = job
        try:
            return round_trip(name, load(), workdir)
        except Exception as exc:  # one broken case must not hide the others
            return f"{name}: {type(exc).__name__}: {exc}"

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return [r for r in pool.map(one, jobs) if r is not None]


needs_cases = pytest.mark.skipif(not CASES.is_dir(), reason="../shared/cases is absent")


# -- every open case --------------------------------------------------------------------------------------


@needs_cases
def test_every_open_case_replays_to_the_same_answer(tmp_path: Path) -> None:
    cases, skipped = open_cases()
    assert cases, "no open case found"
    started = time.monotonic()
    jobs = [(f"{p.parent.name}-{p.stem}", functools.partial(load_snapshot, p)) for p in cases]
    failures = run_all(jobs, tmp_path)
    summary = (
        f"capture round trip: {len(cases)} cases captured, {len(cases) - len(failures)} replayed identical, "
        f"{len(skipped)} skipped ({'; '.join(f'{p.name}: {why}' for p, why in skipped) or 'none'}), "
        f"{time.monotonic() - started:.0f} s"
    )
    print(summary)
    assert not failures, summary + "\n" + "\n".join(failures)


def _with_faults(name: str, faults: Callable[[dict[str, Any]], list[dict[str, Any]]]) -> dict[str, Any]:
    snapshot = copy.deepcopy(load_snapshot(CASES / name))
    snapshot["faults"] = faults(snapshot)
    return snapshot


def _wid(s: dict[str, Any]) -> str:
    return str(s["runai"]["workloads"][0]["workload"]["id"])


def _wf(s: dict[str, Any]) -> str:
    return str(s["osmo"]["workflows"][0]["query"]["name"])


def _fault(path: str, status: int, times: int) -> dict[str, Any]:
    return {"path": path, "status": status, "times": times}


RUNAI_BASE = "runai/history-503-retry.json"
OSMO_BASE = "osmo/osmo-failed-app.json"
#: Failures FORMAT.md expresses only as faults: each must come back as the same gap.
FAULT_VARIANTS: dict[str, tuple[str, Callable[[dict[str, Any]], list[dict[str, Any]]]]] = {
    "pods-503": (RUNAI_BASE, lambda s: [_fault(f"/api/v1/workloads/{_wid(s)}/pods", 503, 20)]),
    "metrics-403": (RUNAI_BASE, lambda s: [_fault("/api/v1/workloads/*/metrics", 403, 5)]),
    "flaky-then-fine": (
        RUNAI_BASE,
        lambda s: [_fault("/api/v1/workloads/*/events", 502, 2), _fault("/api/v1/clusters", 429, 1)],
    ),
    "tier2-pod-500": (RUNAI_BASE, lambda s: [_fault("/api/v1/namespaces/*/pods/*", 500, 50)]),
    "tier2-events-403": (RUNAI_BASE, lambda s: [_fault("/api/v1/namespaces/*/events", 403, 50)]),
    "osmo-logs-503": (OSMO_BASE, lambda s: [_fault(f"/api/workflow/{_wf(s)}/logs", 503, 30)]),
    "osmo-events-500-twice": (OSMO_BASE, lambda s: [_fault(f"/api/workflow/{_wf(s)}/events", 500, 2)]),
}


@needs_cases
def test_failed_endpoints_replay_as_the_same_gap(tmp_path: Path) -> None:
    jobs = [
        (name, functools.partial(_with_faults, case, faults))
        for name, (case, faults) in FAULT_VARIANTS.items()
        if (CASES / case).is_file()
    ]
    if not jobs:
        pytest.skip("the base cases of the fault variants are absent")
    failures = run_all(jobs, tmp_path)
    assert not failures, "\n".join(failures)


@needs_cases
def test_cli_capture_then_diagnose(tmp_path: Path) -> None:
    """The command itself: settings from the environment, ``-o FILE``, then ``diagnose --snapshot FILE``."""
    case = CASES / "runai" / "history-503-retry.json"
    if not case.is_file():
        pytest.skip("runai/history-503-retry.json is absent")
    snapshot = load_snapshot(case)
    ask = snapshot["ask"]
    out = tmp_path / "captured.json"
    cli = [str(ROOT / ".venv" / "bin" / "workload-doctor")]
    if not Path(cli[0]).exists():
        cli = [sys.executable, "-m", "bot.cli"]
    with Sandbox(snapshot) as sandbox:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNAI_", "OSMO_", "WD_", "KUBE"))}
        env.update(sandbox_env(sandbox, snapshot))
        args = ["capture", ask["text"], "--cluster-id", ask["cluster_id"], "--workload", ask["workload_name"]]
        args += ["--project", ask["project"], "--now", snapshot["now"], "-o", str(out)]
        done = subprocess.run([*cli, *args], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "captured" in done.stderr and str(out) in done.stderr
    captured = json.loads(out.read_text(encoding="utf-8"))
    assert captured["format"] == "snapshot/1" and captured["now"] == snapshot["now"]
    assert captured["source"].startswith("captured by workload-doctor capture ")
    assert captured["ask"]["workload_name"] == ask["workload_name"]
    assert captured["faults"] == [{"path": f"/api/v1/workloads/{_wid(snapshot)}/history", "status": 503, "times": 2}]
    replay = subprocess.run(
        [*cli, "diagnose", "--snapshot", str(out), "--format", "json"], capture_output=True, text=True, timeout=60
    )
    assert replay.returncode == 0, replay.stderr
    want, got = answer_key(diagnose_json(case)), answer_key(json.loads(replay.stdout))
    assert got == want, _differences(want, got)
    for mention in captured["expect"].get("mentions", []):
        assert mention in json.loads(replay.stdout)["report_text"]


# -- the recorder ----------------------------------------------------------------------------------------------


def _transport(handler: Callable[[httpx.Request], httpx.Response]) -> GuardedTransport:
    async def no_sleep(_: float) -> None:
        return None

    return GuardedTransport(
        inner=httpx.MockTransport(handler),
        allowed_post_paths=frozenset({"/api/v2/token"}),
        retry=RetryPolicy(sleep=no_sleep),
    )


class _Streamed(httpx.AsyncByteStream):
    """A body that arrives in chunks, as from a network transport (not read in advance)."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk


def test_recorder_is_off_by_default_and_keeps_every_get() -> None:
    calls: dict[str, int] = {}

    def handler(request: httpx.Request) -> httpx.Response:
        calls[request.url.path] = calls.get(request.url.path, 0) + 1
        if request.url.path == "/flaky" and calls["/flaky"] < 3:
            return httpx.Response(503, json={"message": "busy"})
        if request.url.path == "/api/v2/token":
            return httpx.Response(200, json={"access_token": "sekrit-token"})
        if request.url.path == "/stream":
            return httpx.Response(200, stream=_Streamed(b"line 1\n", b"line 2\n", b"line 3\n"))
        return httpx.Response(200, json={"path": request.url.path, "q": dict(request.url.params)})

    async def go() -> list[RecordedResponse]:
        async with httpx.AsyncClient(transport=_transport(handler), base_url="http://api") as client:
            await client.get("/before")
            with recording() as recorder:
                await client.post("/api/v2/token", data={"client_secret": "x"})
                await client.get("/flaky", params={"offset": 0, "limit": 500})
                async with client.stream("GET", "/stream") as r:
                    async for _ in r.aiter_raw():
                        break
            await client.get("/after")
            return recorder.responses

    got = asyncio.run(go())
    assert [r.path for r in got] == ["/flaky", "/stream"]  # nothing outside the block, never the token POST
    flaky = got[0]
    assert flaky.status == 200 and flaky.attempts == [503, 503, 200]
    assert flaky.query == [("offset", "0"), ("limit", "500")]
    assert json.loads(flaky.body) == {"path": "/flaky", "q": {"offset": "0", "limit": "500"}}
    assert got[1].body == b"line 1\n" and not got[1].complete  # what the client read before it stopped


# -- the pure conversion --------------------------------------------------------------------------------------


def _rec(path: str, body: Any = None, status: int | None = 200, query: Any = (), **kw: Any) -> RecordedResponse:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode() if body is not None else b""
    attempts = kw.pop("attempts", [status])
    return RecordedResponse(kw.pop("system", "http"), "GET", path, list(query), status, attempts, raw, **kw)


def _report(**kw: Any) -> Report:
    return Report(system="runai", outcome=Outcome.DIAGNOSED, headline="x failed", **kw)


WL = {"id": "w-1", "name": "train-7", "type": "Training", "phase": "Failed", "phaseUpdatedAt": "2026-11-28T10:00:00Z"}


def _snap(responses: list[RecordedResponse], system: str = "runai", tier2: bool = False) -> dict[str, Any]:
    return build_snapshot(
        responses,
        ask={"text": "why did train-7 fail?", "cluster_id": "c-1", "workload_name": "train-7", "project": "nlp"},
        report=_report(),
        now=NOW,
        system=system,
        tier2=tier2,
        captured_at=NOW,
    )


def test_history_pages_are_merged_in_offset_order_and_reauth_is_dropped() -> None:
    base = "/api/v1/workloads/w-1/history"
    responses = [
        _rec("/api/v1/workloads", {"workloads": [WL]}, query=[("filterBy", "name==train-7")]),
        _rec(base, {"records": [{"n": 3}]}, query=[("offset", "500"), ("limit", "500")]),
        _rec(base, None, status=401, query=[("offset", "0"), ("limit", "500")]),
        _rec(base, {"records": [{"n": 1}, {"n": 2}], "next": 500}, query=[("offset", "0"), ("limit", "500")]),
    ]
    assert len(usable(responses)) == 3
    snap = _snap(responses)
    entry = snap["runai"]["workloads"][0]
    assert entry["workload"]["name"] == "train-7"
    assert entry["history"] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert "pods" not in entry and "faults" not in snap  # never read: left out, so nothing is invented
    assert snap["format"] == "snapshot/1" and snap["now"] == "2026-11-28T12:00:00Z"
    assert snap["source"] == "captured by workload-doctor capture 2026-11-28"
    assert snap["ask"]["workload_name"] == "train-7" and snap["expect"]["outcome"] == "diagnosed"
    validate_snapshot(snap)


def test_failed_reads_keep_their_status() -> None:
    responses = [
        _rec("/api/v1/workloads/w-1", WL),
        _rec("/api/v1/workloads/w-1/pods", {"message": "x"}, status=500, attempts=[500, 500, 500]),
        _rec("/api/v1/workloads/w-1/history", {"m": 1}, status=503, attempts=[503] * 5),
        _rec("/api/v1/workloads/w-1/events", {"events": []}, attempts=[502, 200]),
        _rec("/api/v1/workloads/w-1/metrics", None, status=None, attempts=[None] * 5, error="ReadTimeout"),
        _rec("/api/v1/workloads/trainings/w-1", {"message": "no"}, status=404),
    ]
    snap = _snap(responses)
    entry = snap["runai"]["workloads"][0]
    assert entry["pods"] is None  # FORMAT.md: null pods answer 500, as they did
    assert entry["spec"] is None  # null spec answers 404
    assert entry["events"] == []
    assert snap["faults"] == [
        {"path": "/api/v1/workloads/w-1/history", "status": 503, "times": 5},
        {"path": "/api/v1/workloads/w-1/events", "status": 502, "times": 1},
        {"path": "/api/v1/workloads/w-1/metrics", "status": 504, "times": 5},
    ]
    assert "ReadTimeout" in snap["description"] and "HTTP 504" in snap["description"]


def test_a_success_between_failures_is_let_through() -> None:
    path = "/api/v1/workloads/w-1/history"
    responses = [
        _rec("/api/v1/workloads/w-1", WL),
        _rec(path, {"records": [{"n": 1}], "next": 500}, query=[("offset", "0")]),
        _rec(path, {"m": 1}, status=503, attempts=[503] * 5, query=[("offset", "500")]),
    ]
    assert _snap(responses)["faults"] == [
        {"path": path, "delay_ms": 0, "times": 1},
        {"path": path, "status": 503, "times": 5},
    ]


def test_tier2_reads_logs_bytes_and_redaction() -> None:
    ns = "runai-nlp"
    latin1 = "caf\xe9 loss=nan\n".encode("latin-1")
    secret = b"export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nboom\n"
    k8s: dict[str, Any] = {"system": "kubernetes"}
    log = f"/api/v1/namespaces/{ns}/pods/p-0/log"
    responses = [
        _rec("/api/v1/workloads/w-1", WL),
        _rec(f"/api/v1/namespaces/{ns}/pods/p-0", {"kind": "Status"}, status=403, **k8s),
        _rec(log, latin1, query=[("container", "main"), ("previous", "true")], **k8s),
        _rec(log, secret, query=[("container", "main"), ("previous", "false")], **k8s),
        _rec(f"/api/v1/namespaces/{ns}/events", {"items": [{"metadata": {"uid": "e1"}, "reason": "BackOff"}]}, **k8s),
        _rec(f"/api/v1/namespaces/{ns}/events", {"items": [{"metadata": {"uid": "e1"}, "reason": "BackOff"}]}, **k8s),
        _rec("/api/v1/nodes/n-1", {"metadata": {"name": "n-1"}}, **k8s),
        _rec("/api/v1/nodes/n-2", {"kind": "Status"}, status=503, **k8s),
    ]
    snap = _snap(responses, tier2=True)
    kube = snap["kubernetes"]
    assert [p["metadata"]["name"] for p in kube["pods"]] == ["p-0"]  # a stub, so its logs are served
    assert "stub" in snap["description"]
    previous = next(lg for lg in kube["logs"] if lg["previous"])
    assert base64.b64decode(previous["text_b64"]) == latin1 and "text" not in previous
    current = next(lg for lg in kube["logs"] if not lg["previous"])
    assert "wJalrXUtnFEMI" not in json.dumps(snap) and current["text"].endswith("boom\n")
    assert len(kube["events"]) == 1 and [n["metadata"]["name"] for n in kube["nodes"]] == ["n-1"]
    assert snap["faults"] == [
        {"path": f"/api/v1/namespaces/{ns}/pods/p-0", "status": 403, "times": 1},
        {"path": "/api/v1/nodes/n-2", "status": 503, "times": 4},  # urllib3 retried inside the read
    ]


def test_no_tier2_means_no_kubernetes_section() -> None:
    snap = _snap([_rec("/api/v1/workloads/w-1", WL)], tier2=False)
    assert "kubernetes" not in snap
    assert _snap([_rec("/api/v1/workloads/w-1", WL)], tier2=True)["kubernetes"] == {
        "pods": [],
        "events": [],
        "nodes": [],
        "logs": [],
    }


def test_deleted_only_listing_keeps_its_deletion() -> None:
    responses = [
        _rec("/api/v1/workloads", {"workloads": []}),
        _rec("/api/v1/workloads", {"workloads": [WL]}, query=[("deleted", "true")]),
    ]
    snap = _snap(responses)
    assert snap["runai"]["workloads"][0]["workload"]["deletedAt"] == WL["phaseUpdatedAt"]
    assert "deleted=true" in snap["description"]


def test_osmo_reads() -> None:
    query = {"name": "wf-1", "uuid": "u-1", "status": "FAILED", "pool": "p", "groups": []}
    listed = {"name": "wf-0", "workflow_uuid": "u-0", "user": "ann", "status": "COMPLETED", "error_logs": None}
    responses = [
        _rec("/api/workflow", {"workflows": [listed], "more_entries": False}),
        _rec("/api/workflow/u-1", query),
        _rec("/api/workflow/wf-1/logs", b"[train] boom\n", query=[("last_n_lines", "9999"), ("task_name", "train")]),
        _rec("/api/workflow/wf-1/logs", {"message": "down"}, status=500, attempts=[500] * 3),
        _rec("/api/workflow/wf-1/events", b"2026-11-28 10:00:00 [train] Failed\n", query=[("task_name", "train")]),
        _rec("/api/workflow/wf-1/spec", b"workflow: {}\n", query=[("use_template", "true")]),
        _rec("/api/task", {"tasks": [{"task_name": "train", "gpu": 8}]}, query=[("workflow_id", "wf-1")]),
        _rec("/api/pool_quota", {"node_sets": [{"pools": [{"name": "p"}]}]}, query=[("pools", "p")]),
        _rec("/api/resources", {"m": 1}, status=502, attempts=[502] * 5),
    ]
    snap = build_snapshot(
        responses,
        ask={"text": "why did wf-1 fail?", "workflow_id": "wf-1", "cluster_id": "ignored"},
        report=Report(system="osmo", outcome=Outcome.FAILED, headline="wf-1 failed"),
        now=NOW,
        system="osmo",
        tier2=False,
        captured_at=NOW,
    )
    assert "runai" not in snap and "kubernetes" not in snap
    assert snap["ask"] == {"text": "why did wf-1 fail?", "workflow_id": "wf-1"}
    by_name = {w["query"]["name"]: w for w in snap["osmo"]["workflows"]}
    assert by_name["wf-0"]["query"]["uuid"] == "u-0" and by_name["wf-0"]["query"]["submitted_by"] == "ann"
    wf = by_name["wf-1"]
    assert wf["query"] == query and wf["task_logs"] == {"train": "[train] boom\n"} and wf["logs"] is None
    assert wf["events"] == "2026-11-28 10:00:00 [train] Failed\n" and wf["spec_template"] == "workflow: {}\n"
    assert wf["tasks"] == [{"task_name": "train", "gpu": 8}]
    assert snap["osmo"]["pool_quota"] == {"node_sets": [{"pools": [{"name": "p"}]}]}
    assert snap["osmo"]["resources"] is None  # null answers 500 ...
    assert snap["faults"] == [{"path": "/api/resources", "status": 502, "times": 5}]  # ... but it answered 502
    validate_snapshot(snap)
