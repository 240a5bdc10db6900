"""Issue 15 §1 (paging) and §5 (diagnosis-side errors): a fault suite through the real clients and the CLI.

Each fault of :data:`FAULTS` is one bad answer (a cursor that cycles, records served again, a token endpoint
answering HTML, a ``null`` id in the workload list, a pod ``status`` that is a string, a body cut mid-read, a
history body of ``null`` or ``[]``, OSMO answering a proxy page, ...). A loopback server (:class:`FaultServer`)
serves a healthy case from ``../shared/cases`` through the sandbox app and replaces one endpoint's answer with
the fault; ``workload-doctor diagnose … --format json`` runs in-process against it (the real CLI, the real
clients over HTTP). Each fault must be *answered*: exit 0 with a gap that names the endpoint and says what was
wrong (``gap``), or exit 2 with one clear line (``line``); anything else (exit 1 "unexpected", a traceback, a
gap with a Python error name, a count built from repeated records) is *lost*. The suite prints
``faults tried / answered with a named gap or one line / lost`` and requires lost == 0.

Run ``pytest -s tests/diagnosis/test_client_faults.py`` to see the figure.
"""

from __future__ import annotations

import copy
import itertools
import json
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bench.schemagen import LoopbackServer
from tests.conftest import CASES

RUNAI_CASE = CASES / "runai" / "crash-app-traceback.json"
TIER2_CASE = CASES / "runai" / "liveness-137-tier2.json"
OSMO_CASE = CASES / "osmo" / "osmo-failed-app.json"
HAVE_CASES = RUNAI_CASE.is_file() and TIER2_CASE.is_file() and OSMO_CASE.is_file()
pytestmark = pytest.mark.skipif(not HAVE_CASES, reason="../shared/cases is absent")


@dataclass
class Raw:
    """One crafted answer: ``status``, ``content_type`` and ``body``; ``cut`` sends only the first ``cut``
    bytes of ``body`` while announcing its whole length, then closes the connection (a body cut mid-read)."""

    body: bytes
    status: int = 200
    content_type: str = "application/json"
    cut: int | None = None


def js(value: Any) -> Raw:
    return Raw(json.dumps(value).encode())


#: A fault's answer: from the request's query and how many times the path was asked so far (0 first).
Answer = Callable[[dict[str, str], int], Raw]


class _CutBody(ConnectionAbortedError):
    """Raised by :class:`FaultServer` after the first bytes of a cut body: uvicorn then drops the connection."""


def _quiet_cuts(record: logging.LogRecord) -> bool:
    """A logging filter: uvicorn's report of a body cut on purpose is no error of the test."""
    return not (record.exc_info and isinstance(record.exc_info[1], _CutBody))


class FaultServer(LoopbackServer):
    """The sandbox app serving ``snapshot``, with the answers of ``faults`` (``(method, path)`` -> answer)
    in front of it."""

    name = "client-faults"

    def __init__(self, snapshot: dict[str, Any], faults: dict[tuple[str, str], Answer]) -> None:
        super().__init__()
        self.snapshot = snapshot
        self.faults = faults
        self.hits: dict[tuple[str, str], int] = {}
        self.kubeconfig = ""

    def app(self) -> Any:
        from urllib.parse import parse_qsl

        from sandbox.server import SandboxState, build_app

        state = SandboxState(snapshot=self.snapshot)
        inner = build_app(state)
        if isinstance(self.snapshot.get("kubernetes"), dict):
            self._kube_token = state.issue_token()  # the sandbox's Kubernetes API accepts the tokens it issued

        async def app(scope: Any, receive: Any, send: Any) -> None:
            key = (scope.get("method", ""), scope.get("path", ""))
            answer = self.faults.get(key) if scope["type"] == "http" else None
            if answer is None:
                await inner(scope, receive, send)
                return
            n = self.hits.get(key, 0)
            self.hits[key] = n + 1
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            raw = answer(query, n)
            headers = [(b"content-type", raw.content_type.encode()), (b"content-length", str(len(raw.body)).encode())]
            await send({"type": "http.response.start", "status": raw.status, "headers": headers})
            if raw.cut is None:
                await send({"type": "http.response.body", "body": raw.body})
                return
            await send({"type": "http.response.body", "body": raw.body[: raw.cut], "more_body": True})
            raise _CutBody("fault: body cut mid-read")  # uvicorn closes the connection

        return app

    def __enter__(self) -> FaultServer:
        super().__enter__()
        logging.getLogger("uvicorn.error").addFilter(_quiet_cuts)
        token = getattr(self, "_kube_token", None)
        if token is not None:
            doc = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "faults", "cluster": {"server": self.url}}],
                "users": [{"name": "faults", "user": {"token": token}}],
                "contexts": [{"name": "faults", "context": {"cluster": "faults", "user": "faults"}}],
                "current-context": "faults",
            }
            fd, self.kubeconfig = tempfile.mkstemp(prefix="wd-faults-kubeconfig-", suffix=".json")
            with os.fdopen(fd, "w") as fh:
                json.dump(doc, fh)
        return self

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        logging.getLogger("uvicorn.error").removeFilter(_quiet_cuts)
        if self.kubeconfig:
            os.unlink(self.kubeconfig)


