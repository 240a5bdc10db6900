"""The Run:ai diagnosis by job (issue 20): a walk of one diagnosis enters each job once (its entry function:
``resolution.resolve``, ``routing.route``, ``decision.decide``, ``reporting.phrase``), from the procedure, and no
job enters another job; each job hands its value back to the procedure, which hands it on."""

from __future__ import annotations

import asyncio
import json
import sys
from types import FrameType
from typing import Any

import pytest

from diagnosis.config import KubeConfig, RunaiConfig
from diagnosis.question import Question
from diagnosis.report import Outcome
from diagnosis.runai import decision, reporting, resolution, routing
from diagnosis.runai.procedure import diagnose_runai
from diagnosis.units import parse_time
from sandbox.server import Sandbox
from tests.paths import SHARED

CASES = SHARED / "cases"

PROCEDURE = "diagnosis.runai.procedure"
#: each job's entry function, by its code object
JOBS = {
    resolution.resolve.__code__: "resolve",
    routing.route.__code__: "route",
    decision.decide.__code__: "decide",
    reporting.phrase.__code__: "phrase",
}


def _walk(case: str) -> tuple[Outcome, list[tuple[str, str]]]:
    """Diagnose one shared case through the sandbox; every entry into a job: (the caller's module, the job)."""
    snapshot = json.loads((CASES / "runai" / f"{case}.json").read_text())
    ask = snapshot["ask"]
    question = Question(
        workload_name=ask.get("workload_name"),
        project=ask.get("project"),
        cluster_id=ask.get("cluster_id"),
        text=ask.get("text"),
        lookback=ask.get("lookback") or "7d",
    )
    entries: list[tuple[str, str]] = []
    started: list[FrameType] = []  # kept alive, so a frame's identity is not reused while we look

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        job = JOBS.get(frame.f_code)
        if event != "call" or job is None or any(f is frame for f in started):
            return  # a coroutine resumed by the event loop is the same entry, not a new one
        started.append(frame)
        caller = frame.f_back.f_globals.get("__name__", "") if frame.f_back is not None else ""
        entries.append((caller, job))

    async def run() -> Outcome:
        with Sandbox(snapshot) as sandbox:
            config = RunaiConfig(sandbox.url, "sandbox", "sandbox", console_url=sandbox.url)
            report = await diagnose_runai(question, config, KubeConfig(), now=parse_time(snapshot["now"]))
            return report.outcome

    sys.setprofile(profile)
    try:
        outcome = asyncio.run(run())
    finally:
        sys.setprofile(None)
    return outcome, entries


@pytest.mark.parametrize(
    ("case", "jobs"),
    [
        ("crash-app-traceback", ["resolve", "route", "decide", "phrase"]),  # diagnosed: every job
        ("completed", ["resolve", "route", "phrase"]),  # routed out: no decision
        ("cluster-mismatch", ["resolve"]),  # ends at Step 1 (its answer built by the builder, not the phrase job)
    ],
)
def test_a_diagnosis_enters_each_job_once_from_the_procedure(case: str, jobs: list[str]) -> None:
    outcome, entries = _walk(case)
    assert outcome is not None
    assert [job for _, job in entries] == jobs, entries  # each once, in the order of the procedure
    assert {caller for caller, _ in entries} == {PROCEDURE}, entries  # never one job from inside another
