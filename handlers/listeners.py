"""The Bolt listeners: each acks (events are acked by Bolt), builds an :class:`~handlers.parsing.Ask`
from what Bolt and the middleware put in ``context`` (:func:`handlers.context.ask_in`: the requester, team,
channel and user groups) and hands it to the :class:`~handlers.doctor.Doctor` in a tracked task, which
first passes the rate limit (``admit``, after the ack). Nothing else."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from diagnosis.backends import backend_of
from diagnosis.question import QuestionError
from handlers import messages
from handlers.blocks import CHOICE_ACTION, LINK_ACTION, Message, escape, text_message
from handlers.card import CARD_ACTIONS, action_matcher
from handlers.card_buttons import on_card_button
from handlers.context import ask_in, channel_of, user_groups
from handlers.digest_blocks import DIGEST_ACTIONS, REFRESH_ACTION, THREAD_ACTION
from handlers.doctor import Ask, Doctor, ref_id
from handlers.messages import EXPIRED, HELP
from handlers.outgoing import clean_text
from handlers.parsing import is_help, parse_command
from handlers.slack_surface import SlackSurface

log = logging.getLogger(__name__)
#: commands and buttons start their work this long after ``ack()``, so that synchronous set-up in the
#: work (client construction, imports) cannot hold back the ack response Bolt is about to send
AFTER_ACK = 0.02
TRY_AGAIN = "I could not do that just now: please try again."


Admit = Callable[[dict[str, Any], Any], Awaitable[bool]]
Body = dict[str, Any]


@dataclass(frozen=True)
class _Wiring:
    """What the listeners hand their work to: the doctor, the task spawner and the rate limit (``admit``)."""

    doctor: Doctor
    spawn: Callable[..., Any]
    admit: Admit

    def after_ack(
        self, body: Body, client: Any, work: Callable[[], Awaitable[Any]], delay: float, *, name: str
    ) -> None:
        """Run ``work`` in a tracked task ``delay`` seconds after the ack, once the rate limit admits it."""
        self.spawn(self._admitted(body, client, work, delay), name=name)

    async def _admitted(self, body: Body, client: Any, work: Callable[[], Awaitable[Any]], delay: float) -> None:
        await asyncio.sleep(delay)
        if await self.admit(body, client):
            await work()


def register(
    app: AsyncApp,
    doctor: Doctor,
    spawn: Callable[..., Any],
    admit: Admit,
    command: str = "/diagnose",
) -> None:
    """``admit(body, client)`` (the rate limit) runs in the task, after the ack; False drops the request.

    Listeners are registered per surface, in the order Bolt matches them: the slash command, the events,
    the buttons, then the error handler."""
    wiring = _Wiring(doctor, spawn, admit)
    _register_command(app, wiring, command)
    _register_events(app, wiring)
    _register_actions(app, wiring)
    _register_error_handler(app)


def _register_command(app: AsyncApp, wiring: _Wiring, command: str) -> None:
    """The slash command: help and unreadable questions are answered in the ack, the rest diagnosed after it."""
    doctor = wiring.doctor

    @app.command(command)
    async def diagnose_command(
        ack: AsyncAck,
        body: Body,
        command: dict[str, Any],
        client: AsyncWebClient,
        respond: AsyncRespond,
        context: AsyncBoltContext,
    ) -> None:
        text = command.get("text") or ""
        if is_help(text):
            await ack(response_type="ephemeral", text=HELP)
            return
        try:
            _, explicit = parse_command(text)
        except QuestionError as exc:
            # an ack's body is not a Web API post: cleaned here as every posted text is (handlers.outgoing)
            await ack(response_type="ephemeral", text=clean_text(f"I couldn't read that: {escape(str(exc))}"))
            return
        await ack()
        ask = ask_in(context, text=text, source="command", explicit=explicit)
        surface = SlackSurface(client, ask.channel, respond, asker=ask.user)
        wiring.after_ack(body, client, lambda: doctor.ask(ask, surface), AFTER_ACK, name="diagnose-command")


def _register_events(app: AsyncApp, wiring: _Wiring) -> None:
    """Mentions of the bot (diagnosed) and thread replies by people (follow-ups to a pending question)."""
    doctor = wiring.doctor

    @app.event("app_mention")
    async def on_mention(body: Body, event: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext) -> None:
        ask = ask_in(
            context,
            text=event.get("text") or "",
            source="mention",
            thread_ts=event.get("thread_ts"),
            message_ts=event.get("ts"),
        )
        surface = SlackSurface(client, ask.channel, asker=ask.user)
        wiring.after_ack(body, client, lambda: doctor.ask(ask, surface), 0, name="diagnose-mention")

    @app.event("message")
    async def on_message(body: Body, event: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext) -> None:
        # only plain thread replies by people; mentions of the bot arrive as app_mention as well
        if event.get("subtype") or event.get("bot_id") or not event.get("thread_ts"):
            return
        text = event.get("text") or ""
        bot_user = context.bot_user_id
        if bot_user and f"<@{bot_user}" in text:
            return
        ask = ask_in(context, text=text, source="reply", thread_ts=event["thread_ts"], message_ts=event.get("ts"))

        async def groups() -> set[str]:
            # a typed reply is not a costly request to the middleware, so it carries no user groups: they are
            # read once the reply is known to answer a pending question (issue 15: group-authorised users)
            return await user_groups(doctor.policy, doctor.store, client, ask.user)

        async def bot_thread() -> bool:
            # asked only while the state store is down: has the bot posted in this thread (a question another
            # replica asked)? A read of Slack, never a write.
            # (the bot's newest message there asks something: chatter in an answered thread is not a lost reply)
            replies = await client.conversations_replies(channel=ask.channel, ts=event["thread_ts"], limit=200)
            mine = [
                m
                for m in replies.get("messages") or []
                if (bot_user and m.get("user") == bot_user) or (context.bot_id and m.get("bot_id") == context.bot_id)
            ]
            return bool(mine) and messages.asks_something(str(mine[-1].get("text") or ""))

        wiring.spawn(
            doctor.follow_up(
                ask, SlackSurface(client, ask.channel, asker=ask.user), groups=groups, bot_thread=bot_thread
            ),
            name="follow-up",
        )


def _register_actions(app: AsyncApp, wiring: _Wiring) -> None:
    """The buttons: question choices, digest buttons, card buttons and link buttons (acked only)."""
    _register_choice_buttons(app, wiring)
    _register_digest_buttons(app, wiring)
    _register_card_buttons(app, wiring)

    @app.action(action_matcher(numbered=(LINK_ACTION,)))
    async def on_link(ack: AsyncAck) -> None:
        await ack()


def _register_choice_buttons(app: AsyncApp, wiring: _Wiring) -> None:
    """A choice button answers the pending question of its thread (or says privately that it expired)."""
    doctor = wiring.doctor

    @app.action(action_matcher(numbered=(CHOICE_ACTION,)))
    async def on_choice(
        ack: AsyncAck,
        body: Body,
        action: dict[str, Any],
        client: AsyncWebClient,
        respond: AsyncRespond,
        context: AsyncBoltContext,
    ) -> None:
        await ack()
        try:
            value = json.loads(action.get("value") or "{}")
            choice = (str(value["f"]), str(value["v"]))
        except (ValueError, KeyError, TypeError):
            log.warning("malformed choice button value")
            return
        channel = channel_of(context)
        message: dict[str, Any] = body.get("message") or {}  # the buttons' message: replaced once answered
        thread = value.get("t") or context.get("thread_ts")
        if not channel or not thread:
            return
        ask = ask_in(context, source="button", thread_ts=thread)
        surface = SlackSurface(client, channel, respond, asker=ask.user)

        async def accepted() -> None:
            await _mark_chosen(surface, message, ask.user, action, choice[1])

        async def run() -> None:
            if not await doctor.follow_up(ask, surface, choice=choice, on_accept=accepted):
                await surface.private(ask.user, text_message(EXPIRED), thread)

        wiring.after_ack(body, client, run, AFTER_ACK, name="choice")


async def _mark_chosen(
    surface: SlackSurface, message: dict[str, Any], user: str, action: dict[str, Any], value: str
) -> None:
    """The buttons are answered: replace them (in their ``message``) so nobody presses them again, with a note of
    the pressed button's label (its ``value`` when it has none)."""
    if not message.get("ts"):
        return
    label = (action.get("text") or {}).get("text") or value
    kept = [b for b in message.get("blocks") or [] if b.get("block_id") not in ("wd_choices", "wd_choices_hint")]
    note = text_message(f":white_check_mark: <@{user}> chose `{escape(label)}`.")
    try:
        await surface.update(message["ts"], Message(text=note.text, blocks=kept + note.blocks))
    except Exception:
        log.warning("could not update the question message")


