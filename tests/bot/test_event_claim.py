"""No lost answers (issue 15 §2), proven with real processes: three ``serve --http --snapshot`` replicas on one
Redis and one mock Slack. The replica answering an event is killed (SIGKILL) mid-answer: its "Diagnosing…"
message is posted, its answer is on its way to Slack. Slack's redelivery of the event, once the dead replica's
claim has expired, is answered by another replica, which updates the stale "Diagnosing…" message in place; a
further redelivery is a duplicate (the event is marked done)."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.bot.test_digest_replicas import wait_for
from tests.bot.test_replicas import BARE, Fleet
from tests.slack_mock import REDIS_URL, Call, SlackMock, deliver, event_body, mention

pytestmark = pytest.mark.slow

ROOT = "910.000100"
QUESTION = "why did asr-conformer fail in project speech?"


def _by(call: Call, replica: int) -> bool:
    return call.headers.get("authorization") == f"Bearer xoxb-replica-r{replica}"


def test_a_redelivery_after_the_replica_died_mid_answer_is_answered(
    tmp_path: Path, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WD_EVENT_LEASE", "1.5")  # renewed every 0.5 s while a replica answers
    slack = SlackMock().start()
    fleet = Fleet(tmp_path, slack, prefix)
    # replica 0's answer (the update of its "Diagnosing…" message) is in flight: the replica dies now
    killed = _kill_replica_0_on(slack, fleet, "chat.update")
    body = event_body(mention(QUESTION, ROOT, channel=BARE), "EvKILLED01")
    r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    lease = f"{prefix}lease:evt:app_mention:{BARE}:{ROOT}"
    try:
        _asked_until_killed_and_expired(fleet, 3, body, killed, r, lease)
        (progress,) = [c for c in slack.of("chat.postMessage") if _by(c, 0)]
        assert "Diagnosing" in progress.body["text"]
        stale_ts = _ts_of(slack, progress)

        # Slack's redelivery: answered by replica 1, unless a replica took the kept question over first (issue 24)
        assert deliver(fleet.replicas[1].url, body, retry=1) == 200
        wait_for(
            lambda: any(not _by(c, 0) and "Diagnosing" not in c.body["text"] for c in slack.of("chat.update")),
            30,
            "the answer of a live replica",
        )
        updates = [c for c in slack.of("chat.update") if not _by(c, 0)]
        (answerer,) = {c.headers.get("authorization") for c in updates}
        # the stale message becomes the live replica's "Diagnosing…" message, then its answer
        assert [u.body["ts"] for u in updates] == [stale_ts, stale_ts]
        assert "Diagnosing" in updates[0].body["text"] and "Need more information" in updates[1].body["text"]
        assert not [c for c in slack.of("chat.postMessage") if not _by(c, 0)], "no second 'Diagnosing…' message"

        assert deliver(fleet.replicas[2].url, body, retry=2) == 200  # answered: a duplicate now
        time.sleep(1.0)  # a duplicate answer would arrive meanwhile
        assert {c.headers.get("authorization") for c in slack.posted() if not _by(c, 0)} == {answerer}
        assert len([c for c in slack.of("chat.update") if c.body["ts"] == stale_ts]) == 2
    finally:
        fleet.stop()
        slack.stop()
        r.close()


def test_a_replica_killed_while_posting_its_progress_line_leaves_no_second_one(
    tmp_path: Path, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replica 0 dies while its "Diagnosing…" message is being posted: Slack has it, the replica never recorded
    it. The live replica finds it by its tag (the event, in the message's metadata) and answers in it."""
    monkeypatch.setenv("WD_EVENT_LEASE", "1.5")
    slack = SlackMock().start()
    fleet = Fleet(tmp_path, slack, prefix)
    killed = _kill_replica_0_on(slack, fleet, "chat.postMessage")  # Slack keeps the message; the replica is gone
    root = "910.000200"
    body = event_body(mention(QUESTION, root, channel=BARE), "EvKILLED02")
    r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    lease = f"{prefix}lease:evt:app_mention:{BARE}:{root}"
    try:
        _asked_until_killed_and_expired(fleet, 2, body, killed, r, lease)
        assert killed[0].body["metadata"]["event_payload"]["key"]  # tagged with its event
        stale_ts = _ts_of(slack, killed[0])
        assert deliver(fleet.replicas[1].url, body, retry=1) == 200
        wait_for(
            lambda: any(not _by(c, 0) and "Diagnosing" not in c.body["text"] for c in slack.of("chat.update")),
            30,
            "the answer of the live replica",
        )
        assert not [c for c in slack.of("chat.postMessage") if not _by(c, 0)], "no second 'Diagnosing…' message"
        assert {c.body["ts"] for c in slack.of("chat.update") if not _by(c, 0)} == {stale_ts}
    finally:
        fleet.stop()
        slack.stop()
        r.close()


