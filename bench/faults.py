"""Bounded bodies (issue 15 §1, §5): servers that never stop sending, and the CLI that must still answer.

A loopback server (:class:`EndlessServer`, uvicorn in a thread) serves a healthy case from ``../shared/cases``
through the sandbox app, except for the paths it is told to make endless: a JSON body that never closes, a
log that ignores ``limitBytes`` and streams forever, a gzip stream of zeros (a compression bomb), a body that
sends its headers and then nothing, a trickle of a byte at a time. Each server stream stops itself: when the
client hangs up, after :data:`SERVER_MAX_BYTES` or after :data:`SERVER_MAX_SECONDS`.

``workload-doctor diagnose … --format json`` runs as a subprocess against it (:func:`run_cli`: the real CLI,
the real clients over HTTP, the real Kubernetes client), and :func:`os.wait4` gives its own peak RSS. A fault is
*answered with a named gap* when the CLI exits 0 by itself with a gap that names the cut read and says why
(:data:`CUT_WORDS`), and its peak RSS stayed under :data:`RSS_LIMIT`; *lost* otherwise (killed at the guard,
a crash, no gap, too much memory).

``python -m bench.faults`` runs every fault of :data:`FAULTS` (the hanging ones take the 15 s per-read
wall clock of Tier 2) and prints, per fault, seconds to exit, peak RSS and bytes the server sent before the
client hung up, then ``faults tried / answered with a named gap / lost``; exit 1 when lost > 0.
tests/diagnosis/test_bounded_bodies.py runs the quick ones.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT.parent / "shared" / "cases"
CLI = str(ROOT / ".venv" / "bin" / "workload-doctor")
#: a server stream stops itself after this many bytes, or seconds, even if the client never hangs up
SERVER_MAX_BYTES = 32 * 1024**3
SERVER_MAX_SECONDS = 90.0
#: the peak RSS a CLI run may reach whatever the server sends (issue 15 §1)
RSS_LIMIT = 512 * 1024 * 1024
#: a CLI run still alive this long after it started is killed (and the fault is lost)
GUARD_SECONDS = 120.0
#: words that say a read was cut (the ``why`` of the gap)
CUT_WORDS = ("cut at", "cut after", "timed out")

RUNAI_CASE = CASES / "runai" / "liveness-137-tier2.json"
OSMO_CASE = CASES / "osmo" / "osmo-failed-app.json"


@dataclass(frozen=True)
class Endless:
    """How one path answers: ``kind`` is ``json`` (an array that never closes), ``text`` (log lines forever),
    ``gzip`` (``Content-Encoding: gzip`` of endless zeros, about 1000:1), ``hang`` (headers, one byte, then
    silence) or ``trickle`` (a byte every ``interval`` seconds); ``declared`` sends a ``Content-Length`` of
    that many bytes first; ``status`` is the answer's status."""

    kind: str
    content_type: str = "application/json"
    interval: float = 0.2
    declared: int | None = None
    status: int = 200


