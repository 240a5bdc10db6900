"""The CLI's common module: the ``typer`` app every sub-command registers onto, the options they share,
and the guard that turns errors into one line (issue 10 §3: sub-command modules import this, never
:mod:`bot.cli`, which imports them to register them).

Exit codes: 0 for every answer, 2 for input that prevents one (:data:`EXIT_BAD_INPUT`), 1 for an unexpected
error, 130 on Ctrl-C and 143 on SIGTERM (:data:`EXIT_TERMINATED`), each with one line on stderr.
"""

from __future__ import annotations

import gc
import json
import logging
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from enum import StrEnum
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

# Imported where used (issue 26 §2): ``--help`` and the commands that never diagnose load none of the diagnosis core.
if TYPE_CHECKING:
    from diagnosis.backends import Backends
    from diagnosis.question import Question
    from diagnosis.report import Report

app = typer.Typer(
    name="workload-doctor",
    help="Explains why a Run:ai workload or an OSMO workflow failed. Read-only.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain help: rendering it with rich took 0.15 s of `--help` (issue 26 §2: under 0.25 s)
)
T = TypeVar("T")
EXIT_BAD_INPUT = 2
#: 128 + SIGTERM, what a shell reports for a process ended by SIGTERM.
EXIT_TERMINATED = 128 + signal.SIGTERM


class Format(StrEnum):
    text = "text"
    json = "json"
    blocks = "blocks"


class IntentOpt(StrEnum):
    terminal = "terminal"
    current = "current"


IntentOption = Annotated[IntentOpt | None, typer.Option("--intent", help="terminal (past failure) or current symptom.")]
FormatOpt = Annotated[Format, typer.Option("--format", help="text, json or blocks.")]


class UserError(Exception):
    """Input that prevents an answer; printed as one line."""


class Terminated(BaseException):
    """SIGTERM arrived (:func:`install_sigterm`). A ``BaseException`` so no ``except Exception`` swallows it:
    it unwinds every ``with`` (the sandbox and its temporary kubeconfig) up to :func:`run_guarded`."""


_sigterm_seen = False


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    global _sigterm_seen
    _sigterm_seen = True  # also seen when the exception lands in a task whose gather keeps exceptions
    # the reads cut short by the unwinding are not errors worth a line each ("exception was never retrieved"):
    # SIGTERM gets one line, from run_guarded
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    raise Terminated()


def install_sigterm() -> None:
    """Make SIGTERM raise :class:`Terminated` in the main thread (the default handler kills the process
    without a line and without cleanup). A server that handles SIGTERM itself (uvicorn, Socket Mode) replaces
    this while it runs; uvicorn re-raises the signal after its graceful shutdown, which lands here."""
    signal.signal(signal.SIGTERM, _on_sigterm)


# Options shared by ``diagnose`` and ``capture`` (the same question, asked or recorded).
QuestionArg = Annotated[str | None, typer.Argument(help='Free text, e.g. "what killed train-gpt2 in project nlp?"')]
ClusterIdOpt = Annotated[
    str | None, typer.Option("--cluster-id", help="Run:ai cluster UUID, or its exact name (required for Run:ai).")
]
WorkloadIdOpt = Annotated[str | None, typer.Option("--workload-id", help="Run:ai workload UUID (Option A).")]
WorkloadOpt = Annotated[str | None, typer.Option("--workload", help="Workload name (Option B, with --project).")]
ProjectOpt = Annotated[str | None, typer.Option("--project", help="Run:ai project name.")]
LookbackOpt = Annotated[str | None, typer.Option("--lookback", help="Recurrence window, e.g. 7d, 36h.")]
WorkflowOpt = Annotated[str | None, typer.Option("--workflow", help="OSMO workflow ID.")]
DebugOpt = Annotated[bool, typer.Option("--debug", help="Show tracebacks and debug logs.")]


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    typer.echo(f"workload-doctor: error: {message}", err=True)
    raise typer.Exit(code)


def run_guarded(fn: Callable[[], T], debug: bool = False) -> T:
    """Run ``fn`` turning known input errors into one line (exit 2), SIGTERM into one line (exit 143) and
    anything else into one line (exit 1)."""
    from diagnosis.config import ConfigError
    from diagnosis.errors import BackendUnavailable
    from diagnosis.question import QuestionError
    from sandbox.server import SnapshotError

    try:
        result = fn()
        if _sigterm_seen:
            raise Terminated()
        return result
    except typer.Exit:
        raise
    except (ConfigError, QuestionError, SnapshotError, BackendUnavailable, UserError) as exc:
        if debug:
            raise
        fail(str(exc))
    except Terminated:
        fail("terminated (SIGTERM)", EXIT_TERMINATED)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except Exception as exc:
        if debug:
            raise
        from diagnosis.redact import sanitize

        fail(f"unexpected {type(exc).__name__}: {sanitize(str(exc))[:300]} (run with --debug for details)", 1)
    raise AssertionError("unreachable")


def freeze_startup_heap() -> None:
    """Leave what startup built (imported modules, compiled schemas and patterns, the word list, a sandbox's
    snapshot: about 200,000 objects, most of the heap) out of every later garbage collection (``gc.freeze``):
    each full collection walked them all, a pause of about 100 ms for every ack and diagnosis in flight. A
    long-running process (``serve``, ``worker``, ``sandbox``) calls this once it is built, before it serves;
    never a test process (a frozen object is never collected)."""
    gc.collect()
    gc.freeze()


