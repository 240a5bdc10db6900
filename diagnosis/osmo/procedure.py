"""The OSMO workflow procedure (``shared/spec/osmo-workflow-status.md``): list, status, failed,
PENDING, COMPLETED follow-ups and explain, each ending in one :class:`~diagnosis.report.Report`.

Data flows one way: question -> query the workflow (cached once) -> collect evidence
concurrently (logs per task with a bound, events, requested resources, pool quota, resources)
-> classify (pure: :mod:`diagnosis.osmo.classify`, :mod:`diagnosis.osmo.pending`) -> report.

Errors: an unknown workflow ID is a ``not_found`` report (never a similar ID); a failed fetch of
anything but the workflow itself (an error status, a 422, a 2xx body that is not JSON or has a field
the models cannot read, items of a list that had to be skipped) becomes a named
:class:`~diagnosis.report.Gap` and the diagnosis goes on from the rest; only an unreachable service,
refused credentials or an unusable answer to the workflow query itself raise
:class:`diagnosis.answer.BackendUnavailable`.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import httpx

from diagnosis.config import OsmoConfig
from diagnosis.osmo.classify import (
    Finding,
    TaskSignals,
    classify_task,
    failed_tasks,
    root_failed_task,
    upload_failure,
    upstream_groups,
)
from diagnosis.osmo.classify import confidence as osmo_confidence
from diagnosis.osmo.client import (
    AuthError,
    ItemList,
    OsmoApiError,
    OsmoBadResponse,
    OsmoClient,
    StreamText,
    WorkflowNotFound,
)
from diagnosis.osmo.logsummary import (
    LogDigest,
    digest_logs,
    exception_line,
    input_tasks,
    split_by_task,
    summarize_spec,
)
from diagnosis.osmo.models import (
    QUEUED_TASK_STATUSES,
    Group,
    ListEntry,
    NodeResources,
    PoolQuota,
    Task,
    TaskRequest,
    Workflow,
    is_failed,
)
from diagnosis.osmo.pending import PendingNumbers, decide_pending, parse_events, pending_confidence, translate_events
from diagnosis.question import Question, parse_text
from diagnosis.report import (
    Category,
    Confidence,
    EvidenceItem,
    Excerpt,
    Gap,
    Identity,
    Link,
    Outcome,
    Report,
    Table,
)

T = TypeVar("T")
log = logging.getLogger(__name__)
LOG_CONCURRENCY = 5  # the spec's "one subagent per five tasks"
MAX_TASK_LOGS = 20
GRAFANA_NA = "The Grafana resource usage link is not available for this workflow."
DASHBOARD_NA = "The Kubernetes dashboard link is not available for this workflow."
WORKFLOW_ID = re.compile(r"\b([A-Za-z][A-Za-z0-9_.-]*-[0-9]+)\b")
_USAGE_Q = re.compile(
    r"(?i)\b(?:utili[sz]ation|usage|metrics?|grafana|how much (?:gpu|cpu|memory)|"
    r"(?:gpu|cpu|memory) (?:use|load))\b"
)
# Spec: "Use clear text labels": the order a list is grouped in.
STATUS_ORDER = ("FAILED", "RUNNING", "PENDING", "WAITING", "COMPLETED")

PLAIN: dict[Category, str] = {
    Category.OOM_KILLED: "the task ran out of memory and was OOM-killed",
    Category.IMAGE_PULL_FAILED: "the container image could not be pulled, so the task never ran",
    Category.INIT_FAILED: "OSMO's setup (osmo-init: inputs, mounts) failed, so the user code never ran",
    Category.DATA_FAILED: "OSMO's data step (download, mount, upload or data authorization) failed",
    Category.START_FAILED: "the pod failed to start (start error, start timeout or preflight failure)",
    Category.CRASH_APP_ERROR: "the task's own program exited with an error",
    Category.NODE_FAILURE: "the backend node failed or evicted the task (node or backend error)",
    Category.PREEMPTED: "the task was preempted by higher-priority work",
    Category.TIMEOUT: "the workflow hit its timeout",
    Category.CANCELED: "the workflow was canceled",
    Category.UPSTREAM_FAILED: "an upstream task failed, and its own failure cannot be seen",
    Category.SERVER_ERROR: "an OSMO service or control-sidecar error ended the task",
    Category.UNKNOWN: "the evidence does not name a cause",
}


class _Gaps:
    """Collects named gaps: a fetch that failed becomes ``Gap(what, why)`` and yields None."""

    def __init__(self) -> None:
        self.items: list[Gap] = []
        self.notes: list[str] = []

    async def get(self, what: str, coro: Awaitable[T]) -> T | None:
        """``await coro``; on any failure but refused credentials, a gap named ``what`` and None.
        A list that came back with skipped items is kept, and the skipped items are a gap too."""
        try:
            result = await coro
        except AuthError:
            raise
        except WorkflowNotFound as exc:
            self.items.append(Gap(what=what, why=f"HTTP {exc.status}: {exc.message}"))
        except OsmoBadResponse as exc:
            self.items.append(Gap(what=what, why=f"the answer could not be used: {exc.message}"))
        except OsmoApiError as exc:
            why = f"HTTP {exc.status}" + (f": {exc.message}" if exc.message else "")
            if exc.status >= 500 or exc.status == 429:
                why += " (after retries)"
            self.items.append(Gap(what=what, why=why))
        except httpx.HTTPError as exc:
            self.items.append(Gap(what=what, why=f"{type(exc).__name__} after retries"))
        except Exception as exc:  # a fetch must never end the diagnosis (the gap names the error)
            log.warning("OSMO fetch %s failed unexpectedly", what, exc_info=True)
            self.items.append(Gap(what=what, why=f"unexpected {type(exc).__name__} while reading the answer"))
        else:
            if isinstance(result, ItemList):
                skipped = result.gap_why("items")
                if skipped:
                    self.items.append(Gap(what=what, why=skipped))
            return result
        return None

    def stream(self, what: str, result: StreamText | None) -> StreamText | None:
        """How the stream was read (caps, idle and deadline cuts) goes to the log; the person reads one
        plain sentence (issue 13 §3)."""
        if result is not None:
            note = result.cut_note(what)
            if note:
                log.info("OSMO %s cut: %s", what, note)
                if result.dropped_bytes:
                    self.notes.append(
                        f"The {what} shown are only the last part of a longer output (its first part is not shown)."
                    )
                elif result.reason in ("idle", "deadline"):
                    self.notes.append(
                        f"The {what} shown are what the workflow had written so far: it is still running and "
                        f"its {what} are still open."
                    )
                else:
                    self.notes.append(f"The {what} shown may be incomplete (the connection broke while reading).")
        return result


def workflow_id_of(question: Question) -> str | None:
    """The asked workflow ID: explicit, else the parsed workload name, else the first ``<name>-<N>``
    in the text."""
    if question.workflow_id and question.workflow_id.strip():
        return question.workflow_id.strip()
    if question.workload_name and WORKFLOW_ID.fullmatch(question.workload_name):
        return question.workload_name
    m = WORKFLOW_ID.search(question.text or "")
    return m.group(1) if m else None


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


def _identity(wf: Workflow) -> Identity:
    return Identity(system="osmo", workflow_id=wf.name, pool=wf.pool, status=wf.status, user=wf.submitted_by)


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


def _elapsed(wf: Workflow, now: datetime) -> str:
    if wf.duration is not None:
        return fmt_seconds(wf.duration)
    if wf.start_time is not None:
        return fmt_seconds((now - wf.start_time).total_seconds())
    return "-"


def _base(wf: Workflow, now: datetime, question: Question) -> dict[str, Any]:
    """Fields every single-workflow report has: identity, status evidence, links or their sentences."""
    links, notes = link_parts(wf)
    evidence = [EvidenceItem(label="status", value=wf.status, source=f"GET /api/workflow/{wf.name}")]
    if wf.priority:
        evidence.append(EvidenceItem(label="priority", value=wf.priority, source=f"GET /api/workflow/{wf.name}"))
    if wf.submit_time:
        evidence.append(
            EvidenceItem(label="submit_time", value=wf.submit_time.isoformat(), source=f"GET /api/workflow/{wf.name}")
        )
    if _USAGE_Q.search(question.text or ""):
        notes.insert(
            0,
            "Live GPU/CPU/memory utilization is only in Grafana (OSMO's API exposes no live metrics), so no "
            "number is given here"
            + (f": {wf.grafana_url}" if wf.grafana_url else " (and this workflow has no Grafana link)."),
        )
    return {
        "system": "osmo",
        "identity": _identity(wf),
        "evidence": evidence,
        "links": links,
        "notes": notes,
        "question": question.text,
        "generated_at": now,
    }


# -- evidence collection ------------------------------------------------------------------------


async def _task_logs(client: OsmoClient, wf: Workflow, gaps: _Gaps) -> dict[str, str]:
    """Logs per task: one task inline (the spec's ``-n 10000``, asked as the largest tail the server
    honours); two or more fetched per task, concurrently, at most :data:`LOG_CONCURRENCY` at once
    (failed tasks first, at most :data:`MAX_TASK_LOGS`). A log longer than the byte cap keeps its end."""
    tasks = wf.tasks
    wid = wf.name
    if len(tasks) <= 1:
        got = gaps.stream(
            "workflow logs", await gaps.get(f"workflow logs (GET /api/workflow/{wid}/logs)", client.logs(wid))
        )
        if got is None:
            return {}
        name = tasks[0].name if tasks else ""
        by_task = split_by_task(got.text)
        return {name: by_task.get(name, got.text)} if name else by_task
    chosen = sorted(tasks, key=lambda t: 0 if is_failed(t.status) else 1)[:MAX_TASK_LOGS]
    sem = asyncio.Semaphore(LOG_CONCURRENCY)

    async def one(task: Task) -> tuple[str, str | None]:
        async with sem:
            what = f"logs of task {task.name} (GET /api/workflow/{wid}/logs?task_name={task.name})"
            got = gaps.stream(f"logs of task {task.name}", await gaps.get(what, client.logs(wid, task_name=task.name)))
            return task.name, None if got is None else got.text

    results = await asyncio.gather(*(one(t) for t in chosen))
    if len(tasks) > len(chosen):
        gaps.notes.append(f"Logs were read for {len(chosen)} of {len(tasks)} tasks (failed tasks first).")
    return {name: text for name, text in results if text is not None}


async def _error_log(client: OsmoClient, wf: Workflow, task: Task | None, gaps: _Gaps) -> str | None:
    """The failed task's error log (issue 9 §5), read only when the query gives its ``error_logs`` URL (the
    caller reads it when the task's own log names no error)."""
    if task is None or not task.error_logs:
        return None
    what = f"error log of task {task.name} (GET /api/workflow/{wf.name}/error_logs?task_name={task.name})"
    got = gaps.stream(
        f"error log of task {task.name}", await gaps.get(what, client.error_logs(wf.name, task.name, task.retry_id))
    )
    return None if got is None else got.text


