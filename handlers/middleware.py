"""Cross-cutting concerns: event dedup and per-user authorization as global Bolt middleware (before
the ack: they decide whether there is anything to do), and the per-user rate limit as a gate the
listeners pass after the ack (:class:`RateLimit`: the ack never waits for Redis). Listeners stay thin."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse

from handlers.blocks import text_message
from handlers.doctor import REFUSAL, Ask
from handlers.slack_surface import SlackSurface

log = logging.getLogger(__name__)
Next = Callable[[], Awaitable[None]]
RATE_LIMITED = "You're asking faster than I can diagnose: please wait a minute and try again."


def _costly(body: dict[str, Any]) -> bool:
    """Requests that start or read a diagnosis: commands, mentions, choice, digest and card buttons."""
    if body.get("command"):
        return True
    if body.get("type") == "event_callback":
        return (body.get("event") or {}).get("type") == "app_mention"
    if body.get("type") == "block_actions":
        return any(
            str(a.get("action_id", "")).startswith(("wd_choice", "wd_digest", "wd_card"))
            for a in body.get("actions") or []
        )
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
            from slack_sdk.webhook.async_client import AsyncWebhookClient

            await AsyncWebhookClient(respond_url).send(text=text, response_type="ephemeral", replace_original=False)
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
        if not _costly(body) or await self.store.allow(_team(body), _user(body), self.limit):
            return True
        log.info("rate limited: user %s", _user(body))
        await tell_privately(body, client, RATE_LIMITED)
        return False


def install(app: AsyncApp, *, store: Any, policy: Any, spawn: Callable[..., Any]) -> None:
    async def turn_away(body: dict[str, Any], client: Any, text: str) -> BoltResponse:
        """Say ``text`` privately: in the command's ack, else in a message of its own after the ack."""
        if body.get("command"):
            return BoltResponse(status=200, body={"response_type": "ephemeral", "text": text})
        spawn(tell_privately(body, client, text), name="turn-away")
        return BoltResponse(status=200, body="")

    @app.middleware
    async def dedup_events(body: dict[str, Any], next: Next) -> BoltResponse | None:
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if event_id and not await store.claim(f"evt:{event_id}"):
            log.info("duplicate event %s ignored", event_id)
            return BoltResponse(status=200, body="")
        await next()
        return None

    @app.middleware
    async def authorize(body: dict[str, Any], context: Any, client: Any, next: Next) -> BoltResponse | None:
        if _costly(body):
            user = _user(body)
            groups = await _user_groups(policy, store, client, user)
            context["user_groups"] = sorted(groups)
            if not policy.allows(user, user_groups=groups):
                log.info("refused by policy: user %s has no access rule", user)
                return await turn_away(body, client, REFUSAL)
        await next()
        return None


async def _user_groups(policy: Any, store: Any, client: Any, user: str) -> set[str]:
    """Slack user groups (S…) named by the policy that ``user`` belongs to (members cached 10 minutes)."""
    found: set[str] = set()
    for group in sorted(policy.subteams()):
        members = await store.get_json("usergroup", group)
        if members is None:
            try:
                resp = await client.usergroups_users_list(usergroup=group)
                members = list(resp.get("users") or [])
            except Exception:
                log.warning("cannot list members of user group %s", group)
                members = []
            await store.put_json(("usergroup", group), members, 600)
        if user in members:
            found.add(group)
    return found


def ask_from(body: dict[str, Any], context: Any, **kwargs: Any) -> Ask:
    """An :class:`Ask` carrying the requester, team and the groups the middleware found."""
    return Ask(team=_team(body), user=_user(body), user_groups=set(context.get("user_groups") or []), **kwargs)
