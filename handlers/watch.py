"""``/diagnose watch <workflow>`` and a mention "watch <workflow>": follow an OSMO workflow to its
end and post each state change in a Slack thread.

The cadence and the state are the pure core's (:mod:`diagnosis.osmo.watch`: :class:`WatchState`,
:func:`observe`, ``WatchState.interval()`` = :func:`next_interval`); this module adds the Slack
thread, the persistence and the replicas:

- starting: the access policy is checked like any request; the watch is registered in Redis
  (``SET NX``, so a second "watch X" in the same thread — or a second ``/diagnose watch X`` in the
  same channel — starts nothing); a root message (commands) or a thread reply (mentions) says what
  is watched; the first poll posts the current status (the full status report) in the thread;
- polling: a background task tracked by the bot's :class:`~bot.tasks.TaskTracker` polls with the
  spec's cadence (10–15 s short work, 30 s training, 60 s after several unchanged polls; a
  cadence the user gave — "every 20s" — is honoured, never below the minimum), saves the state to
  Redis after every poll, posts each state change, and at a terminal state posts the final report
  (status, or the failure diagnosis) and forgets the watch;
- replicas: a lease in Redis, renewed at every poll, lets one replica poll a watch at a time; at
  startup and then periodically every replica resumes the active watches no live replica holds
  (a restarted pod, or another replica after a crash once the lease expired). At shutdown the
  watches are cancelled and their leases released so another replica takes over at once;
- Redis down: the watch runs from process memory (logged) and cannot be carried on elsewhere;
- stopping and listing: ``/diagnose unwatch <workflow>`` (or a mention "unwatch …", "stop watching …") stops
  the watches of that workflow in the channel (a stop mark in Redis: the replica polling it stops at its next
  poll); ``/diagnose watches`` lists the channel's active watches (privately for a command);
- expiry: a watch still unfinished ``ttl`` seconds (``WD_WATCH_TTL``, default 7 days) after it started says
  so in its thread and stops;
- a resumed watch (another replica, a restart) checks the requester's access again (the policy may have
  changed meanwhile); a requester no longer allowed ends the watch with a note in the thread.

``scale`` multiplies every interval (cadence, minimum, sweep) so tests run fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from diagnosis import metrics
from diagnosis.osmo.models import Workflow
from diagnosis.osmo.watch import WatchState, observe, work_kind
from diagnosis.question import Question
from handlers.blocks import escape, inline, text_message
from handlers.doctor import Doctor
from handlers.parsing import Ask, strip_mentions
from handlers.protocols import Surface, WatchStore

log = logging.getLogger(__name__)
#: Seconds a shutdown waits for the cancelled watches to end.
STOP_SECONDS = 10.0

WatchFetch = Callable[[str], Awaitable[Workflow]]
#: consecutive failed polls (OSMO unreachable) before a watch gives up and says so
MAX_FAILURES = 5
#: how long a registered watch may wait for its first thread message before it is forgotten
PLACEHOLDER_TTL = 120
#: how long a stop mark outlives the watch it stops (the polling replica sees it at its next poll)
STOP_MARK_TTL = 3600
_UNWATCH = re.compile(
    r"(?i)^\s*(?:/diagnose\s+)?(?:unwatch|stop\s+watching|stop\s+following)\s+(?:the\s+)?(?:workflow\s+)?"
    r"([A-Za-z0-9][\w.\-]*)\s*$"
)
_WATCHES = re.compile(r"(?i)^\s*(?:/diagnose\s+)?(?:list\s+)?(?:the\s+)?(?:active\s+)?watch(?:es|ing)\s*\??\s*$")
_CADENCE = re.compile(
    r"(?i)\b(?:every|interval\s*[=:]?)\s*(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?)?(?![\w.])"
)


def parse_cadence(text: str | None) -> float | None:
    """A cadence the user gave ("every 20s", "every 2 minutes", ``interval=30``), in seconds."""
    m = _CADENCE.search(text or "")
    if not m:
        return None
    value = float(m.group(1))
    unit = (m.group(2) or "s").lower()
    return value * 60 if unit.startswith("m") else value


def parse_watch_command(text: str | None) -> tuple[str, str | None] | None:
    """``("unwatch", workflow)`` for "unwatch X" / "stop watching X", ``("watches", None)`` for "watches" /
    "list watches"; None for anything else (a "watch X" is a question: :mod:`diagnosis.question`)."""
    m = _UNWATCH.match(text or "")
    if m:
        return "unwatch", m.group(1)
    if _WATCHES.match(text or ""):
        return "watches", None
    return None


def watch_id(team: str, channel: str, thread: str | None, workflow_id: str) -> str:
    """One watch per workflow and thread (``cmd``: a ``/diagnose`` in the channel, which has no thread)."""
    return ":".join((team or "-", channel, thread or "cmd", workflow_id))


class WatchRecord(BaseModel):
    """What Redis keeps of a watch: where to post, who asked, and the core's :class:`WatchState`."""

    model_config = ConfigDict(extra="ignore")

    id: str
    team: str = ""
    channel: str
    user: str = ""
    workflow_id: str
    thread_ts: str | None = None
    state: WatchState


