"""Scale bench (issue 26 §3): the ack tier under load, answers spread over worker processes, a worker killed
mid-burst, and CPU per diagnosis, in one run (about 3 minutes on a 2-core machine; ``--quick``: under 2).

Real processes (``workload-doctor serve --http --ack-only`` and ``workload-doctor worker``, ``WD_JOB_QUEUE=true``)
on the Redis at ``REDIS_URL``, each part under a ``WD_REDIS_PREFIX`` of its own (its keys deleted after), against
one mock Slack Web API (``tests/slack_mock.py``) in this process:

1. **ack**: one ack process (backends from the environment, never called: it only acks) and ``--rate`` signed
   ``/diagnose help`` a second for ``--seconds`` s, open loop: each request is sent on its schedule whatever the
   replies (aiohttp, a connection pool, ``--clients`` processes). Ack latency is from the request's send to its
   HTTP 200 (help is answered in the ack), p50/p99 in ms; sent and answered (a 200 carrying the help); what the
   client achieved (its send rate, and p99 of how late it sent behind the schedule: a late client is reported,
   not hidden); the ack process's CPU (ms per request, share of a core) and RSS before, after and at its peak
   (``VmHWM``). ``WD_MAX_IN_FLIGHT`` is left at its default: help told "busy" is acked, not answered.
2. **answers**: one ack process and 1, then 2 ``worker`` processes calling one ``workload-doctor sandbox
   --latency-ms 50`` process (``--sandbox worker``: a sandbox inside each worker instead), as a deployment's workers
   call a remote API. ``--questions`` signed ``/diagnose`` sent at once, each from its own person in its own channel
   about its own workload (copies of a case's failed workload under their own names, ids and pods: no answer can be
   shared or cached), after a warm-up burst of as many other workloads (a Run:ai token, pools grown). Answer
   latency is from the command's send to the moment the mock Slack receives its answer (the ``chat.update`` turning
   the "Diagnosing…" message into the card), p50/p95, and p95(1 worker)/p95(2); where the time goes (send to the
   "Diagnosing…" line: ack, queue, a worker slot, ``WD_WORKER_CONCURRENCY``; then to the answer: the diagnosis); the
   CPU per question of the workers, the ack
   process, the sandbox, this process (the mock Slack, the client) and Redis, and how many of the machine's cores
   they kept busy over the burst; the API requests per question (from the sandbox's request log).
3. **kill**: 3 ack processes and 2 workers (sandbox at ``--kill-latency-ms`` per request, so jobs are in progress
   long enough to be killed mid-answer); ``--kill-questions`` mentions, each from its own person in its own
   channel, delivered to every ack process and once more as Slack's retry; once jobs run, the worker running the
   most is killed with SIGKILL. ``lost``: questions with no answer within ``--wait`` s; ``duplicated``: questions
   answered more than once; ``extra_progress_lines``: questions answered once with a second message in their
   thread (a killed worker's "Diagnosing…" line its successor did not know of).
4. **cpu**: ``bench/cpu.py``'s :func:`cpu_per_diagnosis` (the sandbox in another process, ``--cpu-runs``
   diagnoses per snapshot).

Prints each part's figures, then as the last line one JSON object (``ack_p99_ms``, ``answer_p95_ms_1_worker``,
``answer_p95_ms_2_workers``, ``lost``, ``duplicated``, ``cpu_ms_per_diagnosis`` and the rest). Aims (issue 26) on
a 2-core machine: ack p99 under 100 ms, answer p95 under 1 s with 2 workers. Figures, never test assertions.

Usage: python bench/scale.py [--quick] [--rate 1000] [--seconds 10] [--clients 1] [--questions 50]
    [--latency-ms 50] [--sandbox process|worker] [--worker-concurrency 32] [--kill-questions 24] [--wait 90]
    [--cpu-runs 3] [--parts ...] [--logs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import redis  # noqa: E402

from bench.slack import with_copies  # noqa: E402
from tests.slack_mock import (  # noqa: E402
    REDIS_URL,
    SECRET,
    TOKEN,
    Call,
    SlackMock,
    command_body,
    deliver,
    event_body,
    healthy,
    mention,
    sign,
)

#: the CLI the processes run (``WD_BENCH_CLI``: a wrapper, say a profiler around it)
CLI = os.environ.get("WD_BENCH_CLI") or str(Path(sys.executable).parent / "workload-doctor")
CASE = ROOT / "tests" / "fixtures" / "cases" / "runai" / "text-only-question.json"
#: what every question names besides its workload (the case's project and cluster; no access policy is set)
WHERE = "project=nlp cluster=dgx-prod"
FORM = {"content-type": "application/x-www-form-urlencoded"}
PROGRESS = "Diagnosing"


def pct(values: list[float], p: float) -> float:
    """The ``p``-th percentile of ``values`` (nearest rank); 0.0 for none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def proc_mb(pid: int, field_name: str) -> float:
    """``field_name`` (``VmRSS``, ``VmHWM``: the peak) of process ``pid`` in MB, from Linux ``/proc``."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used, from Linux ``/proc``; 0.0 once it is gone."""
    with contextlib.suppress(OSError, IndexError, ValueError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


# -- the processes ---------------------------------------------------------------------------------------------


@dataclass
class Fleet:
    """Ack processes and workers of one part, under their own Redis prefix; logs in ``logs``."""

    slack: SlackMock
    snapshot: Path
    logs: Path
    latency_ms: int = 50
    extra_env: dict[str, str] = field(default_factory=dict)
    prefix: str = field(default_factory=lambda: f"wdscale:{uuid.uuid4().hex[:8]}:")
    #: "process": one ``workload-doctor sandbox`` process that every worker calls, as a deployment's workers call a
    #: remote API (its CPU counted apart); "worker": a sandbox inside each worker (``worker --snapshot``)
    sandbox: str = "process"
    acks: list[tuple[subprocess.Popen[bytes], str]] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    sandbox_proc: subprocess.Popen[bytes] | None = None
    sandbox_env: dict[str, str] = field(default_factory=dict)

    def env(self, token: str) -> dict[str, str]:
        return {
            **os.environ,
            "SLACK_BOT_TOKEN": token,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": self.slack.api_url,
            "REDIS_URL": REDIS_URL,
            "WD_REDIS_PREFIX": self.prefix,
            "WD_RATE_LIMIT": "100000",
            "WD_JOB_QUEUE": "true",
            "WD_LOG_FORMAT": "json",
            "WD_POLICY_FILE": "",
            **self.extra_env,
        }

    def _spawn(
        self, command: list[str], token: str, name: str, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log = (self.logs / f"{self.prefix.replace(':', '_')}{name}.log").open("wb")
        return subprocess.Popen(command, env=self.env(token) | (env or {}), stdout=log, stderr=subprocess.STDOUT)

    def _start_sandbox(self) -> None:
        """Start the shared sandbox process and read the settings it prints (``NAME=value`` lines: the Run:ai URL
        and credentials, the kubeconfig)."""
        command = [CLI, "sandbox", "--snapshot", str(self.snapshot), "--latency-ms", str(self.latency_ms)]
        proc = subprocess.Popen(command, env=self.env(TOKEN), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.sandbox_proc = proc
        assert proc.stdout is not None
        env: dict[str, str] = {}
        while "KUBECONFIG" not in env or "RUNAI_BASE_URL" not in env:
            line = proc.stdout.readline().decode()
            if not line:
                raise RuntimeError(f"the sandbox exited ({proc.wait(10)}) before printing its settings")
            for word in shlex.split(line):
                name, eq, value = word.partition("=")
                if eq and name.isupper():
                    env[name] = value
        self.sandbox_env = env

    def start(self, acks: int, workers: int) -> Fleet:
        for i in range(acks):
            port = free_port()
            # an ack process only acks: backends named, never called (no sandbox in it, as in a deployment)
            env_backends = ["--port", str(port)]
            proc = self._spawn([CLI, "serve", "--http", "--ack-only", *env_backends], TOKEN, f"ack{i}")
            self.acks.append((proc, f"http://127.0.0.1:{port}"))
        if workers and self.sandbox == "process":
            self._start_sandbox()
        for i in range(workers):
            command = [CLI, "worker"]
            if self.sandbox != "process":
                command += ["--snapshot", str(self.snapshot), "--latency-ms", str(self.latency_ms)]
            self.workers.append(self._spawn(command, TOKEN, f"worker{i}", self.sandbox_env))
        for proc, url in self.acks:
            _wait(lambda u=url: healthy(u), 60, f"ack process {url}", proc)
        return self

    @property
    def urls(self) -> list[str]:
        return [url for _, url in self.acks]

    def stop(self) -> None:
        procs = [p for p, _ in self.acks] + self.workers + ([self.sandbox_proc] if self.sandbox_proc else [])
        for proc in procs:  # a graceful stop first (a profiler around a process writes its figures then)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)
        r = redis.Redis.from_url(REDIS_URL)
        for pattern in (f"{self.prefix}*", f"saq:{self.prefix}*"):
            for key in r.scan_iter(match=pattern, count=1000):
                r.delete(key)
        r.close()


@contextlib.contextmanager
def fleet(slack: SlackMock, snapshot: Path, logs: Path, acks: int, workers: int, **kw: Any) -> Iterator[Fleet]:
    f = Fleet(slack, snapshot, logs, **kw)
    try:
        yield f.start(acks, workers)
    finally:
        f.stop()


def _wait(predicate: Any, limit: float, what: str, proc: subprocess.Popen[bytes] | None = None) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if predicate():
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited ({proc.returncode}): see its log")
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


def _env_backends() -> dict[str, str]:
    """Run:ai named for the ack processes (never called: they only ack and enqueue)."""
    return {"RUNAI_BASE_URL": "http://127.0.0.1:9", "RUNAI_CLIENT_ID": "ack", "RUNAI_CLIENT_SECRET": "ack"}


# -- 1. the ack tier under 1,000 help commands a second ---------------------------------------------------------


def _client(url: str, rate: int, seconds: float, index: int, clients: int, start_at: float) -> list[tuple[float, ...]]:
    """One load client (a process of its own): requests ``index``, ``index + clients``, … of the schedule (request
    ``i`` at ``start_at + i / rate``, wall clock), each sent on time whatever the replies. Returns per request
    (scheduled, sent, acked, answered: 1.0 for a 200 carrying the help, 0.0 else, HTTP status), wall-clock
    seconds; acked -1.0 and status 0.0 for a connection error or a timeout."""
    return asyncio.run(_send_help(url, rate, seconds, index, clients, start_at))


async def _send_help(
    url: str, rate: int, seconds: float, index: int, clients: int, start_at: float
) -> list[tuple[float, ...]]:
    import aiohttp

    n = int(rate * seconds)
    ids = range(index, n, clients)
    # built and signed before the clock starts: the client's own CPU stays out of the schedule
    plan = []
    for i in ids:
        body = command_body("help", user=f"UH{i:08d}", channel="CHELP0001")
        plan.append((i, body.encode(), {**FORM, **sign(body)}))
    results: list[tuple[float, ...]] = []
    connector = aiohttp.TCPConnector(limit=2000, limit_per_host=2000)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as http:

        async def one(scheduled: float, body: bytes, headers: dict[str, str]) -> None:
            sent = time.time()
            try:
                async with http.post(url + "/slack/events", data=body, headers=headers) as resp:
                    text = await resp.text()
                    acked = time.time()
                    answered = 1.0 if resp.status == 200 and "/diagnose" in text else 0.0
            except (aiohttp.ClientError, TimeoutError):
                results.append((scheduled, sent, -1.0, 0.0, 0.0))
                return
            results.append((scheduled, sent, acked, answered, float(resp.status)))

        tasks = []
        loop = asyncio.get_running_loop()
        for i, payload, headers in plan:
            scheduled = start_at + i / rate
            delay = scheduled - time.time()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(loop.create_task(one(scheduled, payload, headers)))
        await asyncio.gather(*tasks)
    return results


def ack_part(slack: SlackMock, snapshot: Path, logs: Path, rate: int, seconds: float, clients: int) -> dict[str, Any]:
    with fleet(slack, snapshot, logs, acks=1, workers=0, extra_env=_env_backends()) as f:
        ((proc, url),) = f.acks
        for i in range(20):  # warm: the first requests' imports and connections
            warm = command_body("help", user=f"UW{i:04d}", channel="CHELP0001")
            httpx.post(url + "/slack/events", content=warm, headers={**FORM, **sign(warm)}, timeout=10)
        rss_before = proc_mb(proc.pid, "VmRSS")
        cpu_before, wall_before = proc_cpu(proc.pid), time.monotonic()
        start_at = time.time() + 1.0  # every client has built its requests by then
        spawn = multiprocessing.get_context("spawn")
        with spawn.Pool(clients) as pool:
            parts = pool.starmap(_client, [(url, rate, seconds, k, clients, start_at) for k in range(clients)])
        rows = [row for part in parts for row in part]
        rss_after, rss_peak = proc_mb(proc.pid, "VmRSS"), proc_mb(proc.pid, "VmHWM")
        # CPU the ack process used while loaded (1.0 of a core: saturated), and per request
        busy = proc_cpu(proc.pid) - cpu_before
        core_share = busy / max(1e-9, time.monotonic() - wall_before - 1.0)
    ok = [r for r in rows if r[2] >= 0]
    acks = [r[2] - r[1] for r in ok]
    late = [r[1] - r[0] for r in rows]
    # the rate the client kept: every request sent by the time the last one left (a late client sends slower)
    sent_span = max(r[1] for r in rows) - min(r[0] for r in rows) if rows else 0.0
    return {
        "ack_rate_per_s": rate,
        "ack_seconds": seconds,
        "ack_clients": clients,
        "ack_sent": len(rows),
        "ack_answered": int(sum(r[3] for r in rows)),
        "ack_errors": len(rows) - len(ok),
        "ack_statuses": dict(sorted(Counter(str(int(r[4])) for r in rows).items())),
        "ack_p50_ms": ms(statistics.median(acks)) if acks else None,
        "ack_p99_ms": ms(pct(acks, 99)) if acks else None,
        "ack_max_ms": ms(max(acks)) if acks else None,
        # the help answered and the requests told "busy" (WD_MAX_IN_FLIGHT) apart
        "ack_p99_ms_answered": ms(pct([r[2] - r[1] for r in ok if r[3]], 99)),
        "ack_p99_ms_not_answered": ms(pct([r[2] - r[1] for r in ok if not r[3]], 99)),
        "client_rate_per_s": round(len(rows) / sent_span, 1) if sent_span else None,
        "client_late_p99_ms": ms(pct(late, 99)),
        "ack_cpu_ms_per_request": ms(busy / max(1, len(rows))),
        "ack_cores_busy": round(core_share, 2),
        "ack_rss_mb_before": rss_before,
        "ack_rss_mb_after": rss_after,
        "ack_rss_mb_peak": rss_peak,
    }


# -- 2. answers with 1 and 2 workers ---------------------------------------------------------------------------


def _is_progress(call: Call) -> bool:
    return PROGRESS in json.dumps(call.body.get("text") or "") or PROGRESS in json.dumps(call.body.get("blocks") or "")


def _answers_by_channel(slack: SlackMock, channels: set[str]) -> dict[str, list[Call]]:
    """The answers posted per channel of ``channels``: updates and posts that are not the "Diagnosing…" line."""
    out: dict[str, list[Call]] = {c: [] for c in channels}
    for call in slack.of("chat.update") + slack.of("chat.postMessage"):
        channel = call.body.get("channel")
        if channel in out and not _is_progress(call):
            out[channel].append(call)
    return out


async def _commands(url: str, questions: list[tuple[str, str, str]]) -> dict[str, float]:
    """Send every ``(user, channel, text)`` as a signed ``/diagnose`` at once; the send time per channel."""
    sent: dict[str, float] = {}
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as http:

        async def one(user: str, channel: str, text: str) -> None:
            body = command_body(text, user=user, channel=channel)
            sent[channel] = time.monotonic()
            resp = await http.post("/slack/events", content=body, headers={**FORM, **sign(body)})
            if resp.status_code != 200:
                raise RuntimeError(f"/diagnose not acked: HTTP {resp.status_code} {resp.text[:200]}")

        await asyncio.gather(*(one(*q) for q in questions))
    return sent


def _answered_all(slack: SlackMock, channels: set[str], limit: float) -> dict[str, list[Call]]:
    """The answers per channel once every channel of ``channels`` has one (or ``limit`` seconds passed). Each
    call the mock received is looked at once: this process's CPU is the machine's too, taken from the workers
    while they answer."""
    end = time.monotonic() + limit
    answers: dict[str, list[Call]] = {c: [] for c in channels}
    waiting, read = set(channels), 0
    while True:
        with slack.lock:
            new = slack.calls[read:]
        read += len(new)
        for call in new:
            channel = call.body.get("channel")
            if (
                channel in answers
                and call.method in ("chat.update", "chat.postMessage")
                and call.status == 200
                and not _is_progress(call)
            ):
                answers[channel].append(call)
                waiting.discard(channel)
        if not waiting or time.monotonic() > end:
            return answers
        time.sleep(0.05)


def answer_part(
    slack: SlackMock,
    snapshot: Path,
    logs: Path,
    names: list[str],
    workers: int,
    latency_ms: int,
    tag: str,
    extra_env: dict[str, str],
    sandbox: str = "process",
) -> dict[str, Any]:
    """The first half of ``names`` measured, the second half a warm-up burst before it: a running bot has its
    Run:ai token and its connection pools grown to the concurrency it sees (a first burst opens every connection)."""
    half = len(names) // 2
    warm_names, names = names[half:], names[:half]
    env = {**_env_backends(), **extra_env}
    kw: dict[str, Any] = {"latency_ms": latency_ms, "extra_env": env, "sandbox": sandbox}
    with fleet(slack, snapshot, logs, acks=1, workers=workers, **kw) as f:
        url = f.urls[0]
        warm = [(f"UW{tag}{i:05d}", f"CW{tag}{i:06d}", f"{n} {WHERE}") for i, n in enumerate(warm_names)]
        asyncio.run(_commands(url, warm))
        _answered_all(slack, {c for _, c, _ in warm}, 60)
        questions = [(f"U{tag}{i:06d}", f"C{tag}{i:07d}", f"{n} {WHERE}") for i, n in enumerate(names)]
        pids = [p.pid for p, _ in f.acks] + [p.pid for p in f.workers]
        sandbox_pid = f.sandbox_proc.pid if f.sandbox_proc else 0
        cpu_before = [proc_cpu(pid) for pid in pids]
        sandbox_before = proc_cpu(sandbox_pid) if sandbox_pid else 0.0
        own_before, redis_before, wall_before = time.process_time(), _redis_cpu(), time.monotonic()
        sent = asyncio.run(_commands(url, questions))
        answers = _answered_all(slack, set(sent), 120)
        cpu = [proc_cpu(pid) - before for pid, before in zip(pids, cpu_before, strict=True)]
        own, redis_cpu = time.process_time() - own_before, _redis_cpu() - redis_before
        wall = time.monotonic() - wall_before
        sandbox_cpu = proc_cpu(sandbox_pid) - sandbox_before if sandbox_pid else None
        requests = _api_requests(f, since=min(sent.values())) if f.sandbox_proc else None
    latencies = [calls[0].at - sent[channel] for channel, calls in answers.items() if calls]
    # where the time goes: send to the "Diagnosing…" line (ack, queue, a worker taking the job), then to the answer
    progress = {
        c.body.get("channel"): c.at for c in reversed(slack.of("chat.postMessage")) if c.body.get("channel") in sent
    }
    queued = [progress[c] - sent[c] for c in sent if c in progress]
    working = [calls[0].at - progress[c] for c, calls in answers.items() if calls and c in progress]
    asked = max(1, len(names))
    return {
        "questions": len(names),
        "answered": len(latencies),
        "p50_ms": ms(statistics.median(latencies)) if latencies else None,
        "p95_ms": ms(pct(latencies, 95)) if latencies else None,
        "max_ms": ms(max(latencies)) if latencies else None,
        "to_progress_p50_ms": ms(statistics.median(queued)) if queued else None,
        "to_progress_p95_ms": ms(pct(queued, 95)) if queued else None,
        "progress_to_answer_p50_ms": ms(statistics.median(working)) if working else None,
        "progress_to_answer_p95_ms": ms(pct(working, 95)) if working else None,
        "ack_cpu_ms_per_question": ms(cpu[0] / asked),
        "worker_cpu_ms_per_question": ms(sum(cpu[1:]) / asked),
        "sandbox_cpu_ms_per_question": ms(sandbox_cpu / asked) if sandbox_cpu is not None else None,
        # the rest of the machine's CPU over the burst: this process (the mock Slack, the client) and Redis
        "bench_cpu_ms_per_question": ms(own / asked),
        "redis_cpu_ms_per_question": ms(redis_cpu / asked),
        # every process above over the burst's wall time: 2.0 is both cores of a 2-core machine busy throughout
        "cores_busy": round((sum(cpu) + (sandbox_cpu or 0.0) + own + redis_cpu) / max(wall, 1e-9), 2),
        "api_requests_per_question": round(sum(requests.values()) / asked, 1) if requests else None,
        "api_requests_by_path": dict(requests.most_common(12)) if requests else None,
    }


def _redis_cpu() -> float:
    """CPU seconds the Redis server has used (``INFO cpu``: user + system, its threads included)."""
    r = redis.Redis.from_url(REDIS_URL)
    try:
        info = r.info("cpu")
    finally:
        r.close()
    return float(info.get("used_cpu_user", 0.0)) + float(info.get("used_cpu_sys", 0.0))


def _api_requests(f: Fleet, since: float) -> Counter[str]:
    """The requests the shared sandbox served since ``since`` (``time.monotonic()``: one clock for every process of
    this machine), by path with ids and names folded (``{id}``)."""
    from sandbox.server import REQUEST_LOG_PATH

    url = f.sandbox_env["RUNAI_BASE_URL"]
    log = httpx.get(url + REQUEST_LOG_PATH, timeout=30).json()
    folded: Counter[str] = Counter()
    for r in log:
        if r["started"] >= since:
            folded[re.sub(r"/[0-9a-f-]{36}|/train-[\w-]+", "/{id}", r["path"])] += 1
    return folded


# -- 3. a worker killed with SIGKILL during a burst ---------------------------------------------------------------


def _active_by_worker(r: redis.Redis, prefix: str) -> Counter[str]:
    """Running jobs by SAQ worker id (``host:pid:nonce``)."""
    active: Counter[str] = Counter()
    for key in r.lrange(f"saq:{prefix}requests:active", 0, -1):
        raw = r.get(key)
        worker = json.loads(raw).get("worker_id") if raw else None
        if worker:
            active[str(worker)] += 1
    return active


def kill_part(
    slack: SlackMock,
    snapshot: Path,
    logs: Path,
    names: list[str],
    latency_ms: int,
    wait: float,
    extra_env: dict[str, str],
) -> dict[str, Any]:
    from concurrent.futures import ThreadPoolExecutor

    threads = {f"CK{i:07d}": f"900.{i:06d}" for i in range(len(names))}
    env = {**_env_backends(), **extra_env}
    with fleet(slack, snapshot, logs, acks=3, workers=2, latency_ms=latency_ms, extra_env=env) as f:
        urls = f.urls
        plan: list[tuple[str, str, int]] = []
        for i, (name, (channel, ts)) in enumerate(zip(names, threads.items(), strict=True)):
            body = event_body(mention(f"{name} {WHERE}", ts, user=f"UK{i:07d}", channel=channel), f"EvS{i:06d}")
            plan += [(url, body, 0) for url in urls] + [(urls[i % len(urls)], body, 1)]
        r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=16) as pool:
            statuses = Counter(pool.map(lambda p: deliver(*p, timeout=30), plan))
        killed_jobs = 0
        with contextlib.suppress(TimeoutError):
            _wait(lambda: sum(_active_by_worker(r, f.prefix).values()) >= 2, 30, "jobs running on the workers")
            worker_id, killed_jobs = _active_by_worker(r, f.prefix).most_common(1)[0]
            pid = int(worker_id.split(":")[1])
            (victim,) = [p for p in f.workers if p.pid == pid]
            victim.send_signal(signal.SIGKILL)
            victim.wait(10)
        killed_at = time.monotonic() - t0
        answers = _answered_all(slack, set(threads), wait)
        done_at = time.monotonic() - t0
        time.sleep(3)  # a duplicate would arrive meanwhile
        answers = _answers_by_channel(slack, set(threads))
        r.close()
    posted = Counter(
        c.body.get("channel") for c in slack.of("chat.postMessage") if c.body.get("thread_ts") in threads.values()
    )
    lost = [c for c, calls in answers.items() if not calls]
    duplicated = [c for c, calls in answers.items() if len(calls) > 1]
    # a second message in the thread with one answer: a killed worker's "Diagnosing…" line that its successor
    # could not know of (posted, then killed before recording it), left standing beside the answer
    extra_lines = [c for c, calls in answers.items() if len(calls) <= 1 and posted[c] > 1]
    return {
        "kill_questions": len(names),
        "kill_deliveries": sum(statuses.values()),
        "kill_non_200": sum(n for s, n in statuses.items() if s != 200),
        "killed_jobs_in_progress": killed_jobs,
        "killed_at_s": round(killed_at, 1),
        "all_answered_at_s": round(done_at, 1),
        "lost": len(lost),
        "duplicated": len(duplicated),
        "extra_progress_lines": len(extra_lines),
        "lost_or_duplicated_channels": sorted(set(lost) | set(duplicated) | set(extra_lines)),
    }


# -- 4. CPU per diagnosis ------------------------------------------------------------------------------------------


def cpu_part(runs: int, max_cases: int) -> dict[str, Any]:
    from bench.cpu import DEFAULT_CASES, cpu_per_diagnosis, snapshots

    result = cpu_per_diagnosis(snapshots(DEFAULT_CASES, max_cases), runs)
    return {k: result[k] for k in ("cpu_ms_per_diagnosis", "cpu_ms_p50", "cpu_ms_p95", "diagnoses", "snapshots")}


# -- the run ---------------------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="a short run: 2 s of load, 10 questions, 8 to kill")
    ap.add_argument("--rate", type=int, default=1000, help="ack: signed help commands a second")
    ap.add_argument("--seconds", type=float, default=10.0, help="ack: seconds of load")
    ap.add_argument("--clients", type=int, default=1, help="ack: load client processes sharing the schedule")
    ap.add_argument("--questions", type=int, default=50, help="answers: concurrent distinct /diagnose")
    ap.add_argument("--latency-ms", type=int, default=50, help="answers: the workers' sandbox, ms per request")
    ap.add_argument("--worker-concurrency", type=int, default=32, help="WD_WORKER_CONCURRENCY (32: its default)")
    ap.add_argument("--kill-questions", type=int, default=24, help="kill: questions in the burst")
    ap.add_argument("--kill-latency-ms", type=int, default=250, help="kill: the workers' sandbox, ms per request")
    ap.add_argument("--wait", type=float, default=90.0, help="kill: seconds to wait for every answer")
    ap.add_argument("--cpu-runs", type=int, default=3, help="cpu: counted diagnoses per snapshot")
    ap.add_argument("--cpu-cases", type=int, default=6, help="cpu: snapshots per directory")
    ap.add_argument(
        "--sandbox",
        choices=("process", "worker"),
        default="process",
        help="answers: one sandbox process the workers call (default), or a sandbox inside each worker",
    )
    ap.add_argument("--parts", default="ack,answers,kill,cpu", help="which parts to run, comma-separated")
    ap.add_argument(
        "--answer-workers",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[1, 2],
        help="answers: the worker counts to measure, comma-separated",
    )
    ap.add_argument("--logs", type=Path, help="keep the processes' logs in this directory (default: deleted)")
    args = ap.parse_args()
    if args.quick:
        args.seconds, args.questions, args.kill_questions, args.cpu_runs, args.cpu_cases = 2.0, 10, 8, 1, 2
    parts = set(args.parts.split(","))
    started = time.monotonic()
    out: dict[str, Any] = {}
    slack = SlackMock().start()
    extra = {"WD_WORKER_CONCURRENCY": str(args.worker_concurrency)}
    with tempfile.TemporaryDirectory(prefix="wd-scale-") as tmp:
        logs = args.logs or Path(tmp)
        logs.mkdir(parents=True, exist_ok=True)
        n = max(2 * args.questions, args.kill_questions)
        world, _name, names = with_copies(json.loads(CASE.read_text()), n)
        snapshot = logs / "world.json"
        snapshot.write_text(json.dumps(world))
        try:
            if "ack" in parts:
                ack = ack_part(slack, snapshot, logs, args.rate, args.seconds, args.clients)
                out |= ack
                print(
                    f"ack: {ack['ack_sent']} signed help at {args.rate}/s for {args.seconds:g} s into one ack process "
                    f"(client achieved {ack['client_rate_per_s']}/s, late p99 {ack['client_late_p99_ms']} ms)\n"
                    f"  ack p50 {ack['ack_p50_ms']} ms  p99 {ack['ack_p99_ms']} ms  max {ack['ack_max_ms']} ms;  "
                    f"answered {ack['ack_answered']}/{ack['ack_sent']}, errors {ack['ack_errors']}, "
                    f"HTTP statuses {ack['ack_statuses']}\n"
                    f"  ack process CPU {ack['ack_cpu_ms_per_request']} ms per request, {ack['ack_cores_busy']} of a "
                    f"core busy;  RSS before {ack['ack_rss_mb_before']} MB, after {ack['ack_rss_mb_after']} MB, "
                    f"peak {ack['ack_rss_mb_peak']} MB",
                    flush=True,
                )
            if "answers" in parts:
                for workers in args.answer_workers:
                    asked = names[: 2 * args.questions]  # measured, then as many to warm up with
                    run = answer_part(
                        slack, snapshot, logs, asked, workers, args.latency_ms, f"A{workers}", extra, args.sandbox
                    )
                    suffix = "1_worker" if workers == 1 else f"{workers}_workers"
                    out |= {
                        f"answer_p50_ms_{suffix}": run["p50_ms"],
                        f"answer_p95_ms_{suffix}": run["p95_ms"],
                        f"answered_{suffix}": run["answered"],
                        f"to_progress_p95_ms_{suffix}": run["to_progress_p95_ms"],
                        f"progress_to_answer_p95_ms_{suffix}": run["progress_to_answer_p95_ms"],
                        f"worker_cpu_ms_per_question_{suffix}": run["worker_cpu_ms_per_question"],
                        f"sandbox_cpu_ms_per_question_{suffix}": run["sandbox_cpu_ms_per_question"],
                        f"cores_busy_{suffix}": run["cores_busy"],
                        f"api_requests_per_question_{suffix}": run["api_requests_per_question"],
                    }
                    print(
                        f"answers, {workers} worker(s): {run['questions']} distinct /diagnose at once, "
                        f"{args.latency_ms} ms per API request: p50 {run['p50_ms']} ms  p95 {run['p95_ms']} ms  "
                        f"max {run['max_ms']} ms  ({run['answered']}/{run['questions']} answered)\n"
                        f"  send to 'Diagnosing…' p50 {run['to_progress_p50_ms']} ms  "
                        f"p95 {run['to_progress_p95_ms']} ms; "
                        f"then to the answer p50 {run['progress_to_answer_p50_ms']} ms  "
                        f"p95 {run['progress_to_answer_p95_ms']} ms\n"
                        f"  CPU ms per question: workers {run['worker_cpu_ms_per_question']}, ack "
                        f"{run['ack_cpu_ms_per_question']}, sandbox {run['sandbox_cpu_ms_per_question']}, this "
                        f"process (mock Slack, client) {run['bench_cpu_ms_per_question']}, Redis "
                        f"{run['redis_cpu_ms_per_question']}; {run['cores_busy']} cores busy over the burst\n"
                        f"  {run['api_requests_per_question']} API requests per question: "
                        f"{run['api_requests_by_path']}",
                        flush=True,
                    )
                one, two = out.get("answer_p95_ms_1_worker"), out.get("answer_p95_ms_2_workers")
                out["answer_p95_ratio_1_to_2"] = round(one / two, 2) if one and two else None
                out["questions"] = args.questions
                out["worker_concurrency"] = args.worker_concurrency
            if "kill" in parts:
                kill = kill_part(
                    slack, snapshot, logs, names[: args.kill_questions], args.kill_latency_ms, args.wait, extra
                )
                out |= kill
                print(
                    f"kill: {kill['kill_questions']} questions ({kill['kill_deliveries']} deliveries to 3 ack "
                    f"processes), a worker SIGKILLed at {kill['killed_at_s']} s with {kill['killed_jobs_in_progress']} "
                    f"jobs running; all answered by {kill['all_answered_at_s']} s: lost {kill['lost']}, "
                    f"duplicated {kill['duplicated']} (and {kill['extra_progress_lines']} with a second message in the "
                    "thread beside one answer)",
                    flush=True,
                )
            if "cpu" in parts:
                cpu = cpu_part(args.cpu_runs, args.cpu_cases)
                out |= cpu
                print(
                    f"cpu: {cpu['cpu_ms_per_diagnosis']} ms per diagnosis (p50 {cpu['cpu_ms_p50']}, p95 "
                    f"{cpu['cpu_ms_p95']}) over {cpu['diagnoses']} diagnoses of {cpu['snapshots']} snapshots",
                    flush=True,
                )
        finally:
            slack.stop()
    out["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
