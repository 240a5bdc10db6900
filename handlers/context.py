"""An :class:`~handlers.parsing.Ask` from what Bolt and the middleware put in the request's ``context``.

Bolt fills ``user_id``, ``team_id``, ``channel_id`` (and ``thread_ts`` where the payload has one) before any
middleware runs; the authorization middleware (:mod:`handlers.middleware`) adds ``user_groups``, the Slack user
groups of the policy the requester belongs to. Listeners build their ask from these instead of re-reading the
raw body, so who asked is decided once, the same way for every kind of request."""

from __future__ import annotations

from slack_bolt.context.async_context import AsyncBoltContext

from diagnosis.question import Question
from handlers.parsing import Ask, Source


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
