"""The Bolt listeners: each acks (events are acked by Bolt), builds an :class:`~handlers.doctor.Ask`
and hands it to the :class:`~handlers.doctor.Doctor` in a tracked task, which first passes the rate
limit (``admit``, after the ack). Nothing else."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp

from diagnosis.question import Question
from handlers.blocks import CHOICE_ACTION, Message, escape, text_message
from handlers.card_buttons import on_card_button
from handlers.doctor import HELP, Doctor, QuestionError, is_help, parse_command, ref_id
from handlers.middleware import ask_from
from handlers.slack_surface import SlackSurface

log = logging.getLogger(__name__)
#: commands and buttons start their work this long after ``ack()``, so that synchronous set-up in the
#: work (client construction, imports) cannot hold back the ack response Bolt is about to send
AFTER_ACK = 0.02


Admit = Callable[[dict[str, Any], Any], Awaitable[bool]]


def register(
    app: AsyncApp,
    doctor: Doctor,
    spawn: Callable[..., Any],
    admit: Admit,
    command: str = "/diagnose",
) -> None:
    """``admit(body, client)`` (the rate limit) runs in the task, after the ack; False drops the request."""

    async def after_ack(body: dict[str, Any], client: Any, work: Callable[[], Awaitable[Any]], delay: float) -> None:
        await asyncio.sleep(delay)
        if await admit(body, client):
            await work()

    @app.command(command)
    async def diagnose_command(
        ack: Any, body: dict[str, Any], command: dict[str, Any], client: Any, respond: Any, context: Any
    ) -> None:
        text = command.get("text") or ""
        if is_help(text):
            await ack(response_type="ephemeral", text=HELP)
            return
        try:
            _, explicit = parse_command(text)
        except QuestionError as exc:
            await ack(response_type="ephemeral", text=f"I couldn't read that: {escape(str(exc))}")
            return
        await ack()
        ask = ask_from(body, context, channel=command["channel_id"], text=text, source="command", explicit=explicit)
        surface = SlackSurface(client, ask.channel, respond)
        spawn(after_ack(body, client, lambda: doctor.ask(ask, surface), AFTER_ACK), name="diagnose-command")

    @app.event("app_mention")
    async def on_mention(body: dict[str, Any], event: dict[str, Any], client: Any, context: Any) -> None:
        ask = ask_from(
            body,
            context,
            channel=event["channel"],
            text=event.get("text") or "",
            source="mention",
            thread_ts=event.get("thread_ts"),
            message_ts=event.get("ts"),
        )
        surface = SlackSurface(client, ask.channel)
        spawn(after_ack(body, client, lambda: doctor.ask(ask, surface), 0), name="diagnose-mention")

    @app.event("message")
    async def on_message(body: dict[str, Any], event: dict[str, Any], client: Any, context: Any) -> None:
        # only plain thread replies by people; mentions of the bot arrive as app_mention as well
        if event.get("subtype") or event.get("bot_id") or not event.get("thread_ts"):
            return
        text = event.get("text") or ""
        bot_user = context.get("bot_user_id")
        if bot_user and f"<@{bot_user}" in text:
            return
        ask = ask_from(
            body,
            context,
            channel=event["channel"],
            text=text,
            source="reply",
            thread_ts=event["thread_ts"],
            message_ts=event.get("ts"),
        )
        spawn(doctor.follow_up(ask, SlackSurface(client, ask.channel)), name="follow-up")

    @app.action(re.compile(rf"^{CHOICE_ACTION}_\d+$"))
    async def on_choice(
        ack: Any, body: dict[str, Any], action: dict[str, Any], client: Any, respond: Any, context: Any
    ) -> None:
        await ack()
        try:
            value = json.loads(action.get("value") or "{}")
            choice = (str(value["f"]), str(value["v"]))
        except (ValueError, KeyError, TypeError):
            log.warning("malformed choice button value")
            return
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        message = body.get("message") or {}
        thread = value.get("t") or message.get("thread_ts") or (body.get("container") or {}).get("thread_ts")
        if not channel or not thread:
            return
        ask = ask_from(body, context, channel=channel, text="", source="button", thread_ts=thread)
        surface = SlackSurface(client, channel, respond)

        async def accepted() -> None:
            # the buttons are answered: replace them so nobody presses them again
            if not message.get("ts"):
                return
            label = (action.get("text") or {}).get("text") or choice[1]
            kept = [
                b for b in message.get("blocks") or [] if b.get("block_id") not in ("wd_choices", "wd_choices_hint")
            ]
            note = text_message(f":white_check_mark: <@{ask.user}> chose `{escape(label)}`.")
            try:
                await surface.update(message["ts"], Message(text=note.text, blocks=kept + note.blocks))
            except Exception:
                log.warning("could not update the question message")

        async def run() -> None:
            if not await doctor.follow_up(ask, surface, choice=choice, on_accept=accepted):
                await surface.private(ask.user, text_message("This question has expired: please ask again."), thread)

        spawn(after_ack(body, client, run, AFTER_ACK), name="choice")

    @app.action(re.compile(r"^wd_digest_(?:refresh|thread|newest)$"))
    async def on_digest_button(
        ack: Any, body: dict[str, Any], action: dict[str, Any], client: Any, respond: Any, context: Any
    ) -> None:
        await ack()
        desk = doctor.digests
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        ts = (body.get("message") or {}).get("ts") or (body.get("container") or {}).get("message_ts")
        if desk is None or not channel or not ts:
            return
        ask = ask_from(body, context, channel=channel, text="", source="button", thread_ts=ts)
        surface = SlackSurface(client, channel, respond)
        value = str(action.get("value") or "")
        which = str(action.get("action_id"))

        async def run() -> None:
            try:
                if which == "wd_digest_refresh":
                    await desk.refresh(value, ts, ask.user, ask.user_groups, surface)
                elif which == "wd_digest_thread":
                    await desk.show_all(value, ts, ask.user, ask.user_groups, surface)
                else:
                    target = json.loads(value or "{}")
                    if target.get("s") == "osmo":
                        explicit = Question(workflow_id=str(target.get("id")))
                    else:
                        explicit = desk.newest_question(str(target.get("id")), target.get("c"))
                    asked = ask_from(
                        body, context, channel=channel, text="", source="button", thread_ts=ts, explicit=explicit
                    )
                    await doctor.ask(asked, surface)
            except Exception:
                log.exception("[ref %s] digest button failed", ref_id())
                await surface.private(ask.user, text_message("I could not do that just now: please try again."), ts)

        spawn(after_ack(body, client, run, AFTER_ACK), name="digest-button")

    @app.action(re.compile(r"^wd_card_(?:evidence|logs|rediagnose)$"))
    async def on_card_button_press(
        ack: Any, body: dict[str, Any], action: dict[str, Any], client: Any, respond: Any, context: Any
    ) -> None:
        await ack()
        channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id")
        message = body.get("message") or {}
        root = message.get("thread_ts") or message.get("ts") or (body.get("container") or {}).get("message_ts")
        if not channel or not root:
            return
        ask = ask_from(body, context, channel=channel, text="", source="button", thread_ts=root)
        surface = SlackSurface(client, channel, respond)
        which, value = str(action.get("action_id")), str(action.get("value") or "")

        async def run() -> None:
            try:
                await on_card_button(doctor, ask, surface, which, value)
            except Exception:
                log.exception("[ref %s] card button failed", ref_id())
                await surface.private(ask.user, text_message("I could not do that just now: please try again."), root)

        spawn(after_ack(body, client, run, AFTER_ACK), name="card-button")

    @app.action(re.compile(r"^wd_link_\d+$"))
    async def on_link(ack: Any) -> None:
        await ack()

    @app.error
    async def on_error(error: Exception, body: dict[str, Any]) -> None:
        log.error("[ref %s] unhandled error in a listener: %s", ref_id(), type(error).__name__, exc_info=error)
