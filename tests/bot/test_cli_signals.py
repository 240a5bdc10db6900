"""SIGTERM (issue 15 §2): the CLI prints one line and exits 143, and ``serve --snapshot`` / ``diagnose --snapshot``
remove the sandbox's temporary kubeconfig on the way out (the default handler killed the process without a
line and left the file behind). ``serve`` is a server: SIGTERM is how it is told to stop, so it ends with an
info line and exit 0 (issue 22 §3).

Each test runs the real entry point in a subprocess with ``TMPDIR`` pointing at the test's directory, waits
for the kubeconfig to appear there (the sandbox is up), sends SIGTERM and checks stderr, the exit code and
that the file is gone.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests import builders as b
from tests.paths import ROOT

CLI = str(Path(sys.executable).parent / "workload-doctor")
TIER2_CASE = ROOT.parent / "shared" / "cases" / "runai" / "oom-recurring-tier2.json"


def _wait(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _kubeconfigs(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("wd-kubeconfig-*"))


def _start(args: list[str], tmp: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    base = {"PATH": "/usr/bin:/bin", "HOME": str(tmp), "TMPDIR": str(tmp)}
    return subprocess.Popen(
        [CLI, *args],
        env={**base, **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(tmp),
    )


def _terminate(proc: subprocess.Popen[str]) -> tuple[str, str]:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def _slow_tier2_snapshot(tmp: Path) -> Path:
    """A Run:ai snapshot with Tier 2 (so the sandbox writes a kubeconfig) whose control plane stalls."""
    snap = json.loads(TIER2_CASE.read_text()) if TIER2_CASE.exists() else _builder_snapshot()
    snap["faults"] = [{"path": "/api/v1/workloads*", "delay_ms": 60_000}]
    path = tmp / "slow.json"
    path.write_text(json.dumps(snap))
    return path


def _builder_snapshot() -> dict[str, object]:
    snap = b.snapshot(b.entry(b.workload()), ask={"text": "why did train-7 fail?", "cluster_id": b.CLUSTER})
    snap["kubernetes"] = {"pods": [], "events": [], "nodes": [], "logs": []}
    return snap


def test_sigterm_during_a_diagnosis_is_one_line_exit_143_and_no_kubeconfig_left(tmp_path: Path) -> None:
    proc = _start(["diagnose", "--snapshot", str(_slow_tier2_snapshot(tmp_path))], tmp_path)
    try:
        _wait(lambda: bool(_kubeconfigs(tmp_path)) or proc.poll() is not None, 60, "the sandbox's kubeconfig")
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.3)  # inside the stalled request
    finally:
        out, err = _terminate(proc)
    assert proc.returncode == 143, (proc.returncode, err)
    assert err.strip() == "workload-doctor: error: terminated (SIGTERM)", err
    assert "Traceback" not in err and out == ""
    assert _kubeconfigs(tmp_path) == []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _healthy(port: int) -> bool:
    import httpx

    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_sigterm_stops_serve_snapshot_cleanly_and_removes_its_kubeconfig(tmp_path: Path) -> None:
    snapshot = tmp_path / "world.json"
    snapshot.write_text(json.dumps(_builder_snapshot()))
    port = _free_port()
    env = {
        "SLACK_BOT_TOKEN": "xoxb-sigterm-test",
        "SLACK_SIGNING_SECRET": "sigterm-test-secret",
        # Nothing listens there: the bot answers without Redis (in-process memory) and never reaches Slack.
        "REDIS_URL": "redis://127.0.0.1:1",
        "SLACK_API_URL": "http://127.0.0.1:1/api/",
    }
    args = ["serve", "--http", "--host", "127.0.0.1", "--port", str(port), "--snapshot", str(snapshot)]
    proc = _start(args, tmp_path, env)
    try:
        _wait(lambda: _healthy(port) or proc.poll() is not None, 90, "the bot's /healthz")
        assert proc.poll() is None, proc.communicate()
        assert len(_kubeconfigs(tmp_path)) == 1
    finally:
        _out, err = _terminate(proc)
    # a server is stopped by SIGTERM (issue 22 §3): an info line and exit 0, not an error
    assert proc.returncode == 0, (proc.returncode, err[-2000:])
    assert err.strip().splitlines()[-1].endswith("INFO bot.cli: stopped (SIGTERM)"), err[-2000:]
    assert "Traceback" not in err and " ERROR " not in err and "workload-doctor: error" not in err
    assert _kubeconfigs(tmp_path) == []


def test_sigterm_handler_is_installed_by_the_entry_point_only() -> None:
    """Importing the CLI (tests, benches) leaves the process's SIGTERM handling alone; ``main`` installs it."""
    code = (
        "import signal, bot.cli, bot.cli_app\n"
        "assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL\n"
        "bot.cli_app.install_sigterm()\n"
        "assert signal.getsignal(signal.SIGTERM) is bot.cli_app._on_sigterm\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