@dataclass
class Run:
    """One CLI run: exit code, output, and (exit 0) the JSON report and its gaps as ``what: why`` lines."""

    code: int
    stdout: str
    stderr: str
    crash: str = ""
    gaps: list[str] = field(default_factory=list)
    data: dict[str, Any] | None = None


_LOGINS = itertools.count()


def run_cli(server: FaultServer, args: list[str], system: str, command: str = "diagnose") -> Run:
    """``workload-doctor <command> <args> --format json`` in-process against ``server`` (a fresh Run:ai client
    id each run, so no login is served from the process-wide token cache)."""
    from typer.testing import CliRunner

    from bot.cli import app

    env = {"RUNAI_BASE_URL": "", "OSMO_URL": "", "OSMO_TOKEN": "", "KUBECONFIG": server.kubeconfig}
    env |= {"WD_KUBE_CONTEXTS": "", "WD_IN_CLUSTER_ID": "", "WD_DEADLINE": "20", "WD_REQUEST_TIMEOUT": "5"}
    if system == "runai":
        login = f"faults-{next(_LOGINS)}"
        env |= {"RUNAI_BASE_URL": server.url, "RUNAI_CLIENT_ID": login, "RUNAI_CLIENT_SECRET": "s"}
    else:
        env |= {"OSMO_URL": server.url, "OSMO_TOKEN": "faults-access-token"}
    result = CliRunner().invoke(app, [command, *args, "--format", "json"], env=env, catch_exceptions=True)
    run = Run(result.exit_code, result.stdout, result.stderr or "")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        run.crash = f"{type(result.exception).__name__}: {result.exception}"
    if result.exit_code == 0:
        try:
            run.data = json.loads(result.stdout)
        except ValueError:
            return run
        run.gaps = [f"{g.get('what')}: {g.get('why')}" for g in run.data.get("gaps") or []]
    return run


# -- the faults -------------------------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {"runai": {"workloads": [{"workload": {}}]}}


