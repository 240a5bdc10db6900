"""bench/accuracy.py groups cases by kind (issue 19 §3): single pod, distributed, multi-container, OSMO, hostile.

The kind comes from a case's own ``kind`` label (every field case carries one) or, for the shared cases, from
what the snapshot holds. These tests read real case files, and run the report's table on results built by hand.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.accuracy import KINDS, Result, case_kind, table
from tests.conftest import SHARED

FIELD = Path(__file__).resolve().parent / "field"


def _case(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text())
    return data


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("runai/crash-app-traceback.json", "single pod"),
        ("runai/secrets-and-injection.json", "hostile"),
        ("runai/history-503-retry.json", "hostile"),
        ("osmo/osmo-failed-app.json", "OSMO"),
    ],
)
def test_shared_cases_get_their_kind_from_the_snapshot(name: str, kind: str) -> None:
    path = SHARED / "cases" / name
    if not path.is_file():
        pytest.skip(f"{name} is not in ../shared/cases")
    assert case_kind(_case(path)) == kind


def test_a_distributed_workload_and_a_pod_with_an_init_container_are_read_as_such() -> None:
    dist = {"runai": {"workloads": [{"workload": {"type": "Distributed"}, "pods": []}]}, "expect": {}}
    init = {
        "runai": {"workloads": [{"workload": {"type": "Training"}, "pods": [{"containers": [{}]}]}]},
        "kubernetes": {"pods": [{"spec": {"initContainers": [{}], "containers": [{}]}}]},
        "expect": {},
    }
    assert case_kind(dist) == "distributed"
    assert case_kind(init) == "multi-container"
    assert case_kind({**init, "kind": "hostile"}) == "hostile", "a label wins over the content"


def test_every_field_case_carries_a_known_kind_and_the_new_kinds_are_covered() -> None:
    files = sorted((FIELD / "cases").glob("*.json")) + sorted((FIELD / "pending").glob("*.json"))
    kinds = [_case(f).get("kind") for f in files]
    assert all(isinstance(k, str) and case_kind({"kind": k}) in KINDS for k in kinds), kinds
    assert kinds.count("distributed") + kinds.count("multi-container") >= 40


def test_the_by_kind_table_shows_pass_rate_and_confident_wrong_per_kind() -> None:
    ok = Result("f", Path("a.json"), "a", "diagnosed", "OOM_KILLED", "distributed", "diagnosed", "OOM_KILLED")
    wrong = Result(
        "f", Path("b.json"), "b", "diagnosed", "UNKNOWN", "distributed", "diagnosed", "CRASH_APP_ERROR", ["category"]
    )
    rows: dict[str, list[Result]] = {k: [] for k in KINDS} | {"distributed": [ok, wrong]}
    lines = table("by kind", rows, order=list(KINDS))
    dist = next(line for line in lines if line.startswith("distributed"))
    assert dist.split() == ["distributed", "1", "/", "2", "50.0", "1"]
    assert [line.split()[0] for line in lines[1:]] == ["single", "distributed", "multi-container", "OSMO", "hostile"]