class EndlessServer:
    """The sandbox app serving ``snapshot`` on 127.0.0.1, with the paths of ``endless`` streaming forever.

    ``sent`` maps each endless path to the bytes sent (compressed, for gzip); ``hung_up`` the paths whose
    client went away. ``kubeconfig`` is a file pointing at it (when the snapshot has a Kubernetes section)."""

    def __init__(self, snapshot: dict[str, Any], endless: dict[str, Endless]) -> None:
        self.snapshot = snapshot
        self.endless = endless
        self.sent: dict[str, int] = {}
        self.hung_up: set[str] = set()
        self.url = ""
        self.kubeconfig = ""
        self._server: Any = None
        self._thread: Any = None
        self._token: str | None = None

    def app(self) -> Any:
        from sandbox.server import SandboxState, build_app

        state = SandboxState(snapshot=self.snapshot)
        inner = build_app(state)
        if isinstance(self.snapshot.get("kubernetes"), dict):
            self._token = state.issue_token()

        async def app(scope: Any, receive: Any, send: Any) -> None:
            path = scope.get("path", "") if scope["type"] == "http" else ""
            fault = self.endless.get(path)
            if fault is None:
                await inner(scope, receive, send)
                return
            await self._stream(path, fault, receive, send)

        return app

    async def _stream(self, path: str, fault: Endless, receive: Any, send: Any) -> None:
        gone = asyncio.Event()

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    gone.set()
                    return

        watcher = asyncio.create_task(watch())
        headers = [(b"content-type", fault.content_type.encode())]
        if fault.kind == "gzip":
            headers.append((b"content-encoding", b"gzip"))
        if fault.declared is not None:
            headers.append((b"content-length", str(fault.declared).encode()))
        self.sent[path] = 0
        end = time.monotonic() + SERVER_MAX_SECONDS
        try:
            await send({"type": "http.response.start", "status": fault.status, "headers": headers})
            for chunk in _chunks(fault):
                if gone.is_set() or time.monotonic() > end or self.sent[path] > SERVER_MAX_BYTES:
                    break
                if chunk:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    self.sent[path] += len(chunk)
                if fault.kind in ("hang", "trickle"):
                    # a silent server: wait for the hang-up (or the next byte), not a busy loop
                    try:
                        wait = fault.interval if fault.kind == "trickle" else max(0.1, end - time.monotonic())
                        await asyncio.wait_for(gone.wait(), wait)
                    except TimeoutError:
                        pass
                else:
                    await asyncio.sleep(0)  # let the disconnect be noticed
        except Exception:
            pass  # the client is gone: uvicorn refuses the write
        finally:
            if gone.is_set():
                self.hung_up.add(path)
            watcher.cancel()

    def __enter__(self) -> EndlessServer:
        import threading

        import uvicorn

        config = uvicorn.Config(self.app(), host="127.0.0.1", port=0, log_level="critical", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="endless", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("endless server did not start")
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{self._server.servers[0].sockets[0].getsockname()[1]}"
        if self._token is not None:
            doc = {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "endless", "cluster": {"server": self.url}}],
                "users": [{"name": "endless", "user": {"token": self._token}}],
                "contexts": [{"name": "endless", "context": {"cluster": "endless", "user": "endless"}}],
                "current-context": "endless",
            }
            fd, self.kubeconfig = tempfile.mkstemp(prefix="wd-endless-kubeconfig-", suffix=".json")
            with os.fdopen(fd, "w") as fh:
                json.dump(doc, fh)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._server.force_exit = True  # endless responses must not hold the shutdown
        self._thread.join(timeout=10)
        if self.kubeconfig:
            os.unlink(self.kubeconfig)


def _chunks(fault: Endless) -> Any:
    """The body of ``fault``, piece by piece, forever."""
    if fault.kind == "json":
        yield b'{"records": ['
        item = json.dumps({"id": "x", "spec": {"phase": "Running", "pad": "y" * 2000}}).encode() + b","
        piece = item * 32
        while True:
            yield piece
    elif fault.kind == "text":
        line = b"2026-11-28T16:00:00Z step 1234 loss=0.123 lr=3e-4 " + b"z" * 60 + b"\n"
        piece = line * 512
        while True:
            yield piece
    elif fault.kind == "gzip":
        packer = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        zeros = bytes(1024 * 1024)
        while True:
            yield packer.compress(zeros) + packer.flush(zlib.Z_SYNC_FLUSH)
    elif fault.kind == "hang":
        yield b"{"
        while True:
            yield b""
    elif fault.kind == "trickle":
        yield b'{"records": ['
        while True:
            yield b" "
    else:
        raise ValueError(fault.kind)


@dataclass
class Run:
    """One CLI run: exit code (None: killed at the guard), seconds to exit, peak RSS bytes, output, the JSON
    report's gaps as ``what: why`` lines."""

    code: int | None
    seconds: float
    rss: int
    stdout: str
    stderr: str
    gaps: list[str] = field(default_factory=list)
    data: dict[str, Any] | None = None


