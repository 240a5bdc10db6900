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

:class:`~diagnosis.runai.state.Diagnosis` is what the jobs share (the question, the client, Tier 2 access, the clock,
the deadline, the gaps so far), in a leaf module: the procedure imports the jobs, the jobs import the leaf, never
the procedure. Every failed fetch becomes a named :class:`~diagnosis.report.Gap`.
"""

from __future__ import annotations

from datetime import datetime

import httpx

from diagnosis.config import KubeConfig, RunaiConfig
from diagnosis.errors import BackendUnavailable
from diagnosis.fetched import describe_error
from diagnosis.question import Question
from diagnosis.report import Report
from diagnosis.runai import decision, reporting, resolution, routing
from diagnosis.runai.client import ApiError, RunaiClient
from diagnosis.runai.models import Workload
from diagnosis.runai.state import Deadline, Diagnosis
from diagnosis.runai.tier1 import Tier1


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
                return await run(diagnosis)
            finally:
                for pending in diagnosis.project_items.values():
                    pending.cancel()  # a quota read the answer did not need
                if diagnosis.nearby is not None:
                    diagnosis.nearby.cancel()  # a neighbours' read started beside Tier 2 that was not used
        except (ApiError, httpx.HTTPError, TimeoutError) as exc:
            raise BackendUnavailable(f"Run:ai at {config.base_url} did not answer: {describe_error(exc)}") from exc


async def run(d: Diagnosis) -> Report:
    """The four jobs: resolve (spec Step 1), then the diagnosis of the selected workload."""
    resolved = await resolution.resolve(d)
    if isinstance(resolved, Report):
        return resolved
    workload, tier1 = resolved
    return await diagnose(d, workload, tier1)


async def diagnose(d: Diagnosis, workload: Workload, tier1: Tier1) -> Report:
    """Route (spec Steps 1.4-1.5), decide (Steps 2-4) unless routed out, and phrase (Step 5), over the collected
    Tier 1 evidence of ``workload`` (a digest scan enters here too, with Tier 1 read)."""
    early = len(d.gaps)
    routed = await routing.route(d, workload, tier1)
    found = routed if routed.outcome is not None else await decision.decide(d, workload, tier1, routed)
    return reporting.phrase(d, workload, tier1, found, early)
