"""Cross-cutting concerns as global Bolt middleware: event dedup, per-user authorization, per-user
rate limit. Listeners stay thin."""

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
    """Requests that start a diagnosis: slash commands, mentions and our choice buttons."""
    if body.get("command"):
        return True
    if body.get("type") == "event_callback":
        return (body.get("event") or {}).get("type") == "app_mention"
    if body.get("type") == "block_actions":
        return any(str(a.get("action_id", "")).startswith("wd_choice") for a in body.get("actions") or [])
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


def install(app: AsyncApp, *, store: Any, policy: Any, rate_limit: int, spawn: Callable[..., Any]) -> None:
    async def turn_away(body: dict[str, Any], client: Any, text: str) -> BoltResponse:
        """Say ``text`` privately: the command's ack, or an ephemeral message for events and buttons."""
        if body.get("command"):
            return BoltResponse(status=200, body={"response_type": "ephemeral", "text": text})
        event = body.get("event") or {}
        channel = event.get("channel") or (body.get("channel") or {}).get("id")
        thread = event.get("thread_ts") or event.get("ts")
        respond_url = body.get("response_url")
        if channel:
            surface = SlackSurface(client, channel)

            async def send() -> None:
                try:
                    if respond_url:
                        from slack_sdk.webhook.async_client import AsyncWebhookClient

                        await AsyncWebhookClient(respond_url).send(
                            text=text, response_type="ephemeral", replace_original=False
                        )
                    else:
                        await surface.private(_user(body), text_message(text), thread)
                except Exception:
                    log.exception("could not tell the user")

            spawn(send(), name="turn-away")
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

    @app.middleware
    async def rate_limit_users(body: dict[str, Any], client: Any, next: Next) -> BoltResponse | None:
        if _costly(body) and not await store.allow(_team(body), _user(body), rate_limit):
            log.info("rate limited: user %s", _user(body))
            return await turn_away(body, client, RATE_LIMITED)
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
    return Ask(
        team=_team(body), user=_user(body), user_groups=set(context.get("user_groups") or []), **kwargs
    )