def error_log_lines(text: str | None) -> list[str]:
    """The error lines of an error log, at most 5 (none when no line looks like an error)."""
    if not text:
        return []
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return [ln for ln in lines if re.search(r"(?i)error|exception|traceback|fatal|failed|killed", ln)][-5:]


def _fmt_stage(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S")


def _task_history(wf: Workflow, task: Task, source: str) -> list[EvidenceItem]:
    """The failed task's stage times and, with several attempts, every retry (issue 9 §5: ``verbose=true``)."""
    out: list[EvidenceItem] = []
    stages = task.stages()
    if stages:
        text = ", ".join(f"{label} {_fmt_stage(at)}" for label, at in stages)
        before_end = [label for label, _ in stages if label != "ended"]
        if task.end_time is not None and before_end:
            text += f" (it ended during {before_end[-1]})"
        out.append(EvidenceItem(label=f"task {task.name} stages (UTC)", value=text, source=source))
    attempts = wf.retries(task.name)
    if len(attempts) > 1:
        parts = [
            f"retry {a.retry_id if a.retry_id is not None else '?'} {a.status}"
            + (f" exit {a.exit_code}" if a.exit_code is not None else "")
            for a in attempts
        ]
        out.append(
            EvidenceItem(
                label=f"task {task.name} attempts ({len(attempts)})",
                value="; ".join(parts),
                source=source + "?verbose=true",
            )
        )
    return out


async def _events(client: OsmoClient, wid: str, gaps: _Gaps) -> str | None:
    got = await gaps.get(f"events (GET /api/workflow/{wid}/events)", client.events(wid))
    return None if gaps.stream("events", got) is None or got is None else got.text


async def _requests(client: OsmoClient, wf: Workflow, gaps: _Gaps) -> dict[str, TaskRequest]:
    """Requested resources per task: ``/api/task``, else ``/api/workflow/{id}/task/{name}`` per task."""
    items = await gaps.get(f"requested resources (GET /api/task?workflow_id={wf.name})", client.task_requests(wf.name))
    if items:
        return {t.task_name: t for t in items}
    out: dict[str, TaskRequest] = {}
    for task in wf.tasks[:MAX_TASK_LOGS]:
        if not task.name:
            gaps.items.append(
                Gap(what="requested resources of a task without a name", why="it cannot be looked up by name")
            )
            continue
        one = await gaps.get(
            f"requested resources of task {task.name} (GET /api/workflow/{wf.name}/task/{task.name})",
            client.task_request(wf.name, task.name),
        )
        if one is not None:
            out[task.name] = one
    return out


@dataclass(frozen=True)
class UploadCause:
    """An upstream task that COMPLETED although its output upload failed: ``task`` and the log ``line``."""

    task: str
    line: str

    @property
    def message(self) -> str:
        """The quoted line without its timestamp and ``[task][osmo]`` prefix."""
        return self.line.split("] ", 1)[-1].strip()


async def _upstream_upload(
    client: OsmoClient, wf: Workflow, task: Task, logs: dict[str, str], gaps: _Gaps
) -> UploadCause | None:
    """The upload failure of a COMPLETED task whose outputs are ``task``'s inputs (FORMAT.md: quoted as
    the probable cause; the category stays ``task``'s own). Upstream comes from the group graph
    (``downstream_groups`` / ``remaining_upstream_groups``), else from the template spec's
    ``inputs: - task: <name>`` (read only when a completed task's log shows a failed upload)."""
    done = [t for t in wf.tasks if t.status == "COMPLETED" and t is not task and t.name]
    if not done:
        return None
    groups = set(upstream_groups(wf, task))
    done_ids = {id(t) for t in done}
    linked = [t for g in wf.groups if g.name in groups for t in g.tasks if id(t) in done_ids]
    if not linked:
        suspects = [t for t in done if upload_failure(logs.get(t.name, ""))]
        if not suspects:
            return None
        spec = await gaps.get(f"template spec (for the inputs of task {task.name})", client.spec(wf.name))
        wanted = set(input_tasks(summarize_spec(spec.text), task.name)) if spec is not None else set()
        linked = [t for t in suspects if t.name in wanted]
    missing = [t for t in linked if t.name not in logs][:LOG_CONCURRENCY]
    fetched = await asyncio.gather(
        *(
            gaps.get(
                f"logs of upstream task {t.name} (GET /api/workflow/{wf.name}/logs?task_name={t.name})",
                client.logs(wf.name, task_name=t.name),
            )
            for t in missing
        )
    )
    texts = dict(logs) | {t.name: got.text for t, got in zip(missing, fetched, strict=True) if got is not None}
    for upstream in linked:
        line = upload_failure(texts.get(upstream.name, ""))
        if line:
            return UploadCause(upstream.name, line)
    return None


def _task_events(events: str | None, task: str) -> str:
    if not events:
        return ""
    return "\n".join(
        f"{e.at} {e.message}" for e in parse_events(events) if e.task is None or e.task.split(" ")[0] == task
    )


# -- list -----------------------------------------------------------------------------------------


def _list_statuses(text: str) -> list[str]:
    t = text.lower()
    if re.search(r"\bfail", t):
        return []  # every FAILED* status; filtered client-side
    if "pending" in t or "queued" in t:
        return ["PENDING"]
    if "running" in t:
        return ["RUNNING"]
    if "completed" in t or "succeeded" in t:
        return ["COMPLETED"]
    return []


def _status_rank(status: str) -> int:
    for i, prefix in enumerate(STATUS_ORDER):
        if status == prefix or (prefix == "FAILED" and status.startswith("FAILED")):
            return i
    return len(STATUS_ORDER)


async def list_report(client: OsmoClient, question: Question, now: datetime) -> Report:
    """Spec "List Workflows": a table of workflow ID, pool, status and duration, grouped by status."""
    text = question.text or ""
    statuses = _list_statuses(text)
    try:
        listing = await client.list_workflows(statuses=statuses, limit=20)
    except OsmoBadResponse as exc:
        raise _unavailable(f"OSMO's answer to GET /api/workflow could not be used: {exc.message}") from exc
    except OsmoApiError as exc:
        raise _unavailable(f"OSMO answered HTTP {exc.status} to GET /api/workflow after retries") from exc
    entries = listing.workflows
    if re.search(r"\bfail", text.lower()):
        entries = [e for e in entries if is_failed(e.status)]
    order = {id(e): i for i, e in enumerate(entries)}
    entries = sorted(entries, key=lambda e: (_status_rank(e.status), order[id(e)]))
    rows = []
    for e in entries:
        if e.duration is not None:
            duration = fmt_seconds(e.duration)
        elif e.start_time is not None:
            duration = fmt_seconds((now - e.start_time).total_seconds())
        elif e.queued_time is not None:
            duration = f"queued {fmt_seconds(e.queued_time)}"
        else:
            duration = "-"
        submitted = e.submit_time.strftime("%Y-%m-%d %H:%M UTC") if e.submit_time else "-"
        rows.append([e.name, e.pool or "-", e.status, duration, e.user or "-", submitted])
    counts: dict[str, int] = {}
    for e in entries:
        counts[e.status] = counts.get(e.status, 0) + 1
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items(), key=lambda kv: _status_rank(kv[0])))
    headline = (
        f"{len(entries)} recent workflow(s), grouped by status (newest first within each): {summary}."
        if entries
        else "No recent workflows match."
    )
    notes = ["More workflows exist beyond these 20 (the list is paged)."] if listing.more_entries else []
    return Report(
        system="osmo",
        outcome=Outcome.STATUS,
        headline=headline,
        tables=[
            Table(
                title="Recent workflows",
                columns=["Workflow ID", "Pool", "Status", "Duration", "User", "Submitted"],
                rows=rows,
            )
        ],
        notes=notes,
        question=text or None,
        generated_at=now,
    )


