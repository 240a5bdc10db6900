"""The open cases run through the CLI once per test session, shared by every test that reads their answers
(``tests/test_cases.py`` checks them, ``tests/handlers/test_card_budget.py`` measures their cards).

Each case is the command line ``workload-doctor diagnose --snapshot FILE --format json``, run by the real entry
point (:func:`bot.cli.main`) in a process of its own forked from a warm interpreter (:mod:`tests.case_worker`:
the imports are paid once, not once per case), two at a time (the machine has two cores).
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tests.paths import SHARED

CASES = SHARED / "cases"
DIGEST_CASES = SHARED / "cases-next" / "digest"
CASE_FILES = (sorted(CASES.rglob("*.json")) if CASES.is_dir() else []) + (
    sorted(DIGEST_CASES.glob("*.json")) if DIGEST_CASES.is_dir() else []
)
WORKERS = max(2, min(4, os.cpu_count() or 2))
#: one case's command line at most this long (seconds); a hung case fails alone instead of the whole session
CASE_TIMEOUT = 120


def run_cases(files: Sequence[Path]) -> dict[Path, subprocess.CompletedProcess[str]]:
    """Each of ``files`` as ``diagnose --snapshot FILE --format json`` in a forked warm process, in parallel.

    A case that does not finish within :data:`CASE_TIMEOUT` gets a result with return code -1 and says so on
    stderr."""
    if not files:
        return {}
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.case_worker"])
    from tests import case_worker

    with ctx.Pool(WORKERS, maxtasksperchild=1) as pool:
        pending = {
            f: pool.apply_async(case_worker.run, (["diagnose", "--snapshot", str(f), "--format", "json"],))
            for f in files
        }
        out: dict[Path, subprocess.CompletedProcess[str]] = {}
        for f, result in pending.items():
            try:
                out[f] = result.get(timeout=CASE_TIMEOUT)
            except multiprocessing.TimeoutError:
                out[f] = subprocess.CompletedProcess([str(f)], -1, "", f"case timed out after {CASE_TIMEOUT} s")
        return out


@functools.cache
def case_runs() -> dict[Path, subprocess.CompletedProcess[str]]:
    """Every case of :data:`CASE_FILES` run once (cached for the session)."""
    return run_cases(CASE_FILES)
