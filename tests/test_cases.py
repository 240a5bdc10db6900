"""Every snapshot case in ../shared/cases (and the digest cases in ../shared/cases-next/digest) passes through
the public CLI (`workload-doctor diagnose --snapshot FILE --format json`), checked by the shared run-cases
comparison. The CLI subprocesses run in parallel, once per session; each case is its own test."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests import case_runs as case_runs_module
from tests.paths import SHARED

CASE_FILES = case_runs_module.CASE_FILES


def _run_cases_module() -> Any:
    path = SHARED / "tools" / "run-cases"
    loader = importlib.machinery.SourceFileLoader("run_cases", str(path))
    spec = importlib.util.spec_from_loader("run_cases", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def case_results() -> dict[Path, subprocess.CompletedProcess[str]]:
    return case_runs_module.case_runs()


@pytest.mark.skipif(not CASE_FILES, reason="../shared/cases is not beside this checkout")
@pytest.mark.timeout(1200)  # the first test runs every case (the session fixture); each case has its own limit
@pytest.mark.parametrize("case_file", CASE_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_case_passes_through_the_cli(
    case_file: Path, case_results: dict[Path, subprocess.CompletedProcess[str]]
) -> None:
    case = json.loads(case_file.read_text())
    result = case_results[case_file]
    problems = _run_cases_module().check(case, result.stdout, result.stderr)
    assert result.returncode == 0, result.stderr[-2000:]
    assert problems == [], problems
    assert "Traceback" not in result.stderr
    # the sandbox enforces the shipped RBAC (issue 22 §1): no read of the product may be refused
    assert "refused by the shipped RBAC" not in result.stderr, result.stderr[-2000:]
