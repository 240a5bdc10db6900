"""Digests in Slack: ``/diagnose digest [since] [cluster=…] [project=…] [pool=…]``, ``/diagnose digest status``,
and the digest buttons (Refresh, Show all in thread, Diagnose newest). Scheduled digests are run by
:mod:`bot.scheduler`, which posts through :meth:`DigestDesk.publish` too.

Every digest is built by :func:`diagnosis.answer.answer_digest` (the same core as ``/diagnose``) and then cut
to what may be shown: an on-demand digest shows only what the asker may diagnose (the access policy), a
scheduled one only the scope its channel configured. The main message carries the digest's window and scope
in its buttons, so a Refresh pressed on any replica rebuilds the same digest and updates the same message.

The desk is the conversation's digest command (:class:`handlers.protocols.Command`: "digest …", "what failed
today?"), given to the :class:`~handlers.doctor.Doctor` when it is built. ``digest status`` reads each schedule's
state where the scheduler keeps it (:func:`schedule_state_key`).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, cast

from diagnosis.answer import Backends, answer_digest
from diagnosis.config import ConfigError
from diagnosis.digest_rows import ROW_TTL
from diagnosis.digest_text import cause_words, group_system
from diagnosis.digests import (
    MAX_SINCE,
    Digest,
    DigestAsk,
    DigestItem,
    family,
    filter_digest,
    is_digest_words,
    next_slot,
    parse_digest_text,
    window_in_words,
)
from diagnosis.errors import BackendUnavailable
from diagnosis.question import Question, QuestionError, parse_text
from diagnosis.units import parse_time
from handlers import messages
from handlers.blocks import Message, Snippet, escape, text_message
from handlers.digest_blocks import REFRESH_ACTION, THREAD_ACTION, digest_thread, render_digest_blocks
from handlers.parsing import Ask, strip_mentions
from handlers.protocols import Conversation, DigestPolicy, JsonStore, Surface
from handlers.replies import ref_id

log = logging.getLogger(__name__)
DIGEST_WORD = re.compile(r"(?i)^\s*digests?\b")
METADATA_TYPE = "workload_doctor_digest"
DigestFn = Callable[..., Awaitable[Digest]]
Refuse = Callable[[], Awaitable[None]]


def schedule_state_key(team: str, channel: str, name: str) -> tuple[str, ...]:
    """Where the state of ``channel``'s scheduled digest ``name`` is kept (written by :mod:`bot.scheduler` under
    its slot's lease; read by ``digest status``)."""
    return ("digeststate", team, channel, name)


def _named_clusters(digest: Digest) -> dict[str, str]:
    """The clusters a digest scanned: UUID -> name (the name is the UUID when the control plane gave none)."""
    return dict(zip(digest.cluster_ids, digest.cluster_names, strict=False))


class _Visible:
    """What one person may see of a digest (:meth:`DigestDesk.visible_to`): ``names`` (UUID -> name, filled by
    :meth:`DigestDesk.build`) lets a rule that names a cluster by either match its rows."""

    def __init__(self, policy: DigestPolicy, user: str, groups: set[str]) -> None:
        self.policy = policy
        self.user = user
        self.groups = groups
        self.names: dict[str, str] = {}

    def __call__(self, item: DigestItem) -> bool:
        # a row without a cluster or project (an OSMO workflow) is checked by who asks alone: unknown values
        # never refuse (handlers.protocols.AccessPolicy.allows)
        clusters = {c for c in (item.cluster_id, self.names.get(item.cluster_id or "")) if c}
        return bool(self.policy.allows(self.user, clusters=clusters, project=item.project, user_groups=self.groups))


class DigestSurface(Protocol):
    """What a digest needs of Slack (:class:`handlers.slack_surface.SlackSurface` implements it)."""

    async def post(self, message: Message, thread_ts: str | None = None) -> str | None: ...

    async def update(self, ts: str, message: Message) -> None: ...

    async def upload(self, snippet: Snippet, thread_ts: str | None = None) -> bool: ...

    async def post_tagged(self, message: Message, event_type: str, key: str) -> str | None: ...

    async def find_tagged(self, event_type: str, key: str, oldest: float) -> str | None: ...


