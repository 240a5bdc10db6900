"""The open cases run through the public CLI once per test session, shared by every test that reads their
answers (``tests/test_cases.py`` checks them, ``tests/handlers/test_card_budget.py`` measures their cards).

Each case is ``workload-doctor diagnose --snapshot FILE --format json`` in its own subprocess, several at once
(the machine has two cores: the subprocesses wait on loopback HTTP as much as they compute)."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.paths import SHARED

CLI = str(Path(sys.executable).parent / "workload-doctor")
CASES = SHARED / "cases"
DIGEST_CASES = SHARED / "cases-next" / "digest"
CASE_FILES = (sorted(CASES.rglob("*.json")) if CASES.is_dir() else []) + (
    sorted(DIGEST_CASES.glob("*.json")) if DIGEST_CASES.is_dir() else []
)
WORKERS = max(2, min(4, (os.cpu_count() or 2) + 1))


def run_case(case_file: Path) -> subprocess.CompletedProcess[str]:
    """One case through the CLI (stdout is the JSON answer; 120 s at most)."""
    return subprocess.run(
        [CLI, "diagnose", "--snapshot", str(case_file), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )


@functools.cache
def case_runs() -> dict[Path, subprocess.CompletedProcess[str]]:
    """Every case of :data:`CASE_FILES` run once (cached for the session)."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return dict(zip(CASE_FILES, pool.map(run_case, CASE_FILES), strict=True))
