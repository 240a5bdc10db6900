"""The field corpus (tests/field/cases, built from public reports; see tests/field/README.md) passes through
the public CLI (`workload-doctor diagnose --snapshot FILE --format json`), checked by the shared run-cases
comparison. The CLI subprocesses run in parallel once per module; each case is its own test.

tests/field/pending holds the cases the product answers wrongly today; they are not run here.
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED
from tests.test_cases import _run, _run_cases_module

FIELD = Path(__file__).resolve().parent / "field" / "cases"
CASE_FILES = sorted(FIELD.glob("*.json"))
RUN_CASES = SHARED / "tools" / "run-cases"
WORKERS = 3

pytestmark = [
    pytest.mark.skipif(not RUN_CASES.is_file(), reason="../shared is not beside this checkout"),
    # the module fixture runs every field case (70+) through the CLI inside the first test's time budget
    # (1230 s for 76 cases on a loaded 2-core machine)
    pytest.mark.timeout(2400),
]


@pytest.fixture(scope="module")
def field_results() -> dict[Path, subprocess.CompletedProcess[str]]:
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return dict(zip(CASE_FILES, pool.map(_run, CASE_FILES), strict=True))


@pytest.fixture(scope="module")
def check() -> Any:
    return _run_cases_module().check


def test_field_corpus_is_present() -> None:
    assert len(CASE_FILES) >= 40, "tests/field/cases should hold the field corpus"
    sources = [json.loads(f.read_text())["source"] for f in CASE_FILES]
    assert len(set(sources)) == len(sources), "each field case comes from its own public report"


@pytest.mark.parametrize("case_file", CASE_FILES, ids=lambda p: p.stem)
def test_field_case_passes_through_the_cli(
    case_file: Path, field_results: dict[Path, subprocess.CompletedProcess[str]], check: Any
) -> None:
    case = json.loads(case_file.read_text())
    result = field_results[case_file]
    problems = check(case, result.stdout, result.stderr)
    assert result.returncode == 0, result.stderr[-2000:]
    assert problems == [], problems
    assert "Traceback" not in result.stderr