# -- failed ---------------------------------------------------------------------------------------

_IMAGE = re.compile(r'image "([^"]+)"')


def _next_action_failed(
    category: Category,
    wf: Workflow,
    task: str | None,
    request: TaskRequest | None,
    image: str | None,
    finding: Finding,
) -> str:
    memory = request.memory if request and request.memory else None
    img = f" {image}" if image else ""
    by_category = {
        Category.OOM_KILLED: (
            f"Raise task {task}'s memory request"
            + (f" (now {memory})" if memory else "")
            + " (double it, or peak usage + 20%), or shrink the batch/buffer size, then resubmit."
        ),
        Category.IMAGE_PULL_FAILED: (
            f"Verify that the image{img} exists and that a registry credential for it is set in "
            "OSMO (`osmo credential set … --type REGISTRY`, not in the task YAML); then retry once."
        ),
        Category.INIT_FAILED: (
            "Check the task's `inputs` paths and read its logs; storage authorization problems need an admin ticket."
        ),
        Category.DATA_FAILED: (
            "Check the input/output paths and the data credentials (`osmo credential list`); data "
            "authorization errors need an admin."
        ),
        Category.START_FAILED: (
            "Read the task's events for the start error; check referenced secrets/config and the image "
            "entrypoint, then resubmit."
        ),
        Category.CRASH_APP_ERROR: (
            "Check the inter-GPU network and the peer ranks (NCCL_DEBUG=INFO, pin the NCCL version, ask "
            "an admin about the nodes' RDMA links), then resubmit."
            if finding.detail == "NCCL"
            else f"Fix the error in task {task}'s code or config shown in the last log lines, then resubmit."
        ),
        Category.NODE_FAILURE: (
            "Resubmit (the node, not the code, failed); if the same node fails again, report it to the cluster admins."
        ),
        Category.PREEMPTED: ("Resubmit at NORMAL priority (LOW work can be preempted) or when the pool is quieter."),
        Category.TIMEOUT: (
            "Raise the exec/queue timeout within the pool's maximum, or make the work shorter, then resubmit."
        ),
        Category.CANCELED: "Nothing to fix if the cancel was intended; otherwise resubmit.",
        Category.UPSTREAM_FAILED: (
            "Open the upstream task's logs (`osmo workflow logs <id> -t <task>`) to find the first failure."
        ),
        Category.SERVER_ERROR: "Retry once; if it repeats, report the workflow ID to the OSMO admins.",
        Category.UNKNOWN: (
            "Read the full task logs and events; if nothing explains it, report the workflow ID to the OSMO admins."
        ),
    }
    return by_category[category]


