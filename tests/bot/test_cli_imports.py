"""The CLI imports only what a command uses (issue 26 §2): ``--help`` loads none of the diagnosis core, and a
diagnosis loads neither ``capture`` nor the bot's Slack, Redis and feedback machinery.

Each command runs the installed ``workload-doctor`` script in a fresh interpreter under ``-X importtime``, which
names every module the process imported on stderr. Timings are the bench's business, never asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.paths import ROOT

CLI = str(Path(sys.executable).parent / "workload-doctor")

#: Modules ``--help`` must not import: the word list, the diagnosis core and the libraries only commands use.
NOT_FOR_HELP = [
    "rich",  # typer renders plain help: rich's took about 0.15 s
    "wordfreq",
    "rapidfuzz",
    "kubernetes",
    "slack_bolt",
    "slack_sdk",
    "redis",
    "prometheus_client",
    "pydantic",
    "httpx",
    "uvicorn",
    "starlette",
    "ahocorasick_rs",
    "diagnosis.capture",
    "diagnosis.question",
    "diagnosis.redact",
    "diagnosis.report",
    "diagnosis.backends",
    "diagnosis.answer",
    "sandbox.server",
    "handlers",
    "bot.app",
    "bot.feedback_store",
]
#: Modules a diagnosis (of a snapshot whose question has no text to read) must not import.
NOT_FOR_DIAGNOSE = [
    "wordfreq",
    "diagnosis.capture",
    "slack_bolt",
    "slack_sdk",
    "redis",
    "bot.app",
    "bot.feedback_store",
    "bot.feedback_cases",
    "handlers.feedback_world",
]


def imported(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run ``workload-doctor *args`` under ``-X importtime``: the process and every module name it imported."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", CLI, *args], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    names = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    return out, names


def loaded(names: set[str], module: str) -> bool:
    return module in names or any(n.startswith(module + ".") for n in names)


def test_help_imports_none_of_the_heavy_modules() -> None:
    out, names = imported("--help")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "diagnose" in out.stdout and "digest" in out.stdout  # the commands are all there
    assert "bot.cli" in names and "bot.cli_osmo" in names  # the list is read (a test that cannot fail is not one)
    assert [m for m in NOT_FOR_HELP if loaded(names, m)] == []


def test_diagnose_imports_what_it_uses_and_nothing_of_capture_slack_or_redis(tmp_path: Path) -> None:
    snapshot = json.loads((ROOT / "sandbox" / "snapshots" / "demo.json").read_text())
    snapshot["ask"]["text"] = None  # the question by its fields: no text, so no word list to read it with
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(snapshot))
    out, names = imported("diagnose", "--snapshot", str(path))
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("DIAGNOSED: OOM_KILLED")
    assert loaded(names, "diagnosis.answer") and loaded(names, "kubernetes")  # what it uses: the core, Tier 2
    assert [m for m in NOT_FOR_DIAGNOSE if loaded(names, m)] == []
