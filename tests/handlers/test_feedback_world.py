"""Answer first, bookkeeping after (issue 26 §2, issue 28): an answer's world is built after the answer.

- in a bot, the card is posted while its world is still being built; the record is kept at once (a vote finds it)
  and the world is added to it afterwards;
- a world waits while a diagnosis is in flight in the process, and is built once none is, or after
  ``MAX_DEFER`` seconds at the latest; one at a time; past the pending-bytes bound, before the answer;
- ``keep_world`` keeps the record's expiry and never writes a record that is gone;
- a detached task is tracked (awaited by ``idle``) but is no part of the request's work.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

import diagnosis.capture
import handlers.feedback_world as feedback_world
from bot.feedback_store import FeedbackStore
from bot.state import Store
from bot.tasks import TaskTracker
from handlers import shedding
from handlers.card import RIGHT_ACTION
from handlers.feedback_world import WORLD_PENDING, WorldLater
from tests.handlers.test_slack_e2e import ALICE, CHAN, finals, running
from tests.slack_mock import REDIS_URL, SlackMock, buttons_of

RECORD: dict[str, Any] = {"ref": "00112233aabbccdd", "system": "runai", "outcome": "diagnosed", "name": "train-7"}
WORLD: dict[str, Any] = {"format": "snapshot/1", "id": "captured-train-7", "runai": {"workloads": []}}


async def test_the_card_is_posted_before_its_world_is_built_and_the_world_is_added_after(
    slack: SlackMock, prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    building, release = threading.Event(), threading.Event()
    world_of = diagnosis.capture.world_of

    def slow_world_of(*args: Any) -> dict[str, Any]:
        building.set()
        release.wait(30)
        return world_of(*args)

    monkeypatch.setattr(diagnosis.capture, "world_of", slow_world_of)
    async with running(slack, prefix, tmp_path, "text-only-question") as h:
        await h.command("train-gpt2 project=nlp", user=ALICE, channel=CHAN)
        for _ in range(200):
            if finals(slack) and building.is_set():
                break
            await asyncio.sleep(0.05)
        card = finals(slack)[-1]  # the answer, while its world is still being built
        ref = next(b for b in buttons_of(card["blocks"]) if b["action_id"] == RIGHT_ACTION)["value"]
        desk = FeedbackStore(h.bot.store)
        record = await desk.answer(ref, world=True)
        assert record is not None and record["world"] is None and record["world_omitted"] == WORLD_PENDING
        release.set()
        await h.settle()  # the world's task is tracked: settled with the rest
        record = await desk.answer(ref, world=True)
        assert record is not None and record["world"]["format"] == "snapshot/1" and "world_omitted" not in record


async def _until(predicate: Any, seconds: float = 5.0) -> None:
    for _ in range(int(seconds / 0.01)):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never happened")


async def test_a_world_waits_for_the_diagnoses_in_flight_then_is_built_one_at_a_time() -> None:
    tracker = TaskTracker()
    busy = {"train-8"}
    later = WorldLater(tracker.spawn, lambda: bool(busy))
    built: list[str] = []
    running_now = 0

    def build(name: str) -> Any:
        async def run() -> None:
            nonlocal running_now
            running_now += 1
            assert running_now == 1  # one at a time
            await asyncio.sleep(0.02)
            built.append(name)
            running_now -= 1

        return run

    assert later.reserve(100) and later.reserve(200)
    later.later(100, build("a"))
    later.later(200, build("b"))
    await asyncio.sleep(0.2)
    assert built == [] and later.pending_bytes == 300  # a diagnosis is in flight: nothing built yet
    busy.clear()
    later.quiet()
    await tracker.idle(5)
    assert sorted(built) == ["a", "b"] and later.pending_bytes == 0


async def test_a_world_is_built_after_max_defer_even_with_diagnoses_in_flight(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(feedback_world, "MAX_DEFER", 0.2)
    tracker = TaskTracker()
    later = WorldLater(tracker.spawn, lambda: True)  # never quiet
    built: list[str] = []

    async def build() -> None:
        built.append("a")

    assert later.reserve(10)
    later.later(10, build)
    await tracker.idle(5)
    assert built == ["a"]


def test_past_the_pending_bound_a_world_is_built_before_its_answer() -> None:
    later = WorldLater(lambda coro: coro.close(), lambda: True)
    assert later.reserve(feedback_world.MAX_PENDING_BYTES - 10)  # held from the check on: no overshoot
    assert later.reserve(10) and not later.reserve(1)
    later.release(10)
    assert later.pending_bytes == feedback_world.MAX_PENDING_BYTES - 10


async def test_a_world_cancelled_before_it_began_releases_its_bytes() -> None:
    tracker = TaskTracker()
    later = WorldLater(tracker.spawn, lambda: True)
    assert later.reserve(100)

    async def build() -> None:
        raise AssertionError("never built")

    later.later(100, build)
    await tracker.drain(0)  # shutdown: cancelled before its first step
    assert later.pending_bytes == 0


async def test_the_drain_waits_for_the_worlds_of_diagnoses_that_end_during_it() -> None:
    tracker = TaskTracker()
    later = WorldLater(tracker.spawn, lambda: False)
    built: list[str] = []

    async def build() -> None:
        built.append("world")

    async def diagnosis() -> None:
        await asyncio.sleep(0.2)
        assert later.reserve(10)
        later.later(10, build)  # spawned while the drain waits

    tracker.spawn(diagnosis())
    assert await tracker.drain(5) == 0
    assert built == ["world"] and later.pending_bytes == 0


async def test_keep_world_keeps_the_expiry_and_never_writes_a_record_that_is_gone(prefix: str) -> None:
    store = Store(REDIS_URL, prefix=prefix)
    desk = FeedbackStore(store, max_world_bytes=10_000)
    raw = aioredis.from_url(REDIS_URL)
    try:
        assert await desk.keep_answer(RECORD | {"world_omitted": WORLD_PENDING}, None)
        key = f"{prefix}fb:answer:{RECORD['ref']}"
        await raw.expire(key, 123_456)  # a vote lengthened it meanwhile
        assert await desk.keep_world(RECORD["ref"], WORLD)
        kept = await desk.answer(RECORD["ref"], world=True)
        assert kept is not None and kept["world"] == WORLD and "world_omitted" not in kept
        assert 123_000 < await raw.ttl(key) <= 123_456
        await raw.delete(key)  # bounded out, purged or expired before its world was built
        assert not await desk.keep_world(RECORD["ref"], WORLD)
        assert await raw.exists(key) == 0
    finally:
        await raw.aclose()
        await store.close()


async def test_keep_world_in_process_memory_and_a_world_that_could_not_be_built() -> None:
    desk = FeedbackStore(Store(None), max_world_bytes=10)
    assert not await desk.keep_world("nothing-kept", WORLD)
    assert await desk.keep_answer(RECORD | {"world_omitted": WORLD_PENDING}, None)
    assert await desk.keep_world(RECORD["ref"], WORLD)  # over max_world_bytes: said so
    kept = await desk.answer(RECORD["ref"], world=True)
    assert kept is not None and kept["world"] is None and "over WD_FEEDBACK_MAX_WORLD_BYTES" in kept["world_omitted"]
    assert await desk.keep_world(RECORD["ref"], None)
    kept = await desk.answer(RECORD["ref"], world=True)
    assert kept is not None and kept["world_omitted"] == "the world could not be built"


async def test_a_detached_task_is_tracked_but_no_part_of_the_requests_work() -> None:
    tracker = TaskTracker()
    work = shedding.Work()
    token = shedding.CURRENT.set(work)
    release = asyncio.Event()
    seen: dict[str, Any] = {}

    async def bookkeeping() -> None:
        seen["work"], seen["claim"] = shedding.current(), shedding.current_claim()
        await release.wait()

    try:
        task = tracker.spawn(bookkeeping(), "feedback-world", detached=True)
    finally:
        shedding.CURRENT.reset(token)
    await asyncio.sleep(0.05)
    assert seen == {"work": None, "claim": None} and work._tasks == 0  # the work does not wait for it
    with pytest.raises(TimeoutError):
        await tracker.idle(0.1)  # but the tracker does
    release.set()
    await tracker.idle(5)
    assert task.done()
