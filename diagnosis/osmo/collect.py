"""The reads of an OSMO diagnosis (the *collect* step of ``shared/spec/osmo-workflow-status.md``): logs per task
with a bound, the error log, events, requested resources, and an upstream task's upload failure.

Every read goes through :meth:`~diagnosis.osmo.reporting.OsmoReportBuilder.get` as the client returns it (a
:class:`~diagnosis.fetched.Read` that names its call), so a failed read is a gap and the diagnosis goes on;
only refused credentials raise (:class:`~diagnosis.osmo.client.AuthError`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from diagnosis.osmo.classify import upload_failure, upstream_groups
from diagnosis.osmo.client import OsmoClient
from diagnosis.osmo.logsummary import input_tasks, split_by_task, summarize_spec
from diagnosis.osmo.models import Task, TaskRequest, Workflow, is_failed
from diagnosis.osmo.pending import parse_events
from diagnosis.osmo.reporting import OsmoReportBuilder

LOG_CONCURRENCY = 5  # the spec's "one subagent per five tasks"
MAX_TASK_LOGS = 20


async def task_logs(client: OsmoClient, wf: Workflow, b: OsmoReportBuilder) -> dict[str, str]:
    """Logs per task name: one task inline (the spec's ``-n 10000``, asked as the largest tail the server
    honours); two or more fetched per task, concurrently, at most :data:`LOG_CONCURRENCY` at once (failed
    tasks first, at most :data:`MAX_TASK_LOGS`). A log longer than the byte cap keeps its end."""
    tasks = wf.tasks
    wid = wf.name
    if len(tasks) <= 1:
        read = client.logs(wid)
        got = b.stream(read.call.label, await b.get(read))
        if got is None:
            return {}
        name = tasks[0].name if tasks else ""
        by_task = split_by_task(got.text)
        return {name: by_task.get(name, got.text)} if name else by_task
    chosen = sorted(tasks, key=lambda t: 0 if is_failed(t.status) else 1)[:MAX_TASK_LOGS]
    sem = asyncio.Semaphore(LOG_CONCURRENCY)

    async def one(task: Task) -> tuple[str, str | None]:
        async with sem:
            read = client.logs(wid, task_name=task.name)
            got = b.stream(read.call.label, await b.get(read))
            return task.name, None if got is None else got.text

    results = await asyncio.gather(*(one(t) for t in chosen))
    if len(tasks) > len(chosen):
        b.read_notes.append(f"Logs were read for {len(chosen)} of {len(tasks)} tasks (failed tasks first).")
    return {name: text for name, text in results if text is not None}


async def error_log(client: OsmoClient, wf: Workflow, task: Task | None, b: OsmoReportBuilder) -> str | None:
    """The failed task's error log (issue 9 §5), read only when the query gives its ``error_logs`` URL (the
    caller reads it when the task's own log names no error)."""
    if task is None or not task.error_logs:
        return None
    read = client.error_logs(wf.name, task.name, task.retry_id)
    got = b.stream(read.call.label, await b.get(read))
    return None if got is None else got.text


async def events(client: OsmoClient, wid: str, b: OsmoReportBuilder) -> str | None:
    """The workflow's events text (the newest kept), or None when it could not be read (a gap)."""
    read = client.events(wid)
    got = await b.get(read)
    return None if b.stream(read.call.label, got) is None or got is None else got.text


async def requests(client: OsmoClient, wf: Workflow, b: OsmoReportBuilder) -> dict[str, TaskRequest]:
    """Requested resources per task name: ``/api/task``, else ``/api/workflow/{id}/task/{name}`` per task."""
    items = await b.get(client.task_requests(wf.name))
    if items:
        return {t.task_name: t for t in items}
    out: dict[str, TaskRequest] = {}
    for task in wf.tasks[:MAX_TASK_LOGS]:
        if not task.name:
            b.gap("requested resources of a task without a name", "it cannot be looked up by name")
            continue
        one = await b.get(client.task_request(wf.name, task.name))
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


async def upstream_upload(
    client: OsmoClient, wf: Workflow, task: Task, logs: dict[str, str], b: OsmoReportBuilder
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
        spec = await b.get(client.spec(wf.name), purpose=f"for the inputs of task {task.name}")
        wanted = set(input_tasks(summarize_spec(spec.text), task.name)) if spec is not None else set()
        linked = [t for t in suspects if t.name in wanted]
    missing = [t for t in linked if t.name not in logs][:LOG_CONCURRENCY]
    fetched = await asyncio.gather(
        *(b.get(client.logs(wf.name, task_name=t.name), label=f"logs of upstream task {t.name}") for t in missing)
    )
    texts = dict(logs) | {t.name: got.text for t, got in zip(missing, fetched, strict=True) if got is not None}
    for upstream in linked:
        line = upload_failure(texts.get(upstream.name, ""))
        if line:
            return UploadCause(upstream.name, line)
    return None


def task_events(events: str | None, task: str) -> str:
    """The event lines of ``task`` (and those naming no task), ``"<at> <message>"`` each."""
    if not events:
        return ""
    return "\n".join(
        f"{e.at} {e.message}" for e in parse_events(events) if e.task is None or e.task.split(" ")[0] == task
    )
