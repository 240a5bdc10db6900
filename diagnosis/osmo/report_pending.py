"""A PENDING (or queued WAITING) OSMO workflow: collect -> decide (pure) -> evidence -> phrase.

*Collect* reads events, requested resources, the pool quota and the pool's nodes; *decide* turns them into
:class:`~diagnosis.osmo.pending.PendingNumbers` and a verdict (:func:`decide_queued`, pure, no HTTP);
*evidence* adds the numbers with the calls they came from; *phrase* reads the headline and next action from
the verdict's entry (:data:`diagnosis.osmo.categories.PENDING`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from datetime import datetime

from diagnosis.osmo import collect
from diagnosis.osmo.categories import PendingFacts, pending_verdict
from diagnosis.osmo.client import OsmoCalls, OsmoClient
from diagnosis.osmo.models import (
    QUEUED_TASK_STATUSES,
    Group,
    NodeResources,
    Pool,
    PoolQuota,
    Task,
    TaskRequest,
    Workflow,
)
from diagnosis.osmo.pending import (
    PendingNumbers,
    Translation,
    decide_pending,
    parse_events,
    pending_confidence,
    translate_events,
)
from diagnosis.osmo.reporting import OsmoReportBuilder
from diagnosis.question import Question
from diagnosis.report import Confidence, Outcome, Report

#: at most this many distinct scheduling events are quoted
MAX_EVENT_LINES = 6


def fmt_seconds(seconds: float | None) -> str:
    """``5400`` -> ``1h 30m``; ``75`` -> ``1m 15s``; None -> ``-``."""
    if seconds is None:
        return "-"
    s = int(max(0, seconds))
    days, rem = divmod(s, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def waiting_group(wf: Workflow) -> Group | None:
    """The first group whose tasks wait to be scheduled (SCHEDULING/PROCESSING/SUBMITTING)."""
    for group in wf.groups:
        if group.status in QUEUED_TASK_STATUSES or any(t.status in QUEUED_TASK_STATUSES for t in group.tasks):
            return group
    return None


def pool_node_free_total(nodes: list[NodeResources], pool: str) -> int | None:
    """Free GPUs summed over the nodes of ``pool`` (from ``/api/resources``); None when no node is known."""
    frees = [f for n in nodes if (f := n.gpu_free(pool)) is not None]
    return sum(frees) if frees else None


def largest_node_free(nodes: list[NodeResources], pool: str) -> int | None:
    """Max free GPUs on one node of ``pool`` (nodes of other pools excluded); None when no node is known."""
    frees = [f for n in nodes if (f := n.gpu_free(pool)) is not None]
    return max(frees) if frees else None


def num(value: int | None) -> str:
    """A GPU count as shown: ``"unknown"`` when None."""
    return "unknown" if value is None else str(value)


@dataclass
class QueuedInputs:
    """What was read for a queued workflow: ``events`` text, ``requests`` per task name, the pool ``quota``
    and the pool's ``nodes`` (None when unread or the workflow names no pool)."""

    events: str | None = None
    requests: dict[str, TaskRequest] = field(default_factory=dict)
    quota: PoolQuota | None = None
    nodes: list[NodeResources] | None = None


@dataclass(frozen=True)
class QueuedDecision:
    """The pure verdict: the waiting ``group`` and its ``queued`` tasks, the pool's quota entry
    (``pool_info``; ``pool_listed`` is False when the quota was read but does not list the pool), the
    ``numbers`` compared and the ``outcome`` (None: a status report with no numeric cause)."""

    group: Group | None
    queued: list[Task]
    pool_info: Pool | None
    pool_listed: bool
    numbers: PendingNumbers
    outcome: Outcome | None

    @property
    def translations(self) -> tuple[Translation, ...]:
        return self.numbers.translations


# -- collect ------------------------------------------------------------------------------------------


