"""CPU bench (issue 26 §2): milliseconds of this process's CPU per diagnosis, the sandbox in another process.

Each snapshot is served by a sandbox in a child process (so its request handling is not counted); this process
builds the question as the CLI does (:func:`bot.cli_app.build_question`) and runs
:func:`diagnosis.answer.answer` ``--runs`` times per snapshot on one event loop with the same ``Backends`` (the
token cached, as in a running bot), after one warm-up diagnosis that is not counted (first imports, compiled
patterns). A diagnosis's CPU is :func:`time.process_time` around it: every thread of this process (the Tier 2
reads run in threads), none of the sandbox's.

Each round diagnoses twice: once after emptying the redaction caches (its texts sanitized as if it were about
another workload: what distinct questions cost, the figure of ``cpu_ms_per_diagnosis``) and once with them
(``cpu_ms_per_diagnosis_repeat``: the same question again).

Prints one JSON line: ``cpu_ms_per_diagnosis`` (the mean), ``cpu_ms_p50``, ``cpu_ms_p95`` (distinct),
``cpu_ms_per_diagnosis_repeat``, ``diagnoses``, ``snapshots`` and the slowest snapshots by mean CPU. Connections
are shared across diagnoses as in the bot (``--own-pools``: a pool per client, as in the CLI). ``--profile FILE``
writes the cProfile stats of the counted diagnoses (main thread CPU; ``python -m pstats FILE``) and prints the top
functions by cumulative time on stderr.
:func:`cpu_per_diagnosis` is what ``bench/scale.py`` calls. Figures, never test assertions.

Usage: python bench/cpu.py [--runs 20] [--case PATH_OR_DIR ...] [--max-cases 12] [--profile FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import multiprocessing
import pstats
import statistics
import sys
import time
from collections.abc import Iterable
from datetime import datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from diagnosis.backends import Backends
    from diagnosis.question import Question

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: The bundled snapshots and an even sample of the field cases (repo-local, so the figure is reproducible).
DEFAULT_CASES = [ROOT / "sandbox" / "snapshots", ROOT / "tests" / "field" / "cases"]


def _serve(path: str, conn: Connection) -> None:
    """Child process: serve ``path`` in a sandbox, send ``(url, kube_env)``, stop when the parent says so."""
    from sandbox.server import Sandbox, load_snapshot

    with Sandbox(load_snapshot(path)) as sandbox:
        conn.send((sandbox.url, sandbox.kube_env()))
        conn.recv()


def snapshots(paths: Iterable[Path], max_cases: int) -> list[Path]:
    """The diagnosable snapshot files of ``paths`` (a directory: its ``*.json``, sorted; digests left out), each
    directory cut to ``max_cases`` evenly spaced files (0: all)."""
    chosen: list[Path] = []
    for path in paths:
        files = sorted(path.glob("*.json")) if path.is_dir() else [path]
        files = [f for f in files if (json.loads(f.read_text()).get("ask") or {}).get("kind") != "digest"]
        if path.is_dir() and 0 < max_cases < len(files):
            step = len(files) / max_cases
            files = [files[int(i * step)] for i in range(max_cases)]
        chosen.extend(files)
    return chosen


async def _diagnose(
    snapshot: dict[str, Any],
    url: str,
    kube_env: dict[str, str],
    runs: int,
    profile: cProfile.Profile | None,
    shared_pool: bool,
) -> tuple[list[float], list[float]]:
    """The CPU seconds of ``runs`` diagnoses of ``snapshot``'s question, caches emptied and not (see the module)."""
    from bot.cli_app import build_question
    from diagnosis.backends import Backends
    from diagnosis.config import KubeConfig, OsmoConfig, RunaiConfig
    from diagnosis.http import close_shared_connections, share_connections
    from diagnosis.question import Question
    from diagnosis.units import parse_time

    backends = Backends(
        runai=RunaiConfig(url, "sandbox", "sandbox", console_url=url) if "runai" in snapshot else None,
        kube=KubeConfig.from_env(kube_env),
        osmo=OsmoConfig(url, "sandbox-access-token") if "osmo" in snapshot else None,
    )
    now = parse_time(snapshot.get("now"))
    if now is not None:
        fixed: datetime = now
        backends.now = lambda: fixed
    question = build_question(Question(), dict(snapshot.get("ask") or {}))
    if shared_pool:
        share_connections()  # as the bot does (bot.app): Run:ai and OSMO connections reused across diagnoses
    try:
        return await _rounds(question, backends, runs, profile)
    finally:
        await close_shared_connections()


