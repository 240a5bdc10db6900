"""OSMO failures of a digest window, each classified by the same core as a single workflow question.

FORMAT.md "Digests", "What is a failure" (OSMO): ``status`` starts with ``FAILED``, ``end_time`` inside
the window, ``pool`` scanned. OSMO's list filters only on submit time, so the list is read newest first
with the FAILED* statuses and filtered here on ``end_time``; paging stops when the entries were submitted
more than :data:`MAX_RUNTIME` before the window (nothing older can have ended inside it). A read that fails
is a gap named as the Run:ai scan names one (:func:`~diagnosis.digests.read_gap`: its ``why`` and its call).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from diagnosis.config import OsmoConfig
from diagnosis.digest_rows import osmo_row_key
from diagnosis.digests import DigestItem, RowCache, in_window, read_gap
from diagnosis.fetched import Fetched, describe_error, fetch
from diagnosis.http import ReadOnlyViolation
from diagnosis.osmo.client import OsmoCalls, OsmoClient
from diagnosis.osmo.models import ListEntry
from diagnosis.question import Question
from diagnosis.report import Category, Gap

FAILED_STATUSES = (
    "FAILED",
    "FAILED_SUBMISSION",
    "FAILED_SERVER_ERROR",
    "FAILED_EXEC_TIMEOUT",
    "FAILED_QUEUE_TIMEOUT",
    "FAILED_CANCELED",
    "FAILED_BACKEND_ERROR",
    "FAILED_IMAGE_PULL",
    "FAILED_EVICTED",
    "FAILED_START_ERROR",
    "FAILED_START_TIMEOUT",
    "FAILED_PREEMPTED",
)
PAGE = 1000
MAX_PAGES = 50
MAX_RUNTIME = timedelta(days=30)
CONCURRENCY = 16
LIST_CALL = OsmoCalls.workflow_list()  # cited by the gaps of the failed-workflow listing


@dataclass
class OsmoScan:
    items: list[DigestItem] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)


def _utc(at: datetime | None) -> datetime | None:
    """OSMO times are naive UTC (FORMAT.md)."""
    if at is None:
        return None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


async def _failed_entries(
    client: OsmoClient, pools: Sequence[str] | None, start: datetime, end: datetime, scan: OsmoScan
) -> list[ListEntry]:
    out: list[ListEntry] = []
    # Each workflow once, and a service that does not advance stops the paging (issue 15 §1).
    pages = client.workflow_pages(statuses=FAILED_STATUSES, pools=pools or (), limit=PAGE, max_pages=MAX_PAGES)
    try:
        async for listed in pages:
            oldest: datetime | None = None
            for entry in listed.workflows:
                if not entry.status.startswith("FAILED"):
                    continue
                if pools is not None and entry.pool not in pools:
                    continue
                if in_window(_utc(entry.end_time), start, end):
                    out.append(entry)
                submitted = _utc(entry.submit_time)
                if submitted is not None and (oldest is None or submitted < oldest):
                    oldest = submitted
            if oldest is not None and oldest < start - MAX_RUNTIME:
                break
    except Exception as exc:  # every failed fetch is a named gap (OsmoApiError, httpx errors, bad bodies)
        if isinstance(exc, ReadOnlyViolation):
            raise
        scan.gaps.append(read_gap("OSMO failed workflows", Fetched.failure(LIST_CALL, exc)))
    why = pages.gap_why()
    if why:
        scan.gaps.append(read_gap("OSMO failed workflows", Fetched(LIST_CALL, why=why)))
    return out


async def scan_osmo(
    config: OsmoConfig,
    *,
    pools: Sequence[str] | None,
    start: datetime,
    end: datetime,
    now: datetime,
    cache: RowCache | None = None,
) -> OsmoScan:
    """List and diagnose the OSMO failures inside ``[start, end]``; every failure to read is a gap. A row ``cache``
    has (:func:`~diagnosis.digest_rows.osmo_row_key`: workflow ID and end time) is not read again."""
    from diagnosis.osmo.procedure import failed_report

    scan = OsmoScan()
    if pools is not None and not pools:
        return scan  # no pool (a project-scoped channel that names none: issue 23): nothing to read
    async with OsmoClient(config) as client:
        entries = await _failed_entries(client, pools, start, end, scan)
        limit = asyncio.Semaphore(CONCURRENCY)

        async def one(entry: ListEntry) -> DigestItem:
            end_time = _utc(entry.end_time)
            assert end_time is not None
            key = osmo_row_key(entry.name, end_time)
            hit = await cache.get(key) if cache is not None else None
            if isinstance(hit, dict) and hit.get("item"):
                return DigestItem.model_validate(hit["item"])
            item, whole = await diagnose(entry, end_time)
            if cache is not None and whole:  # a row built around a failed read is not kept
                await cache.put(key, {"item": item.model_dump(mode="json")})
            return item

        async def diagnose(entry: ListEntry, end_time: datetime) -> tuple[DigestItem, bool]:
            category, verdict, uuid = Category.UNKNOWN.value, f"{entry.name} ended {entry.status}.", entry.name
            whole = False
            async with limit:
                got = await fetch(client.get_workflow(entry.name))
                if got.value is None:  # counted under what the remaining evidence supports
                    scan.gaps.append(read_gap(f"workflow {entry.name}", got))
                else:
                    wf = got.value
                    uuid = getattr(wf, "uuid", None) or entry.name
                    try:
                        report = await failed_report(client, wf, Question(workflow_id=entry.name), now)
                        if report.category is not None:
                            category, verdict = report.category.value, report.headline
                        whole = not report.gaps  # every read the diagnosis needed was made
                    except Exception as exc:  # refused credentials: counted under what the evidence supports
                        if isinstance(exc, ReadOnlyViolation):
                            raise
                        scan.gaps.append(Gap(what=f"workflow {entry.name}", why=describe_error(exc)))
            item = DigestItem(
                system="osmo",
                name=entry.name,
                id=str(uuid),
                pool=entry.pool,
                at=end_time,
                category=category,
                verdict=verdict,
                user=entry.user,
            )
            return item, whole

        scan.items = list(await asyncio.gather(*(one(e) for e in entries)))
    return scan