RUNAI = _load(RUNAI_CASE)
TIER2 = _load(TIER2_CASE)
OSMO = _load(OSMO_CASE) if OSMO_CASE.is_file() else {}
_ENTRY = RUNAI["runai"]["workloads"][0]
WID = str(_ENTRY["workload"].get("id"))
CID = str(_ENTRY["workload"].get("clusterId"))
HISTORY: list[Any] = list(_ENTRY.get("history") or [])
PODS: list[Any] = list(_ENTRY.get("pods") or [])
BASE = f"/api/v1/workloads/{WID}"
BY_ID = ["why did mistral-sft crash", "--workload-id", WID, "--cluster-id", CID]
BY_NAME = ["why did mistral-sft crash", "--workload", "mistral-sft", "--project", "genai", "--cluster-id", CID]
_T2 = TIER2["runai"]["workloads"][0]["workload"]
T2_POD = f"/api/v1/namespaces/{_T2.get('namespace')}/pods/eval-server-0-0"
T2_ARGS = ["why did eval-server fail", "--workload-id", str(_T2.get("id")), "--cluster-id", str(_T2.get("clusterId"))]
WF = "grasp-policy-train-17"
WF_PATH = f"/api/workflow/{WF}"
OSMO_ARGS = [f"why did {WF} fail", "--workflow", WF]
#: The Run:ai case's workload as failed a day before the run (inside a digest window whatever the date).
RUNAI_RECENT = {**_ENTRY["workload"], "phaseUpdatedAt": f"{datetime.now(UTC) - timedelta(days=1):%Y-%m-%dT%H:%M:%SZ}"}
#: The OSMO case's failed workflow as ``GET /api/workflow`` lists it, ended a day before the run (inside a
#: digest window whatever the date).
OSMO_LISTED = {
    "name": WF,
    "user": "maya",
    "status": "FAILED",
    "pool": "default",
    "submit_time": f"{datetime.now(UTC) - timedelta(days=1, hours=2):%Y-%m-%dT%H:%M:%S}",
    "end_time": f"{datetime.now(UTC) - timedelta(days=1):%Y-%m-%dT%H:%M:%S}",
}
HTML = Raw(b"<html><body>Sign in to continue</body></html>", content_type="text/html")


def _offset(query: dict[str, str]) -> int:
    return int(query.get("offset", "0") or 0)


