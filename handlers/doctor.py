"""The conversation around one question: Slack-agnostic glue between what people type and
:func:`diagnosis.answer.answer` (the one place that answers).

``/diagnose``, mentions, typed thread replies, choice buttons and the terminal twin all come
through :class:`Doctor`. It builds the :class:`~diagnosis.question.Question` (explicit values,
then the text, then the channel's defaults), checks the access policy, shows a "diagnosing…"
message, asks the core (or the cache), checks the policy again against what was found, renders
the report within Slack's budget and, when the core needs input, keeps the follow-up in Redis
keyed by (team, channel, thread) so any replica can continue it. It never invents an id or
guesses a cluster: values come from the person, the channel defaults or the core's own choices.

OSMO workflow questions ("status of workflow sdg-render-7", "why is sdg-render-7 pending", "what
does policy-train-42 do", "list recent workflows") take the same path: the parser names the kind
and :func:`diagnosis.answer.answer` routes them. "watch <workflow>" is handed to :attr:`Doctor.watches`
(:class:`handlers.watch.Watches`) when the bot has one and OSMO is configured.

Where the messages go is a :class:`Surface` (Slack Web API, or the terminal).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from diagnosis import metrics
from diagnosis.answer import Backends, BackendUnavailable, answer
from diagnosis.config import ConfigError
from diagnosis.logs import set_ref
from diagnosis.question import UUID_RE, Question, QuestionError, parse_text
from diagnosis.report import Choice, Outcome, Report
from handlers.blocks import (
    Message,
    Overflow,
    Rendered,
    Snippet,
    escape,
    inline,
    render_report,
    spill,
    text_message,
)
from handlers.digests import is_digest

log = logging.getLogger(__name__)

Source = Literal["command", "mention", "reply", "button", "chat"]
AnswerFn = Callable[[Question, Backends], Awaitable[Report]]

TERMINAL_PHASES = {"failed", "crashed", "stopped", "completed", "succeeded"}
CHOICE_FIELDS = {"cluster_id", "cluster", "project", "workload_id", "workload_name", "workload"}
_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}")
_ASKING = re.compile(
    r"(?i)\b(why|what|fail|failed|crash|crashed|killed|stopped|stuck|pending|crashloop|imagepull|diagnose|"
    r"happened|broke|died|error)\b|[0-9a-f]{8}-[0-9a-f]{4}-"
)
CACHE_TERMINAL_TTL = 7 * 86400
POINTER_TTL = 600
NON_TERMINAL_TTL = 30

REFUSAL = (
    "Sorry, you are not allowed to diagnose workloads in that cluster or project. Ask your platform team for access."
)
HELP = (
    "*Workload Doctor* explains why a Run:ai workload or an OSMO workflow failed (read-only).\n"
    "• `/diagnose <workload name or id> [project=P] [cluster=C] [lookback=7d]`\n"
    "• or mention me: _why did train-7 fail in project nlp on cluster dgx-prod?_, "
    "_what killed train-7?_, _why is train-7 CrashLoopBackOff?_, _train-7 stopped, what happened?_\n"
    "• OSMO: `/diagnose status of workflow sdg-render-7`, _why is sdg-render-7 pending?_, "
    "_what does policy-train-42 do?_, _list recent workflows_\n"
    "• `/diagnose watch sdg-render-7 [every 30s]`: I post each state change in a thread until it ends; "
    "`/diagnose watches` lists the channel's watches, `/diagnose unwatch sdg-render-7` stops one.\n"
    "If something is missing (cluster, project, which workload) I ask in the thread; reply there or "
    "press a button."
)


class Surface(Protocol):
    """Where replies go. ``post`` returns the message id (Slack ``ts``) or None."""

    async def post(self, message: Message, thread_ts: str | None = None) -> str | None: ...

    async def update(self, ts: str, message: Message) -> None: ...

    async def private(self, user: str, message: Message, thread_ts: str | None = None) -> None: ...

    async def upload(self, snippet: Snippet, thread_ts: str | None = None) -> bool: ...


@dataclass
class Ask:
    """One request from a person. ``thread_ts`` is the thread to answer in (None: a new root message);
    ``message_ts`` the person's own message (dedup by channel and ts)."""

    team: str
    channel: str
    user: str
    text: str
    source: Source
    thread_ts: str | None = None
    message_ts: str | None = None
    explicit: Question | None = None
    user_groups: set[str] = field(default_factory=set)


