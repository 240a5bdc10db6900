"""One test per rule of the Run:ai procedure (shared/spec/runai-diagnose-failed-workload.md), end to end
through the real client against the sandbox on loopback."""

from __future__ import annotations

import random

import pytest

from diagnosis.render import render_text
from diagnosis.report import Category, Outcome
from tests import builders as b
from tests.conftest import Diagnose

pytestmark = pytest.mark.asyncio


async def test_completed_reports_success(diagnose: Diagnose) -> None:
    snap = b.snapshot(b.entry(b.workload(phase="Completed"), pods=[b.pod(k8s_phase="Succeeded")]))
    report, sb = await diagnose(snap)
    assert report.outcome == Outcome.SUCCEEDED
    assert report.category is None
    assert sb.mutating_requests() == []


async def test_suspended_is_out_of_scope_and_parses(diagnose: Diagnose) -> None:
    snap = b.snapshot(b.entry(b.workload(phase="Suspended", phaseMessage="Workload suspended by user")))
    report, _ = await diagnose(snap)
    assert report.outcome == Outcome.OUT_OF_SCOPE


async def test_running_without_symptom_asks_for_past_run(diagnose: Diagnose) -> None:
    snap = b.snapshot(b.entry(b.workload(phase="Running"), pods=[b.pod(k8s_phase="Running")]))
    report, _ = await diagnose(snap)
    assert report.outcome == Outcome.ASK_PAST_RUN
    assert report.question and "past run" in report.question


