"""Three ack processes and two workers on one Redis (issue 26 §1, marked slow): every question answered once,
through a worker killed with SIGKILL mid-job.

Real processes: three ``serve --http --ack-only`` and two ``worker`` (``WD_JOB_QUEUE=true``), each answering from
a sandbox that takes 250 ms per request, one mock Slack. Twelve questions, each from its own person, are delivered
to every ack process at once and again as Slack's retries; while the workers answer them, the worker holding the
most jobs is killed with SIGKILL. Its jobs stop beating their heartbeat, SAQ's sweep gives them back, and the
surviving worker takes them over once their event claims expire: every question is answered exactly once (its
progress line posted once and turned into the answer).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.bot.test_digest_replicas import free_port, wait_for
from tests.paths import TESTS
from tests.slack_mock import REDIS_URL, SECRET, SlackMock, deliver, event_body, healthy, mention

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "workload-doctor")
SNAPSHOT = TESTS / "fixtures" / "cases" / "runai" / "missing-cluster.json"
BARE = "C0BARE001"
QUESTIONS = 12


def _env(slack: SlackMock, prefix: str, token: str) -> dict[str, str]:
    return {
        **os.environ,
        "SLACK_BOT_TOKEN": token,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack.api_url,
        "REDIS_URL": REDIS_URL,
        "WD_REDIS_PREFIX": prefix,
        "WD_RATE_LIMIT": "1000",
        "WD_JOB_QUEUE": "true",
        "WD_JOB_HEARTBEAT": "3",
        "WD_EVENT_LEASE": "6",
        "WD_WORKER_CONCURRENCY": "8",
        "WD_LOG_FORMAT": "json",
    }


class Fleet:
    def __init__(self, slack: SlackMock, prefix: str) -> None:
        self.slack, self.prefix = slack, prefix
        self.acks: list[tuple[subprocess.Popen[bytes], str]] = []
        self.workers: list[subprocess.Popen[bytes]] = []

    def start(self, acks: int = 3, workers: int = 2) -> None:
        for i in range(acks):
            port = free_port()
            proc = subprocess.Popen(
                [CLI, "serve", "--http", "--ack-only", "--port", str(port), "--snapshot", str(SNAPSHOT)],
                env=_env(self.slack, self.prefix, f"xoxb-ack-{i}"),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self.acks.append((proc, f"http://127.0.0.1:{port}"))
        for i in range(workers):
            self.workers.append(
                subprocess.Popen(
                    [CLI, "worker", "--snapshot", str(SNAPSHOT), "--latency-ms", "250"],
                    env=_env(self.slack, self.prefix, f"xoxb-worker-{i}"),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        for _, url in self.acks:
            wait_for(lambda u=url: healthy(u), 60, f"ack process {url}")

    def stop(self) -> None:
        for proc in [p for p, _ in self.acks] + self.workers:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait(10)


def _thread(n: int) -> str:
    return f"800.{n:06d}"


def _answers(slack: SlackMock, thread: str) -> list[Any]:
    return [c for c in slack.of("chat.postMessage") if c.body.get("thread_ts") == thread]


def _answered(slack: SlackMock) -> int:
    """Progress lines turned into their answer: each thread holds one message, so one per answered question."""
    return len({c.body.get("ts") for c in slack.of("chat.update") if "Diagnosing" not in json.dumps(c.body)})


def _active_by_worker(r: redis.Redis, prefix: str) -> Counter[str]:
    """Running jobs by SAQ worker id (its jobs' ``worker_id``)."""
    active: Counter[str] = Counter()
    for key in r.lrange(f"saq:{prefix}requests:active", 0, -1):
        raw = r.get(key)
        worker = json.loads(raw).get("worker_id") if raw else None
        if worker:  # set once the worker marked the job active
            active[str(worker)] += 1
    return active


def test_every_question_is_answered_once_through_a_worker_killed_mid_job(tmp_path: Path, prefix: str) -> None:
    slack = SlackMock().start()
    fleet = Fleet(slack, prefix)
    r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        fleet.start()
        urls = [url for _, url in fleet.acks]
        plan: list[tuple[str, str, int]] = []
        for n in range(QUESTIONS):
            body = event_body(
                mention(
                    "why did asr-conformer fail in project speech?", _thread(n), user=f"U0ASK{n:04d}", channel=BARE
                ),
                f"EvK{n:04d}",
            )
            plan += [(url, body, 0) for url in urls] + [(urls[n % 3], body, 1)]  # every ack process, and a retry
        with ThreadPoolExecutor(max_workers=12) as pool:
            statuses = list(pool.map(lambda p: deliver(*p), plan))
        assert all(s == 200 for s in statuses), Counter(statuses)
        wait_for(lambda: sum(_active_by_worker(r, prefix).values()) >= 2, 30, "jobs running on the workers")
        busiest = _active_by_worker(r, prefix).most_common(1)[0][0]
        killed = _kill_the_worker_running(fleet, busiest)
        wait_for(lambda: _answered(slack) == QUESTIONS, 120, "an answer to every question")
        time.sleep(3)  # a duplicate would arrive meanwhile
    finally:
        fleet.stop()
        slack.stop()
        r.close()
    counts = {n: len(_answers(slack, _thread(n))) for n in range(QUESTIONS)}
    assert set(counts.values()) == {1}, f"answers per question: {counts}"
    assert _answered(slack) == QUESTIONS, "every progress line became its answer"
    by = {c.headers.get("authorization", "") for c in slack.posted() if c.method != "webhook"}
    assert by <= {"Bearer xoxb-worker-0", "Bearer xoxb-worker-1"}, f"only workers answer: {by}"
    assert killed, "a worker was killed with jobs in progress"


def _kill_the_worker_running(fleet: Fleet, worker_id: str) -> bool:
    """SIGKILL the worker process whose SAQ worker id is ``worker_id`` ("host:pid:nonce")."""
    pid = int(worker_id.split(":")[1])
    (victim,) = [p for p in fleet.workers if p.pid == pid]
    victim.send_signal(signal.SIGKILL)
    victim.wait(10)
    return True
