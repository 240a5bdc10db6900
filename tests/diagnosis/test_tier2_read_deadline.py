"""A Tier 2 read that hangs is a gap for that read only (issue 24, "Stuck" §3): each read has its own wall clock
(:data:`diagnosis.k8s.READ_SECONDS`, ended before the diagnosis deadline), so the pod, its events and the other
reads still arrive. Through the sandbox over loopback with the real ``kubernetes`` client; only the log hangs."""

from __future__ import annotations

import pytest

from diagnosis.render import render_text
from diagnosis.report import Category
from diagnosis.runai import tier2
from tests import builders as b
from tests.conftest import Diagnose

LOG = "/api/v1/namespaces/runai-nlp/pods/train-7-0-0/log"


def _snapshot() -> dict[str, object]:
    k8s_data = {
        "pods": [b.k8s_pod(state=b.terminated(137, reason="OOMKilled"))],
        "events": [],
        "nodes": [b.node()],
        "logs": [{"namespace": "runai-nlp", "pod": "train-7-0-0", "container": "train-7", "text": "step 1\n"}],
    }
    # the log answers after 10 s (past its own 1 s and the 6 s diagnosis deadline); nothing else is slow
    faults = [{"path": LOG, "delay_ms": 10000}]
    return b.snapshot(b.entry(b.workload(), b.failed_history("")), kubernetes=k8s_data, faults=faults)


@pytest.mark.asyncio
async def test_a_hung_log_read_is_a_gap_of_its_own_and_the_pod_still_decides(
    diagnose: Diagnose, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tier2, "READ_SECONDS", 1.0)
    report, sandbox = await diagnose(_snapshot(), deadline=6.0)
    assert report.category == Category.OOM_KILLED, render_text(report)  # the pod object arrived and decided
    gaps = [f"{g.what}: {g.why}" for g in report.gaps]
    log_gaps = [g for g in gaps if "no answer within 1 s" in g]
    assert len(log_gaps) == 1 and "log" in log_gaps[0], gaps
    assert not [g for g in gaps if "Tier 2 evidence" in g and "timed out" in g], gaps
    asked = {r.path for r in sandbox.requests}
    assert "/api/v1/namespaces/runai-nlp/events" in asked and "/api/v1/namespaces/runai-nlp/pods/train-7-0-0" in asked
