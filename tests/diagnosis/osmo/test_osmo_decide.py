"""OSMO's decide and phrase steps without HTTP (issue 10 §3): what was read -> category or PENDING verdict ->
headline and next action, as pure table tests beside the sandbox tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from diagnosis.osmo.categories import category, pending_verdict
from diagnosis.osmo.classify import failed_tasks, root_failed_task
from diagnosis.osmo.models import NodeResources, PoolQuota, TaskRequest, Workflow
from diagnosis.osmo.report_failed import FailedInputs, decide_failed, failed_evidence, failed_facts, failed_headline
from diagnosis.osmo.report_pending import QueuedInputs, decide_queued, queued_facts
from diagnosis.osmo.reporting import OsmoReportBuilder
from diagnosis.report import Category, Outcome

NOW = datetime(2026, 11, 28, 16, 0, tzinfo=UTC)


def workflow(status: str, *tasks: dict[str, Any], pool: str = "h100", priority: str = "NORMAL") -> Workflow:
    """One group holding ``tasks`` (name, status, exit_code, failure_message as given)."""
    group_status = "SCHEDULING" if status == "PENDING" else status
    return Workflow.model_validate(
        {
            "name": "w-1",
            "status": status,
            "pool": pool,
            "priority": priority,
            "groups": [{"name": "g", "status": group_status, "tasks": list(tasks)}],
        }
    )


def failed_inputs(wf: Workflow, logs: dict[str, str] | None = None, events: str = "") -> FailedInputs:
    root = root_failed_task(wf)
    failed = failed_tasks(wf)
    return FailedInputs(
        wf=wf,
        root=root,
        failed=failed,
        task=root or (failed[0] if failed else None),
        logs=logs or {},
        events=events,
    )


NCCL_LOG = (
    "2026/11/28 10:00:00 [train] Watchdog caught collective operation timeout: WorkNCCL(OpType=ALLREDUCE)\n"
    "2026/11/28 10:00:01 [train] RuntimeError: NCCL communicator was aborted\n"
)

FAILED_TABLE = [
    # (workflow, logs, events, category, headline has, next action has)
    (
        workflow("FAILED", {"name": "train", "status": "FAILED", "exit_code": 137}),
        {},
        "",
        Category.OOM_KILLED,
        "was OOM-killed. Signal: exit code 137.",
        "Raise task train's memory request",
    ),
    (
        workflow(
            "FAILED_IMAGE_PULL",
            {
                "name": "train",
                "status": "FAILED_IMAGE_PULL",
                "exit_code": 302,
                "failure_message": 'Failed to pull image "nvcr.io/acme/x:1": not found',
            },
        ),
        {},
        "",
        Category.IMAGE_PULL_FAILED,
        "could not be pulled",
        "Verify that the image nvcr.io/acme/x:1 exists",
    ),
    (
        workflow("FAILED", {"name": "train", "status": "FAILED", "exit_code": 1}),
        {"train": NCCL_LOG},
        "",
        Category.CRASH_APP_ERROR,
        "broke first (FAILED with exit code 1) after an NCCL collective timeout",
        "NCCL_DEBUG=INFO",
    ),
    (
        workflow("FAILED", {"name": "train", "status": "FAILED", "exit_code": 2012}),
        {},
        "",
        Category.DATA_FAILED,
        "OSMO's data step",
        "data credentials",
    ),
    (
        workflow("FAILED_UPSTREAM", {"name": "eval", "status": "FAILED_UPSTREAM"}),
        {},
        "",
        Category.UPSTREAM_FAILED,
        "an upstream task failed",
        "osmo workflow logs",
    ),
    (
        workflow("FAILED_CANCELED", {"name": "train", "status": "FAILED_CANCELED", "exit_code": 143}),
        {},
        "",
        Category.CANCELED,
        "the workflow was canceled",
        "cancel was intended",
    ),
    (
        workflow(
            "FAILED_EVICTED",
            {"name": "train", "status": "FAILED_EVICTED", "exit_code": 3004, "failure_message": "DiskPressure"},
        ),
        {},
        "",
        Category.NODE_FAILURE,
        "backend node failed",
        "Resubmit (the node",
    ),
]


@pytest.mark.parametrize(("wf", "logs", "events", "expected", "headline", "action"), FAILED_TABLE)
def test_failed_signals_to_category_and_words(
    wf: Workflow, logs: dict[str, str], events: str, expected: Category, headline: str, action: str
) -> None:
    got = failed_inputs(wf, logs, events)
    d = decide_failed(got)
    assert d.category == expected
    facts = failed_facts(got, d)
    assert headline in failed_headline(got, facts, d)
    assert action in category(d.category).next_action(facts)


def test_the_memory_request_reaches_the_oom_next_action_and_evidence() -> None:
    got = failed_inputs(workflow("FAILED", {"name": "train", "status": "FAILED", "exit_code": 137}))
    got.requests = {"train": TaskRequest.model_validate({"task_name": "train", "memory": "16Gi"})}
    d = decide_failed(got)
    assert "(now 16Gi)" in category(d.category).next_action(failed_facts(got, d))
    b = OsmoReportBuilder(now=NOW)
    failed_evidence(b, got, d)
    assert any(
        e.label == "task train memory request" and e.source == "GET /api/task?workflow_id=w-1" for e in b.evidence
    )


def test_only_followers_visible_is_a_gap_not_a_guess() -> None:
    got = failed_inputs(workflow("FAILED_UPSTREAM", {"name": "eval", "status": "FAILED_UPSTREAM"}))
    d = decide_failed(got)
    b = OsmoReportBuilder(now=NOW)
    failed_evidence(b, got, d)
    assert [g.what for g in b.gaps] == ["the upstream task that failed first"]


def quota(free: int, total_free: int, status: str = "ONLINE") -> PoolQuota:
    usage = {"quota_free": free, "quota_limit": 32, "quota_used": 32 - free, "total_free": total_free}
    usage |= {"total_capacity": 64, "total_usage": 64 - total_free}
    return PoolQuota.model_validate(
        {"node_sets": [{"pools": [{"name": "h100", "status": status, "resource_usage": usage}]}]}
    )


def nodes(*free: int) -> list[NodeResources]:
    return [
        NodeResources.model_validate(
            {
                "hostname": f"n{i}",
                "exposed_fields": {"pool/platform": ["h100/dgx"]},
                "allocatable_fields": {"gpu": 8},
                "usage_fields": {"gpu": 8 - f},
            }
        )
        for i, f in enumerate(free)
    ]


ASK_8 = {"train": TaskRequest.model_validate({"task_name": "train", "gpu": 8})}
AFFINITY = (
    "2026-11-28 13:05:16+00:00 [train] 0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector."
)

PENDING_TABLE = [
    # (priority, quota, nodes, events, outcome, headline has, next action has)
    ("NORMAL", quota(0, 16), nodes(8, 8), "", Outcome.PENDING_QUOTA, "quota is used up", "--priority LOW"),
    ("LOW", quota(0, 2), nodes(1, 1), "", Outcome.PENDING_CAPACITY, "out of physical GPUs", "LOW priority will not"),
    ("NORMAL", quota(16, 10), nodes(4, 4, 2), "", Outcome.PENDING_FRAGMENTATION, "no single node", "Split the work"),
    ("NORMAL", quota(16, 16, "OFFLINE"), nodes(8, 8), "", Outcome.POOL_UNAVAILABLE, "is OFFLINE", "ONLINE again"),
    ("NORMAL", quota(16, 16), nodes(8, 8), AFFINITY, Outcome.PENDING_CONSTRAINT, "GPUs suffice", "node selectors"),
    ("NORMAL", quota(16, 16), nodes(8, 8), "", Outcome.STATUS, "show no quota, capacity", "Check the events again"),
]


@pytest.mark.parametrize(
    ("priority", "pool_quota", "pool_nodes", "events", "outcome", "headline", "action"), PENDING_TABLE
)
def test_pending_numbers_to_verdict_and_words(
    priority: str,
    pool_quota: PoolQuota,
    pool_nodes: list[NodeResources],
    events: str,
    outcome: Outcome,
    headline: str,
    action: str,
) -> None:
    wf = workflow("PENDING", {"name": "train", "status": "SCHEDULING"}, priority=priority)
    d = decide_queued(wf, QueuedInputs(events=events, requests=ASK_8, quota=pool_quota, nodes=pool_nodes))
    assert (d.outcome or Outcome.STATUS) == outcome
    facts = queued_facts(wf, d)
    verdict = pending_verdict(d.outcome)
    assert headline in verdict.headline(facts)
    assert action in verdict.next_action(facts)


def test_unknown_numbers_never_decide() -> None:
    """Without the quota, the nodes or the ask, no numeric rule fires (never a guess)."""
    wf = workflow("PENDING", {"name": "train", "status": "SCHEDULING"})
    d = decide_queued(wf, QueuedInputs())
    assert d.outcome is None and d.numbers.group_ask is None and d.pool_listed


def test_a_pool_missing_from_the_quota_is_flagged() -> None:
    wf = workflow("PENDING", {"name": "train", "status": "SCHEDULING"}, pool="elsewhere")
    d = decide_queued(wf, QueuedInputs(requests=ASK_8, quota=quota(0, 16), nodes=nodes(8)))
    assert not d.pool_listed and d.pool_info is None