def _register_digest_buttons(app: AsyncApp, wiring: _Wiring) -> None:
    """A digest's buttons: refresh it, list it all in its thread, or diagnose its newest workload."""
    doctor = wiring.doctor

    @app.action(action_matcher(DIGEST_ACTIONS))
    async def on_digest_button(
        ack: AsyncAck,
        body: Body,
        action: dict[str, Any],
        client: AsyncWebClient,
        respond: AsyncRespond,
        context: AsyncBoltContext,
    ) -> None:
        await ack()
        desk = doctor.digests
        channel = channel_of(context)
        ts = _message_ts(body)
        if desk is None or not channel or not ts:
            return
        ask = ask_in(context, source="button", thread_ts=ts)
        surface = SlackSurface(client, channel, respond, asker=ask.user)
        value = str(action.get("value") or "")
        which = str(action.get("action_id"))

        async def run() -> None:
            try:
                await _press_digest_button(doctor, desk, context, ask, surface, which, value, ts)
            except Exception:
                log.exception("[ref %s] digest button failed", ref_id())
                await surface.private(ask.user, text_message(TRY_AGAIN), ts)

        wiring.after_ack(body, client, run, AFTER_ACK, name="digest-button")


async def _press_digest_button(
    doctor: Doctor,
    desk: Any,
    context: AsyncBoltContext,
    ask: Ask,
    surface: SlackSurface,
    which: str,
    value: str,
    ts: str,
) -> None:
    """What the digest button ``which`` (its ``value``) of the digest message ``ts`` does."""

    async def refuse() -> None:  # the digest is the channel's: one who may not see all of it is told privately
        await surface.private(ask.user, text_message(doctor.refusal()), ts)

    if which == REFRESH_ACTION:
        await desk.refresh(value, ts, ask.user, ask.user_groups, surface, refuse)
    elif which == THREAD_ACTION:
        await desk.show_all(value, ts, ask.user, ask.user_groups, surface, refuse)
    else:
        # "Diagnose newest": the row's system says which question diagnoses it (handlers.digest_blocks builds it)
        target = json.loads(value or "{}")
        explicit = backend_of(target.get("s")).row_question(str(target.get("id")), target.get("c"))
        await doctor.ask(ask_in(context, source="button", thread_ts=ts, explicit=explicit), surface)


