"""``/diagnose watch <workflow>`` and a mention "watch <workflow>": follow an OSMO workflow to its
end and post each state change in a Slack thread.

The loop is the core's one watch loop (:func:`diagnosis.watching.follow`, with the cadence and the state of
:mod:`diagnosis.osmo.watch`), polling through the watched system's backend (``Backend.watcher``: OSMO's opens
its client once per watch); this module adds the Slack thread (a :class:`~diagnosis.watching.WatchSink`), the
persistence and the replicas:

- starting: the access policy is checked like any request; the watch is registered in Redis
  (``SET NX``, so a second "watch X" in the same thread — or a second ``/diagnose watch X`` in the
  same channel — starts nothing); a root message (commands) or a thread reply (mentions) says what
  is watched; the first poll posts the current status (the full status report) in the thread;
- polling: a background task tracked by the bot's task tracker (``spawn``) polls with the
  spec's cadence (10–15 s short work, 30 s training, 60 s after several unchanged polls; a
  cadence the user gave — "every 20s" — is honoured, never below the minimum), saves the state to
  Redis after every poll, posts each state change, and at a terminal state posts the final report
  (status, or the failure diagnosis) and forgets the watch;
- replicas: the watch's lease (``watch:<id>``, the one lease holder :class:`diagnosis.lease.Lease`: renewed
  every third of its time, a lost signal) lets one replica poll a watch at a time, and its state is written only
  while that lease is held with its fencing token (a replica that stalled past its lease stops and cannot
  overwrite its successor's state); at startup and then periodically every replica resumes the active watches
  no live replica holds (a restarted pod, or another replica after a crash once the lease expired). At shutdown
  the watches are cancelled and their leases released so another replica takes over at once;
- Redis down: the watch runs from process memory (logged) and cannot be carried on elsewhere;
- stopping and listing: ``/diagnose unwatch <workflow>`` (or a mention "unwatch …", "stop watching …") stops
  the watches of that workflow in the channel (a stop mark in Redis: the replica polling it stops at its next
  poll); ``/diagnose watches`` lists the channel's active watches (privately for a command);
- expiry: a watch still unfinished ``ttl`` seconds (``WD_WATCH_TTL``, default 7 days) after it started says
  so in its thread and stops;
- a resumed watch (another replica, a restart) checks the requester's access again (the policy may have
  changed meanwhile, the requester's Slack user groups read with the injected ``groups`` lookup); a requester
  no longer allowed ends the watch with a note in the thread.

It is one of the conversation's commands (:class:`handlers.protocols.Command`: "watch X", "unwatch X",
"watches"), given to the :class:`~handlers.doctor.Doctor` when it is built; it knows the conversation only
through :class:`handlers.protocols.Conversation`.

``scale`` multiplies every interval (cadence, minimum, sweep) so tests run fast.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from diagnosis import metrics
from diagnosis.backends import Backends, backend_of, route
from diagnosis.cancelling import checkpoint
from diagnosis.lease import Lease, new_owner
from diagnosis.osmo.watch import StateChange, WatchState
from diagnosis.question import Question
from diagnosis.watching import Ending, Watcher, follow
from handlers.blocks import escape, inline, text_message
from handlers.parsing import Ask, strip_mentions
from handlers.protocols import AccessPolicy, Conversation, Surface, WatchStore

log = logging.getLogger(__name__)
#: Seconds a shutdown waits for the cancelled watches to end.
STOP_SECONDS = 10.0
#: a watch's JSON is kept this long after its last save (a forgotten watch cannot live forever)
WATCH_TTL = 14 * 86400

#: posts the report of a question in a thread: ``(question, surface, thread root, footer)``, fresh (not cached)
ThreadReport = Callable[[Question, Surface, str | None, str | None], Awaitable[Any]]
#: the Slack user groups (of the policy) a user belongs to
GroupLookup = Callable[[str], Awaitable[set[str]]]
#: a system's watcher by name (tests replace the backend's); None when the system cannot be watched here
WatcherFor = Callable[[str], Watcher | None]
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
    """What Redis keeps of a watch: where to post, who asked, the system watched, and the core's
    :class:`WatchState`."""

    model_config = ConfigDict(extra="ignore")

    id: str
    system: str = "osmo"  # a record saved before watches named their system: OSMO's, the only one watched then
    team: str = ""
    channel: str
    user: str = ""
    workflow_id: str
    thread_ts: str | None = None
    state: WatchState


class Watches:
    """The watches of one bot replica (a :class:`handlers.protocols.Command` of the conversation).

    ``surface_for(channel)`` posts with the bot's own client (a resumed watch has no request); ``report`` posts
    a question's report in a thread; ``groups`` reads a requester's Slack user groups (the access re-check of a
    resumed watch); ``watcher_for`` opens a system's poll (default: its backend's ``watcher``)."""

    def __init__(
        self,
        policy: AccessPolicy,
        store: WatchStore,
        spawn: Callable[..., asyncio.Task[Any]],
        surface_for: Callable[[str], Surface],
        *,
        backends: Backends,
        report: ThreadReport,
        groups: GroupLookup | None = None,
        watcher_for: WatcherFor | None = None,
        scale: float = 1.0,
        min_interval: float = 5.0,
        lease_margin: float = 90.0,
        sweep_interval: float = 30.0,
        ttl: float = 7 * 86400,
        owner: str | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.policy = policy
        self.store = store
        self.spawn = spawn
        self.surface_for = surface_for
        self.backends = backends
        self.report = report
        self.groups = groups
        self.watcher_for: WatcherFor = watcher_for or (lambda system: backend_of(system).watcher(backends))
        self.scale = scale
        self.min_interval = min_interval
        self.lease_margin = lease_margin
        self.sweep_interval = sweep_interval
        self.ttl = ttl
        self.owner = owner or new_owner()
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
        # covers the sleep until the next poll plus one poll and a final report (bounded by the core's deadline);
        # not scaled, so a slow poll never lets another replica in by mistake
        return self.interval(state) + self.lease_margin

    # -- the command ---------------------------------------------------------------------------

    def wants(self, text: str, question: Question | None) -> bool:
        """ "unwatch X" / "watches" (before a question is read), or a question asking to watch a target of a
        system that can be watched here (the parser names it ``<system>_watch``)."""
        if question is None:
            return parse_watch_command(text) is not None
        return question.kind.endswith("_watch") and self._system_of(question) is not None

    async def run(self, talk: Conversation, ask: Ask, surface: Surface, question: Question | None) -> None:
        if question is None:
            await self.command(talk, ask, surface)
        else:
            await self.start(talk, ask, question, surface)

    def _system_of(self, question: Question) -> str | None:
        """The system whose target ``question`` names (the backend that answers it), when it can be watched here."""
        system = route(question, self.backends).name
        return system if self.watcher_for(system) is not None else None

    # -- starting --------------------------------------------------------------------------------

    async def start(self, talk: Conversation, ask: Ask, question: Question, surface: Surface) -> None:
        """Start watching ``question.workflow_id`` for ``ask`` (a ``/diagnose`` or a mention)."""
        wid = question.workflow_id
        if not wid:
            await talk.reply(
                ask, surface, text_message("Which workflow? e.g. `/diagnose watch sdg-render-7`."), private=True
            )
            return
        if not self.policy.allows(ask.user, user_groups=ask.user_groups):
            log.info("watch refused by policy: user %s", ask.user)
            await talk.reply(ask, surface, text_message(escape(talk.refusal())), private=True)
            return
        thread = ask.thread_ts or (ask.message_ts if ask.source == "mention" else None)
        wkey = watch_id(ask.team, ask.channel, thread, wid)
        name = inline(wid)
        already = text_message(
            f"I'm already watching `{name}` " + ("in this thread." if thread else "in this channel: see its thread.")
        )
        if wkey in self.running or await self._watched_in_thread(ask, thread, wid):
            await talk.reply(ask, surface, already, private=ask.source == "command")
            return
        cadence = parse_cadence(question.text)
        record = WatchRecord(
            id=wkey,
            system=self._system_of(question) or "",
            team=ask.team,
            channel=ask.channel,
            user=ask.user,
            workflow_id=wid,
            thread_ts=thread,
            state=WatchState(workflow_id=wid, user_cadence_s=cadence, started_at=self.clock()),
        )
        if not await self.store.create_watch(wkey, record.model_dump(mode="json"), PLACEHOLDER_TTL):
            await talk.reply(ask, surface, already, private=ask.source == "command")
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
            await talk.reply(ask, surface, text_message(note), private=True)
            return
        record.thread_ts = root
        # the creator owns the fresh id (SET NX above): this first save enters the index; later saves are fenced
        if not await self.store.save_watch(wkey, record.model_dump(mode="json")):
            self._warn_memory(wkey)
        lease = Lease(self.store, f"watch:{wkey}", self.lease_ttl(record.state), owner=self.owner)
        if not await lease.acquire():  # a fresh id with a stale lease still held: let its holder run it
            log.warning("watch %s: a stale lease is held by another replica", wkey)
            return
        self._run(record, lease)

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

    def _run(self, record: WatchRecord, lease: Lease) -> None:
        task = self.spawn(self._follow(record, lease), name=f"watch-{record.workflow_id}")
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
        footer = f"watch asked by user {record.user}" if record.user else None
        await self.report(question, self.surface_for(record.channel), record.thread_ts, footer)

    async def _follow(self, record: WatchRecord, lease: Lease) -> None:
        """Poll with the core's loop until the watch ends (or another replica holds its lease, or shutdown), holding
        its lease throughout; a watch that ended is forgotten while its lease is still held."""
        if lease.local:
            self._warn_memory(record.id)
        try:
            async with lease:
                watcher = self.watcher_for(record.system)
                if watcher is None:
                    raise RuntimeError(f"{record.system} cannot be watched here (not configured)")
                async with watcher as poll:
                    _, ending = await follow(
                        record.state,
                        poll,
                        _ThreadSink(self, record),
                        interval=self.interval,
                        before_poll=functools.partial(self._before_poll, record, lease),
                        save=functools.partial(self._save, record, lease),
                        clock=self.clock,
                    )
                if ending is not Ending.CARRIED_ON:
                    await self.store.remove_watch(record.id)
        except asyncio.CancelledError:
            log.info("watch %s stopped (shutdown): another replica or a restart carries it on", record.id)
            raise
        except Exception:
            log.exception("watch %s failed", record.id)
            await self._post(record, f":warning: Something went wrong while watching `{inline(record.workflow_id)}`.")
            await self.store.remove_watch(record.id)

    async def _before_poll(self, record: WatchRecord, lease: Lease, state: WatchState) -> Ending | None:
        if lease.lost.is_set():
            return Ending.CARRIED_ON
        if await self._stopped(record.id):
            return Ending.STOPPED
        if self._expired(record):
            return Ending.EXPIRED
        lease.ttl = self.lease_ttl(state)  # the next renewal covers the next interval
        return None

    async def _save(self, record: WatchRecord, lease: Lease, state: WatchState) -> bool:
        """The watch's state, written only while its lease is held with its token: False when another replica
        holds the watch now (this one stalled past its lease)."""
        record.state = state
        if await lease.put(("watch", record.id), record.model_dump(mode="json"), WATCH_TTL):
            return True
        if lease.lost.is_set():
            return False
        self._warn_memory(record.id)  # the store is away: go on from memory
        return True

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
            if record.state.done or not record.thread_ts or await self._stopped(wkey):
                await self.store.remove_watch(wkey)
                continue
            lease = Lease(self.store, f"watch:{wkey}", self.lease_ttl(record.state), owner=self.owner, shared_only=True)
            if not await lease.acquire():
                continue  # another replica polls it (or the store is away: nothing can be carried on)
            if self.closing:
                await lease.release()
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
            self._run(record, lease)
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
        """The policy, asked again for the watch's requester (with their Slack user groups, read by ``groups``)."""
        if not record.user or not getattr(self.policy, "enabled", False):
            return True
        groups: set[str] = set()
        if self.groups is not None and self.policy.subteams():
            try:
                groups = set(await self.groups(record.user))
            except Exception:
                log.warning("watch %s: could not read the requester's user groups", record.id)
        return bool(self.policy.allows(record.user, user_groups=groups))

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

    async def command(self, talk: Conversation, ask: Ask, surface: Surface) -> bool:
        """Handle "unwatch <workflow>" and "watches"; False when ``ask`` is neither."""
        parsed = parse_watch_command(strip_mentions(ask.text))
        if parsed is None:
            return False
        verb, workflow = parsed
        private = ask.source in ("command", "button")
        if not self.policy.allows(ask.user, user_groups=ask.user_groups):
            await talk.reply(ask, surface, text_message(escape(talk.refusal())), private=True)
            return True
        watches = await self._channel_watches(ask)
        if verb == "watches":
            if not watches:
                note = "No workflow is watched in this channel. Start one with `/diagnose watch <workflow>`."
                await talk.reply(ask, surface, text_message(note), private=private)
                return True
            lines = [f"*Watched in this channel ({len(watches)}):*"]
            for record in watches:
                started = record.state.started_at
                since = f", since {started:%Y-%m-%d %H:%M} UTC" if started else ""
                who = f" for <@{record.user}>" if record.user else ""
                status = f" — {inline(str(record.state.status))}" if record.state.status else ""
                lines.append(f"• `{inline(record.workflow_id)}`{status}{who}{since}")
            lines.append("Stop one with `/diagnose unwatch <workflow>`.")
            await talk.reply(ask, surface, text_message("\n".join(lines)), private=private)
            return True
        assert workflow is not None
        matching = [r for r in watches if r.workflow_id == workflow]
        if not matching:
            note = f"I'm not watching `{inline(workflow)}` in this channel (`/diagnose watches` lists what I watch)."
            await talk.reply(ask, surface, text_message(note), private=private)
            return True
        mine = [r for r in matching if self._may_stop(ask, r)]
        if not mine:
            # only the person who asked for a watch, or an admin (a rule for every cluster and project), stops it
            owners = ", ".join(sorted({f"<@{r.user}>" for r in matching if r.user})) or "the person who asked for it"
            note = f"Only {owners} (who asked for this watch) or an admin can stop watching `{inline(workflow)}`."
            await talk.reply(ask, surface, text_message(note), private=True)
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
        await talk.reply(ask, surface, text_message(note), private=private)
        return True

    def _may_stop(self, ask: Ask, record: WatchRecord) -> bool:
        """The watch's owner (who asked for it) or an admin: a user the policy allows every cluster and project."""
        if not record.user or record.user == ask.user:
            return True
        return bool(self.policy.allows(ask.user, user_groups=ask.user_groups, whole=True))

    async def sweep_forever(self) -> None:
        """Resume orphaned watches now and then (a replica died: its leases expire)."""
        while not self.closing:
            checkpoint()
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