def cycling(key: str, items: list[Any]) -> Answer:
    """Two pages whose ``next`` cycles: offset 0 names page 1, page 1 names offset 0 again."""
    half = max(1, len(items) // 2)

    def answer(query: dict[str, str], n: int) -> Raw:
        if _offset(query) == 0:
            return js({key: items[:half], "next": 1})
        return js({key: items[half:], "next": 0})

    return answer


def served_three_times(key: str, items: list[Any]) -> Answer:
    """The same records on three pages (the server ignores ``offset``), ``next`` advancing, then the end."""

    def answer(query: dict[str, str], n: int) -> Raw:
        offset = _offset(query)
        return js({key: items, "next": offset + 1} if offset < 2 else {key: items})

    return answer


def endless_history(query: dict[str, str], n: int) -> Raw:
    """A new history record on every page and always a ``next``: the list never ends."""
    offset = _offset(query)
    record = {
        "meta": {"type": "PhaseUpdate", "creationTimestamp": f"2026-11-{1 + offset % 27:02d}T00:{offset % 60:02d}:00Z"},
        "spec": {"phaseUpdate": {"phase": "Running", "phaseMessage": f"page {offset}"}},
    }
    return js({"records": [record], "next": offset + 1})


def const(raw: Raw) -> Answer:
    return lambda query, n: raw


def cut(value: Any, at: int = 40) -> Answer:
    """``value`` as JSON, cut after ``at`` bytes while its whole length was announced."""
    return const(Raw(json.dumps(value).encode(), cut=at))


def _pod_status(status: Any) -> Answer:
    pods = TIER2.get("kubernetes", {}).get("pods") or [{}]
    pod = copy.deepcopy(pods[0])
    pod["status"] = status
    return const(js(pod))


@dataclass(frozen=True)
class Fault:
    """One bad answer and what must come of it.

    ``routes``: the answers replaced (``(method, path)`` -> :data:`Answer`); ``expect``: ``"gap"`` (exit 0
    and a gap whose ``what: why`` starts with ``what`` and holds every word of ``words``) or ``"line"``
    (exit 2 and one line on stderr holding every word); ``never``: words neither may hold (a wrong "after
    retries", an HTTP status the server never sent); ``same_count``: the report's ``occurrences`` must be
    the healthy answer's (repeated records are not more evidence); ``"report"`` with ``outcome``: exit 0 and
    that outcome (a repeat that must change nothing); ``value``: ``(dotted key, value)`` the JSON report must
    hold (``("digest.failed", 1)``: one failure, not one per page that repeated it); ``command``:
    ``diagnose`` or ``digest``."""

    name: str
    system: str
    routes: dict[tuple[str, str], Answer]
    expect: str
    words: tuple[str, ...]
    what: str = ""
    args: tuple[str, ...] = tuple(BY_ID)
    snapshot: str = "runai"
    never: tuple[str, ...] = ()
    same_count: bool = False
    outcome: str = ""
    command: str = "diagnose"
    value: tuple[str, Any] | None = None


FAULTS: tuple[Fault, ...] = (
    # §1 paging
    Fault(
        "history next cycles",
        "runai",
        {("GET", f"{BASE}/history"): cycling("records", HISTORY)},
        "gap",
        ("next cursor", "page already read"),
        what="history",
        same_count=True,
    ),
    Fault(
        "history records served three times",
        "runai",
        {("GET", f"{BASE}/history"): served_three_times("records", HISTORY)},
        "gap",
        ("served again", "counted once"),
        what="history",
        same_count=True,
    ),
    Fault(
        "history 200 pages without an end",
        "runai",
        {("GET", f"{BASE}/history"): endless_history},
        "gap",
        ("after 200 pages", "not read"),
        what="history",
    ),
    Fault(
        "events next cycles",
        "runai",
        {
            ("GET", f"{BASE}/events"): cycling(
                "events",
                [
                    {
                        "id": f"00000000-0000-4000-8000-00000000000{i}",
                        # inside the lookback whatever the date (a fixed date left it after a week)
                        "createdAt": f"{datetime.now(UTC) - timedelta(days=1, minutes=10 - i):%Y-%m-%dT%H:%M:%SZ}",
                        "type": "Warning",
                        "clusterId": CID,
                        "reason": "BackOff",
                        "message": f"Back-off restarting {i}",
                    }
                    for i in range(4)
                ],
            )
        },
        "gap",
        ("next cursor",),
        what="events",
    ),
    Fault(
        "pods served three times",
        "runai",
        {("GET", f"{BASE}/pods"): served_three_times("pods", PODS)},
        "gap",
        ("served again",),
        what="pods",
    ),
    Fault(
        "workload listed twice by a repeating page",
        "runai",
        {("GET", "/api/v1/workloads"): served_three_times("workloads", [_ENTRY["workload"]])},
        "report",
        (),
        args=tuple(BY_NAME),
        outcome="diagnosed",  # the one workload, diagnosed, not two of it to choose from
    ),
    Fault(
        "workload list paged wrongly is said in the answer",
        "runai",
        {("GET", "/api/v1/workloads"): served_three_times("workloads", [_ENTRY["workload"]])},
        "gap",
        ("served again", "counted once"),
        what="workloads named mistral-sft",
        args=tuple(BY_NAME),
    ),
    Fault(
        "digest: Run:ai workload list served three times",
        "runai",
        {("GET", "/api/v1/workloads"): served_three_times("workloads", [RUNAI_RECENT])},
        "gap",
        ("served again", "counted once"),
        what="Failed workloads",
        args=("--since", "30d"),
        command="digest",
        value=("digest.failed", 1),
    ),
    Fault(
        "digest: a listed Run:ai failure's metrics call fails",
        "runai",
        {
            ("GET", "/api/v1/workloads"): const(js({"workloads": [RUNAI_RECENT]})),
            ("GET", f"{BASE}/metrics"): const(Raw(b'{"message": "metrics are off"}', status=400)),
        },
        "gap",
        ("HTTP 400 (metrics are off)", f"[GET {BASE}/metrics]"),  # describe_error's words, then the call
        what=f"{RUNAI_RECENT.get('name')}: metrics",
        args=("--since", "30d"),
        command="digest",
        value=("digest.failed", 1),
    ),
    Fault(
        "digest: a listed OSMO failure's query fails",
        "osmo",
        {
            ("GET", "/api/workflow"): const(js({"workflows": [OSMO_LISTED], "more_entries": False})),
            ("GET", WF_PATH): const(Raw(b'{"message": "the service is busy"}', status=400)),
        },
        "gap",
        ("HTTP 400: the service is busy", f"[GET {WF_PATH}]"),  # the same shape as the Run:ai scan's gaps
        what=f"workflow {WF}",
        args=("--since", "30d"),
        snapshot="osmo",
        command="digest",
        value=("digest.failed", 1),
    ),
    Fault(
        "digest: OSMO workflow list ignores offset",
        "osmo",
        {("GET", "/api/workflow"): const(js({"workflows": [OSMO_LISTED], "more_entries": True}))},
        "gap",
        ("listed again", "did not advance"),
        what="OSMO failed workflows",
        args=("--since", "30d"),
        snapshot="osmo",
        command="digest",
        value=("digest.failed", 1),
    ),
    # §5 diagnosis-side errors: Run:ai
    Fault(
        "token endpoint answers HTML",
        "runai",
        {("POST", "/api/v2/token"): const(HTML), ("POST", "/api/v1/token"): const(HTML)},
        "line",
        ("without a usable access token", "text/html"),
        never=("502", "after retries"),
    ),
    Fault(
        "token endpoint answers 500 HTML",
        "runai",
        {("POST", "/api/v2/token"): const(Raw(HTML.body, 500, "text/html"))},
        "line",
        ("HTTP 500", "after retries"),
    ),
    Fault(
        "null id in the workload list",
        "runai",
        {("GET", "/api/v1/workloads"): const(js({"workloads": [{**_ENTRY["workload"], "id": None}]}))},
        "line",
        ("workloads.0.id is null",),
        args=tuple(BY_NAME),
    ),
    Fault(
        "history body null",
        "runai",
        {("GET", f"{BASE}/history"): const(Raw(b"null"))},
        "gap",
        ("got null",),
        what="history",
    ),
    Fault(
        "history body []",
        "runai",
        {("GET", f"{BASE}/history"): const(Raw(b"[]"))},
        "gap",
        ("empty: []",),
        what="history",
    ),
    Fault(
        "history body cut mid-read",
        "runai",
        {("GET", f"{BASE}/history"): cut({"records": HISTORY})},
        "gap",
        ("closed before the end", "read once"),
        what="history",
        never=("after retries",),
    ),
    Fault(
        "pods body cut mid-read",
        "runai",
        {("GET", f"{BASE}/pods"): cut({"pods": PODS})},
        "gap",
        ("closed before the end",),
        what="pods",
        never=("after retries",),
    ),
    Fault(
        "workload body null",
        "runai",
        {("GET", BASE): const(Raw(b"null"))},
        "line",
        ("the body is null",),
    ),
    Fault(
        "workload answers HTML",
        "runai",
        {("GET", BASE): const(HTML)},
        "line",
        ("not JSON (text/html: <html>",),
    ),
    Fault(
        "pods answer HTML",
        "runai",
        {("GET", f"{BASE}/pods"): const(HTML)},
        "gap",
        ("the answer could not be used", "not JSON (text/html"),
        what="pods",
    ),
    Fault(
        "Tier 2 pod status is a string",
        "runai",
        {("GET", T2_POD): _pod_status("Running")},
        "gap",
        ("status",),
        what="",
        args=tuple(T2_ARGS),
        snapshot="tier2",
    ),
    Fault(
        "Tier 2 pod status is a list",
        "runai",
        {("GET", T2_POD): _pod_status([1, 2])},
        "gap",
        ("status",),
        what="",
        args=tuple(T2_ARGS),
        snapshot="tier2",
    ),
    # §5 diagnosis-side errors: OSMO
    Fault(
        "OSMO workflow answers HTML",
        "osmo",
        {("GET", WF_PATH): const(HTML)},
        "line",
        ("not JSON", "text/html"),
        args=tuple(OSMO_ARGS),
        snapshot="osmo",
    ),
    Fault(
        "OSMO workflow body null",
        "osmo",
        {("GET", WF_PATH): const(Raw(b"null"))},
        "line",
        ("the body is null",),
        args=tuple(OSMO_ARGS),
        snapshot="osmo",
    ),
    Fault(
        "OSMO workflow body []",
        "osmo",
        {("GET", WF_PATH): const(Raw(b"[]"))},
        "line",
        ("empty list",),
        args=tuple(OSMO_ARGS),
        snapshot="osmo",
    ),
    Fault(
        "OSMO workflow body not UTF-8",
        "osmo",
        {("GET", WF_PATH): const(Raw(b'\xff\xfe{"name": "x"'))},
        "line",
        ("not UTF-8",),
        args=tuple(OSMO_ARGS),
        snapshot="osmo",
    ),
    Fault(
        "OSMO workflow body cut mid-read",
        "osmo",
        {("GET", WF_PATH): cut({"name": WF, "status": "FAILED", "groups": []}, 20)},
        "line",
        ("closed before the end", "read once"),
        args=tuple(OSMO_ARGS),
        snapshot="osmo",
        never=("unreachable", "after retries"),
    ),
    Fault(
        "OSMO token exchange answers HTML",
        "osmo",
        {("POST", "/api/auth/jwt/access_token"): const(HTML)},
        "line",
        ("not JSON",),
        args=tuple(OSMO_ARGS),
        snapshot="osmo",
    ),
    Fault(
        "OSMO task list answers HTML",
        "osmo",
        {("GET", "/api/task"): const(HTML)},
        "gap",
        ("not JSON",),
        what="requested resources",
        args=tuple(OSMO_ARGS),
        snapshot="osmo",
    ),
    Fault(
        "OSMO task list body null",
        "osmo",
        {("GET", "/api/task"): const(Raw(b"null"))},
        "gap",
        ("got null",),
        what="requested resources",
        args=tuple(OSMO_ARGS),
        snapshot="osmo",
    ),
    Fault(
        "OSMO task list body cut mid-read",
        "osmo",
        {("GET", "/api/task"): cut({"tasks": []}, 5)},
        "gap",
        ("closed before the end",),
        what="requested resources",
        args=tuple(OSMO_ARGS),
        snapshot="osmo",
        never=("after retries",),
    ),
    Fault(
        "OSMO workflow list answers HTML",
        "osmo",
        {("GET", "/api/workflow"): const(HTML)},
        "line",
        ("not JSON",),
        args=("what failed in osmo recently?",),
        snapshot="osmo",
    ),
)
SNAPSHOTS = {"runai": RUNAI, "tier2": TIER2, "osmo": OSMO}


def judge(fault: Fault, run: Run, healthy: Run | None) -> str:
    """ "" when ``run`` answered ``fault`` as it must, else what was lost (one line)."""
    if run.crash:
        return f"crash {run.crash}"
    err = run.stderr.strip()
    if run.code == 1 or "unexpected" in err:
        return f"exit {run.code}: {err[-300:]}"
    if "Traceback" in err:
        return "a traceback on stderr"
    if fault.expect == "line":
        if run.code != 2:
            return f"exit {run.code}, not one line (gaps {run.gaps})"
        if len(err.splitlines()) != 1:
            return f"not one line: {err[-300:]}"
        missing = [w for w in fault.words if w not in err]
        if missing:
            return f"the line does not say {missing[0]!r}: {err[-300:]}"
        text = err
    elif fault.expect == "report":
        if run.code != 0 or run.data is None:
            return f"exit {run.code}: {err[-300:]}"
        if run.data.get("outcome") != fault.outcome:
            return f"outcome {run.data.get('outcome')!r}, not {fault.outcome!r}: {run.data.get('question')}"
        text = ""
    else:
        if run.code != 0 or run.data is None:
            return f"exit {run.code}: {err[-300:]}"
        bad = [g for g in run.gaps if "unexpected" in g or "Error:" in g]
        if bad:
            return f"a gap naming a Python error: {bad[0][:200]}"
        named = [g for g in run.gaps if g.startswith(fault.what) and all(w in g for w in fault.words)]
        if not named:
            return f"no gap {fault.what!r} with {fault.words}; gaps: {run.gaps}"
        text = named[0]
    wrong = [w for w in fault.never if w in text]
    if wrong:
        return f"says {wrong[0]!r}: {text[:300]}"
    if fault.value is not None and run.data is not None:
        key, want = fault.value
        got: Any = run.data
        for part in key.split("."):
            got = got.get(part) if isinstance(got, dict) else None
        if got != want:
            return f"{key} is {got!r}, not {want!r}"
    if fault.same_count and healthy is not None and healthy.data is not None and run.data is not None:
        if run.data.get("occurrences") != healthy.data.get("occurrences"):
            counts = (run.data.get("occurrences"), healthy.data.get("occurrences"))
            return f"occurrences {counts[0]} where the healthy answer has {counts[1]}"
    return ""


@dataclass
class Figures:
    """The suite's outcome: faults tried, answered (a named gap or one line), and lost (each with why)."""

    tried: int = 0
    answered: int = 0
    lost: dict[str, str] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)

    def summary(self) -> str:
        return (
            f"client faults: {self.tried} tried / {self.answered} answered with a named gap or one clear line / "
            f"{len(self.lost)} lost"
        )


