"""An :class:`~handlers.parsing.Ask` from what Bolt and the middleware put in the request's ``context``.

Bolt fills ``user_id``, ``team_id``, ``channel_id`` (and ``thread_ts`` where the payload has one) before any
middleware runs; the authorization middleware (:mod:`handlers.middleware`) adds ``user_groups``, the Slack user
groups of the policy the requester belongs to. Listeners build their ask from these instead of re-reading the
raw body, so who asked is decided once, the same way for every kind of request."""

from __future__ import annotations

import json
import logging
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext

from diagnosis.question import Question
from handlers.parsing import Ask, Source

log = logging.getLogger(__name__)


def ask_in(
    context: AsyncBoltContext,
    *,
    source: Source,
    text: str = "",
    channel: str | None = None,
    thread_ts: str | None = None,
    message_ts: str | None = None,
    explicit: Question | None = None,
) -> Ask:
    """The ask of this request: the requester, team and user groups from ``context``; ``channel`` defaults to
    the request's channel."""
    return Ask(
        team=str(context.team_id or ""),
        channel=channel or str(context.channel_id or ""),
        user=str(context.user_id or ""),
        text=text,
        source=source,
        thread_ts=thread_ts,
        message_ts=message_ts,
        explicit=explicit,
        # the middleware's own set, not a copy: a lookup that finished after the ack fills it in place
        user_groups=g if isinstance(g := context.get("user_groups"), set) else set(g or []),
    )


def channel_of(context: AsyncBoltContext) -> str | None:
    """The request's channel (a command's, an event's, a button's message's), or None."""
    return str(context.channel_id) if context.channel_id else None


async def user_groups(policy: Any, store: Any, client: Any, user: str) -> set[str]:
    """Slack user groups (S…) named by the policy that ``user`` belongs to (members cached 10 minutes in Redis and
    a minute in process memory: most requests need no Redis round trip before their ack)."""
    found: set[str] = set()
    for group in sorted(policy.subteams()):
        local = store.key("usergroup-local", group)
        raw = store.memory.get(local)
        members = json.loads(raw) if raw else await store.get_json("usergroup", group)
        if members is None:
            try:
                resp = await client.usergroups_users_list(usergroup=group)
                members = list(resp.get("users") or [])
            except Exception:
                # not cached: one failed lookup must not refuse the group's members for ten minutes
                log.warning("cannot list members of user group %s", group)
                continue
            await store.put_json(("usergroup", group), members, 600)
        if not raw:
            store.memory.set(local, json.dumps(members), 60)
        if user in members:
            found.add(group)
    return found
