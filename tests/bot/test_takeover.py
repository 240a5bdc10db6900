"""A question acked is a question answered (issue 24), proven with three real ``serve --http --snapshot`` replicas
on one Redis and one mock Slack: the replica answering a mention, or a slash command, is killed (SIGKILL) after
the ack, while its answer is on its way to Slack. Slack delivers nothing again (it got its ack; a slash command is
never redelivered): another replica finds the question its dead holder kept in Redis, once the holder's claim
has expired, and answers it once, in the dead holder's "Diagnosing…" message."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import httpx
import pytest
import redis

from tests.bot.test_digest_replicas import wait_for
from tests.bot.test_replicas import BARE, Fleet
from tests.slack_mock import REDIS_URL, Call, SlackMock, command_body, deliver, event_body, mention, sign

pytestmark = pytest.mark.slow

QUESTION = "why did asr-conformer fail in project speech?"


def _by(call: Call, replica: int) -> bool:
    return call.headers.get("authorization") == f"Bearer xoxb-replica-r{replica}"


def _answers(slack: SlackMock) -> list[Call]:
    """Every answer (not a "Diagnosing…" message) posted or updated in Slack, or sent to a response_url."""
    return [
        c
        for c in slack.posted()
        if c.method in ("chat.postMessage", "chat.update", "webhook") and "Diagnosing" not in json.dumps(c.body)
    ]


def _killer(slack: SlackMock, fleet: Fleet, killed: list[Call]) -> None:
    def kill_the_answering_replica(call: Call) -> None:
        # replica 0 acked and posted its "Diagnosing…"; its answer (the update of that message) is in flight
        if call.method == "chat.update" and _by(call, 0) and not killed:
            killed.append(call)
            call.status = 0  # never delivered: the replica is gone before Slack could answer it
            fleet.replicas[0].proc.send_signal(signal.SIGKILL)
            fleet.replicas[0].proc.wait(10)

    slack.on_call = kill_the_answering_replica


def _taken_over(slack: SlackMock, r: redis.Redis, prefix: str, killed: list[Call]) -> None:
    """Answered once, by a live replica, in the dead holder's message; nothing kept in Redis afterwards."""
    wait_for(lambda: any(not _by(c, 0) for c in _answers(slack)), 30, "another replica's answer")
    time.sleep(2.0)  # a second answer (another sweep, another replica) would arrive meanwhile
    answers = [c for c in _answers(slack) if c.status == 200 and c is not killed[0]]
    assert len(answers) == 1, [(a.method, a.headers.get("authorization")) for a in answers]
    (answer,) = answers
    assert answer.method == "chat.update" and answer.body["ts"] == killed[0].body["ts"], "in the stale message"
    assert "Need more information" in json.dumps(answer.body)
    progress = [c for c in slack.of("chat.postMessage") if "Diagnosing" in json.dumps(c.body)]
    assert len(progress) == 1, "no second 'Diagnosing…' message"
    assert not r.zcard(f"{prefix}questions"), "the answered question is not kept"


def test_a_mention_acked_by_a_replica_that_died_is_answered_by_another(
    tmp_path: Path, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WD_EVENT_LEASE", "1.5")  # renewed every 0.5 s; orphans swept every 0.5 s
    slack = SlackMock().start()
    fleet = Fleet(tmp_path, slack, prefix)
    killed: list[Call] = []
    _killer(slack, fleet, killed)
    r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        fleet.start(3)
        assert (
            deliver(fleet.replicas[0].url, event_body(mention(QUESTION, "920.000100", channel=BARE), "EvTAKE1")) == 200
        )
        wait_for(lambda: bool(killed), 30, "replica 0 answering")
        _taken_over(slack, r, prefix, killed)
    finally:
        fleet.stop()
        slack.stop()
        r.close()


def test_a_slash_command_acked_by_a_replica_that_died_is_answered_by_another(
    tmp_path: Path, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WD_EVENT_LEASE", "1.5")
    slack = SlackMock().start()
    fleet = Fleet(tmp_path, slack, prefix)
    killed: list[Call] = []
    _killer(slack, fleet, killed)
    r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    body = command_body(QUESTION, channel=BARE, response_url=slack.response_url("take"))
    try:
        fleet.start(3)
        headers = {**sign(body), "Content-Type": "application/x-www-form-urlencoded"}
        acked = httpx.post(fleet.replicas[0].url + "/slack/events", content=body, headers=headers, timeout=10)
        assert acked.status_code == 200
        wait_for(lambda: bool(killed), 30, "replica 0 answering")
        _taken_over(slack, r, prefix, killed)
    finally:
        fleet.stop()
        slack.stop()
        r.close()