def run_faults(faults: tuple[Fault, ...] = FAULTS) -> Figures:
    """Every fault through the CLI, each against a fresh loopback server (the healthy answer once per case)."""
    figures = Figures()
    healthy: dict[str, Run] = {}
    for fault in faults:
        snapshot = copy.deepcopy(SNAPSHOTS[fault.snapshot])
        if fault.same_count and fault.snapshot not in healthy:
            with FaultServer(copy.deepcopy(snapshot), {}) as server:
                healthy[fault.snapshot] = run_cli(server, list(fault.args), fault.system, fault.command)
        with FaultServer(snapshot, fault.routes) as server:
            run = run_cli(server, list(fault.args), fault.system, fault.command)
        figures.tried += 1
        figures.runs[fault.name] = run
        lost = judge(fault, run, healthy.get(fault.snapshot))
        if lost:
            figures.lost[fault.name] = lost
        else:
            figures.answered += 1
    return figures


@pytest.fixture(scope="module")
def figures() -> Figures:
    return run_faults()


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
def test_each_fault_is_answered_with_a_named_gap_or_one_line(fault: Fault, figures: Figures) -> None:
    assert fault.name not in figures.lost, figures.lost[fault.name]


def test_the_fault_suite_loses_nothing(figures: Figures) -> None:
    print("\n" + figures.summary())
    for name, why in figures.lost.items():
        print(f"  lost: {name}: {why}")
    assert figures.tried == len(FAULTS) and figures.answered + len(figures.lost) == figures.tried
    assert figures.lost == {}


