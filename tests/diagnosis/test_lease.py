"""The one lease holder of claimed work (issue 25, :class:`diagnosis.lease.Lease`) on the bot's real store and a
real Redis: one holder at a time, renewed while held, a lost signal, fenced writes, and the store away. A watch's
state is written under its lease: a replica that stalled past it stops and cannot overwrite its successor."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.state import Store
from diagnosis.backends import Backends
from diagnosis.lease import Lease
from diagnosis.osmo.watch import WatchState
from diagnosis.watching import Poll, Polled
from handlers.watch import Watches, WatchRecord
from tests.slack_mock import REDIS_URL


@pytest.fixture
async def store(prefix: str) -> AsyncIterator[Store]:
    s = Store(REDIS_URL, prefix=prefix)
    yield s
    await s.close()


async def test_one_holder_at_a_time_and_a_stalled_one_loses_its_writes(store: Store) -> None:
    first = Lease(store, "slot", ttl=0.3)
    second = Lease(store, "slot", ttl=30)
    assert await first.acquire() and first.token > 0
    assert not await second.acquire(), "held by the first"
    assert await first.put(("state", "slot"), {"by": "first"}, 60)
    await asyncio.sleep(0.5)  # the first stalls past its lease (no renewal)
    assert await second.acquire() and second.token > first.token, "a fresh holder gets a new fencing token"
    assert not await first.put(("state", "slot"), {"by": "stale"}, 60)
    assert first.lost.is_set() and not first.held
    await first.release()  # nothing of its successor is given up
    assert await second.put(("state", "slot"), {"by": "second"}, 60)
    assert await store.get_json("state", "slot") == {"by": "second"}
    await second.release()
    assert await Lease(store, "slot", ttl=30).acquire(), "released: free for the next holder"


async def test_a_held_lease_is_renewed_every_third_of_its_time_and_given_up_at_the_end(store: Store) -> None:
    async with Lease(store, "watch:w", ttl=0.3) as lease:
        assert lease.held
        await asyncio.sleep(1.0)  # three times its time: kept only by the renewals
        assert not await Lease(store, "watch:w", ttl=30).acquire()
        assert lease.held and await lease.put(("state", "w"), {"ok": True}, 60)
    assert await Lease(store, "watch:w", ttl=30).acquire()


async def test_a_renewal_that_finds_another_holder_sets_lost(store: Store) -> None:
    async with Lease(store, "evt:1", ttl=0.3) as lease:
        await store.redis.delete(store.key("lease", "evt:1"))  # type: ignore[union-attr]
        thief = Lease(store, "evt:1", ttl=30)
        assert await thief.acquire()
        await asyncio.wait_for(lease.lost.wait(), 2)
        assert not lease.held
    assert not await Lease(store, "evt:1", ttl=30).acquire(), "the one that lost it does not release the thief's"


async def test_an_adopted_token_is_renewed_like_a_taken_one(store: Store) -> None:
    token = await store.lease("evt:2", "owner-a", 0.3)
    assert token
    lease = Lease(store, "evt:2", 0.3, owner="owner-a", token=token)
    lease.start()
    await asyncio.sleep(0.8)
    assert lease.held and await store.lease("evt:2", "owner-b", 30) == 0
    await lease.release()
    assert await store.lease("evt:2", "owner-b", 30)


async def test_with_the_store_away_a_shared_only_lease_holds_nothing_and_another_goes_on_from_memory() -> None:
    away = Store("redis://127.0.0.1:1/0", prefix="wdtest:away:")
    try:
        assert not await Lease(away, "digest:slot", 30, shared_only=True).acquire()
        local = Lease(away, "watch:w", 30)
        assert await local.acquire() and local.local and local.held
        assert not await local.put(("state", "w"), {}, 60) and not local.lost.is_set(), "away is not lost"
    finally:
        await away.close()


class Thread:
    """A Slack thread that keeps what the watch posts there."""

    def __init__(self) -> None:
        self.posted: list[str] = []

    async def post(self, message: Any, thread_ts: str | None = None) -> str:
        self.posted.append(message.text)
        return "1.1"


async def test_a_watch_whose_lease_moved_on_stops_and_cannot_overwrite_its_successors_state(store: Store) -> None:
    polled = asyncio.Event()
    thread = Thread()

    @asynccontextmanager
    async def watcher() -> AsyncIterator[Poll]:
        async def poll(_: str) -> Polled:
            polled.set()
            return Polled("RUNNING", "short")

        yield poll

    def spawn(coro: Any, name: str | None = None) -> asyncio.Task[Any]:
        return asyncio.create_task(coro, name=name)

    async def report(*_: Any) -> None:
        return None

    watches = Watches(
        None,  # type: ignore[arg-type]  # no access check is reached
        store,
        spawn,
        lambda channel: thread,  # type: ignore[arg-type,return-value]
        backends=Backends(),
        report=report,
        watcher_for=lambda system: watcher(),
        scale=0.1,  # a short workflow's 15 s: 1.5 s between polls
        min_interval=5.0,
    )
    record = WatchRecord(
        id="T:C:1.1:w", channel="C", workflow_id="w", thread_ts="1.1", state=WatchState(workflow_id="w")
    )
    record.state.started_at = datetime.now(UTC)
    await store.save_watch(record.id, record.model_dump(mode="json"))
    lease = Lease(store, f"watch:{record.id}", 1.0, owner=watches.owner)
    assert await lease.acquire()
    lease.start = lambda: None  # type: ignore[method-assign]  # this replica stalls: it never renews its lease
    task = spawn(watches._follow(record, lease))
    await asyncio.wait_for(polled.wait(), 5)  # the first poll, saved under the lease
    await asyncio.sleep(1.1)  # the lease expires before the next poll (at 1.5 s)
    successor = Lease(store, f"watch:{record.id}", 30)
    assert await successor.acquire()
    theirs = {**record.model_dump(mode="json"), "user": "successor"}
    assert await successor.put(("watch", record.id), theirs, 60)
    await asyncio.wait_for(task, 5)  # its next save is refused: it stops instead of overwriting
    assert (await store.load_watch(record.id))["user"] == "successor"
    assert record.id in await store.active_watches(), "carried on by its successor, not forgotten"
    assert thread.posted == ["Watching w: it is RUNNING."], "nothing posted from the state that was not kept"
