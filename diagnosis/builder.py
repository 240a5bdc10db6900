"""The one way a backend builds a :class:`~diagnosis.report.Report` (issue 10 §2).

How to build a report::

    b = ReportBuilder(system="osmo", now=now)           # one builder per answer
    b.identity = Identity(system="osmo", workflow_id=...)
    got = await fetch(client.events(wid))               # a Read: the value and the call it came from
    b.fetched(got)                                       # a failed read becomes a gap, once
    b.add("exit code", "137", got.path, at)              # a quantified fact and the call it came from
    b.note("Logs were read for 3 of 5 tasks.")
    b.link("Open in OSMO", url); b.excerpt("Last 20 log lines", text, source)
    report = b.build(Outcome.FAILED, headline, category=..., next_action=..., confidence=...)

Parts accumulate in order (evidence is shown in the order added); :meth:`build` copies nothing, so call it
once per builder. Backend-specific phrasing lives in subclasses (``diagnosis.runai.reporting``); this module
knows no backend.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from diagnosis.fetched import Fetched
from diagnosis.report import (
    Category,
    EvidenceItem,
    Excerpt,
    Gap,
    Identity,
    Link,
    Neighbours,
    Outcome,
    Recurrence,
    Report,
    Table,
    TimelineEntry,
)
from diagnosis.timeline import Timeline

#: A report's system: the name of a registered backend (checked by the report model, diagnosis.report.SYSTEMS).
System = str


@dataclass
class ReportBuilder:
    """Accumulates the parts of one report; :meth:`build` returns the finished :class:`Report`.

    ``system`` names the backend of the answer; ``now`` (UTC) stamps it; ``lookback`` is the recurrence window
    (only used by :meth:`recurrence`)."""

    now: datetime
    lookback: timedelta = timedelta(days=7)
    system: System = "runai"
    identity: Identity | None = None
    evidence: list[EvidenceItem] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    excerpts: list[Excerpt] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    rec: Recurrence | None = None
    incident: list[TimelineEntry] = field(default_factory=list)
    #: other workloads' pods failed on the first failure's node around it (supporting evidence)
    nearby: Neighbours | None = None

    # -- parts ----------------------------------------------------------------------------------------

    def gap(self, what: str, why: str) -> None:
        """Something that could not be seen; the same (what, why) is recorded once."""
        if not any(g.what == what and g.why == why for g in self.gaps):
            self.gaps.append(Gap(what=what, why=why))

    def fetched(self, got: Fetched[Any], what: str | None = None, *, with_call: bool = False) -> bool:
        """A failed read becomes a gap (``what`` defaults to the call's label; ``with_call`` appends the call,
        ``"HTTP 503 after retries [GET /api/v1/workloads/<id>/history]"``); returns ``got.ok``."""
        if not got.ok:
            self.gap(what or got.what, got.cited_why if with_call else got.why or "failed")
        return got.ok

    def note(self, text: str) -> None:
        self.notes.append(text)

    def add(self, label: str, value: str, source: str, at: datetime | None = None) -> None:
        """One quantified fact: ``source`` is the full call it came from (``Fetched.path``)."""
        self.evidence.append(EvidenceItem(label=label, value=value, source=source, at=at))

    def link(self, label: str, url: str) -> None:
        self.links.append(Link(label=label, url=url))

    def excerpt(self, title: str, text: str, source: str) -> None:
        """A block of untrusted text quoted as evidence (already redacted or sanitized by the model)."""
        self.excerpts.append(Excerpt(title=title, text=text, source=source))

    def table(self, title: str, columns: list[str], rows: list[list[str]]) -> None:
        self.tables.append(Table(title=title, columns=columns, rows=rows))

    def recurrence(self, category: Category | str | None, times: list[datetime]) -> None:
        """Failures of ``category`` at ``times`` (UTC) inside :attr:`lookback`."""
        self.rec = Recurrence(
            category=category.value if isinstance(category, Category) else category,
            count=len(times),
            lookback_seconds=int(self.lookback.total_seconds()),
            occurrences=times,
        )

    def timeline(self, timeline: Timeline) -> None:
        """The incident timeline of a failure with several pods or tasks (:mod:`diagnosis.timeline`); one subject's
        story is not a timeline and is left out."""
        if len(timeline.failing()) < 2:
            return
        first = timeline.first()
        self.incident = [
            TimelineEntry(
                subject=e.subject,
                at=e.at,
                what=e.what,
                container=e.container,
                source=e.source,
                first=e is first,
                own=e.own,
                failure=e.failure,
            )
            for e in timeline.entries
        ]

    # -- the finished report ----------------------------------------------------------------------------

    def build(self, outcome: Outcome, headline: str, **kw: Any) -> Report:
        """The report: the accumulated parts plus ``kw`` (category, next_action, confidence, question, …)."""
        parts: dict[str, Any] = {
            "system": self.system,
            "outcome": outcome,
            "headline": headline,
            "identity": self.identity,
            "evidence": self.evidence,
            "gaps": self.gaps,
            "notes": self.notes,
            "links": self.links,
            "excerpts": self.excerpts,
            "recurrence": self.rec,
            "generated_at": self.now,
        }
        if self.tables:
            parts["tables"] = self.tables
        if self.incident:
            parts["timeline"] = self.incident
        if self.nearby is not None:
            parts["neighbours"] = self.nearby
        parts.update(kw)
        return Report(**parts)
