"""The credential corpus in every carrier a snapshot has reaches no output (issue 23 "Credentials").

``tests/corpora/credentials.jsonl`` is placed in every place a world carries text: Run:ai env variables,
annotations, labels, the command and its arguments, history messages; Kubernetes pod env, annotations, labels,
command/args lists, events and logs; OSMO logs, task logs, events and the spec; the typed question. A value
named by a key that names a secret (``DB_PASSWORD``, ``WANDB_API_KEY``, ``AZURE_STORAGE_KEY``,
``TWILIO_AUTH_TOKEN``, a look-alike ``PАSSWORD``...) carries a bare secret; every other carrier carries the
corpus's whole lines. Then, through the real paths: ``capture`` (the snapshot it writes, its mode), and the
diagnosis (text, JSON, Block Kit, the thread, the cache entry, the log records) hold none of the secrets.
"""

from __future__ import annotations

import asyncio
import copy
import io
import json
import logging
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.cli import backends_for, build_question
from diagnosis.answer import answer
from diagnosis.logs import JsonFormatter, RedactingFilter, TextFormatter
from diagnosis.question import Question
from diagnosis.redact import sanitize_tree
from diagnosis.render import render_text, to_json
from diagnosis.report import Report
from handlers.blocks import render_report, thread_payload
from sandbox.server import Sandbox
from tests.conftest import ROOT
from tests.diagnosis.test_capture import capture_case, sandbox_env
from tests.paths import TESTS