def _with_upload(upload: UploadCause | None, action: str) -> str:
    """The failed task's own next action, after fixing the upstream upload when that is the probable cause."""
    if upload is None:
        return action
    return (
        f"First find out why upstream task {upload.task}'s output upload failed (its output path and the data "
        "credentials, `osmo credential list`) and rerun it, so the inputs are complete; then "
        + action[:1].lower()
        + action[1:]
    )


async def failed_report(client: OsmoClient, wf: Workflow, question: Question, now: datetime) -> Report:
    """Failed workflow: category from status, exit code, failure_message, events and logs."""
    gaps = _Gaps()
    root = root_failed_task(wf)
    failed = failed_tasks(wf)
    task: Task | None = root or (failed[0] if failed else None)
    logs, events, requests = await asyncio.gather(
        _task_logs(client, wf, gaps), _events(client, wf.name, gaps), _requests(client, wf, gaps)
    )
    # The task's error log is read when its log shows no error line (empty, cut, or only progress output).
    explained = task is not None and bool(digest_logs(logs.get(task.name) or "", task.name).error_lines)
    error_log = None if explained else await _error_log(client, wf, task, gaps)
    base = _base(wf, now, question)
    evidence: list[EvidenceItem] = base.pop("evidence")
    source = f"GET /api/workflow/{wf.name}"
    if task is not None:
        tlog = logs.get(task.name) or ""
        digest = digest_logs(tlog, task.name)
        signals = TaskSignals(
            task=task.name,
            status=task.status,
            exit_code=task.exit_code,
            failure_message=task.failure_message or "",
            workflow_status=wf.status,
            events=_task_events(events, task.name),
            log_tail="\n".join(digest.error_lines + digest.last_lines),
        )
    else:
        digest = LogDigest(task=None)
        signals = TaskSignals(
            task="",
            status=wf.status,
            exit_code=None,
            failure_message="",
            workflow_status=wf.status,
            events=events or "",
        )
    finding = classify_task(signals)
    category = finding.category
    upload = await _upstream_upload(client, wf, root, logs, gaps) if root is not None else None

    if task is not None:
        evidence.append(
            EvidenceItem(label=f"task {task.name} status", value=task.status, source=source, at=task.end_time)
        )
        if task.exit_code is not None:
            evidence.append(EvidenceItem(label=f"task {task.name} exit code", value=str(task.exit_code), source=source))
        if task.failure_message:
            evidence.append(
                EvidenceItem(
                    label=f"task {task.name} failure_message",
                    value=" ".join(task.failure_message.split()),
                    source=source,
                )
            )
        if task.node_name:
            evidence.append(EvidenceItem(label=f"task {task.name} node", value=task.node_name, source=source))
        evidence += _task_history(wf, task, source)
    for warning in wf.warnings[:3]:
        evidence.append(EvidenceItem(label="workflow warning", value=warning, source=source))
    for line in error_log_lines(error_log)[-3:]:
        evidence.append(
            EvidenceItem(
                label=f"error log of task {task.name if task else ''}",
                value=line,
                source=f"GET /api/workflow/{wf.name}/error_logs",
            )
        )
    for other in failed:
        if task is None or other.name == task.name:
            continue
        value = other.status + (f", exit code {other.exit_code}" if other.exit_code is not None else "")
        if other.failure_message:
            value += f": {' '.join(other.failure_message.split())}"
        evidence.append(EvidenceItem(label=f"task {other.name} (followed the failure)", value=value, source=source))
    if wf.cancelled_by:
        evidence.append(EvidenceItem(label="cancelled_by", value=wf.cancelled_by, source=source))
    if upload is not None:
        evidence.append(
            EvidenceItem(
                label=f"upstream task {upload.task} (COMPLETED) output upload",
                value=upload.line,
                source=f"logs of task {upload.task}",
            )
        )

    request = requests.get(task.name) if task is not None else None
    if request is not None and category == Category.OOM_KILLED and request.memory:
        evidence.append(
            EvidenceItem(
                label=f"task {task.name if task else ''} memory request",
                value=request.memory,
                source=f"GET /api/task?workflow_id={wf.name}",
            )
        )
    image = None
    pulled = [ln for ln in signals.events.splitlines() if re.search(r"Failed to pull|ErrImagePull|BackOff", ln)]
    for text in (signals.failure_message, *pulled):
        m = _IMAGE.search(text or "")
        if m:
            image = m.group(1)
            break
    if image:
        evidence.append(EvidenceItem(label="image", value=image, source="failure_message / events"))
    event_lines = [
        line
        for line in signals.events.splitlines()
        if re.search(r"Failed|Error|BackOff|Evict|OOM|Killing|Preempt|Unhealthy", line)
    ]
    for line in event_lines[:5]:
        evidence.append(EvidenceItem(label="event", value=line, source=f"GET /api/workflow/{wf.name}/events"))
    error = exception_line(digest)
    if error:
        evidence.append(EvidenceItem(label="error line", value=error, source=f"logs of task {digest.task}"))
    network = [ln for ln in digest.error_lines if re.search(r"NCCL|collective", ln)]
    if finding.detail == "NCCL" and network:
        evidence.append(EvidenceItem(label="NCCL line", value=network[-1], source=f"logs of task {digest.task}"))

    who = f"task {task.name}" if task is not None else "the workflow"
    how = (
        f"{task.status}" + (f" with exit code {task.exit_code}" if task and task.exit_code is not None else "")
        if task is not None
        else wf.status
    )
    headline = f"Workflow {wf.name} is {wf.status}: {who} failed first ({how}); {PLAIN[category]}."
    if category == Category.CRASH_APP_ERROR and finding.detail == "NCCL":
        headline = (
            f"Workflow {wf.name} is {wf.status}: {who} broke first ({how}) after an NCCL collective timeout; "
            "a peer rank or the inter-GPU network stalled, and the other tasks failed after it."
        )
    elif category == Category.CRASH_APP_ERROR and error:
        headline += f" Last error: {error.split('] ', 1)[-1].strip()}"
    elif category == Category.OOM_KILLED:
        headline += f" Signal: {finding.signal}" + (
            f"; exit code {task.exit_code}."
            if task and task.exit_code is not None and str(task.exit_code) not in finding.signal
            else "."
        )
    if upload is not None and task is not None:
        headline = headline.rstrip() + ("" if headline.rstrip().endswith((".", "!", "?")) else ".")
        headline += (
            f" Probable cause: its input came from upstream task {upload.task}, which COMPLETED although "
            f'its output upload failed ("{upload.message}"), so task {task.name} may have read missing or '
            "partial inputs."
        )
    if root is None and failed and category == Category.UPSTREAM_FAILED:
        gaps.items.append(
            Gap(
                what="the upstream task that failed first",
                why="only FAILED_UPSTREAM tasks are visible in the workflow query",
            )
        )
    excerpts = []
    if digest.last_lines:
        excerpts.append(
            Excerpt(
                title=f"Last lines of task {digest.task} before the failure",
                text="\n".join(digest.last_lines),
                source=f"GET /api/workflow/{wf.name}/logs",
            )
        )
    elif task is not None and not logs.get(task.name):
        base["notes"].append(f"The logs of task {task.name} are empty (the task may never have started).")
    level, basis = osmo_confidence(finding)
    return Report(
        outcome=Outcome.FAILED,
        category=category,
        headline=headline,
        confidence=Confidence(level=level, signals=basis),  # type: ignore[arg-type]
        evidence=evidence,
        next_action=_with_upload(
            upload, _next_action_failed(category, wf, task.name if task else None, request, image, finding)
        ),
        gaps=gaps.items,
        excerpts=excerpts,
        **{**base, "notes": base["notes"] + gaps.notes},
    )


