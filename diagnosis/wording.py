"""The words of a report, shared by every surface (the Slack card, the text rendering, the terminal twin).

Pure functions of a :class:`~diagnosis.report.Report`: the verdict in words with its emoji, the key facts a
category needs (exit code, peak vs limit, image…), the deduplicated "why" lines, the context line, and the lines
of a log around its error. No Slack here: :mod:`handlers.card` and :mod:`handlers.blocks` lay these out as Block
Kit, :mod:`diagnosis.render` as text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from diagnosis import timeline
from diagnosis.backends import category_entry
from diagnosis.report import Category, EvidenceItem, Outcome, Report, recurrence_phrase
from diagnosis.timeline import Entry

MAX_FACTS = 4
MAX_WHY = 3

_OUTCOME_WORDS: dict[Outcome, tuple[str, str]] = {
    Outcome.DIAGNOSED: ("🩺", "Diagnosed"),
    Outcome.NEEDS_INPUT: ("❔", "Need more information"),
    Outcome.NOT_FOUND: ("🔍", "Not found"),
    Outcome.CLUSTER_MISMATCH: ("🔀", "Cluster mismatch"),
    Outcome.ROUTE_PREEMPTED: ("⏸️", "Preempted (not a failure)"),
    Outcome.ROUTE_PENDING: ("⏳", "Pending (scheduling)"),
    Outcome.SUCCEEDED: ("✅", "Succeeded"),
    Outcome.OUT_OF_SCOPE: ("💤", "Suspended (out of scope)"),
    Outcome.ASK_PAST_RUN: ("▶️", "Running"),
    Outcome.PHASE_ONLY: ("ℹ️", "Current phase"),
    Outcome.STATUS: ("ℹ️", "Status"),
    Outcome.PENDING_QUOTA: ("⏳", "Pending: quota"),
    Outcome.PENDING_CAPACITY: ("⏳", "Pending: capacity"),
    Outcome.PENDING_FRAGMENTATION: ("⏳", "Pending: fragmentation"),
    Outcome.PENDING_CONSTRAINT: ("⏳", "Pending: placement constraint"),
    Outcome.POOL_UNAVAILABLE: ("🚫", "Pool unavailable"),
    Outcome.FAILED: ("❌", "Failed"),
    Outcome.ERROR: ("⚠️", "Error"),
}

#: key facts: (label pattern, card label), in the order they are preferred
_FACTS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p), name)
    for p, name in (
        (r"^(task \S+ )?exit code$", "Exit code"),
        (r"^peak memory usage", "Peak memory"),
        (r"^memory limit", "Memory limit"),
        (r"^image$", "Image"),
        (r"^queued for$", "Queued for"),
        (r"^GPUs asked", "GPUs asked"),
        (r"^quota_free$", "Quota free"),
        (r"^total_free$", "Free in pool"),
        (r"^node pools requested$", "Node pools"),
        (r"^(task \S+ )?node$", "Node"),
        (r"^restart count", "Restarts"),
        (r"^duration$", "Duration"),
        (r"^(status|phase)$", "Status"),
    )
)
#: evidence that says where, not why: not a "why" line
_BOILERPLATE = re.compile(
    r"^(phase|status|pods running|k8sPhase.*|priority|submit_time|node|exit code|restart count.*|"
    r"task \S+ (status|node|exit code|stages.*)|duration|outputs)$"
)
_SECONDS = re.compile(r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}):\d{2}(?:\.\d+)?")
_REPEAT = re.compile(r"\s*\(x(\d+), first ([^,]+), last ([^)]+)\)")
_GIB = re.compile(r"\(([\d.]+ GiB)\)")
_PCT = re.compile(r"([\d.]+)% of the limit")
_IMAGE = re.compile(r'image "([^"]+)"')
_ERROR_LINE = re.compile(
    r"(?i)(traceback|error|exception|fatal|panic|killed|failed|errno|segmentation fault|out of memory)"
)


@dataclass
class Fact:
    """One deduplicated evidence line: the raw item plus how often and when it was seen."""

    item: EvidenceItem
    count: int = 1
    first: datetime | None = None
    last: datetime | None = None
    sources: list[str] = field(default_factory=list)
    #: the merged items whose words differ (kept verbatim for the thread's full evidence)
    others: list[EvidenceItem] = field(default_factory=list)


def card_time(value: datetime | None, now: datetime | None = None) -> str:
    """``2026-11-28 10:14 UTC``, with ``(2 h ago)`` when ``now`` is known and it helps."""
    if value is None:
        return "?"
    text = value.strftime("%Y-%m-%d %H:%M UTC")
    if now is not None and now >= value:
        secs = (now - value).total_seconds()
        if secs < 3600:
            text += f" ({max(1, int(secs // 60))} min ago)"
        elif secs < 48 * 3600:
            text += f" ({int(secs // 3600)} h ago)"
        else:
            text += f" ({int(secs // 86400)} d ago)"
    return text


def short_times(text: str) -> str:
    """Times written ``YYYY-MM-DD HH:MM`` (seconds dropped) for the card."""
    return _SECONDS.sub(lambda m: m.group(1).replace("T", " "), text)


def card_value(value: str) -> str:
    """A raw evidence value in the card's number style: GiB with one decimal, times without seconds."""
    gib = _GIB.search(value)
    if gib:
        pct = _PCT.search(value)
        return gib.group(1) + (f" ({float(pct.group(1)):.1f} %)" if pct else "")
    return short_times(value)


