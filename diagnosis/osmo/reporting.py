"""OSMO's report builder (issue 10 §2): :class:`diagnosis.builder.ReportBuilder` plus reads that become gaps,
stream-cut notes, and the parts every single-workflow report has.

A read goes through :meth:`OsmoReportBuilder.get`: a client method's :class:`~diagnosis.fetched.Read` carries
its call (:class:`~diagnosis.osmo.client.OsmoCalls`, built from the read's own arguments), the read is awaited
with :func:`diagnosis.fetched.fetch` (the one describer of errors), and a failure becomes
``Gap(what="<label> (GET <path>)", why=...)``; refused credentials (:class:`~diagnosis.osmo.client.AuthError`)
end the diagnosis instead.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from diagnosis.builder import ReportBuilder, System
from diagnosis.errors import size
from diagnosis.fetched import Call, Read, fetch
from diagnosis.osmo.client import AuthError, ItemList, OsmoCalls, StreamText
from diagnosis.osmo.models import ListEntry, Workflow
from diagnosis.question import Question
from diagnosis.report import Identity, Link, Outcome, Report

T = TypeVar("T")
log = logging.getLogger(__name__)

GRAFANA_NA = "The Grafana resource usage link is not available for this workflow."
DASHBOARD_NA = "The Kubernetes dashboard link is not available for this workflow."
_USAGE_Q = re.compile(
    r"(?i)\b(?:utili[sz]ation|usage|metrics?|grafana|how much (?:gpu|cpu|memory)|"
    r"(?:gpu|cpu|memory) (?:use|load))\b"
)


def link_parts(wf: Workflow | ListEntry) -> tuple[list[Link], list[str]]:
    """Grafana and Kubernetes dashboard links, or the spec's exact "…is not available…" sentences."""
    links: list[Link] = []
    notes: list[str] = []
    if wf.grafana_url:
        links.append(Link(label="View resource usage in Grafana", url=wf.grafana_url))
    else:
        notes.append(GRAFANA_NA)
    if wf.dashboard_url:
        links.append(Link(label="Open Kubernetes dashboard", url=wf.dashboard_url))
    else:
        notes.append(DASHBOARD_NA)
    if wf.overview:
        links.append(Link(label="OSMO Web", url=wf.overview))
    return links, notes


def gap_what(call: Call, label: str | None = None, purpose: str | None = None) -> str:
    """The ``what`` of a failed read: ``"events (GET /api/workflow/w-1/events)"``; with ``purpose``,
    ``"template spec (for the app suggestion)"`` (the reason it was read says more than its path)."""
    return f"{label or call.label} ({purpose or str(call)})"


@dataclass(kw_only=True)
class OsmoReportBuilder(ReportBuilder):
    """The OSMO parts of a report. ``read_notes`` (how reads were cut or bounded) follow the other notes in the
    finished report, as they always have; ``question`` is the asked text."""

    system: System = "osmo"
    question: str | None = None
    read_notes: list[str] = field(default_factory=list)

    # -- reads ----------------------------------------------------------------------------------------

    async def get(self, read: Read[T], *, label: str | None = None, purpose: str | None = None) -> T | None:
        """``await read``; on any failure but refused credentials, a gap (:func:`gap_what` of the read's call)
        and None.

        A list that came back with skipped items is kept, and the skipped items are a gap too. Raises
        :class:`~diagnosis.osmo.client.AuthError` (the caller ends the diagnosis with one clear line)."""
        refused: list[AuthError] = []

        async def guarded() -> T:
            try:
                return await read
            except AuthError as exc:  # fetch would make it a gap; refused credentials must end the answer
                refused.append(exc)
                raise

        got = await fetch(Read(read.call, guarded))
        if refused:
            raise refused[0]
        what = gap_what(read.call, label, purpose)
        if not got.ok:
            self.gap(what, got.why or "failed")
            return None
        if isinstance(got.value, ItemList):
            skipped = got.value.gap_why("items")
            if skipped:
                self.gap(what, skipped)
        return got.value

    def stream(self, what: str, result: StreamText | None) -> StreamText | None:
        """How the stream was read (caps, idle and deadline cuts) goes to the log; the person reads one
        plain sentence (issue 13 §3). Returns ``result``."""
        if result is None:
            return None
        note = result.cut_note(what)
        if not note:
            return result
        log.info("OSMO %s cut: %s", what, note)
        if result.dropped_bytes:
            # how much was skipped, in the person's units (issue 22 §2)
            still = " (it was still open when the read stopped)" if result.reason in ("idle", "deadline") else ""
            self.read_notes.append(
                f"The {what} shown are only the last {size(result.bytes_read)} of a longer output: its first "
                f"{size(result.dropped_bytes)} were skipped{still}."
            )
        elif result.reason in ("idle", "deadline"):
            self.read_notes.append(
                f"The {what} shown are what the workflow had written so far: it is still running and "
                f"its {what} are still open."
            )
        else:
            self.read_notes.append(f"The {what} shown may be incomplete (the connection broke while reading).")
        return result

    # -- parts ----------------------------------------------------------------------------------------

    def workflow_parts(self, wf: Workflow, question: Question) -> None:
        """What every single-workflow report has: identity, status evidence, links or their sentences, and
        the Grafana sentence when the question asks for live usage."""
        self.identity = Identity(
            system="osmo", workflow_id=wf.name, pool=wf.pool, status=wf.status, user=wf.submitted_by
        )
        self.question = question.text
        links, notes = link_parts(wf)
        source = str(OsmoCalls.workflow(wf.name))
        self.add("status", wf.status, source)
        if wf.priority:
            self.add("priority", wf.priority, source)
        if wf.submit_time:
            self.add("submit_time", wf.submit_time.isoformat(), source)
        if _USAGE_Q.search(question.text or ""):
            notes.insert(
                0,
                "Live GPU/CPU/memory utilization is only in Grafana (OSMO's API exposes no live metrics), so no "
                "number is given here"
                + (f": {wf.grafana_url}" if wf.grafana_url else " (and this workflow has no Grafana link)."),
            )
        self.links += links
        self.notes += notes

    # -- the finished report ----------------------------------------------------------------------------

    def build(self, outcome: Outcome, headline: str, **kw: Any) -> Report:
        """The report; the read notes come after the other notes."""
        self.notes += self.read_notes
        self.read_notes = []
        kw.setdefault("question", self.question)
        return super().build(outcome, headline, **kw)


def new_builder(now: datetime) -> OsmoReportBuilder:
    """An OSMO builder stamped ``now`` (UTC)."""
    return OsmoReportBuilder(now=now)
