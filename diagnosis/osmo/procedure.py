"""The OSMO workflow procedure (``shared/spec/osmo-workflow-status.md``): list, status, failed,
PENDING, COMPLETED follow-ups and explain, each ending in one :class:`~diagnosis.report.Report`.

Data flows one way: question -> query the workflow (cached once) -> collect evidence
concurrently (:mod:`diagnosis.osmo.collect`: logs per task with a bound, events, requested resources,
pool quota, resources) -> decide (pure: :mod:`diagnosis.osmo.classify`, :mod:`diagnosis.osmo.pending`)
-> evidence -> phrase (:mod:`diagnosis.osmo.categories`) -> report, built by
:class:`~diagnosis.osmo.reporting.OsmoReportBuilder`. Failed workflows are :mod:`diagnosis.osmo.report_failed`,
queued ones :mod:`diagnosis.osmo.report_pending`; this module routes and answers the rest.

Errors: an unknown workflow ID is a ``not_found`` report (never a similar ID); a failed fetch of
anything but the workflow itself (an error status, a 422, a 2xx body that is not JSON or has a field
the models cannot read, items of a list that had to be skipped) becomes a named
:class:`~diagnosis.report.Gap` and the diagnosis goes on from the rest; only an unreachable service,
refused credentials or an unusable answer to the workflow query itself raise
:class:`diagnosis.errors.BackendUnavailable`.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime

import httpx

from diagnosis.config import OsmoConfig
from diagnosis.errors import BackendUnavailable
from diagnosis.osmo import collect
from diagnosis.osmo.client import (
    AuthError,
    OsmoApiError,
    OsmoBadResponse,
    OsmoCalls,
    OsmoClient,
    WorkflowNotFound,
)
from diagnosis.osmo.logsummary import TaskSpec, digest_logs, summarize_spec
from diagnosis.osmo.models import Workflow, is_failed
from diagnosis.osmo.report_failed import error_log_lines, failed_report
from diagnosis.osmo.report_pending import (
    fmt_seconds,
    largest_node_free,
    pending_report,
    pool_node_free_total,
    waiting_group,
)
from diagnosis.osmo.reporting import DASHBOARD_NA, GRAFANA_NA, OsmoReportBuilder, link_parts
from diagnosis.question import Question, parse_text
from diagnosis.report import Identity, Outcome, Report
from diagnosis.untrusted import in_code

__all__ = [
    "DASHBOARD_NA",
    "GRAFANA_NA",
    "answer_osmo",
    "error_log_lines",
    "explain_report",
    "failed_report",
    "fmt_seconds",
    "is_pending_case",
    "largest_node_free",
    "link_parts",
    "list_report",
    "not_found_report",
    "pending_report",
    "pool_node_free_total",
    "status_report",
    "waiting_group",
    "workflow_ids_of",
]

log = logging.getLogger(__name__)
LOG_CONCURRENCY = collect.LOG_CONCURRENCY
MAX_TASK_LOGS = collect.MAX_TASK_LOGS
WORKFLOW_ID = re.compile(r"\b([A-Za-z][A-Za-z0-9_.-]*-[0-9]+)\b")
# Spec: "Use clear text labels": the order a list is grouped in.
STATUS_ORDER = ("FAILED", "RUNNING", "PENDING", "WAITING", "COMPLETED")
LIST_LIMIT = 20
#: The most workflow IDs of one question that are looked up (one query each).
MAX_CANDIDATES = 4


def workflow_ids_of(question: Question) -> list[str]:
    """The workflow IDs the question may mean, in the order to try them: one given apart from the text alone;
    else that one (the parser's pick), the parsed workload name, then every ``<name>-<N>`` of the text in its
    order (a task or node name can come first: "trainer-1 in llm-vla-pretrain-41 died"), at most
    :data:`MAX_CANDIDATES`. FORMAT.md: "When several tokens could be the workload, the one that names an existing
    workload decides"."""
    text = question.text or ""
    ids: list[str] = []
    if question.workflow_id and question.workflow_id.strip():
        ids.append(question.workflow_id.strip())
        if ids[0] not in text:
            return ids  # given apart from the text: that ID alone
    if question.workload_name and WORKFLOW_ID.fullmatch(question.workload_name):
        ids.append(question.workload_name)
    ids += [m.group(1) for m in WORKFLOW_ID.finditer(text)]
    return list(dict.fromkeys(ids))[:MAX_CANDIDATES]


def _elapsed(wf: Workflow, now: datetime) -> str:
    if wf.duration is not None:
        return fmt_seconds(wf.duration)
    if wf.start_time is not None:
        return fmt_seconds((now - wf.start_time).total_seconds())
    return "-"


# -- list -----------------------------------------------------------------------------------------


#: The statuses a list question can name, and the words that name them ("FAILED": every FAILED* status).
_STATUS_WORDS = (
    ("FAILED", re.compile(r"\bfail", re.I)),
    ("FAILED_CANCELED", re.compile(r"\bcancel", re.I)),
    ("PENDING", re.compile(r"\bpending\b|\bqueued\b", re.I)),
    ("RUNNING", re.compile(r"\brunning\b", re.I)),
    ("WAITING", re.compile(r"\bwaiting\b", re.I)),
    ("COMPLETED", re.compile(r"\bcompleted\b|\bsucceeded\b", re.I)),
)


def _list_statuses(text: str) -> list[str]:
    """Every status the list question names (FORMAT.md: "A list question that names statuses lists the workflows
    in every status it names, and no others; one that names none lists them all")."""
    return [status for status, words in _STATUS_WORDS if words.search(text)]


def _listed(status: str, named: list[str]) -> bool:
    """Whether a workflow in ``status`` belongs in a list of the ``named`` statuses (none named: every one)."""
    return not named or status in named or ("FAILED" in named and is_failed(status))


def _status_rank(status: str) -> int:
    for i, prefix in enumerate(STATUS_ORDER):
        if status == prefix or (prefix == "FAILED" and status.startswith("FAILED")):
            return i
    return len(STATUS_ORDER)


async def list_report(client: OsmoClient, question: Question, now: datetime) -> Report:
    """Spec "List Workflows": a table of workflow ID, pool, status and duration, grouped by status."""
    text = question.text or ""
    named = _list_statuses(text)
    # every FAILED* status is asked for by leaving the filter out and keeping them here
    read = client.list_workflows(statuses=[] if "FAILED" in named else named, limit=LIST_LIMIT)
    call = read.call
    try:
        listing = await read
    except OsmoBadResponse as exc:
        raise BackendUnavailable(f"OSMO's answer to {call} could not be used: {exc.message}") from exc
    except OsmoApiError as exc:
        raise BackendUnavailable(f"OSMO answered HTTP {exc.status} to {call} after retries") from exc
    entries = [e for e in listing.workflows if _listed(e.status, named)]
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
    b = OsmoReportBuilder(now=now, question=text or None)
    b.table("Recent workflows", ["Workflow ID", "Pool", "Status", "Duration", "User", "Submitted"], rows)
    if listing.more_entries:
        b.note(f"More workflows exist beyond these {LIST_LIMIT} (the list is paged).")
    return b.build(Outcome.STATUS, headline)


# -- status / completed -----------------------------------------------------------------------------


def _app_name(wf: Workflow, spec_name: str | None) -> str:
    return spec_name or re.sub(r"-\d+$", "", wf.name)


def _task_summaries(b: OsmoReportBuilder, wf: Workflow, logs: dict[str, str]) -> list[str]:
    """Per task: status and stage evidence, error-line counts and the last lines; returns one summary
    phrase per failed task (its status and exit code, first) and per task that shows progress."""
    summaries: list[str] = []
    failures: list[str] = []
    excerpt_source = OsmoCalls.endpoint(OsmoCalls.logs(wf.name))
    for task in wf.tasks:
        source = OsmoCalls.logs(wf.name, task.name).label
        d = digest_logs(logs.get(task.name, ""), task.name)
        # a task that failed while the workflow runs on (ignoreNonleadStatus) is an error to highlight (spec
        # "Reporting Status"), never "running the command" because its log had reached that stage
        failed = is_failed(task.status)
        status = task.status + (f" (exit {task.exit_code})" if failed and task.exit_code is not None else "")
        value = status + (f", {d.stage}" if d.stage and not failed else "")
        last = d.last_progress.split("] ", 1)[-1].strip() if d.last_progress else ""
        if d.last_progress:
            value += f"; last line: {d.last_progress}"
        b.add(f"task {task.name}", value, source)
        if d.error_lines:
            b.add(f"task {task.name} error lines", str(len(d.error_lines)), source)
        if failed:
            failures.append(f"task {task.name} {status}" + (f" (last: {last})" if last else ""))
        elif d.last_progress:
            summaries.append(f"task {task.name} is {d.stage or task.status.lower()} (last: {last})")
        if d.last_lines and len(b.excerpts) < 3:
            b.excerpt(f"Last lines of task {task.name}", "\n".join(d.last_lines[-8:]), excerpt_source)
    return failures + summaries


async def _completed_parts(client: OsmoClient, wf: Workflow, b: OsmoReportBuilder) -> str | None:
    """COMPLETED: the outputs and the download command (offered, never run), and an app suggestion; returns
    the next action."""
    spec = await b.get(client.spec(wf.name), purpose="for the app suggestion")
    spec_name = summarize_spec(spec.text).name if spec is not None and spec.text else None
    next_action: str | None = None
    if wf.outputs:
        b.add("outputs", wf.outputs, str(OsmoCalls.workflow(wf.name)))
        next_action = (
            f"Would you like to download the output data? Run `osmo data download {wf.outputs} ~/` "
            "(destination defaults to ~/; not run by this bot)."
        )
    else:
        b.note("The workflow records no output location (`outputs` is empty); check the spec's outputs.")
    app = _app_name(wf, spec_name)
    b.note(
        f'App suggestion (not created): name "{app}", description "Runs the {app} workflow '
        f'on pool {wf.pool or "its pool"} and writes its outputs to object storage." Create it '
        "with `osmo app create` if you want it."
    )
    return next_action


async def status_report(client: OsmoClient, wf: Workflow, question: Question, now: datetime) -> Report:
    """RUNNING / WAITING / COMPLETED (and any other non-failed status): status first, log summary per
    task, links; COMPLETED adds the download command and an app suggestion (offered, never run)."""
    b = OsmoReportBuilder(now=now)
    logs = await collect.task_logs(client, wf, b)
    b.workflow_parts(wf, question)
    b.add("duration", _elapsed(wf, now), str(OsmoCalls.workflow(wf.name)))
    summaries = _task_summaries(b, wf, logs)
    headline = f"Workflow {wf.name} is {wf.status} in pool {wf.pool or 'unknown'} ({_elapsed(wf, now)})"
    headline += ": " + "; ".join(summaries[:3]) + "." if summaries else "."
    next_action: str | None = None
    if wf.status == "COMPLETED":
        next_action = await _completed_parts(client, wf, b)
    elif wf.status in ("RUNNING", "WAITING"):
        next_action = f"Follow it with `watch {wf.name}`" + (
            "; live GPU/CPU/memory use is in Grafana (the Grafana button)." if wf.grafana_url else "."
        )
    return b.build(Outcome.STATUS, headline, next_action=next_action)


# -- explain --------------------------------------------------------------------------------------


def _spec_task_evidence(b: OsmoReportBuilder, t: TaskSpec, resources: dict[str, str], source: str) -> str:
    """The evidence of one task of the spec; returns what it runs (``"train runs `python train.py` in
    img"``)."""
    where = f"task {t.name}" + (f" (group {t.group})" if t.group else "")
    if t.image:
        b.add(f"{where} image", t.image, source)
    if t.entrypoint:
        b.add(f"{where} entrypoint", t.entrypoint, source)
    if t.command:
        b.add(f"{where} command", t.command, source)
    if t.script:
        b.add(f"{where} runs", " / ".join(t.script), source)
    if t.env_names:
        b.add(f"{where} environment variables (names only)", ", ".join(t.env_names), source)
    if t.inputs:
        b.add(f"{where} inputs", "; ".join(t.inputs), source)
    if t.outputs:
        b.add(f"{where} outputs", "; ".join(t.outputs), source)
    if resources:
        shown = ", ".join(f"{k} {v}" for k, v in resources.items() if k in ("gpu", "cpu", "memory", "storage"))
        b.add(f"{where} resources", shown, source)
    main = [ln for ln in t.script if not re.match(r"(?:cd|export|source|echo|mkdir)\b", ln)]
    runs = (main or t.script or [t.command or "its image's default command"])[0].rstrip(" \\")
    return f"{t.name} runs `{in_code(runs)}`" + (f" in {t.image}" if t.image else "")


async def explain_report(client: OsmoClient, wf: Workflow, question: Question, now: datetime) -> Report:
    """Spec "Explain What a Workflow Does": purpose, image, command/entrypoint, env var NAMES, outputs."""
    b = OsmoReportBuilder(now=now)
    read = client.spec(wf.name)
    call = read.call
    spec = b.stream(call.label, await b.get(read))
    b.workflow_parts(wf, question)
    if spec is None or not spec.text.strip():
        return b.build(
            Outcome.STATUS,
            f"Workflow {wf.name} is {wf.status}; its template spec could not be read, so what it does cannot be said.",
        )
    summary = summarize_spec(spec.text)
    if not summary.parsed:
        b.note("The spec could not be parsed as YAML (it may be cut); only image and task names are shown.")
    what = [
        _spec_task_evidence(b, t, summary.resources.get(t.resource or "default") or {}, str(call))
        for t in summary.tasks
    ]
    if wf.outputs:
        b.add("outputs (storage prefix)", wf.outputs, str(OsmoCalls.workflow(wf.name)))
    headline = (
        f"Workflow {wf.name} ({summary.name or 'unnamed spec'}) is {wf.status}; it has "
        f"{len(summary.tasks)} task(s): "
        + "; ".join(what[:4])
        + "."
        + (f" It writes its outputs to {wf.outputs}." if wf.outputs else "")
    )
    return b.build(Outcome.STATUS, headline)


# -- entry point ------------------------------------------------------------------------------------


def not_found_report(workflow_ids: list[str], question: Question, now: datetime, message: str) -> Report:
    """``not_found``: no workflow with any of those IDs (never a similar one); the headline names each one tried."""
    b = OsmoReportBuilder(now=now, question=question.text)
    b.identity = Identity(system="osmo", workflow_id=workflow_ids[0])
    tried = " or ".join(workflow_ids)
    return b.build(
        Outcome.NOT_FOUND,
        f"No OSMO workflow with the ID {tried} exists ({message.strip() or 'not found'}).",
        next_action="Check the workflow ID (e.g. with `list recent workflows`) and ask again with the exact ID.",
    )


def _needs_workflow_id(now: datetime) -> Report:
    b = OsmoReportBuilder(now=now, question="Which OSMO workflow ID should I look at?")
    return b.build(Outcome.NEEDS_INPUT, "Which workflow? Give its ID, e.g. sdg-render-7.", missing=["workflow_id"])


def is_pending_case(wf: Workflow) -> bool:
    """PENDING, or a WAITING workflow whose next group is queued for scheduling."""
    if wf.status == "PENDING":
        return True
    return wf.status == "WAITING" and waiting_group(wf) is not None


def _kind_of(question: Question) -> str:
    kind = question.kind
    if kind in ("runai", "help") and question.text:
        parsed = parse_text(question.text)  # the CLI/bot merge keeps the default kind; re-read the text
        if parsed.kind.startswith("osmo"):
            kind = parsed.kind
    return kind


async def _query(client: OsmoClient, workflow_id: str) -> Workflow:
    """The workflow query; an unusable answer or an error status is :class:`BackendUnavailable` (the one
    read the diagnosis cannot go on without). :class:`WorkflowNotFound` propagates."""
    read = client.get_workflow(workflow_id)
    call = read.call
    try:
        return await read
    except WorkflowNotFound:
        raise
    except OsmoBadResponse as exc:
        raise BackendUnavailable(
            f"OSMO answered {call} with HTTP {exc.status}, but the answer could not be used: {exc.message}"
        ) from exc
    except OsmoApiError as exc:
        retried = " after retries" if exc.retried else ""
        raise BackendUnavailable(
            f"OSMO answered HTTP {exc.status} to {call}{retried}" + (f": {exc.message}" if exc.message else "")
        ) from exc


async def _first_existing(client: OsmoClient, workflow_ids: list[str]) -> Workflow | WorkflowNotFound:
    """The workflow of the first of ``workflow_ids`` (not empty) that exists, tried in order, or the last one's
    not-found answer when none does."""
    for workflow_id in workflow_ids[:-1]:
        try:
            return await _query(client, workflow_id)
        except WorkflowNotFound:
            continue
    try:
        return await _query(client, workflow_ids[-1])
    except WorkflowNotFound as exc:
        return exc


async def _answer(client: OsmoClient, question: Question, kind: str, now: datetime) -> Report:
    workflow_ids = workflow_ids_of(question)
    if kind == "osmo_list" or not workflow_ids:
        if not workflow_ids and kind not in ("osmo_list", "runai", "help"):
            return _needs_workflow_id(now)
        return await list_report(client, question, now)
    wf = await _first_existing(client, workflow_ids)
    if isinstance(wf, WorkflowNotFound):
        return not_found_report(workflow_ids, question, now, wf.message)
    if kind == "osmo_explain":
        return await explain_report(client, wf, question, now)
    if is_failed(wf.status):
        return await failed_report(client, wf, question, now)
    if is_pending_case(wf):
        return await pending_report(client, wf, question, now)
    return await status_report(client, wf, question, now)


async def answer_osmo(question: Question, config: OsmoConfig, now: datetime) -> Report:
    """Answer an OSMO question (kinds ``osmo_list|osmo_status|osmo_explain|osmo_watch`` or a workflow ID).

    Always returns a :class:`Report` (``not_found`` for an unknown ID, never a similar one); raises
    :class:`diagnosis.errors.BackendUnavailable` when the service is unreachable or refuses the
    credentials after retries.
    """
    try:
        async with OsmoClient(config) as client:
            return await _answer(client, question, _kind_of(question), now)
    except AuthError as exc:
        raise BackendUnavailable(str(exc)) from exc
    except (httpx.TransportError, OsmoApiError) as exc:
        raise BackendUnavailable(f"OSMO at {config.url} is unreachable: {type(exc).__name__}: {exc}") from exc
