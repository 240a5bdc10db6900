"""Scheduled channel digests, posted exactly once however many replicas run (issue 12 §3).

``croniter`` only computes due slots (:func:`diagnosis.digests.due_slot`). Exactly-once is ours, in Redis
(:class:`bot.state.Store` leases):

1. Every replica ticks; for each schedule it computes the latest due slot and skips it when the state
   record says that slot (or a later one) is done.
2. To run a slot a replica takes the schedule's lease (``digest:<team>:<channel>:<name>``, with a fresh
   fencing token) with the one lease holder of claimed work (:class:`diagnosis.lease.Lease`), which renews it
   while it works. Only the holder writes the state record (:func:`handlers.digests.schedule_state_key`), and
   only through :meth:`~diagnosis.lease.Lease.put`, so a holder that stalled past its lease cannot overwrite a
   successor.
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

Nothing lost, nothing twice (issue 24):

* Slot keys name the workspace (``team``), which a replica learns from ``auth.test``; until it knows it, the replica
  runs no slot (it asks again on every tick), so a failed call never makes a key of its own.
* When the state record is gone (Redis lost), Slack says what was posted: the newest message of the channel
  tagged with this schedule's key (``conversations.history``) is adopted when it is this slot's, and otherwise its
  slot is where the catch-up starts; with no digest found either, a catch-up starts at the schedule's previous
  slot (the missed slots, never ``max_window`` of failures already reported).
* An adopted message gets the thread rows it lacks (the poster may have died between the message and its rows):
  the digest of the message's own window (its Refresh button's value) is built again and the rows the thread
  does not have yet are posted.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from bot.policy import DigestSchedule
from diagnosis import digests, metrics
from diagnosis.cancelling import checkpoint
from diagnosis.digests import DigestAsk
from diagnosis.lease import Lease
from handlers.digest_blocks import REFRESH_ACTION
from handlers.digests import METADATA_TYPE, DigestDesk, DigestSurface, schedule_state_key

log = logging.getLogger(__name__)
STATE_TTL = 30 * 86400
#: Seconds before a failed slot is tried again the first time; each failure doubles it, up to :data:`RETRY_MAX`.
RETRY_FIRST = 60.0
RETRY_MAX = 3600.0
#: Seconds a shutdown waits for the cancelled slots to end.
STOP_SECONDS = 10.0


def due_slot(schedule: DigestSchedule, now: datetime) -> datetime:
    """The latest slot of ``schedule`` at or before ``now`` (UTC)."""
    return digests.due_slot(schedule.cron, schedule.tz, now)


def next_slot(schedule: DigestSchedule, now: datetime) -> datetime:
    return digests.next_slot(schedule.cron, schedule.tz, now)


def slot_key(team: str, schedule: DigestSchedule, slot: datetime) -> str:
    """The idempotency key of one slot of one schedule (also in the posted message's metadata)."""
    return f"{team}:{schedule.channel}:{schedule.name}:{slot:%Y-%m-%dT%H:%M:%SZ}"


def previous_slot(schedule: DigestSchedule, slot: datetime) -> datetime:
    """The slot of ``schedule`` before ``slot``."""
    return digests.due_slot(schedule.cron, schedule.tz, slot - timedelta(microseconds=2))


class SlotSurface(DigestSurface, Protocol):
    """What a scheduled slot needs of Slack beyond a digest's posts (:class:`handlers.slack_surface.SlackSurface`)."""

    async def newest_tagged(self, event_type: str, prefix: str, oldest: float) -> dict[str, Any] | None: ...

    async def replies_of_mine(self, ts: str) -> int: ...


class DigestScheduler:
    """Runs the policy's digest schedules. ``surface_for(channel)`` gives a :class:`DigestSurface`."""

    def __init__(
        self,
        desk: DigestDesk,
        store: Any,
        schedules: list[DigestSchedule],
        surface_for: Callable[[str], SlotSurface],
        *,
        team: str | None = "T",
        whoami: Callable[[], Awaitable[str]] | None = None,
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
        self.whoami = whoami
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
        return schedule_state_key(str(self.team), schedule.channel, schedule.name)

    def _lease(self, schedule: DigestSchedule) -> Lease:
        # a slot is run only under the shared lease: with the store away, a late digest beats a duplicate one
        return Lease(self.store, self._name(schedule), self.lease_ttl, owner=self.owner, shared_only=True)

    async def state(self, schedule: DigestSchedule) -> dict[str, Any]:
        raw = await self.store.get_json(*self._state(schedule))
        return raw if isinstance(raw, dict) else {}

    async def run_forever(self) -> None:
        while True:
            checkpoint()
            try:
                await self.tick_once()
            except Exception:
                log.exception("digest scheduler tick failed")
            await asyncio.sleep(self.tick)

    async def _know_team(self) -> bool:
        """Whether this replica knows its workspace (asked of Slack until it does): without it, it runs no slot."""
        if self.team is None and self.whoami is not None:
            try:
                self.team = await self.whoami()
            except Exception as exc:
                log.warning("auth.test failed (%s): no scheduled digest from this replica until it knows its team", exc)
        return self.team is not None

    async def tick_once(self) -> None:
        now = self.clock()
        if not await self._know_team():
            return
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
        """Cancel the slots in progress (each gives its lease up as it ends), waiting :data:`STOP_SECONDS` at most."""
        tasks = [task for task in self.running.values() if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=STOP_SECONDS)
            if pending:
                log.warning("%d digest slot(s) did not stop within %.0f s", len(pending), STOP_SECONDS)

    async def run_slot(self, schedule: DigestSchedule, slot: datetime) -> None:
        """Claim ``slot`` and post its digest once (see the module docstring)."""
        async with self._lease(schedule) as lease:
            if not lease.held:  # another replica holds it, or Redis is down (a late digest beats a duplicate one)
                return
            try:
                await self._run_slot(schedule, slot, lease)
            except SlotFailed as failed:
                await self._failed(schedule, slot, lease, failed.cause)

    async def _run_slot(self, schedule: DigestSchedule, slot: datetime, lease: Lease) -> None:
        iso = f"{slot:%Y-%m-%dT%H:%M:%SZ}"
        state = await self.state(schedule)
        if str(state.get("last_slot") or "") >= iso:
            return  # done by another replica meanwhile
        key = slot_key(str(self.team), schedule, slot)
        surface = self.surface_for(schedule.channel)
        floor = slot - timedelta(seconds=schedule.max_window)
        ask = DigestAsk(
            cluster_id=schedule.cluster,
            projects=list(schedule.projects) if schedule.projects is not None else None,
            pools=list(schedule.pools) if schedule.pools is not None else None,
        )
        try:  # a failed look-up, build or post is recorded and backs off (run_slot); the record below is not
            adopted, state = await self._adoptable(schedule, surface, key, state, floor)
            last_end = _parse(state.get("last_end"))
            start = max(last_end, floor) if last_end is not None else max(previous_slot(schedule, slot), floor)
            ts = str(adopted["ts"]) if adopted is not None else None
            if adopted is not None:
                log.info("digest %s: adopted the message %s posted before", key, ts)
                await self._keep_rows(surface, ask, adopted, start, slot)
            failed = None
            if ts is None:
                marked = {**state, "posting": {"key": key, "at": time.time()}}
                if not await lease.put(self._state(schedule), marked, STATE_TTL):
                    return  # the lease moved on
                digest = await self.desk.build(ask, start=start, end=slot)
                failed = digest.failed
                if isinstance(state.get("failed"), int):
                    digest = digest.model_copy(update={"previous_failed": state["failed"]})
                digest = await self.desk.mark_seen(schedule.channel, digest)
                if lease.lost.is_set():
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
        if await lease.put(self._state(schedule), done, STATE_TTL):
            self.runs += 1
            metrics.DIGEST_RUNS.labels("adopted" if failed is None else "posted" if ts else "skipped").inc()
        else:
            metrics.DIGEST_RUNS.labels("lease_lost").inc()
            log.warning("digest %s: posted but the lease moved on before recording (the successor adopts it)", key)

    async def _adoptable(
        self, schedule: DigestSchedule, surface: SlotSurface, key: str, state: dict[str, Any], floor: datetime
    ) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """The message of this slot already in Slack, to adopt instead of posting (or None), and the state to go on
        from: a previous holder that posted and died before recording (its *posting* marker names this slot), or
        a state record that is gone (Redis lost: the schedule's newest tagged message says where it stood)."""
        posting = state.get("posting") if isinstance(state.get("posting"), dict) else None
        if posting is not None and posting.get("key") == key:
            return await surface.newest_tagged(METADATA_TYPE, key, float(posting.get("at") or 0) - 60), state
        if state.get("last_slot"):
            return None, state
        prefix = key[: -len("YYYY-MM-DDTHH:MM:SSZ")]
        newest = await surface.newest_tagged(METADATA_TYPE, prefix, floor.timestamp())
        if newest is None:
            return None, state
        found = str(((newest.get("metadata") or {}).get("event_payload") or {}).get("key") or "")
        if found == key:
            return newest, state
        last = _parse(found[len(prefix) :])
        log.warning("digest %s: no state record; the last digest posted in Slack was %s", key, found)
        return None, ({**state, "last_end": f"{last:%Y-%m-%dT%H:%M:%SZ}"} if last is not None else state)

    async def _keep_rows(
        self, surface: SlotSurface, ask: DigestAsk, message: dict[str, Any], start: datetime, end: datetime
    ) -> None:
        """The thread rows an adopted digest message lacks: its own window (its Refresh button) built again, the
        rows past those the thread has posted."""
        value = next(
            (
                str(e.get("value") or "")
                for b in message.get("blocks") or []
                for e in b.get("elements") or []
                if isinstance(e, dict) and e.get("action_id") == REFRESH_ACTION
            ),
            "",
        )
        if value:
            ask, start_of, end_of = self.desk.ask_of(value)
            start, end = start_of or start, end_of or end
        digest = await self.desk.build(ask, start=start, end=end)
        if not digest.failed:
            return
        have = await surface.replies_of_mine(str(message["ts"]))
        await self.desk.rows(surface, digest, str(message["ts"]), skip=have)

    async def start_schedule(self, schedule: DigestSchedule, slot: datetime) -> None:
        """A new or changed schedule (:func:`is_new`) starts without a post: its record says ``slot`` (the latest due
        one) is done, so its first digest is at its next slot and covers the time since ``slot`` (since its previous
        digest when that is later), never a catch-up of ``max_window``. A schedule whose record is gone while Slack
        has its digests (Redis lost) is not new: :meth:`run_slot` recovers it from the channel."""
        async with self._lease(schedule) as lease:
            if lease.held:
                await self._start(schedule, slot, lease)

    async def _start(self, schedule: DigestSchedule, slot: datetime, lease: Lease) -> None:
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
                    await lease.put(self._state(schedule), kept, STATE_TTL)
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
            await lease.put(self._state(schedule), fresh, STATE_TTL)
            log.info("digest %s of %s: new or changed schedule: first digest at its next slot", *_named(schedule))
        except Exception:
            log.exception("digest %s of %s: could not start the schedule", *_named(schedule))

    async def _failed(self, schedule: DigestSchedule, slot: datetime, lease: Lease, exc: Exception) -> None:
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
        await lease.put(self._state(schedule), state, STATE_TTL)


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
