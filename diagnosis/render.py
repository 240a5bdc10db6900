"""Plain-text and JSON renderings of a :class:`~diagnosis.report.Report` (Block Kit is in ``handlers/blocks.py``).

The text rendering is what the terminal shows and what ``report_text`` carries in JSON.
Raw values (statuses, exit codes, reasons, event messages) are quoted verbatim.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from diagnosis.report import Outcome, Report

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


def identity_lines(report: Report) -> list[tuple[str, str]]:
    """(label, value) pairs describing what was diagnosed; only known values."""
    ident = report.identity
    if ident is None:
        return []
    pairs: list[tuple[str, str | None]] = []
    if ident.system == "runai":
        cluster = ident.cluster_name
        if ident.cluster_id:
            cluster = f"{cluster} ({ident.cluster_id})" if cluster else ident.cluster_id
        pairs = [
            ("Cluster", cluster),
            ("Project", ident.project),
            ("Workload", ident.workload_name),
            ("Workload ID", ident.workload_id),
            ("Type", ident.workload_type),
            ("Phase", ident.phase),
            ("Namespace", ident.namespace),
        ]
    else:
        pairs = [
            ("Workflow", ident.workflow_id),
            ("Status", ident.status),
            ("Pool", ident.pool),
            ("User", ident.user),
        ]
    return [(k, v) for k, v in pairs if v]


def render_text(report: Report) -> str:
    """The full plain-text report: verdict first, then identity, evidence, recurrence, next action, gaps, links."""
    out: list[str] = [verdict_title(report), report.headline, ""]
    if report.outcome == Outcome.NEEDS_INPUT and report.question:
        out += [f"Question: {report.question}", ""]
        if report.choices:
            out += ["Choices:"] + [f"  - {c.label} ({c.field}={c.value})" for c in report.choices] + [""]
    ident = identity_lines(report)
    if ident:
        width = max(len(k) for k, _ in ident)
        out += [f"{k.ljust(width)} : {v}" for k, v in ident] + [""]
    if report.evidence:
        out.append("Evidence:")
        for item in report.evidence:
            when = f" at {fmt_time(item.at)}" if item.at else ""
            out.append(f"  - {item.label}: {item.value}{when}  [{item.source}]")
        out.append("")
    if report.recurrence is not None:
        rec = report.recurrence
        days = rec.lookback_seconds / 86400
        span = f"{days:g}d" if days >= 1 else f"{rec.lookback_seconds // 3600}h"
        what = rec.category or "failure"
        line = f"Recurrence: {rec.count} {what} occurrence(s) in the last {span}"
        line += " (recurring)" if rec.recurring else " (not recurring)"
        out.append(line)
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
    if report.confidence is not None:
        basis = "; ".join(report.confidence.signals)
        out += [f"Evidence strength: {report.confidence.level}" + (f" ({basis})" if basis else ""), ""]
    if report.next_action:
        out += [f"Next action (recommended, not performed): {report.next_action}", ""]
    if report.gaps:
        out.append("Could not see:")
        out += [f"  - {g.what}: {g.why}" for g in report.gaps]
        out.append("")
    for ex in report.excerpts:
        out.append(f"{ex.title} [{ex.source}]:")
        out += ["  | " + line for line in ex.text.splitlines()]
        out.append("")
    if report.links:
        out.append("Links:")
        out += [f"  - {link.label}: {link.url}" for link in report.links]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def to_json(report: Report, blocks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The ``--format json`` object: outcome, category, recurring, occurrences, question, evidence,
    gaps, report_text, blocks, plus the whole report under ``report``."""
    data = report.model_dump(mode="json")
    text = render_text(report)
    return {
        "outcome": report.outcome.value,
        "category": report.category.value if report.category else None,
        "recurring": report.recurring,
        "occurrences": report.occurrences,
        "confidence": report.confidence.level if report.confidence else None,
        "confidence_signals": report.confidence.signals if report.confidence else [],
        "question": report.question,
        "evidence": data["evidence"],
        "gaps": data["gaps"],
        "report_text": report.question if report.outcome == Outcome.NEEDS_INPUT and report.question else text,
        "blocks": blocks or [],
        "report": data,
    }