_CLOCKISH = re.compile(r"(?i)^(?:\d{1,2}(?::\d\d)?(?:am|pm)?|\d+\s*[mhdw])$")
_TIME_WORDS = frozenset(
    "last past previous morning evening afternoon night overnight week weekend day days hour hours today "
    "yesterday now".split()
)


def is_digest(text: str) -> bool:
    """Whether a text asks for a digest: ``digest 24h project=nlp``, ``digest status``, or in words ("what failed
    today?", "any failures since 9am in nlp?") when it names no workload (issue 21)."""
    if DIGEST_WORD.match(text or ""):
        return True
    if not is_digest_words(text):
        return False
    parsed = parse_text(text)
    named = [c for c in parsed.candidates if not _CLOCKISH.match(c)]
    return not (named or parsed.workload_id or parsed.workflow_id)


def digest_scope_in_words(text: str) -> tuple[str | None, list[str] | None]:
    """The cluster and projects a digest asked in words names ("in nlp", "project nlp", "on dgx-prod")."""
    parsed = parse_text(text)
    projects = [parsed.project] if parsed.project else []
    cluster = parsed.cluster or parsed.cluster_id or parsed.cluster_hint
    for scope in parsed.scopes:
        if scope.lower() not in _TIME_WORDS and not _CLOCKISH.match(scope) and scope != cluster:
            projects.append(scope)
    return cluster, (list(dict.fromkeys(projects)) or None)


def fallback(digest: Digest) -> str:
    """The notification text: the count and the causes in words (the card's words, not codes)."""
    causes = ", ".join(f"{g.count} {cause_words(g.category, group_system(g.items))[1]}" for g in digest.groups)
    text = f"Failures digest: {digest.failed} in the last {digest.since}" + (f": {causes}" if causes else "")
    return escape(text)[:300]


def window_value(ask: DigestAsk, digest: Digest) -> str:
    """The button value: the digest's window and scope (so any replica can rebuild it)."""
    return json.dumps(
        {
            "start": digest.start.isoformat(),
            "end": digest.end.isoformat(),
            "cluster": ask.cluster_id,
            "projects": ask.projects,
            "pools": ask.pools,
        },
        separators=(",", ":"),
    )[:2000]


#: how long a channel remembers the failure families its digests reported ("seen before")
SEEN_TTL = 14 * 86400


#: digest rows the bot's Redis takes per day at most: with :data:`~diagnosis.digest_rows.ROW_TTL` (3 days) at most
#: about 80,000 rows (some 40 MB) alive, whatever the fleet; a row past the cap is simply diagnosed again next time
ROW_PUTS_PER_DAY = 20_000


class _StoreCache:
    """Digest rows in the bot's Redis (:class:`bot.state.Store`): each kept :data:`ROW_TTL`, at most
    :data:`ROW_PUTS_PER_DAY` written a day (the store's fixed-window counter), so the rows are bounded."""

    def __init__(self, store: JsonStore) -> None:
        self.store = store

    async def get(self, key: str) -> Any:
        return await self.store.get_json("digestrow", key)

    async def put(self, key: str, value: Any) -> None:
        allow = getattr(self.store, "allow", None)
        if allow is not None and not await allow("digestrow", "puts", ROW_PUTS_PER_DAY, 86400):
            return
        await self.store.put_json(("digestrow", key), value, ROW_TTL)