# -- the rules underneath, each on the real client over loopback HTTP -----------------------------------------


async def _no_wait(_: float) -> None:
    return None


def _runai_client(server: FaultServer) -> Any:
    from diagnosis.config import RunaiConfig
    from diagnosis.http import RetryPolicy
    from diagnosis.runai.client import RunaiClient

    config = RunaiConfig(server.url, f"faults-{next(_LOGINS)}", "s", console_url=server.url)
    return RunaiClient(config, retry=RetryPolicy(sleep=_no_wait))


async def test_equal_records_on_one_page_are_kept_and_only_a_later_page_repeating_them_is_dropped() -> None:
    """A record without an id is "the same" only when an earlier page served it: two equal phase updates on one
    page are the server's own listing (both counted), the same two again on page 2 are a repeat."""
    record = {"meta": {"type": "PhaseUpdate", "creationTimestamp": "2026-11-28T10:00:00Z"}, "spec": {}}

    def history(query: dict[str, str], n: int) -> Raw:
        return js({"records": [record, record], "next": 1} if _offset(query) == 0 else {"records": [record, record]})

    with FaultServer(copy.deepcopy(RUNAI), {("GET", f"{BASE}/history"): history}) as server:
        async with _runai_client(server) as client:
            records = await client.get_history(WID)
    assert len(records) == 2 and records.repeated == 2
    assert records.skipped_text() == "2 records served again by a later page dropped (counted once)"