# -- pending --------------------------------------------------------------------------------------


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


async def pending_report(client: OsmoClient, wf: Workflow, question: Question, now: datetime) -> Report:
    """PENDING diagnosis: events in plain language, then pool quota vs capacity vs per-node fit vs
    placement vs pool offline, with the numbers."""
    gaps = _Gaps()
    pool = wf.pool
    quota_coro: Awaitable[PoolQuota | None] = (
        gaps.get(f"pool quota (GET /api/pool_quota?pools={pool})", client.pool_quota([pool]))
        if pool
        else asyncio.sleep(0, None)
    )
    nodes_coro: Awaitable[list[NodeResources] | None] = (
        gaps.get(f"pool resources (GET /api/resources?pools={pool})", client.resources([pool]))
        if pool
        else asyncio.sleep(0, None)
    )
    _logs, events, requests, quota, nodes = await asyncio.gather(
        _task_logs(client, wf, gaps),
        _events(client, wf.name, gaps),
        _requests(client, wf, gaps),
        quota_coro,
        nodes_coro,
    )
    base = _base(wf, now, question)
    evidence: list[EvidenceItem] = base.pop("evidence")
    group = waiting_group(wf)
    queued = [t for t in (group.tasks if group else []) if t.status in QUEUED_TASK_STATUSES] or (
        group.tasks if group else []
    )
    asks = [requests[t.name].gpu for t in queued if t.name in requests and requests[t.name].gpu is not None]
    group_ask = sum(a for a in asks if a is not None) if queued and len(asks) == len(queued) else None
    task_ask = max((a for a in asks if a is not None), default=None) if asks else None
    pool_info = quota.find(pool) if quota is not None and pool else None
    if quota is not None and pool and pool_info is None:
        gaps.items.append(Gap(what=f"pool {pool} in GET /api/pool_quota", why="the pool is not listed"))
    usage = pool_info.resource_usage if pool_info else None
    largest = largest_node_free(nodes, pool) if nodes is not None and pool else None
    total_free = usage.total_free if usage else None
    if total_free is None and nodes is not None and pool:
        # Without the pool's quota figures, the physical free GPUs are still the sum over its nodes.
        total_free = pool_node_free_total(nodes, pool)
    translations = translate_events(parse_events(events or ""))
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
        translations=tuple(translations),
    )
    outcome = decide_pending(numbers)

    def num(value: int | None) -> str:
        return "unknown" if value is None else str(value)

    qsrc = f"GET /api/pool_quota?pools={pool}"
    queued_for = (
        wf.queued_time
        if wf.queued_time is not None
        else ((now - wf.submit_time).total_seconds() if wf.submit_time else None)
    )
    if queued_for is not None:
        evidence.append(
            EvidenceItem(
                label="queued for",
                value=fmt_seconds(queued_for),
                source=f"GET /api/workflow/{wf.name} (queued_time)",
            )
        )
    if group is not None:
        evidence.append(
            EvidenceItem(
                label=f"GPUs asked (group {group.name}, {len(queued)} task(s) scheduled together)",
                value=num(group_ask),
                source=f"GET /api/task?workflow_id={wf.name}",
            )
        )
        if len(queued) > 1:
            evidence.append(
                EvidenceItem(
                    label="GPUs asked by the largest task",
                    value=num(task_ask),
                    source=f"GET /api/task?workflow_id={wf.name}",
                )
            )
    if pool_info is not None and usage is not None:
        evidence += [
            EvidenceItem(label=f"pool {pool} status", value=pool_info.status or "unknown", source=qsrc),
            EvidenceItem(
                label="quota_free",
                value=f"{num(usage.quota_free)} (quota_limit {num(usage.quota_limit)}, "
                f"quota_used {num(usage.quota_used)})",
                source=qsrc,
            ),
            EvidenceItem(
                label="total_free",
                value=f"{num(usage.total_free)} (total_capacity "
                f"{num(usage.total_capacity)}, total_usage {num(usage.total_usage)})",
                source=qsrc,
            ),
        ]
    if usage is None and total_free is not None:
        evidence.append(
            EvidenceItem(
                label=f"free GPUs summed over the nodes of {pool} (pool quota unavailable)",
                value=str(total_free),
                source=f"GET /api/resources?pools={pool}",
            )
        )
    if largest is not None:
        evidence.append(
            EvidenceItem(
                label=f"largest free on one node of {pool}",
                value=str(largest),
                source=f"GET /api/resources?pools={pool}",
            )
        )
    notes = list(base["notes"])
    for tr in translations:
        notes.append(f'The scheduler says "{tr.raw}": {tr.plain}.')
    ask, qf, tf = num(group_ask), num(numbers.quota_free), num(numbers.total_free)
    prio = wf.priority or "NORMAL"
    head = f"Workflow {wf.name} is {wf.status}"
    next_action: str | None
    if outcome == Outcome.POOL_UNAVAILABLE:
        headline = f"{head}: pool {pool} is {numbers.pool_status}, so nothing in it is scheduled."
        next_action = f"Wait for pool {pool} to be ONLINE again, or resubmit to another pool (`osmo pool list`)."
    elif outcome == Outcome.PENDING_QUOTA:
        headline = (
            f"{head}: pool {pool}'s quota is used up, not its capacity: it asks {ask} GPUs at {prio} "
            f"priority, quota free is {qf} (quota_limit {num(numbers.quota_limit)}) while {tf} GPUs are "
            f"physically free (total_free)."
        )
        next_action = (
            f"Resubmit with `--priority LOW` to use the {tf} free GPUs now (LOW work may be preempted), "
            f"or wait for HIGH/NORMAL work in {pool} to finish and free quota."
        )
    elif outcome == Outcome.PENDING_CAPACITY:
        headline = (
            f"{head}: pool {pool} is out of physical GPUs: it asks {ask} GPUs but only {tf} are free in "
            f"total (total_free, of total_capacity {num(numbers.total_capacity)}); quota free is {qf}."
        )
        next_action = (
            f"Wait for GPUs in {pool} to free up, move to a pool with at least {ask} GPUs free "
            "(`osmo pool list --mode free`), or shrink the per-task GPU ask; LOW priority will not help."
        )
    elif outcome == Outcome.PENDING_FRAGMENTATION:
        headline = (
            f"{head}: no single node in pool {pool} can hold one task: a task asks {num(task_ask)} GPUs "
            f"but the largest free on one node is {num(largest)}, although {tf} GPUs are free in total "
            f"(total_free) and quota free is {qf}."
        )
        next_action = (
            f"Split the work into tasks of at most {num(largest)} GPUs, wait for a node in {pool} to "
            "drain, or use a pool with a whole free node."
        )
    elif outcome == Outcome.PENDING_CONSTRAINT:
        cons = next(t for t in translations if t.kind == "constraint")
        headline = (
            f"{head}: GPUs suffice (asks {ask}, total_free {tf}, quota free {qf} in pool {pool}) but "
            f'{cons.plain} ("{cons.raw}").'
        )
        next_action = (
            "Compare the workflow's node selectors, affinity, tolerations and volumes with the nodes of "
            f"pool {pool}; fix the spec or pick a pool whose nodes match."
        )
    else:
        headline = (
            f"{head} in pool {pool or 'unknown'}"
            + (
                f", asking {ask} GPUs (quota free {qf}, total_free {tf}, largest free on one node {num(largest)})"
                if group is not None
                else ""
            )
            + "; the numbers show no quota, capacity or per-node shortage."
        )
        if wf.status != "PENDING" and group is None:
            headline = f"{head} in pool {pool or 'unknown'}."
        next_action = "Check the events again in a few minutes; if it stays queued, ask the OSMO admins."
    excerpts = []
    evs = parse_events(events or "")
    if evs:
        seen: list[str] = []
        for e in reversed(evs):
            line = f"{e.at} [{e.task}] {e.message}" if e.task else f"{e.at} {e.message}"
            if e.message not in [s.split("] ", 1)[-1] for s in seen]:
                seen.append(line)
            if len(seen) >= 6:
                break
        excerpts.append(
            Excerpt(
                title="Latest scheduling events",
                text="\n".join(reversed(seen)),
                source=f"GET /api/workflow/{wf.name}/events",
            )
        )
    conf = pending_confidence(numbers, outcome)
    return Report(
        outcome=outcome or Outcome.STATUS,
        headline=headline,
        confidence=Confidence(level=conf[0], signals=conf[1]) if conf else None,  # type: ignore[arg-type]
        evidence=evidence,
        next_action=next_action,
        gaps=gaps.items,
        excerpts=excerpts,
        **{**base, "notes": notes + gaps.notes},
    )


