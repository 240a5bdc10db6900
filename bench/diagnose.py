"""Benchmark: diagnoses against the sandbox with injected latency per request.

Reports wall-time percentiles over N diagnoses, the ratio of p50 to the injected latency (how many
round trips' worth of waiting a diagnosis costs), and the longest chain of sequential requests
(token excluded: it is cached across diagnoses in a running bot). Goal: at most 3 sequential
round trips for a name+project question (list, everything else concurrently, Tier 2). The same question as
free text only (the channel's cluster, the rest resolved from the words) adds at most one round trip.

Usage: python bench/diagnose.py [--runs 50] [--latency-ms 50] [--case PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from diagnosis.answer import Backends, answer
from diagnosis.config import KubeConfig, RunaiConfig
from diagnosis.question import Question, parse_text
from diagnosis.units import parse_time
from sandbox.server import Sandbox

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CASE = ROOT / "sandbox" / "snapshots" / "demo.json"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


async def bench(case: Path, runs: int, latency: float) -> dict[str, object]:
    snapshot = json.loads(await asyncio.to_thread(case.read_text))
    now = parse_time(snapshot["now"])
    assert now is not None
    sandbox = Sandbox(snapshot, latency=latency)
    sandbox.start()
    try:
        backends = Backends(
            runai=RunaiConfig(sandbox.url, "bench", "bench", console_url=sandbox.url),
            kube=KubeConfig(kubeconfig=sandbox.kubeconfig()),
            now=lambda: now,
        )
        ask = {k: v for k, v in (snapshot.get("ask") or {}).items() if v is not None}
        question = Question.model_validate(ask)
        question = question.merged(parse_text(question.text))
        # The same question as free text only (issue 11 §4): what a person types, with the channel's default
        # cluster; everything else (workload, project) is resolved from the text against the control plane.
        text = question.text or ""
        if question.project and question.project.lower() not in text.lower():
            text += f" in {question.project}"
        if question.workload_name and question.workload_name.lower() not in text.lower():
            text = f"{question.workload_name}: {text}"
        free = Question(text=text, cluster_id=question.cluster_id).merged(parse_text(text))
        walls: list[float] = []
        depths: list[int] = []
        free_depths: list[int] = []
        outcome = free_outcome = ""
        for _ in range(runs):
            first = len(sandbox.requests)
            t0 = time.perf_counter()
            report = await answer(question, backends)
            walls.append(time.perf_counter() - t0)
            outcome = f"{report.outcome.value}/{report.category.value if report.category else '-'}"
            mine = [r for r in sandbox.requests[first:] if not r.path.endswith("/token")]
            depths.append(sandbox.sequential_depth(mine))
        for _ in range(max(1, runs // 5)):
            first = len(sandbox.requests)
            report = await answer(free, backends)
            free_outcome = f"{report.outcome.value}/{report.category.value if report.category else '-'}"
            mine = [r for r in sandbox.requests[first:] if not r.path.endswith("/token")]
            free_depths.append(sandbox.sequential_depth(mine))
    finally:
        sandbox.stop()
    p50 = statistics.median(walls)
    return {
        "case": case.name,
        "runs": runs,
        "latency_ms": latency * 1000,
        "outcome": outcome,
        "wall_p50_ms": round(p50 * 1000, 1),
        "wall_p95_ms": round(percentile(walls, 95) * 1000, 1),
        "wall_max_ms": round(max(walls) * 1000, 1),
        "p50_over_latency": round(p50 / latency, 2) if latency else None,
        "sequential_round_trips_max": max(depths),
        "sequential_round_trips_p50": statistics.median(depths),
        "goal_round_trips": 3,
        "free_text": text,
        "free_text_outcome": free_outcome,
        "free_text_round_trips_max": max(free_depths),
        # resolution against the control plane may add at most one sequential round trip (issue 11 §4)
        "added_by_resolution": max(free_depths) - max(depths),
        "goal_added_by_resolution": 1,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--latency-ms", type=float, default=50)
    ap.add_argument("--case", type=Path, action="append")
    args = ap.parse_args()
    cases = args.case or [DEFAULT_CASE]
    for case in cases:
        result = asyncio.run(bench(case, args.runs, args.latency_ms / 1000))
        print(json.dumps(result))


if __name__ == "__main__":
    main()
