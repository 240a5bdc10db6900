"""The conversation around one question: Slack-agnostic glue between what people type and
:func:`diagnosis.answer.answer` (the one place that answers).

``/diagnose``, mentions, typed thread replies, choice buttons and the terminal twin all come
through :class:`Doctor`. It takes the :class:`~diagnosis.question.Question` read by
:mod:`handlers.parsing` (explicit values, then the text, then the channel's defaults), checks the
access policy, shows a "diagnosing…" message, asks the core through :class:`handlers.report_cache.Reports`
(the cache and the diagnoses in flight), checks the policy again against what was found, renders
the report within Slack's budget and, when the core needs input, keeps the follow-up in Redis
keyed by (team, channel, thread) so any replica can continue it. It never invents an id or
guesses a cluster: values come from the person, the channel defaults or the core's own choices.

Who hears what (issue 11): a report is public (the channel asked); help, errors and refusals go to the
asker only (an ephemeral message, or a slash command's ``response_url``). When an error or a refusal comes
after the public "diagnosing…" message, that message becomes a neutral line saying the asker was told
privately, the same words for both so the channel learns nothing about what was found.

OSMO workflow questions ("status of workflow sdg-render-7", "why is sdg-render-7 pending", "what
does policy-train-42 do", "list recent workflows") take the same path: the parser names the kind
and :func:`diagnosis.answer.answer` routes them. Requests that are not questions to diagnose ("digest …",
"watch <workflow>", "unwatch …", "watches") go to the command table given when the Doctor is built
(:class:`handlers.protocols.Command`: :class:`handlers.digests.DigestDesk`, :class:`handlers.watch.Watches`).

Where the messages go is a :class:`~handlers.protocols.Surface` (Slack Web API, or the terminal); the texts
are :mod:`handlers.messages`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from diagnosis.answer import Backends, answer
from diagnosis.question import Question, QuestionError
from diagnosis.report import Outcome, Report
from handlers import messages, replies
from handlers.blocks import Message, Rendered, render_report, text_message
from handlers.feedback_world import AnswerKeeper
from handlers.messages import HELP, REFUSAL
from handlers.parsing import (
    ASKING,
    Ask,
    Source,
    apply_choice,
    apply_reply,
    asked_about,
    bare_name,
    control_word,
    is_help,
    is_new_question,
    is_reply_form,
    missing_of,
    named_choice,
    parse_command,
    question_for,
    strip_mentions,
)
from handlers.protocols import AccessPolicy, Command, ConversationStore, Surface
from handlers.replies import ref_id
from handlers.report_cache import AnswerFn, Reports, question_key
from handlers.seen import ClusterNames, clusters_of, in_scope, seen_by

__all__ = [  # the names other modules (and tests) import from here; they live in the modules named above
    "HELP",
    "REFUSAL",
    "AnswerFn",
    "Ask",
    "Doctor",
    "QuestionError",
    "Source",
    "Surface",
    "apply_choice",
    "apply_reply",
    "control_word",
    "is_help",
    "is_new_question",
    "parse_command",
    "question_key",
    "ref_id",
    "strip_mentions",
]

log = logging.getLogger(__name__)
#: the rate limit's window (seconds): a fixed clock minute
RATE_WINDOW = 60

#: a ``/diagnose <one name>`` waits this long for its answer before the public "diagnosing…" message: a name
#: that exists nowhere is usually known by then, and is answered privately with nothing said in the channel
BARE_NAME_GRACE = 1.5
#: how many conversations this process remembers asking in (to answer a reply while Redis is away)
ASKED_LIMIT = 10_000

GroupsFn = Callable[[], Awaitable[set[str]]]


def names_nothing(report: Report) -> bool:
    """The core found no workload by the name asked anywhere it looked: not found in the project, or (no
    project given) no project of the cluster holds that name. A wrong project is another mistake."""
    if report.outcome == Outcome.NOT_FOUND:
        return not any(c.field == "project" for c in report.choices)
    return report.outcome == Outcome.NEEDS_INPUT and report.missing == ["project"] and not report.choices


def _short_pick(choices: list[dict[str, str]], text: str) -> bool:
    """A short reply ("what about dgx-staging?", "dgx-prod please") naming one offered choice answers the pending
    question; a longer one naming a workload of its own is a new question."""
    return len(text.split()) <= 4 and named_choice(choices, text) is not None


async def _fill_groups(ask: Ask, groups: GroupsFn | None) -> None:
    """Read the asker's user groups now when the request did not carry them (a typed reply)."""
    if groups is not None and not ask.user_groups:
        try:
            ask.user_groups = set(await groups())
        except Exception:
            log.warning("could not read the user groups of %s", ask.user)