class DigestDesk:
    """Builds, scopes and posts digests. ``digest_fn`` is :func:`answer_digest` (a fake in unit tests)."""

    def __init__(
        self,
        backends: Backends,
        policy: DigestPolicy,
        *,
        store: JsonStore | None = None,
        digest_fn: DigestFn | None = None,
    ) -> None:
        self.backends = backends
        self.policy = policy
        self.store = store
        self.digest_fn: DigestFn = digest_fn or answer_digest
        self.cache = _StoreCache(store) if store is not None else None

    # -- the command -------------------------------------------------------------------------------

    def wants(self, text: str, question: Question | None) -> bool:
        """A digest ("digest 24h", "digest status", "what failed today?"), before any question is read."""
        return question is None and is_digest(text)

    async def run(self, talk: Conversation, ask: Ask, surface: Surface, question: Question | None) -> None:
        """A digest of the asker's channel, cut to what the asker may see; counted against the rate limit as a
        diagnosis is (``digest status`` is free). Errors are told to the asker only."""
        words = DIGEST_WORD.sub("", strip_mentions(ask.text), count=1).strip().lower()
        if words != "status" and not await talk.admit(ask, surface):
            return
        slack = cast("DigestSurface", surface)  # digests are offered on Slack, whose surface posts tagged messages
        try:
            await self.on_demand(ask, slack, lambda message: talk.reply(ask, surface, message, private=True))
        except (ConfigError, BackendUnavailable) as exc:
            await talk.reply(ask, surface, messages.digest_unavailable(exc), private=True)
        except Exception as exc:
            ref = ref_id()
            log.exception("[ref %s] digest failed", ref)
            await talk.reply(ask, surface, messages.failure(exc, ref), private=True)

    async def schedule_states(self, team: str, channel: str) -> dict[str, dict[str, Any]] | None:
        """The saved state of each of ``channel``'s scheduled digests, by schedule name (None without a store)."""
        if self.store is None:
            return None
        states: dict[str, dict[str, Any]] = {}
        for schedule in self.policy.digests.get(channel, []):
            raw = await self.store.get_json(*schedule_state_key(team, channel, schedule.name))
            states[schedule.name] = raw if isinstance(raw, dict) else {}
        return states

    # -- building ----------------------------------------------------------------------------------

    def visible_to(self, user: str, groups: set[str]) -> _Visible:
        """The access policy as an item filter: a Run:ai row only if ``user`` may diagnose its cluster (a rule names
        it by its name or its UUID: the digest's scan knows both) and project."""
        return _Visible(self.policy, user, groups)

    def may_see_all(self, user: str, groups: set[str], digest: Digest) -> bool:
        """``user`` may see the whole scope of ``digest`` (issue 23: who may refresh a channel's digest): every
        cluster it scanned, by both its names, with every project it covers (``null``: every project)."""
        if not self.policy.allows(user, user_groups=groups):
            return False
        projects: list[str | None] = [*(digest.projects or [])] or [None]
        for cluster in _named_clusters(digest).items():
            for project in projects:
                clusters = {c for c in cluster if c}
                if not self.policy.allows(user, clusters=clusters, project=project, user_groups=groups, whole=True):
                    return False
        return True

    async def build(
        self,
        ask: DigestAsk,
        *,
        start: datetime | None = None,
        end: datetime | None = None,
        keep: Callable[[DigestItem], bool] | None = None,
    ) -> Digest:
        if self.cache is not None and self.digest_fn is answer_digest:
            digest = await answer_digest(ask, self.backends, start=start, end=end, cache=self.cache)
        else:
            digest = await self.digest_fn(ask, self.backends, start=start, end=end)
        if isinstance(keep, _Visible):
            keep.names = _named_clusters(digest)
        return filter_digest(digest, keep) if keep is not None else digest

    async def mark_seen(self, channel: str, digest: Digest) -> Digest:
        """The digest with ``seen_before`` filled (families an earlier digest of ``channel`` reported), and every
        family of this one remembered for :data:`SEEN_TTL` (Redis; nothing is remembered without a store)."""
        if self.store is None or not digest.failed:
            return digest
        known = await self.store.get_json("digestseen", channel)
        families: dict[str, float] = known if isinstance(known, dict) else {}
        now = time.time()
        families = {k: v for k, v in families.items() if isinstance(v, int | float) and now - v < SEEN_TTL}
        seen: list[str] = []
        for group in digest.groups:
            for item in group.items:
                fam = f"{family(item.name)}|{group.category}"
                if fam in families:
                    seen.append(item.name)
                families[fam] = now
        await self.store.put_json(("digestseen", channel), families, SEEN_TTL)
        return digest.model_copy(update={"seen_before": sorted(set(seen))})

    # -- posting -----------------------------------------------------------------------------------

    def message(self, ask: DigestAsk, digest: Digest) -> Message:
        blocks = render_digest_blocks(digest)
        value = window_value(ask, digest)
        for block in blocks:
            if block.get("type") == "actions":
                for button in block.get("elements") or []:
                    if button.get("action_id") in (REFRESH_ACTION, THREAD_ACTION):
                        button["value"] = value
        return Message(text=fallback(digest), blocks=blocks)

    async def publish(
        self, surface: DigestSurface, ask: DigestAsk, digest: Digest, *, key: str | None = None
    ) -> str | None:
        """Post the main message (tagged with ``key`` in its Slack metadata when given, the idempotency key of a
        scheduled slot) and the per-failure rows in its thread. Returns the main message's ts."""
        message = self.message(ask, digest)
        if key is not None:
            ts = await surface.post_tagged(message, METADATA_TYPE, key)
        else:
            ts = await surface.post(message)
        if ts and digest.failed:
            await self.rows(surface, digest, ts)
        return ts

    async def rows(self, surface: DigestSurface, digest: Digest, thread_ts: str, skip: int = 0) -> None:
        """The per-failure rows in the thread; past the cut, the full table as a snippet. ``skip``: rows the thread
        has already (an adopted digest, issue 24)."""
        messages, table = digest_thread(digest)
        if skip >= len(messages):
            return
        for text in messages[skip:]:
            await surface.post(text_message(text), thread_ts=thread_ts)
        if len(messages) and "more (of" in messages[-1]:
            snippet = Snippet(title="All failures of this digest", filename="digest.tsv", content=table)
            if not await surface.upload(snippet, thread_ts=thread_ts):
                log.warning("digest table upload failed; the thread has the first rows only")

    # -- conversation ------------------------------------------------------------------------------

    def ask_for(self, text: str, channel: str) -> DigestAsk:
        """The digest a command's text asks for, the channel's default cluster filling a missing one."""
        words = DIGEST_WORD.sub("", text or "", count=1)
        if DIGEST_WORD.match(text or ""):
            ask = parse_digest_text(words)
        else:
            # asked in words: "today" is the last 24 hours unless a time is given (issue 21)
            ask = DigestAsk(text=words, since=window_in_words(words, self.backends.now()))
            ask.cluster_id, ask.projects = digest_scope_in_words(words)
        if not ask.since:
            ask.since = "24h"
        defaults = self.policy.defaults_for(channel)
        if ask.cluster_id is None:
            ask.cluster_id = defaults.get("cluster_id") or defaults.get("cluster")
        if ask.projects is None and defaults.get("project"):
            ask.projects = [defaults["project"]]
        if ask.pools is None and ask.projects is not None:
            ask.pools = []  # a project-scoped digest never adds every OSMO pool (issue 23)
        ask.since_delta()
        return ask

    async def on_demand(
        self, ask: Ask, surface: DigestSurface, reply_private: Callable[[Message], Awaitable[None]]
    ) -> None:
        """``/diagnose digest …`` posted in the asker's channel, showing only what the asker may see."""
        words = DIGEST_WORD.sub("", ask.text or "", count=1).strip()
        if words.lower() == "status":
            states = await self.schedule_states(ask.team, ask.channel)
            await reply_private(self.status_message(ask.channel, states, await _links(surface, states)))
            return
        try:
            digest_ask = self.ask_for(ask.text, ask.channel)
        except QuestionError as exc:
            await reply_private(text_message(f"I couldn't read that: {escape(str(exc))}"))
            return
        digest = await self.build(digest_ask, keep=self.visible_to(ask.user, ask.user_groups))
        digest = await self.mark_seen(ask.channel, digest)
        await self.publish(surface, digest_ask, digest)

    def status_message(
        self, channel: str, states: dict[str, Any] | None = None, links: dict[str, str] | None = None
    ) -> Message:
        """The channel's schedules from their saved state (issue 27): per schedule its cron, time zone and scope,
        the last digest posted (when, with a link: ``links`` by schedule name), the next slot, and a failed post's
        back-off (issue 24)."""
        schedules = list(self.policy.digests.get(channel, []))
        if not schedules:
            return text_message("This channel has no scheduled digest (policy `channels.<channel>.digests`).")
        lines = ["*Scheduled digests of this channel*"]
        now = self.backends.now()
        for s in schedules:
            state = (states or {}).get(s.name) or {}
            lines.append(f"• *{escape(s.name)}*: `{escape(s.cron)}` ({escape(s.tz)}), {escape(schedule_scope(s))}")
            lines.append(
                f"   last posted {last_posted(state, (links or {}).get(s.name))} · "
                f"next {next_slot(s.cron, s.tz, now):%Y-%m-%d %H:%M} UTC" + failing(state.get("failure"))
            )
        return text_message("\n".join(lines))

    # -- buttons -----------------------------------------------------------------------------------

    @staticmethod
    def ask_of(value: str) -> tuple[DigestAsk, datetime | None, datetime | None]:
        data = json.loads(value or "{}")
        ask = DigestAsk(cluster_id=data.get("cluster"), projects=data.get("projects"), pools=data.get("pools"))
        return ask, parse_time(data.get("start")), parse_time(data.get("end"))

    def window_of(self, value: str) -> tuple[DigestAsk, datetime | None, datetime | None] | None:
        """:meth:`ask_of` a button's ``value``, its window bounded before any work (issue 24: a forged window of
        1970-2100 listed every failure): None (one log line) when it is unreadable, longer than
        :data:`~diagnosis.digests.MAX_SINCE`, starts before that long ago, or ends past now and
        :data:`WINDOW_SKEW`."""
        try:
            ask, start, end = self.ask_of(value)
        except (ValueError, TypeError, AttributeError):
            problem: str | None = "unreadable"
        else:
            problem = window_problem(start, end, self.backends.now())
        if problem is not None:
            log.info("digest button refused: its window is %s", problem)
            return None
        return ask, start, end

    async def refresh(
        self, value: str, ts: str, user: str, groups: set[str], surface: DigestSurface, refuse: Refuse
    ) -> None:
        """Rebuild the same window and scope and update the same message (works on any replica). The digest is the
        channel's, whoever presses: built for its scope, and only by someone who may see all of it (issue 23);
        anyone else is told privately (``refuse``) and the message stays as it is; so is a forged window."""
        built = await self._for_channel(value, user, groups, refuse)
        if built is not None:
            await surface.update(ts, self.message(*built))

    async def show_all(
        self, value: str, ts: str, user: str, groups: set[str], surface: DigestSurface, refuse: Refuse
    ) -> None:
        """Every row of the digest in its thread: the channel's scope, as :meth:`refresh`."""
        built = await self._for_channel(value, user, groups, refuse)
        if built is not None:
            await self.rows(surface, built[1], ts)

    async def _for_channel(
        self, value: str, user: str, groups: set[str], refuse: Refuse
    ) -> tuple[DigestAsk, Digest] | None:
        """The digest a button's ``value`` names, built for the channel's scope; None (after ``refuse``) when the
        window is forged or out of bounds, or ``user`` may not see all of it (issue 23)."""
        window = self.window_of(value)
        if window is None:
            await refuse()
            return None
        ask, start, end = window
        digest = await self.build(ask, start=start, end=end)
        if not self.may_see_all(user, groups, digest):
            log.info("digest button refused: user %s may not see the digest's whole scope", user)
            await refuse()
            return None
        return ask, digest