def _dedupe_key(item: EvidenceItem) -> str:
    value = _REPEAT.sub("", item.value).lower()
    value = re.sub(r"\b[\w.-]+/(?=[\w.-]+\b)", "", value)  # "runai-nlp/pod" and "pod" are the same pod
    value = re.sub(r"^pod \S+ failed: ", "", value).strip()
    # a short value ("FAILED", "137") says the same thing only under the same label
    return value if len(value) >= 25 else f"{item.label.lower()}\x1f{value}"


def dedupe(items: list[EvidenceItem]) -> list[Fact]:
    """Evidence lines that say the same thing merged into one, with a count and the first/last time."""
    out: dict[str, Fact] = {}
    for item in items:
        key = _dedupe_key(item)
        rep = _REPEAT.search(item.value)
        count = int(rep.group(1)) if rep else 1
        fact = out.get(key)
        if fact is None:
            out[key] = Fact(item, count, item.at, item.at, [item.source])
            continue
        fact.count = max(fact.count, count) if rep else fact.count + 1
        if (item.label, item.value) != (fact.item.label, fact.item.value):
            fact.others.append(item)
        if item.source not in fact.sources:
            fact.sources.append(item.source)
        if item.at is not None:
            fact.first = min(fact.first or item.at, item.at)
            fact.last = max(fact.last or item.at, item.at)
    return list(out.values())


def subject(report: Report) -> str | None:
    """The name the header gives: what was identified, else what the person named."""
    ident = report.identity
    if ident is None:
        return report.subject
    return ident.workload_name or ident.workflow_id or ident.workload_id or report.subject


def verdict_words(report: Report) -> tuple[str, str]:
    """(emoji, verdict in words) for the header."""
    if report.category is not None and report.outcome in (Outcome.DIAGNOSED, Outcome.FAILED):
        return category_words(report.category, report.system)
    return _OUTCOME_WORDS.get(report.outcome, ("ℹ️", report.outcome.value))


def category_words(category: Category, system: str | None = None) -> tuple[str, str]:
    """(emoji, title) of a category, from its entry in the system's registry (:func:`diagnosis.backends.
    category_entry`): the words live on the entry, beside its rule and texts."""
    entry = category_entry(system, category)
    return (entry.emoji, entry.title) if entry is not None else ("❌", category.value)


def _timeline(report: Report) -> tuple[list[Entry], Entry | None]:
    """The report's incident timeline as :class:`~diagnosis.timeline.Entry` values, and the one marked first."""
    entries = [Entry(e.subject, e.at, e.what, e.source, e.container, e.own, failure=e.failure) for e in report.timeline]
    first = next((entry for entry, e in zip(entries, report.timeline, strict=True) if e.first), None)
    return entries, first


def timeline_compact(report: Report) -> str:
    """The first failure and what followed on one line, for the card (empty without a timeline)."""
    return timeline.compact(*_timeline(report))


def timeline_lines(report: Report) -> list[str]:
    """The whole timeline, the first failure marked, for the thread and ``report``."""
    return timeline.lines(*_timeline(report))


#: How many other workloads the neighbours' sentence names before it only counts the rest.
MAX_NEIGHBOURS = 5
#: What the neighbours are, said wherever they are shown: they support a cause, they never decide one.
NEIGHBOURS_TITLE = "Neighbours on the node (supporting evidence, never the cause by itself)"


