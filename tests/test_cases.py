"""Every snapshot case in ../shared/cases passes through the public CLI (`workload-doctor diagnose
--snapshot FILE --format json`), checked by the shared run-cases comparison."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CASES, SHARED

CLI = str(Path(sys.executable).parent / "workload-doctor")
CASE_FILES = sorted(CASES.rglob("*.json")) if CASES.is_dir() else []


def _run_cases_module() -> Any:
    path = SHARED / "tools" / "run-cases"
    loader = importlib.machinery.SourceFileLoader("run_cases", str(path))
    spec = importlib.util.spec_from_loader("run_cases", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@pytest.mark.skipif(not CASE_FILES, reason="../shared/cases is not beside this checkout")
@pytest.mark.parametrize("case_file", CASE_FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_case_passes_through_the_cli(case_file: Path) -> None:
    case = json.loads(case_file.read_text())
    result = subprocess.run(
        [CLI, "diagnose", "--snapshot", str(case_file), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=90,
    )
    problems = _run_cases_module().check(case, result.stdout, result.stderr)
    assert result.returncode == 0, result.stderr[-2000:]
    assert problems == [], problems
    assert "Traceback" not in result.stderr
