"""The digest row cache (issue 27 §3): a digest scan keeps each diagnosed failure's row, keyed by what makes it the
same failure, so a later scan of an overlapping window re-diagnoses only the failures it has not seen.

- Run:ai: the workload ``id`` and its ``phaseUpdatedAt`` (a new failure of the same workload moves
  ``phaseUpdatedAt``: a miss), with the lookback the row was diagnosed with (:func:`runai_row_key`).
- OSMO: the workflow ID and its ``end_time`` (:func:`osmo_row_key`; the workflow list carries no uuid, the row
  keeps it; a workflow ID is unique on its OSMO deployment).

A row is cached only when it was built from every read it needed (a row built around a failed call is made again
next time), so a cached row is the row a fresh diagnosis of the same evidence gives. Its ``recurring`` flag is
worked out again for each window from the occurrences kept with it (:func:`recurring_in`): an occurrence that has
left the window no longer counts.

Where rows live: :class:`MemoryRowCache` for one CLI or bench process (bounded, with a TTL); the bot keeps them in
Redis behind the same :class:`~diagnosis.digests.RowCache` protocol (``handlers.digests``). Nothing here knows
either.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

#: rows kept by one process at most (about 0.5 kB each: a 100,000-workload fleet's 5,000 failures fit 10 times)
MAX_ROWS = 50_000
#: how long a row is kept (seconds): a daily digest's window overlaps the previous one by a day at most
ROW_TTL = 3 * 86400


def runai_row_key(workload_id: str, phase_updated_at: datetime, since: str) -> str:
    """The cache key of a Run:ai row: the same workload failing at the same instant, diagnosed with the same
    lookback (which decides ``recurring``)."""
    return f"runai:{workload_id}:{phase_updated_at:%Y-%m-%dT%H:%M:%SZ}:tier1:{since}"


def osmo_row_key(workflow_id: str, end_time: datetime) -> str:
    """The cache key of an OSMO row: the same workflow, ended at the same instant."""
    return f"osmo:{workflow_id}:{end_time:%Y-%m-%dT%H:%M:%SZ}"


def recurring_in(occurrences: Sequence[str], start: datetime, end: datetime) -> bool:
    """Whether two or more of a row's kept occurrences (ISO instants) fall inside ``[start, end]``."""
    return sum(1 for at in occurrences if start <= datetime.fromisoformat(at) <= end) >= 2


class MemoryRowCache:
    """Digest rows in this process: at most ``max_rows`` (the least recently used go first), each for ``ttl``
    seconds. ``clock`` is :func:`time.monotonic` (tests pass their own). ``hits`` and ``misses`` count lookups."""

    def __init__(
        self, max_rows: int = MAX_ROWS, ttl: float = ROW_TTL, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_rows = max_rows
        self.ttl = ttl
        self.clock = clock
        self.rows: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    async def get(self, key: str) -> Any:
        kept = self.rows.get(key)
        if kept is None or kept[0] <= self.clock():
            if kept is not None:
                del self.rows[key]
            self.misses += 1
            return None
        self.rows.move_to_end(key)
        self.hits += 1
        return kept[1]

    async def put(self, key: str, value: Any) -> None:
        self.rows[key] = (self.clock() + self.ttl, value)
        self.rows.move_to_end(key)
        while len(self.rows) > self.max_rows:
            self.rows.popitem(last=False)

    def __len__(self) -> int:
        return len(self.rows)
