"""The field corpus (tests/field/cases, built from public reports; see tests/field/README.md) passes through
the public CLI (`workload-doctor diagnose --snapshot FILE --format json`), checked by the shared run-cases
comparison. The CLI subprocesses run in parallel once per module; each case is its own test.

tests/field/synthetic holds cases in the same format written without one public report behind them (run here
too); tests/field/pending holds the cases the product answers wrongly today; they are not run here.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.case_runs import run_cases
from tests.conftest import SHARED
from tests.test_cases import _run_cases_module

FIELD = Path(__file__).resolve().parent / "field" / "cases"
#: cases in the same format whose wording no single public report gives (a tester's worlds: phrasing, job retries,
#: LimitRange defaults); run like the field corpus, not counted in it
SYNTHETIC = FIELD.parent / "synthetic"
CASE_FILES = sorted(FIELD.glob("*.json")) + sorted(SYNTHETIC.glob("*.json"))
RUN_CASES = SHARED / "tools" / "run-cases"

pytestmark = [
    pytest.mark.skipif(not RUN_CASES.is_file(), reason="../shared is not beside this checkout"),
    # the module fixture runs every field case (70+) inside the first test's time budget; each case has its own
    # limit (tests.case_runs.CASE_TIMEOUT), so a hung one fails alone
    pytest.mark.timeout(1200),
]


@pytest.fixture(scope="module")
def field_results() -> dict[Path, subprocess.CompletedProcess[str]]:
    return run_cases(CASE_FILES)


@pytest.fixture(scope="module")
def check() -> Any:
    return _run_cases_module().check


def test_field_corpus_is_present() -> None:
    field = [f for f in CASE_FILES if f.parent == FIELD]
    assert len(field) >= 40, "tests/field/cases should hold the field corpus"
    # one report may be embedded once in each kind of world (a Run:ai pod's Xid 79 and an OSMO task's)
    sources = [(case["source"], case["kind"]) for case in (json.loads(f.read_text()) for f in field)]
    assert len(set(sources)) == len(sources), "each field case of a kind comes from its own public report"


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