def conversation_reports(
    store: ConversationStore,
    backends: Backends,
    answer_fn: AnswerFn | None = None,
    keeper: AnswerKeeper | None = None,
    spawn: Callable[[Coroutine[Any, Any, Any]], Any] | None = None,
) -> Reports:
    """The reports of a conversation (the cache and the diagnoses in flight), over ``backends`` that offer every
    listable answer of a follow-up as a button (issue 11 §2). ``answer_fn`` defaults to
    :func:`diagnosis.answer.answer` (fakes in unit tests); ``keeper`` keeps each answer a person can judge with its
    world (issue 28, :class:`bot.feedback_store.FeedbackStore`), built after the answer in a task ``spawn`` starts
    (the bot's detached tracked tasks: :class:`handlers.feedback_world.WorldLater`)."""
    offering = dataclasses.replace(backends, offer_choices=True) if dataclasses.is_dataclass(backends) else backends
    return Reports(store, offering, answer_fn or answer, keeper, spawn)


class Doctor:
    """Answers asks on a surface. ``answer_fn`` is :func:`diagnosis.answer.answer` (fakes in unit tests)."""

    def __init__(
        self,
        backends: Backends,
        store: ConversationStore,
        policy: AccessPolicy,
        *,
        answer_fn: AnswerFn | None = None,
        reports: Reports | None = None,
        conversation_ttl: int = 3600,
        rate_limit: int | None = None,
        digests: Any = None,
        commands: Sequence[Command] = (),
    ) -> None:
        self.reports = reports or conversation_reports(store, backends, answer_fn)
        self.backends = self.reports.backends
        self.store = store
        self.policy = policy
        self.conversation_ttl = conversation_ttl
        #: each cluster by its name and its UUID, for the policy's rules (issue 23)
        self.clusters = ClusterNames(self.backends)
        #: the digests of the channels (``handlers.digests.DigestDesk``, also its buttons'); None: not offered
        self.digests = digests
        #: the command table: requests handed over instead of diagnosed, asked in order (the digest desk first)
        self.commands: tuple[Command, ...] = tuple(c for c in (digests, *commands) if c is not None)
        #: diagnoses (and digests) a person may start a minute (issue 21: each counts once, when it starts; help,
        #: follow-ups and the Evidence / Logs buttons are free); None: no limit (the terminal)
        self.rate_limit = rate_limit
        #: conversations this process asked a follow-up in (key -> monotonic expiry): with Redis away, a reply
        #: there is told the question is lost instead of getting no answer (issue 15)
        self._asked: dict[tuple[str, ...], float] = {}

    @property
    def answer_fn(self) -> AnswerFn:
        return self.reports.answer_fn

    @property
    def _in_flight(self) -> dict[str, asyncio.Task[Report]]:
        return self.reports.in_flight

    # -- entry points ------------------------------------------------------------------------

    async def ask(self, ask: Ask, surface: Surface) -> None:
        """A new question (``/diagnose``, a mention, a line in the terminal)."""
        # message dedup (by event, channel and message ts) is the middleware's event claim (handlers.middleware)
        # a mention in a thread with a pending follow-up question: the mention may be its answer
        if ask.source == "mention" and ask.thread_ts and ask.thread_ts != ask.message_ts:
            if await self.follow_up(ask, surface, claimed=True, only_if_answers=True):
                return
        if await self._command(ask, surface, None):  # a digest, unwatch X, watches
            return
        try:
            if ask.source == "command" and is_help(ask.text) and ask.explicit is None:
                await self._reply(ask, surface, text_message(HELP), private=True)
                return
            question = question_for(ask, await self._defaults(ask))
        except QuestionError as exc:
            await self._reply(ask, surface, messages.could_not_read(exc), private=True)
            return
        named = question.workload_name or question.workload_id or question.workflow_id or question.candidates
        if not named and question.kind == Question.model_fields["kind"].default:
            # a plain question (no system's own kind such as a list or a watch) that names nothing: "/diagnose W P C"
            # names a workload (a candidate) even without a question word: it is diagnosed
            if not ASKING.search(question.text or ""):
                # not a question (a mistyped command): the help goes to the asker only
                await self._reply(ask, surface, text_message(messages.NOT_A_QUESTION), private=True)
                return
        if await self._command(ask, surface, question):  # watch X
            return
        if await self.admit(ask, surface):
            await self._run(ask, question, surface)

    async def _command(self, ask: Ask, surface: Surface, question: Question | None) -> bool:
        """Hand ``ask`` to the first command of the table that wants it; whether one did."""
        text = strip_mentions(ask.text)
        for command in self.commands:
            if command.wants(text, question):
                await command.run(self, ask, surface, question)
                return True
        return False

    async def admit(self, ask: Ask, surface: Surface) -> bool:
        """Count one diagnosis against the asker's rate limit as it starts; a refusal says when to retry."""
        if self.rate_limit is None:
            return True
        if await self.store.allow(ask.team, ask.user, self.rate_limit, RATE_WINDOW):
            return True
        log.info("rate limited: user %s", ask.user)
        wait = int(RATE_WINDOW - time.time() % RATE_WINDOW) + 1
        await self._reply(ask, surface, text_message(messages.rate_limited(wait)), private=True)
        return False

    async def follow_up(
        self,
        ask: Ask,
        surface: Surface,
        *,
        choice: tuple[str, str] | None = None,
        claimed: bool = False,
        only_if_answers: bool = False,
        on_accept: Callable[[], Awaitable[None]] | None = None,
        groups: GroupsFn | None = None,
        bot_thread: Callable[[], Awaitable[bool]] | None = None,
    ) -> bool:
        """Continue the conversation of ``ask.thread_ts`` with a typed reply or a button ``choice``.

        Returns False when the thread has no pending question (or the reply answers nothing and
        ``only_if_answers``), so the caller can treat the text as something else. ``groups`` finds the
        asker's user groups when the request did not carry them (a typed reply is not authorised by the
        middleware: it is only known to be a request once its conversation is found). ``bot_thread`` says whether
        the bot has posted in the thread; it is asked only when the store is down and the question was not
        asked by this process (another replica may have asked it: issue 15 §2)."""
        if not ask.thread_ts:
            return False
        key = ("conv", ask.team or "-", ask.channel, ask.thread_ts)
        conv = await self.store.take_json(*key)
        if not isinstance(conv, dict):
            return await self._no_conversation(ask, surface, key, only_if_answers, bot_thread)
        if conv.get("user") and ask.user != conv.get("user") and ask.source != "chat":
            # another person's words (or button press, or mention) in the thread are not an answer: the asker's
            # question stays pending, and nothing is run, refused or rewritten on their behalf (issue 23)
            await self._keep(key, conv)
            if ask.source == "button":
                await self._reply(ask, surface, messages.not_your_question(str(conv["user"])), private=True)
                return True
            return False
        self._asked.pop(key, None)
        await _fill_groups(ask, groups)
        question = Question.model_validate(conv.get("question") or {})
        choices: list[dict[str, str]] = conv.get("choices") or []
        missing: list[str] = conv.get("missing") or []
        updated: Question | None
        if choice is None and await self._not_an_answer(ask, surface, key, conv, question, missing, choices):
            return True
        if choice is not None:
            allowed = {(c["field"], c["value"]) for c in choices}
            if choice not in allowed:
                # only the choices the core offered can be picked: never an invented id
                await self._keep(key, conv)
                await self._reply(ask, surface, text_message(messages.CHOICE_GONE), private=True)
                return True
            updated = apply_choice(question, *choice)
        else:
            updated = apply_reply(question, missing, choices, ask.text)
        if updated is None:
            await self._keep(key, conv)
            if only_if_answers and not (choice is None and is_reply_form(ask.text)):
                return False  # a "yes" or "2" that picks nothing is still a reply: asked again, never a new question
            await self._reply(ask, surface, messages.still_need(missing, [c["label"] for c in choices]))
            return True
        if on_accept is not None:
            try:
                await on_accept()
            except Exception:
                log.exception("follow-up accept hook failed")
        await self._run(ask, updated, surface)
        return True

    async def _not_an_answer(
        self,
        ask: Ask,
        surface: Surface,
        key: tuple[str, ...],
        conv: dict[str, Any],
        question: Question,
        missing: list[str],
        choices: list[dict[str, str]],
    ) -> bool:
        """A typed reply that is not an answer to the pending question, handled: ``help`` (the question stays),
        a refusal or ``cancel`` (dropped), a digest (the question stays), a new question (it replaces the
        pending one). False when the reply is to be read as an answer."""
        control = control_word(ask.text)
        if control == "help":
            await self._keep(key, conv)  # the question is still pending
            await self._reply(ask, surface, messages.help_while_pending(asked_about(question), missing), private=True)
            return True
        if control == "cancel":
            await self._reply(ask, surface, messages.dropped(asked_about(question)))
            return True
        if any(command.wants(strip_mentions(ask.text), None) for command in self.commands):
            # a command ("digest", "what failed today?", "watches") in a thread with a pending question: the
            # command, and the question stays pending (never swallowed as its answer)
            await self._keep(key, conv)
            await self._command(ask, surface, None)
            return True
        if _short_pick(choices, ask.text) or not is_new_question(question, ask.text):
            return False
        # a new question in the thread replaces the pending one (the old one is dropped, not answered)
        try:
            fresh = question_for(ask, await self._defaults(ask, question))
        except QuestionError as exc:
            await self._reply(ask, surface, messages.could_not_read(exc), private=True)
            return True
        if await self._command(ask, surface, fresh):  # watch X
            return True
        if await self.admit(ask, surface):  # a new question in the thread is a new diagnosis
            await self._run(ask, fresh, surface)
        return True

    # -- the work ----------------------------------------------------------------------------

    async def reply(self, ask: Ask, surface: Surface, message: Message, private: bool = False) -> None:
        """Answer ``ask`` with a short message: to the asker only when ``private``, else in its thread."""
        await self._reply(ask, surface, message, private)

    def refusal(self) -> str:
        """The refusal's words (the same whatever was or was not found; the policy's own while it allows nobody)."""
        return messages.refusal_words(self.policy)

    async def _reply(self, ask: Ask, surface: Surface, message: Message, private: bool = False) -> None:
        # a mention's private answer is threaded under it, as a public one would be
        thread = ask.thread_ts or ask.message_ts
        try:
            if private:
                await surface.private(ask.user, message, thread)
            else:
                await surface.post(message, thread)
        except Exception:
            log.exception("could not post a reply in %s", ask.channel)

    def _allows(self, ask: Ask, clusters: set[str], project: str | None) -> bool:
        """The policy for the asker (with their user groups); empty cluster names are unknowns, not refusals."""
        return self.policy.allows(
            ask.user, clusters={c for c in clusters if c}, project=project, user_groups=ask.user_groups
        )

    def _allows_whole(self, ask: Ask, clusters: set[str], project: str | None) -> bool:
        """The asker may see the whole scope named (an unnamed cluster or project: every one)."""
        return self.policy.allows(ask.user, clusters=clusters, project=project, user_groups=ask.user_groups, whole=True)

    async def _asked_clusters(self, question: Question) -> set[str]:
        """The question's cluster by both its names (a rule may name it by either: issue 23)."""
        named = {question.cluster, question.cluster_id}
        if not getattr(self.policy, "enabled", False):
            return {c for c in named if c}
        return await self.clusters.both(named)

    def _seen(self, ask: Ask, asked: set[str], question: Question, report: Report) -> Report:
        """``report``'s choices and suggestions cut to the asker's scope (handlers.seen.in_scope)."""
        return in_scope(self.policy, ask.user, ask.user_groups, report, asked, question.project)

    async def _run(
        self, ask: Ask, question: Question, surface: Surface, fresh: bool = False, announce: bool = True
    ) -> None:
        """Answer ``question``: the policy, "diagnosing…", the report (or an error or refusal, privately), and
        the follow-up kept when the core asks for more. ``fresh`` (Re-diagnose) skips the cache; without
        ``announce`` (a button naming its target: nothing public before the report is authorized) the
        "diagnosing…" line goes to the asker only."""
        asked = await self._asked_clusters(question)
        if not self._allows(ask, asked, question.project):
            log.info("refused by policy: user %s", ask.user)
            await self._reply(ask, surface, messages.refusal(self.policy), private=True)
            return
        thread = ask.thread_ts or (ask.message_ts if ask.source == "mention" else None)
        progress = messages.diagnosing(asked_about(question), ask.user if ask.source == "command" else None)
        name = bare_name(ask)
        ref = ref_id()
        answering = asyncio.ensure_future(self._answer(question, fresh=fresh))
        progress_ts: str | None = None
        try:
            if name is not None:
                # a lone name may be a mistyped command: give the answer a moment before saying anything publicly
                await asyncio.wait({answering}, timeout=BARE_NAME_GRACE)
            quiet = (
                name is not None
                and answering.done()
                and (
                    answering.exception() is not None
                    or names_nothing(self._seen(ask, asked, question, answering.result()))
                )
            )
            if not announce:
                await self._reply(ask, surface, progress, private=True)
            elif not quiet:
                progress_ts = await self._progress(ask, surface, progress, thread)
            report = self._seen(ask, asked, question, await answering)
        except Exception as exc:
            await self._privately(ask, surface, progress_ts, thread, messages.failure(exc, ref))
            return
        finally:
            if not answering.done():
                answering.cancel()  # this asker was cancelled: the shared diagnosis itself is shielded
        if name is not None and names_nothing(report):
            await self._no_such_name(ask, surface, name, question, report, progress_ts)
            return
        if report.outcome == Outcome.NOT_FOUND and not self._allows_whole(
            ask, clusters_of(report, asked), question.project
        ):
            # "not found" in a scope the asker may not see all of would tell what exists there: the same refusal
            # as for a workload that exists but is not theirs
            log.info("refused by policy (not found in a scope not wholly allowed): user %s", ask.user)
            await self._privately(ask, surface, progress_ts, thread, messages.refusal(self.policy))
            return
        root = thread or progress_ts
        ident = report.identity
        seen = {ident.cluster_name or "", ident.cluster_id or ""} if ident is not None else set()
        if ident is not None and not self._allows(ask, seen, ident.project):
            log.info("refused by policy after resolving: user %s", ask.user)
            await self._privately(ask, surface, progress_ts, thread, messages.refusal(self.policy))
            return
        report = seen_by(self.policy, ask.user, ask.user_groups, report)  # other workloads: only the asker's named
        footer = f"asked by user {ask.user}" if ask.source != "chat" else None
        rendered = render_report(report, thread_ts=root, footer=footer)
        await self._show(surface, progress_ts, root, rendered.main)
        await self.spill(surface, rendered, root)
        if root and (report.outcome == Outcome.NEEDS_INPUT or report.choices):
            await self._remember(ask, question, report, root, surface)
        if root:
            await self._keep_scope(ask, root, question, report)

    # -- what a thread already gave (FORMAT.md "Questions": kept for every later reply in it) -----------------

    @staticmethod
    def _scope_key(ask: Ask, root: str) -> tuple[str, ...]:
        return ("scope", ask.team or "-", ask.channel, root)

    async def _keep_scope(self, ask: Ask, root: str, question: Question, report: Report) -> None:
        """Remember the cluster and project this thread named or resolved, for its later questions."""
        ident = report.identity
        scope: dict[str, str] = {}
        cluster_id = (ident.cluster_id if ident is not None else None) or question.cluster_id
        if cluster_id:
            scope["cluster_id"] = cluster_id
        elif question.cluster:
            scope["cluster"] = question.cluster
        project = (ident.project if ident is not None else None) or question.project
        if project:
            scope["project"] = project
        if scope:
            await self.store.put_json(self._scope_key(ask, root), scope, self.conversation_ttl)

    async def _defaults(self, ask: Ask, pending: Question | None = None) -> dict[str, str]:
        """The channel's defaults, overridden by what the thread already gave (a pending question's scope, else
        the scope remembered for the thread): an @-mention later in the thread keeps the cluster and project."""
        defaults = self.policy.defaults_for(ask.channel)
        scope: dict[str, str] = {}
        if pending is not None:
            if pending.cluster_id:
                scope["cluster_id"] = pending.cluster_id
            elif pending.cluster:
                scope["cluster"] = pending.cluster
            if pending.project:
                scope["project"] = pending.project
        elif ask.thread_ts and ask.thread_ts != ask.message_ts:
            kept = await self.store.get_json(*self._scope_key(ask, ask.thread_ts))
            if isinstance(kept, dict):
                scope = {k: str(v) for k, v in kept.items() if k in ("cluster_id", "cluster", "project") and v}
        if "cluster_id" in scope or "cluster" in scope:
            defaults.pop("cluster_id", None)
            defaults.pop("cluster", None)
        return {**defaults, **scope}

    async def _progress(self, ask: Ask, surface: Surface, progress: Message, thread: str | None) -> str | None:
        try:
            return await surface.post(progress, thread)
        except Exception:
            log.exception("could not post the diagnosing message in %s", ask.channel)
            return None

    async def _privately(
        self, ask: Ask, surface: Surface, progress_ts: str | None, thread: str | None, message: Message
    ) -> None:
        """Tell the asker only (an error, a refusal); the public "diagnosing…" message, if any, becomes a
        neutral line. A surface no one else reads (the terminal: ``shared = False``) simply shows the message."""
        if not getattr(surface, "shared", True):
            await self._show(surface, progress_ts, thread, message)
            return
        await self._reply(ask, surface, message, private=True)
        if progress_ts:
            try:
                await surface.update(progress_ts, messages.answered_privately())
            except Exception:
                log.exception("could not update the diagnosing message in %s", ask.channel)

    async def _no_such_name(
        self, ask: Ask, surface: Surface, name: str, question: Question, report: Report, progress_ts: str | None
    ) -> None:
        """``/diagnose <name>`` naming nothing: private help with the closest names, nothing in the channel."""
        log.info("no workload named %r: answered privately as a mistyped command", name)
        suggestions = [c.value for c in report.choices if c.field in ("workload_name", "workload")]
        where = f"in project {question.project}" if question.project else None
        await self._privately(ask, surface, progress_ts, None, messages.no_such_name(name, suggestions, where))

    async def _show(self, surface: Surface, progress_ts: str | None, root: str | None, message: Message) -> None:
        await replies.show(surface, progress_ts, root, message)

    async def spill(self, surface: Surface, rendered: Rendered, root: str | None) -> None:
        """Post ``rendered``'s thread replies and snippets in the thread ``root`` (:func:`handlers.replies.spill`);
        also used by the card buttons."""
        await replies.spill(surface, rendered, root)

    async def _remember(self, ask: Ask, question: Question, report: Report, root: str, surface: Surface) -> None:
        conv = {
            "question": question.model_dump(),
            "missing": missing_of(report),
            "choices": [c.model_dump() for c in report.choices],
            "user": ask.user,
        }
        key = ("conv", ask.team or "-", ask.channel, root)
        self._note_asked(key)
        saved = await self.store.put_json(key, conv, self.conversation_ttl)
        if not saved:
            log.warning("follow-up for %s/%s not remembered (state store unavailable)", ask.channel, root)
            try:
                await surface.post(text_message(messages.CANT_KEEP), root)
            except Exception:
                log.exception("could not post a note")

    def _note_asked(self, key: tuple[str, ...]) -> None:
        now = time.monotonic()
        if len(self._asked) >= ASKED_LIMIT:
            self._asked = {k: t for k, t in self._asked.items() if t > now}
            while len(self._asked) >= ASKED_LIMIT:
                self._asked.pop(next(iter(self._asked)))  # the oldest first (insertion order)
        self._asked.pop(key, None)
        self._asked[key] = now + self.conversation_ttl

    async def _keep(self, key: tuple[str, ...], conv: dict[str, Any]) -> None:
        """Put the pending question back (it was taken to be answered, and is still pending)."""
        await self.store.put_json(key, conv, self.conversation_ttl)
        self._note_asked(key)

    async def _no_conversation(
        self,
        ask: Ask,
        surface: Surface,
        key: tuple[str, ...],
        only_if_answers: bool,
        bot_thread: Callable[[], Awaitable[bool]] | None,
    ) -> bool:
        """No pending question was found for the thread: False (the text is something else), unless the store is
        down and the thread holds one of the bot's questions, when the asker is told privately to ask again."""
        if ask.source == "reply" and not only_if_answers and await self._lost_here(key, bot_thread):
            await self._reply(ask, surface, text_message(messages.CONVERSATION_LOST), private=True)
            return True
        return False

    async def _lost_here(self, key: tuple[str, ...], bot_thread: Callable[[], Awaitable[bool]] | None) -> bool:
        """The store could not be read and the thread is one of the bot's conversations: asked by this process,
        or (any replica) a thread the bot has posted in."""
        if self._lost(key):
            return True
        if not self.store.down or bot_thread is None:
            return False
        try:
            return await bot_thread()
        except Exception:  # Slack unreachable too: nothing is known about the thread, so nothing is said
            log.warning("could not read the thread %s to tell a lost conversation", key[-1])
            return False

    def _lost(self, key: tuple[str, ...]) -> bool:
        """A follow-up was asked in this conversation (by this process) and the store could not be read."""
        expiry = self._asked.get(key)
        return bool(self.store.down) and expiry is not None and expiry > time.monotonic()

    # -- the core, through the cache ------------------------------------------------------------

    async def _answer(self, question: Question, fresh: bool = False) -> Report:
        """The report for ``question`` (:meth:`handlers.report_cache.Reports.answer`: cached, shared, or new)."""
        return await self.reports.answer(question, fresh=fresh)

    async def aclose(self) -> None:
        """Cancel the diagnoses still in flight (at shutdown, once their askers are drained or cancelled)."""
        await self.reports.aclose()