# -- status / completed -----------------------------------------------------------------------------


def _app_name(wf: Workflow, spec_name: str | None) -> str:
    return spec_name or re.sub(r"-\d+$", "", wf.name)


async def status_report(client: OsmoClient, wf: Workflow, question: Question, now: datetime) -> Report:
    """RUNNING / WAITING / COMPLETED (and any other non-failed status): status first, log summary per
    task, links; COMPLETED adds the download command and an app suggestion (offered, never run)."""
    gaps = _Gaps()
    logs = await _task_logs(client, wf, gaps)
    base = _base(wf, now, question)
    evidence: list[EvidenceItem] = base.pop("evidence")
    notes: list[str] = base.pop("notes")
    evidence.append(EvidenceItem(label="duration", value=_elapsed(wf, now), source=f"GET /api/workflow/{wf.name}"))
    excerpts: list[Excerpt] = []
    summaries: list[str] = []
    for task in wf.tasks:
        d = digest_logs(logs.get(task.name, ""), task.name)
        value = task.status + (f", {d.stage}" if d.stage else "")
        if d.last_progress:
            value += f"; last line: {d.last_progress}"
        evidence.append(EvidenceItem(label=f"task {task.name}", value=value, source=f"logs of task {task.name}"))
        if d.error_lines:
            evidence.append(
                EvidenceItem(
                    label=f"task {task.name} error lines",
                    value=str(len(d.error_lines)),
                    source=f"logs of task {task.name}",
                )
            )
        if d.last_progress:
            summaries.append(
                f"task {task.name} is {d.stage or task.status.lower()} "
                f"(last: {d.last_progress.split('] ', 1)[-1].strip()})"
            )
        if d.last_lines and len(excerpts) < 3:
            excerpts.append(
                Excerpt(
                    title=f"Last lines of task {task.name}",
                    text="\n".join(d.last_lines[-8:]),
                    source=f"GET /api/workflow/{wf.name}/logs",
                )
            )
    headline = f"Workflow {wf.name} is {wf.status} in pool {wf.pool or 'unknown'} ({_elapsed(wf, now)})"
    headline += ": " + "; ".join(summaries[:3]) + "." if summaries else "."
    next_action: str | None = None
    if wf.status == "COMPLETED":
        spec = await gaps.get("template spec (for the app suggestion)", client.spec(wf.name))
        spec_name = summarize_spec(spec.text).name if spec is not None and spec.text else None
        if wf.outputs:
            evidence.append(EvidenceItem(label="outputs", value=wf.outputs, source=f"GET /api/workflow/{wf.name}"))
            next_action = (
                f"Would you like to download the output data? Run `osmo data download {wf.outputs} ~/` "
                "(destination defaults to ~/; not run by this bot)."
            )
        else:
            notes.append("The workflow records no output location (`outputs` is empty); check the spec's outputs.")
        app = _app_name(wf, spec_name)
        notes.append(
            f'App suggestion (not created): name "{app}", description "Runs the {app} workflow '
            f'on pool {wf.pool or "its pool"} and writes its outputs to object storage." Create it '
            "with `osmo app create` if you want it."
        )
    elif wf.status in ("RUNNING", "WAITING"):
        next_action = f"Follow it with `watch {wf.name}`" + (
            "; live GPU/CPU/memory use is in Grafana (the Grafana button)." if wf.grafana_url else "."
        )
    return Report(
        outcome=Outcome.STATUS,
        headline=headline,
        evidence=evidence,
        next_action=next_action,
        notes=notes + gaps.notes,
        gaps=gaps.items,
        excerpts=excerpts,
        **base,
    )


