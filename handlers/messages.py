"""Every short message the conversation says (help, refusals, errors, follow-up prompts), in one place.

The wording is the product's voice: handlers decide *when* to say something and *to whom* (privately or in
the thread); this module only says *what*. Error messages name no detail: those go to the log under a
reference id the message quotes."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from diagnosis.config import ConfigError
from diagnosis.errors import BackendUnavailable
from diagnosis.question import QuestionError
from diagnosis.report import Outcome
from diagnosis.wording import outcome_words
from handlers.blocks import Message, escape, inline, text_message

log = logging.getLogger(__name__)

REFUSAL = (
    "Sorry, you are not allowed to diagnose workloads in that cluster or project. Ask your platform team for access."
)
#: the refusal while the access policy names nobody (the deployed default, bot.policy.Policy.allows_nobody): the
#: first person to ask learns that the install is unfinished, not that they lack a grant someone forgot
NOBODY_ALLOWED = (
    "Sorry, nobody may ask me anything yet: my access policy names no one. Ask your platform team to add you "
    "to its `access` list (the file in `WD_POLICY_FILE`, `deploy/base/policy.yaml`)."
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
    "• Digests: `/diagnose digest [24h] [project=P]` or _what failed today?_, _any failures since 9am in nlp?_: "
    "the failures of a window by diagnosed cause; `/diagnose digest status` shows the channel's schedules.\n"
    "If something is missing (cluster, project, which workload) I ask in the thread; reply there or "
    "press a button."
)
NOT_A_QUESTION = "I answer questions about failed workloads.\n" + HELP
#: what the public "diagnosing…" message becomes when the answer went to the asker only (an error or a
#: refusal): the same words for both, so the channel learns nothing about what was (or was not) found
ANSWERED_PRIVATELY = ":speech_balloon: I couldn't answer this one here; I told the person who asked why, privately."
CHOICE_GONE = "That choice is no longer offered; ask again."
EXPIRED = "This question has expired: please ask again."
CANT_KEEP = (
    "I can't keep this conversation right now: please ask again with everything in one message, "
    "e.g. `/diagnose train-7 project=nlp cluster=dgx-prod`."
)
CONVERSATION_LOST = (
    "I couldn't find the question this replies to (my memory of conversations is unavailable just now): "
    "please ask again with everything in one message, e.g. `@Workload Doctor why did train-7 fail in project nlp "
    "on cluster dgx-prod?`"
)


def refusal_words(policy: object = None) -> str:
    """The refusal's words: :data:`NOBODY_ALLOWED` while ``policy`` allows nobody, else :data:`REFUSAL` (the same
    whatever was or was not found)."""
    return NOBODY_ALLOWED if getattr(policy, "allows_nobody", False) is True else REFUSAL


def refusal(policy: object = None) -> Message:
    return text_message(escape(refusal_words(policy)))


def not_your_question(asker: str) -> Message:
    """A press of a choice button by someone other than the person the question was asked of (issue 23)."""
    return text_message(f"Only <@{asker}>, who asked this question, can answer it: ask your own with `/diagnose`.")


def answered_privately() -> Message:
    return text_message(ANSWERED_PRIVATELY)


def could_not_read(exc: QuestionError) -> Message:
    return text_message(f"I couldn't read that: {escape(str(exc))}")


def diagnosing(subject: str, user: str | None = None) -> Message:
    """The "diagnosing…" placeholder (``user``: a slash command's asker, whom the channel otherwise can't see)."""
    name = inline(subject)
    if user:
        return text_message(f":hourglass_flowing_sand: Diagnosing `{name}` for <@{user}>… (read-only)")
    return text_message(f":hourglass_flowing_sand: Diagnosing `{name}`… (read-only)")


def help_while_pending(subject: str, missing: Sequence[str]) -> Message:
    need = " and ".join(missing) or "an answer"
    return text_message(
        HELP + f"\n\n_Still waiting for the {escape(need)} of `{inline(subject)}`: reply here "
        "with it (or press a button), or say `cancel`._"
    )


def dropped(subject: str) -> Message:
    return text_message(f"OK, I dropped the question about `{inline(subject)}`.")


#: how every message that asks the asker something begins (the card of a needs-input answer, the reminder)
STILL_NEED = "I still need the "


def asks_something(text: str) -> bool:
    """True for the text of a bot message that asks the asker for something (a follow-up question is pending):
    the fallback text of a needs-input card, or :func:`still_need`. Read from a thread while the state store
    is down, to tell a reply to a question from chatter in an answered thread."""
    emoji, words = outcome_words(Outcome.NEEDS_INPUT)
    return text.startswith((f"{emoji} {words}", STILL_NEED))


def still_need(missing: Sequence[str], labels: Sequence[str]) -> Message:
    need = " and ".join(missing) or "an answer"
    listed = ", ".join(f"`{inline(label)}`" for label in labels[:10])
    hint = f" One of: {listed}." if listed else ""
    return text_message(
        f"{STILL_NEED}{escape(need)}: reply in this thread with it "
        f"(for example `project nlp cluster dgx-prod`).{hint} Say `help` or `cancel`."
    )


def no_such_name(name: str, suggestions: Sequence[str], where: str | None = None) -> Message:
    """``/diagnose <name>`` where no workload has that name: maybe a mistyped command. Names the closest
    existing workloads when there are any, then the usage."""
    scope = f" {where}" if where else ""
    text = f"I found no workload or workflow named `{inline(name)}`{escape(scope)}."
    if suggestions:
        text += " Did you mean " + " or ".join(f"`/diagnose {inline(s)}`" for s in suggestions[:5]) + "?"
    return text_message(text + "\n\n" + HELP)


def digest_unavailable(exc: Exception) -> Message:
    return text_message(f"I could not build the digest: {escape(str(exc))}")


def failure(exc: BaseException, ref: str) -> Message:
    """What the person sees when no report could be made (details only in the log, under ``ref``)."""
    if isinstance(exc, QuestionError):
        return could_not_read(exc)
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


def rate_limited(wait_seconds: int) -> str:
    """The rate limit's refusal, saying when to try again (issue 21)."""
    return f"You're asking faster than I can diagnose: please try again in {wait_seconds} s."
