"""A failed OSMO workflow (spec "Diagnose a Failed Workflow"): collect -> decide (pure) -> evidence -> phrase.

*Collect* reads logs, events, requested resources, the error log and an upstream upload failure
(:mod:`diagnosis.osmo.collect`); *decide* picks the task that failed first and its category
(:func:`decide_failed`, pure, no HTTP); *evidence* adds the quantified facts with the calls they came from;
*phrase* reads the verdict and next action from the category's entry (:mod:`diagnosis.osmo.categories`).
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from datetime import datetime

from diagnosis.osmo import collect
from diagnosis.osmo.categories import FailedFacts, category
from diagnosis.osmo.classify import (
    Finding,
    TaskSignals,
    classify_task,
    failed_tasks,
    root_failed_task,
    task_timeline,
)
from diagnosis.osmo.classify import confidence as osmo_confidence
from diagnosis.osmo.client import OsmoCalls, OsmoClient
from diagnosis.osmo.collect import UploadCause
from diagnosis.osmo.logsummary import LogDigest, digest_logs, exception_line
from diagnosis.osmo.models import Task, TaskRequest, Workflow
from diagnosis.osmo.reporting import OsmoReportBuilder
from diagnosis.question import Question
from diagnosis.report import Category, Confidence, Outcome, Report

_IMAGE = re.compile(r'image "([^"]+)"')
_PULL_EVENT = re.compile(r"Failed to pull|ErrImagePull|BackOff")
_NOTABLE_EVENT = re.compile(r"Failed|Error|BackOff|Evict|OOM|Killing|Preempt|Unhealthy")
_NETWORK_LINE = re.compile(r"NCCL|collective")
#: the source of an image name read from the failure message or the events (not one call)
IMAGE_SOURCE = "failure_message / events"


@dataclass
class FailedInputs:
    """What was read for a failed workflow: ``root`` (the task that failed first with its own failure, None
    when only followers are visible), ``failed`` (every failed task), ``task`` (root, else the first failed
    one), ``logs`` per task name, ``events`` text, ``requests`` per task name, the ``error_log`` text and an
    upstream ``upload`` failure."""

    wf: Workflow
    root: Task | None
    failed: list[Task]
    task: Task | None
    logs: dict[str, str] = field(default_factory=dict)
    events: str | None = None
    requests: dict[str, TaskRequest] = field(default_factory=dict)
    error_log: str | None = None
    upload: UploadCause | None = None


@dataclass(frozen=True)
class FailedDecision:
    """The pure verdict: the ``signals`` classified, the ``finding``, the task's log ``digest``, its
    ``request``, the ``image`` named by the failure message or events, and the log's ``error`` line."""

    signals: TaskSignals
    finding: Finding
    digest: LogDigest
    request: TaskRequest | None
    image: str | None
    error: str | None

    @property
    def category(self) -> Category:
        return self.finding.category


def error_log_lines(text: str | None) -> list[str]:
    """The error lines of an error log, at most 5 (none when no line looks like an error)."""
    if not text:
        return []
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return [ln for ln in lines if re.search(r"(?i)error|exception|traceback|fatal|failed|killed", ln)][-5:]


# -- collect ------------------------------------------------------------------------------------------


async def collect_failed(client: OsmoClient, wf: Workflow, b: OsmoReportBuilder) -> FailedInputs:
    """Every read of a failed workflow; each failed read is a gap on ``b``."""
    root = root_failed_task(wf)
    failed = failed_tasks(wf)
    got = FailedInputs(wf=wf, root=root, failed=failed, task=root or (failed[0] if failed else None))
    got.logs, got.events, got.requests = await asyncio.gather(
        collect.task_logs(client, wf, b), collect.events(client, wf.name, b), collect.requests(client, wf, b)
    )
    task = got.task
    # The task's error log is read when its log shows no error line (empty, cut, or only progress output).
    explained = task is not None and bool(digest_logs(got.logs.get(task.name) or "", task.name).error_lines)
    if not explained:
        got.error_log = await collect.error_log(client, wf, task, b)
    if root is not None:
        got.upload = await collect.upstream_upload(client, wf, root, got.logs, b)
    return got


# -- decide (pure) --------------------------------------------------------------------------------------


