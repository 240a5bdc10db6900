"""Plain-text and JSON renderings of a :class:`~diagnosis.report.Report` (Block Kit is in ``handlers/blocks.py``).

The text rendering is what the terminal shows and what ``report_text`` carries in JSON.
Raw values (statuses, exit codes, reasons, event messages) are quoted verbatim.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from diagnosis.report import (
    Identity,
    OsmoIdentity,
    Outcome,
    Report,
    RunaiIdentity,
    recurrence_phrase,
    source_label,
)

_OUTCOME_TITLES: dict[Outcome, str] = {
    Outcome.DIAGNOSED: "DIAGNOSED",
    Outcome.NEEDS_INPUT: "NEED MORE INFORMATION",
    Outcome.NOT_FOUND: "NOT FOUND",
    Outcome.CLUSTER_MISMATCH: "CLUSTER MISMATCH",
    Outcome.ROUTE_PREEMPTED: "PREEMPTED (not a failure)",
    Outcome.ROUTE_PENDING: "PENDING (scheduling)",
    Outcome.SUCCEEDED: "SUCCEEDED",
    Outcome.OUT_OF_SCOPE: "OUT OF SCOPE",
    Outcome.ASK_PAST_RUN: "RUNNING",
    Outcome.PHASE_ONLY: "CURRENT PHASE",
    Outcome.STATUS: "STATUS",
    Outcome.PENDING_QUOTA: "PENDING: QUOTA",
    Outcome.PENDING_CAPACITY: "PENDING: CAPACITY",
    Outcome.PENDING_FRAGMENTATION: "PENDING: FRAGMENTATION",
    Outcome.PENDING_CONSTRAINT: "PENDING: PLACEMENT CONSTRAINT",
    Outcome.POOL_UNAVAILABLE: "POOL UNAVAILABLE",
    Outcome.FAILED: "FAILED",
    Outcome.ERROR: "ERROR",
}


def fmt_time(value: datetime | None) -> str:
    """``2026-11-28 10:14:07 UTC`` (or ``?``)."""
    if value is None:
        return "?"
    return value.strftime("%Y-%m-%d %H:%M:%S UTC")


def verdict_title(report: Report) -> str:
    """Short verdict for headers: outcome, plus the category when there is one."""
    title = _OUTCOME_TITLES.get(report.outcome, report.outcome.value.upper())
    if report.category is not None:
        return f"{title}: {report.category.value}"
    return title


def _runai_identity(ident: Identity, part: RunaiIdentity) -> list[tuple[str, str | None]]:
    cluster = part.cluster_name
    if part.cluster_id:
        cluster = f"{cluster} ({part.cluster_id})" if cluster else part.cluster_id
    return [
        ("Cluster", cluster),
        ("Project", part.project),
        ("Workload", ident.name),
        ("Workload ID", ident.id),
        ("Type", part.workload_type),
        ("Phase", ident.phase),
        ("Namespace", part.namespace),
    ]


def _osmo_identity(ident: Identity, part: OsmoIdentity) -> list[tuple[str, str | None]]:
    # An OSMO workflow's ID is its name: one line for both.
    return [("Workflow", ident.id), ("Status", ident.phase), ("Pool", part.pool), ("User", part.user)]


def identity_lines(report: Report) -> list[tuple[str, str]]:
    """(label, value) pairs describing what was diagnosed, in the words of its system; only known values."""
    ident = report.identity
    if ident is None:
        return []
    part = ident.detail
    if isinstance(part, RunaiIdentity):
        pairs = _runai_identity(ident, part)
    elif isinstance(part, OsmoIdentity):
        pairs = _osmo_identity(ident, part)
    else:
        pairs = [("Name", ident.name), ("ID", ident.id), ("Phase", ident.phase)]
    return [(k, v) for k, v in pairs if v]


def key_fact_lines(report: Report) -> list[tuple[str, str]]:
    """The card's key facts (exit code, node, recurrence, peak vs limit…), in the card's words."""
    from diagnosis.wording import key_facts

    return key_facts(report)


def render_text(report: Report, *, verbose: bool = False) -> str:
    """The plain-text report in the card's order: verdict, key facts, next action, then the evidence
    (raw values quoted verbatim), recurrence, gaps, excerpts and links. Sources are short labels unless
    ``verbose`` (every call in full, and whole log tails instead of the lines around the error)."""
    from diagnosis.wording import NEIGHBOURS_TITLE, focus_log, header_text, is_log, neighbours_line, timeline_lines

    title = verdict_title(report)
    words = header_text(report).split(" ", 1)[-1]
    # the verdict words and the name; the outcome's code only where it adds something ("DIAGNOSED: OOM_KILLED")
    head = words if words.lower().startswith(title.lower()) else f"{title} — {words}"
    out: list[str] = [head, report.headline, ""]
    if report.outcome == Outcome.NEEDS_INPUT and report.question:
        rest = report.question_rest()
        out += [f"Question: {rest}", ""] if rest else []
        if report.choices:
            out += ["Choices:"] + [f"  - {c.label} ({c.field}={c.value})" for c in report.choices] + [""]
    facts = key_fact_lines(report)
    if facts:
        width = max(len(k) for k, _ in facts)
        out += [f"{k.ljust(width)} : {v}" for k, v in facts] + [""]
    if report.next_action:
        out += [f"Next action (recommended, not performed): {report.next_action}", ""]
    if report.confidence is not None:
        basis = "; ".join(report.confidence.signals)
        out += [f"Evidence strength: {report.confidence.level}" + (f" ({basis})" if basis else ""), ""]
    ident = identity_lines(report)
    if ident:
        width = max(len(k) for k, _ in ident)
        out += [f"{k.ljust(width)} : {v}" for k, v in ident] + [""]
    if report.timeline:
        # the whole incident, oldest first: the first failure decided, the later ones are its consequences
        out += ["Timeline (the first failure decides):"]
        out += [f"  - {line}" for line in timeline_lines(report)] + [""]
    if report.neighbours is not None:
        out += [f"{NEIGHBOURS_TITLE}:", f"  - {neighbours_line(report)}", ""]
    if report.evidence:
        out.append("Evidence:")
        for item in report.evidence:
            when = f" at {fmt_time(item.at)}" if item.at else ""
            src = item.source if verbose else source_label(item.source)
            out.append(f"  - {item.label}: {item.value}{when}  [{src}]")
        out.append("")
    if report.recurrence is not None:
        rec = report.recurrence
        what = rec.category or "failure"
        state = "recurring" if rec.recurring else "not recurring"
        out.append(f"Recurrence: {recurrence_phrase(rec)} ({what}, {state})")
        for ts in rec.occurrences:
            out.append(f"  - {fmt_time(ts)}")
        out.append("")
    for table in report.tables:
        out.append(f"{table.title}:")
        widths = [len(c) for c in table.columns]
        for row in table.rows:
            widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=False)]
        out.append("  " + "  ".join(c.ljust(w) for c, w in zip(table.columns, widths, strict=False)))
        for row in table.rows:
            out.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)))
        out.append("")
    for note in report.notes:
        out.append(f"Note: {note}")
    if report.notes:
        out.append("")
    if report.gaps:
        out.append("Could not see:")
        out += [f"  - {g.what}: {g.why}" for g in report.gaps]
        out.append("")
    for ex in report.excerpts:
        if is_log(ex.title) and not verbose:
            out.append(f"{ex.title}, the lines around the error [{source_label(ex.source)}] (--verbose: all):")
            out += ["  | " + line for line in focus_log(ex.text).splitlines()]
        else:
            out.append(f"{ex.title} [{ex.source}]:")
            out += ["  | " + line for line in ex.text.splitlines()]
        out.append("")
    if report.links:
        out.append("Links:")
        out += [f"  - {link.label}: {link.url}" for link in report.links]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def to_json(
    report: Report, blocks: list[dict[str, Any]] | None = None, thread: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """The ``--format json`` object: outcome, category, recurring, occurrences, question, choices, missing, evidence,
    gaps, report_text (the verbose text: every source, whole log tails), blocks (the card), thread (the
    messages the bot posts in the thread, at once or by the Evidence and Logs buttons), plus the whole
    report under ``report`` (its ``identity`` is the nested shape of :class:`~diagnosis.report.Identity`:
    README "The JSON report")."""
    from diagnosis.wording import neighbours_line

    data = report.model_dump(mode="json")
    text = render_text(report, verbose=True)
    near = report.neighbours
    return {
        "outcome": report.outcome.value,
        "category": report.category.value if report.category else None,
        "recurring": report.recurring,
        "occurrences": report.occurrences,
        "confidence": report.confidence.level if report.confidence else None,
        "confidence_signals": report.confidence.signals if report.confidence else [],
        "question": report.question,
        # the same choices the card's buttons offer, in order: what a reply or a button would fill
        "choices": data["choices"],
        "missing": data["missing"],
        "evidence": data["evidence"],
        "gaps": data["gaps"],
        # other workloads' pods failed on the first failure's node around it: supporting evidence, never the cause
        "neighbours": (
            {
                **data["neighbours"],
                "count": near.count,
                "supporting_evidence_only": True,
                "text": neighbours_line(report),
            }
            if near is not None
            else None
        ),
        "report_text": report.question if report.outcome == Outcome.NEEDS_INPUT and report.question else text,
        "blocks": blocks or [],
        "thread": thread or [],
        "report": data,
    }
