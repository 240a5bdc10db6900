"""The incident timeline (issue 19 §1): one first-failure rule for every system, phrased once."""

from __future__ import annotations

from datetime import UTC, datetime

from diagnosis.osmo.classify import root_failed_task, task_timeline
from diagnosis.osmo.models import Workflow
from diagnosis.runai import classify as cls
from diagnosis.runai import recurrence as rec
from diagnosis.runai.models import Event
from diagnosis.runai.signals import Kind, Signal
from diagnosis.timeline import Entry, Timeline, compact, lines

T0 = datetime(2026, 12, 1, 12, 3, 41, tzinfo=UTC)


def at(seconds: int) -> datetime:
    return datetime.fromtimestamp(T0.timestamp() + seconds, UTC)


def test_the_first_own_failure_decides_whatever_order_the_entries_come_in() -> None:
    master = Entry("master", at(11), "exit 1")
    worker = Entry("worker-3", at(0), "OOMKilled (exit 137)")
    timeline = Timeline.of([master, worker])
    assert timeline.first() is worker
    assert [e.subject for e in timeline.consequences()] == ["master"]
    assert timeline.failing() == ["worker-3", "master"]
    assert timeline.compact().split(" -> ")[0].endswith("worker-3 OOMKilled (exit 137)")


def test_a_consequence_never_decides_and_none_own_means_the_cause_is_unseen() -> None:
    stopped = Entry("worker-0", at(0), "SIGTERM (exit 143)", own=False)
    late = Entry("launcher", at(30), "exit 1")
    assert Timeline.of([stopped, late]).first() is late
    assert Timeline.of([stopped]).first() is None


def test_rank_comes_before_time_and_unknown_times_come_last() -> None:
    ranked = Entry("a", at(50), "FAILED (exit 1)", rank=0)
    early = Entry("b", at(0), "FAILED", rank=1)
    timeless = Entry("c", None, "FAILED")
    timeline = Timeline.of([timeless, early, ranked])
    assert timeline.first() is ranked
    assert timeline.entries[-1] is timeless
    assert timeline.lines()[-1].startswith("? c FAILED")


def test_one_subject_is_not_a_timeline_and_a_long_one_is_cut() -> None:
    one = Timeline.of([Entry("p", at(0), "OOMKilled"), Entry("p", at(5), "exit 137")])
    assert one.compact() == ""
    many = [Entry(f"t{i}", None, "failed") for i in range(6)]
    assert compact(many, many[1], 3) == "(+1 earlier) ? t1 failed -> ? t2 failed -> ? t3 failed (+2 more)"


def test_each_later_entry_is_said_for_what_it_is() -> None:
    """A consequence is one; an own failure after the first (a Job's retry) is a later failure, not a
    consequence."""
    first = Entry("job-abcde", at(0), "OOMKilled (exit 137)")
    entries = [first, Entry("job-master", at(5), "exit 143", own=False), Entry("job-fghij", at(60), "exit 1")]
    assert lines(entries, first) == [
        "12:03:41 job-abcde OOMKilled (exit 137) (first failure)",
        "12:03:46 job-master exit 143 (consequence)",
        "12:04:41 job-fghij exit 1 (later failure)",
    ]


def sig(kind: Kind, pod: str, seconds: int, **kw: object) -> Signal:
    return Signal(kind, text=f"{kind.value} {pod}", source="events", at=at(seconds), pod=pod, **kw)  # type: ignore[arg-type]


def test_runai_pod_order_reads_the_timeline() -> None:
    """A worker OOMKilled first; the master's NCCL timeout 11 s later is a consequence (FORMAT.md)."""
    signals = [
        sig(Kind.COLLECTIVE_TIMEOUT, "job-master-0", 11, exit_code=1),
        sig(Kind.OOM_KILLED, "job-worker-3", 0, reason="OOMKilled", exit_code=137, container="pytorch"),
    ]
    order = cls.order_pods(signals, {})
    assert order.first == "job-worker-3" and order.consequences == ("job-master-0",)
    first = order.timeline.first()
    assert first is not None and first.subject == "job-worker-3"
    assert first.what == "OOMKilled (exit 137)" and first.container == "pytorch"
    assert [e.own for e in order.timeline.entries] == [True, False]


def test_a_pods_ending_is_named_by_what_failed_not_by_the_event_that_reported_it() -> None:
    """A ``PodFailed`` event whose message says OOMKilled reads "OOMKilled", not "PodFailed"; a reason that
    names the failure (the container's own) still wins over the kind's words."""
    reported = [
        sig(Kind.OOM_KILLED, "job-worker-3", 0, reason="PodFailed", exit_code=137),
        sig(Kind.APP_EXIT, "job-worker-5", 20, reason="Failed", exit_code=1),
    ]
    order = cls.order_pods(reported, {})
    assert [e.what for e in order.timeline.entries] == ["OOMKilled (exit 137)", "exit 1"]
    both = [*reported[:1], sig(Kind.OOM_KILLED, "job-worker-3", 1, reason="OOMKilled", container="pytorch")]
    first = cls.order_pods(both, {}).timeline.first()
    assert first is not None and first.what == "OOMKilled (exit 137)" and first.container == "pytorch"


def _workflow(tasks: list[dict[str, object]]) -> Workflow:
    return Workflow.model_validate(
        {"name": "w-1", "status": "FAILED", "groups": [{"name": "g", "status": "FAILED", "tasks": tasks}]}
    )