def task_signals(
    wf: Workflow, task: Task | None, logs: dict[str, str], events: str | None
) -> tuple[TaskSignals, LogDigest]:
    """The signals of the task that failed first (the workflow's own status when no task is visible)."""
    if task is None:
        return (
            TaskSignals(
                task="",
                status=wf.status,
                exit_code=None,
                failure_message="",
                workflow_status=wf.status,
                events=events or "",
            ),
            LogDigest(task=None),
        )
    digest = digest_logs(logs.get(task.name) or "", task.name)
    signals = TaskSignals(
        task=task.name,
        status=task.status,
        exit_code=task.exit_code,
        failure_message=task.failure_message or "",
        workflow_status=wf.status,
        events=collect.task_events(events, task.name),
        log_tail="\n".join(digest.error_lines + digest.last_lines),
    )
    return signals, digest


def image_of(signals: TaskSignals) -> str | None:
    """The image named by the failure message, else by an image-pull event."""
    pulled = [ln for ln in signals.events.splitlines() if _PULL_EVENT.search(ln)]
    for text in (signals.failure_message, *pulled):
        m = _IMAGE.search(text or "")
        if m:
            return m.group(1)
    return None


def decide_failed(got: FailedInputs) -> FailedDecision:
    """The category of a failed workflow from what was read (pure: no HTTP)."""
    signals, digest = task_signals(got.wf, got.task, got.logs, got.events)
    return FailedDecision(
        signals=signals,
        finding=classify_task(signals),
        digest=digest,
        request=got.requests.get(got.task.name) if got.task is not None else None,
        image=image_of(signals),
        error=exception_line(digest),
    )


# -- evidence -----------------------------------------------------------------------------------------------


def _task_history(b: OsmoReportBuilder, wf: Workflow, task: Task) -> None:
    """The failed task's stage times and, with several attempts, every retry (issue 9 §5: ``verbose=true``)."""
    stages = task.stages()
    if stages:
        text = ", ".join(f"{label} {at.strftime('%Y-%m-%d %H:%M:%S')}" for label, at in stages)
        before_end = [label for label, _ in stages if label != "ended"]
        if task.end_time is not None and before_end:
            text += f" (it ended during {before_end[-1]})"
        b.add(f"task {task.name} stages (UTC)", text, str(OsmoCalls.workflow(wf.name)))
    attempts = wf.retries(task.name)
    if len(attempts) > 1:
        parts = [
            f"retry {a.retry_id if a.retry_id is not None else '?'} {a.status}"
            + (f" exit {a.exit_code}" if a.exit_code is not None else "")
            for a in attempts
        ]
        b.add(
            f"task {task.name} attempts ({len(attempts)})", "; ".join(parts), str(OsmoCalls.workflow_verbose(wf.name))
        )


def _task_evidence(b: OsmoReportBuilder, got: FailedInputs) -> None:
    """The failed task's status, exit code, message, node, history; then the tasks that followed it."""
    wf, task = got.wf, got.task
    source = str(OsmoCalls.workflow(wf.name))
    if task is not None:
        b.add(f"task {task.name} status", task.status, source, task.end_time)
        if task.exit_code is not None:
            b.add(f"task {task.name} exit code", str(task.exit_code), source)
        if task.failure_message:
            b.add(f"task {task.name} failure_message", " ".join(task.failure_message.split()), source)
        if task.node_name:
            b.add(f"task {task.name} node", task.node_name, source)
        _task_history(b, wf, task)
    for warning in wf.warnings[:3]:
        b.add("workflow warning", warning, source)
    error_source = OsmoCalls.endpoint(OsmoCalls.error_logs(wf.name, task.name if task else ""))
    for line in error_log_lines(got.error_log)[-3:]:
        b.add(f"error log of task {task.name if task else ''}", line, error_source)
    for other in got.failed:
        if task is None or other.name == task.name:
            continue
        value = other.status + (f", exit code {other.exit_code}" if other.exit_code is not None else "")
        if other.failure_message:
            value += f": {' '.join(other.failure_message.split())}"
        b.add(f"task {other.name} (followed the failure)", value, source)
    if wf.cancelled_by:
        b.add("cancelled_by", wf.cancelled_by, source)


