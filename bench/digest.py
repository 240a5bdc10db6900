"""Digest benchmark (issue 12 §4): a generated world of 5,000 Run:ai workloads, at least 1,000 of them failed
inside the window, served by the sandbox in its own process with 50 ms latency per request.

Prints one JSON line: ``wall_s``, ``requests``, ``round_trips`` (the longest chain of requests each started
after the previous answered), ``peak_rss_mb`` (this process), ``failed`` and the categories found.
Goal (README): under 10 s and under 300 MB on the 2-core machine. A benchmark figure, never a test assertion.
"""

from __future__ import annotations

import argparse
import asyncio
import calendar
import json
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from diagnosis.answer import Backends, answer_digest  # noqa: E402
from diagnosis.config import RunaiConfig  # noqa: E402
from diagnosis.digests import DigestAsk  # noqa: E402
from diagnosis.units import parse_time  # noqa: E402

CLUSTER = "71f69d83-ba66-4822-adf5-55ce55efd210"
NOW = "2026-11-28T12:00:00Z"
_NOW_EPOCH = calendar.timegm(time.strptime(NOW, "%Y-%m-%dT%H:%M:%SZ"))
KINDS = [
    ("OOMKilled", 137, "container {c} terminated with reason OOMKilled (exit code 137)"),
    ("Error", 1, "container {c} exited with code 1"),
    ("Error", 139, "container {c} exited with code 139"),
]


def _wid(seed: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, seed))


def world(total: int, failed: int) -> dict[str, Any]:
    """``total`` workloads over four projects; ``failed`` of them Failed inside the last 24 h, the rest Running,
    Completed or Failed before the window."""
    projects = ["nlp", "vision", "speech", "rl"]
    workloads = []
    for i in range(total):
        name = f"job-{i:05d}"
        project = projects[i % 4]
        in_window = i < failed
        phase = "Failed" if in_window or i % 5 == 0 else ("Running" if i % 2 else "Completed")
        hours_ago = (i % 23) + 0.5 if in_window else 30 + (i % 50)
        at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(_NOW_EPOCH - hours_ago * 3600))
        reason, _code, message = KINDS[i % len(KINDS)]
        pod = f"{name}-0-0"
        wl = {
            "id": _wid(name),
            "name": name,
            "type": "Training",
            "clusterId": CLUSTER,
            "projectId": str(i % 4),
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
        history = [
            {"meta": {"type": "PhaseUpdate", "creationTimestamp": at}, "spec": {"phaseUpdate": {"phase": phase}}}
        ]
        workloads.append(
            {
                "workload": wl,
                "spec": {"name": name, "workloadId": wl["id"], "desiredPhase": "Running", "spec": {}},
                "pods": [{"id": _wid(pod), "name": pod, "nodeName": "dgx-01", "k8sPhase": reason}],
                "history": history,
                "metrics": {"measurements": []},
            }
        )
    return {
        "format": "snapshot/1",
        "id": "bench-digest",
        "description": "generated",
        "source": "synthetic",
        "now": NOW,
        "runai": {
            "clusters": [{"uuid": CLUSTER, "name": "dgx-prod"}],
            "projects": [
                {"id": str(i), "name": p, "clusterId": CLUSTER, "status": {"namespace": f"runai-{p}"}}
                for i, p in enumerate(projects)
            ],
            "workloads": workloads,
        },
        "ask": {"kind": "digest", "cluster_id": CLUSTER, "since": "24h"},
        "expect": {"outcome": "digest"},
    }


async def run(url: str) -> Any:
    now = parse_time(NOW)
    assert now is not None
    backends = Backends(runai=RunaiConfig(url, "bench", "bench", console_url=url, deadline=120), now=lambda: now)
    return await answer_digest(DigestAsk(cluster_id=CLUSTER, since="24h"), backends)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workloads", type=int, default=5000)
    parser.add_argument("--failed", type=int, default=1000)
    parser.add_argument("--latency-ms", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "world.json"
        path.write_text(json.dumps(world(args.workloads, args.failed)))
        cli = str(Path(sys.executable).parent / "workload-doctor")
        proc = subprocess.Popen(
            [cli, "sandbox", "--snapshot", str(path), "--latency-ms", str(args.latency_ms)],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().rsplit(" at ", 1)[1].strip()
            started = time.monotonic()
            digest = asyncio.run(run(url))
            wall = time.monotonic() - started
            stats = json.loads(
                subprocess.run([sys.executable, "-c", _STATS, url], capture_output=True, text=True, check=True).stdout
            )
        finally:
            proc.terminate()
            proc.wait(10)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "wall_s": round(wall, 2),
                "requests": stats["requests"],
                "round_trips": stats["round_trips"],
                "peak_rss_mb": round(peak, 1),
                "failed": digest.failed,
                "by_category": digest.by_category,
                "workloads": args.workloads,
                "latency_ms": args.latency_ms,
            }
        )
    )


# The sandbox's own request log, read over its debug endpoint by a separate process.
_STATS = """
import json, sys, urllib.request
data = json.load(urllib.request.urlopen(sys.argv[1] + "/_sandbox/requests"))
reqs = sorted(data, key=lambda r: r["started"])
depth = []
finished = []
for r in reqs:
    d = 1
    for j, p in enumerate(reqs[: len(depth)]):
        if p["finished"] <= r["started"] and depth[j] + 1 > d:
            d = depth[j] + 1
    depth.append(d)
print(json.dumps({"requests": len(reqs), "round_trips": max(depth, default=0)}))
"""

if __name__ == "__main__":
    main()
