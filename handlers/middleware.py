"""Cross-cutting concerns as global Bolt middleware, before the ack (they decide whether there is anything to do):
the event claim (the one place of event and message dedup, :mod:`handlers.claims`), per-user authorization, and the
bound on diagnoses in flight (``WD_MAX_IN_FLIGHT``, :mod:`handlers.shedding`: beyond it the asker is told "busy"). The
ack waits for Redis ``WD_ACK_REDIS_BUDGET`` seconds at most: a slower claim or user-group lookup is finished
after the ack, before the work. The per-user rate limit is a gate the listeners pass after the ack
(:class:`RateLimit`). Listeners stay thin."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse

from diagnosis import metrics
from handlers.blocks import CHOICE_ACTION, text_message
from handlers.card import CARD_PREFIX, REDIAGNOSE_ACTION
from handlers.claims import EventClaim
from handlers.context import user_groups
from handlers.digest_blocks import DIGEST_PREFIX, NEWEST_ACTION, REFRESH_ACTION
from handlers.messages import rate_limited, refusal_words
from handlers.parsing import Ask, is_help
from handlers.shedding import BUSY, CURRENT, DELIVERY, InFlight, Work
from handlers.shedding import current as current_work
from handlers.slack_http import BoundedRespond, BoundedWebhookClient
from handlers.slack_surface import SlackSurface

log = logging.getLogger(__name__)
Next = Callable[[], Awaitable[None]]
RATE_LIMITED = "You're asking faster than I can diagnose: please try again in"  # "… in 42 s."


def _costly(body: dict[str, Any]) -> bool:
    """Requests that start or read a diagnosis (authorised and bounded before any work): commands, mentions,
    choice, digest and card buttons."""
    if body.get("command"):
        return True
    if body.get("type") == "event_callback":
        return (body.get("event") or {}).get("type") == "app_mention"
    if body.get("type") == "block_actions":
        return any(
            str(a.get("action_id", "")).startswith((CHOICE_ACTION, DIGEST_PREFIX, CARD_PREFIX))
            for a in body.get("actions") or []
        )
    return False


#: Buttons that start a diagnosis again: Re-diagnose (past the cache), a digest's Refresh and Diagnose newest.
#: Choices (a follow-up's answer), Evidence, Logs and Show all are free (issue 21).
CHARGED_ACTIONS = (REDIAGNOSE_ACTION, REFRESH_ACTION, NEWEST_ACTION)


def _charged(body: dict[str, Any]) -> bool:
    """Buttons counted against the rate limit. Questions (commands, mentions, a new question in a thread) are
    counted by the doctor when their diagnosis starts (:meth:`handlers.doctor.Doctor.admit`): help and the
    answers to its follow-up questions are free."""
    if body.get("type") == "block_actions":
        return any(str(a.get("action_id", "")) in CHARGED_ACTIONS for a in body.get("actions") or [])
    return False


def _user(body: dict[str, Any]) -> str:
    if body.get("user_id"):
        return str(body["user_id"])
    user = body.get("user")
    if isinstance(user, dict):
        return str(user.get("id", ""))
    return str((body.get("event") or {}).get("user", ""))


def _team(body: dict[str, Any]) -> str:
    team = body.get("team_id") or body.get("team")
    if isinstance(team, dict):
        team = team.get("id")
    return str(team or "")


async def tell_privately(body: dict[str, Any], client: Any, text: str) -> None:
    """Say ``text`` to the requester only: through the request's ``response_url`` when it has one (commands,
    buttons), else as an ephemeral message in the channel (and thread) of the event. Never raises."""
    event = body.get("event") or {}
    channel = event.get("channel") or body.get("channel_id") or (body.get("channel") or {}).get("id")
    thread = event.get("thread_ts") or event.get("ts")
    respond_url = body.get("response_url")
    try:
        if respond_url:
            # bounded like every other body read (issue 22 §2): the cap and a wall clock
            await BoundedWebhookClient(respond_url).send(text=text, response_type="ephemeral", replace_original=False)
        elif channel:
            await SlackSurface(client, channel).private(_user(body), text_message(text), thread)
    except Exception:
        log.exception("could not tell the user")


class RateLimit:
    """The per-user rate limit (``limit`` requests a minute, in Redis) on requests that start a diagnosis.

    Listeners call :meth:`admit` in the request's task, after the ack: a Redis round trip (or a new Redis
    connection in a burst) before the ack would delay every ack. A refused request is told so privately."""

    def __init__(self, store: Any, limit: int) -> None:
        self.store = store
        self.limit = limit

    async def admit(self, body: dict[str, Any], client: Any) -> bool:
        if not _charged(body) or await self.store.allow(_team(body), _user(body), self.limit):
            return True
        log.info("rate limited: user %s", _user(body))
        await tell_privately(body, client, rate_limited(int(60 - time.time() % 60) + 1))
        return False


def claim_name(body: dict[str, Any]) -> str | None:
    """What an event is claimed by: a person's message by its type, channel and ts (Slack may deliver one message
    under two event ids), any other event by its event id, a slash command by its trigger id (issue 24: claimed
    and kept like an event); None for anything else."""
    if body.get("command") and body.get("trigger_id"):
        return f"cmd:{body['trigger_id']}"
    if body.get("type") != "event_callback":
        return None
    event = body.get("event") or {}
    if event.get("type") in ("app_mention", "message") and event.get("channel") and event.get("ts"):
        if not event.get("subtype"):
            return f"{event['type']}:{event['channel']}:{event['ts']}"
    event_id = body.get("event_id")
    return str(event_id) if event_id else None


def install(
    app: AsyncApp,
    *,
    store: Any,
    policy: Any,
    spawn: Callable[..., Any],
    settings: Any = None,
    in_flight: InFlight | None = None,
    claims: bool = True,
) -> None:
    """The global middleware, in order: the bounded ``respond``, the event claim (:mod:`handlers.claims`),
    authorization, the in-flight bound.

    ``settings`` (:class:`bot.settings.Settings`) gives ``event_lease``, ``ack_redis_budget`` and ``max_in_flight``;
    without it the defaults of the settings apply. ``claims=False`` (the ack tier of a job queue, issue 26) leaves
    the event claim and the in-flight bound to the worker that answers the request: the ack tier only enqueues it,
    and the queue bounds what waits (``WD_QUEUE_MAX``)."""
    lease = float(getattr(settings, "event_lease", 30.0))
    budget = float(getattr(settings, "ack_redis_budget", 0.2))
    slots = in_flight or InFlight(int(getattr(settings, "max_in_flight", 64)))
    if hasattr(store, "ack_budget"):
        store.ack_budget = budget  # the HTTP replay check (Store.claim) is on the ack path too
    _install_bounded_respond(app)
    _install_event_claim(app, store, lease, budget, claims)
    _reset_work_after_dispatch(app)
    _install_authorization(app, store, policy, spawn)
    if claims:
        _install_in_flight_bound(app, slots, spawn)


async def _turn_away(spawn: Callable[..., Any], body: dict[str, Any], client: Any, text: str) -> BoltResponse:
    """Say ``text`` privately: in the command's ack, else in a message of its own after the ack."""
    if body.get("command"):
        return BoltResponse(status=200, body={"response_type": "ephemeral", "text": text})
    spawn(tell_privately(body, client, text), name="turn-away")
    return BoltResponse(status=200, body="")


