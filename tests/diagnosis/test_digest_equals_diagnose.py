"""Issue 27: one classification, proven. A digest row equals ``/diagnose`` on that workload given the same evidence.

For every digest case (``../shared/cases-next/digest`` and the digest fixtures of ``tests/fixtures``), every Run:ai
workload that the window and scope could make a failure (phase ``Failed`` or ``Stopped``, ``phaseUpdatedAt`` in the
window, on a scanned cluster and project, live or deleted) is diagnosed alone, with Tier 2 off as the scan reads
(the default :class:`~diagnosis.config.KubeConfig`: no context), at the digest's ``now`` with ``lookback`` = its
window; so is every OSMO workflow that failed in the window in a scanned pool. Then:

- a Run:ai diagnosis with outcome ``diagnosed`` (for a ``Stopped`` workload: a scheduling-policy stop), or an OSMO
  one with outcome ``failed``, is exactly one row, of the same category;
- a preempted one (``route_preempted``) is no row, and is counted apart as preempted;
- anything else is no row; and no row is anything but one of these.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from diagnosis.answer import Backends, answer, answer_digest
from diagnosis.config import OsmoConfig, RunaiConfig
from diagnosis.digests import Digest, DigestAsk, in_window
from diagnosis.question import Question
from diagnosis.report import Category, Outcome, Report
from diagnosis.units import parse_time
from sandbox.server import Sandbox
from tests.paths import SHARED, TESTS


def _cases() -> list[Path]:
    found: dict[str, Path] = {}
    for folder in (SHARED / "cases-next" / "digest", TESTS / "fixtures" / "cases" / "digest"):
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            found.setdefault(path.read_text(), path)  # a fixture that copies a shared case runs once
    return list(found.values())


CASES = _cases()


def _candidates(snapshot: dict[str, Any], ask: DigestAsk, start: datetime, end: datetime) -> list[dict[str, Any]]:
    """The Run:ai workloads the window and scope could make failures (FORMAT.md "What is a failure" 1-3)."""
    out = []
    for entry in (snapshot.get("runai") or {}).get("workloads") or []:
        w = entry["workload"]
        if w.get("phase") not in ("Failed", "Stopped"):
            continue
        if not in_window(parse_time(w.get("phaseUpdatedAt")), start, end):
            continue
        if ask.cluster_id is not None and w.get("clusterId") != ask.cluster_id:
            continue
        if ask.projects is not None and w.get("projectName") not in ask.projects:
            continue
        out.append(w)
    return out


def _failed_workflows(snapshot: dict[str, Any], ask: DigestAsk, start: datetime, end: datetime) -> list[str]:
    out = []
    for entry in (snapshot.get("osmo") or {}).get("workflows") or []:
        q = entry["query"]
        ended = parse_time(q["end_time"] + "Z") if q.get("end_time") else None
        if not str(q.get("status") or "").startswith("FAILED") or not in_window(ended, start, end):
            continue
        if ask.pools is not None and q.get("pool") not in ask.pools:
            continue
        out.append(str(q["name"]))
    return out


async def _both(snapshot: dict[str, Any], url: str) -> tuple[Digest, dict[str, Report], dict[str, Report], DigestAsk]:
    """The digest, and the single diagnosis of each candidate (Run:ai by id, OSMO by workflow ID)."""
    now = parse_time(snapshot["now"])
    assert now is not None
    backends = Backends(
        runai=RunaiConfig(url, "sandbox", "sandbox", console_url=url) if "runai" in snapshot else None,
        osmo=OsmoConfig(url, "sandbox") if "osmo" in snapshot else None,
        now=lambda: now,
    )
    ask = DigestAsk.model_validate(snapshot["ask"])
    digest = await answer_digest(ask, backends)
    since = digest.since
    runai: dict[str, Report] = {}
    for w in _candidates(snapshot, ask, digest.start, digest.end):
        question = Question(workload_id=w["id"], cluster_id=w["clusterId"], intent="terminal", lookback=since)
        runai[w["id"]] = await answer(question, backends)
    osmo: dict[str, Report] = {}
    for name in _failed_workflows(snapshot, ask, digest.start, digest.end):
        osmo[name] = await answer(Question(workflow_id=name), backends)
    return digest, runai, osmo, ask


@pytest.mark.skipif(not CASES, reason="no digest case beside this checkout")
@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_every_row_equals_the_single_diagnosis_of_its_workload(path: Path) -> None:
    snapshot = json.loads(path.read_text())
    with Sandbox(snapshot) as sandbox:
        digest, runai, osmo, _ask = asyncio.run(_both(snapshot, sandbox.url))
    rows = {(i.system, i.id): i for g in digest.groups for i in g.items}
    preempted = {i.id for i in digest.preempted}
    phases = {e["workload"]["id"]: e["workload"]["phase"] for e in (snapshot.get("runai") or {}).get("workloads", [])}
    checked = 0
    for wid, report in runai.items():
        row = rows.pop(("runai", wid), None)
        counts = report.outcome == Outcome.DIAGNOSED and (
            phases[wid] == "Failed" or report.category == Category.SCHEDULING_POLICY_TERMINATED
        )
        if counts:
            assert row is not None, f"{report.identity.name}: /diagnose says {report.category}, the digest has no row"
            assert report.category is not None and row.category == report.category.value, (
                f"{row.name}: row {row.category}, /diagnose {report.category}"
            )
            checked += 1
        else:
            assert row is None, f"{row and row.name}: a row, but /diagnose answers {report.outcome}"
        assert (wid in preempted) == (report.outcome == Outcome.ROUTE_PREEMPTED), report.identity.name
    for name, report in osmo.items():
        row = next((rows.pop(key) for key, i in list(rows.items()) if i.system == "osmo" and i.name == name), None)
        assert row is not None, f"{name}: failed in the window, no row"
        assert report.outcome == Outcome.FAILED and report.category is not None, (name, report.outcome)
        assert row.category == report.category.value, f"{name}: row {row.category}, /diagnose {report.category}"
        checked += 1
    assert rows == {}, f"rows that no single diagnosis gives: {sorted(i.name for i in rows.values())}"
    assert checked == digest.failed and digest.failed == snapshot["expect"]["digest"]["failed"]