# -- explain --------------------------------------------------------------------------------------


async def explain_report(client: OsmoClient, wf: Workflow, question: Question, now: datetime) -> Report:
    """Spec "Explain What a Workflow Does": purpose, image, command/entrypoint, env var NAMES, outputs."""
    gaps = _Gaps()
    spec = gaps.stream(
        "template spec",
        await gaps.get(f"template spec (GET /api/workflow/{wf.name}/spec?use_template=true)", client.spec(wf.name)),
    )
    base = _base(wf, now, question)
    evidence: list[EvidenceItem] = base.pop("evidence")
    notes: list[str] = base.pop("notes")
    src = f"GET /api/workflow/{wf.name}/spec?use_template=true"
    if spec is None or not spec.text.strip():
        return Report(
            outcome=Outcome.STATUS,
            headline=f"Workflow {wf.name} is {wf.status}; its template spec "
            "could not be read, so what it does cannot be said.",
            evidence=evidence,
            notes=notes + gaps.notes,
            gaps=gaps.items,
            **base,
        )
    summary = summarize_spec(spec.text)
    if not summary.parsed:
        notes.append("The spec could not be parsed as YAML (it may be cut); only image and task names are shown.")
    what: list[str] = []
    for t in summary.tasks:
        where = f"task {t.name}" + (f" (group {t.group})" if t.group else "")
        if t.image:
            evidence.append(EvidenceItem(label=f"{where} image", value=t.image, source=src))
        if t.entrypoint:
            evidence.append(EvidenceItem(label=f"{where} entrypoint", value=t.entrypoint, source=src))
        if t.command:
            evidence.append(EvidenceItem(label=f"{where} command", value=t.command, source=src))
        if t.script:
            evidence.append(EvidenceItem(label=f"{where} runs", value=" / ".join(t.script), source=src))
        if t.env_names:
            evidence.append(
                EvidenceItem(
                    label=f"{where} environment variables (names only)",
                    value=", ".join(t.env_names),
                    source=src,
                )
            )
        if t.inputs:
            evidence.append(EvidenceItem(label=f"{where} inputs", value="; ".join(t.inputs), source=src))
        if t.outputs:
            evidence.append(EvidenceItem(label=f"{where} outputs", value="; ".join(t.outputs), source=src))
        res = summary.resources.get(t.resource or "default") or {}
        if res:
            evidence.append(
                EvidenceItem(
                    label=f"{where} resources",
                    value=", ".join(f"{k} {v}" for k, v in res.items() if k in ("gpu", "cpu", "memory", "storage")),
                    source=src,
                )
            )
        main = [ln for ln in t.script if not re.match(r"(?:cd|export|source|echo|mkdir)\b", ln)]
        runs = (main or t.script or [t.command or "its image's default command"])[0].rstrip(" \\")
        what.append(f"{t.name} runs `{runs}`" + (f" in {t.image}" if t.image else ""))
    if wf.outputs:
        evidence.append(
            EvidenceItem(label="outputs (storage prefix)", value=wf.outputs, source=f"GET /api/workflow/{wf.name}")
        )
    headline = (
        f"Workflow {wf.name} ({summary.name or 'unnamed spec'}) is {wf.status}; it has "
        f"{len(summary.tasks)} task(s): "
        + "; ".join(what[:4])
        + "."
        + (f" It writes its outputs to {wf.outputs}." if wf.outputs else "")
    )
    return Report(
        outcome=Outcome.STATUS,
        headline=headline,
        evidence=evidence,
        notes=notes + gaps.notes,
        gaps=gaps.items,
        **base,
    )