async def _rounds(
    question: Question, backends: Backends, runs: int, profile: cProfile.Profile | None
) -> tuple[list[float], list[float]]:
    from diagnosis.answer import answer

    await answer(question, backends)  # warm-up, not counted
    distinct: list[float] = []
    repeat: list[float] = []
    for _ in range(runs):
        for cpu, forget in ((distinct, True), (repeat, False)):
            if forget:
                _forget_texts()
            if profile is not None:
                profile.enable()
            t0 = time.process_time()
            await answer(question, backends)
            cpu.append(time.process_time() - t0)
            if profile is not None:
                profile.disable()
    return distinct, repeat


def _forget_texts() -> None:
    """Empty the caches of :mod:`diagnosis.redact` (every ``lru_cache`` of the module): the next diagnosis
    sanitizes its texts as if it were about another workload."""
    from diagnosis import redact

    for value in vars(redact).values():
        clear = getattr(value, "cache_clear", None)
        if callable(clear):
            clear()


def cpu_per_diagnosis(
    paths: list[Path], runs: int, profile: cProfile.Profile | None = None, shared_pool: bool = True
) -> dict[str, Any]:
    """CPU milliseconds of this process per diagnosis over ``runs`` diagnoses of each snapshot of ``paths``
    (``shared_pool``: Run:ai and OSMO connections shared across diagnoses, as in the bot; else a pool per
    client, as in the CLI)."""
    spawn = multiprocessing.get_context("spawn")
    every: list[float] = []
    repeats: list[float] = []
    by_case: dict[str, float] = {}
    for path in paths:
        parent, child = spawn.Pipe()
        proc = spawn.Process(target=_serve, args=(str(path), child), daemon=True)
        proc.start()
        try:
            url, kube_env = parent.recv()
            snapshot = json.loads(path.read_text())
            distinct, repeat = asyncio.run(_diagnose(snapshot, url, kube_env, runs, profile, shared_pool))
        finally:
            parent.send("stop")
            proc.join(10)
        every.extend(distinct)
        repeats.extend(repeat)
        by_case[path.name] = statistics.mean(distinct) * 1000
    ordered = sorted(every)
    slowest = sorted(by_case.items(), key=lambda kv: -kv[1])[:5]
    return {
        "cpu_ms_per_diagnosis": round(statistics.mean(every) * 1000, 2),
        "cpu_ms_p50": round(statistics.median(every) * 1000, 2),
        "cpu_ms_p95": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000, 2),
        "cpu_ms_per_diagnosis_repeat": round(statistics.mean(repeats) * 1000, 2),
        "diagnoses": len(every) + len(repeats),
        "snapshots": len(paths),
        "shared_pool": shared_pool,
        "slowest": {name: round(ms, 2) for name, ms in slowest},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--runs", type=int, default=20, help="counted diagnoses per snapshot")
    ap.add_argument("--case", type=Path, action="append", help="a snapshot file or a directory of them")
    ap.add_argument("--max-cases", type=int, default=12, help="snapshots per directory, evenly spaced (0: all)")
    ap.add_argument("--profile", type=Path, help="write cProfile stats of the counted diagnoses here")
    ap.add_argument("--own-pools", action="store_true", help="a connection pool per client (the CLI), not shared")
    args = ap.parse_args()
    # the CPU time of the main thread (the event loop), not the wall clock: a diagnosis mostly waits
    profile = cProfile.Profile(time.thread_time) if args.profile else None
    paths = snapshots(args.case or DEFAULT_CASES, args.max_cases)
    result = cpu_per_diagnosis(paths, args.runs, profile, shared_pool=not args.own_pools)
    if profile is not None:
        profile.dump_stats(args.profile)
        pstats.Stats(str(args.profile), stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
