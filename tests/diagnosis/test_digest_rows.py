"""The digest row cache and the streamed fleet scan (issue 27 §3).

A cached row equals what a fresh diagnosis gives: a second scan of the same window with the first one's cache
makes no per-workload (or per-workflow) read and gives the same digest; a new ``phaseUpdatedAt`` is a new failure
(a miss); rows expire and are bounded. The Run:ai scan streams: it never holds more listed workloads than the
pages in flight.
"""

from __future__ import annotations

import asyncio
import copy
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from diagnosis.answer import Backends, answer_digest
from diagnosis.config import OsmoConfig, RunaiConfig
from diagnosis.digest_rows import MemoryRowCache, osmo_row_key, recurring_in, runai_row_key
from diagnosis.digests import DigestAsk, RowCache
from diagnosis.runai import client as runai_client
from diagnosis.runai.client import RunaiClient
from diagnosis.runai.digest_source import scan_runai
from diagnosis.units import parse_time
from handlers import digests as desk
from sandbox.server import Sandbox
from tests.diagnosis.test_digest import DIGEST, MIXED, needs_shared

T0 = datetime(2026, 11, 28, 12, tzinfo=UTC)
#: what a scan reads whatever it has cached: the lists (and the login); every other path is one failure's read
LISTS = {"/api/v1/workloads", "/api/v1/clusters", "/api/v1/org-unit/projects", "/api/workflow"}


def _backends(sandbox: Sandbox, snapshot: dict[str, Any]) -> Backends:
    now = parse_time(snapshot["now"])
    assert now is not None
    return Backends(
        runai=RunaiConfig(sandbox.url, "sandbox", "sandbox", console_url=sandbox.url) if "runai" in snapshot else None,
        osmo=OsmoConfig(sandbox.url, "sandbox") if "osmo" in snapshot else None,
        now=lambda: now,
    )


def _scan(sandbox: Sandbox, snapshot: dict[str, Any], cache: RowCache | None) -> tuple[Any, list[str]]:
    """One digest of ``snapshot``'s ask through ``sandbox``, and the paths it read."""
    seen = len(sandbox.requests)
    ask = DigestAsk.model_validate(snapshot["ask"])
    digest = asyncio.run(answer_digest(ask, _backends(sandbox, snapshot), cache=cache))
    return digest, [r.path for r in list(sandbox.requests)[seen:] if not r.path.endswith("token")]


# -- the cache itself ------------------------------------------------------------------------------


def test_memory_cache_hit_miss_ttl_and_bound() -> None:
    now = [0.0]
    cache = MemoryRowCache(max_rows=2, ttl=10, clock=lambda: now[0])

    async def go() -> None:
        assert await cache.get("a") is None  # miss
        await cache.put("a", {"item": None})
        assert await cache.get("a") == {"item": None}  # hit
        await cache.put("b", {"item": 1})
        assert await cache.get("a") is not None  # "a" used last: "b" is the oldest now
        await cache.put("c", {"item": 2})  # over the bound: the least recently used goes
        assert len(cache) == 2 and await cache.get("b") is None and await cache.get("c") == {"item": 2}
        now[0] = 10.0  # the TTL has passed
        assert await cache.get("a") is None and await cache.get("c") is None and len(cache) == 0

    asyncio.run(go())
    assert (cache.hits, cache.misses) == (3, 4)


def test_the_key_is_what_makes_it_the_same_failure() -> None:
    at = datetime(2026, 11, 28, 9, 30, tzinfo=UTC)
    key = runai_row_key("w-1", at, "24h")
    assert key == runai_row_key("w-1", at, "24h")
    assert key != runai_row_key("w-1", at + timedelta(seconds=1), "24h")  # failed again: another failure
    assert key != runai_row_key("w-2", at, "24h")
    assert key != runai_row_key("w-1", at, "7d")  # another lookback may decide recurring otherwise
    assert osmo_row_key("wf-1", at) != osmo_row_key("wf-1", at + timedelta(minutes=1))


def test_recurring_is_worked_out_again_for_the_window() -> None:
    twice = [(T0 - timedelta(hours=30)).isoformat(), (T0 - timedelta(hours=2)).isoformat()]
    assert recurring_in(twice, T0 - timedelta(hours=48), T0)
    assert not recurring_in(twice, T0 - timedelta(hours=24), T0)  # the older one has left the window


def test_the_bots_rows_have_a_ttl_and_a_daily_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    class Store:
        def __init__(self) -> None:
            self.puts: list[tuple[tuple[str, ...], int]] = []
            self.count = 0

        async def get_json(self, *parts: str) -> Any:
            return None

        async def put_json(self, parts: tuple[str, ...], value: Any, ttl: int) -> bool:
            self.puts.append((parts, ttl))
            return True

        async def allow(self, team: str, user: str, limit: int, window: int = 60) -> bool:
            assert window == 86400
            self.count += 1
            return self.count <= limit

    monkeypatch.setattr(desk, "ROW_PUTS_PER_DAY", 2)
    store = Store()
    cache = desk._StoreCache(store)

    async def go() -> None:
        for n in range(3):
            await cache.put(f"k{n}", {"item": None})

    asyncio.run(go())
    assert store.puts == [(("digestrow", "k0"), 3 * 86400), (("digestrow", "k1"), 3 * 86400)]


