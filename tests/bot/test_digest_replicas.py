"""Scheduled digests with three real ``serve --http`` processes on one Redis (issue 12 §4, marked slow).

A schedule fires every 2 seconds (croniter's sixth field is seconds). Each slot must be posted exactly once
(one root message per idempotency key), also when the replica that posted is killed before it recorded (the
mock Slack kills it while its chat.postMessage is in flight, after recording the message), when a replica
stalls past its lease inside a chat.postMessage, and after a full outage (one catch-up digest, no backlog).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.paths import TESTS
from tests.slack_mock import REDIS_URL, SECRET, Call, SlackMock

pytestmark = pytest.mark.slow

CLI = str(Path(sys.executable).parent / "workload-doctor")
FIXTURE = TESTS / "fixtures" / "cases" / "digest" / "digest-runai-24h.json"
CHAN = "C0DIGEST1"
SLOT_SECONDS = 2
SLOT_RE = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)$")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Replicas:
    def __init__(self, tmp: Path, slack: SlackMock, prefix: str) -> None:
        snapshot = json.loads(FIXTURE.read_text())
        snapshot["runai"]["workloads"] = snapshot["runai"]["workloads"][:6]  # a small world: fast digests
        self.snapshot = tmp / "world.json"
        self.snapshot.write_text(json.dumps(snapshot))
        self.policy = tmp / "policy.yaml"
        self.policy.write_text(
            json.dumps(
                {
                    "channels": {
                        CHAN: {"digests": [{"name": "fast", "cron": f"* * * * * */{SLOT_SECONDS}", "max_window": "1d"}]}
                    }
                }
            )
        )
        self.slack = slack
        self.prefix = prefix
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.n = 0

    def start(self) -> str:
        self.n += 1
        name = f"r{self.n}"
        env = {
            **os.environ,
            "SLACK_BOT_TOKEN": f"xoxb-replica-{name}",
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": self.slack.api_url,
            "REDIS_URL": REDIS_URL,
            "WD_REDIS_PREFIX": self.prefix,
            "WD_POLICY_FILE": str(self.policy),
            "WD_DIGEST_TICK": "0.3",
            "WD_DIGEST_LEASE": "2",
        }
        self.procs[name] = subprocess.Popen(
            [
                CLI,
                "serve",
                "--http",
                "--host",
                "127.0.0.1",
                "--port",
                str(free_port()),
                "--snapshot",
                str(self.snapshot),
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return name

    def kill(self, name: str) -> None:
        proc = self.procs.get(name)
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.kill(name)


def digest_roots(slack: SlackMock) -> list[Call]:
    return [
        c
        for c in slack.of("chat.postMessage")
        if not c.body.get("thread_ts") and "digest" in json.dumps(c.body.get("metadata") or "")
    ]


def keys(slack: SlackMock) -> list[str]:
    out = []
    for c in digest_roots(slack):
        meta = c.body.get("metadata")
        if isinstance(meta, str):
            meta = json.loads(meta)
        out.append(str(((meta or {}).get("event_payload") or {}).get("key")))
    return out


def wait_for(predicate: Any, limit: float, what: str) -> None:
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_three_replicas_post_every_slot_exactly_once_through_kills_stalls_and_an_outage(
    tmp_path: Path, prefix: str
) -> None:
    slack = SlackMock().start()
    replicas = Replicas(tmp_path, slack, prefix)
    plan: dict[str, Any] = {"kill_next": False, "stall_next": False, "killed": None, "stalled": False}
    lock = threading.Lock()

    def hook(call: Call) -> None:
        if call.method != "chat.postMessage" or call.body.get("thread_ts") or not call.body.get("metadata"):
            return
        token = call.headers.get("authorization", "").removeprefix("Bearer xoxb-replica-")
        with lock:
            action = "kill" if plan["kill_next"] else "stall" if plan["stall_next"] else None
            plan["kill_next"] = plan["stall_next"] = False
            if action == "kill":
                plan["killed"] = token
            elif action == "stall":
                plan["stalled"] = True
        if action == "kill":
            replicas.kill(token)  # the message is recorded; its poster dies before it can record the slot
        elif action == "stall":
            time.sleep(5)  # past the 2 s lease: another replica may take the slot meanwhile

    slack.on_call = hook
    try:
        for _ in range(3):
            replicas.start()
        wait_for(lambda: len(keys(slack)) >= 6, 60, "six slots")
        with lock:
            plan["kill_next"] = True
        wait_for(lambda: plan["killed"] is not None and len(keys(slack)) >= 10, 60, "a kill and more slots")
        replicas.start()  # three replicas again
        with lock:
            plan["stall_next"] = True
        wait_for(lambda: plan["stalled"] and len(keys(slack)) >= 16, 60, "a stall and more slots")
        # a full outage: nothing runs for several slots, then all come back
        replicas.stop_all()
        before = len(keys(slack))
        down = datetime.now(UTC)
        time.sleep(4 * SLOT_SECONDS)
        up = datetime.now(UTC)
        for _ in range(3):
            replicas.start()
        wait_for(lambda: len(keys(slack)) >= max(before + 4, 21), 60, "slots after the outage")
    finally:
        replicas.stop_all()
        slack.stop()
    seen = keys(slack)
    dupes = [k for k, n in Counter(seen).items() if n > 1]
    assert not dupes, f"slots posted twice: {dupes}"
    assert len(seen) >= 21
    # the slots missed during the outage were not posted one by one: the next slot after it covered them once
    slots = [
        datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        for k in seen
        for m in [SLOT_RE.search(k)]
        if m
    ]
    missed = [t for t in slots if down + timedelta(seconds=SLOT_SECONDS) < t < up - timedelta(seconds=SLOT_SECONDS)]
    assert missed == []
