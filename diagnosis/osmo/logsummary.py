"""Pure text summaries: a task's logs (stage, error lines, last lines) and a template spec (explain).

("Digest" means one thing in this product: the channel digest of failures, :mod:`diagnosis.digests`.)

Log line format (osmo-api.md §6): ``YYYY/MM/DD HH:MM:SS [<task>] text``, ``[<task> retry-N]``,
and OSMO's own ``[<task>][osmo] text`` for download/upload steps. The spec is the YAML of
``GET /api/workflow/{id}/spec?use_template=true``; :func:`summarize_spec` returns environment
variable *names* only, never their values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

_LINE = re.compile(r"^(\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}) \[([^\]\s]+)(?: retry-(\d+))?\](\[osmo\])? ?(.*)$")
ERROR_LINE = re.compile(
    r"Traceback \(most recent call last\)|\b\w*(?:Error|Exception)\b:|\bERROR\b|\bFATAL\b|\bfatal\b|"
    r"\bfailed\b|\bFAILED\b|Killed|Segmentation fault|core dumped|timed out|timeout|NCCL WARN|"
    r"out of memory|OOM|\bpanic\b|No such file|not found|Permission denied",
    re.I,
)
# OSMO control lines that mark a stage (``[task][osmo] …``).
_STAGES: tuple[tuple[str, str], ...] = (
    ("All Outputs Uploaded", "outputs uploaded"),
    ("Upload Start", "uploading outputs"),
    ("Group ready", "running the command"),
    ("Waiting for group ready", "waiting for the rest of its group"),
    ("All Inputs Gathered", "inputs downloaded, running the command"),
    ("Downloading Start", "downloading inputs"),
)
MAX_ERROR_LINES = 50
LAST_LINES = 12


@dataclass
class LogDigest:
    """What one task's log shows: ``stage`` (plain words), ``last_progress`` (last user line),
    ``error_lines`` (up to 50, verbatim), ``last_lines`` (the tail, verbatim), ``line_count``."""

    task: str | None
    line_count: int = 0
    stage: str | None = None
    last_progress: str | None = None
    error_lines: list[str] = field(default_factory=list)
    last_lines: list[str] = field(default_factory=list)
    first_error: str | None = None


def split_by_task(text: str) -> dict[str, str]:
    """Interleaved workflow logs -> {task: its lines}; raw (DUMP) lines stay with the previous task."""
    out: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            current = m.group(2)
        if current is not None:
            out.setdefault(current, []).append(line)
    return {k: "\n".join(v) + "\n" for k, v in out.items()}


def digest_logs(text: str, task: str | None = None) -> LogDigest:
    """Digest one task's log text (or an interleaved log when ``task`` is None)."""
    lines = [line for line in text.splitlines() if line.strip()]
    d = LogDigest(task=task, line_count=len(lines))
    user_lines: list[str] = []
    for line in lines:
        m = _LINE.match(line)
        body = m.group(5) if m else line
        is_osmo = bool(m and m.group(4))
        if is_osmo:
            for marker, stage in _STAGES:
                if marker.lower() in body.lower():
                    d.stage = stage
                    break
        else:
            user_lines.append(line)
            if d.stage in (None, "downloading inputs"):
                d.stage = "running the command"
        if ERROR_LINE.search(body) and len(d.error_lines) < MAX_ERROR_LINES and not is_osmo:
            d.error_lines.append(line)
            if d.first_error is None and not body.lstrip().startswith("File "):
                d.first_error = line
    if user_lines:
        d.last_progress = user_lines[-1]
    d.last_lines = lines[-LAST_LINES:]
    return d


def exception_line(d: LogDigest) -> str | None:
    """The last ``SomeError: message`` line (a Python exception), else the last error line."""
    pattern = re.compile(r"\b([A-Za-z_][\w.]*(?:Error|Exception))\b:")
    for line in reversed(d.error_lines):
        if pattern.search(line):
            return line
    return d.error_lines[-1] if d.error_lines else None


# -- spec --------------------------------------------------------------------------------------


