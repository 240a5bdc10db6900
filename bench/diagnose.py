"""Benchmark: diagnoses against the sandbox with injected latency per request.

Reports wall-time percentiles over N diagnoses, the ratio of p50 to the injected latency (how many
round trips' worth of waiting a diagnosis costs), and the longest chain of sequential requests
(token excluded: it is cached across diagnoses in a running bot). Goal: at most 3 sequential
round trips for a name+project question (list, everything else concurrently, Tier 2).

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
        walls: list[float] = []
        depths: list[int] = []
        outcome = ""
        for _ in range(runs):
            first = len(sandbox.requests)
            t0 = time.perf_counter()
            report = await answer(question, backends)
            walls.append(time.perf_counter() - t0)
            outcome = f"{report.outcome.value}/{report.category.value if report.category else '-'}"
            mine = [r for r in sandbox.requests[first:] if not r.path.endswith("/token")]
            depths.append(sandbox.sequential_depth(mine))
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