def _install_bounded_respond(app: AsyncApp) -> None:
    """Bolt's ``respond`` of every request reads the ``response_url``'s answer with the body cap and a wall clock
    (:class:`handlers.slack_http.BoundedRespond`): Bolt's own opens a session with neither."""

    @app.middleware
    async def bounded_respond(context: Any, next: Next) -> None:
        if context.response_url:
            client = context.client
            context["respond"] = BoundedRespond(
                response_url=context.response_url,
                proxy=getattr(client, "proxy", None),
                ssl=getattr(client, "ssl", None),
            )
        await next()


def _install_event_claim(app: AsyncApp, store: Any, lease: float, budget: float, claims: bool = True) -> None:
    """The event claim, first: a duplicate event is acked and dropped; every request gets its :class:`Work`. A
    worker's job that dispatched the request (:data:`handlers.shedding.DELIVERY`) is told the claim and the work."""

    @app.middleware
    async def dedup_events(body: dict[str, Any], client: Any, next: Next) -> BoltResponse | None:
        # the one place of message and event dedup (issue 10): an event (or command) is claimed here
        deadline = asyncio.get_running_loop().time() + budget
        event_id = claim_name(body) if claims else None
        delivery = DELIVERY.get()
        claim: EventClaim | None = None
        if event_id:
            claim = EventClaim(store, event_id, lease, body)  # the request kept until answered (a takeover)
            if delivery is not None:
                delivery.claim = claim
            if await claim.begin(budget) == "duplicate":
                return BoltResponse(status=200, body="")
        work = Work(claim, body, client)
        if delivery is not None:
            delivery.work = work
        work.deadline = deadline
        CURRENT.set(work)  # until the dispatch ends (below): the listener Bolt starts after the middleware inherits it
        await next()
        return None


def _reset_work_after_dispatch(app: AsyncApp) -> None:
    """Wrap the app's dispatch so that the request's :class:`Work` is reset (and told its listener started)."""
    dispatch = app.async_dispatch

    async def dispatch_with_work(req: Any) -> BoltResponse:
        # Bolt runs the middleware one after another (``next`` is not the rest of the chain) and the listener after
        # them all, so the request's Work, made current by ``dedup_events``, is reset here, once the listener runs
        token = CURRENT.set(None)
        try:
            return await dispatch(req)
        finally:
            work = CURRENT.get()
            CURRENT.reset(token)
            if work is not None:
                work.listener_started()

    app.async_dispatch = dispatch_with_work  # type: ignore[method-assign]


