"""Pure OSMO rules: one test per category/precedence rule, PENDING from numbers, cadence, parser, links."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from diagnosis.osmo.classify import TaskSignals, classify_task, root_failed_task
from diagnosis.osmo.logsummary import summarize_spec
from diagnosis.osmo.models import Workflow
from diagnosis.osmo.pending import PendingNumbers, decide_pending, parse_events, translate_events
from diagnosis.osmo.procedure import DASHBOARD_NA, GRAFANA_NA, link_parts
from diagnosis.osmo.watch import BACKOFF_AFTER, StateChange, WatchState, next_interval, observe
from diagnosis.question import parse_text
from diagnosis.report import Category, Outcome
from diagnosis.watching import Ending, Polled, follow


def sig(
    status: str = "FAILED",
    exit_code: int | None = None,
    message: str = "",
    events: str = "",
    log: str = "",
    wf_status: str = "FAILED",
) -> TaskSignals:
    return TaskSignals("t", status, exit_code, message, wf_status, events, log)


@pytest.mark.parametrize(
    ("signals", "category"),
    [
        (sig(exit_code=1), Category.CRASH_APP_ERROR),
        (sig(exit_code=139), Category.CRASH_APP_ERROR),
        (sig(exit_code=137), Category.OOM_KILLED),
        (sig("FAILED_EVICTED", 3004, "Exit code 137 due to Task t failed with OOMKilled."), Category.OOM_KILLED),
        (sig("FAILED_EVICTED", 3004), Category.NODE_FAILURE),  # every eviction is 3004: no OOM hint, the node
        (sig("FAILED_EVICTED", None, "The node was low on resource: ephemeral-storage."), Category.NODE_FAILURE),
        (sig("FAILED_BACKEND_ERROR", 3001), Category.NODE_FAILURE),
        (sig("FAILED_IMAGE_PULL", 302), Category.IMAGE_PULL_FAILED),
        (sig(exit_code=301), Category.IMAGE_PULL_FAILED),
        (sig(exit_code=256), Category.INIT_FAILED),
        (sig(exit_code=257), Category.INIT_FAILED),
        (sig(exit_code=2010), Category.DATA_FAILED),
        (sig(exit_code=2014), Category.DATA_FAILED),
        (sig("FAILED_START_ERROR", 3003), Category.START_FAILED),
        (sig("FAILED_START_TIMEOUT", 3005), Category.START_FAILED),
        (sig(exit_code=1001), Category.START_FAILED),
        (sig("FAILED_BACKEND_ERROR", 3001, "CreateContainerConfigError: secret missing"), Category.START_FAILED),
        (sig("FAILED_PREEMPTED", 3006), Category.PREEMPTED),
        (sig("FAILED_EXEC_TIMEOUT", 137, wf_status="FAILED_EXEC_TIMEOUT"), Category.TIMEOUT),
        (sig("FAILED_QUEUE_TIMEOUT"), Category.TIMEOUT),
        (sig("FAILED_CANCELED", 143, wf_status="FAILED_CANCELED"), Category.CANCELED),
        (sig("FAILED_SERVER_ERROR", 3002), Category.SERVER_ERROR),
        (sig(exit_code=2021), Category.SERVER_ERROR),
        (sig("FAILED_UPSTREAM", 3000), Category.UPSTREAM_FAILED),
        (sig(exit_code=4000), Category.UNKNOWN),
        (sig(), Category.UNKNOWN),
    ],
)
def test_category_rules(signals: TaskSignals, category: Category) -> None:
    assert classify_task(signals).category == category


def test_nccl_names_network_cause() -> None:
    finding = classify_task(sig(exit_code=1, log="Watchdog caught collective operation timeout: WorkNCCL(...)"))
    assert finding.category == Category.CRASH_APP_ERROR and finding.detail == "NCCL"


def _wf(tasks: list[dict]) -> Workflow:
    return Workflow.model_validate({"name": "w-1", "status": "FAILED", "groups": [{"name": "g", "tasks": tasks}]})


def test_upstream_resolves_to_first_failing_root() -> None:
    wf = _wf(
        [
            {
                "name": "trainer-0",
                "status": "FAILED",
                "exit_code": None,
                "failure_message": "Task trainer-1 Failed.",
                "end_time": "2026-01-01T00:00:01",
            },
            {"name": "trainer-1", "status": "FAILED", "exit_code": 1, "end_time": "2026-01-01T00:00:02"},
            {"name": "eval", "status": "FAILED_UPSTREAM", "exit_code": 3000},
        ]
    )
    root = root_failed_task(wf)
    assert root is not None and root.name == "trainer-1"


def test_upstream_only_has_no_root() -> None:
    assert root_failed_task(_wf([{"name": "eval", "status": "FAILED_UPSTREAM", "exit_code": 3000}])) is None


def nums(**kw: object) -> PendingNumbers:
    base: dict = dict(
        pool="p",
        pool_status="ONLINE",
        priority="NORMAL",
        group="g",
        group_ask=8,
        task_ask=8,
        quota_free=16,
        quota_limit=32,
        total_free=16,
        total_capacity=64,
        largest_node_free=8,
    )
    base.update(kw)
    return PendingNumbers(**base)


def test_pending_order_from_numbers() -> None:
    assert decide_pending(nums(pool_status="MAINTENANCE", quota_free=0)) == Outcome.POOL_UNAVAILABLE
    assert decide_pending(nums(quota_free=0, total_free=16)) == Outcome.PENDING_QUOTA
    assert decide_pending(nums(quota_free=0, total_free=16, priority="LOW")) is None  # LOW ignores quota
    assert decide_pending(nums(quota_free=18, total_free=2)) == Outcome.PENDING_CAPACITY
    assert decide_pending(nums(quota_free=0, total_free=2)) == Outcome.PENDING_CAPACITY  # both short
    assert decide_pending(nums(quota_free=10, total_free=10, largest_node_free=4)) == Outcome.PENDING_FRAGMENTATION
    assert decide_pending(nums(quota_free=8, total_free=8, largest_node_free=8)) is None  # equal is enough
    assert decide_pending(nums(quota_free=None, total_free=None, largest_node_free=None)) is None  # never guess


def test_pending_constraint_from_events() -> None:
    text = (
        "2026-11-28 06:40:07+00:00 [train] FailedScheduling: 0/8 nodes are available: 8 node(s)\n"
        "  didn't match Pod's node affinity/selector.\n"
    )
    events = parse_events(text)
    assert len(events) == 1 and "affinity" in events[0].message  # wrapped line joined
    trs = translate_events(events)
    assert decide_pending(nums(translations=tuple(trs))) == Outcome.PENDING_CONSTRAINT
    assert "hardware requirements" in trs[0].plain


def test_links_or_named_unavailable() -> None:
    wf = Workflow.model_validate({"name": "w-1", "grafana_url": None, "dashboard_url": None})
    links, notes = link_parts(wf)
    assert links == [] and notes == [GRAFANA_NA, DASHBOARD_NA]
    wf = Workflow.model_validate({"name": "w-1", "grafana_url": "https://g/x", "dashboard_url": "https://k/y"})
    links, notes = link_parts(wf)
    assert [link.url for link in links] == ["https://g/x", "https://k/y"] and notes == []


def test_explain_gives_env_names_never_values() -> None:
    spec = summarize_spec(
        "workflow:\n  name: x\n  tasks:\n  - name: a\n    image: img:1\n"
        "    environment:\n      API_TOKEN: s3cr3t-value\n      MODE: fast\n"
    )
    assert spec.tasks[0].env_names == ["API_TOKEN", "MODE"]
    assert "s3cr3t-value" not in repr(spec)


def test_cadence() -> None:
    assert next_interval("short", "RUNNING", 0) == 15
    assert next_interval("training", "RUNNING", 0) == 30
    assert next_interval("training", "RUNNING", BACKOFF_AFTER) == 60
    assert next_interval("training", "RUNNING", BACKOFF_AFTER, user_cadence_s=5) == 5


async def test_watch_reports_changes_and_stops_at_terminal() -> None:
    statuses = iter(["PENDING", "PENDING", "RUNNING", "COMPLETED", "COMPLETED"])
    slept: list[float] = []
    changes: list[str] = []
    endings: list[Ending] = []

    async def poll(_: str) -> Polled:
        return Polled(next(statuses))

    async def sleep(s: float) -> None:
        slept.append(s)

    class Sink:
        async def seen(self, state: WatchState, change: StateChange | None) -> None:
            if change is not None:
                changes.append(change.status)

        async def ended(self, state: WatchState, ending: Ending, failures: int) -> None:
            endings.append(ending)

    state = WatchState(workflow_id="w-1", kind="short")
    last, ending = await follow(state, poll, Sink(), sleep=sleep)
    assert changes == ["PENDING", "RUNNING", "COMPLETED"] and last.done
    assert slept == [15, 15, 15] and ending is Ending.FINISHED and endings == [Ending.FINISHED]
    again = WatchState.model_validate_json(observe(state, "RUNNING", datetime.now(UTC))[0].model_dump_json())
    assert again.status == "RUNNING"


@pytest.mark.parametrize(
    ("text", "kind", "workflow_id"),
    [
        ("status of workflow sdg-render-7", "osmo_status", "sdg-render-7"),
        ("why is sdg-render-7 pending", "osmo_status", "sdg-render-7"),
        ("what does policy-train-42 do", "osmo_explain", "policy-train-42"),
        ("list recent workflows", "osmo_list", None),
        ("watch sdg-render-7", "osmo_watch", "sdg-render-7"),
        ("is tactile-pretrain-9 done? where are the outputs?", "osmo_status", "tactile-pretrain-9"),
    ],
)
def test_parser_osmo(text: str, kind: str, workflow_id: str | None) -> None:
    q = parse_text(text)
    assert (q.kind, q.workflow_id) == (kind, workflow_id)


def test_parser_keeps_runai() -> None:
    q = parse_text("why did train-7 fail in project nlp?")
    assert (q.kind, q.workload_name, q.project, q.workflow_id) == ("runai", "train-7", "nlp", None)
