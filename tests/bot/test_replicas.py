"""Several replicas, proven (issue 14 §3, marked slow): three real ``serve --http --snapshot`` processes on one
Redis (distinct ports, one key prefix) and one mock Slack.

- the same signed event delivered to all three at once, and again as Slack's retries (``X-Slack-Retry-Num``), is
  answered exactly once: 100 deliveries of 10 events;
- a follow-up question asked on one replica is answered by another;
- a watch held by a replica that is killed is carried on by another within its lease;
- the per-user rate limit is shared: a user's requests spread over the three replicas are counted once.
"""

from __future__ import annotations

import json
import os
import random
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

from handlers.middleware import RATE_LIMITED
from tests.bot.test_digest_replicas import free_port, wait_for
from tests.paths import TESTS
from tests.slack_mock import (
    REDIS_URL,
    SECRET,
    SlackMock,
    deliver,
    event_body,
    healthy,
    mention,
    thread_message,
)

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "workload-doctor")
FIXTURES = TESTS / "fixtures" / "cases"
BARE = "C0BARE001"  # a channel without defaults: a question without a cluster gets a follow-up
WORKFLOW = "warehouse-sdg-render-33"


class Replica:
    def __init__(self, proc: subprocess.Popen[bytes], port: int) -> None:
        self.proc = proc
        self.url = f"http://127.0.0.1:{port}"