def failed_evidence(b: OsmoReportBuilder, got: FailedInputs, d: FailedDecision) -> None:
    """Every quantified fact of a failed workflow, in the order a reader checks them."""
    wf, task = got.wf, got.task
    b.timeline(task_timeline(wf))
    _task_evidence(b, got)
    if got.upload is not None:
        b.add(
            f"upstream task {got.upload.task} (COMPLETED) output upload",
            got.upload.line,
            OsmoCalls.logs(wf.name, got.upload.task).label,
        )
    if d.request is not None and d.category == Category.OOM_KILLED and d.request.memory:
        b.add(
            f"task {task.name if task else ''} memory request",
            d.request.memory,
            str(OsmoCalls.task_requests(wf.name)),
        )
    if d.image:
        b.add("image", d.image, IMAGE_SOURCE)
    events_source = str(OsmoCalls.events(wf.name))
    for line in [ln for ln in d.signals.events.splitlines() if _NOTABLE_EVENT.search(ln)][:5]:
        b.add("event", line, events_source)
    log_source = OsmoCalls.logs(wf.name, d.digest.task).label
    if d.error:
        b.add("error line", d.error, log_source)
    network = [ln for ln in d.digest.error_lines if _NETWORK_LINE.search(ln)]
    if d.finding.detail == "NCCL" and network:
        b.add("NCCL line", network[-1], log_source)
    if got.root is None and got.failed and d.category == Category.UPSTREAM_FAILED:
        b.gap("the upstream task that failed first", "only FAILED_UPSTREAM tasks are visible in the workflow query")
    if d.digest.last_lines:
        b.excerpt(
            f"Last lines of task {d.digest.task} before the failure",
            "\n".join(d.digest.last_lines),
            OsmoCalls.endpoint(OsmoCalls.logs(wf.name)),
        )
    elif task is not None and not got.logs.get(task.name):
        b.note(f"The logs of task {task.name} are empty (the task may never have started).")


# -- phrase ------------------------------------------------------------------------------------------------


def failed_facts(got: FailedInputs, d: FailedDecision) -> FailedFacts:
    """The plain facts the category's entry phrases its verdict and next action from."""
    task = got.task
    how = (
        task.status + (f" with exit code {task.exit_code}" if task.exit_code is not None else "")
        if task is not None
        else got.wf.status
    )
    return FailedFacts(
        workflow=got.wf.name,
        status=got.wf.status,
        who=f"task {task.name}" if task is not None else "the workflow",
        how=how,
        task=task.name if task is not None else None,
        exit_code=task.exit_code if task is not None else None,
        signal=d.finding.signal,
        detail=d.finding.detail,
        error=d.error,
        memory=d.request.memory if d.request and d.request.memory else None,
        image=d.image,
    )


def with_upload(upload: UploadCause | None, action: str) -> str:
    """The failed task's own next action, after fixing the upstream upload when that is the probable cause."""
    if upload is None:
        return action
    return (
        f"First find out why upstream task {upload.task}'s output upload failed (its output path and the data "
        "credentials, `osmo credential list`) and rerun it, so the inputs are complete; then "
        + action[:1].lower()
        + action[1:]
    )


def failed_headline(got: FailedInputs, facts: FailedFacts, d: FailedDecision) -> str:
    """The category's verdict, then the probable upstream cause when an upstream upload failed."""
    headline = category(d.category).headline(facts)
    if got.upload is not None and got.task is not None:
        headline = headline.rstrip() + ("" if headline.rstrip().endswith((".", "!", "?")) else ".")
        headline += (
            f" Probable cause: its input came from upstream task {got.upload.task}, which COMPLETED although "
            f'its output upload failed ("{got.upload.message}"), so task {got.task.name} may have read missing '
            "or partial inputs."
        )
    return headline


async def failed_report(client: OsmoClient, wf: Workflow, question: Question, now: datetime) -> Report:
    """Failed workflow: category from status, exit code, failure_message, events and logs."""
    b = OsmoReportBuilder(now=now)
    got = await collect_failed(client, wf, b)
    d = decide_failed(got)
    b.workflow_parts(wf, question)
    failed_evidence(b, got, d)
    facts = failed_facts(got, d)
    level, basis = osmo_confidence(d.finding)
    return b.build(
        Outcome.FAILED,
        failed_headline(got, facts, d),
        category=d.category,
        confidence=Confidence(level=level, signals=basis),  # type: ignore[arg-type]
        next_action=with_upload(got.upload, category(d.category).next_action(facts)),
    )
