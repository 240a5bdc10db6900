"""Benchmark: 50 concurrent signed ``/diagnose`` commands against the HTTP app (real AsyncApp,
Starlette adapter, real core, sandbox with 50 ms latency per request, mock Slack Web API, real
Redis). Reports ack latency p50/p99 and time to the posted answer p50/p95, for two scenarios:

* ``same``: every command asks about the case's failed workload (a channel reacting to one failure).
  Identical questions in flight share one diagnosis, so this measures the bot around the core.
* ``distinct``: every command asks about its own workload (copies of the case's workload with their
  own names, ids and pods), so every command costs a full diagnosis: the worst case for one process.

* ``burst`` (issue 15 §4, not part of ``both``): the bot as its own process (``workload-doctor serve --http``) and
  ``--rate`` signed commands a second for ``--seconds``, each about its own workload; reports ack p50/p99 under the
  burst, how many were answered and how many told "busy" (``WD_MAX_IN_FLIGHT``), and the bot's RSS before, at peak
  and ``--after`` seconds after the burst. A benchmark figure, not a test assertion.

Before measuring, the bot answers one question about a workload that does not exist: a running bot
holds a Run:ai token and open connection pools (steady state), and nothing is cached for the measured
workloads.

    .venv/bin/python bench/slack.py [--n 50] [--latency-ms 50] [--case text-only-question]
        [--scenario same|distinct|both|burst] [--rate 1000] [--seconds 1] [--max-in-flight 64] [--after 8]

Goals (issue 3): ack p99 well under 3 s (aim < 100 ms), answer p95 < 1 s; under the burst (issue 15 §4) ack p99
under 100 ms, and memory back near its level before the burst.
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


def rss_mb(pid: int) -> float:
    """The resident set size of process ``pid`` in MB (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def burst(
    rate: int, seconds: float, max_in_flight: int, after: float, case: str, latency_ms: int, text: str | None = None
) -> int:
    """``rate`` signed commands a second for ``seconds`` against the bot in its own process; figures printed."""
    import os
    import socket

    import yaml

    from handlers.shedding import BUSY

    slack = SlackMock().start()
    prefix = f"wdbench:{uuid.uuid4().hex[:8]}:"
    n = int(rate * seconds)
    # commands cycle over 50 workloads of their own: a realistic control plane, not 1,000 workloads per listing
    snapshot, _name, copies = with_copies(json.loads((CASES / f"{case}.json").read_text()), 50)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "burst.json"
        path.write_text(json.dumps(snapshot))
        policy = Path(tmp) / "policy.yaml"
        policy.write_text(yaml.safe_dump({"channels": {"CBURST0001": {"cluster": "dgx-prod"}}}))
        env = {
            **os.environ,
            "SLACK_BOT_TOKEN": TOKEN,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": slack.api_url,
            "REDIS_URL": REDIS_URL,
            "WD_REDIS_PREFIX": prefix,
            "WD_RATE_LIMIT": "100000",
            "WD_MAX_IN_FLIGHT": str(max_in_flight),
            "WD_POLICY_FILE": str(policy),
            "WD_LOG_FORMAT": "json",
        }
        # the control plane in a process of its own (as a remote one would be), not sharing the bot's GIL
        sandbox = external_sandbox(path, latency_ms)
        backends, _ = sandbox.__enter__()
        assert backends.runai is not None
        env |= {
            "RUNAI_BASE_URL": backends.runai.base_url,
            "RUNAI_CLIENT_ID": "bench",
            "RUNAI_CLIENT_SECRET": "bench",
        }
        if backends.kube is not None and backends.kube.kubeconfig:
            env["KUBECONFIG"] = str(backends.kube.kubeconfig)
        cli = str(Path(sys.executable).parent / "workload-doctor")
        command = [cli, "serve", "--http", "--host", "127.0.0.1", "--port", str(port)]
        # started once, before anything is measured: blocking the loop here costs no figure
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: ASYNC220
        url = f"http://127.0.0.1:{port}"
        try:
            limits = httpx.Limits(max_connections=512, max_keepalive_connections=512)
            async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as http:
                for _ in range(600):
                    with contextlib.suppress(httpx.HTTPError):
                        if (await http.get("/healthz")).status_code == 200:
                            break
                    await asyncio.sleep(0.1)
                warm = command_body("no-such-workload project=nlp", user="U0WARMUP0", channel="CBURST0001")
                ctype = {"content-type": "application/x-www-form-urlencoded"}
                await http.post("/slack/events", content=warm, headers={**ctype, **sign(warm)})
                await asyncio.sleep(2)
                before = rss_mb(proc.pid)
                peak = before
                acks: list[float] = []
                busy = errors = 0
                sampling = True

                async def sample() -> None:
                    nonlocal peak
                    while sampling:
                        peak = max(peak, rss_mb(proc.pid))
                        await asyncio.sleep(0.05)

                async def one(i: int) -> None:
                    nonlocal busy, errors
                    question = text or f"{copies[i % len(copies)]} project=nlp"
                    body = command_body(question, user=f"UB{i:08d}", channel="CBURST0001")
                    start = time.monotonic()
                    try:
                        resp = await http.post("/slack/events", content=body, headers={**ctype, **sign(body)})
                    except httpx.HTTPError:
                        errors += 1
                        return
                    acks.append(time.monotonic() - start)
                    if resp.status_code != 200:
                        errors += 1
                    elif BUSY in resp.text:
                        busy += 1

                sampler = asyncio.get_running_loop().create_task(sample())
                t0 = time.monotonic()
                sends = []
                for i in range(n):
                    delay = t0 + i / rate - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    sends.append(asyncio.get_running_loop().create_task(one(i)))
                sent_in = time.monotonic() - t0
                await asyncio.gather(*sends)
                ended = time.monotonic()
                await asyncio.sleep(max(0.0, after - (time.monotonic() - ended)))
                sampling = False
                await sampler
                after_rss = rss_mb(proc.pid)
                answered = len([c for c in slack.of("chat.update") if c.body.get("channel") == "CBURST0001"])
        finally:
            proc.terminate()
            proc.wait(30)
            sandbox.__exit__(None, None, None)
    slack.stop()
    r = redis.Redis.from_url(REDIS_URL)
    for key in r.scan_iter(match=prefix + "*"):
        r.delete(key)
    print(f"burst: {n} signed /diagnose at {rate}/s (sent in {sent_in:.2f} s), WD_MAX_IN_FLIGHT={max_in_flight}")
    if acks:
        print(
            f"  ack     p50 {statistics.median(acks) * 1000:7.1f} ms   p99 {pct(acks, 99) * 1000:7.1f} ms   "
            f"max {max(acks) * 1000:7.1f} ms"
        )
    print(f"  acked {len(acks)}/{n}, errors {errors}, told busy {busy}, answered {answered} (by {after:.0f} s after)")
    print(f"  RSS     before {before:6.1f} MB   peak {peak:6.1f} MB   {after:.0f} s after {after_rss:6.1f} MB")
    return 0 if not errors and len(acks) == n else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--latency-ms", type=int, default=50)
    parser.add_argument("--case", default="text-only-question")
    parser.add_argument("--scenario", choices=["same", "distinct", "both", "burst"], default="both")
    parser.add_argument("--rate", type=int, default=1000, help="burst: signed commands a second")
    parser.add_argument("--seconds", type=float, default=1.0, help="burst: how long the burst lasts")
    parser.add_argument("--max-in-flight", type=int, default=64, help="burst: the bot's WD_MAX_IN_FLIGHT")
    parser.add_argument("--text", help="burst: every command's text (e.g. help: the ack path alone)")
    parser.add_argument("--after", type=float, default=8.0, help="burst: seconds after it to measure RSS again")
    parser.add_argument(
        "--in-process-sandbox",
        action="store_true",
        help="serve the sandbox from this process (shares the GIL with the bot)",
    )
    args = parser.parse_args()
    if args.scenario == "burst":
        sys.exit(
            asyncio.run(
                burst(args.rate, args.seconds, args.max_in_flight, args.after, args.case, args.latency_ms, args.text)
            )
        )
    sys.exit(asyncio.run(main(args.n, args.latency_ms, args.case, args.scenario, args.in_process_sandbox)))
