"""Benchmark: 50 concurrent signed ``/diagnose`` commands against the HTTP app (real AsyncApp,
Starlette adapter, real core, sandbox with 50 ms latency per request, mock Slack Web API, real
Redis). Reports ack latency p50/p99 and time to the posted answer p50/p95, for two scenarios:

* ``same``: every command asks about the case's failed workload (a channel reacting to one failure).
  Identical questions in flight share one diagnosis, so this measures the bot around the core.
* ``distinct``: every command asks about its own workload (copies of the case's workload with their
  own names, ids and pods), so every command costs a full diagnosis: the worst case for one process.

Before measuring, the bot answers one question about a workload that does not exist: a running bot
holds a Run:ai token and open connection pools (steady state), and nothing is cached for the measured
workloads.

    .venv/bin/python bench/slack.py [--n 50] [--latency-ms 50] [--case text-only-question]
        [--scenario same|distinct|both]

Goals (issue 3): ack p99 well under 3 s (aim < 100 ms), answer p95 < 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import redis  # noqa: E402

from bot.app import build_bot, http_app  # noqa: E402
from bot.cli import backends_for  # noqa: E402
from bot.policy import Policy  # noqa: E402
from bot.settings import Settings  # noqa: E402
from diagnosis.answer import Backends  # noqa: E402
from diagnosis.config import KubeConfig, RunaiConfig  # noqa: E402
from diagnosis.units import parse_time  # noqa: E402
from tests.slack_mock import REDIS_URL, SECRET, TOKEN, SlackMock, command_body, sign  # noqa: E402

CASES = ROOT / "tests" / "fixtures" / "cases" / "runai"  # copies of shared cases


@contextlib.contextmanager
def external_sandbox(snapshot: Path, latency_ms: int) -> Iterator[tuple[Backends, dict[str, Any]]]:
    """The sandbox in its own process (``workload-doctor sandbox``), as a remote control plane would be,
    so it does not share this process's GIL with the bot."""
    cli = str(Path(sys.executable).parent / "workload-doctor")
    proc = subprocess.Popen(
        [cli, "sandbox", "--snapshot", str(snapshot), "--latency-ms", str(latency_ms)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().rsplit(" at ", 1)[1].strip()
        snap = json.loads(snapshot.read_text())
        kubeconfig = None
        for _ in range(sum(key in snap for key in ("runai", "kubernetes", "osmo"))):
            line = proc.stdout.readline()
            if "KUBECONFIG=" in line:
                kubeconfig = line.split("KUBECONFIG=", 1)[1].strip()
        now = parse_time(snap["now"])
        assert now is not None
        backends = Backends(
            runai=RunaiConfig(url, "bench", "bench", console_url=url),
            kube=KubeConfig(kubeconfig=kubeconfig),
            now=lambda: now,
        )
        yield backends, dict(snap.get("ask") or {})
    finally:
        proc.terminate()
        proc.wait(10)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def with_copies(snapshot: dict[str, Any], n: int) -> tuple[dict[str, Any], str, list[str]]:
    """The snapshot plus ``n`` copies of its first Run:ai workload (and that workload's Kubernetes pods and
    logs), each with its own name, id and pod names. Returns it, the original name and the copies' names."""
    out = copy.deepcopy(snapshot)
    first = out["runai"]["workloads"][0]
    name, wid = first["workload"]["name"], first["workload"]["id"]
    kube = out.get("kubernetes") or {}
    own_pods = [p for p in kube.get("pods", []) if name in (p.get("metadata") or {}).get("name", "")]
    own_logs = [lg for lg in kube.get("logs", []) if name in lg.get("pod", "")]
    names = []
    for i in range(n):
        new_name, new_id = f"{name}-c{i:03d}", str(uuid.UUID(int=uuid.UUID(wid).int ^ (i + 1)))

        def renamed(value: Any, new_name: str = new_name, new_id: str = new_id) -> Any:
            return json.loads(json.dumps(value).replace(wid, new_id).replace(name, new_name))

        out["runai"]["workloads"].append(renamed(first))
        if kube:
            kube["pods"] = kube.get("pods", []) + renamed(own_pods)
            kube["logs"] = kube.get("logs", []) + renamed(own_logs)
        names.append(new_name)
    return out, name, names


@dataclass
class Run:
    acks: list[float]
    answers: list[float]
    verdicts: set[str]


async def measure(http: httpx.AsyncClient, bot: Any, slack: SlackMock, tag: str, questions: list[str]) -> Run:
    """Send one signed ``/diagnose`` per question, all at once, each from its own user and channel."""
    sent: dict[str, float] = {}
    acks: list[float] = []

    async def one(i: int, text: str) -> None:
        channel = f"C{tag}{i:07d}"
        body = command_body(text, user=f"U{tag}{i:07d}", channel=channel, response_url=slack.response_url(f"{tag}{i}"))
        headers = {"content-type": "application/x-www-form-urlencoded", **sign(body)}
        start = time.monotonic()
        sent[channel] = start
        resp = await http.post("/slack/events", content=body, headers=headers)
        acks.append(time.monotonic() - start)
        assert resp.status_code == 200, resp.text

    await asyncio.gather(*(one(i, text) for i, text in enumerate(questions)))
    await bot.tracker.idle(120)
    updates = [c for c in slack.of("chat.update") if c.body["channel"] in sent]
    answers = [c.at - sent[c.body["channel"]] for c in updates]
    verdicts = {json.dumps([b["text"]["text"] for b in c.body["blocks"] if b["type"] == "header"]) for c in updates}
    return Run(acks, answers, verdicts)


def report(title: str, run: Run, n: int) -> bool:
    print(title)
    print(f"  ack     p50 {statistics.median(run.acks) * 1000:7.1f} ms   p99 {pct(run.acks, 99) * 1000:7.1f} ms")
    if run.answers:
        print(
            f"  answer  p50 {statistics.median(run.answers) * 1000:7.1f} ms   "
            f"p95 {pct(run.answers, 95) * 1000:7.1f} ms   ({len(run.answers)}/{n} answered)"
        )
    print(f"  verdicts: {sorted(run.verdicts)}")
    return len(run.answers) == n and pct(run.acks, 99) < 3.0


async def main(n: int, latency_ms: int, case: str, scenario: str, in_process: bool = False) -> int:
    slack = SlackMock().start()
    prefix = f"wdbench:{uuid.uuid4().hex[:8]}:"
    settings = Settings(
        bot_token=TOKEN,
        signing_secret=SECRET,
        redis_url=REDIS_URL,
        api_url=slack.api_url,
        rate_limit=10_000,
        key_prefix=prefix,
    )
    snapshot, name, copies = with_copies(json.loads((CASES / f"{case}.json").read_text()), n)
    tags = {"same": "S", "distinct": "D"}
    scenarios = list(tags) if scenario == "both" else [scenario]
    channels = {f"C{tags[s]}{i:07d}": {"cluster": "dgx-prod"} for s in scenarios for i in range(n)}
    policy = Policy.from_dict({"channels": {**channels, "C0WARMUP0": {"cluster": "dgx-prod"}}})
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{case}-x{n}.json"
        path.write_text(json.dumps(snapshot))
        sandbox = (
            backends_for(str(path), latency=latency_ms / 1000) if in_process else external_sandbox(path, latency_ms)
        )
        with sandbox as (backends, _):
            bot = build_bot(settings, backends, policy=policy)
            await bot.start()  # what the HTTP app's lifespan does: the Web API pool, the watch sweeper
            transport = httpx.ASGITransport(app=http_app(bot))
            async with contextlib.AsyncExitStack() as stack:
                stack.push_async_callback(bot.close)
                http = await stack.enter_async_context(
                    httpx.AsyncClient(transport=transport, base_url="http://bot", timeout=30)
                )
                # steady state: a token, open pools; nothing cached for the measured workloads
                warm = command_body("no-such-workload project=nlp", user="U0WARMUP0", channel="C0WARMUP0")
                await http.post(
                    "/slack/events",
                    content=warm,
                    headers={"content-type": "application/x-www-form-urlencoded", **sign(warm)},
                )
                await bot.tracker.idle(60)
                where = "in-process" if in_process else "separate process"
                print(f"{n} concurrent /diagnose, sandbox ({where}) latency {latency_ms} ms, case {case}")
                for s in scenarios:
                    questions = [f"{name} project=nlp"] * n if s == "same" else [f"{c} project=nlp" for c in copies]
                    what = "the same workload" if s == "same" else "a different workload each"
                    run = await measure(http, bot, slack, tags[s], questions)
                    ok = report(f"{s}: {what}", run, n) and ok
    slack.stop()
    r = redis.Redis.from_url(REDIS_URL)
    for key in r.scan_iter(match=prefix + "*"):
        r.delete(key)
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--case", default="text-only-question")
    parser.add_argument("--scenario", choices=["same", "distinct", "both"], default="both")
    parser.add_argument(
        "--in-process-sandbox",
        action="store_true",
        help="serve the sandbox from this process (shares the GIL with the bot)",
    )
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.n, args.latency_ms, args.case, args.scenario, args.in_process_sandbox)))