def run_cli(
    server: EndlessServer, args: list[str], system: str, env: dict[str, str] | None = None, guard: float = GUARD_SECONDS
) -> Run:
    """``workload-doctor diagnose <args> --format json`` in a subprocess against ``server``; its own peak RSS
    from :func:`os.wait4`. Killed (``code`` None) if still alive ``guard`` seconds after it started."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("RUNAI_", "OSMO_", "WD_", "KUBECONFIG"))}
    base |= {"WD_DEADLINE": "30", "WD_REQUEST_TIMEOUT": "5", "KUBECONFIG": server.kubeconfig or os.devnull}
    if system == "runai":
        base |= {"RUNAI_BASE_URL": server.url, "RUNAI_CLIENT_ID": "endless", "RUNAI_CLIENT_SECRET": "s"}
    else:
        base |= {"OSMO_URL": server.url, "OSMO_TOKEN": "endless-access-token"}
    base |= env or {}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen([CLI, "diagnose", *args, "--format", "json"], env=base, stdout=out, stderr=err)
        code: int | None = None
        rss = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                code = os.waitstatus_to_exitcode(status)
                rss = int(usage.ru_maxrss) * 1024  # KiB on Linux
                break
            if time.monotonic() - t0 > guard:
                os.kill(proc.pid, signal.SIGKILL)
                _, _, usage = os.wait4(proc.pid, 0)
                rss = int(usage.ru_maxrss) * 1024
                break
            time.sleep(0.05)
        seconds = time.monotonic() - t0
        proc.returncode = code if code is not None else -9  # reaped here: Popen must not wait for it again
        out.seek(0)
        err.seek(0)
        run = Run(code, seconds, rss, out.read().decode(errors="replace"), err.read().decode(errors="replace"))
    if code == 0:
        try:
            run.data = json.loads(run.stdout)
        except ValueError:
            return run
        run.gaps = [f"{g.get('what')}: {g.get('why')}" for g in run.data.get("gaps") or []]
    return run


@dataclass(frozen=True)
class Fault:
    """One endless answer: ``paths`` of ``case`` made ``endless``; the CLI asked ``args`` of ``system``;
    ``gap`` is a word the ``what`` of the cut read's gap contains; ``env`` extra settings of the run."""

    name: str
    case: Path
    system: str
    args: tuple[str, ...]
    endless: dict[str, Endless]
    gap: str
    env: dict[str, str] = field(default_factory=dict)
    quick: bool = True
    #: a stream the product reads in part by design (OSMO logs, a Kubernetes log tail: its end is kept, issue 22
    #: §2): a note of the report saying it was cut counts
    note: str | None = None


def _ids(case: Path) -> tuple[str, str, str, str]:
    """(workload id, cluster id, namespace, first pod name) of a Run:ai case."""
    if not case.is_file():
        return "w", "c", "ns", "pod"
    entry = json.loads(case.read_text())["runai"]["workloads"][0]
    w = entry["workload"]
    pods = entry.get("pods") or [{}]
    pod = str(pods[0].get("name") or f"{w.get('name')}-0-0")
    return str(w["id"]), str(w["clusterId"]), str(w.get("namespace") or "runai"), pod


WID, CID, NS, POD = _ids(RUNAI_CASE)
RUNAI_ARGS = ("why did eval-server fail", "--workload-id", WID, "--cluster-id", CID)
WF = "grasp-policy-train-17"
OSMO_ARGS = (f"why did {WF} fail", "--workflow", WF)
LOG = f"/api/v1/namespaces/{NS}/pods/{POD}/log"
TEXT = "text/plain"