CORPUS = [
    json.loads(line)
    for line in (TESTS / "corpora" / "credentials.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
BENIGN = (TESTS / "corpora" / "credentials_benign.jsonl").read_text(encoding="utf-8") + "X-Amz-SignedHeaders=host"
#: every substring that must vanish (one that ordinary evidence also holds, "SignedHeaders=host", aside)
SECRETS = sorted({s for c in CORPUS for s in c["secrets"] if s not in BENIGN})
LINES = [c["line"] for c in CORPUS]
#: names that name a secret, as real configurations spell them (the look-alikes included)
NAMES = [
    "DB_PASSWORD",
    "WANDB_API_KEY",
    "AZURE_STORAGE_KEY",
    "TWILIO_AUTH_TOKEN",
    "HF_TOKEN",
    "OPENAI_API_KEY",
    "MYSQL_ROOT_PASSWORD",
    "GITHUB_TOKEN",
    "clientSecret",
    "AWS_SECRET_ACCESS_KEY",
    "SLACK_BOT_TOKEN",
    "NGC_API_KEY",
    "DB_P\u0410SSWORD",  # a Cyrillic А
    "REDIS_PASSW\u039fRD",  # a Greek Ο
    "\u0391PI_TOKEN",  # a Greek Α
]
RUNAI_CASE = TESTS / "fixtures" / "cases" / "runai" / "secrets-and-injection.json"
OSMO_CASE = TESTS / "fixtures" / "cases" / "osmo" / "osmo-failed-app.json"
TYPED = "why did ctr-train crash? the db password is Typ3dPassw0rd! and token ghp_TypedTokenAbCdEfGhIjKlMnOpQrStUv01"
TYPED_SECRETS = ["Typ3dPassw0rd!", "ghp_TypedTokenAbCdEfGhIjKlMnOpQrStUv01"]


def named() -> list[tuple[str, str]]:
    """(a secret's name, a secret) for every secret of the corpus."""
    return [(NAMES[i % len(NAMES)], secret) for i, secret in enumerate(SECRETS)]


def leaks(text: str) -> list[str]:
    return [s for s in SECRETS + TYPED_SECRETS if s in text]


# -- the carriers --------------------------------------------------------------------------------------------


def _runai(snapshot: dict[str, Any]) -> None:
    workload = snapshot["runai"]["workloads"][0]
    spec = workload["spec"]["spec"]
    env = [{"name": n, "value": s} for n, s in named()]
    env += [{"name": f"SETTING_{i}", "value": line} for i, line in enumerate(LINES)]
    spec["environmentVariables"] = spec.get("environmentVariables", []) + env
    spec["annotations"] = [{"name": f"example.com/{n.lower()}", "value": s} for n, s in named()]
    spec["annotations"] += [{"name": f"example.com/note-{i}", "value": line} for i, line in enumerate(LINES)]
    spec["labels"] = [{"name": n, "value": s} for n, s in named()]
    spec["command"] = spec["command"] + "\n" + "\n".join(LINES)
    # the args as one string: free text, where "--flag ns/name" and "--flag a=b" are not values (the corpus's
    # fragments of that shape, a SigV4 scope and a SAS field, are carried whole by the lines above)
    spec["args"] = " ".join(f"--{n.lower().replace('_', '-')} {s}" for n, s in named() if not set(s) & set(" /=\n"))
    history = workload.setdefault("history", [])
    for i, line in enumerate(LINES):
        at = f"2026-11-28T11:01:{i % 60:02d}Z"
        history.append(
            {
                "meta": {"type": "Event", "creationTimestamp": at},
                "spec": {
                    "event": {
                        "createdAt": at,
                        "id": f"c0ffee00-0000-0000-0000-{i:012d}",
                        "type": "Warning",
                        "clusterId": workload["workload"]["clusterId"],
                        "message": line,
                        "reason": "Note",
                        "source": "kubelet",
                        "involvedObject": {"kind": "Pod", "name": "ctr-train-0-0", "namespace": "runai-ads"},
                    }
                },
            }
        )


def _kubernetes(snapshot: dict[str, Any]) -> None:
    kube = snapshot["kubernetes"]
    pod = kube["pods"][0]
    container = pod["spec"]["containers"][0]
    container["env"] = [{"name": n, "value": s} for n, s in named()]
    container["env"] += [{"name": f"SETTING_{i}", "value": line} for i, line in enumerate(LINES)]
    flags = [part for n, s in named() for part in (f"--{n.lower().replace('_', '-')}", s)]
    container["args"] = container.get("args", []) + flags
    container["command"] = ["sh", "-c", "\n".join(LINES)]
    meta = pod["metadata"]
    meta["annotations"] = {f"example.com/{n.lower()}": s for n, s in named()}
    meta["annotations"].update({f"example.com/note-{i}": line for i, line in enumerate(LINES)})
    meta["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = json.dumps(
        {"spec": {"containers": [{"env": [{"name": n, "value": s} for n, s in named()]}]}}
    )
    template = kube["events"][0]
    for i, line in enumerate(LINES):
        event = copy.deepcopy(template)
        event["metadata"]["name"] = f"ctr-train-0-0.carrier{i:04d}"
        event.update(reason="Note", message=line, type="Warning")
        kube["events"].append(event)
    for log in kube["logs"]:
        log["text"] = "\n".join(LINES) + "\n" + log["text"]


def runai_world() -> dict[str, Any]:
    snapshot = json.loads(RUNAI_CASE.read_text(encoding="utf-8"))
    _runai(snapshot)
    _kubernetes(snapshot)
    snapshot["ask"]["text"] = TYPED
    return snapshot


def osmo_world() -> dict[str, Any]:
    snapshot = json.loads(OSMO_CASE.read_text(encoding="utf-8"))
    for workflow in snapshot["osmo"]["workflows"]:
        corpus = "\n".join(LINES)
        workflow["logs"] = corpus + "\n" + workflow["logs"]
        workflow["task_logs"] = {task: corpus + "\n" + text for task, text in workflow["task_logs"].items()}
        workflow["events"] = corpus + "\n" + workflow["events"]
        env = "".join(f"      {n}: '{s}'\n" for n, s in named() if "'" not in s and "\n" not in s)
        workflow["spec_template"] = workflow["spec_template"].replace("    environment:\n", "    environment:\n" + env)
    return snapshot


# -- the outputs ---------------------------------------------------------------------------------------------


@contextmanager
def log_records() -> Iterator[io.StringIO]:
    """Every log record of the diagnosis, through the redacting filter and both formatters (as deployed)."""
    out = io.StringIO()
    handlers = []
    for formatter in (JsonFormatter(), TextFormatter("%(levelname)s %(name)s: %(message)s")):
        handler = logging.StreamHandler(out)
        handler.setFormatter(formatter)
        handler.addFilter(RedactingFilter())
        handlers.append(handler)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.DEBUG)
    for handler in handlers:
        root.addHandler(handler)
    try:
        yield out
    finally:
        for handler in handlers:
            root.removeHandler(handler)
        root.setLevel(level)


def outputs(report: Report) -> dict[str, str]:
    """Every rendering of ``report``: text, JSON (report_text and blocks included), Block Kit, the thread, the
    cache entry (the report's JSON, as :mod:`handlers.report_cache` stores it)."""
    rendered = render_report(report)
    every = [rendered.main, *rendered.thread, *rendered.evidence]
    files = [*rendered.snippets, *rendered.evidence_files, *rendered.logs]
    return {
        "text": render_text(report, verbose=True),
        "json": json.dumps(to_json(report, rendered.main.blocks, thread_payload(rendered)), ensure_ascii=False),
        "blocks": json.dumps([m.payload() for m in every], ensure_ascii=False),
        "files": "\n".join(f"{f.title}\n{f.content}" for f in files),
        "cache": report.model_dump_json(),
    }


def diagnose(snapshot: dict[str, Any], tmp_path: Path) -> Report:
    path = tmp_path / f"{snapshot['id']}.json"
    path.write_text(json.dumps(snapshot, ensure_ascii=False), encoding="utf-8")
    with backends_for(str(path)) as (backends, ask):
        return asyncio.run(answer(build_question(Question(), ask), backends))


# -- tests ---------------------------------------------------------------------------------------------------


def test_the_world_carries_the_whole_corpus() -> None:
    dumped = json.dumps(runai_world(), ensure_ascii=False) + json.dumps(osmo_world(), ensure_ascii=False)
    assert all(s in dumped for s in SECRETS if "\u200b" not in s)


@pytest.mark.parametrize("world", [runai_world, osmo_world], ids=["runai", "osmo"])
def test_capture_writes_no_secret_of_any_carrier(world: Any) -> None:
    snapshot = world()
    with log_records() as logs:
        captured, report = capture_case(snapshot)
    written = json.dumps(captured, ensure_ascii=False)
    assert not leaks(written), leaks(written)[:5]
    assert not leaks(logs.getvalue())
    for name, text in outputs(report).items():
        assert not leaks(text), (name, leaks(text)[:5])


@pytest.mark.parametrize("world", [runai_world, osmo_world], ids=["runai", "osmo"])
def test_diagnosis_outputs_hold_no_secret_of_any_carrier(world: Any, tmp_path: Path) -> None:
    with log_records() as logs:
        report = diagnose(world(), tmp_path)
    for name, text in outputs(report).items():
        assert not leaks(text), (name, leaks(text)[:5])
    assert not leaks(logs.getvalue())


def test_captured_values_are_redacted_with_the_key_that_names_them() -> None:
    world = {
        "env": [{"name": "DB_PASSWORD", "value": "plainword"}, {"name": "PATH", "value": "/usr/bin"}],
        "annotations": {"example.com/azure-storage-key": "plainword", "team": "nlp"},
        "args": ["--twilio-auth-token", "plainword", "--epochs", "3"],
        "environment": {"WANDB_API_KEY": "plainword", "DB_P\u0410SSWORD": "plainword"},
        "secret": {"secretName": "db-creds"},
        "pin": {"password": 123456},
        "note": '{"env": [{"name": "HF_TOKEN", "value": "plainword"}]}',
    }
    clean = sanitize_tree(world)
    assert "plainword" not in json.dumps(clean) and "123456" not in json.dumps(clean)
    assert clean["env"][1]["value"] == "/usr/bin" and clean["annotations"]["team"] == "nlp"
    assert clean["args"][2:] == ["--epochs", "3"] and clean["secret"] == {"secretName": "db-creds"}
    assert clean["env"][0] == {"name": "DB_PASSWORD", "value": "[REDACTED]"}


def test_cli_capture_file_is_private_from_its_creation(tmp_path: Path) -> None:
    """``capture -o FILE``: mode 0600 (also over an existing world-readable file), and no secret in it."""
    snapshot = runai_world()
    ask = snapshot["ask"]
    out = tmp_path / "captured.json"
    out.write_text("{}")
    out.chmod(0o644)
    cli = [str(ROOT / ".venv" / "bin" / "workload-doctor")]
    if not Path(cli[0]).exists():
        cli = [sys.executable, "-m", "bot.cli"]
    with Sandbox(snapshot) as sandbox:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNAI_", "OSMO_", "WD_", "KUBE"))}
        env.update(sandbox_env(sandbox, snapshot))
        args = ["capture", ask["text"], "--cluster-id", ask["cluster_id"], "--workload", ask["workload_name"]]
        args += ["--project", ask["project"], "--now", snapshot["now"], "-o", str(out)]
        done = subprocess.run([*cli, *args], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert not leaks(out.read_text(encoding="utf-8")) and not leaks(done.stderr)
    assert [p.name for p in tmp_path.iterdir()] == ["captured.json"]  # no temporary file left behind
