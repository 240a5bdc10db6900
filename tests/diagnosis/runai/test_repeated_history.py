"""Repeated history records count once wherever they enter (issue 24): the same records served again on one
page, again under other ids, or by the events endpoint as well as by history are one occurrence each, and the
gap says the repeats were dropped. Through the real client against the sandbox serving a shared case whose
workload failed twice (OOM) in its lookback."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from diagnosis.report import Category, Report
from tests.conftest import CASES, Diagnose

CASE = CASES / "runai" / "oom-recurring-tier2.json"
pytestmark = [pytest.mark.asyncio, pytest.mark.skipif(not CASE.is_file(), reason="../shared/cases is absent")]
TRUE_COUNT = 2


def _case() -> dict[str, Any]:
    return json.loads(CASE.read_text())


def _history(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    return snapshot["runai"]["workloads"][0]["history"]


def _reissued(records: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``records`` again, each event (and the record) under a new id: the same records, not new evidence."""
    out = copy.deepcopy(records)
    for i, rec in enumerate(out):
        rec["id"] = f"again-{n}-{i}"
        event = rec.get("spec", {}).get("event")
        if isinstance(event, dict) and event.get("id"):
            event["id"] = f"{event['id']}-again-{n}"
    return out


def _served_thrice_in_a_row(snapshot: dict[str, Any]) -> None:
    _history(snapshot)[:] = [rec for rec in _history(snapshot) for _ in range(3)]


def _under_new_ids(snapshot: dict[str, Any]) -> None:
    history = _history(snapshot)
    history[:] = history + _reissued(history, 1) + _reissued(history, 2)


def _also_from_the_events_endpoint(snapshot: dict[str, Any]) -> None:
    events = [rec["spec"]["event"] for rec in _reissued(_history(snapshot), 3) if rec.get("spec", {}).get("event")]
    snapshot["runai"]["workloads"][0]["events"] = events + copy.deepcopy(events)


def _history_gap(report: Report) -> str:
    return " ".join(g.why for g in report.gaps if g.what.startswith("history"))


async def test_the_healthy_answer_counts_two(diagnose: Diagnose) -> None:
    report, _ = await diagnose(_case())
    assert report.category == Category.OOM_KILLED and report.occurrences == TRUE_COUNT


@pytest.mark.parametrize("repeat", [_served_thrice_in_a_row, _under_new_ids])
async def test_repeated_history_records_count_once_and_the_gap_says_so(diagnose: Diagnose, repeat: Any) -> None:
    snapshot = _case()
    repeat(snapshot)
    report, _ = await diagnose(snapshot)
    assert report.category == Category.OOM_KILLED
    assert report.occurrences == TRUE_COUNT, f"{report.occurrences} occurrences where {TRUE_COUNT} are true"
    assert report.recurrence is not None and len(report.recurrence.occurrences) == TRUE_COUNT
    gap = _history_gap(report)
    assert "dropped (counted once)" in gap, [(g.what, g.why) for g in report.gaps]


async def test_events_listed_by_history_and_the_events_endpoint_count_once(diagnose: Diagnose) -> None:
    snapshot = _case()
    _also_from_the_events_endpoint(snapshot)
    report, _ = await diagnose(snapshot)
    assert report.category == Category.OOM_KILLED
    assert report.occurrences == TRUE_COUNT, f"{report.occurrences} occurrences where {TRUE_COUNT} are true"
