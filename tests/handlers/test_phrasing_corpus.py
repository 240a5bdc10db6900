"""The phrasing corpus (issue 11 §4): every question of ``tests/corpora/phrasing.txt`` goes through the one parser
and the real Run:ai procedure against the sandbox (one sandbox per world), and must resolve to the workload and the
outcome the corpus names."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

from diagnosis.answer import Backends, answer
from diagnosis.config import KubeConfig, RunaiConfig
from diagnosis.question import Question, parse_text
from sandbox.server import Sandbox
from tests import builders as b
from tests.diagnosis.test_redaction_corpus import report_figure
from tests.paths import ROOT, TESTS

CORPUS = TESTS / "corpora" / "phrasing.txt"
LAB_C2 = b.OTHER_CLUSTER
FARM_A = "9a6f2b3c-1d4e-4f5a-8b7c-0e1d2c3b4a59"
FARM_B = "1e2d3c4b-5a69-4788-9a0b-c1d2e3f4a5b6"
BERT_FT_ID = "3c1b5c9e-2d4f-4a7e-9b1a-6f0e8d7c5a41"
GPT_ID = "5d2e8f1a-3b4c-4d5e-8f6a-7b8c9d0e1f23"


def _failed(name: str, project: str, cluster: str = b.CLUSTER, hours: float = 1, **kw: Any) -> dict[str, Any]:
    msg = f"Pod {name}-0-0 failed: container {name} terminated with reason OOMKilled (exit code 137)"
    wl = b.workload(name, project, "Failed", clusterId=cluster, phaseUpdatedAt=b.ago(hours=hours), **kw)
    wl["phaseMessage"] = msg
    return b.entry(wl, history=b.failed_history(msg, pod_name=f"{name}-0-0"), pods=[b.pod(f"{name}-0-0")])


def _pending(name: str, project: str, cluster: str = b.CLUSTER) -> dict[str, Any]:
    quota = (
        f"Non-preemptible workload is over quota. Workload requested 4 GPUs, but {project} quota is 8 GPUs, while 6 "
        "GPUs are already allocated for non-preemptible pods. Use a preemptible workload to go over quota."
    )
    wl = b.workload(
        name,
        project,
        "Pending",
        clusterId=cluster,
        phaseMessage=quota,
        phaseReason="NonPreemptibleOverQuota",
        preemptible=False,
        k8sPhase="Pending",
    )
    history = [b.phase_update("Creating", b.ago(hours=3)), b.phase_update("Pending", b.ago(hours=3))]
    return b.entry(wl, history=history, pods=[])


def _completed(name: str, project: str) -> dict[str, Any]:
    wl = b.workload(name, project, "Completed")
    return b.entry(wl, history=[b.phase_update("Running", b.ago(hours=3)), b.phase_update("Completed", b.ago(hours=1))])


def _preempted(name: str, project: str) -> dict[str, Any]:
    e = _failed(name, project)
    e["workload"]["phaseMessage"] = ""
    e["history"] = [
        b.phase_update("Running", b.ago(hours=3)),
        b.event(
            "Evict",
            f"Pod runai-{project}/{name}-0-0 was preempted by higher priority workload runai-genai/pg-llm-0-"
            "fdfca418-390f-00e3-fc55-53aa16c2be74",
            b.ago(minutes=61),
            pod=f"{name}-0-0",
            source="runai-scheduler",
            type_="Normal",
        ),
        b.phase_update("Failed", b.ago(hours=1), "preempted"),
    ]
    return e


def _project(name: str, cluster: str, pid: str) -> dict[str, Any]:
    return {"id": pid, "name": name, "clusterId": cluster, "status": {"namespace": f"runai-{name}"}}


def lab() -> dict[str, Any]:
    bert = _failed("bert-ft", "vision", hours=2)
    bert["workload"]["id"] = BERT_FT_ID
    snap = b.snapshot(
        bert,
        _failed("resnet-50x", "vision"),
        _failed("train-7", "nlp"),
        _failed("bert-ft-7", "nlp"),
        _failed("nightly", "nlp"),
        _failed("llama", "nlp"),
        _failed("baseline", "speech"),
        _failed("main", "speech"),
        _failed("asr-conformer", "speech"),
        _pending("vit-h14", "vision"),
        _completed("sdxl-run-3", "vision"),
        _preempted("bert-pretrain", "nlp"),
    )
    snap["runai"]["projects"] = [
        _project("nlp", b.CLUSTER, "1"),
        _project("vision", b.CLUSTER, "2"),
        _project("speech", b.CLUSTER, "3"),
        _project("vision", LAB_C2, "4"),
    ]
    return snap


def farm() -> dict[str, Any]:
    gpt = _failed("gpt-distill-4", "research", FARM_A)
    gpt["workload"]["id"] = GPT_ID
    snap = b.snapshot(
        gpt,
        _failed("whisper-large", "research", FARM_A),
        _failed("eval", "research", FARM_A),
        _failed("kws-train", "prod-inference", FARM_A),
        _failed("kws.train.v2", "prod-inference", FARM_A),
        _failed("nlp-8", "research", FARM_B),
        _pending("llm-serve", "prod-inference", FARM_A),
    )
    snap["runai"]["clusters"] = [{"uuid": FARM_A, "name": "a100-east"}, {"uuid": FARM_B, "name": "h100-west"}]
    snap["runai"]["projects"] = [
        _project("research", FARM_A, "11"),
        _project("prod-inference", FARM_A, "12"),
        _project("research", FARM_B, "13"),
    ]
    return snap


WORLDS = {"lab": lab, "farm": farm}
CLUSTERS = {"C": b.CLUSTER, "C2": LAB_C2, "A": FARM_A, "-": None}


def corpus() -> list[tuple[str, str | None, str, str | None, str]]:
    rows = []
    for line in CORPUS.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        world, cluster, text, workload, outcome = (p.strip() for p in line.split("|"))
        rows.append((world, CLUSTERS[cluster], text, None if workload == "-" else workload, outcome))
    return rows


ROWS = corpus()


@pytest.fixture(scope="module")
def sandboxes() -> Iterator[dict[str, Sandbox]]:
    started = {}
    for name, build in WORLDS.items():
        sb = Sandbox(build())
        sb.start()
        started[name] = sb
    yield started
    for sb in started.values():
        sb.stop()


def test_the_corpus_is_large_and_varied() -> None:
    assert len(ROWS) >= 150
    assert len({r[0] for r in ROWS}) >= 2
    outcomes = {r[4] for r in ROWS}
    assert {"diagnosed", "needs_input", "not_found", "route_pending", "route_preempted", "succeeded"} <= outcomes


async def _ask(sb: Sandbox, cluster: str | None, text: str) -> Any:
    backends = Backends(
        runai=RunaiConfig(sb.url, "sandbox", "sandbox", console_url="https://runai.example.com", deadline=30.0),
        kube=KubeConfig(),
        now=lambda: b.NOW,
    )
    question = Question(text=text, cluster_id=cluster).merged(parse_text(text))
    return await answer(question, backends)


async def test_every_question_resolves_as_the_corpus_says(
    sandboxes: dict[str, Sandbox], request: pytest.FixtureRequest
) -> None:
    failures = []
    sem = asyncio.Semaphore(8)

    async def one(row: tuple[str, str | None, str, str | None, str]) -> None:
        world, cluster, text, workload, outcome = row
        async with sem:
            report = await _ask(sandboxes[world], cluster, text)
        got = report.identity.workload_name if report.identity else None
        if report.outcome.value != outcome or (workload is not None and got != workload):
            failures.append(f"{world} | {text!r}: got {report.outcome.value} {got}, want {outcome} {workload}")

    await asyncio.gather(*(one(r) for r in ROWS))
    report_figure(request, f"phrasing corpus: {len(ROWS) - len(failures)}/{len(ROWS)} questions resolve as it says")
    assert not failures, f"{len(failures)} of {len(ROWS)} failed:\n" + "\n".join(sorted(failures))


async def test_not_found_suggests_the_closest_names_first(sandboxes: dict[str, Sandbox]) -> None:
    report = await _ask(sandboxes["lab"], b.CLUSTER, "why did bert-fy fail in vision?")
    assert report.outcome.value == "not_found"
    assert report.headline.startswith("No workload named 'bert-fy' exists in project 'vision' on cluster dgx-prod")
    assert report.question == "Did you mean `bert-ft` (Failed 2 h ago)?"
    assert report.next_action is None  # the question appears once
    assert [c.value for c in report.choices][:1] == ["bert-ft"]
    assert all(c.field == "workload_name" for c in report.choices)


async def test_two_existing_workloads_named_give_both_as_choices(sandboxes: dict[str, Sandbox]) -> None:
    report = await _ask(sandboxes["lab"], b.CLUSTER, "bert-ft vs resnet-50x in vision: why did they fail")
    assert report.outcome.value == "needs_input"
    assert sorted(c.value for c in report.choices) == ["bert-ft", "resnet-50x"]


async def test_pending_is_diagnosed_not_handed_off(sandboxes: dict[str, Sandbox]) -> None:
    report = await _ask(sandboxes["lab"], b.CLUSTER, "is vit-h14 stuck in vision?")
    assert report.outcome.value == "route_pending"
    text = report.headline + " " + (report.next_action or "")
    assert "8 GPUs of quota with 6 allocated, so 2 free for the 4 it asks for" in text
    assert "preemptible" in (report.next_action or "")
    assert "pending-workload diagnosis" not in text


async def test_preempted_names_the_preemptor_and_never_a_skill(sandboxes: dict[str, Sandbox]) -> None:
    report = await _ask(sandboxes["lab"], b.CLUSTER, "what killed bert-pretrain in nlp?")
    assert report.outcome.value == "route_preempted"
    assert "workload llm" in report.headline
    assert "runai-diagnose" not in report.model_dump_json()


def test_a_one_word_english_token_is_never_a_candidate_unless_it_exists() -> None:
    q = parse_text("why did it fail again? it has been stuck all morning")
    assert q.workload_name is None and q.candidates == []
    assert parse_text("why did nightly fail").words[:1] == ["nightly"]
    assert parse_text("yo whyy did bert-ft faill").candidates[0] == "bert-ft"


def test_lookback_window_default() -> None:
    assert Question().lookback_delta() == timedelta(days=7)


SHARED_RUNAI = ROOT.parent / "shared" / "cases" / "runai"


@pytest.mark.parametrize("case", ["option-b-two-matches", "pending-unschedulable", "missing-project"])
async def test_resolution_adds_at_most_one_sequential_round_trip(case: str) -> None:
    from bench.diagnose import bench

    path = SHARED_RUNAI / f"{case}.json"
    if not await asyncio.to_thread(path.exists):
        pytest.skip("shared cases are not beside the checkout")
    result = await bench(path, runs=2, latency=0.03)
    assert result["free_text_outcome"] == result["outcome"]
    assert isinstance(result["added_by_resolution"], int) and result["added_by_resolution"] <= 1, result
    assert isinstance(result["sequential_round_trips_max"], int) and result["sequential_round_trips_max"] <= 3
