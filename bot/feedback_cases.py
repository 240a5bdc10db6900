"""Voted answers as numbers and as test cases (issue 28; pure: no I/O).

:func:`stats` counts answers, votes and agreement by system, category and confidence. :func:`case_of` turns one
voted answer into a ``snapshot/1`` case (``../shared/cases/FORMAT.md``): the world the answer was made from, as
``capture`` writes it, with ``expect`` from the person's verdict. Marked right, ``expect`` is the answer itself
(the case passes, and keeps passing); marked wrong with a category, ``expect`` is that category with the
system's failure outcome (``diagnosed`` / ``failed``): the case fails until the product is fixed. The two other
answers to "what was it really?" have no exact outcome in FORMAT.md, so the case says what the person meant in
the closest outcome and the reviewer sharpens it before it goes into CI:

- *Not a failure*: by the phase the answer read (Completed/Succeeded ``succeeded``, Running ``ask_past_run``,
  Suspended ``out_of_scope``, otherwise ``phase_only``; OSMO ``status``);
- *Wrong workload*: ``needs_input`` (the product should have asked which one).

The person's words and the votes go into ``description`` and a ``feedback`` key the case runner ignores.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from typing import Any

from bot.feedback_store import NOT_A_FAILURE, WRONG_WORKLOAD, Voted
from diagnosis.backends import backend_of


def verdict_of(voted: Voted) -> dict[str, Any]:
    """The vote a case is made from: the latest "Wrong" (the regression target), else the latest vote."""
    wrong = voted.wrong
    return wrong[0] if wrong else voted.last | {"user": _user_of(voted, voted.last)}


def _user_of(voted: Voted, vote: dict[str, Any]) -> str:
    return next((u for u, v in voted.votes.items() if v is vote), "")


def expect_of(voted: Voted, world: dict[str, Any]) -> dict[str, Any]:
    """``expect`` from the person's verdict (see the module's note)."""
    vote = verdict_of(voted)
    record = voted.record
    backend = backend_of(str(record.get("system") or ""))  # the answer's system says what its cases expect
    if vote.get("verdict") == "right":
        return dict(world.get("expect") or {"outcome": record.get("outcome")})
    keep = {k: v for k, v in (world.get("expect") or {}).items() if k == "never_mentions"}
    choice = vote.get("choice")
    if choice == NOT_A_FAILURE:
        phase = str(record.get("phase") or "").lower()
        return {"outcome": backend.healthy_outcome(phase), **keep}
    if choice == WRONG_WORKLOAD:
        return {"outcome": "needs_input", **keep}
    if choice:
        return {"outcome": backend.failure_outcome, "category": str(choice), **keep}
    # "Wrong" with only a note: the answer given must not come back
    return {"outcome": "needs_input", **keep}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:50] or "answer"


def case_of(voted: Voted) -> dict[str, Any] | None:
    """The case of one voted answer, or None when its world was not kept (too large, or not built)."""
    if not voted.world:
        return None
    world = copy.deepcopy(voted.world)
    record = voted.record
    vote = verdict_of(voted)
    said = record.get("category") or record.get("outcome")
    about = record.get("name") or record.get("workflow_id") or "a workload"
    verdict = "right" if vote.get("verdict") == "right" else f"wrong ({vote.get('choice') or 'no choice'})"
    note = vote.get("note")
    world["id"] = f"feedback-{_slug(str(about))}-{record['ref']}"
    world["source"] = f"field feedback on answer {record['ref']} ({str(record.get('at') or '')[:10]})"
    world["description"] = (
        f"The bot answered {said} for {about}; a person marked it {verdict}"
        + (f': "{note}"' if note else "")
        + ". "
        + str(world.get("description") or "")
    ).strip()
    world["expect"] = expect_of(voted, world)
    world["feedback"] = {
        "answer": record["ref"],
        "answered": {k: record.get(k) for k in ("system", "outcome", "category", "confidence", "at")},
        "verdict": vote.get("verdict"),
        "choice": vote.get("choice"),
        "note": note,
        "votes": [{"user": u, **v} for u, v in sorted(voted.votes.items())],
    }
    return world


def stats(answered: dict[str, int], voted: list[Voted]) -> dict[str, Any]:
    """Answers, votes and agreement (right / (right + wrong), per answer's latest vote of each person) by system,
    category and confidence, and the answers marked wrong."""
    groups: dict[str, dict[str, Counter[str]]] = {"system": {}, "category": {}, "confidence": {}}
    votes = 0
    wrong: list[dict[str, Any]] = []
    for v in voted:
        record = v.record
        for vote in v.votes.values():
            votes += 1
            for key in groups:
                label = str(record.get(key) or "none")
                groups[key].setdefault(label, Counter())[str(vote.get("verdict"))] += 1
        if v.wrong:
            last = v.wrong[0]
            wrong.append(
                {
                    "answer": record.get("ref"),
                    "at": record.get("at"),
                    "system": record.get("system"),
                    "about": record.get("name") or record.get("workflow_id"),
                    "said": record.get("category") or record.get("outcome"),
                    "really": last.get("choice"),
                    "note": last.get("note"),
                    "world_kept": v.world is not None or "world_omitted" not in record,
                }
            )
    return {
        "answers": dict(sorted(answered.items())),
        "answers_total": sum(answered.values()),
        "voted_answers": len(voted),
        "votes": votes,
        "agreement": {key: {label: _agree(c) for label, c in sorted(g.items())} for key, g in groups.items()},
        "wrong": wrong,
    }


def _agree(counts: Counter[str]) -> dict[str, Any]:
    right, wrong = counts.get("right", 0), counts.get("wrong", 0)
    return {"right": right, "wrong": wrong, "agreement": round(right / (right + wrong), 3) if right + wrong else None}


def stats_text(data: dict[str, Any], since: str) -> str:
    """The stats as a person reads them in a terminal."""
    lines = [
        f"Feedback over the last {since}: {data['answers_total']} answer(s) kept for feedback "
        + ("(" + ", ".join(f"{s} {n}" for s, n in data["answers"].items()) + ")" if data["answers"] else "")
        + f", {data['voted_answers']} voted on, {data['votes']} vote(s).",
    ]
    for key, groups in data["agreement"].items():
        if not groups:
            continue
        lines.append(f"Agreement by {key}:")
        for label, g in groups.items():
            share = "-" if g["agreement"] is None else f"{g['agreement'] * 100:.0f}%"
            lines.append(f"  {label:<30} {share:>5}  ({g['right']} right, {g['wrong']} wrong)")
    if data["wrong"]:
        lines.append("Marked wrong (export them with `workload-doctor feedback export -o DIR`):")
        for w in data["wrong"]:
            really = w["really"] or "not said"
            note = f' "{w["note"]}"' if w["note"] else ""
            lines.append(f"  {w['answer']}  {w['system']}  {w['about']}: said {w['said']}, really {really}{note}")
    else:
        lines.append("No answer marked wrong.")
    return "\n".join(lines) + "\n"
