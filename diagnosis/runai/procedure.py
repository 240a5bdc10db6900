"""Run:ai failed-workload diagnosis, step by step (``shared/spec/runai-diagnose-failed-workload.md``).

One diagnosis is four jobs, each entered once, in this order (data flows one way):

1. **resolve** (:mod:`diagnosis.runai.resolution`, spec Step 1): the question checked against the control plane,
   one workload selected, its Tier 1 read in one concurrent round trip (:func:`diagnosis.runai.tier1.collect`),
   its cluster checked; or the answer that ends the diagnosis there (a follow-up question, not found, a cluster
   mismatch);
2. **route** (:mod:`diagnosis.runai.routing`, Steps 1.4-1.5): the phase rules: route out, or go on;
3. **decide** (:mod:`diagnosis.runai.decision`, Steps 2-4): signals and the incident timeline to a finding,
   Tier 2 where Step 4 calls for it (:mod:`diagnosis.runai.tier2`), the occurrences in the lookback;
4. **phrase** (:func:`diagnosis.runai.reporting.phrase`, Step 5): the report, its words from the category's
   entry (:mod:`diagnosis.runai.categories`).

:class:`Diagnosis` is what the jobs share (the question, the client, Tier 2 access, the clock, the deadline,
the gaps so far). Every failed fetch becomes a named :class:`~diagnosis.report.Gap`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx

from diagnosis.config import KubeConfig, RunaiConfig
from diagnosis.errors import BackendUnavailable
from diagnosis.fetched import describe_error
from diagnosis.question import Question
from diagnosis.report import Gap, Report
from diagnosis.runai import decision, neighbours, reporting, resolution, routing
from diagnosis.runai import resolve as lookup
from diagnosis.runai.client import ApiError, RunaiClient
from diagnosis.runai.models import Workload
from diagnosis.runai.reporting import ReportBuilder
from diagnosis.runai.signals import Signal
from diagnosis.runai.tier1 import Tier1


class Deadline:
    """A hard overall deadline (seconds from creation)."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def remaining(self) -> float:
        return max(0.001, self.end - time.monotonic())


async def diagnose_runai(
    question: Question, config: RunaiConfig, kube: KubeConfig, *, now: datetime, offer_choices: bool = False
) -> Report:
    """Answer ``question`` about a Run:ai workload at time ``now`` (UTC).

    Raises :class:`~diagnosis.question.QuestionError` for a bad lookback and
    :class:`~diagnosis.errors.BackendUnavailable` when Run:ai cannot be reached or refuses the
    credentials; every other problem becomes a gap in the returned report.
    """
    lookback = question.lookback_delta()
    deadline = Deadline(config.deadline)
    async with RunaiClient(config) as client:
        try:
            diagnosis = Diagnosis(question, client, kube, now, lookback, deadline, config)
            diagnosis.offer_choices = offer_choices
            try:
                return await diagnosis.run()
            finally:
                for pending in diagnosis.project_items.values():
                    pending.cancel()  # a quota read the answer did not need
                if diagnosis.nearby is not None:
                    diagnosis.nearby.cancel()  # a neighbours' read started beside Tier 2 that was not used
        except (ApiError, httpx.HTTPError, TimeoutError) as exc:
            raise BackendUnavailable(f"Run:ai at {config.base_url} did not answer: {describe_error(exc)}") from exc


@dataclass
class Diagnosis:
    """One Run:ai diagnosis in progress: the question, the client and Tier 2 access, the time and lookback, the
    deadline, and what the jobs found on the way (gaps, the workloads of the asked name, the projects listed);
    :meth:`run` answers it: resolve, then :meth:`diagnose` (route, decide, phrase)."""

    question: Question
    client: RunaiClient
    kube: KubeConfig
    now: datetime
    lookback: timedelta
    deadline: Deadline
    config: RunaiConfig
    gaps: list[Gap] = field(default_factory=list)
    t2_signals: list[Signal] = field(default_factory=list)  # signals of the (one) Tier 2 read
    t2_window: tuple[datetime | None, datetime | None] = (None, None)  # the run: node events outside it are ignored
    #: read the listable answers of a follow-up question (clusters, projects holding the name) to offer as choices;
    #: off, a missing identifier is asked for before any call (spec "Parameters")
    offer_choices: bool = False
    found: list[Workload] = field(default_factory=list)  # every workload of the asked name that was found
    #: the projects listed while resolving the question, of every cluster (empty when they were not needed)
    projects: list[lookup.ProjectInfo] = field(default_factory=list)
    #: the question's scope words as typed ("in X", bare words), before resolution used any of them
    scope_words: list[str] = field(default_factory=list)
    #: the projects-API item of a Pending workload's project, read beside its Tier 1 evidence
    project_items: dict[str, asyncio.Future[dict[str, Any] | None]] = field(default_factory=dict)
    #: count other workloads' pods failed on the first failure's node around it when the rule asks for it
    #: (:mod:`diagnosis.runai.neighbours`; a digest scan does not)
    read_neighbours: bool = True
    #: that read when it was started beside Tier 2 (:func:`diagnosis.runai.neighbours.start`), until it is settled
    nearby: asyncio.Future[neighbours.Nearby] | None = None

    @property
    def cutoff(self) -> datetime:
        return self.now - self.lookback

    def builder(self, gaps: list[Gap] | None = None) -> ReportBuilder:
        """A report builder carrying ``gaps`` (default: the gaps found so far, a name lookup that paged wrongly
        for instance)."""
        b = ReportBuilder(
            now=self.now,
            lookback=self.lookback,
            console_url=self.config.console_url,
            workload_url_template=self.config.workload_url_template,
        )
        for g in self.gaps if gaps is None else gaps:
            b.gap(g.what, g.why)
        return b

    async def run(self) -> Report:
        """The four jobs: resolve (spec Step 1), then the diagnosis of the selected workload."""
        resolved = await resolution.resolve(self)
        if isinstance(resolved, Report):
            return resolved
        workload, tier1 = resolved
        return await self.diagnose(workload, tier1)

    async def diagnose(self, workload: Workload, tier1: Tier1) -> Report:
        """Route (spec Steps 1.4-1.5), decide (Steps 2-4) unless routed out, and phrase (Step 5), over the
        collected Tier 1 evidence of ``workload`` (a digest scan enters here too, with Tier 1 read)."""
        early = len(self.gaps)
        routed = await routing.route(self, workload, tier1)
        found = routed if routed.outcome is not None else await decision.decide(self, workload, tier1, routed)
        return reporting.phrase(self, workload, tier1, found, early)
