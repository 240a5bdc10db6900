"""Digest benchmark (issue 12 §4, issue 27 §3), against the sandbox in its own process with 50 ms latency per request.

``python bench/digest.py``: a generated world of 5,000 Run:ai workloads on one cluster, 1,000 of them failed inside
the window. Prints one JSON line: ``wall_s``, ``requests``, ``round_trips`` (the longest chain of requests each
started after the previous answered), ``cpu_s`` (this process), ``peak_rss_mb`` (this process), ``failed`` and the
categories found. Goal (README): under 10 s and under 300 MB on the 2-core machine.

``python bench/digest.py --clusters 20 --workloads-per-cluster 5000``: a fleet of 100,000 workloads on 20 clusters,
5% of them failed inside the window. The digest runs twice over the same window: cold (``fleet_wall_s``, every
failure diagnosed) and warm (``fleet_warm_wall_s``, with the row cache of the first run: only the listing, no
failure diagnosed again), each with its requests, round trips and CPU seconds; ``peak_rss_mb`` covers both (the
world is written to its file workload by workload and never held by this process). Goal: under 60 s warm.

Figures, never test assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import calendar
import heapq
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from diagnosis.answer import Backends, answer_digest  # noqa: E402
from diagnosis.config import RunaiConfig  # noqa: E402
from diagnosis.digest_rows import MemoryRowCache  # noqa: E402
from diagnosis.digests import DigestAsk, RowCache  # noqa: E402
from diagnosis.units import parse_time  # noqa: E402

CLUSTER = "71f69d83-ba66-4822-adf5-55ce55efd210"
NOW = "2026-11-28T12:00:00Z"
_NOW_EPOCH = calendar.timegm(time.strptime(NOW, "%Y-%m-%dT%H:%M:%SZ"))
KINDS = [
    ("OOMKilled", 137, "container {c} terminated with reason OOMKilled (exit code 137)"),
    ("Error", 1, "container {c} exited with code 1"),
    ("Error", 139, "container {c} exited with code 139"),
]
PROJECTS = ["nlp", "vision", "speech", "rl"]
NOTES = [
    "one process scans: the job queue of the scale-out issue (26) does not exist yet, so there are no figures "
    "with 1 and 2 worker processes",
    "warm: the same window again with the first run's row cache (in memory here; Redis in the bot)",
]


def _wid(seed: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, seed))


def _cluster(c: int) -> str:
    return CLUSTER if c == 0 else _wid(f"bench-cluster-{c}")


def _entry(i: int, c: int, in_window: bool) -> dict[str, Any]:
    """Workload ``i`` of cluster ``c``: Failed inside the last 24 h when ``in_window``; else Running, Completed or
    Failed before the window."""
    name = f"job-{i:05d}" if c == 0 else f"job-c{c:02d}-{i:05d}"
    cluster = _cluster(c)
    project = PROJECTS[i % 4]
    phase = "Failed" if in_window or i % 5 == 0 else ("Running" if i % 2 else "Completed")
    hours_ago = (i % 23) + 0.5 if in_window else 30 + (i % 50)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(_NOW_EPOCH - hours_ago * 3600))
    reason, _code, message = KINDS[i % len(KINDS)]
    pod = f"{name}-0-0"
    wl = {
        "id": _wid(name),
        "name": name,
        "type": "Training",
        "clusterId": cluster,
        "projectId": str(i % 4) if c == 0 else f"{c}-{i % 4}",
        "projectName": project,
        "namespace": f"runai-{project}",
        "createdAt": at,
        "phase": phase,
        "phaseMessage": f"Pod {pod} failed: " + message.format(c=name) if phase == "Failed" else "",
        "phaseUpdatedAt": at,
        "k8sPhase": phase,
        "deletedAt": None,
        "conditions": [],
    }
    history = [{"meta": {"type": "PhaseUpdate", "creationTimestamp": at}, "spec": {"phaseUpdate": {"phase": phase}}}]
    return {
        "workload": wl,
        "spec": {"name": name, "workloadId": wl["id"], "desiredPhase": "Running", "spec": {}},
        "pods": [{"id": _wid(pod), "name": pod, "nodeName": "dgx-01", "k8sPhase": reason}],
        "history": history,
        "metrics": {"measurements": []},
    }


def _entries(clusters: int, per_cluster: int, failed_per_cluster: int) -> Iterator[dict[str, Any]]:
    for c in range(clusters):
        for i in range(per_cluster):
            yield _entry(i, c, i < failed_per_cluster)


def _frame(clusters: int) -> dict[str, Any]:
    uuids = [_cluster(c) for c in range(clusters)]
    return {
        "format": "snapshot/1",
        "id": "bench-digest",
        "description": "generated",
        "source": "synthetic",
        "now": NOW,
        "runai": {
            "clusters": [{"uuid": u, "name": "dgx-prod" if c == 0 else f"dgx-{c:02d}"} for c, u in enumerate(uuids)],
            "projects": [
                {
                    "id": str(i) if c == 0 else f"{c}-{i}",
                    "name": p,
                    "clusterId": u,
                    "status": {"namespace": f"runai-{p}"},
                }
                for c, u in enumerate(uuids)
                for i, p in enumerate(PROJECTS)
            ],
            "workloads": [],
        },
        "ask": {"kind": "digest", "cluster_id": CLUSTER if clusters == 1 else None, "since": "24h"},
        "expect": {"outcome": "digest"},
    }


def world(total: int, failed: int) -> dict[str, Any]:
    """``total`` workloads over four projects on one cluster; ``failed`` of them Failed inside the last 24 h."""
    snapshot = _frame(1)
    snapshot["runai"]["workloads"] = list(_entries(1, total, failed))
    return snapshot


def write_world(out: TextIO, clusters: int, per_cluster: int, failed_per_cluster: int) -> None:
    """The world as JSON into ``out``, one workload at a time (a fleet is never held by this process)."""
    frame = json.dumps(_frame(clusters))
    before, after = frame.split('"workloads": []', 1)
    out.write(before + '"workloads": [')
    for n, entry in enumerate(_entries(clusters, per_cluster, failed_per_cluster)):
        out.write(("," if n else "") + json.dumps(entry))
    out.write("]" + after)


async def run(url: str, cluster_id: str | None, cache: RowCache | None = None) -> Any:
    now = parse_time(NOW)
    assert now is not None
    backends = Backends(runai=RunaiConfig(url, "bench", "bench", console_url=url, deadline=600), now=lambda: now)
    return await answer_digest(DigestAsk(cluster_id=cluster_id, since="24h"), backends, cache=cache)


def round_trips(log: list[dict[str, Any]]) -> int:
    """The longest chain of requests each started after the previous one answered (O(n log n): in start order, a
    request's possible predecessors are those already finished when it starts)."""
    finished: list[tuple[float, int]] = []  # (finish time, chain length) of requests not yet finished
    best = longest = 0
    for r in sorted(log, key=lambda r: r["started"]):
        while finished and finished[0][0] <= r["started"]:
            best = max(best, heapq.heappop(finished)[1])
        depth = best + 1
        longest = max(longest, depth)
        heapq.heappush(finished, (r["finished"], depth))
    return longest


def _requests(url: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(url + "/_sandbox/requests") as reply:
        data: list[dict[str, Any]] = json.load(reply)
    return data


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _sandbox_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(url: str, pid: int, cluster_id: str | None, cache: RowCache | None, seen: int) -> dict[str, Any]:
    """One digest: wall and CPU seconds, and the requests it made (the sandbox's log after its first ``seen``)."""
    cpu, sandbox_cpu, started = _cpu(), _sandbox_cpu(pid), time.monotonic()
    digest = asyncio.run(run(url, cluster_id, cache))
    wall = time.monotonic() - started
    log = _requests(url)[seen:]
    return {
        "wall_s": round(wall, 2),
        "requests": len(log),
        "round_trips": round_trips(log),
        "cpu_s": round(_cpu() - cpu, 1),
        "sandbox_cpu_s": round(_sandbox_cpu(pid) - sandbox_cpu, 1),
        "failed": digest.failed,
        "by_category": digest.by_category,
        "gaps": len(digest.gaps),
        "_seen": seen + len(log),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workloads", type=int, default=5000)
    parser.add_argument("--failed", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=0, help="a fleet: this many clusters (cold and warm runs)")
    parser.add_argument("--workloads-per-cluster", type=int, default=5000)
    parser.add_argument("--failed-percent", type=float, default=5.0)
    parser.add_argument("--latency-ms", type=int, default=50)
    args = parser.parse_args()
    fleet = args.clusters > 0
    per_cluster = args.workloads_per_cluster if fleet else args.workloads
    failed = int(per_cluster * args.failed_percent / 100) if fleet else args.failed
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "world.json"
        made = time.monotonic()
        with path.open("w") as out:
            write_world(out, max(1, args.clusters), per_cluster, failed)
        made = time.monotonic() - made
        cli = str(Path(sys.executable).parent / "workload-doctor")
        loading = time.monotonic()
        proc = subprocess.Popen(
            [cli, "sandbox", "--snapshot", str(path), "--latency-ms", str(args.latency_ms)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().rsplit(" at ", 1)[1].strip()
            loading = time.monotonic() - loading
            cache = MemoryRowCache() if fleet else None
            cold = measured(url, proc.pid, None if fleet else CLUSTER, cache, 0)
            warm = measured(url, proc.pid, None, cache, cold.pop("_seen")) if fleet else None
        finally:
            proc.terminate()
            proc.wait(10)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if warm is None:
        cold.pop("_seen")
        out_line = {**cold, "peak_rss_mb": round(peak, 1), "workloads": per_cluster, "latency_ms": args.latency_ms}
    else:
        warm.pop("_seen")
        out_line = {
            "fleet_wall_s": cold.pop("wall_s"),
            "fleet_warm_wall_s": warm.pop("wall_s"),
            "cold": cold,
            "warm": {k: v for k, v in warm.items() if k != "by_category"},
            "rows_cached": len(cache or ()),
            "peak_rss_mb": round(peak, 1),
            "clusters": args.clusters,
            "workloads": args.clusters * per_cluster,
            "failed_in_window": args.clusters * failed,
            "latency_ms": args.latency_ms,
            "world_write_s": round(made, 1),
            "sandbox_load_s": round(loading, 1),
            "notes": NOTES,
        }
    print(json.dumps(out_line))


if __name__ == "__main__":
    main()
