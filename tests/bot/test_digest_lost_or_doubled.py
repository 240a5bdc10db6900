"""Scheduled digests, nothing posted twice and nothing reported twice (issue 24), with three real
``serve --http`` processes on one Redis and one mock Slack (a slot every 2 seconds, as in
:mod:`tests.bot.test_digest_replicas`):

- a replica whose start-up ``auth.test`` fails (and keeps failing) posts nothing, and no slot is posted twice;
- the bot's Redis state lost between two slots (just after a digest reported a failure): the slot already posted
  is adopted from Slack (its metadata), the next one is posted once, and its window starts where the previous
  digest ended (the failure is not reported again)."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.bot.test_digest_replicas import CHAN, Replicas, digest_roots, keys, wait_for
from tests.slack_mock import REDIS_URL, TEAM, Call, SlackMock

pytestmark = pytest.mark.slow


def _by(call: Call) -> str:
    return call.headers.get("authorization", "").removeprefix("Bearer xoxb-replica-")


def test_a_replica_whose_auth_test_failed_posts_nothing(tmp_path: Path, prefix: str) -> None:
    slack = SlackMock().start()
    replicas = Replicas(tmp_path, slack, prefix)

    def fail_r1(call: Call) -> None:
        if call.method == "auth.test" and _by(call) == "r1":
            call.status = 500  # every attempt: replica r1 never learns its team

    slack.on_call = fail_r1
    try:
        for _ in range(3):
            replicas.start()
        wait_for(lambda: len(keys(slack)) >= 5, 60, "five slots")
        wait_for(lambda: len([c for c in slack.calls if c.method == "auth.test" and _by(c) == "r1"]) >= 2, 30, "r1")
    finally:
        replicas.stop_all()
        slack.stop()
    seen = keys(slack)
    assert not [k for k, n in Counter(seen).items() if n > 1], f"slots posted twice: {seen}"
    assert all(k.startswith(f"{TEAM}:{CHAN}:") for k in seen), seen
    assert not [c for c in slack.posted() if _by(c) == "r1"], "the replica that does not know its team posted"


def _recorded(r: redis.Redis, prefix: str, slack: SlackMock) -> bool:
    """The newest posted slot is recorded in the state record (its poster is done with it)."""
    state = next((json.loads(r.get(k) or "{}") for k in r.scan_iter(match=f"{prefix}digeststate:*")), {})
    seen = keys(slack)
    return bool(seen) and str(state.get("key")) == seen[-1]


def _forget_everything(r: redis.Redis, prefix: str) -> int:
    """The bot's Redis state lost (only this test's keys: other tests share the server)."""
    found = list(r.scan_iter(match=f"{prefix}*"))
    return int(r.delete(*found)) if found else 0


def test_redis_lost_between_two_slots_posts_the_next_slot_once_with_no_report_again(
    tmp_path: Path, prefix: str
) -> None:
    slack = SlackMock().start()
    replicas = Replicas(tmp_path, slack, prefix)
    _happening_now(replicas)
    r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        for _ in range(3):
            replicas.start()
        wait_for(lambda: sum(map(_failed, digest_roots(slack))) >= 1, 60, "a digest reporting llama-sft-12")
        wait_for(lambda: _recorded(r, prefix, slack), 60, "its slot recorded")
        posted = len(keys(slack))
        assert _forget_everything(r, prefix)
        wait_for(lambda: len(keys(slack)) >= posted + 2, 60, "two more slots after the loss")
    finally:
        replicas.stop_all()
        slack.stop()
        r.close()
    seen = keys(slack)
    assert not [k for k, n in Counter(seen).items() if n > 1], f"slots posted twice: {seen}"
    reported = [_failed(c) for c in digest_roots(slack)]
    # llama-sft-12, the one failure that happened while the digests ran, once; the older ones (hours before the
    # first slot: its window is the slot before it, not max_window) never, neither before the loss nor after it
    assert sum(reported) == 1, f"failures reported again: {reported}"
    _rows_once(slack)


def _failed(call: Call) -> int:
    match = re.match(r"Failures digest: (\d+) ", str(call.body.get("text")))
    assert match, call.body.get("text")
    return int(match.group(1))


_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


def _happening_now(replicas: Replicas, newest: str = "2026-11-28T10:14:00Z", after: float = 8.0) -> None:
    """Every time of the world moved so that its newest failure (llama-sft-12) happens ``after`` seconds from now."""
    at = (datetime.now(UTC) + timedelta(seconds=after)).replace(microsecond=0)
    at += timedelta(seconds=1 - at.second % 2)  # an odd second: inside one slot's window, not on a boundary
    delta = at - datetime.fromisoformat(newest)

    def shift(match: re.Match[str]) -> str:
        return f"{datetime.fromisoformat(match.group(0)) + delta:%Y-%m-%dT%H:%M:%SZ}"

    replicas.snapshot.write_text(_ISO.sub(shift, replicas.snapshot.read_text()))


def _rows_once(slack: SlackMock) -> None:
    """No digest's thread got its rows twice (an adopted digest keeps the rows it has)."""
    threads: dict[str, list[Any]] = {}
    with slack.lock:
        for message in slack.history.get(CHAN, []):
            if message.get("thread_ts"):
                threads.setdefault(str(message["thread_ts"]), []).append(message.get("posted_text"))
    for thread, texts in threads.items():
        assert len(texts) == len(set(texts)), f"rows posted twice in {thread}"