#: How far past now a digest button's window may end (clocks of replicas apart).
WINDOW_SKEW = timedelta(minutes=5)


def window_problem(start: datetime | None, end: datetime | None, now: datetime) -> str | None:
    """What is wrong with a digest window from a button (None: nothing): it ends before it starts, is longer than
    :data:`~diagnosis.digests.MAX_SINCE`, starts before that long ago, or ends past ``now`` and
    :data:`WINDOW_SKEW`. A missing end is now, a missing start the default window."""
    if end is not None and end > now + WINDOW_SKEW:
        return f"in the future (ends {end:%Y-%m-%d %H:%M})"
    if start is not None and start < now - MAX_SINCE:
        return f"longer than {MAX_SINCE.days} days (starts {start:%Y-%m-%d %H:%M})"
    if start is not None and end is not None and end <= start:
        return "empty (it ends before it starts)"
    return None


def failing(failure: Any) -> str:
    """The status words of a scheduled digest whose last slot failed (empty when it did not): the error, the
    attempts and when it is tried again (issue 24)."""
    if not isinstance(failure, dict):
        return ""
    retry = datetime.fromtimestamp(float(failure.get("retry_at") or 0), tz=UTC)
    return (
        f"; *failing*: slot {escape(str(failure.get('slot')))} could not be posted "
        f"(`{escape(str(failure.get('error')))}`, {int(failure.get('attempts') or 0)} attempt(s)), "
        f"tried again at {retry:%Y-%m-%d %H:%M} UTC"
    )


