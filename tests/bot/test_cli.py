"""The CLI: answers exit 0 whatever the outcome; bad input is one clear line and a non-zero exit."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests import builders as b
from tests.paths import ROOT

CLI = str(Path(sys.executable).parent / "workload-doctor")


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {"PATH": "/usr/bin:/bin", "HOME": "/tmp"}
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60, env={**base, **(env or {})})


def write(tmp_path: Path, snap: dict[str, object]) -> str:
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap))
    return str(path)


def test_demo_snapshot_prints_a_redacted_text_report() -> None:
    r = run("diagnose", "--snapshot", str(ROOT / "sandbox" / "snapshots" / "demo.json"), "--verbose")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("DIAGNOSED: OOM_KILLED")
    assert "recurring" in r.stdout
    assert "AKIAIOSFODNN7EXAMPLE" not in r.stdout + r.stderr
    assert "[REDACTED]" in r.stdout


def test_needs_input_is_an_answer_and_exits_zero(tmp_path: Path) -> None:
    snap = b.snapshot(b.entry(b.workload()), ask={"text": "why did train-7 fail in project nlp?"})
    r = run("diagnose", "--snapshot", write(tmp_path, snap), "--format", "json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["outcome"] == "needs_input"
    assert "cluster" in out["report_text"]
    assert out["blocks"], "the Block Kit message the bot would post"


def test_options_override_the_snapshot_ask(tmp_path: Path) -> None:
    snap = b.snapshot(b.entry(b.workload()), ask={"text": "why did train-7 fail in project nlp?"})
    r = run("diagnose", "--snapshot", write(tmp_path, snap), "--format", "json", "--cluster-id", b.CLUSTER)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["outcome"] != "needs_input"


def test_bad_lookback_is_one_line(tmp_path: Path) -> None:
    snap = b.snapshot(b.entry(b.workload()))
    r = run("diagnose", "--snapshot", write(tmp_path, snap), "--lookback", "seven days")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "lookback" in r.stderr
    assert "Traceback" not in r.stderr


def test_malformed_snapshot_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    r = run("diagnose", "--snapshot", str(path))
    assert r.returncode == 2
    assert "not valid JSON" in r.stderr and "Traceback" not in r.stderr
    path.write_text(json.dumps({"format": "snapshot/9"}))
    r = run("diagnose", "--snapshot", str(path))
    assert r.returncode == 2 and "snapshot/1" in r.stderr
    r = run("diagnose", "--snapshot", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "not found" in r.stderr


def test_missing_settings_is_one_line() -> None:
    r = run("diagnose", "why did train-7 fail?", "--cluster-id", b.CLUSTER, "--project", "nlp")
    assert r.returncode == 2
    assert "RUNAI_BASE_URL" in r.stderr and "Traceback" not in r.stderr


def test_unreachable_api_is_one_line_after_retries() -> None:
    env = {"RUNAI_BASE_URL": "http://127.0.0.1:9", "RUNAI_CLIENT_ID": "a", "RUNAI_CLIENT_SECRET": "b"}
    r = run("diagnose", "--workload", "train-7", "--project", "nlp", "--cluster-id", b.CLUSTER, env=env)
    assert r.returncode == 2
    assert "did not answer" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_live_settings_reach_the_sandbox(tmp_path: Path) -> None:
    """The real clients, pointed by environment at a sandbox started by `workload-doctor sandbox`."""
    from sandbox.server import Sandbox

    msg = "Pod x failed: container train-7 terminated with reason OOMKilled (exit code 137)"
    snap = b.snapshot(b.entry(b.workload(phaseMessage=msg), history=b.failed_history(msg)))
    with Sandbox(snap) as sb:
        env = {"RUNAI_BASE_URL": sb.url, "RUNAI_CLIENT_ID": "a", "RUNAI_CLIENT_SECRET": "b"}
        r = run(
            "diagnose",
            "--workload",
            "train-7",
            "--project",
            "nlp",
            "--cluster-id",
            b.CLUSTER,
            "--format",
            "json",
            env=env,
        )
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["category"] == "OOM_KILLED"
