"""Benchmark: 50 concurrent signed ``/diagnose`` commands against the HTTP app (real AsyncApp,
Starlette adapter, real core, sandbox with 50 ms latency per request, mock Slack Web API, real
Redis). Reports ack latency p50/p99 and time to the posted answer p50/p95.

    .venv/bin/python bench/slack.py [--n 50] [--latency-ms 50] [--case text-only-question]

Goals (issue 3): ack p99 well under 3 s (aim < 100 ms), answer p95 < 1 s.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
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

CASES = ROOT.parent / "shared" / "cases" / "runai"


@contextlib.contextmanager
def external_sandbox(snapshot: Path, latency_ms: int) -> Iterator[tuple[Backends, dict[str, Any]]]:
    """The sandbox in its own process (``workload-doctor sandbox``), as a remote control plane would be,
    so it does not share this process's GIL with the bot."""
    cli = str(Path(sys.executable).parent / "workload-doctor")
    proc = subprocess.Popen(
        [cli, "sandbox", "--snapshot", str(snapshot), "--latency-ms", str(latency_ms)],
        stdout=subprocess.PIPE, text=True,
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


async def main(n: int, latency_ms: int, case: str, in_process: bool = False) -> int:
    slack = SlackMock().start()
    prefix = f"wdbench:{uuid.uuid4().hex[:8]}:"
    settings = Settings(bot_token=TOKEN, signing_secret=SECRET, redis_url=REDIS_URL, api_url=slack.api_url,
                        rate_limit=10_000, key_prefix=prefix)
    snapshot = CASES / f"{case}.json"
    policy = Policy.from_dict({"channels": {f"C{i:08d}": {"cluster": "dgx-prod"} for i in range(n)}})
    sandbox = (
        backends_for(str(snapshot), latency=latency_ms / 1000) if in_process else external_sandbox(snapshot, latency_ms)
    )
    with tempfile.TemporaryDirectory(), sandbox as (backends, _):
        bot = build_bot(settings, backends, policy=policy)
        transport = httpx.ASGITransport(app=http_app(bot))
        async with httpx.AsyncClient(transport=transport, base_url="http://bot", timeout=30) as http:
            # warm up: Bolt's auth.test, the Redis pool, the HTTP client pools
            warm = command_body("help", user="U0WARMUP0", channel="C0WARMUP0")
            await http.post("/slack/events", content=warm,
                            headers={"content-type": "application/x-www-form-urlencoded", **sign(warm)})
            sent: dict[str, float] = {}
            acks: list[float] = []

            async def one(i: int) -> None:
                channel = f"C{i:08d}"
                body = command_body("train-gpt2 project=nlp", user=f"U{i:08d}", channel=channel,
                                    response_url=slack.response_url(f"b{i}"))
                headers = {"content-type": "application/x-www-form-urlencoded", **sign(body)}
                start = time.monotonic()
                sent[channel] = start
                resp = await http.post("/slack/events", content=body, headers=headers)
                acks.append(time.monotonic() - start)
                assert resp.status_code == 200, resp.text

            await asyncio.gather(*(one(i) for i in range(n)))
            await bot.tracker.idle(120)
        answers = [c.at - sent[c.body["channel"]] for c in slack.of("chat.update")]
        await bot.close()
    slack.stop()
    r = redis.Redis.from_url(REDIS_URL)
    for key in r.scan_iter(match=prefix + "*"):
        r.delete(key)
    outcomes = {json.dumps([b["text"]["text"] for b in c.body["blocks"] if b["type"] == "header"])
                for c in slack.of("chat.update")}
    where = "in-process" if in_process else "separate process"
    print(f"{n} concurrent /diagnose, sandbox ({where}) latency {latency_ms} ms, case {case}")
    print(f"ack     p50 {statistics.median(acks) * 1000:7.1f} ms   p99 {pct(acks, 99) * 1000:7.1f} ms")
    if answers:
        print(f"answer  p50 {statistics.median(answers) * 1000:7.1f} ms   p95 {pct(answers, 95) * 1000:7.1f} ms"
              f"   ({len(answers)}/{n} answered)")
    print(f"verdicts: {sorted(outcomes)}")
    ok = len(answers) == n and pct(acks, 99) < 3.0
    return 0 if ok else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--case", default="text-only-question")
    parser.add_argument("--in-process-sandbox", action="store_true",
                        help="serve the sandbox from this process (shares the GIL with the bot)")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.n, args.latency_ms, args.case, args.in_process_sandbox)))