@dataclass
class TaskSpec:
    """One task of a template spec: ``command`` = command + args joined; ``script`` = first lines of
    files it writes (the entry script); ``env_names`` = environment variable names only."""

    name: str
    group: str | None
    image: str | None
    command: str | None
    entrypoint: str | None
    script: list[str]
    env_names: list[str]
    inputs: list[str]
    outputs: list[str]
    resource: str | None


@dataclass
class SpecSummary:
    """``name`` of the workflow, its tasks, ``resources`` {name: {gpu, cpu, memory, storage}}, and
    ``parsed`` False when the YAML could not be read (then only regex findings are given)."""

    name: str | None
    tasks: list[TaskSpec]
    resources: dict[str, dict[str, Any]]
    parsed: bool = True


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _io(item: Any) -> str:
    """``{"dataset": {"name": "x:4"}}`` -> ``dataset x:4``; ``{"url": "s3://…"}`` -> ``url s3://…``."""
    if isinstance(item, dict):
        parts = []
        for key, value in item.items():
            if isinstance(value, dict):
                value = value.get("name") or value.get("url") or ", ".join(f"{k}={v}" for k, v in value.items())
            parts.append(f"{key} {value}")
        return "; ".join(parts)
    return str(item)


def _env_names(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [str(k) for k in value]
    names = []
    for item in _as_list(value):
        if isinstance(item, dict) and "name" in item:
            names.append(str(item["name"]))
        elif isinstance(item, str):
            names.append(item.split("=", 1)[0])
    return names


def summarize_spec(text: str) -> SpecSummary:
    """Summarize a template spec; never returns environment values."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        doc = None
    if not isinstance(doc, dict):
        images = re.findall(r"(?m)^\s*image:\s*(\S+)", text)
        names = re.findall(r"(?m)^\s*-\s*name:\s*(\S+)", text)
        found = [
            TaskSpec(n, None, images[i] if i < len(images) else None, None, None, [], [], [], [], None)
            for i, n in enumerate(names)
        ]
        return SpecSummary(None, found, {}, parsed=False)
    inner = doc.get("workflow")
    wf: dict[str, Any] = inner if isinstance(inner, dict) else doc
    resources = wf.get("resources") or doc.get("resources") or {}
    raw: list[tuple[str | None, Any]] = [(None, t) for t in _as_list(wf.get("tasks"))]
    for group in _as_list(wf.get("groups")):
        if isinstance(group, dict):
            raw += [(group.get("name"), t) for t in _as_list(group.get("tasks"))]
    tasks: list[TaskSpec] = []
    for group_name, t in raw:
        if not isinstance(t, dict):
            continue
        command = " ".join(str(c) for c in _as_list(t.get("command")) + _as_list(t.get("args"))) or None
        script: list[str] = []
        for f in _as_list(t.get("files")):
            if isinstance(f, dict) and f.get("contents"):
                lines = [ln.strip() for ln in str(f["contents"]).splitlines() if ln.strip()]
                lines = [ln for ln in lines if not ln.startswith(("#!", "set -"))]
                script += lines[:3]
        outputs = [_io(o) for o in _as_list(t.get("outputs"))]
        tasks.append(
            TaskSpec(
                name=str(t.get("name")),
                group=group_name,
                image=t.get("image"),
                command=command,
                entrypoint=" ".join(str(e) for e in _as_list(t.get("entrypoint"))) or None,
                script=script[:4],
                env_names=_env_names(t.get("environment", t.get("env"))),
                inputs=[_io(i) for i in _as_list(t.get("inputs"))],
                outputs=outputs,
                resource=t.get("resource"),
            )
        )
    res = {str(k): v for k, v in resources.items() if isinstance(v, dict)} if isinstance(resources, dict) else {}
    return SpecSummary(wf.get("name") or doc.get("name"), tasks, res)


def input_tasks(summary: SpecSummary, task: str) -> list[str]:
    """Names of the tasks whose outputs ``task`` takes as inputs (``inputs: - task: <name>``)."""
    names: list[str] = []
    for t in summary.tasks:
        if t.name != task:
            continue
        for item in t.inputs:
            if item.startswith("task "):
                names += [n.strip() for n in item[len("task ") :].split(";")[0].split(",") if n.strip()]
    return names