def neighbours_line(report: Report) -> str:
    """The other workloads whose pods failed on the first failure's node around it, in one sentence: "3 other
    workloads' pods on node X failed within 15 min of the first failure (2026-11-28 10:14:05 UTC): a, b (+1 in
    projects you cannot see)". Empty when the report has none read."""
    n = report.neighbours
    if n is None:
        return ""
    where = f"on node {n.node} failed within {n.window_minutes} min of the first failure"
    when = f" ({n.pod + ' at ' if n.pod else ''}{n.around:%Y-%m-%d %H:%M:%S} UTC)"
    if n.count == 0:
        more = " in the first page read (there are more pods)" if n.more else ""
        return f"No other workload's pod {where}{when}{more}."
    count = f"at least {n.count}" if n.more else str(n.count)
    whose = "workload's" if n.count == 1 else "workloads'"
    names = [w.name + (f" ({w.pods} pods)" if w.pods > 1 else "") for w in n.workloads[:MAX_NEIGHBOURS]]
    rest = len(n.workloads) - len(names)
    extra = [f"+{rest} more"] if rest else []
    if n.hidden:
        extra.append(f"+{n.hidden} in {'a project' if n.hidden == 1 else 'projects'} you cannot see")
    listed = ", ".join(names) + (f" ({', '.join(extra)})" if names and extra else ", ".join(extra))
    return f"{count} other {whose} pods {where}{when}: {listed}."


def outcome_words(outcome: Outcome) -> tuple[str, str]:
    """(emoji, words) of an outcome on the card's header."""
    return _OUTCOME_WORDS.get(outcome, ("ℹ️", outcome.value))


def header_text(report: Report) -> str:
    emoji, words = verdict_words(report)
    name = subject(report)
    return f"{emoji} {words}" + (f": {name}" if name else "")


def key_facts(report: Report) -> list[tuple[str, str]]:
    """Up to four (label, card value) pairs this category needs; recurrence only when it recurred."""
    facts: list[tuple[str, str]] = []
    used: set[str] = set()
    if report.recurrence is not None and report.recurrence.recurring:
        facts.append(("Recurrence", recurrence_phrase(report.recurrence)))
    if report.category == Category.IMAGE_PULL_FAILED and not any(i.label == "image" for i in report.evidence):
        for text in [report.headline] + [i.value for i in report.evidence]:
            m = _IMAGE.search(text)
            if m:
                facts.append(("Image", m.group(1)))
                used.add("Image")
                break
    for pattern, name in _FACTS:
        if len(facts) >= MAX_FACTS:
            break
        if name in used:
            continue
        for item in report.evidence:
            if pattern.search(item.label):
                facts.append((name, card_value(item.value)))
                used.add(name)
                break
    return facts[:MAX_FACTS]


def why_facts(report: Report, limit: int = MAX_WHY) -> list[Fact]:
    """The evidence lines that say why (not where), deduplicated, for the card."""
    facts = [f for f in dedupe(report.evidence) if not _BOILERPLATE.match(f.item.label)]
    facts = [f for f in facts if not any(p.search(f.item.label) for p, _ in _FACTS)]
    return facts[:limit]


def context_text(report: Report, footer: str | None = None) -> str:
    """Category (for search), cluster / project or pool, evidence strength, time, footer (plain words)."""
    parts: list[str] = []
    if report.category is not None:
        parts.append(report.category.value)
    ident = report.identity
    if ident is not None:
        # a cluster and project where the system has them (Run:ai), else a pool and user (OSMO): by what the
        # identity holds, not by the system's name (a third backend's card says what it has)
        where = " / ".join(x for x in (ident.cluster_name or ident.cluster_id, ident.project) if x) or " / ".join(
            x for x in (f"pool {ident.pool}" if ident.pool else None, ident.user) if x
        )
        if where:
            parts.append(where)
    if report.confidence is not None:
        parts.append(f"evidence: {report.confidence.level}")
    when = ident.phase_updated_at if ident is not None else None
    if when is not None and report.outcome not in (Outcome.NEEDS_INPUT, Outcome.NOT_FOUND):
        phase = (ident.phase or ident.status or "updated") if ident is not None else "updated"
        parts.append(f"{phase} {card_time(when, report.generated_at)}")
    elif report.generated_at is not None:
        parts.append(report.generated_at.strftime("%Y-%m-%d %H:%M UTC"))
    parts.append("read-only")
    if footer:
        parts.append(footer)
    return " · ".join(parts)


def is_log(title: str) -> bool:
    """A log excerpt ("Last 20 log lines", "Last lines of task train before the failure")."""
    low = title.lower()
    return "log" in low or "lines" in low


def focus_log(text: str, before: int = 4) -> str:
    """The lines around the error: a traceback from its start, else the last error line and a few
    before it; the last lines when nothing looks like an error."""
    lines = text.rstrip("\n").splitlines()
    if not lines:
        return ""
    for i in range(len(lines) - 1, -1, -1):
        if "Traceback (most recent call last)" in lines[i]:
            return "\n".join(lines[max(0, i - 1) :][:30])
    for i in range(len(lines) - 1, -1, -1):
        if _ERROR_LINE.search(lines[i]) and not re.search(r"\bINFO\b", lines[i]):
            return "\n".join(lines[max(0, i - before) : i + 2])
    return "\n".join(lines[-(before + 1) :])