class Fleet:
    def __init__(self, tmp: Path, slack: SlackMock, prefix: str, rate_limit: int = 1000) -> None:
        world = json.loads((FIXTURES / "runai" / "missing-cluster.json").read_text())
        world["osmo"] = json.loads((FIXTURES / "osmo" / "osmo-running-links-null.json").read_text())["osmo"]
        self.snapshot = tmp / "world.json"
        self.snapshot.write_text(json.dumps(world))
        self.slack, self.prefix, self.rate_limit = slack, prefix, rate_limit
        self.replicas: list[Replica] = []

    def start(self, n: int = 3) -> None:
        for i in range(n):
            port = free_port()
            env = {
                **os.environ,
                "SLACK_BOT_TOKEN": f"xoxb-replica-r{i}",
                "SLACK_SIGNING_SECRET": SECRET,
                "SLACK_API_URL": self.slack.api_url,
                "REDIS_URL": REDIS_URL,
                "WD_REDIS_PREFIX": self.prefix,
                "WD_RATE_LIMIT": str(self.rate_limit),
                "WD_WATCH_SCALE": "0.02",  # cadence 0.2–0.3 s, orphan sweep 0.6 s
                "WD_WATCH_LEASE": "3",
                "WD_LOG_FORMAT": "json",
            }
            proc = subprocess.Popen(
                [CLI, "serve", "--http", "--host", "127.0.0.1", "--port", str(port), "--snapshot", str(self.snapshot)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self.replicas.append(Replica(proc, port))
        for replica in self.replicas:
            wait_for(lambda r=replica: healthy(r.url), 60, f"replica {replica.url}")

    def stop(self) -> None:
        for replica in self.replicas:
            if replica.proc.poll() is None:
                replica.proc.send_signal(signal.SIGKILL)
                replica.proc.wait(10)


def replies_in(slack: SlackMock, thread: str) -> list[Any]:
    return [c for c in slack.of("chat.postMessage") if c.body.get("thread_ts") == thread]


def test_three_replicas_on_one_redis(tmp_path: Path, prefix: str) -> None:
    slack = SlackMock().start()
    fleet = Fleet(tmp_path, slack, prefix, rate_limit=1000)
    try:
        fleet.start(3)
        urls = [r.url for r in fleet.replicas]
        _exactly_once_over_100_deliveries(slack, urls)
        _follow_up_answered_on_another_replica(slack, urls)
        _watch_carried_on_after_a_kill(slack, fleet, prefix)
    finally:
        fleet.stop()
        slack.stop()


def _exactly_once_over_100_deliveries(slack: SlackMock, urls: list[str]) -> None:
    rng = random.Random(14)
    plan: list[tuple[str, str, int]] = []
    threads = []
    for n in range(10):
        ts = f"500.{n:06d}"
        threads.append(ts)
        body = event_body(mention("why did asr-conformer fail in project speech?", ts, channel=BARE), f"Ev{n:04d}")
        plan += [(url, body, 0) for url in urls]  # delivered to all three at once
        plan += [(rng.choice(urls), body, 1 + k % 3) for k in range(7)]  # and Slack's retries
    assert len(plan) == 100
    with ThreadPoolExecutor(max_workers=12) as pool:
        statuses = list(pool.map(lambda p: deliver(*p), plan))
    assert all(s == 200 for s in statuses), Counter(statuses)
    wait_for(lambda: all(len(replies_in(slack, t)) >= 1 for t in threads), 60, "an answer to every event")
    time.sleep(2)  # a duplicate would arrive meanwhile
    counts = {t: len(replies_in(slack, t)) for t in threads}
    assert set(counts.values()) == {1}, counts
    # each answer was a single diagnosis: the progress message was updated exactly once into the card
    updates = Counter(c.body.get("ts") for c in slack.of("chat.update"))
    answered = {replies_in(slack, t)[0].body.get("ts") or "" for t in threads}
    assert all(updates.get(ts, 0) <= 1 for ts in answered)


def _follow_up_answered_on_another_replica(slack: SlackMock, urls: list[str]) -> None:
    root = "600.000100"
    deliver(urls[0], event_body(mention("why did asr-conformer fail in project speech?", root, channel=BARE), "EvF1"))
    wait_for(
        lambda: "need more information" in json.dumps([c.body for c in slack.of("chat.update")]).lower(), 30, "asks"
    )
    r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        wait_for(lambda: bool(list(r.scan_iter(match="*conv:*:600.000100"))), 10, "the pending question in Redis")
        before = len(slack.calls)
        deliver(urls[2], event_body(thread_message("dgx-prod", "600.000300", root, channel=BARE), "EvF2"))

        def answers() -> list[Any]:
            return [
                c
                for c in slack.calls[before:]
                if c.method in ("chat.postMessage", "chat.update")
                and "asr-conformer" in json.dumps(c.body)
                and "need more information" not in json.dumps(c.body).lower()
                and "Diagnosing" not in json.dumps(c.body)
            ]

        wait_for(lambda: bool(answers()), 30, "the answer from replica 3")
        assert not list(r.scan_iter(match="*conv:*:600.000100")), "the follow-up was consumed"
    finally:
        r.close()
    answered_by = {c.headers.get("authorization", "") for c in answers()}
    assert answered_by == {"Bearer xoxb-replica-r2"}, answered_by
    assert all(c.body.get("thread_ts") in (None, root) for c in answers())


def _lease_owner(r: redis.Redis, prefix: str) -> str | None:
    keys = list(r.scan_iter(match=prefix + "lease:watch:*"))
    return str(r.get(keys[0])).split("|")[0] if keys and r.get(keys[0]) else None


def _polls(r: redis.Redis, prefix: str) -> int:
    found = [json.loads(r.get(k) or "{}") for k in r.scan_iter(match=prefix + "watch:*")]
    return max((w.get("state", {}).get("polls", 0) for w in found), default=0)


def _watch_carried_on_after_a_kill(slack: SlackMock, fleet: Fleet, prefix: str) -> None:
    r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        root = "700.000100"
        deliver(fleet.replicas[1].url, event_body(mention(f"watch {WORKFLOW}", root), "EvW1"))
        wait_for(lambda: _polls(r, prefix) >= 3 and _lease_owner(r, prefix) is not None, 30, "polling")
        owner = _lease_owner(r, prefix)
        assert owner is not None
        pid = int(owner.split(":")[1])  # "host:pid:nonce"
        (holder,) = [x for x in fleet.replicas if x.proc.pid == pid]
        holder.proc.send_signal(signal.SIGKILL)
        holder.proc.wait(10)
        killed_at, polls_then = time.monotonic(), _polls(r, prefix)
        # the lease (one poll interval + WD_WATCH_LEASE=3 s) expires; a live replica's sweep takes the watch
        wait_for(
            lambda: (_lease_owner(r, prefix) or owner) != owner and _polls(r, prefix) > polls_then,
            30,
            "another replica carrying the watch on",
        )
        took = time.monotonic() - killed_at
        assert took < 3 + 1 + 0.6 + 3, f"carried on after {took:.1f} s: not within its lease (+ sweep)"
        new_pid = int(str(_lease_owner(r, prefix)).split(":")[1])
        assert new_pid in {x.proc.pid for x in fleet.replicas if x.proc.poll() is None}
        hello = [c for c in replies_in(slack, root) if "it is RUNNING" in json.dumps(c.body)]
        assert len(hello) == 1, "nothing re-announced by the replica that carried it on"
    finally:
        r.close()


def test_the_rate_limit_is_shared(tmp_path: Path, prefix: str) -> None:
    slack = SlackMock().start()
    fleet = Fleet(tmp_path, slack, prefix, rate_limit=3)
    try:
        fleet.start(3)
        urls = [r.url for r in fleet.replicas]
        for n in range(9):  # three to each replica
            event = mention("why did asr-conformer fail in project speech?", f"800.{n:06d}", channel=BARE)
            deliver(urls[n % 3], event_body(event, f"EvR{n:04d}"))
        wait_for(lambda: len(slack.of("chat.postEphemeral")) >= 6, 60, "six refusals")
        wait_for(lambda: len([c for c in slack.of("chat.postMessage") if c.body.get("thread_ts")]) >= 3, 60, "three")
        time.sleep(1)
    finally:
        fleet.stop()
        slack.stop()
    refusals = [c for c in slack.of("chat.postEphemeral") if str(c.body.get("text")).startswith(RATE_LIMITED)]
    answered = {c.body.get("thread_ts") for c in slack.of("chat.postMessage") if c.body.get("thread_ts")}
    assert len(refusals) == 6 and len(answered) == 3, (len(refusals), answered)