async def collect_queued(client: OsmoClient, wf: Workflow, b: OsmoReportBuilder) -> QueuedInputs:
    """Every read of a queued workflow; each failed read is a gap on ``b``. Logs are read too (their cut
    notes and gaps are part of the answer), though the verdict does not use them."""
    pool = wf.pool
    quota: Awaitable[PoolQuota | None] = b.get(client.pool_quota([pool])) if pool else asyncio.sleep(0, None)
    nodes: Awaitable[list[NodeResources] | None] = b.get(client.resources([pool])) if pool else asyncio.sleep(0, None)
    _logs, got_events, got_requests, got_quota, got_nodes = await asyncio.gather(
        collect.task_logs(client, wf, b),
        collect.events(client, wf.name, b),
        collect.requests(client, wf, b),
        quota,
        nodes,
    )
    return QueuedInputs(events=got_events, requests=got_requests, quota=got_quota, nodes=got_nodes)


# -- decide (pure) --------------------------------------------------------------------------------------


def decide_queued(wf: Workflow, got: QueuedInputs) -> QueuedDecision:
    """The numbers and the verdict of a queued workflow (pure: no HTTP)."""
    pool = wf.pool
    group = waiting_group(wf)
    tasks = group.tasks if group else []
    queued = [t for t in tasks if t.status in QUEUED_TASK_STATUSES] or tasks
    asks = [r.gpu for t in queued if (r := got.requests.get(t.name)) is not None and r.gpu is not None]
    group_ask = sum(asks) if queued and len(asks) == len(queued) else None
    task_ask = max(asks, default=None)
    pool_info = got.quota.find(pool) if got.quota is not None and pool else None
    usage = pool_info.resource_usage if pool_info else None
    largest = largest_node_free(got.nodes, pool) if got.nodes is not None and pool else None
    total_free = usage.total_free if usage else None
    if total_free is None and got.nodes is not None and pool:
        # Without the pool's quota figures, the physical free GPUs are still the sum over its nodes.
        total_free = pool_node_free_total(got.nodes, pool)
    numbers = PendingNumbers(
        pool=pool,
        pool_status=pool_info.status if pool_info else None,
        priority=wf.priority,
        group=group.name if group else None,
        group_ask=group_ask,
        task_ask=task_ask,
        quota_free=usage.quota_free if usage else None,
        quota_limit=usage.quota_limit if usage else None,
        total_free=total_free,
        total_capacity=usage.total_capacity if usage else None,
        largest_node_free=largest,
        translations=tuple(translate_events(parse_events(got.events or ""))),
    )
    return QueuedDecision(
        group=group,
        queued=queued,
        pool_info=pool_info,
        pool_listed=not (got.quota is not None and pool and pool_info is None),
        numbers=numbers,
        outcome=decide_pending(numbers),
    )


# -- evidence -----------------------------------------------------------------------------------------------


def _queued_for(wf: Workflow, now: datetime) -> float | None:
    if wf.queued_time is not None:
        return wf.queued_time
    return (now - wf.submit_time).total_seconds() if wf.submit_time else None


def _ask_evidence(b: OsmoReportBuilder, wf: Workflow, d: QueuedDecision) -> None:
    if d.group is None:
        return
    source = str(OsmoCalls.task_requests(wf.name))
    b.add(
        f"GPUs asked (group {d.group.name}, {len(d.queued)} task(s) scheduled together)",
        num(d.numbers.group_ask),
        source,
    )
    if len(d.queued) > 1:
        b.add("GPUs asked by the largest task", num(d.numbers.task_ask), source)