def run_server(fn: Callable[[], None], debug: bool = False) -> None:
    """:func:`run_guarded` for ``serve``: SIGTERM is how Kubernetes (or systemd, or a shell) tells a server to
    stop, not a failure. Whether it arrives while the server drains (uvicorn re-raises it after its graceful
    shutdown; Socket Mode's loop handles it) or before the server started, the server ends with one info line
    on stderr and exit 0, never an error line or a traceback."""

    def serve() -> None:
        global _sigterm_seen
        try:
            fn()
        except Terminated:
            _sigterm_seen = True
        if _sigterm_seen:
            _sigterm_seen = False
            logging.getLogger("bot.cli").info("stopped (SIGTERM)")

    run_guarded(serve, debug)


@contextmanager
def backends_for(snapshot_path: str | None, latency: float = 0.0) -> Iterator[tuple[Backends, dict[str, Any]]]:
    """Backends from the environment, or from a sandbox serving ``snapshot_path`` (yielding its ``ask``)."""
    from diagnosis.backends import Backends
    from diagnosis.config import ConfigError, KubeConfig, OsmoConfig, RunaiConfig, environment
    from diagnosis.units import parse_time

    if snapshot_path is None:
        env = environment()
        kube = KubeConfig.from_env(env)
        runai: RunaiConfig | None = None
        osmo: OsmoConfig | None = None
        errors: list[str] = []
        try:
            runai = RunaiConfig.from_env(env)
        except ConfigError as exc:
            if any(env.get(n) for n in ("RUNAI_BASE_URL", "RUNAI_CLIENT_ID", "RUNAI_CLIENT_SECRET")):
                errors.append(str(exc))
        try:
            osmo = OsmoConfig.from_env(env)
        except ConfigError as exc:
            if any(env.get(n) for n in ("OSMO_URL", "OSMO_TOKEN")):
                errors.append(str(exc))
        if errors:
            raise ConfigError(errors[0])
        if runai is None and osmo is None:
            raise ConfigError(
                "no backend configured: set RUNAI_BASE_URL, RUNAI_CLIENT_ID and RUNAI_CLIENT_SECRET (Run:ai) "
                "or OSMO_URL and OSMO_TOKEN (OSMO), or use --snapshot FILE to run on the sandbox"
            )
        yield Backends(runai=runai, kube=kube, osmo=osmo), {}
        return
    from sandbox.server import Sandbox, load_snapshot

    snapshot = load_snapshot(snapshot_path)
    now = parse_time(snapshot.get("now"))
    if snapshot.get("now") is not None and now is None:
        raise UserError(f"snapshot {snapshot_path}: 'now' is not an RFC 3339 time")
    with Sandbox(snapshot, latency=latency) as sandbox:
        backends = Backends(
            runai=RunaiConfig(sandbox.url, "sandbox", "sandbox", console_url=sandbox.url)
            if "runai" in snapshot
            else None,
            # The sandbox's Tier 2 settings, read as the environment's are: with kubernetes_by_cluster, a kubeconfig
            # with one context per cluster and WD_KUBE_CONTEXTS mapping each cluster uuid to its context.
            kube=KubeConfig.from_env(sandbox.kube_env()),
            osmo=OsmoConfig(sandbox.url, "sandbox-access-token") if "osmo" in snapshot else None,
        )
        if now is not None:
            fixed: datetime = now
            backends.now = lambda: fixed
        ask = snapshot.get("ask")
        if ask is not None and not isinstance(ask, dict):
            raise UserError(f"snapshot {snapshot_path}: 'ask' must be an object")
        yield backends, dict(ask or {})


def build_question(options: Question, ask: dict[str, Any]) -> Question:
    """Explicit options win, then the snapshot's ``ask`` keys, then what the text names.

    A question typed on the command line replaces the snapshot's question (issue 21): of its ``ask`` only the
    channel's cluster (``cluster_id``, when the typed text names no cluster) and the lookback are kept, so a
    typed "why did train-9 fail?" is never answered about the workload the snapshot's ask names."""
    from pydantic import ValidationError

    from diagnosis.question import Question, parse_text

    typed = (options.text or "").strip()
    if typed and typed != str(ask.get("text") or "").strip():
        parsed = parse_text(typed)
        keep = {"lookback"} | (set() if parsed.cluster or parsed.cluster_hint or parsed.uuids else {"cluster_id"})
        ask = {k: v for k, v in ask.items() if k in keep}
    try:
        base = Question.model_validate({k: v for k, v in ask.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise UserError(f"the question is invalid: ask.{where}: {first.get('msg')}") from None
    question = options.merged(base)
    parsed = parse_text(question.text)
    question = question.merged(parsed)
    question.lookback_delta()  # validates early: bad lookback is bad input
    return question


def emit(report: Report, fmt: Format, verbose: bool = False) -> None:
    from diagnosis.render import render_text, to_json

    if fmt == Format.text:
        typer.echo(render_text(report, verbose=verbose), nl=False)
        return
    from handlers.blocks import render_report, thread_payload

    rendered = render_report(report)
    blocks = rendered.main.blocks
    if fmt == Format.blocks:
        typer.echo(json.dumps({"blocks": blocks}, indent=2))
    else:
        typer.echo(json.dumps(to_json(report, blocks, thread_payload(rendered)), indent=2))