def _register_card_buttons(app: AsyncApp, wiring: _Wiring) -> None:
    """A diagnosis card's buttons (evidence, logs, re-diagnose): :func:`handlers.card_buttons.on_card_button`."""
    doctor = wiring.doctor

    @app.action(action_matcher(CARD_ACTIONS))
    async def on_card_button_press(
        ack: AsyncAck,
        body: Body,
        action: dict[str, Any],
        client: AsyncWebClient,
        respond: AsyncRespond,
        context: AsyncBoltContext,
    ) -> None:
        await ack()
        channel = channel_of(context)
        root = context.get("thread_ts") or _message_ts(body)  # the card's thread, or the card itself
        if not channel or not root:
            return
        ask = ask_in(context, source="button", thread_ts=root)
        surface = SlackSurface(client, channel, respond, asker=ask.user)
        which, value = str(action.get("action_id")), str(action.get("value") or "")

        async def run() -> None:
            try:
                await on_card_button(doctor, ask, surface, which, value)
            except Exception:
                log.exception("[ref %s] card button failed", ref_id())
                await surface.private(ask.user, text_message(TRY_AGAIN), root)

        wiring.after_ack(body, client, run, AFTER_ACK, name="card-button")


def _register_error_handler(app: AsyncApp) -> None:
    @app.error
    async def on_error(error: Exception, body: Body) -> None:
        log.error("[ref %s] unhandled error in a listener: %s", ref_id(), type(error).__name__, exc_info=error)


def _message_ts(body: Body) -> str | None:
    """The ts of the message whose button was pressed (Bolt's context has its thread, not the message)."""
    ts = (body.get("message") or {}).get("ts") or (body.get("container") or {}).get("message_ts")
    return str(ts) if ts else None