def ref_id() -> str:
    ref = secrets.token_hex(3)
    set_ref(ref)  # this task's log records carry it (diagnosis.logs)
    return ref


def strip_mentions(text: str) -> str:
    return _MENTION.sub(" ", text or "").strip()


def parse_command(text: str) -> tuple[bool, Question]:
    """``/diagnose`` arguments: ``help``, or a workload name/id, ``key=value`` options and free text."""
    raw = strip_mentions(text)
    if raw.lower() in ("", "help", "-h", "--help", "?"):
        return True, Question()
    explicit: dict[str, Any] = {}
    rest: list[str] = []
    aliases = {
        "project": "project",
        "cluster": "cluster",
        "cluster_id": "cluster_id",
        "lookback": "lookback",
        "workload": "workload_name",
        "workload_id": "workload_id",
        "intent": "intent",
    }
    for token in raw.split():
        key, sep, value = token.partition("=")
        if sep and key.lower() in aliases and value:
            explicit[aliases[key.lower()]] = value
        else:
            rest.append(token)
    if "cluster" in explicit and UUID_RE.fullmatch(explicit["cluster"]):
        explicit["cluster_id"] = explicit.pop("cluster").lower()
    if explicit.get("intent") not in (None, "terminal", "current"):
        raise QuestionError("intent must be terminal or current")
    if len(rest) == 1 and _TOKEN.fullmatch(rest[0]) and "workload_name" not in explicit:
        if UUID_RE.fullmatch(rest[0]):
            explicit["workload_id"] = rest[0].lower()
        else:
            explicit["workload_name"] = rest[0]
    explicit["text"] = raw
    return False, Question.model_validate(explicit)


def is_help(text: str) -> bool:
    return strip_mentions(text).lower() in ("", "help", "-h", "--help", "?")


def _question_for(ask: Ask, defaults: dict[str, str]) -> Question:
    text = strip_mentions(ask.text)
    question = parse_text(text)
    question.text = text or None
    if ask.explicit is not None:
        question = ask.explicit.merged(question)
    if not (question.cluster or question.cluster_id or question.cluster_hint):
        if defaults.get("cluster_id"):
            question.cluster_id = defaults["cluster_id"]
        elif defaults.get("cluster"):
            question.cluster = defaults["cluster"]
    if not question.project and defaults.get("project"):
        question.project = defaults["project"]
    question.lookback_delta()  # a bad lookback is bad input, said before any work
    return question


def _names(question: Question) -> str:
    if question.kind == "osmo_list" and not question.workflow_id:
        return "recent workflows"
    return question.workload_name or question.workload_id or question.workflow_id or "your workload"


def apply_choice(question: Question, field_name: str, value: str) -> Question:
    """Fill one parameter from a choice or a reply; cluster values replace each other."""
    data = question.model_dump()
    if field_name == "workload":
        field_name = "workload_id" if UUID_RE.fullmatch(value) else "workload_name"
    if field_name in ("cluster", "cluster_id"):
        data.update(cluster=None, cluster_id=None, cluster_hint=None)
        if field_name == "cluster" and UUID_RE.fullmatch(value):
            field_name = "cluster_id"
    if field_name == "workload_id":
        value = value.lower()
    data[field_name] = value
    return Question.model_validate(data)