class _ThreadSink:
    """What a watch tells its Slack thread: each state change, the full report at the first observation and at
    the end, and why it stopped when that is not the workflow ending."""

    def __init__(self, watches: Watches, record: WatchRecord) -> None:
        self.watches = watches
        self.record = record

    async def seen(self, state: WatchState, change: StateChange | None) -> None:
        if change is None:
            return
        await self.watches._post(self.record, escape(change.sentence()))
        if change.previous is None or change.terminal:
            await self.watches._report(self.record)

    async def ended(self, state: WatchState, ending: Ending, failures: int) -> None:
        record, name = self.record, inline(self.record.workflow_id)
        if ending is Ending.EXPIRED:
            await self.watches._post(record, self.watches._expiry_note(record))
        elif ending is Ending.GONE:
            await self.watches._report(record)  # the core's "not found" answer, never a similar one
        elif ending is Ending.GAVE_UP:
            label = backend_of(record.system).label or record.system
            await self.watches._post(
                record,
                f":warning: I stopped watching `{name}`: {escape(label)} did not answer {failures} polls in a row. "
                f"Ask again with `/diagnose watch {name}`.",
            )
        elif ending is Ending.STOPPED:
            log.info("watch %s was stopped (unwatch)", record.id)
        elif ending is Ending.CARRIED_ON:
            log.info("watch %s is carried on by another replica", record.id)