class Watches:
    """The watches of one bot replica. ``surface_for(channel)`` posts with the bot's own client (a
    resumed watch has no request); ``fetch`` replaces the OSMO query (tests)."""

    def __init__(
        self,
        doctor: Doctor,
        store: WatchStore,
        spawn: Callable[..., asyncio.Task[Any]],
        surface_for: Callable[[str], Surface],
        *,
        fetch: WatchFetch | None = None,
        scale: float = 1.0,
        min_interval: float = 5.0,
        lease_margin: float = 90.0,
        sweep_interval: float = 30.0,
        ttl: float = 7 * 86400,
        owner: str | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.doctor = doctor
        self.store = store
        self.spawn = spawn
        self.surface_for = surface_for
        self.fetch = fetch
        self.scale = scale
        self.min_interval = min_interval
        self.lease_margin = lease_margin
        self.sweep_interval = sweep_interval
        self.ttl = ttl
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.clock = clock
        self.running: dict[str, asyncio.Task[Any]] = {}
        self.records: dict[str, WatchRecord] = {}
        self.closing = False
        self._memory_warned = False

    # -- cadence -------------------------------------------------------------------------------

    def interval(self, state: WatchState) -> float:
        """Seconds until the next poll: the core's cadence, never below the minimum, times ``scale``."""
        return max(state.interval(), self.min_interval) * self.scale

    def lease_ttl(self, state: WatchState) -> float:
        # covers the sleep until the next renewal plus one poll and a final report (bounded by the
        # core's deadline); not scaled, so a slow poll never lets another replica in by mistake
        return self.interval(state) + self.lease_margin

    # -- starting --------------------------------------------------------------------------------

    async def start(self, ask: Ask, question: Question, surface: Surface) -> None:
        """Start watching ``question.workflow_id`` for ``ask`` (a ``/diagnose`` or a mention)."""
        wid = question.workflow_id
        if not wid:
            await self.doctor.reply(
                ask, surface, text_message("Which workflow? e.g. `/diagnose watch sdg-render-7`."), private=True
            )
            return
        if not self.doctor.policy.allows(ask.user, user_groups=ask.user_groups):
            log.info("watch refused by policy: user %s", ask.user)
            await self.doctor.reply(ask, surface, text_message(escape(self.doctor.refusal())), private=True)
            return
        thread = ask.thread_ts or (ask.message_ts if ask.source == "mention" else None)
        wkey = watch_id(ask.team, ask.channel, thread, wid)
        name = inline(wid)
        already = text_message(
            f"I'm already watching `{name}` " + ("in this thread." if thread else "in this channel: see its thread.")
        )
        if wkey in self.running or await self._watched_in_thread(ask, thread, wid):
            await self.doctor.reply(ask, surface, already, private=ask.source == "command")
            return
        cadence = parse_cadence(question.text)
        record = WatchRecord(
            id=wkey,
            team=ask.team,
            channel=ask.channel,
            user=ask.user,
            workflow_id=wid,
            thread_ts=thread,
            state=WatchState(
                workflow_id=wid,
                user_cadence_s=cadence,
                channel=ask.channel,
                thread_ts=thread,
                started_at=self.clock(),
            ),
        )
        if not await self.store.create_watch(wkey, record.model_dump(mode="json"), PLACEHOLDER_TTL):
            await self.doctor.reply(ask, surface, already, private=ask.source == "command")
            return
        every = f"every {cadence:g} s" if cadence else "with the usual cadence"
        hello = (
            f":eyes: Watching workflow `{name}` for <@{ask.user}> (read-only): I'll post each state change "
            f"in this thread, polling {every}, and stop when it ends."
        )
        try:
            posted = await surface.post(text_message(hello), thread)
        except Exception:
            log.exception("could not post the watch message in %s", ask.channel)
            posted = None
        root = thread or posted
        if root is None:
            await self.store.remove_watch(wkey)
            note = "I can't post in this channel, so I can't watch here: invite me to the channel and ask again."
            await self.doctor.reply(ask, surface, text_message(note), private=True)
            return
        record.thread_ts = root
        record.state.thread_ts = root
        if not await self.store.save_watch(wkey, record.model_dump(mode="json")):
            self._warn_memory(wkey)
        held = await self.store.acquire_lease(wkey, self.owner, self.lease_ttl(record.state))
        if held is False:  # cannot happen for a fresh id unless a stale lease remains: let its holder run it
            log.warning("watch %s: a stale lease is held by another replica", wkey)
            return
        self._run(record)

    async def _watched_in_thread(self, ask: Ask, thread: str | None, wid: str) -> bool:
        """Is ``wid`` already watched in ``thread`` (e.g. the thread of an earlier ``/diagnose watch``)?"""
        if not thread:
            return False
        for wkey, record in self.records.items():
            if wkey in self.running and record.channel == ask.channel and record.workflow_id == wid:
                if record.thread_ts == thread:
                    return True
        prefix, suffix = f"{ask.team or '-'}:{ask.channel}:", f":{wid}"
        for other in await self.store.active_watches():
            if other.startswith(prefix) and other.endswith(suffix):
                data = await self.store.load_watch(other)
                if isinstance(data, dict) and data.get("thread_ts") == thread:
                    return True
        return False

    def _run(self, record: WatchRecord) -> None:
        task = self.spawn(self._follow(record), name=f"watch-{record.workflow_id}")
        self.running[record.id] = task
        self.records[record.id] = record
        metrics.ACTIVE_WATCHES.inc()

        def forget(t: asyncio.Task[Any]) -> None:
            metrics.ACTIVE_WATCHES.dec()
            if self.running.get(record.id) is t:
                self.running.pop(record.id, None)
                self.records.pop(record.id, None)

        task.add_done_callback(forget)

    def _warn_memory(self, wkey: str) -> None:
        if not self._memory_warned:
            log.warning("Redis unavailable: watch %s runs from process memory (no other replica can carry it on)", wkey)
        self._memory_warned = True

    # -- polling ---------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _fetcher(self) -> AsyncIterator[WatchFetch]:
        if self.fetch is not None:
            yield self.fetch
            return
        config = self.doctor.backends.osmo
        if config is None:
            raise RuntimeError("OSMO is not configured")
        from diagnosis.osmo.client import OsmoClient

        async with OsmoClient(config) as client:
            yield client.get_workflow

    async def _post(self, record: WatchRecord, text: str) -> None:
        assert record.thread_ts is not None
        try:
            await self.surface_for(record.channel).post(text_message(text), record.thread_ts)
        except Exception:
            log.exception("watch %s: could not post in the thread", record.id)

    async def _report(self, record: WatchRecord) -> None:
        question = Question(
            text=f"status of workflow {record.workflow_id}", workflow_id=record.workflow_id, kind="osmo_status"
        )
        await self.doctor.report_in_thread(
            question,
            self.surface_for(record.channel),
            record.thread_ts,
            footer=f"watch asked by user {record.user}" if record.user else None,
            fresh=True,
        )

    async def _follow(self, record: WatchRecord) -> None:
        """Poll until a terminal state (or until another replica holds the lease, or shutdown)."""
        from diagnosis.osmo.client import WorkflowNotFound

        state = record.state
        failures = 0
        finished = False
        try:
            async with self._fetcher() as fetch:
                while True:
                    if state.polls:
                        await asyncio.sleep(self.interval(state))
                    if await self._stopped(record.id):
                        log.info("watch %s was stopped (unwatch)", record.id)
                        finished = True
                        return
                    if self._expired(record):
                        await self._post(record, self._expiry_note(record))
                        finished = True
                        return
                    held = await self.store.acquire_lease(record.id, self.owner, self.lease_ttl(state))
                    if held is False:
                        log.info("watch %s is carried on by another replica", record.id)
                        return
                    if held is None:
                        self._warn_memory(record.id)
                    try:
                        workflow = await fetch(record.workflow_id)
                    except WorkflowNotFound:
                        await self._report(record)  # the core's "not found" answer, never a similar one
                        finished = True
                        return
                    except Exception as exc:
                        failures += 1
                        log.warning("watch %s: poll %d failed: %s", record.id, failures, type(exc).__name__)
                        if failures >= MAX_FAILURES:
                            await self._post(
                                record,
                                f":warning: I stopped watching `{inline(record.workflow_id)}`: OSMO did not answer "
                                f"{failures} polls in a row. Ask again with `/diagnose watch "
                                f"{inline(record.workflow_id)}`.",
                            )
                            finished = True
                            return
                        state = state.model_copy(update={"polls": state.polls + 1})
                        continue
                    failures = 0
                    first = state.polls == 0
                    state, change = observe(state, workflow.status, self.clock())
                    if first and state.user_cadence_s is None:
                        state.kind = work_kind(workflow)
                    record.state = state
                    if not await self.store.save_watch(record.id, record.model_dump(mode="json")):
                        self._warn_memory(record.id)
                    if change is not None:
                        await self._post(record, escape(change.sentence()))
                        if change.previous is None or change.terminal:
                            await self._report(record)
                    if state.done:
                        finished = True
                        return
        except asyncio.CancelledError:
            log.info("watch %s stopped (shutdown): another replica or a restart carries it on", record.id)
            raise
        except Exception:
            log.exception("watch %s failed", record.id)
            finished = True
            await self._post(record, f":warning: Something went wrong while watching `{inline(record.workflow_id)}`.")
        finally:
            if finished:
                await self.store.remove_watch(record.id)
            else:
                await self.store.release_lease(record.id, self.owner)

    # -- resuming and stopping -------------------------------------------------------------------

    async def resume(self) -> int:
        """Carry on every active watch in Redis that no live replica holds; returns how many."""
        if self.closing:
            return 0
        started = 0
        for wkey in await self.store.active_watches():
            if wkey in self.running:
                continue
            data = await self.store.load_watch(wkey)
            if data is None:
                await self.store.forget_watch_index(wkey)
                continue
            try:
                record = WatchRecord.model_validate(data)
            except ValidationError:
                log.warning("watch %s: unreadable state, forgotten", wkey)
                await self.store.remove_watch(wkey)
                continue
            if record.state.done or not record.thread_ts:
                await self.store.remove_watch(wkey)
                continue
            if await self._stopped(wkey):
                await self.store.remove_watch(wkey)
                continue
            held = await self.store.acquire_lease(wkey, self.owner, self.lease_ttl(record.state))
            if held is not True or self.closing:
                continue
            if self._expired(record):
                await self._post(record, self._expiry_note(record))
                await self.store.remove_watch(wkey)
                continue
            if not await self._still_allowed(record):
                log.info("watch %s ended on resume: user %s is no longer allowed", wkey, record.user)
                await self._post(
                    record,
                    f":no_entry: I stopped watching `{inline(record.workflow_id)}`: the access policy no longer "
                    "allows the person who asked for this watch.",
                )
                await self.store.remove_watch(wkey)
                continue
            log.info("resuming watch %s (%s, %d polls so far)", wkey, record.state.status, record.state.polls)
            self._run(record)
            started += 1
        return started

    # -- expiry, access, stop marks --------------------------------------------------------------

    def _expired(self, record: WatchRecord) -> bool:
        started = record.state.started_at
        return started is not None and (self.clock() - started).total_seconds() > self.ttl

    def _expiry_note(self, record: WatchRecord) -> str:
        days = self.ttl / 86400
        span = f"{days:g} day(s)" if days >= 1 else f"{self.ttl:g} s"
        name = inline(record.workflow_id)
        return (
            f":hourglass: I stopped watching `{name}`: it has not finished after {span} (WD_WATCH_TTL). "
            f"Ask again with `/diagnose watch {name}` to keep following it."
        )

    async def _still_allowed(self, record: WatchRecord) -> bool:
        """The policy, asked again for the watch's requester (with their Slack user groups)."""
        policy = self.doctor.policy
        if not record.user or not getattr(policy, "enabled", False):
            return True
        groups: set[str] = set()
        client = getattr(self.surface_for(record.channel), "client", None)
        if client is not None and policy.subteams():
            from handlers.middleware import _user_groups

            try:
                groups = await _user_groups(policy, self.store, client, record.user)
            except Exception:
                log.warning("watch %s: could not read the requester's user groups", record.id)
        return bool(policy.allows(record.user, user_groups=groups))

    async def _stopped(self, wkey: str) -> bool:
        return (await self.store.get_json("watch-stop", wkey)) is not None

    async def _channel_watches(self, ask: Ask) -> list[WatchRecord]:
        """The active watches of the asker's channel (this replica's and every other's)."""
        prefix = f"{ask.team or '-'}:{ask.channel}:"
        found: dict[str, WatchRecord] = {k: r for k, r in self.records.items() if k.startswith(prefix)}
        for wkey in await self.store.active_watches():
            if not wkey.startswith(prefix) or wkey in found or await self._stopped(wkey):
                continue
            data = await self.store.load_watch(wkey)
            if not isinstance(data, dict):
                continue
            try:
                record = WatchRecord.model_validate(data)
            except ValidationError:
                continue
            if not record.state.done:
                found[wkey] = record
        return sorted(found.values(), key=lambda r: (r.workflow_id, r.id))

    async def command(self, ask: Ask, surface: Surface) -> bool:
        """Handle "unwatch <workflow>" and "watches"; False when ``ask`` is neither."""
        parsed = parse_watch_command(strip_mentions(ask.text))
        if parsed is None:
            return False
        verb, workflow = parsed
        private = ask.source in ("command", "button")
        if not self.doctor.policy.allows(ask.user, user_groups=ask.user_groups):
            await self.doctor.reply(ask, surface, text_message(escape(self.doctor.refusal())), private=True)
            return True
        watches = await self._channel_watches(ask)
        if verb == "watches":
            if not watches:
                note = "No workflow is watched in this channel. Start one with `/diagnose watch <workflow>`."
                await self.doctor.reply(ask, surface, text_message(note), private=private)
                return True
            lines = [f"*Watched in this channel ({len(watches)}):*"]
            for record in watches:
                started = record.state.started_at
                since = f", since {started:%Y-%m-%d %H:%M} UTC" if started else ""
                who = f" for <@{record.user}>" if record.user else ""
                status = f" — {inline(str(record.state.status))}" if record.state.status else ""
                lines.append(f"• `{inline(record.workflow_id)}`{status}{who}{since}")
            lines.append("Stop one with `/diagnose unwatch <workflow>`.")
            await self.doctor.reply(ask, surface, text_message("\n".join(lines)), private=private)
            return True
        assert workflow is not None
        matching = [r for r in watches if r.workflow_id == workflow]
        if not matching:
            note = f"I'm not watching `{inline(workflow)}` in this channel (`/diagnose watches` lists what I watch)."
            await self.doctor.reply(ask, surface, text_message(note), private=private)
            return True
        mine = [r for r in matching if self._may_stop(ask, r)]
        if not mine:
            # only the person who asked for a watch, or an admin (a rule for every cluster and project), stops it
            owners = ", ".join(sorted({f"<@{r.user}>" for r in matching if r.user})) or "the person who asked for it"
            note = f"Only {owners} (who asked for this watch) or an admin can stop watching `{inline(workflow)}`."
            await self.doctor.reply(ask, surface, text_message(note), private=True)
            return True
        for record in mine:
            await self.store.put_json(("watch-stop", record.id), {"by": ask.user}, STOP_MARK_TTL)
            task = self.running.get(record.id)
            if task is not None:
                task.cancel()
            await self.store.remove_watch(record.id)
            if record.thread_ts:
                await self._post(record, f":octagonal_sign: <@{ask.user}> stopped this watch.")
        note = f"Stopped watching `{inline(workflow)}`."
        await self.doctor.reply(ask, surface, text_message(note), private=private)
        return True

    def _may_stop(self, ask: Ask, record: WatchRecord) -> bool:
        """The watch's owner (who asked for it) or an admin: a user the policy allows every cluster and project."""
        if not record.user or record.user == ask.user:
            return True
        return bool(self.doctor.policy.allows(ask.user, user_groups=ask.user_groups, whole=True))

    async def sweep_forever(self) -> None:
        """Resume orphaned watches now and then (a replica died: its leases expire)."""
        while not self.closing:
            await asyncio.sleep(self.sweep_interval * self.scale)
            try:
                await self.resume()
            except Exception:
                log.exception("watch sweep failed")

    async def stop(self) -> None:
        """Shutdown: cancel every watch here (state stays in Redis, leases are released)."""
        self.closing = True
        tasks = list(self.running.values())
        for task in tasks:
            task.cancel()
        if tasks:
            # bounded: a watch whose cleanup hangs (a Slack or Redis call in flight) must not hold the shutdown
            _, pending = await asyncio.wait(tasks, timeout=STOP_SECONDS)
            if pending:
                log.warning(
                    "%d watch(es) did not stop within %.0f s; left to the next replica", len(pending), STOP_SECONDS
                )
