"""What one occurrence is (FORMAT.md "Evidence", issue 19 §1): the pods of one incident (the first failure and
its consequences, however long the peers' collective timeouts take) are one; a new attempt (a Job's retry with
a new pod) is another, however soon it fails; without creation times a phase update describes what ended just
before it, as before."""

from __future__ import annotations

from typing import Any

import pytest

from diagnosis.report import Category
from tests import builders as b
from tests.conftest import Diagnose

pytestmark = pytest.mark.asyncio


def _pod(name: str, created: str | None, phase: str = "Error") -> dict[str, Any]:
    pod = b.pod(name, k8s_phase=phase)
    if created is None:
        pod.pop("createdAt")
    else:
        pod["createdAt"] = created
    return pod


OOM = "container train-7 terminated with reason OOMKilled, exit code 137"


def _failed(pod: str, minutes: float, message: str = OOM) -> dict[str, Any]:
    return b.event("PodFailed", f"pod {pod} failed: {message}", b.ago(minutes=minutes), pod=pod)


def _snapshot(pods: list[dict[str, Any]], events: list[dict[str, Any]], failed_at: float) -> dict[str, Any]:
    history = [
        b.phase_update("Creating", b.ago(hours=3)),
        b.phase_update("Running", b.ago(minutes=170)),
        *events,
        b.phase_update("Failed", b.ago(minutes=failed_at), "Workload failed"),
    ]
    return b.snapshot(b.entry(b.workload(phaseUpdatedAt=b.ago(minutes=failed_at)), history=history, pods=pods))


async def test_a_retry_with_a_new_pod_is_another_occurrence_however_soon(diagnose: Diagnose) -> None:
    pods = [_pod("train-7-abcde", b.ago(minutes=60)), _pod("train-7-fghij", b.ago(minutes=19))]
    events = [_failed("train-7-abcde", 20), _failed("train-7-fghij", 15)]
    report, _ = await diagnose(_snapshot(pods, events, failed_at=14))
    assert report.category == Category.OOM_KILLED
    assert report.occurrences == 2 and report.recurring


async def test_peers_ending_long_after_the_first_failure_are_one_occurrence(diagnose: Diagnose) -> None:
    """An NCCL watchdog ends the master 25 minutes after the worker failed: one incident."""
    pods = [_pod("train-7-worker-0", b.ago(minutes=150)), _pod("train-7-master-0", b.ago(minutes=150))]
    events = [_failed("train-7-worker-0", 40), _failed("train-7-master-0", 15, "NCCL watchdog timeout")]
    report, _ = await diagnose(_snapshot(pods, events, failed_at=14))
    assert report.category == Category.OOM_KILLED
    assert report.occurrences == 1 and not report.recurring


async def test_without_creation_times_the_phase_update_describes_what_ended_before_it(diagnose: Diagnose) -> None:
    pods = [_pod("train-7-worker-0", None), _pod("train-7-worker-1", None)]
    events = [_failed("train-7-worker-0", 18), _failed("train-7-worker-1", 16)]
    report, _ = await diagnose(_snapshot(pods, events, failed_at=15))
    assert report.occurrences == 1