# -- a scan with the cache -------------------------------------------------------------------------


@needs_shared
@pytest.mark.parametrize("case", [DIGEST, MIXED], ids=["runai", "runai+osmo"])
def test_a_second_scan_of_the_window_reads_no_row_again_and_says_the_same(case: Any) -> None:
    snapshot = json.loads(case.read_text())
    cache = MemoryRowCache()
    with Sandbox(snapshot) as sandbox:
        fresh, _ = _scan(sandbox, snapshot, None)
        first, first_paths = _scan(sandbox, snapshot, cache)
        second, second_paths = _scan(sandbox, snapshot, cache)
    assert first.model_dump() == fresh.model_dump()  # filling the cache changes nothing
    assert second.model_dump() == first.model_dump()  # every row from the cache: the same digest
    assert len(cache) >= first.failed > 0
    assert set(first_paths) - LISTS, "the first scan diagnosed its failures"
    assert set(second_paths) <= LISTS, sorted(set(second_paths) - LISTS)
    assert cache.hits >= first.failed


@needs_shared
def test_a_changed_phase_updated_at_is_a_miss() -> None:
    snapshot = json.loads(DIGEST.read_text())
    cache = MemoryRowCache()
    with Sandbox(snapshot) as sandbox:
        first, _ = _scan(sandbox, snapshot, cache)
    row = first.groups[0].items[0]
    moved = copy.deepcopy(snapshot)
    for entry in moved["runai"]["workloads"]:
        if entry["workload"]["id"] == row.id:
            at = parse_time(entry["workload"]["phaseUpdatedAt"])
            assert at is not None
            entry["workload"]["phaseUpdatedAt"] = (at - timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with Sandbox(moved) as sandbox:
        _, paths = _scan(sandbox, moved, cache)
    reread = {p for p in paths if p not in LISTS}
    assert reread and all(row.id in p for p in reread if "/workloads/" in p), sorted(reread)


# -- streaming -------------------------------------------------------------------------------------


@needs_shared
def test_the_scan_streams_page_by_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """With pages of 2 workloads, no more listed workloads are held at once than the queries' pages in flight,
    and the digest is the one read unpaged."""
    snapshot = json.loads(DIGEST.read_text())
    end = parse_time(snapshot["now"])
    assert end is not None
    cluster = snapshot["ask"]["cluster_id"]

    def scan() -> Any:
        with Sandbox(snapshot) as sandbox:
            config = RunaiConfig(sandbox.url, "sandbox", "sandbox", console_url=sandbox.url)
            return asyncio.run(
                scan_runai(
                    config, cluster_id=cluster, projects=None, start=end - timedelta(hours=24), end=end, since="24h"
                )
            )

    whole = scan()
    monkeypatch.setattr(runai_client, "PAGE_LIMIT", 2)
    paged = scan()
    key = [(i.id, i.category, i.verdict, i.recurring) for i in whole.items]
    assert sorted(key) == sorted((i.id, i.category, i.verdict, i.recurring) for i in paged.items)
    assert len(whole.items) > 8
    assert 0 < paged.peak_held <= 4 * 2 < whole.peak_held  # 4 queries (Failed/Stopped, live/deleted), 2 a page


@needs_shared
def test_a_streamed_list_hands_on_each_page_and_keeps_none(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = json.loads(DIGEST.read_text())
    monkeypatch.setattr(runai_client, "PAGE_LIMIT", 3)
    pages: list[int] = []

    async def each(page: list[Any]) -> None:
        pages.append(len(page))

    async def go(url: str) -> Any:
        async with RunaiClient(RunaiConfig(url, "sandbox", "sandbox", console_url=url)) as client:
            return await client.list_workloads(["phase==Failed"], each=each)

    with Sandbox(snapshot) as sandbox:
        kept = asyncio.run(go(sandbox.url))
    assert len(kept) == 0 and not kept.stopped
    assert len(pages) > 1 and max(pages) <= 3 and sum(pages) >= 4


def test_a_cached_recurring_row_is_recurring_only_while_its_occurrences_are_in_the_window() -> None:
    from diagnosis.digests import DigestItem
    from diagnosis.runai.digest_source import RunaiScan, _Rows

    row = DigestItem(
        system="runai", name="w", id="w", at=T0 - timedelta(hours=2), category="OOM_KILLED", verdict="v", recurring=True
    )
    twice = [(T0 - timedelta(hours=30)).isoformat(), (T0 - timedelta(hours=2)).isoformat()]
    cache = MemoryRowCache()

    async def go() -> list[tuple[bool, Any]]:
        await cache.put("kept", {"item": row.model_dump(mode="json"), "occurrences": twice})
        await cache.put("older", {"item": row.model_dump(mode="json")})  # kept before occurrences were
        found = []
        for start, key in ((T0 - timedelta(hours=48), "kept"), (T0 - timedelta(hours=24), "kept"), (T0, "older")):
            rows = _Rows(
                asyncio.Queue(),
                RunaiConfig("http://x", "a", "b", console_url="http://x"),
                RunaiScan(),
                (start, T0),
                "24h",
                cache,
            )
            hit, item = await rows.cached(key)
            found.append((hit, item.recurring if item else None))
        return found

    assert asyncio.run(go()) == [(True, True), (True, False), (False, None)]
