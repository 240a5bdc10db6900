"""Nothing stuck on the event loop (issue 24, "Stuck" §1): ``/healthz`` answers within 100 ms while a 12 MB log
is diagnosed.

The real HTTP-mode app on uvicorn (loopback) gets a signed ``/diagnose`` of a Run:ai workload whose Tier 2
log is 12 MB, served by a loopback Kubernetes API (the sandbox) that ignores ``limitBytes``, and whose pod has
an event with a 12 MB message; ``/healthz`` is asked every 10 ms meanwhile. Before issue 24 the event's
message alone held the loop for about 20 s (classified and sanitized whole, on the loop).

Timings on a shared machine: the bound is asserted on the 99th percentile of the answers given while the
diagnosis ran (not the worst one), over at least 20 of them, and a run whose bound fails is tried once more
(another test or process may take the CPU for a moment; a blocked loop fails both runs by seconds)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import time
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import uvicorn

from bot.app import build_bot, http_app
from bot.policy import Policy
from bot.settings import Settings
from diagnosis.backends import Backends
from diagnosis.config import KubeConfig, RunaiConfig
from tests import builders as b
from tests.bot.test_http_mode import Served, head, signed
from tests.paths import ROOT
from tests.slack_mock import REDIS_URL, SECRET, TOKEN, SlackMock, command_body

ALICE = "U0ALICE01"
CHAN = "C0CHAN001"
POLICY = Policy.from_dict(
    {"access": [{"who": [ALICE], "clusters": ["*"], "projects": ["*"]}], "channels": {CHAN: {"cluster": "dgx-prod"}}}
)
ERROR = "RuntimeError: CUDA error: an illegal memory access was encountered (the end of the log)"
SIZE = 12 * 2**20
#: the bound of issue 24's "Done when", seconds
BOUND = 0.1


def big_log() -> str:
    """About 12 MB in 200 lines (``tailLines=200`` keeps all of it), the error last."""
    line = "step {i} loss=0.1 " + "=" * (SIZE // 200 - 40) + "\n"
    return "".join(line.format(i=i) for i in range(199)) + ERROR + "\n"


def snapshot(tmp: Path) -> str:
    noisy = {
        "metadata": {"name": "train-7-0-0.noisy", "namespace": "runai-nlp"},
        "involvedObject": {"kind": "Pod", "name": "train-7-0-0"},
        "reason": "BackOff",
        "type": "Warning",
        "message": "".join(f"retry {i}: pulling layer sha256:{i:064x}\n" for i in range(SIZE // 90)),
        "lastTimestamp": b.ago(minutes=62),
    }
    k8s_data = {
        "pods": [b.k8s_pod(state=b.terminated(1))],
        "events": [noisy],
        "nodes": [b.node()],
        "logs": [
            {"namespace": "runai-nlp", "pod": "train-7-0-0", "container": "train-7", "previous": p, "text": big_log()}
            for p in (False, True)
        ],
    }
    path = tmp / "snapshot.json"
    path.write_text(json.dumps(b.snapshot(b.entry(b.workload(), b.failed_history("")), kubernetes=k8s_data)))
    return str(path)


#: The sandbox in a process of its own (as a real API server is), its Kubernetes API ignoring ``limitBytes``:
#: prints its URL and Tier 2 settings, serves until its stdin closes.
SANDBOX = """
import json, sys
from sandbox import k8s
from sandbox.server import Sandbox, load_snapshot
whole = k8s._log_body
def body(entry, request):
    query = {k: v for k, v in request.query_params.items() if k != "limitBytes"}
    return whole(entry, type("Asked", (), {"query_params": query})())
k8s._log_body = body
with Sandbox(load_snapshot(sys.argv[1])) as sb:
    print(json.dumps({"url": sb.url, "env": sb.kube_env()}), flush=True)
    sys.stdin.read()