def _install_authorization(app: AsyncApp, store: Any, policy: Any, spawn: Callable[..., Any]) -> None:
    """Per-user authorization of costly requests, with the user groups found within the ack's Redis budget (a
    slower lookup makes the decision a gate of the work, after the ack)."""

    @app.middleware
    async def authorize(body: dict[str, Any], context: Any, client: Any, next: Next) -> BoltResponse | None:
        # a typed follow-up reply is not costly: its user groups are read after the ack, only once it is known to
        # answer a pending question (handlers.listeners on_message), not for every message in every thread
        if _costly(body):
            user = _user(body)
            work = current_work()
            left = max(0.0, (work.deadline if work is not None else 0.0) - asyncio.get_running_loop().time())
            groups, pending = await _groups_within(policy, store, client, user, left)
            context["user_groups"] = groups  # filled in place when the lookup finishes after the ack
            if pending is not None and work is not None:
                work.gates.append(_recheck(pending, groups, policy, body, client))
            elif not policy.allows(user, user_groups=groups):
                log.info("refused by policy: user %s has no access rule", user)
                return await _turn_away(spawn, body, client, refusal_words(policy))
        await next()
        return None


class _ShedLog:
    """The requests answered "busy", logged in one line a second in a burst, not one per request."""

    def __init__(self) -> None:
        self.at = 0.0
        self.count = 0

    def shed(self, slots: InFlight) -> None:
        self.count += 1
        now = asyncio.get_running_loop().time()
        if now - self.at >= 1.0:
            log.warning(
                "busy: %d request(s) answered 'try again' (%d in flight, WD_MAX_IN_FLIGHT=%d)",
                self.count,
                slots.count,
                slots.limit,
            )
            self.at, self.count = now, 0


def _install_in_flight_bound(app: AsyncApp, slots: InFlight, spawn: Callable[..., Any]) -> None:
    """The bound on diagnoses in flight: a costly request beyond it is told "busy"; the request's work holds its
    slot (left when the work ends)."""
    shed_log = _ShedLog()

    @app.middleware
    async def bound_in_flight(body: dict[str, Any], client: Any, next: Next) -> BoltResponse | None:
        # thread replies are not bounded: most are people talking to each other, and a "busy" in their
        # thread would be noise; the requests that start a diagnosis are (help, answered in the ack, is not: it held
        # a slot for the listener's grace, and 1,000 helps a second filled the bound)
        if _costly(body) and not (body.get("command") and is_help(str(body.get("text") or ""))):
            work = current_work()
            if not slots.try_enter():
                kind = "command" if body.get("command") else str(body.get("type") or "other")
                metrics.SHED.labels(kind).inc()
                shed_log.shed(slots)
                return await _turn_away(spawn, body, client, BUSY)
            if work is not None:
                work.slot = slots
            else:
                slots.leave()
        await next()
        return None


def _recheck(
    pending: asyncio.Task[set[str]], groups: set[str], policy: Any, body: dict[str, Any], client: Any
) -> Callable[[], Awaitable[bool]]:
    """A gate of the request's work: the user groups looked up after the ack, then the authorization decided
    with them (a refusal told privately, as before the ack)."""

    async def gate() -> bool:
        with contextlib.suppress(Exception):  # a failed lookup leaves the groups empty (logged by the lookup)
            await pending
        if policy.allows(_user(body), user_groups=groups):
            return True
        log.info("refused by policy: user %s has no access rule", _user(body))
        await tell_privately(body, client, refusal_words(policy))
        return False

    return gate


async def _groups_within(
    policy: Any, store: Any, client: Any, user: str, budget: float
) -> tuple[set[str], asyncio.Task[set[str]] | None]:
    """The user's groups when found within ``budget`` seconds, else an empty set that the returned lookup task
    fills when it finishes (after the ack)."""
    if not policy.subteams():
        return set(), None
    lookup = asyncio.get_running_loop().create_task(user_groups(policy, store, client, user))
    done, _ = await asyncio.wait({lookup}, timeout=budget)
    if done and lookup.exception() is None:
        return set(lookup.result()), None
    if done:
        return set(), None
    metrics.DEDUP_FALLBACKS.labels("slow_user_groups").inc()
    log.warning("user groups of %s not found within %.2f s: acking first, deciding after the ack", user, budget)
    groups: set[str] = set()

    def fill(task: asyncio.Task[set[str]]) -> None:
        if not task.cancelled() and task.exception() is None:
            groups.update(task.result())

    lookup.add_done_callback(fill)
    return groups, lookup


def ask_from(body: dict[str, Any], context: Any, **kwargs: Any) -> Ask:
    """An :class:`Ask` carrying the requester, team and the groups the middleware found."""
    groups = context.get("user_groups")
    # the middleware's own set, not a copy: a lookup that finished after the ack fills it in place
    user_groups = groups if isinstance(groups, set) else set(groups or [])
    return Ask(team=_team(body), user=_user(body), user_groups=user_groups, **kwargs)