async def test_events_paging_stops_at_since_without_a_gap() -> None:
    """``get_events`` ends paging once a page reaches back before ``since`` (what it needs), and says nothing
    was left out: only a server's wrong paging is a gap."""
    events = [
        {
            "id": f"e{i}",
            "createdAt": f"2026-11-{20 + i:02d}T10:00:00Z",
            "type": "Normal",
            "clusterId": CID,
            "message": "x",
        }
        for i in range(2)
    ]

    def pages(query: dict[str, str], n: int) -> Raw:
        offset = _offset(query)
        return js({"events": [events[1 - offset]], "next": offset + 1})

    with FaultServer(copy.deepcopy(RUNAI), {("GET", f"{BASE}/events"): pages}) as server:
        async with _runai_client(server) as client:
            got = await client.get_events(WID, since=datetime(2026, 11, 20, 12, tzinfo=UTC))
        asked = server.hits[("GET", f"{BASE}/events")]
    assert [e.id for e in got] == ["e1", "e0"] and asked == 2
    assert got.stopped is None and got.repeated == 0 and got.skipped == 0


async def test_a_refused_connection_is_still_named_after_retries() -> None:
    """Only a body broken after its headers reads "read once": a request that could not be sent at all went
    through every attempt of the retry policy, and says so."""
    import httpx

    from diagnosis.config import RunaiConfig
    from diagnosis.fetched import describe_error
    from diagnosis.http import RetryPolicy
    from diagnosis.runai.client import RunaiClient

    config = RunaiConfig("http://127.0.0.1:9", f"faults-{next(_LOGINS)}", "s", console_url="http://127.0.0.1:9")
    async with RunaiClient(config, retry=RetryPolicy(sleep=_no_wait)) as client:
        with pytest.raises(httpx.ConnectError) as caught:
            await client.list_clusters()
        attempts = len(client.transport.records)
    assert describe_error(caught.value) == "ConnectError after retries" and attempts >= 3


