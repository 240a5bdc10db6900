"""Issue 21: scope written in people's shapes, both systems configured, and what the answers call things.

Each shape is asked through the real CLI path on the sandbox (``answer`` over loopback HTTP) against one small
world: clusters dgx-prod and dgx-staging, project nlp on both, llama-ft-3 OOMKilled in nlp on dgx-prod (and a
Pending llama-ft-3 in nlp on dgx-staging)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from diagnosis.answer import Backends, answer
from diagnosis.config import KubeConfig, OsmoConfig, RunaiConfig
from diagnosis.question import Question, infer_intent, parse_text
from diagnosis.report import Outcome
from diagnosis.runai import resolve
from diagnosis.runai.models import Workload
from diagnosis.units import parse_time
from handlers.parsing import apply_choice
from sandbox.server import Sandbox
from tests.paths import SHARED

RUNAI_WORLD = SHARED / "cases" / "runai" / "phrasing" / "pa-on-prod.json"
OSMO_WORLD = SHARED / "cases" / "osmo" / "osmo-failed-app.json"

pytestmark = pytest.mark.skipif(not RUNAI_WORLD.is_file(), reason="../shared/cases is not beside this checkout")


def _world(*, osmo: bool = False, twin: bool = False) -> dict[str, Any]:
    snap = json.loads(RUNAI_WORLD.read_text())
    if osmo:
        snap["osmo"] = json.loads(OSMO_WORLD.read_text())["osmo"]
    if twin:  # a Run:ai workload with the OSMO workflow's name
        entry = copy.deepcopy(next(w for w in snap["runai"]["workloads"] if w["workload"]["name"] == "llama-ft-3"))
        entry["workload"].update(name="grasp-policy-train-17", id="11111111-2222-3333-4444-555555555555")
        snap["runai"]["workloads"].append(entry)
    return snap


async def _ask(snap: dict[str, Any], text: str, **keys: Any) -> Any:
    now = parse_time(snap["now"])
    with Sandbox(snap) as sandbox:
        backends = Backends(
            runai=RunaiConfig(sandbox.url, "sandbox", "sandbox", console_url=sandbox.url),
            kube=KubeConfig(),
            osmo=OsmoConfig(sandbox.url, "sandbox-access-token") if "osmo" in snap else None,
            now=lambda: now,  # type: ignore[arg-type,return-value]
        )
        report = await answer(parse_text(text).merged(Question(**keys)), backends)
        assert sandbox.mutating_requests() == []
        return report


@pytest.mark.parametrize(
    "text",
    [
        "dgx-prod/nlp/llama-ft-3 failed",
        "why did nlp/llama-ft-3 fail? on dgx-prod",
        "llama-ft-3 (nlp) died, on dgx-prod",
        "why did llama-ft-3 (nlp, dgx-prod) fail",
        "why did llama-ft-3 (dgx-prod, nlp) fail",
        "why did llama-ft-3 fail --project nlp --cluster dgx-prod",
        "runai describe llama-ft-3 -p nlp on dgx-prod",
        "llama-ft-3 nlp project dgx-prod cluster failed",
        "llama-ft-3 nlp dgx-prod",
        "why did llama-ft-3 fail? nlp dgx-prod",
        "llama-ft-3 DGX-PROD NLP",
        "why did llama\u200b-ft-3 fail in nlp on dgx-prod",
        "why did \u2060llama-ft-3\ufeff fail in nlp on dgx-prod",
        "https://acme.run.ai/workloads?clusterId=71f69d83-ba66-4822-adf5-55ce55efd210 llama-ft-3 in nlp failed",
    ],
)
async def test_scope_in_other_shapes_names_the_project_and_cluster(text: str) -> None:
    report = await _ask(_world(), text)
    assert report.outcome == Outcome.DIAGNOSED, report.headline
    assert report.category.value == "OOM_KILLED"
    assert report.identity.name == "llama-ft-3"


async def test_a_project_on_two_clusters_is_never_called_missing_and_its_clusters_are_offered() -> None:
    report = await _ask(_world(), "why did llama-ft-3 fail in nlp?")
    assert report.outcome == Outcome.NEEDS_INPUT
    assert "no project" not in report.headline.lower() and "nlp" not in (report.question or "").split("I need")[-1]
    assert report.missing == ["cluster"]
    assert report.headline == "To diagnose 'llama-ft-3' I need the cluster (name or id)."  # the first line says it
    assert sorted(c.label for c in report.choices) == ["dgx-prod", "dgx-staging"]


def test_words_of_a_workload_not_started_yet_are_a_current_symptom() -> None:
    for text in (
        "llama-ft-3 hasn't started yet",
        "train-7 is still waiting to be scheduled",
        "it has not been scheduled",
        "my job never started",
        "queued for hours",
    ):
        assert infer_intent(text) == "current", text
    assert infer_intent("why did train-7 fail overnight?") == "terminal"


def test_a_plain_question_reads_no_scope_tokens() -> None:
    """ "why did W fail?" names nothing that could be a project or a cluster: no list is read to check it (the
    spec's "ask before calling tools")."""
    assert parse_text("why did train-7 fail?").loose == []
    assert "nlp-train" in parse_text("why did train-7 fail again?? nlp-train").loose


@pytest.mark.parametrize(
    ("text", "outcome", "system"),
    [
        ("why did llama-ft-3 fail in nlp on dgx-prod", Outcome.DIAGNOSED, "runai"),  # "-<number>" is no proof
        ("workflow llama-ft-3 in nlp on dgx-prod failed", Outcome.DIAGNOSED, "runai"),  # nor the word "workflow"
        ("why did my job grasp-policy-train-17 fail", Outcome.FAILED, "osmo"),  # nor the word "job"
        ("look at https://osmo.example.com/workflows/grasp-policy-train-17", Outcome.FAILED, "osmo"),
    ],
)
async def test_with_both_systems_the_one_that_has_the_name_answers(text: str, outcome: Outcome, system: str) -> None:
    report = await _ask(_world(osmo=True), text)
    assert (report.outcome, report.system) == (outcome, system), report.headline


async def test_a_name_in_neither_system_is_not_found_in_both() -> None:
    report = await _ask(_world(osmo=True), "why did nosuch-5 fail?")
    assert report.outcome == Outcome.NOT_FOUND
    assert "Run:ai" in report.headline and "OSMO" in report.headline and "nosuch-5" in report.headline


async def test_a_name_in_both_systems_is_asked_about_and_a_choice_answers_it() -> None:
    world = _world(osmo=True, twin=True)
    report = await _ask(world, "why did grasp-policy-train-17 fail?")
    assert report.outcome == Outcome.NEEDS_INPUT
    assert [c.value for c in report.choices] == ["runai", "osmo"]
    picked = apply_choice(parse_text("why did grasp-policy-train-17 fail?"), "system", "osmo")
    report = await _ask(world, picked.text or "", **{k: v for k, v in picked.model_dump().items() if k != "text"})
    assert (report.outcome, report.system) == (Outcome.FAILED, "osmo")


def _workload(name: str, phase: str, hours_ago: float, now: datetime) -> Workload:
    return Workload.model_validate(
        {"id": name, "name": name, "phase": phase, "phaseUpdatedAt": (now - timedelta(hours=hours_ago)).isoformat()}
    )


def test_did_you_mean_lists_the_closest_first_and_the_newest_failure_breaks_a_tie() -> None:
    now = datetime(2026, 11, 28, 12, tzinfo=UTC)
    existing = [
        _workload("bert-fx", "Failed", 30, now),
        _workload("bert-ft", "Failed", 2, now),
        _workload("bert-ft-long-name", "Failed", 1, now),
    ]
    names = [n for n, _ in resolve.suggest("bert-fz", existing, now)]
    assert names[:2] == ["bert-ft", "bert-fx"]  # equally close: the newer failure first
    assert names.index("bert-ft-long-name") > 1  # the newest failure, but not as close


def _cli(tmp_path: Path, ask_text: str, *args: str) -> str:
    """``workload-doctor diagnose [args] --snapshot F`` on the world asked ``ask_text``: its stdout."""
    snap = _world()
    snap["ask"] = {"text": ask_text}
    path = tmp_path / "ask.json"
    path.write_text(json.dumps(snap))
    cli = str(Path(sys.executable).parent / "workload-doctor")
    return subprocess.run([cli, "diagnose", *args, "--snapshot", str(path)], capture_output=True, text=True).stdout


def test_the_json_answer_carries_the_cards_choices(tmp_path: Path) -> None:
    data = json.loads(_cli(tmp_path, "why did llama-ft-3 fail in nlp?", "--format", "json"))
    buttons = [e for b in data["blocks"] if b.get("type") == "actions" for e in b["elements"]]
    assert [c["label"] for c in data["choices"]] == [b["text"]["text"] for b in buttons]
    assert data["missing"] == ["cluster"]
    typed = _cli(tmp_path, "why did llama-ft-3 fail in nlp?", "why did train-7 fail in nlp-train on dgx-prod")
    assert typed.startswith("DIAGNOSED: NODE_FAILURE — Node failure: train-7"), typed[:300]  # the typed one wins


def test_a_header_is_the_verdict_words_and_the_name_never_the_code_repeated(tmp_path: Path) -> None:
    out = _cli(tmp_path, "why did lama-ft-3 fail in nlp on dgx-prod?")
    first, second = out.splitlines()[:2]
    assert first == "Not found: lama-ft-3"
    assert "on cluster dgx-prod" in second and "71f69d83" not in second  # the cluster's name; its id in evidence
    assert out.count("Did you mean") == 1


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("dgx-prod/research/nightly", "DATASOURCE_MOUNT_FAILED"),  # the one name-shaped token is the cluster
        ("nightly (research, dgx-prod)", "DATASOURCE_MOUNT_FAILED"),
        ("is nightly still queued? research dgx-prod", "DATASOURCE_MOUNT_FAILED"),  # "queued" is no workload
        ("research/nightly dgx-prod hasn't been scheduled", "DATASOURCE_MOUNT_FAILED"),  # nor "hasn"
        ("nlp project llama-ft-3 dgx-prod", "OOM_KILLED"),  # "P project W": the project is the one that exists
        ("dgx-prod nlp llama-ft-3", "OOM_KILLED"),  # scope before the workload
    ],
)
async def test_a_name_that_is_the_scope_is_never_the_workload(text: str, category: str) -> None:
    report = await _ask(_world(), text)
    assert report.outcome == Outcome.DIAGNOSED, report.headline
    assert report.category.value == category


