"""Neighbours on the same node (issue 19 §2): when the first failing pod's node shows a node fault, or the cause is
UNKNOWN, the other workloads' pods that failed on that node within 15 minutes of the first failure are counted with
one bounded call to ``GET /api/v1/workloads/pods``. Supporting evidence only: never a category, never a change of
one; a failed read is a named gap; a workload in a project the asker may not see is counted, never named."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any
from urllib.parse import unquote

import pytest

from bot.policy import Policy
from diagnosis.answer import Backends, answer
from diagnosis.config import KubeConfig, RunaiConfig
from diagnosis.question import Question
from diagnosis.render import render_text, to_json
from diagnosis.report import Category, Identity, Neighbours, NeighbourWorkload, Outcome, Report
from diagnosis.runai.client import RunaiClient
from diagnosis.wording import neighbours_line
from handlers.blocks import render_report
from handlers.seen import seen_by
from sandbox.server import Sandbox
from tests import builders as b
from tests.conftest import Diagnose

NODE_NOT_READY = "Node dgx-01 status is now: NodeNotReady"
NEIGHBOURS_PATH = "/api/v1/workloads/pods"


def _pod(name: str, node: str, phase: str, completed: str | None, workload: dict[str, Any]) -> dict[str, Any]:
    p = b.pod(name, k8s_phase=phase, node=node)
    p["completedAt"] = completed
    p["workloadId"] = workload["id"]
    return p


#: (workload, project, node, k8sPhase, minutes before now it completed): the first failure is 61 min ago on dgx-01
OTHERS = [
    ("other-a", "nlp", "dgx-01", "Failed", 65),  # counted
    ("other-b", "vision", "dgx-01", "Failed", 58),  # counted; named only to who may see vision
    ("other-c", "nlp", "dgx-01", "Failed", 95),  # 34 min before: outside the window
    ("other-d", "nlp", "dgx-02", "Failed", 61),  # another node
    ("other-e", "nlp", "dgx-01", "Succeeded", 61),  # completed without failing
]


def node_failure(*, neighbours: bool = True, message: str = NODE_NOT_READY, reason: str = "NodeNotReady") -> Any:
    """train-7 failed on dgx-01 (Tier 1 only) with ``reason``; its own second pod also failed there; the other
    workloads of :data:`OTHERS` ran on the cluster."""
    me = b.workload()
    mine = [_pod("train-7-0-0", "dgx-01", "Failed", b.ago(minutes=61), me)]
    mine.append(_pod("train-7-0-1", "dgx-01", "Failed", b.ago(minutes=60), me))
    history = b.failed_history("", event_reason=reason, event_message=message)
    entries = [b.entry(me, history, pods=mine)]
    for name, project, node, phase, minutes in OTHERS if neighbours else []:
        w = b.workload(name, project=project)
        entries.append(b.entry(w, [], pods=[_pod(f"{name}-0-0", node, phase, b.ago(minutes=minutes), w)]))
    return b.snapshot(*entries)


def unknown_137(*, neighbours: bool = True) -> Any:
    """train-7 ended with exit 137 and nothing that explains it (UNKNOWN without Tier 2)."""
    return node_failure(
        neighbours=neighbours,
        reason="PodFailed",
        message="container train-7 terminated with reason Error (exit code 137)",
    )


def _asked(sandbox: Sandbox) -> list[str]:
    return [unquote(r.query) for r in sandbox.requests if r.path == NEIGHBOURS_PATH]


# -- the call, through the real client ----------------------------------------------------------------------------


async def test_the_client_lists_the_nodes_pods_in_one_bounded_call() -> None:
    snap = node_failure()
    me = snap["runai"]["workloads"][0]["workload"]["id"]
    around = b.NOW - timedelta(minutes=61)
    with Sandbox(snap) as sandbox:
        config = RunaiConfig(sandbox.url, "c", "s", console_url=sandbox.url)
        async with RunaiClient(config) as client:
            read = client.list_node_pods("dgx-01", around - timedelta(minutes=15), around + timedelta(minutes=15), me)
            pods = await read
    assert sorted((p.name, p.workload_name, p.project_name) for p in pods) == [
        ("other-a-0-0", "other-a", "nlp"),
        ("other-b-0-0", "other-b", "vision"),
        ("other-e-0-0", "other-e", "nlp"),
    ]
    assert pods.stopped is None
    (query,) = _asked(sandbox)
    # the call cited is the request made: the filter (explode false: one comma-joined value), verbosity and limit
    assert read.call.path == f"{NEIGHBOURS_PATH}?{query.replace('offset=0&', '')}"
    assert query == (
        f"filterBy=nodeName==dgx-01,workloadId!={me},completedAt>=2026-11-28T10:44:00Z,"
        "completedAt<=2026-11-28T11:14:00Z&verbosity=full&limit=100"
    )


async def test_a_full_page_says_the_list_goes_on() -> None:
    with Sandbox(node_failure()) as sandbox:
        async with RunaiClient(RunaiConfig(sandbox.url, "c", "s", console_url=sandbox.url)) as client:
            pods = await client.list_node_pods("dgx-01", b.NOW - timedelta(hours=2), b.NOW, limit=1)
    assert len(pods) == 1 and pods.stopped is not None and "first 1 pods" in pods.stopped


async def test_a_node_name_a_filter_cannot_carry_is_not_asked() -> None:
    with Sandbox(node_failure()) as sandbox:
        async with RunaiClient(RunaiConfig(sandbox.url, "c", "s", console_url=sandbox.url)) as client:
            with pytest.raises(LookupError, match="not asked"):
                await client.list_node_pods("dgx-01,nodeName!=x", b.NOW - timedelta(hours=1), b.NOW)
    assert _asked(sandbox) == []


# -- the diagnosis ------------------------------------------------------------------------------------------------


async def test_a_node_failure_counts_the_other_workloads_failed_on_its_node(diagnose: Diagnose) -> None:
    report, sandbox = await diagnose(node_failure())
    assert report.category == Category.NODE_FAILURE
    near = report.neighbours
    assert near is not None and near.node == "dgx-01" and near.pod == "train-7-0-0"
    assert [(w.name, w.project, w.pods) for w in near.workloads] == [("other-a", "nlp", 1), ("other-b", "vision", 1)]
    assert near.hidden == 0 and near.count == 2 and not near.more
    assert len(_asked(sandbox)) == 1  # one bounded call
    text = render_text(report)
    assert "Neighbours on the node (supporting evidence, never the cause by itself):" in text
    assert "2 other workloads' pods on node dgx-01 failed within 15 min of the first failure" in text
    data = to_json(report)["neighbours"]
    assert data["count"] == 2 and data["supporting_evidence_only"] is True
    assert [w["name"] for w in data["workloads"]] == ["other-a", "other-b"]


async def test_unknown_counts_them_too(diagnose: Diagnose) -> None:
    report, _ = await diagnose(unknown_137())
    assert report.category == Category.UNKNOWN
    assert report.neighbours is not None and report.neighbours.count == 2


async def test_a_cause_that_is_neither_reads_no_neighbours(diagnose: Diagnose) -> None:
    snap = node_failure(reason="BackOff", message='Back-off pulling image "img:1": ErrImagePull: not found')
    report, sandbox = await diagnose(snap)
    assert report.category == Category.IMAGE_PULL_FAILED
    assert report.neighbours is None and _asked(sandbox) == []


@pytest.mark.parametrize("build", [node_failure, unknown_137])
async def test_neighbours_never_change_the_category(diagnose: Diagnose, build: Any) -> None:
    alone, _ = await diagnose(build(neighbours=False))
    crowded, _ = await diagnose(build())
    assert alone.neighbours is not None and alone.neighbours.count == 0
    assert crowded.neighbours is not None and crowded.neighbours.count == 2
    assert crowded.category == alone.category
    assert crowded.headline == alone.headline and crowded.next_action == alone.next_action
    assert crowded.confidence == alone.confidence
    assert [e.value for e in crowded.evidence] == [e.value for e in alone.evidence]
    assert "No other workload's pod on node dgx-01 failed within 15 min" in render_text(alone)


async def test_unknown_stays_unknown_however_many_neighbours_failed(diagnose: Diagnose) -> None:
    snap = unknown_137(neighbours=False)
    for i in range(30):
        w = b.workload(f"victim-{i}")
        pod = _pod(f"victim-{i}-0", "dgx-01", "Failed", b.ago(minutes=61), w)
        snap["runai"]["workloads"].append(b.entry(w, [], pods=[pod]))
    report, _ = await diagnose(snap)
    assert report.category == Category.UNKNOWN
    assert report.neighbours is not None and report.neighbours.count == 30


async def test_a_failed_neighbours_read_is_a_named_gap_and_the_same_category(diagnose: Diagnose) -> None:
    snap = node_failure()
    snap["faults"] = [{"path": NEIGHBOURS_PATH, "status": 500}]
    report, sandbox = await diagnose(snap)
    assert report.category == Category.NODE_FAILURE and report.neighbours is None
    (gap,) = [g for g in report.gaps if "other workloads' pods on node dgx-01" in g.what]
    assert "supporting evidence" in gap.what
    assert "HTTP 500" in gap.why and f"GET {NEIGHBOURS_PATH}?filterBy=nodeName==dgx-01" in gap.why
    assert _asked(sandbox)  # asked (and retried), never guessed


@pytest.mark.parametrize(("kube", "depth"), [(True, 3), (False, 3)])
async def test_round_trips(kube: bool, depth: int) -> None:
    """Exit 137 unexplained in Tier 1. With Tier 2 it is read, and the neighbours' read goes in the same round trip
    (the node is known from the Run:ai pods list): a name+project question stays at 3 sequential round trips (list,
    Tier 1, Tier 2). Without Tier 2 the read comes after the decision: 3 too, where it was 2. Measured on a second
    diagnosis, as in a running bot (the first one loads the Kubernetes client, which delays Tier 2's requests)."""
    snap = unknown_137()
    if kube:
        snap["kubernetes"] = {"pods": [b.k8s_pod(state=b.terminated(137))], "events": [], "nodes": [], "logs": []}
    with Sandbox(snap, latency=0.2) as sandbox:  # wide enough for a busy machine
        backends = Backends(
            runai=RunaiConfig(sandbox.url, "c", "s", console_url=sandbox.url),
            kube=KubeConfig.from_env(sandbox.kube_env()) if kube else KubeConfig(),
            now=lambda: b.NOW,
        )
        await answer(Question.model_validate(snap["ask"]), backends)
        first = len(sandbox.requests)
        report = await answer(Question.model_validate(snap["ask"]), backends)
        mine = [r for r in sandbox.requests[first:] if not r.path.endswith("/token")]
    assert report.category == Category.UNKNOWN
    assert report.neighbours is not None and report.neighbours.count == 2
    assert sandbox.sequential_depth(mine) == depth


# -- what an asker may see ----------------------------------------------------------------------------------------


def _report() -> Report:
    return Report(
        system="runai",
        outcome=Outcome.DIAGNOSED,
        category=Category.NODE_FAILURE,
        headline="train-7 failed because node dgx-01 became NotReady.",
        identity=Identity(system="runai", name="train-7", cluster_name="dgx-prod", cluster_id=b.CLUSTER, project="nlp"),
        neighbours=Neighbours(
            node="dgx-01",
            pod="train-7-0-0",
            around=b.NOW - timedelta(minutes=61),
            workloads=[
                NeighbourWorkload(name="other-a", project="nlp"),
                NeighbourWorkload(name="secret-vision-run", project="vision", pods=3),
                NeighbourWorkload(name="unlabelled-run", project=None),
            ],
            source="GET /api/v1/workloads/pods?filterBy=nodeName==dgx-01",
        ),
    )


def _policy(projects: list[str]) -> Policy:
    return Policy.from_dict({"access": [{"who": ["U1"], "clusters": ["dgx-prod"], "projects": projects}]})


def test_a_neighbour_in_a_project_the_asker_may_not_see_is_counted_not_named() -> None:
    seen = seen_by(_policy(["nlp"]), "U1", set(), _report())
    assert seen.neighbours is not None
    assert [w.name for w in seen.neighbours.workloads] == ["other-a"]
    assert seen.neighbours.hidden == 2 and seen.neighbours.count == 3
    line = neighbours_line(seen)
    assert line.startswith("3 other workloads' pods on node dgx-01")
    assert line.endswith(": other-a (+2 in projects you cannot see).")
    everything = render_text(seen, verbose=True) + json.dumps(to_json(seen))
    rendered = render_report(seen)
    everything += json.dumps([m.payload() for m in [rendered.main, *rendered.thread, *rendered.evidence]])
    assert "other-a" in everything
    for hidden in ("secret-vision-run", "unlabelled-run", "vision"):
        assert hidden not in everything


def test_without_a_policy_every_neighbour_is_named() -> None:
    seen = seen_by(Policy(), "U1", set(), _report())
    assert seen.neighbours is not None and seen.neighbours.hidden == 0
    assert neighbours_line(seen).endswith(": other-a, secret-vision-run (3 pods), unlabelled-run.")


def test_every_project_allowed_names_an_unknown_one_too() -> None:
    seen = seen_by(_policy(["*"]), "U1", set(), _report())
    assert seen.neighbours is not None and len(seen.neighbours.workloads) == 3


def test_the_words_of_one_hidden_and_of_a_full_page() -> None:
    report = _report()
    assert report.neighbours is not None
    one = report.model_copy(
        update={"neighbours": report.neighbours.model_copy(update={"workloads": [], "hidden": 1, "more": True})}
    )
    line = neighbours_line(one)
    assert line.startswith("at least 1 other workload's pods on node dgx-01")
    assert line.endswith(": +1 in a project you cannot see.")