def schedule_scope(schedule: Any) -> str:
    """``cluster dgx-prod, projects nlp, speech, every OSMO pool``: what a schedule's digests cover."""
    parts = [f"cluster {schedule.cluster}" if schedule.cluster else "every cluster"]
    parts.append("projects " + ", ".join(schedule.projects) if schedule.projects else "every project")
    pools = schedule.pools
    parts.append("pools " + ", ".join(pools) if pools else "every OSMO pool" if pools is None else "no OSMO pool")
    return ", ".join(parts)


def _posted(state: dict[str, Any]) -> dict[str, Any] | None:
    """The last digest a schedule posted (``ts``, ``slot``) from its state record: ``last_posted``, else the
    record of a slot that posted (``message_ts``) written before ``last_posted`` was kept."""
    posted = state.get("last_posted")
    if isinstance(posted, dict) and posted.get("ts"):
        return posted
    if state.get("message_ts"):
        return {"ts": state["message_ts"], "slot": state.get("last_slot")}
    return None


def last_posted(state: dict[str, Any], link: str | None = None) -> str:
    """``2026-11-28 09:00 UTC (<link|open>)``, or ``never`` (with the last slot when it had nothing to post)."""
    posted = _posted(state)
    if posted is None:
        slot = state.get("last_slot")
        return (
            f"never (last slot {escape(str(slot))}: nothing to post)" if state.get("failed") == 0 and slot else "never"
        )
    try:
        when = f"{datetime.fromtimestamp(float(posted['ts']), tz=UTC):%Y-%m-%d %H:%M} UTC"
    except (TypeError, ValueError):
        when = escape(str(posted.get("slot")))
    return f"{when} (<{link}|open>)" if link else when


async def _links(surface: Any, states: dict[str, Any] | None) -> dict[str, str]:
    """A link to each schedule's last posted digest (the surface's ``permalink`` when it has one)."""
    permalink = getattr(surface, "permalink", None)
    out: dict[str, str] = {}
    for name, state in (states or {}).items():
        posted = _posted(state) if isinstance(state, dict) else None
        if posted is not None and permalink is not None:
            out[name] = await permalink(str(posted["ts"]))
    return out