async def test_running_crashloop_continues_to_diagnosis(diagnose: Diagnose) -> None:
    history = [b.phase_update("Creating", b.ago(minutes=30)), b.phase_update("Running", b.ago(minutes=29))]
    history += [
        b.event(
            "BackOff",
            "Back-off restarting failed container train-7 in pod train-7-0-0_runai-nlp(x)",
            b.ago(minutes=20 - i),
        )
        for i in range(3)
    ]
    kube = {
        "pods": [
            b.k8s_pod(
                state={"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}},
                last=b.terminated(2),
                restarts=3,
            )
        ],
        "logs": [
            {
                "namespace": "runai-nlp",
                "pod": "train-7-0-0",
                "container": "train-7",
                "previous": True,
                "text": "usage: train.py\ntrain.py: error: unrecognized arguments: --lr-schedul\n",
            }
        ],
        "events": [],
        "nodes": [b.node()],
    }
    snap = b.snapshot(
        b.entry(
            b.workload(phase="Running", phaseUpdatedAt=b.ago(minutes=29)),
            history=history,
            pods=[b.pod(k8s_phase="CrashLoopBackOff")],
        ),
        kubernetes=kube,
    )
    report, _ = await diagnose(snap, intent="current")
    assert report.outcome == Outcome.DIAGNOSED
    assert report.category == Category.CRASH_APP_ERROR
    assert "unrecognized arguments" in render_text(report)


async def test_pending_with_only_scheduling_routes_out(diagnose: Diagnose) -> None:
    history = [
        b.phase_update("Pending", b.ago(hours=2)),
        b.event(
            "Unschedulable",
            "0/8 nodes are available: 8 Insufficient nvidia.com/gpu.",
            b.ago(hours=1),
            source="runai-scheduler",
        ),
    ]
    snap = b.snapshot(b.entry(b.workload(phase="Pending"), history=history, pods=[b.pod(k8s_phase="Pending")]))
    report, _ = await diagnose(snap, intent=None, text="why is train-7 still pending?")
    assert report.outcome == Outcome.ROUTE_PENDING
    assert report.category is None


async def test_is_it_stuck_is_answered_first_by_the_pending_diagnosis(diagnose: Diagnose) -> None:
    """Issue 11: "is X stuck?" about a Pending workload gets its own answer (the routed Pending diagnosis, not a
    hand-off) whose first words answer the question: yes, how long, and why in plain language."""
    history = [
        b.phase_update("Pending", b.ago(hours=3, minutes=12)),
        b.event(
            "Unschedulable",
            "0/8 nodes are available: 8 Insufficient nvidia.com/gpu.",
            b.ago(hours=1),
            source="runai-scheduler",
        ),
    ]
    wl = b.workload(phase="Pending", phaseUpdatedAt=b.ago(hours=3, minutes=12))
    snap = b.snapshot(b.entry(wl, history=history, pods=[b.pod(k8s_phase="Pending")]))
    report, _ = await diagnose(snap, intent=None, text="is train-7 stuck?")
    assert report.outcome == Outcome.ROUTE_PENDING and report.category is None
    assert report.headline.startswith(
        "Yes — train-7 has been Pending for 3 h 12 min, waiting to be scheduled (no pod has failed). Why: the node "
        "pool is out of free GPUs (physical capacity, not quota)"
    )
    # a question that does not ask "stuck" keeps the plain Pending verdict
    report, _ = await diagnose(snap, intent=None, text="why is train-7 still pending?")
    assert report.headline.startswith("train-7 is Pending: no pod has failed, it is waiting to be scheduled. Why:")


async def test_pending_scheduler_naming_missing_pvc_is_mount_failure(diagnose: Diagnose) -> None:
    history = [
        b.phase_update("Pending", b.ago(hours=1)),
        b.event(
            "FailedScheduling",
            '0/4 nodes are available: persistentvolumeclaim "datasets" not found.',
            b.ago(minutes=30),
            source="runai-scheduler",
        ),
    ]
    snap = b.snapshot(b.entry(b.workload(phase="Pending"), history=history, pods=[b.pod(k8s_phase="Pending")]))
    report, _ = await diagnose(snap, intent="current")
    assert report.outcome == Outcome.DIAGNOSED
    assert report.category == Category.DATASOURCE_MOUNT_FAILED


async def test_non_terminal_phase_reports_phase_only(diagnose: Diagnose) -> None:
    snap = b.snapshot(b.entry(b.workload(phase="Stopping"), pods=[b.pod(k8s_phase="Running")]))
    report, _ = await diagnose(snap)
    assert report.outcome == Outcome.PHASE_ONLY
    assert report.category is None


async def test_preemption_routes_out_even_when_failed(diagnose: Diagnose) -> None:
    history = [
        *b.failed_history(""),
        b.event(
            "Evict",
            "Pod runai-nlp/train-7-0-0 was preempted by higher priority workload runai-x/pg-1",
            b.ago(minutes=62),
            kind="PodGroup",
            type_="Normal",
            source="runai-scheduler",
        ),
    ]
    snap = b.snapshot(b.entry(b.workload(), history=history))
    report, _ = await diagnose(snap)
    assert report.outcome == Outcome.ROUTE_PREEMPTED
    assert report.category is None


async def test_quota_message_with_preemptible_word_is_not_preemption(diagnose: Diagnose) -> None:
    msg = "Non-preemptible workload is over quota. Use a preemptible workload to go over quota."
    history = [b.phase_update("Pending", b.ago(hours=1), msg)]
    snap = b.snapshot(
        b.entry(b.workload(phase="Pending", phaseMessage=msg), history=history, pods=[b.pod(k8s_phase="Pending")])
    )
    report, _ = await diagnose(snap, intent="current")
    assert report.outcome == Outcome.ROUTE_PENDING


async def test_cluster_mismatch_stops(diagnose: Diagnose) -> None:
    wl = b.workload(clusterId=b.OTHER_CLUSTER)
    snap = b.snapshot(b.entry(wl, history=b.failed_history("x")))
    report, sb = await diagnose(snap, workload_id=wl["id"], workload_name=None, project=None)
    assert report.outcome == Outcome.CLUSTER_MISMATCH
    assert report.category is None
    assert not any("/history" in r.path for r in sb.requests), "no evidence of a foreign workload is collected"


@pytest.mark.parametrize("missing", ["cluster_id", "project"])
async def test_missing_identifier_asks_before_calling_tools(diagnose: Diagnose, missing: str) -> None:
    snap = b.snapshot(b.entry(b.workload(), history=b.failed_history("x")))
    report, sb = await diagnose(snap, **{missing: None}, text="why did train-7 fail?")
    assert report.outcome == Outcome.NEEDS_INPUT
    word = "cluster" if missing == "cluster_id" else "project"
    assert report.question and word in report.question
    assert [r for r in sb.requests if not r.path.endswith("/token")] == []


async def test_cluster_is_never_inferred_from_workload_id(diagnose: Diagnose) -> None:
    wl = b.workload()
    snap = b.snapshot(b.entry(wl, history=b.failed_history("x")))
    report, _ = await diagnose(snap, cluster_id=None, workload_id=wl["id"], text=f"check {wl['id']}")
    assert report.outcome == Outcome.NEEDS_INPUT
    assert "cluster" in report.missing


async def test_cluster_named_in_text_is_resolved_exactly(diagnose: Diagnose) -> None:
    snap = b.snapshot(
        b.entry(
            b.workload(),
            history=b.failed_history(
                "Pod train-7-0-0 failed: container train-7 terminated with reason OOMKilled (exit code 137)"
            ),
        )
    )
    report, _ = await diagnose(snap, cluster_id=None, text="why did train-7 fail on cluster dgx-prod?")
    assert report.outcome == Outcome.DIAGNOSED
    report, _ = await diagnose(snap, cluster_id=None, text="why did train-7 fail on cluster dgx-pro?")
    assert report.outcome == Outcome.NEEDS_INPUT


async def test_not_found_live_or_deleted(diagnose: Diagnose) -> None:
    snap = b.snapshot(b.entry(b.workload(name="other")))
    report, sb = await diagnose(snap)
    assert report.outcome == Outcome.NOT_FOUND
    assert "workload id" in render_text(report)
    assert any("deleted=true" in r.query for r in sb.requests)


async def test_deleted_workload_is_found_with_deleted_true(diagnose: Diagnose) -> None:
    history = b.failed_history('Back-off pulling image "nvcr.io/x/img:1"')
    history.insert(3, b.event("Failed", 'Failed to pull image "nvcr.io/x/img:1": not found', b.ago(minutes=70)))
    snap = b.snapshot(b.entry(b.workload(deletedAt=b.ago(minutes=30)), history=history, pods=[]))
    report, _ = await diagnose(snap)
    assert report.outcome == Outcome.DIAGNOSED
    assert report.category == Category.IMAGE_PULL_FAILED
    assert any(g.what == "pods" for g in report.gaps)


async def test_events_null_is_a_fetch_failure_and_history_is_used(diagnose: Diagnose) -> None:
    msg = "Pod runai-nlp/train-7-0-0 failed: container train-7 terminated with reason OOMKilled (exit code 137)"
    snap = b.snapshot(b.entry(b.workload(), history=b.failed_history("backoff", event_message=msg), events=None))
    report, _ = await diagnose(snap)
    assert report.category == Category.OOM_KILLED
    assert any(g.what == "events" for g in report.gaps)
    assert any("not proof" in n for n in report.notes)


async def test_history_pages_in_any_order_and_recurrence_counts_inside_lookback(diagnose: Diagnose) -> None:
    oom = "Pod runai-nlp/{p} failed: container train-7 terminated with reason OOMKilled (exit code 137)"
    history = [b.phase_update("Creating", b.ago(days=10)), b.phase_update("Running", b.ago(days=10))]
    history += [
        b.event("Started", "Started container train-7", b.ago(days=9, minutes=i), type_="Normal") for i in range(1200)
    ]
    history.append(b.event("PodFailed", oom.format(p="a"), b.ago(days=8), pod="a"))  # outside the lookback
    history.append(b.event("PodFailed", oom.format(p="b"), b.ago(days=3), pod="b"))  # inside
    history.append(b.event("PodFailed", oom.format(p="c"), b.ago(minutes=61), pod="c"))  # the diagnosed one
    history.append(b.phase_update("Failed", b.ago(hours=1), "Job has reached the specified backoff limit"))
    random.Random(7).shuffle(history)
    snap = b.snapshot(b.entry(b.workload(), history=history))
    report, sb = await diagnose(snap)
    assert report.category == Category.OOM_KILLED
    assert report.recurrence is not None and report.recurrence.count == 2
    assert report.recurring
    assert sum(1 for r in sb.requests if r.path.endswith("/history")) >= 3, "all pages were read"


async def test_phase_update_and_event_of_one_termination_count_once(diagnose: Diagnose) -> None:
    msg = "Pod runai-nlp/train-7-0-0 failed: container train-7 terminated with reason OOMKilled (exit code 137)"
    history = b.failed_history(msg, event_message=msg)
    history[3:3] = [
        b.event("BackOff", "Back-off restarting failed container train-7 in pod train-7-0-0", b.ago(minutes=100 - i))
        for i in range(5)
    ]
    snap = b.snapshot(b.entry(b.workload(phaseMessage=msg), history=history))
    report, _ = await diagnose(snap)
    assert report.recurrence is not None and report.recurrence.count == 1
    assert report.recurring is False


async def test_memory_peak_is_compared_with_the_limit_not_the_request(diagnose: Diagnose) -> None:
    msg = "Pod train-7-0-0 failed: container train-7 terminated with reason OOMKilled (exit code 137)"
    snap = b.snapshot(
        b.entry(
            b.workload(phaseMessage=msg),
            history=b.failed_history(msg),
            metrics=b.metrics([4 * b.GiB, 12 * b.GiB, 15.9 * b.GiB]),
        )
    )
    report, _ = await diagnose(snap)
    text = render_text(report)
    assert "memory limit (the OOM ceiling): 16Gi" in text
    peak = next(e for e in report.evidence if e.label.startswith("peak memory"))
    assert "99.4% of the limit" in peak.value
    assert "8Gi" not in peak.value


async def test_empty_usage_series_says_no_peak_observed(diagnose: Diagnose) -> None:
    snap = b.snapshot(
        b.entry(
            b.workload(),
            history=b.failed_history("Job has reached the specified backoff limit"),
            pods=[b.pod(k8s_phase="OOMKilled")],
            metrics=b.metrics([]),
        )
    )
    report, _ = await diagnose(snap)
    assert report.category == Category.OOM_KILLED
    peak = next(e for e in report.evidence if e.label.startswith("peak memory"))
    assert peak.value.startswith("no peak observed")
    assert "16Gi" not in peak.value and "17179869184" not in peak.value


async def test_exit_137_without_oomkilled_stays_unknown_even_with_tier2(diagnose: Diagnose) -> None:
    msg = "Pod runai-nlp/train-7-0-0 failed: container train-7 terminated with reason Error (exit code 137)"
    kube = {"pods": [b.k8s_pod(state=b.terminated(137))], "events": [], "nodes": [b.node()], "logs": []}
    snap = b.snapshot(b.entry(b.workload(), history=b.failed_history("x", event_message=msg)), kubernetes=kube)
    report, _ = await diagnose(snap)
    assert report.category == Category.UNKNOWN
    assert "137" in render_text(report)


async def test_exit_137_explained_by_liveness_kill_is_app_error(diagnose: Diagnose) -> None:
    msg = "Pod runai-nlp/train-7-0-0 failed: container train-7 terminated with reason Error (exit code 137)"
    history = b.failed_history("x", event_message=msg)
    history.insert(
        3,
        b.event(
            "Killing", "Container train-7 failed liveness probe, will be restarted", b.ago(minutes=63), type_="Normal"
        ),
    )
    history.insert(3, b.event("Unhealthy", 'Liveness probe failed: Get "http://x/healthz": timeout', b.ago(minutes=64)))
    snap = b.snapshot(b.entry(b.workload(), history=history))
    report, _ = await diagnose(snap)
    assert report.category == Category.CRASH_APP_ERROR
    assert "Liveness probe failed" in render_text(report)


async def test_unknown_without_tier2_when_tier1_is_thin(diagnose: Diagnose) -> None:
    snap = b.snapshot(
        b.entry(
            b.workload(),
            history=b.failed_history("Job has reached the specified backoff limit"),
            pods=[b.pod(k8s_phase="Error")],
        )
    )
    report, _ = await diagnose(snap)
    assert report.category == Category.UNKNOWN
    assert any("Tier 2" in g.what for g in report.gaps)


@pytest.mark.parametrize(
    ("message", "category"),
    [
        ("Pod x failed: container train-7 terminated with reason Error (exit code 139)", Category.CRASH_APP_ERROR),
        ("Pod x failed: init container fetch terminated with reason Error (exit code 3)", Category.INIT_FAILED),
        ("Job was active longer than specified deadline", Category.SCHEDULING_POLICY_TERMINATED),
        ('Error: secret "db-creds" not found', Category.DATASOURCE_MOUNT_FAILED),
        (
            "Error: failed to create containerd task: nvidia-container-cli: initialization error: nvml error",
            Category.NODE_FAILURE,
        ),
        ('exec: "python3": executable file not found in $PATH', Category.CRASH_APP_ERROR),
    ],
)
async def test_direct_signals_map_to_categories(diagnose: Diagnose, message: str, category: Category) -> None:
    snap = b.snapshot(
        b.entry(
            b.workload(),
            history=b.failed_history(
                message, event_message=message, event_reason="Failed" if "Error:" in message else "PodFailed"
            ),
        )
    )
    report, _ = await diagnose(snap)
    assert report.category == category, render_text(report)


async def test_cuda_out_of_memory_in_logs_is_app_error_not_oom(diagnose: Diagnose) -> None:
    msg = "Pod runai-nlp/train-7-0-0 failed: container train-7 terminated with reason Error (exit code 1)"
    kube = {
        "pods": [b.k8s_pod(state=b.terminated(1))],
        "events": [],
        "nodes": [b.node()],
        "logs": [
            {
                "namespace": "runai-nlp",
                "pod": "train-7-0-0",
                "container": "train-7",
                "previous": False,
                "text": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
            }
        ],
    }
    snap = b.snapshot(b.entry(b.workload(), history=b.failed_history("x", event_message=msg)), kubernetes=kube)
    report, _ = await diagnose(snap)
    assert report.category == Category.CRASH_APP_ERROR
    assert "CUDA out of memory" in render_text(report)


async def test_node_not_ready_describes_the_node(diagnose: Diagnose) -> None:
    history = b.failed_history("")
    history.insert(3, b.event("NodeNotReady", "Node is not ready", b.ago(minutes=66), source="node-controller"))
    kube = {"pods": [b.k8s_pod(state={"running": {}})], "events": [], "nodes": [b.node(ready="Unknown")], "logs": []}
    snap = b.snapshot(b.entry(b.workload(), history=history), kubernetes=kube)
    report, sb = await diagnose(snap)
    assert report.category == Category.NODE_FAILURE
    assert "dgx-01" in render_text(report)
    assert any(r.path == "/api/v1/nodes/dgx-01" for r in sb.requests)


async def test_option_b_terminal_intent_picks_latest_terminal_match(diagnose: Diagnose) -> None:
    failed = b.workload(
        phase="Failed",
        phaseUpdatedAt=b.ago(days=1),
        phaseMessage="Pod x failed: container train-7 terminated with reason OOMKilled (exit code 137)",
    )
    running = b.workload(phase="Running", phaseUpdatedAt=b.ago(hours=1), type="Distributed")
    snap = b.snapshot(b.entry(running, pods=[b.pod(k8s_phase="Running")]), b.entry(failed))
    report, _ = await diagnose(snap)
    assert report.identity is not None and report.identity.workload_id == failed["id"]
    assert report.category == Category.OOM_KILLED


async def test_transient_pull_error_superseded_by_a_later_start(diagnose: Diagnose) -> None:
    msg = "Pod runai-nlp/train-7-0-0 failed: container train-7 terminated with reason Error (exit code 1)"
    history = b.failed_history("x", event_message=msg)
    history.insert(2, b.event("Failed", 'Failed to pull image "img:1": i/o timeout', b.ago(minutes=62)))
    history.insert(3, b.event("Started", "Started container train-7", b.ago(minutes=61, seconds=30), type_="Normal"))
    snap = b.snapshot(b.entry(b.workload(), history=history))
    report, _ = await diagnose(snap)
    assert report.category == Category.CRASH_APP_ERROR


async def test_injected_503_on_history_is_retried(diagnose: Diagnose) -> None:
    msg = "Pod x failed: container train-7 terminated with reason OOMKilled (exit code 137)"
    snap = b.snapshot(
        b.entry(b.workload(), history=b.failed_history(msg, event_message=msg)),
        faults=[{"path": "/api/v1/workloads/*/history", "status": 503, "times": 2}],
    )
    report, sb = await diagnose(snap)
    assert report.category == Category.OOM_KILLED
    statuses = [r.status for r in sb.requests if r.path.endswith("/history")]
    assert statuses[:3] == [503, 503, 200]
    assert not any(g.what == "history" for g in report.gaps)


async def test_exhausted_retries_become_a_named_gap(diagnose: Diagnose) -> None:
    msg = "Pod x failed: container train-7 terminated with reason OOMKilled (exit code 137)"
    snap = b.snapshot(b.entry(b.workload(phaseMessage=msg), history=b.failed_history(msg), pods=None))
    report, sb = await diagnose(snap)
    assert report.category == Category.OOM_KILLED
    gap = next(g for g in report.gaps if g.what == "pods")
    assert "HTTP 500" in gap.why
    assert sum(1 for r in sb.requests if r.path.endswith("/pods")) >= 3


async def test_deadline_on_injected_delay_answers_with_a_gap(diagnose: Diagnose) -> None:
    msg = "Pod x failed: container train-7 terminated with reason OOMKilled (exit code 137)"
    snap = b.snapshot(
        b.entry(b.workload(phaseMessage=msg), history=b.failed_history(msg)),
        faults=[{"path": "/api/v1/workloads/*/metrics", "delay_ms": 4000}],
    )
    report, _ = await diagnose(snap, deadline=1.5)
    assert report.category == Category.OOM_KILLED
    assert any(g.what == "metrics" and "deadline" in g.why for g in report.gaps)


async def test_no_mutating_request_reaches_the_sandbox(diagnose: Diagnose) -> None:
    msg = "Pod x failed: container train-7 terminated with reason Error (exit code 1)"
    kube = {"pods": [b.k8s_pod(state=b.terminated(1))], "events": [], "nodes": [b.node()], "logs": []}
    snap = b.snapshot(b.entry(b.workload(), history=b.failed_history("x", event_message=msg)), kubernetes=kube)
    _, sb = await diagnose(snap)
    assert sb.requests, "the sandbox saw the diagnosis"
    assert sb.mutating_requests() == []
    assert {r.method for r in sb.requests if not r.path.endswith("/token")} == {"GET"}


async def test_thin_tier1_is_confirmed_by_tier2_before_routing_away(diagnose: Diagnose) -> None:
    """Pending with a scheduled pod stuck in ContainerCreating and no readable events: Tier 2 shows the cause."""
    waiting = {"waiting": {"reason": "CreateContainerConfigError", "message": 'secret "db-creds" not found'}}
    kube = {"pods": [b.k8s_pod(state=waiting)], "events": [], "nodes": [b.node()], "logs": []}
    snap = b.snapshot(
        b.entry(
            b.workload(phase="Pending"),
            history=None,
            events=None,
            pods=[b.pod(k8s_phase="ContainerCreating")],
        ),
        kubernetes=kube,
    )
    report, _ = await diagnose(snap, intent="terminal")
    assert report.outcome == Outcome.DIAGNOSED
    assert report.category == Category.DATASOURCE_MOUNT_FAILED
    assert 'secret "db-creds" not found' in render_text(report)


async def test_running_with_restarts_seen_only_in_tier2_is_in_scope_for_a_current_question(
    diagnose: Diagnose,
) -> None:
    kube = {
        "pods": [b.k8s_pod(state={"waiting": {"reason": "CrashLoopBackOff"}}, last=b.terminated(1), restarts=5)],
        "events": [],
        "nodes": [b.node()],
        "logs": [],
    }
    snap = b.snapshot(b.entry(b.workload(phase="Running"), pods=[b.pod(k8s_phase="Running")]), kubernetes=kube)
    report, _ = await diagnose(snap, intent="current", text="why is train-7 crashing?")
    assert report.outcome == Outcome.DIAGNOSED
    assert report.category == Category.CRASH_APP_ERROR
    healthy = b.snapshot(
        b.entry(b.workload(phase="Running"), pods=[b.pod(k8s_phase="Running")]),
        kubernetes={"pods": [b.k8s_pod(state={"running": {}})], "events": [], "nodes": [b.node()], "logs": []},
    )
    report, _ = await diagnose(healthy, intent="current", text="why is train-7 crashing?")
    assert report.outcome == Outcome.ASK_PAST_RUN


async def test_exec_format_error_wrapped_by_the_runtime_is_the_programs_fault(diagnose: Diagnose) -> None:
    msg = (
        "Error: failed to create containerd task: failed to create shim task: OCI runtime create failed: "
        'runc create failed: unable to start container process: exec: "/workspace/run.sh": exec format error: unknown'
    )
    history = b.failed_history("x", event_message=msg, event_reason="Failed")
    report, _ = await diagnose(b.snapshot(b.entry(b.workload(), history=history)))
    assert report.category == Category.CRASH_APP_ERROR


@pytest.mark.parametrize(
    "message",
    [
        "Pod runai-nlp/train-7-0-0 was preempted and rescheduled due to bin packing (resource consolidation) procedure",
        "Pod runai-nlp/train-7-0-0 was reclaimed by project genai to get back its deserved quota",
    ],
)
async def test_scheduler_evictions_for_reclaim_or_consolidation_route_out(diagnose: Diagnose, message: str) -> None:
    history = [
        *b.failed_history(""),
        b.event("Evict", message, b.ago(minutes=62), kind="PodGroup", type_="Normal", source="runai-scheduler"),
    ]
    report, _ = await diagnose(b.snapshot(b.entry(b.workload(), history=history)))
    assert report.outcome == Outcome.ROUTE_PREEMPTED


async def test_gang_eviction_is_not_preemption(diagnose: Diagnose) -> None:
    msg = "Workload doesn't meet the minimum required number of pods (2), evicting remaining pod: runai-nlp/train-7-0-0"
    history = [*b.failed_history(""), b.event("Evict", msg, b.ago(minutes=62), kind="PodGroup", type_="Normal")]
    report, _ = await diagnose(b.snapshot(b.entry(b.workload(), history=history)))
    assert report.outcome != Outcome.ROUTE_PREEMPTED


async def test_tier2_disruption_target_preemption_explains_a_signal_exit(diagnose: Diagnose) -> None:
    msg = "Pod runai-nlp/train-7-0-0 failed: container train-7 terminated with reason Error (exit code 143)"
    pod = b.k8s_pod(state=b.terminated(143))
    pod["status"]["conditions"] = [
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "PreemptionByScheduler",
            "message": "Kubernetes Scheduler: preempting to accommodate a higher priority pod",
            "lastTransitionTime": b.ago(minutes=62),
        }
    ]
    kube = {"pods": [pod], "events": [], "nodes": [b.node()], "logs": []}
    snap = b.snapshot(b.entry(b.workload(), history=b.failed_history("x", event_message=msg)), kubernetes=kube)
    report, _ = await diagnose(snap)
    assert report.outcome == Outcome.ROUTE_PREEMPTED