# -- entry point ------------------------------------------------------------------------------------


def _unavailable(message: str) -> Exception:
    from diagnosis.answer import BackendUnavailable

    return BackendUnavailable(message)


def not_found_report(workflow_id: str, question: Question, now: datetime, message: str) -> Report:
    return Report(
        system="osmo",
        outcome=Outcome.NOT_FOUND,
        headline=f"No OSMO workflow with the ID {workflow_id} exists ({message.strip() or 'not found'}).",
        next_action="Check the workflow ID (e.g. with `list recent workflows`) and ask again with the exact ID.",
        identity=Identity(system="osmo", workflow_id=workflow_id),
        question=question.text,
        generated_at=now,
    )


def is_pending_case(wf: Workflow) -> bool:
    """PENDING, or a WAITING workflow whose next group is queued for scheduling."""
    if wf.status == "PENDING":
        return True
    return wf.status == "WAITING" and waiting_group(wf) is not None


async def answer_osmo(question: Question, config: OsmoConfig, now: datetime) -> Report:
    """Answer an OSMO question (kinds ``osmo_list|osmo_status|osmo_explain|osmo_watch`` or a workflow ID).

    Always returns a :class:`Report` (``not_found`` for an unknown ID, never a similar one); raises
    :class:`diagnosis.answer.BackendUnavailable` when the service is unreachable or refuses the
    credentials after retries.
    """
    workflow_id = workflow_id_of(question)
    kind = question.kind
    if kind in ("runai", "help") and question.text:
        parsed = parse_text(question.text)  # the CLI/bot merge keeps the default kind; re-read the text
        if parsed.kind.startswith("osmo"):
            kind = parsed.kind
    try:
        async with OsmoClient(config) as client:
            if kind == "osmo_list" or workflow_id is None:
                if workflow_id is None and kind not in ("osmo_list", "runai", "help"):
                    return Report(
                        system="osmo",
                        outcome=Outcome.NEEDS_INPUT,
                        headline="Which workflow? Give its ID, e.g. sdg-render-7.",
                        question="Which OSMO workflow ID should I look at?",
                        missing=["workflow_id"],
                        generated_at=now,
                    )
                return await list_report(client, question, now)
            try:
                wf = await client.get_workflow(workflow_id)
            except WorkflowNotFound as exc:
                return not_found_report(workflow_id, question, now, exc.message)
            except OsmoBadResponse as exc:
                raise _unavailable(
                    f"OSMO answered GET /api/workflow/{workflow_id} with HTTP {exc.status}, but the answer "
                    f"could not be used: {exc.message}"
                ) from exc
            except OsmoApiError as exc:
                retried = " after retries" if exc.status >= 500 or exc.status == 429 else ""
                raise _unavailable(
                    f"OSMO answered HTTP {exc.status} to GET /api/workflow/{workflow_id}{retried}"
                    + (f": {exc.message}" if exc.message else "")
                ) from exc
            if kind == "osmo_explain":
                return await explain_report(client, wf, question, now)
            if is_failed(wf.status):
                return await failed_report(client, wf, question, now)
            if is_pending_case(wf):
                return await pending_report(client, wf, question, now)
            return await status_report(client, wf, question, now)
    except AuthError as exc:
        raise _unavailable(str(exc)) from exc
    except (httpx.TransportError, OsmoApiError) as exc:
        raise _unavailable(f"OSMO at {config.url} is unreachable: {type(exc).__name__}: {exc}") from exc
