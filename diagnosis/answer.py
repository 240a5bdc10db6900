"""The one place that answers a question: CLI, ``/diagnose``, mentions, follow-ups, buttons and the
terminal twin all call :func:`answer`.

It routes a :class:`~diagnosis.question.Question` to the Run:ai procedure or the OSMO procedure
and always returns a :class:`~diagnosis.report.Report`; it raises only for input that prevents
any answer (:class:`~diagnosis.config.ConfigError`, :class:`~diagnosis.question.QuestionError`)
or for a backend still unreachable after retries (:class:`BackendUnavailable`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from diagnosis.config import ConfigError, KubeConfig, OsmoConfig, RunaiConfig
from diagnosis.question import Question
from diagnosis.report import Report


class BackendUnavailable(RuntimeError):
    """The Run:ai or OSMO API could not be reached (or refused the credentials) after retries."""


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class Backends:
    """Where to ask: each system is optional; ``now`` is the diagnosis clock (UTC)."""

    runai: RunaiConfig | None = None
    kube: KubeConfig = field(default_factory=KubeConfig)
    osmo: OsmoConfig | None = None
    now: Callable[[], datetime] = utcnow

    def system_for(self, question: Question) -> str:
        """``"osmo"`` for workflow questions (or when only OSMO is configured), else ``"runai"``."""
        if question.workflow_id or question.kind.startswith("osmo"):
            return "osmo" if self.osmo is not None or self.runai is None else "runai"
        if self.runai is None and self.osmo is not None:
            return "osmo"
        return "runai"


def preload() -> None:
    """Import both procedures (and the kubernetes package) now, not inside the first diagnosis.

    A long-running process (the bot) calls this at startup so the first question does not block
    the event loop for the imports (about 1.5 s, most of it the kubernetes package's lazy CoreV1Api).
    """
    import diagnosis.osmo.procedure
    import diagnosis.runai.procedure  # noqa: F401
    from diagnosis.k8s import preload as preload_k8s

    preload_k8s()


async def answer(question: Question, backends: Backends) -> Report:
    """Answer ``question`` with the configured backends. See the module docstring for errors."""
    system = backends.system_for(question)
    if system == "osmo":
        if backends.osmo is None:
            raise ConfigError(
                "OSMO is not configured: set OSMO_URL and OSMO_TOKEN "
                "(with --snapshot, the snapshot needs an 'osmo' section)"
            )
        from diagnosis.osmo.procedure import answer_osmo

        return await answer_osmo(question, backends.osmo, now=backends.now())
    if backends.runai is None:
        raise ConfigError(
            "Run:ai is not configured: set RUNAI_BASE_URL, RUNAI_CLIENT_ID and RUNAI_CLIENT_SECRET "
            "(with --snapshot, the snapshot needs a 'runai' section)"
        )
    from diagnosis.runai.procedure import diagnose_runai

    return await diagnose_runai(question, backends.runai, backends.kube, now=backends.now())