async def test_init_crash_loop_names_the_init_container(diagnose: Diagnose) -> None:
    history = [b.phase_update("Creating", b.ago(minutes=30)), b.phase_update("Initializing", b.ago(minutes=29))]
    history += [
        b.event(
            "BackOff",
            "Back-off restarting failed container download-weights in pod train-7-0-0_runai-nlp(u)",
            b.ago(minutes=20 - i),
        )
        for i in range(3)
    ]
    snap = b.snapshot(
        b.entry(b.workload(phase="Initializing"), history=history, pods=[b.pod(k8s_phase="Init:CrashLoopBackOff")])
    )
    report, _ = await diagnose(snap, intent="current")
    assert report.category == Category.INIT_FAILED
    assert "download-weights" in render_text(report)


async def test_deleted_terminal_match_beats_a_live_running_one_for_a_terminal_question(diagnose: Diagnose) -> None:
    msg = "Pod x failed: container train-7 terminated with reason OOMKilled (exit code 137)"
    deleted = b.workload(phase="Failed", phaseMessage=msg, deletedAt=b.ago(hours=2), phaseUpdatedAt=b.ago(hours=3))
    live = b.workload(phase="Running", phaseUpdatedAt=b.ago(hours=1), type="Workspace")
    snap = b.snapshot(b.entry(live, pods=[b.pod(k8s_phase="Running")]), b.entry(deleted, history=b.failed_history(msg)))
    report, _ = await diagnose(snap)
    assert report.identity is not None and report.identity.workload_id == deleted["id"]
    assert report.category == Category.OOM_KILLED


@pytest.mark.parametrize("text", ["why did my nlp job fail?", "why does the oom happen in nlp?"])
async def test_the_projects_own_name_or_a_jargon_word_is_not_taken_for_a_workload(
    diagnose: Diagnose, text: str
) -> None:
    """No workload is named "nlp" (the project) or "oom": the question names no workload, so it is asked for,
    never "No workload named 'nlp'"."""
    snap = b.snapshot(b.entry(b.workload(phase="Failed"), pods=[b.pod(k8s_phase="Failed")]))
    report, _ = await diagnose(snap, workload_name=None, intent=None, text=text)
    assert report.outcome == Outcome.NEEDS_INPUT, (report.outcome, report.headline)
    assert "nlp'" not in report.headline and "oom'" not in report.headline