async def test_a_cut_body_is_one_attempt_and_says_so() -> None:
    """The cut history body was asked once (the retry policy never saw it) and its ``why`` says exactly that."""
    import httpx

    from diagnosis.fetched import describe_error

    with FaultServer(copy.deepcopy(RUNAI), {("GET", f"{BASE}/history"): cut({"records": HISTORY}, 30)}) as server:
        async with _runai_client(server) as client:
            with pytest.raises(httpx.TransportError) as caught:
                await client.get_history(WID)
        asked = server.hits[("GET", f"{BASE}/history")]
    why = describe_error(caught.value)
    assert asked == 1 and "after retries" not in why
    assert why.startswith("the connection closed before the end of the answer's body (30 of ")
    assert why.endswith("it was read once (a body cut off after its headers is not retried)")


async def test_a_cut_body_through_the_shared_pool_says_so_too() -> None:
    """The bot's shared aiohttp pool names the cut in its own words; the ``why`` is the same plain line."""
    import httpx

    from diagnosis.fetched import describe_error
    from diagnosis.http import close_shared_connections, share_connections

    share_connections()
    try:
        with FaultServer(copy.deepcopy(RUNAI), {("GET", f"{BASE}/history"): cut({"records": HISTORY}, 30)}) as server:
            async with _runai_client(server) as client:
                with pytest.raises(httpx.TransportError) as caught:
                    await client.get_history(WID)
    finally:
        await close_shared_connections()
    why = describe_error(caught.value)
    assert why.startswith("the connection closed before the end of the answer's body (30 of ") and "read once" in why