@pytest.mark.parametrize(
    "text",
    [
        "why did train-7 fail on dgx-prod",  # the cluster named by "on": never "no project or cluster named"
        "llama-ft-3 in vision on dgx-prod",  # vision is a project, on dgx-staging
        "why did llama-ft-3 fail in project vision on dgx-prod",
    ],
)
async def test_a_project_or_cluster_that_exists_is_never_called_missing(text: str) -> None:
    report = await _ask(_world(), text)
    said = f"{report.headline} {report.question or ''}"
    assert "no project or cluster named" not in said, said
    if "vision" in text:
        assert "dgx-staging" in said, said  # where the project named is


async def test_two_systems_holding_different_names_of_the_text_ask_without_crashing() -> None:
    """Run:ai holds one candidate of the text, OSMO another: the person is asked, naming one of them."""
    from diagnosis import systems

    class Holder:
        def __init__(self, name: str, holds: set[str]) -> None:
            self.name, self._holds = name, holds

        async def holds(self, names: Any, question: Question, backends: Backends) -> set[str]:
            return {n for n in names if n in self._holds}

    question = parse_text("train-7 or sdg-render-7, which one broke?")
    ready: Any = [Holder("runai", {"train-7"}), Holder("osmo", {"sdg-render-7"})]
    report = await systems.choose(question, ready, Backends(now=lambda: datetime(2026, 11, 28, tzinfo=UTC)))
    assert not isinstance(report, Question) and report.outcome == Outcome.NEEDS_INPUT
    assert [c.value for c in report.choices] == ["runai", "osmo"]
