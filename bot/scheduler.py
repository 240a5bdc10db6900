"""Scheduled channel digests, posted exactly once however many replicas run (issue 12 §3).

``croniter`` only computes due slots (:func:`diagnosis.digests.due_slot`). Exactly-once is ours, in Redis
(:class:`bot.state.Store` leases):

1. Every replica ticks; for each schedule it computes the latest due slot and skips it when the state
   record says that slot (or a later one) is done.
2. To run a slot a replica takes the schedule's lease (``digest:<team>:<channel>:<name>``, with a fresh
   fencing token) and renews it while it works. Only the holder writes the state record, and only through
   :meth:`~bot.state.Store.fenced_put`, so a holder that stalled past its lease cannot overwrite a successor.
3. Before posting, the holder records a *posting* marker (the slot's idempotency key); a later claimer never
   resets it. A claimer that finds the marker of its own slot first looks the message up by its Slack
   ``metadata`` (the key) and adopts it instead of posting again (the replica that posted died before it
   recorded).
4. After posting: the state record gets the slot, the window's end and the message ts.

A slot whose build or post fails (the bot not in the channel: ``not_in_channel``) is not rebuilt on every tick
(issue 24): the state record keeps the failure (``failure``: the slot, the error, the attempts, ``retry_at``) and
no replica runs the schedule again before ``retry_at``, which backs off from ``retry_first`` seconds, doubling
to at most ``retry_max``; ``/diagnose digest status`` shows it.

Slots missed while no replica ran are not posted one by one: the latest due slot runs once and covers the
whole time since the previous digest (at most ``max_window``). Refresh (``chat.update``) is stateless.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.policy import DigestSchedule
from diagnosis import digests, metrics
from diagnosis.digests import DigestAsk
from handlers.digests import METADATA_TYPE, DigestDesk, DigestSurface

log = logging.getLogger(__name__)
STATE_TTL = 30 * 86400
#: Seconds before a failed slot is tried again the first time; each failure doubles it, up to :data:`RETRY_MAX`.
RETRY_FIRST = 60.0
RETRY_MAX = 3600.0


def due_slot(schedule: DigestSchedule, now: datetime) -> datetime:
    """The latest slot of ``schedule`` at or before ``now`` (UTC)."""
    return digests.due_slot(schedule.cron, schedule.tz, now)


def next_slot(schedule: DigestSchedule, now: datetime) -> datetime:
    return digests.next_slot(schedule.cron, schedule.tz, now)


def slot_key(team: str, schedule: DigestSchedule, slot: datetime) -> str:
    """The idempotency key of one slot of one schedule (also in the posted message's metadata)."""
    return f"{team}:{schedule.channel}:{schedule.name}:{slot:%Y-%m-%dT%H:%M:%SZ}"


class DigestScheduler:
    """Runs the policy's digest schedules. ``surface_for(channel)`` gives a :class:`DigestSurface`."""

    def __init__(
        self,
        desk: DigestDesk,
        store: Any,
        schedules: list[DigestSchedule],
        surface_for: Callable[[str], DigestSurface],
        *,
        team: str = "T",
        owner: str | None = None,
        tick: float = 30.0,
        lease_ttl: float = 120.0,
        clock: Callable[[], datetime] | None = None,
        retry_first: float = RETRY_FIRST,
        retry_max: float = RETRY_MAX,
    ) -> None:
        self.desk = desk
        self.store = store
        self.schedules = schedules
        self.surface_for = surface_for
        self.team = team
        self.owner = owner or f"{uuid.uuid4().hex[:12]}"
        self.tick = tick
        self.lease_ttl = lease_ttl
        self.clock = clock or (lambda: datetime.now(UTC))
        self.retry_first = retry_first
        self.retry_max = retry_max
        self.running: dict[str, asyncio.Task[None]] = {}
        self.runs = 0

    def _name(self, schedule: DigestSchedule) -> str:
        return f"digest:{self.team}:{schedule.channel}:{schedule.name}"

    def _state(self, schedule: DigestSchedule) -> tuple[str, ...]:
        return ("digeststate", self.team, schedule.channel, schedule.name)

    async def state(self, schedule: DigestSchedule) -> dict[str, Any]:
        raw = await self.store.get_json(*self._state(schedule))
        return raw if isinstance(raw, dict) else {}

    async def states_of(self, channel: str) -> dict[str, dict[str, Any]]:
        """The state records of ``channel``'s schedules, by schedule name (for ``/diagnose digest status``)."""
        return {s.name: await self.state(s) for s in self.schedules if s.channel == channel}

    async def run_forever(self) -> None:
        while True:
            try:
                await self.tick_once()
            except Exception:
                log.exception("digest scheduler tick failed")
            await asyncio.sleep(self.tick)

    async def tick_once(self) -> None:
        now = self.clock()
        for schedule in self.schedules:
            name = self._name(schedule)
            if name in self.running and not self.running[name].done():
                continue
            slot = due_slot(schedule, now)
            state = await self.state(schedule)
            if is_new(schedule, state):  # a new or changed schedule posts at its next slot (issue 27)
                self.running[name] = asyncio.create_task(self.start_schedule(schedule, slot), name=f"new-{name}")
                continue
            if str(state.get("last_slot") or "") >= f"{slot:%Y-%m-%dT%H:%M:%SZ}":
                continue
            failure = state.get("failure")
            if isinstance(failure, dict) and float(failure.get("retry_at") or 0) > now.timestamp():
                continue  # a failed slot backs off (issue 24)
            self.running[name] = asyncio.create_task(self.run_slot(schedule, slot), name=f"digest-{schedule.name}")

    async def stop(self) -> None:
        for task in self.running.values():
            task.cancel()
        for task in self.running.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for schedule in self.schedules:
            await self.store.release(self._name(schedule), self.owner)

    async def run_slot(self, schedule: DigestSchedule, slot: datetime) -> None:
        """Claim ``slot`` and post its digest once (see the module docstring)."""
        lease = self._name(schedule)
        token = await self.store.lease(lease, self.owner, self.lease_ttl)
        if not token:  # another replica holds it, or Redis is down (a late digest beats a duplicate one)
            return
        lost = asyncio.Event()

        async def renew() -> None:
            while True:
                await asyncio.sleep(self.lease_ttl / 3)
                if await self.store.lease(lease, self.owner, self.lease_ttl) != token:
                    lost.set()
                    return

        keeper = asyncio.create_task(renew())
        try:
            await self._run_slot(schedule, slot, lease, token, lost)
        except SlotFailed as failed:
            await self._failed(schedule, slot, lease, token, failed.cause)
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
            if not lost.is_set():
                await self.store.release(lease, self.owner)

    async def _run_slot(
        self, schedule: DigestSchedule, slot: datetime, lease: str, token: int, lost: asyncio.Event
    ) -> None:
        iso = f"{slot:%Y-%m-%dT%H:%M:%SZ}"
        state = await self.state(schedule)
        if str(state.get("last_slot") or "") >= iso:
            return  # done by another replica meanwhile
        key = slot_key(self.team, schedule, slot)
        surface = self.surface_for(schedule.channel)
        floor = slot - timedelta(seconds=schedule.max_window)
        last_end = _parse(state.get("last_end"))
        start = max(last_end, floor) if last_end is not None else floor
        ask = DigestAsk(
            cluster_id=schedule.cluster,
            projects=list(schedule.projects) if schedule.projects is not None else None,
            pools=list(schedule.pools) if schedule.pools is not None else None,
        )
        try:  # a failed look-up, build or post is recorded and backs off (run_slot); the record below is not
            ts: str | None = None
            posting = state.get("posting") if isinstance(state.get("posting"), dict) else None
            if posting is not None and posting.get("key") == key:
                # A previous holder may have posted and died before recording: adopt its message if it exists.
                ts = await surface.find_tagged(METADATA_TYPE, key, float(posting.get("at") or 0) - 60)
                if ts:
                    log.info("digest %s: adopted the message %s posted by a previous holder", key, ts)
            failed = None
            if ts is None:
                marked = {**state, "posting": {"key": key, "at": time.time()}}
                if not await self.store.fenced_put(lease, self.owner, token, self._state(schedule), marked, STATE_TTL):
                    return  # the lease moved on
                digest = await self.desk.build(ask, start=start, end=slot)
                failed = digest.failed
                if isinstance(state.get("failed"), int):
                    digest = digest.model_copy(update={"previous_failed": state["failed"]})
                digest = await self.desk.mark_seen(schedule.channel, digest)
                if lost.is_set():
                    return  # a successor holds the slot now: it will look for this message before posting
                if digest.failed >= schedule.min_failures:
                    ts = await self.desk.publish(surface, ask, digest, key=key)
                else:
                    ts = ""
        except Exception as exc:
            raise SlotFailed(exc) from exc
        done = {
            "last_slot": iso,
            "last_end": iso,
            "message_ts": ts,
            "key": key,
            "failed": failed,
            "posting": None,
            "schedule": fingerprint(schedule),
            "last_posted": {"ts": ts, "slot": iso} if ts else state.get("last_posted"),  # digest status
        }
        if await self.store.fenced_put(lease, self.owner, token, self._state(schedule), done, STATE_TTL):
            self.runs += 1
            metrics.DIGEST_RUNS.labels("adopted" if failed is None else "posted" if ts else "skipped").inc()
        else:
            metrics.DIGEST_RUNS.labels("lease_lost").inc()
            log.warning("digest %s: posted but the lease moved on before recording (the successor adopts it)", key)

    async def start_schedule(self, schedule: DigestSchedule, slot: datetime) -> None:
        """A new or changed schedule (:func:`is_new`) starts without a post: its record says ``slot`` (the latest due
        one) is done, so its first digest is at its next slot and covers the time since ``slot`` (since its previous
        digest when that is later), never a catch-up of ``max_window``. A schedule whose record is gone while Slack
        has its digests (Redis lost) is not new: :meth:`run_slot` recovers it from the channel."""
        lease = self._name(schedule)
        token = await self.store.lease(lease, self.owner, self.lease_ttl)
        if not token:
            return
        try:
            state = await self.state(schedule)
            if not is_new(schedule, state):
                return
            if not state:
                prefix = slot_key(str(self.team), schedule, slot)[: -len("YYYY-MM-DDTHH:MM:SSZ")]
                floor = (slot - timedelta(seconds=schedule.max_window)).timestamp()
                lookup = getattr(self.surface_for(schedule.channel), "newest_tagged", None)
                if lookup is not None and await lookup(METADATA_TYPE, prefix, floor) is not None:
                    # not new: its record is gone (Redis lost) and the next tick recovers it from the channel
                    kept = {"schedule": fingerprint(schedule)}
                    await self.store.fenced_put(lease, self.owner, token, self._state(schedule), kept, STATE_TTL)
                    return
            last_end = _parse(state.get("last_end"))
            start = max(last_end, slot) if last_end is not None else slot
            fresh = {
                **state,
                "last_slot": f"{slot:%Y-%m-%dT%H:%M:%SZ}",
                "last_end": f"{start:%Y-%m-%dT%H:%M:%SZ}",
                "schedule": fingerprint(schedule),
                "posting": None,
                "failure": None,
            }
            await self.store.fenced_put(lease, self.owner, token, self._state(schedule), fresh, STATE_TTL)
            log.info("digest %s of %s: new or changed schedule: first digest at its next slot", *_named(schedule))
        except Exception:
            log.exception("digest %s of %s: could not start the schedule", *_named(schedule))
        finally:
            await self.store.release(lease, self.owner)

    async def _failed(self, schedule: DigestSchedule, slot: datetime, lease: str, token: int, exc: Exception) -> None:
        """Record that ``slot`` failed (``exc``) and when it may be tried again (see the module docstring)."""
        state = await self.state(schedule)
        before = state.get("failure")
        before = before if isinstance(before, dict) else {}
        attempts = int(before.get("attempts") or 0) + 1
        wait = min(self.retry_max, self.retry_first * 2 ** (attempts - 1))
        now = self.clock().timestamp()
        why = failure_of(exc)
        failure = {"slot": f"{slot:%Y-%m-%dT%H:%M:%SZ}", "error": why, "attempts": attempts, "at": now}
        failure["retry_at"] = now + wait
        metrics.DIGEST_RUNS.labels("failed").inc()
        log.warning(
            "digest %s of %s failed (%s; attempt %d): tried again in %g s",
            schedule.name,
            schedule.channel,
            why,
            attempts,
            wait,
        )
        state = {**state, "failure": failure}
        await self.store.fenced_put(lease, self.owner, token, self._state(schedule), state, STATE_TTL)


class SlotFailed(Exception):
    """A slot's adoption look-up, build or post failed with ``cause``."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(str(cause))
        self.cause = cause


def failure_of(exc: BaseException) -> str:
    """A failed slot in a few words: the Slack error code (``not_in_channel``), else the exception's type."""
    response = getattr(exc, "response", None)
    error = response.get("error") if response is not None and hasattr(response, "get") else None
    return str(error)[:80] if error else type(exc).__name__


def _named(schedule: DigestSchedule) -> tuple[str, str]:
    return schedule.name, schedule.channel


def fingerprint(schedule: DigestSchedule) -> str:
    """What makes a schedule the same schedule: its cron, time zone and scope (a change starts it anew)."""
    return f"{schedule.cron}|{schedule.tz}|{schedule.cluster}|{schedule.projects}|{schedule.pools}"


def is_new(schedule: DigestSchedule, state: dict[str, Any]) -> bool:
    """Whether ``schedule`` has no record yet, or its record is of another cron, time zone or scope. A record
    written before fingerprints were kept is the same schedule."""
    if not state:
        return True
    return state.get("schedule") not in (None, fingerprint(schedule))


def _parse(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.strptime(str(value), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