_SLOT_RE = re.compile(
    r"(?i)\b(project|cluster|cluster_id|workload|workload_id|name)\s*(?:[=:]\s*|\s+(?:is\s+)?)([A-Za-z0-9][A-Za-z0-9._-]*)"
)
_PAIR_RE = re.compile(
    r"(?i)^([A-Za-z0-9][A-Za-z0-9._-]*)\s+(?:on|in|at|@|/)\s+(?:cluster\s+)?([A-Za-z0-9][A-Za-z0-9._-]*)$"
)
CONTROL_WORDS = {
    "help": "help",
    "?": "help",
    "cancel": "cancel",
    "stop": "cancel",
    "nevermind": "cancel",
    "never mind": "cancel",
}


def control_word(text: str) -> str | None:
    """``help`` or ``cancel`` when a reply is one of those words (said to a pending question)."""
    return CONTROL_WORDS.get(strip_mentions(text).strip().strip("`'\".!").lower())


def is_new_question(question: Question, text: str) -> bool:
    """A reply that is a question of its own ("why did bert-ft fail?"): it names a workload other than the one
    pending, or a workload when none was named, in the words of a question."""
    reply = strip_mentions(text)
    if len(reply.split()) < 3 or not _ASKING.search(reply):
        return False
    parsed = parse_text(reply)
    named = parsed.workload_name or parsed.workload_id or (parsed.candidates[0] if parsed.candidates else None)
    if named is None:
        return False
    return named.lower() not in {(question.workload_name or "").lower(), (question.workload_id or "").lower()}


def apply_reply(question: Question, missing: list[str], choices: list[dict[str, str]], text: str) -> Question | None:
    """A typed answer to a follow-up question, or None when it fills nothing (issue 11 §2: slot filling).

    The reply fills the slots it names (``project P cluster C``, ``cluster=C project=P``, ``P on C``, a UUID) and
    otherwise only the slots that were asked: a one-word reply fills the one slot asked; when several were asked it
    is checked against what exists (a project or cluster of that name), else taken for the workload."""
    reply = strip_mentions(text).strip().strip("`'\".")
    if not reply:
        return None
    low = reply.lower()
    if low.isdigit() and 1 <= int(low) <= len(choices):
        c = choices[int(low) - 1]
        return apply_choice(question, c["field"], c["value"])
    for c in choices:
        if low in (c["label"].lower(), c["value"].lower()):
            return apply_choice(question, c["field"], c["value"])
    changed = question
    filled = False
    rest = reply
    for m in _SLOT_RE.finditer(reply):
        key, value = m.group(1).lower(), m.group(2).strip(".")
        if value.lower() in {"is", "the", "on", "in"}:
            continue
        if key in ("cluster", "cluster_id"):
            changed = apply_choice(changed, "cluster", value)
        elif key == "project":
            changed = apply_choice(changed, "project", value)
        else:
            changed = apply_choice(changed, "workload", value)
        filled = True
        rest = rest.replace(m.group(0), " ")
    if filled:
        return changed
    uuid = UUID_RE.search(reply)
    if uuid:
        value = uuid.group(0).lower()
        if "cluster" in missing and (not question.workload_id or "workload" not in missing):
            # a UUID answering "which cluster?" is the cluster (resolution re-checks it against the clusters)
            changed = apply_choice(changed, "cluster_id", value)
            changed = changed.model_copy(update={"uuids": [value, *(u for u in changed.uuids if u != value)]})
        else:
            changed = apply_choice(changed, "workload_id", value)
        return changed
    pair = _PAIR_RE.match(reply)
    if pair and ("project" in missing or "cluster" in missing):
        first, second = pair.group(1), pair.group(2)
        if "project" in missing or not question.project:
            changed = apply_choice(changed, "project", first)
        changed = apply_choice(changed, "cluster", second)
        return changed
    single = bool(_TOKEN.fullmatch(reply))
    if not single:
        parsed = parse_text(reply)
        if parsed.project and not question.project:
            changed, filled = apply_choice(changed, "project", parsed.project), True
        if parsed.cluster:
            changed, filled = apply_choice(changed, "cluster", parsed.cluster), True
        if "workload" in missing and (parsed.workload_name or parsed.workload_id):
            changed = apply_choice(changed, "workload", parsed.workload_id or parsed.workload_name or "")
            filled = True
        if not filled and parsed.scopes and ("project" in missing or "cluster" in missing):
            changed = changed.model_copy(update={"scopes": parsed.scopes})
            filled = True
        return changed if filled else None
    asked = [m for m in missing if m in ("cluster", "project", "workload")]
    if len(asked) == 1:
        return apply_choice(changed, asked[0], reply)
    # several slots asked, one word: the control plane decides what it names (a project, a cluster), else it is the
    # workload when that was asked
    update: dict[str, Any] = {"scopes": [reply]}
    if "workload" in asked and not question.workload_name:
        update["candidates"] = [reply.lower()]
        update["workload_name"] = None
    return changed.model_copy(update=update)


