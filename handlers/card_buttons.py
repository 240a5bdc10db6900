"""What the card's buttons do (issue 13 §1): *Evidence* posts the full quoted evidence in the thread,
*Logs* uploads the log tail as a snippet there, *Re-diagnose* runs the diagnosis again, bypassing the
cache. The listener (``handlers.listeners``) acks; the middleware has already applied the access policy
and the rate limit (:func:`handlers.middleware._costly` counts ``wd_card_*`` actions). Here the policy is
checked again against what the button names and what was found, as for a typed question."""

from __future__ import annotations

import json
import logging

from diagnosis.backends import REGISTRY
from diagnosis.question import Question
from handlers.blocks import Message, Rendered, render_report, text_message
from handlers.card import EVIDENCE_ACTION, LOGS_ACTION, REDIAGNOSE_ACTION
from handlers.doctor import Doctor, ref_id
from handlers.parsing import Ask
from handlers.protocols import Surface
from handlers.seen import seen_by

log = logging.getLogger(__name__)


def question_of(value: str) -> Question | None:
    """The question a card button re-asks: its ``value`` is the target of :func:`handlers.card.target`, read
    back by the backend its ``"s"`` names (:meth:`diagnosis.backends.Backend.question_of`); None when it does
    not read (not JSON, no such system, ids missing)."""
    try:
        target = json.loads(value or "{}")
    except ValueError:
        return None
    backend = REGISTRY.get(str(target.get("s"))) if isinstance(target, dict) else None
    return backend.question_of(target) if backend is not None else None


async def on_card_button(doctor: Doctor, ask: Ask, surface: Surface, action_id: str, value: str) -> None:
    """Answer one press of a card button in the thread ``ask.thread_ts``."""
    question = question_of(value)
    if question is None:
        log.warning("malformed card button value")
        return
    clusters = await doctor._asked_clusters(question)  # a rule may name the cluster by its name or its UUID
    if action_id == REDIAGNOSE_ACTION:
        # authorized before anything is posted (issue 23): the whole scope the button names (a button naming no
        # project is every project), and the answer shown only once checked against what was found
        if question.workflow_id is None and not doctor._allows_whole(ask, clusters, question.project):
            await doctor.reply(ask, surface, text_message(doctor.refusal()), private=True)
            return
        await doctor._run(ask, question, surface, fresh=True, announce=False)
        return
    if not doctor.policy.allows(ask.user, clusters=clusters, project=question.project, user_groups=ask.user_groups):
        await doctor.reply(ask, surface, text_message(doctor.refusal()), private=True)
        return
    try:
        report = await doctor._answer(question)
    except Exception:
        log.exception("[ref %s] card button could not re-read the report", ref_id())
        await doctor.reply(ask, surface, text_message("I could not read that just now: please try again."), True)
        return
    ident = report.identity
    if ident is not None and not doctor.policy.allows(
        ask.user,
        clusters={c for c in (ident.cluster_name, ident.cluster_id) if c},
        project=ident.project,
        user_groups=ask.user_groups,
    ):
        await doctor.reply(ask, surface, text_message(doctor.refusal()), private=True)
        return
    report = seen_by(doctor.policy, ask.user, ask.user_groups, report)  # other workloads: only the asker's named
    rendered = render_report(report, thread_ts=ask.thread_ts)
    if action_id == EVIDENCE_ACTION:
        out = Rendered(main=Message(text=""), thread=rendered.evidence + rendered.thread)
        out.snippets = rendered.evidence_files + rendered.snippets
        if not out.thread and not out.snippets:
            await doctor.reply(ask, surface, text_message("There is no more evidence than the card shows."), True)
            return
        await doctor.spill(surface, out, ask.thread_ts)
    elif action_id == LOGS_ACTION:
        if not rendered.logs:
            await doctor.reply(ask, surface, text_message("No log was read for this answer."), True)
            return
        await doctor.spill(surface, Rendered(main=Message(text=""), snippets=rendered.logs), ask.thread_ts)
