"""'Was this right?' on every diagnosis card (issue 28): the *Right* / *Wrong* buttons and what they do.

*Right* records the vote and says so, privately. *Wrong* asks, privately (an ephemeral message), what it really
was: one button per category of the answer's system, *Not a failure* and *Wrong workload*, and a line of text
(an input in the same message; optional: typed before a choice it goes with the choice, sent on its own with
Enter it is added to the vote already given). One vote per person per answer; a later press replaces it.

A vote is free: these actions are not costly to the middleware (no rate limit, no in-flight slot); the work runs
in a tracked task after the ack. Every value names only the answer's reference (16 random hex characters); the
answer it names is read from the store and the access policy is checked against *that* answer's cluster and
project, as the card's other buttons check what they re-read: a forged or stale reference finds nothing, and a
person who may not see the workload is refused privately, with the same words as everywhere.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from handlers.blocks import Message, escape, plain, text_message
from handlers.card import RIGHT_ACTION, WRONG_ACTION, action_matcher
from handlers.context import ask_in, channel_of, user_groups
from handlers.parsing import Ask
from handlers.slack_surface import SlackSurface, outgoing

log = logging.getLogger(__name__)

PICK_ACTION = "wd_fb_pick"
NOTE_ACTION = "wd_fb_note"
NOTE_BLOCK = "wd_fb_note"
NOT_A_FAILURE = "not_a_failure"
WRONG_WORKLOAD = "wrong_workload"
_REF = re.compile(r"^[0-9a-f]{16}$")
GONE = "That answer is no longer kept for feedback: ask again, then vote on the new card."
TRY_AGAIN = "I could not record that just now: please try again."


class FeedbackDesk(Protocol):
    """Where answers and votes are kept (``bot.feedback_store.FeedbackStore``)."""

    async def keep_answer(self, record: dict[str, Any], world: dict[str, Any] | None) -> bool: ...

    async def answer(self, ref: str, *, world: bool = False) -> dict[str, Any] | None: ...

    async def vote(
        self, record: dict[str, Any], user: str, verdict: str, choice: str | None = None, note: str | None = None
    ) -> dict[str, Any] | None: ...

    async def note(self, record: dict[str, Any], user: str, note: str) -> bool: ...


def choices_of(system: str) -> list[tuple[str, str]]:
    """(value, label) of what *Wrong* offers for an answer of ``system``: its categories, then the two others."""
    from diagnosis.backends import REGISTRY

    backend = REGISTRY.get(system)
    entries = backend.categories() if backend is not None else {}
    out = [(c.value, plain(entry.title)[:75] or c.value) for c, entry in entries.items()]
    return [*out, (NOT_A_FAILURE, "Not a failure"), (WRONG_WORKLOAD, "Wrong workload")]


def choice_label(system: str, value: str | None) -> str:
    return next((label for v, label in choices_of(system) if v == value), value or "something else")


def wrong_message(record: dict[str, Any]) -> Message:
    """The private question after *Wrong*: what was it really (buttons), and an optional line of text."""
    ref = str(record["ref"])
    about = record.get("name") or record.get("workflow_id") or "this workload"
    said = record.get("category") or record.get("outcome")
    head = text_message(f"What was it really? I said *{escape(str(said))}* for `{escape(str(about))}`.").blocks
    buttons = [
        {
            "type": "button",
            "text": {"type": "plain_text", "text": label},
            "action_id": f"{PICK_ACTION}_{i}",
            "value": json.dumps({"r": ref, "v": value}, separators=(",", ":")),
        }
        for i, (value, label) in enumerate(choices_of(str(record.get("system"))))
    ]
    rows = [{"type": "actions", "block_id": f"wd_fb_choices_{n}", "elements": buttons[n : n + 10]} for n in (0, 10)]
    note = {
        "type": "input",
        "block_id": f"{NOTE_BLOCK}:{ref}",
        "dispatch_action": True,
        "optional": True,
        "label": {"type": "plain_text", "text": "A line more (optional: type it, then choose; or press Enter)"},
        "element": {
            "type": "plain_text_input",
            "action_id": NOTE_ACTION,
            "max_length": 500,
            "dispatch_action_config": {"trigger_actions_on": ["on_enter_pressed"]},
        },
    }
    blocks = [*head, *[r for r in rows if r["elements"]], note]
    return Message(text=f"What was it really? I said {said} for {about}.", blocks=blocks)


def note_in(body: dict[str, Any], ref: str) -> str | None:
    """The line typed in the note input of the message whose button was pressed (None: nothing typed)."""
    values = ((body.get("state") or {}).get("values") or {}).get(f"{NOTE_BLOCK}:{ref}") or {}
    text = (values.get(NOTE_ACTION) or {}).get("value")
    return str(text) if text and str(text).strip() else None


class Votes:
    """The votes of one person on one press: the answer found, the policy checked, the vote kept, the reply."""

    def __init__(self, doctor: Any, desk: FeedbackDesk) -> None:
        self.doctor = doctor
        self.desk = desk

    async def _allowed(self, ask: Ask, client: Any, record: dict[str, Any]) -> bool:
        """May ``ask.user`` see the workload the answer is about (its cluster by name and id, its project)?"""
        policy = self.doctor.policy
        if policy.subteams() and not ask.user_groups:
            try:
                ask.user_groups = set(await user_groups(policy, self.doctor.store, client, ask.user))
            except Exception:
                log.warning("could not read the user groups of %s", ask.user)
        clusters = {c for c in (record.get("cluster_name"), record.get("cluster_id")) if c}
        return bool(
            policy.allows(ask.user, clusters=clusters, project=record.get("project"), user_groups=ask.user_groups)
        )

    async def found(self, ask: Ask, client: Any, ref: str, tell: Callable[[Message], Awaitable[None]]) -> Any:
        """The answer ``ref`` names when the person may vote on it; else None, told why (privately)."""
        record = await self.desk.answer(ref) if _REF.match(ref) else None
        if record is None:
            await tell(text_message(GONE))
            return None
        if not await self._allowed(ask, client, record):
            log.info("feedback refused by policy: user %s", ask.user)
            await tell(text_message(self.doctor.refusal()))
            return None
        return record

    async def press(self, ask: Ask, client: Any, which: str, value: str, body: dict[str, Any], respond: Any) -> None:
        """One press of *Right*, *Wrong*, a choice after *Wrong*, or Enter in its note."""
        surface = SlackSurface(client, ask.channel, respond, asker=ask.user)

        async def tell(message: Message) -> None:
            await surface.private(ask.user, message, ask.thread_ts)

        async def replace(message: Message) -> None:  # the private question, answered: replaced by the reply
            if respond is None:
                await tell(message)
                return
            message = outgoing(message)
            await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=True)

        if which in (RIGHT_ACTION, WRONG_ACTION):
            record = await self.found(ask, client, value, tell)
            if record is None:
                return
            if which == WRONG_ACTION:
                await tell(wrong_message(record))
                return
            before = await self.desk.vote(record, ask.user, "right")
            await tell(text_message(_thanks("right", None, record, before)))
            return
        if which == NOTE_ACTION:
            ref = str((body.get("actions") or [{}])[0].get("block_id", "")).removeprefix(f"{NOTE_BLOCK}:")
            record = await self.found(ask, client, ref, replace)
            if record is None:
                return
            if not await self.desk.note(record, ask.user, value):
                await self.desk.vote(record, ask.user, "wrong", None, value)  # a note alone is a "Wrong"
            await replace(text_message(":memo: Thanks: your note is kept with your vote."))
            return
        pick = _pick(value)
        if pick is None:
            log.warning("malformed feedback choice value")
            return
        ref, choice = pick
        record = await self.found(ask, client, ref, replace)
        if record is None:
            return
        if choice not in {v for v, _ in choices_of(str(record.get("system")))}:
            log.warning("feedback choice %r is not one of that system's", choice)
            return
        before = await self.desk.vote(record, ask.user, "wrong", choice, note_in(body, ref))
        await replace(text_message(_thanks("wrong", choice, record, before)))


def _pick(value: str) -> tuple[str, str] | None:
    try:
        data = json.loads(value or "{}")
        return str(data["r"]), str(data["v"])
    except (ValueError, KeyError, TypeError):
        return None


def _thanks(verdict: str, choice: str | None, record: dict[str, Any], before: dict[str, Any] | None) -> str:
    changed = " (your earlier vote is replaced)" if before is not None else ""
    if verdict == "right":
        return f":thumbsup: Thanks: marked right{changed}."
    label = choice_label(str(record.get("system")), choice)
    return (
        f":thumbsdown: Thanks: marked wrong, it was *{escape(label)}*{changed}. The team can export it as a test case."
    )


def register(app: AsyncApp, doctor: Any, desk: FeedbackDesk, spawn: Callable[..., Any]) -> None:
    """The listeners of the feedback actions; each acks, then votes in a tracked task (no rate limit)."""
    votes = Votes(doctor, desk)

    @app.action(action_matcher((RIGHT_ACTION, WRONG_ACTION, NOTE_ACTION), numbered=(PICK_ACTION,)))
    async def on_feedback(
        ack: AsyncAck,
        body: dict[str, Any],
        action: dict[str, Any],
        client: AsyncWebClient,
        respond: AsyncRespond,
        context: AsyncBoltContext,
    ) -> None:
        await ack()
        channel = channel_of(context)
        if not channel:
            return
        ask = ask_in(context, source="button", thread_ts=context.get("thread_ts"))
        which = str(action.get("action_id"))
        which = PICK_ACTION if which.startswith(PICK_ACTION) else which
        value = str(action.get("value") or "")

        async def run() -> None:
            try:
                await votes.press(ask, client, which, value, body, respond)
            except Exception:
                log.exception("feedback could not be recorded")
                await SlackSurface(client, channel, respond).private(ask.user, text_message(TRY_AGAIN), ask.thread_ts)

        spawn(run(), name="feedback")