def test_osmo_reads_the_same_rule_followers_never_first() -> None:
    wf = _workflow(
        [
            {"name": "rank-1", "status": "FAILED_UPSTREAM", "end_time": "2026-12-01T12:00:00"},
            {"name": "rank-0", "status": "FAILED", "exit_code": 1, "end_time": "2026-12-01T12:05:00"},
        ]
    )
    root = root_failed_task(wf)
    assert root is not None and root.name == "rank-0"
    timeline = task_timeline(wf)
    first = timeline.first()
    assert first is not None and first.subject == "rank-0" and first.at is not None and first.at.tzinfo is not None
    assert [e.subject for e in timeline.entries] == ["rank-1", "rank-0"]


def _evicted(pod: str, seconds: int) -> Event:
    return Event.model_validate(
        {
            "createdAt": at(seconds).isoformat(),
            "reason": "Evicted",
            "message": "The node was low on resource: memory.",
            "involvedObject": {"kind": "Pod", "name": pod},
        }
    )


def test_peers_ending_together_are_one_occurrence_and_a_new_attempt_is_another() -> None:
    """FORMAT.md "Evidence": the terminations of several pods in one incident are one occurrence; a new attempt
    after a failure (a new pod) is another."""
    events = [_evicted("job-worker-0", 0), _evicted("job-worker-1", 20), _evicted("job-worker-0-b", 600)]
    created = {"job-worker-0": at(-3600), "job-worker-1": at(-3600), "job-worker-0-b": at(30)}
    found = rec.occurrences([], events, at(-7200), created)
    assert [(o.pod, len(o.signals) > 0) for o in found] == [("job-worker-0", True), ("job-worker-0-b", True)]
    # without the pods' creation times, each pod's termination stays its own occurrence
    assert len(rec.occurrences([], events, at(-7200))) == 3


def test_tier2_orders_the_peers_by_their_own_container_states() -> None:
    """Tier 2 follows the timeline (issue 19): the failing peers are read beside the inspected pod, earliest
    first and at most 8, and their containers' finishedAt is when each ended."""
    from diagnosis.fetched import Call, Fetched
    from diagnosis.k8s import Tier2Evidence
    from diagnosis.runai import incident
    from diagnosis.runai.tier1 import Tier1
    from diagnosis.runai.tier2 import MAX_PEERS, failing_peers

    order = cls.PodOrder(first="w-3", failing=tuple(f"w-{i}" for i in range(12)))
    assert failing_peers(order, "w-3") == [f"w-{i}" for i in range(12) if i != 3][:MAX_PEERS]
    assert failing_peers(cls.PodOrder(first="w-0", failing=("w-0",)), "w-0") == []

    def pod(name: str, finished: datetime) -> dict[str, object]:
        state = {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": finished.isoformat()}}
        return {
            "metadata": {"name": name, "namespace": "ns"},
            "status": {"containerStatuses": [{"name": "main", "state": state}]},
        }

    none = Fetched(Call("x", "/x"), value=None)
    tier1 = Tier1(None, Fetched(Call("pods", "/p"), value=[]), none, none, none, none, none, none)  # type: ignore[arg-type]
    t2 = Tier2Evidence("ns", "w-3", pod=pod("w-3", at(5)), peers={"w-7": pod("w-7", at(2))})
    assert incident.pod_ended(tier1, t2) == {"w-3": at(5), "w-7": at(2)}


def test_a_running_workloads_replaced_attempts_are_history_but_index_named_replicas_are_not() -> None:
    """FORMAT.md "Questions": a Running workload is diagnosed for a crash loop *now*. An evicted pod created again
    under a new suffix is history; a failed ``job-worker-0`` is not replaced by ``job-worker-1``."""
    from diagnosis.fetched import Call, Fetched
    from diagnosis.runai import incident
    from diagnosis.runai.models import Pod, Workload
    from diagnosis.runai.tier1 import Tier1

    def tier1(pods: list[dict[str, object]]) -> tuple[Workload, Tier1]:
        wl = Workload.model_validate({"id": "w", "name": "job", "phase": "Running"})
        none = Fetched(Call("x", "/x"), value=None)
        listed = Fetched(Call("pods", "/p"), value=[Pod.model_validate(p) for p in pods])
        return wl, Tier1(wl, listed, none, none, none, none, none, none)  # type: ignore[arg-type]

    def pod(name: str, phase: str, created: int, completed: int | None = None) -> dict[str, object]:
        out: dict[str, object] = {"name": name, "k8sPhase": phase, "createdAt": at(created).isoformat()}
        if completed is not None:
            out["completedAt"] = at(completed).isoformat()
        return out

    wl, t1 = tier1([pod("job-master-0-9st9r", "Evicted", 0, 100), pod("job-master-0-p5n1c", "Running", 130)])
    assert incident.replaced(wl, t1) == {"job-master-0-9st9r"}
    wl, t1 = tier1([pod("job-worker-0", "Failed", 0, 100), pod("job-worker-1", "Running", 130)])
    assert incident.replaced(wl, t1) == set()


def test_the_runs_phase_updates_are_context_never_a_failure() -> None:
    worker = Entry("job-worker-3", at(10), "OOMKilled (exit 137)")
    master = Entry("job-master-0", at(20), "exit 1", own=False)
    timeline = Timeline.of([master, worker]).with_context(
        [Entry("job", at(0), "Running"), Entry("job", at(30), "Failed")]
    )
    assert timeline.first() == worker and timeline.failing() == ["job-worker-3", "job-master-0"]
    assert [e.subject for e in timeline.consequences()] == ["job-master-0"]
    assert timeline.lines() == [
        "12:03:41 job Running",
        "12:03:51 job-worker-3 OOMKilled (exit 137) (first failure)",
        "12:04:01 job-master-0 exit 1 (consequence)",
        "12:04:11 job Failed",
    ]
    assert timeline.compact(4) == (
        "12:03:51 job-worker-3 OOMKilled (exit 137) -> 12:04:01 job-master-0 exit 1 -> 12:04:11 job Failed"
    )