FAULTS: list[Fault] = [
    Fault("Run:ai history: endless JSON", RUNAI_CASE, "runai", RUNAI_ARGS,
          {f"/api/v1/workloads/{WID}/history": Endless("json")}, "history"),
    Fault("Run:ai events: gzip bomb", RUNAI_CASE, "runai", RUNAI_ARGS,
          {f"/api/v1/workloads/{WID}/events": Endless("gzip")}, "events"),
    Fault("Run:ai metrics: Content-Length of 100 GB", RUNAI_CASE, "runai", RUNAI_ARGS,
          {f"/api/v1/workloads/{WID}/metrics": Endless("json", declared=100 * 1024**3)}, "metrics"),
    Fault("OSMO task requests: endless JSON", OSMO_CASE, "osmo", OSMO_ARGS,
          {"/api/task": Endless("json")}, "task"),
    Fault("Kubernetes log ignoring limitBytes: endless", RUNAI_CASE, "runai", RUNAI_ARGS,
          {LOG: Endless("text", content_type=TEXT)}, "logs", note="its newest lines may be missing"),
    Fault("Kubernetes pod: endless JSON", RUNAI_CASE, "runai", RUNAI_ARGS,
          {f"/api/v1/namespaces/{NS}/pods/{POD}": Endless("json")}, "pod"),
    Fault("OSMO workflow logs: endless text", OSMO_CASE, "osmo", OSMO_ARGS,
          {f"/api/workflow/{WF}/logs": Endless("text", content_type=TEXT)}, "logs",
          note="of a longer output: its first"),
    Fault("Run:ai history: a trickle past the deadline", RUNAI_CASE, "runai", RUNAI_ARGS,
          {f"/api/v1/workloads/{WID}/history": Endless("trickle", interval=0.2)}, "history",
          env={"WD_DEADLINE": "6"}, quick=False),
    Fault("Kubernetes log: headers, then silence", RUNAI_CASE, "runai", RUNAI_ARGS,
          {LOG: Endless("hang", content_type=TEXT)}, "logs", quick=False),
]  # fmt: skip


def answered(fault: Fault, run: Run) -> str | None:
    """None when ``run`` answered ``fault`` with a named gap (exit 0 by itself, a gap naming the read and the cut,
    peak RSS under :data:`RSS_LIMIT`); else why it is lost."""
    if run.code is None:
        return f"still running at the guard after {run.seconds:.0f} s (killed)"
    if run.code != 0:
        return f"exit {run.code}: {(run.stderr or run.stdout).strip()[-300:]}"
    if run.rss >= RSS_LIMIT:
        return f"peak RSS {run.rss / 2**20:.0f} MiB"
    named = [g for g in run.gaps if fault.gap in g.split(":")[0] and any(w in g for w in CUT_WORDS)]
    if fault.note is not None and fault.note in str((run.data or {}).get("report_text")):
        return None
    if not named:
        return f"no gap names the cut {fault.gap} read: {run.gaps}"
    return None


def named_gap(fault: Fault, run: Run) -> str:
    """The gap (or, for a stream read in part by design, the note) that names the cut read."""
    found = next((g for g in run.gaps if fault.gap in g.split(":")[0]), None)
    return found or f"note: ...{fault.note}..."


def try_fault(fault: Fault) -> tuple[Run, EndlessServer, str | None]:
    """Serve ``fault``, run the CLI against it: (run, server, why lost or None)."""
    snapshot = json.loads(fault.case.read_text())
    with EndlessServer(snapshot, fault.endless) as server:
        run = run_cli(server, list(fault.args), fault.system, fault.env)
    return run, server, answered(fault, run)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    faults = [f for f in FAULTS if f.quick] if "--quick" in argv else FAULTS
    if not RUNAI_CASE.is_file() or not OSMO_CASE.is_file():
        print(f"the cases are absent ({CASES})")
        return 2
    lost = 0
    print(f"{'fault':50} {'exit s':>7} {'peak RSS':>9} {'server sent':>12}  outcome")
    with EndlessServer(json.loads(RUNAI_CASE.read_text()), {}) as healthy:
        base = run_cli(healthy, list(RUNAI_ARGS), "runai")
    print(f"{'(no fault: the healthy case, for comparison)':50} {base.seconds:7.1f} {base.rss / 2**20:7.0f} MiB")
    for fault in faults:
        run, server, why = try_fault(fault)
        sent = sum(server.sent.values())
        outcome = "named gap" if why is None else f"LOST: {why}"
        lost += why is not None
        print(f"{fault.name:50} {run.seconds:7.1f} {run.rss / 2**20:7.0f} MiB {sent / 2**20:8.1f} MiB  {outcome}")
        if why is None:
            print("    " + named_gap(fault, run))
    print(f"faults tried {len(faults)} / answered with a named gap {len(faults) - lost} / lost {lost}")
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