def _pool_evidence(b: OsmoReportBuilder, wf: Workflow, d: QueuedDecision) -> None:
    pool, n = wf.pool or "", d.numbers
    usage = d.pool_info.resource_usage if d.pool_info is not None else None
    quota_source = str(OsmoCalls.pool_quota(pool))
    nodes_source = str(OsmoCalls.resources(pool))
    if d.pool_info is not None and usage is not None:
        b.add(f"pool {pool} status", d.pool_info.status or "unknown", quota_source)
        b.add(
            "quota_free",
            f"{num(usage.quota_free)} (quota_limit {num(usage.quota_limit)}, quota_used {num(usage.quota_used)})",
            quota_source,
        )
        b.add(
            "total_free",
            f"{num(usage.total_free)} (total_capacity {num(usage.total_capacity)}, "
            f"total_usage {num(usage.total_usage)})",
            quota_source,
        )
    if usage is None and n.total_free is not None:
        b.add(f"free GPUs summed over the nodes of {wf.pool} (pool quota unavailable)", str(n.total_free), nodes_source)
    if n.largest_node_free is not None:
        b.add(f"largest free on one node of {wf.pool}", str(n.largest_node_free), nodes_source)


def _event_excerpt(b: OsmoReportBuilder, wf: Workflow, events: str | None) -> None:
    """The latest distinct scheduling events (at most :data:`MAX_EVENT_LINES`), oldest first."""
    evs = parse_events(events or "")
    if not evs:
        return
    seen: list[str] = []
    for e in reversed(evs):
        line = f"{e.at} [{e.task}] {e.message}" if e.task else f"{e.at} {e.message}"
        if e.message not in [s.split("] ", 1)[-1] for s in seen]:
            seen.append(line)
        if len(seen) >= MAX_EVENT_LINES:
            break
    b.excerpt("Latest scheduling events", "\n".join(reversed(seen)), str(OsmoCalls.events(wf.name)))


def queued_evidence(b: OsmoReportBuilder, wf: Workflow, now: datetime, got: QueuedInputs, d: QueuedDecision) -> None:
    """The numbers of a queued workflow, the scheduler's words in plain language, and the latest events."""
    if not d.pool_listed:
        b.gap(f"pool {wf.pool} in {OsmoCalls.endpoint(OsmoCalls.pool_quota(wf.pool or ''))}", "the pool is not listed")
    queued_for = _queued_for(wf, now)
    if queued_for is not None:
        b.add("queued for", fmt_seconds(queued_for), OsmoCalls.workflow(wf.name).cite("queued_time"))
    _ask_evidence(b, wf, d)
    _pool_evidence(b, wf, d)
    for tr in d.translations:
        b.note(f'The scheduler says "{tr.raw}": {tr.plain}.')
    _event_excerpt(b, wf, got.events)


# -- phrase ------------------------------------------------------------------------------------------------


def queued_facts(wf: Workflow, d: QueuedDecision) -> PendingFacts:
    """The plain facts the verdict's entry phrases its headline and next action from."""
    n = d.numbers
    constraint = next(((t.plain, t.raw) for t in n.translations if t.kind == "constraint"), None)
    return PendingFacts(
        head=f"Workflow {wf.name} is {wf.status}",
        pool=wf.pool,
        ask=num(n.group_ask),
        quota_free=num(n.quota_free),
        quota_limit=num(n.quota_limit),
        total_free=num(n.total_free),
        total_capacity=num(n.total_capacity),
        task_ask=num(n.task_ask),
        largest=num(n.largest_node_free),
        priority=wf.priority or "NORMAL",
        pool_status=n.pool_status,
        status=wf.status,
        has_group=d.group is not None,
        constraint=constraint,
    )


async def pending_report(client: OsmoClient, wf: Workflow, question: Question, now: datetime) -> Report:
    """PENDING diagnosis: events in plain language, then pool quota vs capacity vs per-node fit vs
    placement vs pool offline, with the numbers."""
    b = OsmoReportBuilder(now=now)
    got = await collect_queued(client, wf, b)
    d = decide_queued(wf, got)
    b.workflow_parts(wf, question)
    queued_evidence(b, wf, now, got, d)
    facts = queued_facts(wf, d)
    verdict = pending_verdict(d.outcome)
    conf = pending_confidence(d.numbers, d.outcome)
    return b.build(
        d.outcome or Outcome.STATUS,
        verdict.headline(facts),
        confidence=Confidence(level=conf[0], signals=conf[1]) if conf else None,  # type: ignore[arg-type]
        next_action=verdict.next_action(facts),
    )