def _missing_of(report: Report) -> list[str]:
    if report.missing:
        return list(report.missing)
    out: list[str] = []
    for c in report.choices:
        name = {"cluster_id": "cluster", "cluster": "cluster", "project": "project"}.get(c.field, "workload")
        if name not in out:
            out.append(name)
    return out or ["workload"]


class Doctor:
    """Answers asks on a surface. ``answer_fn`` is :func:`diagnosis.answer.answer` (fakes in unit tests)."""

    def __init__(
        self,
        backends: Backends,
        store: Any,
        policy: Any,
        *,
        answer_fn: AnswerFn | None = None,
        conversation_ttl: int = 3600,
    ) -> None:
        # a conversation offers every listable answer of a follow-up as a button (issue 11 §2)
        self.backends = (
            dataclasses.replace(backends, offer_choices=True) if dataclasses.is_dataclass(backends) else backends
        )
        self.store = store
        self.policy = policy
        self.answer_fn: AnswerFn = answer_fn or answer
        self.conversation_ttl = conversation_ttl
        #: starts "watch <workflow>" (``handlers.watch.Watches``); None: a watch is answered as a status
        self.watches: Any = None
        #: answers "digest …" (``handlers.digests.DigestDesk``); None: digests are not offered
        self.digests: Any = None
        #: diagnoses in progress by question key: identical questions asked meanwhile share one
        self._in_flight: dict[str, asyncio.Task[Report]] = {}

    # -- entry points ------------------------------------------------------------------------

    async def ask(self, ask: Ask, surface: Surface) -> None:
        """A new question (``/diagnose``, a mention, a line in the terminal)."""
        if ask.message_ts and not await self.store.claim(f"msg:{ask.channel}:{ask.message_ts}"):
            log.info("duplicate delivery of %s/%s ignored", ask.channel, ask.message_ts)
            return
        # a mention in a thread with a pending follow-up question: the mention may be its answer
        if ask.source == "mention" and ask.thread_ts and ask.thread_ts != ask.message_ts:
            if await self.follow_up(ask, surface, claimed=True, only_if_answers=True):
                return
        if self.digests is not None and is_digest(strip_mentions(ask.text)):
            await self._digest(ask, surface)
            return
        command = getattr(self.watches, "command", None)  # unwatch X, watches (handlers.watch)
        if command is not None and await command(ask, surface):
            return
        try:
            if ask.source == "command" and is_help(ask.text) and ask.explicit is None:
                await self._reply(ask, surface, text_message(HELP), private=True)
                return
            question = _question_for(ask, self.policy.defaults_for(ask.channel))
        except QuestionError as exc:
            await self._reply(ask, surface, text_message(f"I couldn't read that: {escape(str(exc))}"), private=True)
            return
        if not (question.workload_name or question.workload_id or question.workflow_id) and question.kind == "runai":
            if not _ASKING.search(question.text or ""):
                # not a question (a mistyped command): the help goes to the asker only
                await self._reply(
                    ask, surface, text_message("I answer questions about failed workloads.\n" + HELP), private=True
                )
                return
        if question.kind == "osmo_watch" and self.watches is not None and self.backends.osmo is not None:
            await self.watches.start(ask, question, surface)
            return
        await self._run(ask, question, surface)

    async def follow_up(
        self,
        ask: Ask,
        surface: Surface,
        *,
        choice: tuple[str, str] | None = None,
        claimed: bool = False,
        only_if_answers: bool = False,
        on_accept: Callable[[], Awaitable[None]] | None = None,
    ) -> bool:
        """Continue the conversation of ``ask.thread_ts`` with a typed reply or a button ``choice``.

        Returns False when the thread has no pending question (or the reply answers nothing and
        ``only_if_answers``), so the caller can treat the text as something else."""
        if not ask.thread_ts:
            return False
        key = ("conv", ask.team or "-", ask.channel, ask.thread_ts)
        conv = await self.store.take_json(*key)
        if not isinstance(conv, dict):
            return False
        if not claimed and ask.message_ts and not await self.store.claim(f"msg:{ask.channel}:{ask.message_ts}"):
            await self.store.put_json(key, conv, self.conversation_ttl)
            return True
        question = Question.model_validate(conv.get("question") or {})
        choices: list[dict[str, str]] = conv.get("choices") or []
        missing: list[str] = conv.get("missing") or []
        updated: Question | None
        control = control_word(ask.text) if choice is None else None
        if control == "help":
            await self.store.put_json(key, conv, self.conversation_ttl)  # kept: the question is still pending
            need = " and ".join(missing) or "an answer"
            await self._reply(
                ask,
                surface,
                text_message(
                    HELP + f"\n\n_Still waiting for the {escape(need)} of `{inline(_names(question))}`: reply here "
                    "with it (or press a button), or say `cancel`._"
                ),
                private=True,
            )
            return True
        if control == "cancel":
            await self._reply(
                ask, surface, text_message(f"OK, I dropped the question about `{inline(_names(question))}`.")
            )
            return True
        if choice is None and is_new_question(question, ask.text):
            # a new question in the thread replaces the pending one (the old one is dropped, not answered)
            try:
                fresh = _question_for(ask, self.policy.defaults_for(ask.channel))
            except QuestionError as exc:
                await self._reply(ask, surface, text_message(f"I couldn't read that: {escape(str(exc))}"), True)
                return True
            await self._run(ask, fresh, surface)
            return True
        if choice is not None:
            allowed = {(c["field"], c["value"]) for c in choices}
            if choice not in allowed:
                # only the choices the core offered can be picked: never an invented id
                await self.store.put_json(key, conv, self.conversation_ttl)
                await self._reply(
                    ask, surface, text_message("That choice is no longer offered; ask again."), private=True
                )
                return True
            updated = apply_choice(question, *choice)
        else:
            updated = apply_reply(question, missing, choices, ask.text)
        if updated is None:
            await self.store.put_json(key, conv, self.conversation_ttl)
            if only_if_answers:
                return False
            need = " and ".join(missing) or "an answer"
            listed = ", ".join(f"`{inline(c['label'])}`" for c in choices[:10])
            hint = f" One of: {listed}." if listed else ""
            await self._reply(
                ask,
                surface,
                text_message(
                    f"I still need the {escape(need)}: reply in this thread with it "
                    f"(for example `project nlp cluster dgx-prod`).{hint} Say `help` or `cancel`."
                ),
            )
            return True
        if on_accept is not None:
            try:
                await on_accept()
            except Exception:
                log.exception("follow-up accept hook failed")
        await self._run(ask, updated, surface)
        return True

    # -- the work ----------------------------------------------------------------------------

    async def reply(self, ask: Ask, surface: Surface, message: Message, private: bool = False) -> None:
        """Answer ``ask`` with a short message: privately for commands and buttons when ``private``."""
        await self._reply(ask, surface, message, private)

    def refusal(self) -> str:
        return _refusal()

    async def report_in_thread(
        self,
        question: Question,
        surface: Surface,
        root: str | None,
        *,
        footer: str | None = None,
        fresh: bool = False,
    ) -> Report | None:
        """Answer ``question`` and post the report in the thread ``root`` (a watch's status and final
        report). ``fresh`` skips the cache. Errors become the same short messages as for a question."""
        ref = ref_id()
        try:
            report = await self._answer(question, fresh=fresh)
        except Exception as exc:
            await self._show(surface, None, root, _failure_message(exc, ref))
            return None
        rendered = render_report(report, thread_ts=root, footer=footer)
        await self._show(surface, None, root, rendered.main)
        await self.spill(surface, rendered, root)
        return report

    async def _digest(self, ask: Ask, surface: Surface) -> None:
        """``digest …``: a digest of the asker's channel, cut to what the asker may see (handlers.digests)."""
        try:
            await self.digests.on_demand(ask, surface, lambda message: self._reply(ask, surface, message, private=True))
        except (ConfigError, BackendUnavailable) as exc:
            await self._reply(ask, surface, text_message(f"I could not build the digest: {escape(str(exc))}"), True)
        except Exception as exc:
            ref = ref_id()
            log.exception("[ref %s] digest failed", ref)
            await self._reply(ask, surface, _failure_message(exc, ref), private=True)

    async def _reply(self, ask: Ask, surface: Surface, message: Message, private: bool = False) -> None:
        try:
            if private and ask.source in ("command", "button"):
                await surface.private(ask.user, message, ask.thread_ts)
            else:
                await surface.post(message, ask.thread_ts or ask.message_ts)
        except Exception:
            log.exception("could not post a reply in %s", ask.channel)

    async def _run(self, ask: Ask, question: Question, surface: Surface, fresh: bool = False) -> None:
        if not self.policy.allows(
            ask.user,
            clusters={question.cluster} if question.cluster else set(),
            project=question.project,
            user_groups=ask.user_groups,
        ):
            log.info("refused by policy: user %s", ask.user)
            await self._reply(ask, surface, text_message(escape(_refusal())), private=True)
            return
        thread = ask.thread_ts or (ask.message_ts if ask.source == "mention" else None)
        name = inline(_names(question))
        progress = text_message(f":hourglass_flowing_sand: Diagnosing `{name}`… (read-only)")
        if ask.source == "command":
            progress = text_message(f":hourglass_flowing_sand: Diagnosing `{name}` for <@{ask.user}>… (read-only)")
        try:
            progress_ts = await surface.post(progress, thread)
        except Exception:
            log.exception("could not post the diagnosing message in %s", ask.channel)
            progress_ts = None
        root = thread or progress_ts
        ref = ref_id()
        try:
            report = await self._answer(question, fresh=fresh)
        except Exception as exc:
            # the message names no detail (those go to the log under ``ref``): it replaces "diagnosing…" in place
            await self._show(surface, progress_ts, root, _failure_message(exc, ref))
            return
        ident = report.identity
        if ident is not None and not self.policy.allows(
            ask.user,
            clusters={c for c in (ident.cluster_name, ident.cluster_id) if c},
            project=ident.project,
            user_groups=ask.user_groups,
        ):
            log.info("refused by policy after resolving: user %s", ask.user)
            # the refusal replaces the "diagnosing…" message: it reveals nothing about what was found
            await self._show(surface, progress_ts, root, text_message(escape(_refusal())))
            return
        if report.choices:
            report = report.model_copy(update={"choices": self._allowed_choices(ask, report.choices)})
        footer = f"asked by user {ask.user}" if ask.source != "chat" else None
        rendered = render_report(report, thread_ts=root, footer=footer)
        await self._show(surface, progress_ts, root, rendered.main)
        await self.spill(surface, rendered, root)
        if root and (report.outcome == Outcome.NEEDS_INPUT or report.choices):
            await self._remember(ask, question, report, root, surface)

    def _allowed_choices(self, ask: Ask, choices: list[Choice]) -> list[Choice]:
        out = []
        for c in choices:
            if c.field == "project" and not self.policy.allows(ask.user, project=c.value, user_groups=ask.user_groups):
                continue
            if c.field == "cluster" and not self.policy.allows(
                ask.user, clusters={c.value}, user_groups=ask.user_groups
            ):
                continue
            if c.field == "cluster_id" and not self.policy.allows(
                ask.user, clusters={c.value, c.label}, user_groups=ask.user_groups
            ):
                continue  # the clusters offered are the ones the asker may diagnose in
            out.append(c)
        return out

    async def _show(self, surface: Surface, progress_ts: str | None, root: str | None, message: Message) -> None:
        try:
            if progress_ts:
                await surface.update(progress_ts, message)
            else:
                await surface.post(message, root)
        except Exception:
            log.exception("could not post the answer")

    async def spill(self, surface: Surface, rendered: Rendered, root: str | None) -> None:
        """Post ``rendered``'s thread replies and snippets in the thread ``root`` (a failed upload becomes thread
        replies: nothing is silently dropped). Also used by the card buttons."""
        for message in rendered.thread:
            try:
                await surface.post(message, root)
            except Exception:
                log.exception("could not post a thread reply")
        for snippet in rendered.snippets:
            ok = False
            try:
                ok = await surface.upload(snippet, root)
            except Exception:
                log.exception("could not upload snippet %s", snippet.title)
            if not ok:
                # never silently dropped: fall back to as many thread replies as it takes
                extra = Rendered(main=Message(text=""))
                spill(Overflow(snippet.title, snippet.content), extra, max_chunks=10_000)
                for message in extra.thread:
                    try:
                        await surface.post(message, root)
                    except Exception:
                        log.exception("could not post a thread reply")

    async def _remember(self, ask: Ask, question: Question, report: Report, root: str, surface: Surface) -> None:
        conv = {
            "question": question.model_dump(),
            "missing": _missing_of(report),
            "choices": [c.model_dump() for c in report.choices],
            "user": ask.user,
        }
        saved = await self.store.put_json(("conv", ask.team or "-", ask.channel, root), conv, self.conversation_ttl)
        if not saved:
            log.warning("follow-up for %s/%s not remembered (state store unavailable)", ask.channel, root)
            note = (
                "I can't keep this conversation right now: please ask again with everything in one message, "
                "e.g. `/diagnose train-7 project=nlp cluster=dgx-prod`."
            )
            try:
                await surface.post(text_message(note), root)
            except Exception:
                log.exception("could not post a note")

    # -- the core, through the cache ------------------------------------------------------------

    async def _answer(self, question: Question, fresh: bool = False) -> Report:
        """The report for ``question``: from the cache, or from the one diagnosis in progress for the same
        question in this process (a channel asking about one failed workload at once costs the cluster's API
        one diagnosis), or from a new one. ``fresh`` (a watch's status) skips the cache and never joins.
        Raises what :func:`diagnosis.answer.answer` raises."""
        qkey = _question_key(question, self.backends.system_for(question))
        if fresh:
            return await self._diagnose(qkey, question, fresh=True)
        task = self._in_flight.get(qkey)
        if task is None:
            task = asyncio.ensure_future(self._diagnose(qkey, question))
            self._in_flight[qkey] = task
            task.add_done_callback(lambda done: self._forget(qkey, done))
        # shielded: one asker cancelled (shutdown, a timeout) must not cancel the others' diagnosis
        return await asyncio.shield(task)

    async def aclose(self) -> None:
        """Cancel the diagnoses still in flight (at shutdown, once their askers are drained or cancelled)."""
        tasks = list(self._in_flight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _forget(self, qkey: str, done: asyncio.Task[Report]) -> None:
        if self._in_flight.get(qkey) is done:
            del self._in_flight[qkey]
        if not done.cancelled():
            done.exception()  # retrieved: an error every asker already saw is not "never retrieved"

    async def _diagnose(self, qkey: str, question: Question, fresh: bool = False) -> Report:
        cached = None if fresh else await self._cached(qkey, question)
        if cached is not None:
            metrics.diagnosis(cached, None)
            return cached
        started = time.perf_counter()
        report = await self.answer_fn(question, self.backends)
        metrics.diagnosis(report, time.perf_counter() - started)
        await self._cache(qkey, report)
        return report

    async def _cached(self, qkey: str, question: Question) -> Report | None:
        pointers: list[tuple[str, ...]] = [("q", qkey)]
        if question.cluster_id and question.workload_id:
            pointers.insert(0, ("latest", question.cluster_id, question.workload_id))
        for parts in pointers:
            data = await self.store.get_json(*parts)
            if isinstance(data, dict) and "report" in data:
                try:
                    return Report.model_validate(data["report"])
                except ValueError:
                    return None
            if isinstance(data, dict) and "key" in data:
                full = await self.store.get_json(*data["key"])
                if isinstance(full, dict):
                    try:
                        return Report.model_validate(full)
                    except ValueError:
                        return None
        return None

    async def _cache(self, qkey: str, report: Report) -> None:
        if report.outcome in (Outcome.ERROR, Outcome.NEEDS_INPUT):
            return
        ident = report.identity
        phase = (ident.phase or "").lower() if ident else ""
        data = report.model_dump(mode="json")
        if ident is not None and ident.cluster_id and ident.workload_id and phase in TERMINAL_PHASES:
            stamp = ident.phase_updated_at.isoformat() if ident.phase_updated_at else "unknown"
            key = ("report", ident.cluster_id, ident.workload_id, stamp)
            if await self.store.put_json(key, data, CACHE_TERMINAL_TTL):
                pointer = {"key": list(key)}
                await self.store.put_json(("latest", ident.cluster_id, ident.workload_id), pointer, POINTER_TTL)
                await self.store.put_json(("q", qkey), pointer, POINTER_TTL)
            return
        await self.store.put_json(("q", qkey), {"report": data}, NON_TERMINAL_TTL)


def _question_key(q: Question, system: str = "runai") -> str:
    """The cache and in-flight key of a question: every field the answer depends on. An OSMO answer also
    reads the words (a status filter in "list failed workflows", a usage question, the echoed question),
    so for OSMO the normalised text is part of the key."""
    words = " ".join((q.text or "").casefold().split()) if system == "osmo" else ""
    parts = [
        words,
        q.kind,
        q.cluster_id or "",
        q.cluster or "",
        q.cluster_hint or "",
        q.project or "",
        q.workload_id or "",
        q.workload_name or "",
        q.workflow_id or "",
        q.effective_intent(),
        q.lookback or "7d",
        # what resolution reads when no name or id was given (issue 11 §1)
        ",".join(q.candidates),
        ",".join(q.words),
        ",".join(q.scopes),
        ",".join(q.uuids),
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def _refusal() -> str:
    return REFUSAL


def _failure_message(exc: Exception, ref: str) -> Message:
    """What the person sees when no report could be made (details only in the log, under ``ref``)."""
    if isinstance(exc, QuestionError):
        return text_message(f"I couldn't read that: {escape(str(exc))}")
    if isinstance(exc, ConfigError):
        log.error("[ref %s] not configured: %s", ref, exc)
        return text_message(f":warning: I'm not set up to answer that yet (ref `{ref}`).")
    if isinstance(exc, BackendUnavailable):
        log.error("[ref %s] backend unavailable: %s", ref, exc)
        return text_message(
            f":warning: I couldn't reach the cluster's API just now; try again in a minute (ref `{ref}`)."
        )
    log.error("[ref %s] diagnosis failed", ref, exc_info=exc)
    return text_message(f":warning: Something went wrong while diagnosing (ref `{ref}`).")