def _asked_until_killed_and_expired(
    fleet: Fleet, replicas: int, body: str, killed: list[Call], r: redis.Redis, lease: str
) -> None:
    """Start ``replicas``, ask replica 0, wait until it was killed mid-answer and its claim's lease expired."""
    fleet.start(replicas)
    assert deliver(fleet.replicas[0].url, body) == 200
    wait_for(lambda: bool(killed), 30, "replica 0 killed mid-answer")
    wait_for(lambda: not r.exists(lease), 30, "the dead replica's claim to expire")


def _kill_replica_0_on(slack: SlackMock, fleet: Fleet, method: str) -> list[Call]:
    """SIGKILL replica 0 at its first ``method`` call, which Slack still handles (its answer never reaches the
    replica); the list gets that call."""
    killed: list[Call] = []

    def kill(call: Call) -> None:
        if call.method == method and _by(call, 0) and not killed:
            killed.append(call)
            call.status = 0  # never delivered: the replica is gone before Slack could answer it
            fleet.replicas[0].proc.send_signal(signal.SIGKILL)
            fleet.replicas[0].proc.wait(10)

    slack.on_call = kill
    return killed


def _ts_of(slack: SlackMock, post: Call) -> str:
    """The ts the mock gave ``post`` (its history records each posted message in order)."""
    with slack.lock:
        history: list[dict[str, Any]] = slack.history.get(str(post.body["channel"]), [])
        for item in history:
            if item.get("posted_text", item.get("text")) == post.body.get("text"):
                return str(item["ts"])
    raise AssertionError("the progress message is not in the mock's history")


def test_a_replica_killed_mid_diagnosis_leaves_no_diagnosing_message_behind(
    tmp_path: Path, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kill lands in the middle of the diagnosis itself: every Run:ai read is slowed to 4 s, so replica 0
    has posted (and recorded) its "Diagnosing…" message and is still waiting on Run:ai when it dies. The
    redelivery after its claim expired is answered by replica 1, in the stale message."""
    monkeypatch.setenv("WD_EVENT_LEASE", "1.5")
    slack = SlackMock().start()
    fleet = Fleet(tmp_path, slack, prefix)
    world = json.loads(fleet.snapshot.read_text())
    world["faults"] = [{"path": "/api/v1/*", "delay_ms": 4000, "times": 1000}]
    fleet.snapshot.write_text(json.dumps(world))
    body = event_body(mention(QUESTION, "911.000100", channel=BARE), "EvKILLED02")
    r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    lease = f"{prefix}lease:evt:app_mention:{BARE}:911.000100"
    try:
        fleet.start(2)
        assert deliver(fleet.replicas[0].url, body) == 200
        wait_for(lambda: any(_by(c, 0) for c in slack.of("chat.postMessage")), 30, "replica 0's Diagnosing…")
        (progress,) = [c for c in slack.of("chat.postMessage") if _by(c, 0)]
        stale_ts = _ts_of(slack, progress)
        time.sleep(1.0)  # its progress is recorded; the diagnosis is still waiting on the slowed Run:ai reads
        assert not [c for c in slack.of("chat.update") if _by(c, 0)], "the kill must land before any answer"
        fleet.replicas[0].proc.send_signal(signal.SIGKILL)
        fleet.replicas[0].proc.wait(10)
        wait_for(lambda: not r.exists(lease), 30, "the dead replica's claim to expire")

        assert deliver(fleet.replicas[1].url, body, retry=1) == 200  # or taken over first (issue 24)
        wait_for(
            lambda: any(not _by(c, 0) and "Diagnosing" not in c.body["text"] for c in slack.of("chat.update")),
            60,
            "a live replica's answer",
        )
        answers = [c for c in slack.of("chat.update") if not _by(c, 0) and "Diagnosing" not in c.body["text"]]
        assert [a.body["ts"] for a in answers] == [stale_ts], "the stale message carries the answer"
        assert not [c for c in slack.of("chat.postMessage") if not _by(c, 0)], "no second 'Diagnosing…' message"
    finally:
        fleet.stop()
        slack.stop()
        r.close()
