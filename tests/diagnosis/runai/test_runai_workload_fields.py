"""Issue 9 §5: evidence the Run:ai workload object already offers (runningPods of requestedPods,
totalPendingTimeSeconds, requested node pools), end to end through the sandbox."""

from __future__ import annotations

import pytest

from diagnosis.render import render_text
from diagnosis.report import Outcome
from tests import builders as b
from tests.conftest import Diagnose

pytestmark = pytest.mark.asyncio


async def test_a_pending_answer_says_how_long_and_in_which_node_pools(diagnose: Diagnose) -> None:
    wl = b.workload(
        phase="Pending",
        totalPendingTimeSeconds=8100,
        requestedNodePools=["h100", "a100"],
        pendingSchedulingMessages=[{"phaseReason": "Unschedulable", "userMessage": "0/8 nodes are available"}],
    )
    snap = b.snapshot(b.entry(wl, pods=[]))
    report, _ = await diagnose(snap, intent="current")
    assert report.outcome == Outcome.ROUTE_PENDING
    text = render_text(report)
    assert "8100 s (2 h 15 min)" in text and "h100, a100" in text


async def test_a_partly_running_distributed_workload_says_so(diagnose: Diagnose) -> None:
    wl = b.workload(phase="Running", type="Distributed", runningPods=3, requestedPods={"number": 4})
    snap = b.snapshot(b.entry(wl, pods=[b.pod(k8s_phase="Running")]))
    report, _ = await diagnose(snap)
    assert report.outcome == Outcome.ASK_PAST_RUN
    assert "3 of 4 requested (partly running)" in render_text(report)


async def test_odd_counts_are_not_known_never_a_crash(diagnose: Diagnose) -> None:
    wl = b.workload(phase="Running", runningPods="many", requestedPods={"number": None}, totalPendingTimeSeconds=-5)
    snap = b.snapshot(b.entry(wl, pods=[b.pod(k8s_phase="Running")]))
    report, _ = await diagnose(snap)
    assert report.outcome == Outcome.ASK_PAST_RUN
    assert "pods running" not in render_text(report)