"""

#: A prober in a process of its own: asks ``GET <url>`` every 10 ms from a pool of threads, whether or not earlier
#: asks were answered (a loop blocked for seconds is a run of slow answers, not one slow answer), until its stdin
#: closes; then prints the seconds from each ask's scheduled time to its answer (60 for a failed ask).
PROBER = """
import json, sys, threading, time, urllib.request
from concurrent.futures import ThreadPoolExecutor
took, stop = [], threading.Event()
def ask(scheduled):
    try:
        with urllib.request.urlopen(sys.argv[1], timeout=60) as resp:
            ok = resp.status == 200 and resp.read() == b"ok"
    except OSError:
        ok = False
    took.append(time.monotonic() - scheduled if ok else 60.0)
threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
pool, due = ThreadPoolExecutor(32), time.monotonic()
while not stop.is_set():
    pool.submit(ask, due)
    due += 0.01
    time.sleep(max(0.0, due - time.monotonic()))
pool.shutdown(wait=True)
print(json.dumps(took))
"""


@contextlib.contextmanager
def sandbox_process(snapshot_path: str) -> Iterator[tuple[str, dict[str, str]]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SANDBOX, snapshot_path], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        started = json.loads(proc.stdout.readline() or "null")
        assert started, "the sandbox did not start"
        yield started["url"], started["env"]
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(30)


@contextlib.asynccontextmanager
async def serving(slack: SlackMock, prefix: str, url: str, env: dict[str, str]) -> AsyncIterator[Served]:
    settings = Settings(
        bot_token=TOKEN, signing_secret=SECRET, redis_url=REDIS_URL, api_url=slack.api_url, key_prefix=prefix
    )
    backends = Backends(
        runai=RunaiConfig(url, "sandbox", "sandbox", console_url=url), kube=KubeConfig.from_env(env), now=lambda: b.NOW
    )
    bot = build_bot(settings, backends, policy=POLICY)
    config = uvicorn.Config(http_app(bot), host="127.0.0.1", port=0, log_config=None, access_log=False)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            assert not task.done(), "uvicorn did not start"
            await asyncio.sleep(0.02)
        yield Served(bot, server.servers[0].sockets[0].getsockname()[1])
        await bot.tracker.idle(120)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 60)


def answered(slack: SlackMock) -> bool:
    return any(ERROR[:40] in str(c.body) for c in slack.of("chat.postMessage") + slack.of("chat.update"))


async def healthz_while_diagnosing(slack: SlackMock, s: Served, name: str) -> list[float]:
    """Seconds of every ``/healthz`` asked between a signed ``/diagnose`` and its answer in Slack, sorted."""
    body = command_body("train-7 project=nlp", user=ALICE, channel=CHAN, response_url=slack.response_url(name))
    prober = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PROBER, f"http://127.0.0.1:{s.port}/healthz", stdin=PIPE, stdout=PIPE
    )
    try:
        status, _ = await s.send(head(len(body), signed(body)), body.encode())
        assert status == 200
        end = time.monotonic() + 90
        while not answered(slack):
            assert time.monotonic() < end, "no answer in 90 s"
            await asyncio.sleep(0.01)
    finally:
        out, _ = await prober.communicate(b"")
    await s.bot.tracker.idle(60)
    return sorted(json.loads(out))


async def test_healthz_answers_within_100_ms_while_a_12_mb_log_is_diagnosed(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    runs: list[list[float]] = []
    with sandbox_process(snapshot(tmp_path)) as (url, env):
        for attempt in range(2):
            slack.calls.clear()
            async with serving(slack, f"{prefix}{attempt}:", url, env) as s:  # a cache of its own: diagnosed again
                took = await healthz_while_diagnosing(slack, s, f"r{attempt}")
            runs.append(took)
            if len(took) >= 20 and took[int(len(took) * 0.99)] < BOUND:
                break
    took = runs[-1]
    assert len(took) >= 20, f"only {len(took)} /healthz answers while diagnosing: the diagnosis was too quick to tell"
    p99 = took[int(len(took) * 0.99)]
    assert p99 < BOUND, f"/healthz p99 {p99 * 1000:.0f} ms (max {took[-1] * 1000:.0f} ms) over {len(took)} answers"
