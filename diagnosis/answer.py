"""The one place that answers a question: CLI, ``/diagnose``, mentions, follow-ups, buttons and the
terminal twin all call :func:`answer`.

It routes a :class:`~diagnosis.question.Question` to the Run:ai procedure or the OSMO procedure
and always returns a :class:`~diagnosis.report.Report`; it raises only for input that prevents
any answer (:class:`~diagnosis.config.ConfigError`, :class:`~diagnosis.question.QuestionError`)
or for a backend still unreachable after retries (:class:`BackendUnavailable`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from diagnosis.config import ConfigError, KubeConfig, OsmoConfig, RunaiConfig
from diagnosis.question import Question
from diagnosis.report import Report

if TYPE_CHECKING:
    from diagnosis.digests import Digest, DigestAsk, RowCache


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
    #: a conversation (Slack, the terminal twin) offers every listable answer of a follow-up question as a
    #: choice, read from the control plane (the clusters, the projects holding that name); the CLI asks first
    offer_choices: bool = False

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

    return await diagnose_runai(
        question, backends.runai, backends.kube, now=backends.now(), offer_choices=backends.offer_choices
    )


async def answer_digest(
    ask: DigestAsk,
    backends: Backends,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    cache: RowCache | None = None,
) -> Digest:
    """A digest of the failures in ``[now - since, now]`` (or the explicit ``[start, end]`` of a scheduled
    digest, UTC) over every configured system (FORMAT.md "Digests"). ``cache`` keeps each Run:ai row per
    (workload id, phaseUpdatedAt, Tier 1, window length) for the next digest.

    Raises :class:`~diagnosis.question.QuestionError` for a bad window, :class:`ConfigError` when no system is
    configured, and :class:`BackendUnavailable` when a whole-plane Run:ai scan cannot list the clusters."""
    from diagnosis.digests import build_digest, since_label

    end = end or backends.now()
    start = start or end - ask.since_delta()
    since = ask.since if ask.since and start == end - ask.since_delta() else since_label(end - start)
    if backends.runai is None and backends.osmo is None:
        raise ConfigError("no backend configured: set the Run:ai or OSMO settings (or use --snapshot FILE)")
    items: list[Any] = []
    gaps: list[Any] = []
    systems: list[str] = []
    cluster_ids: list[str] = []
    cluster_names: list[str] = []
    jobs: list[Coroutine[Any, Any, Any]] = []
    if backends.runai is not None:
        from diagnosis.runai.digest_source import scan_runai

        systems.append("runai")
        jobs.append(
            scan_runai(
                backends.runai,
                cluster_id=ask.cluster_id,
                projects=ask.projects,
                start=start,
                end=end,
                since=since,
                cache=cache,
            )
        )
    if backends.osmo is not None:
        from diagnosis.osmo.digest_source import scan_osmo

        systems.append("osmo")
        jobs.append(scan_osmo(backends.osmo, pools=ask.pools, start=start, end=end, now=end))
    try:
        scans = await asyncio.gather(*jobs)
    except Exception as exc:
        import httpx

        from diagnosis.runai.client import ApiError

        if isinstance(exc, ApiError | httpx.HTTPError):
            raise BackendUnavailable(f"the control plane did not answer: {type(exc).__name__}: {exc}") from exc
        raise
    for scan in scans:
        items += scan.items
        gaps += scan.gaps
        cluster_ids += getattr(scan, "cluster_ids", [])
        cluster_names += getattr(scan, "cluster_names", [])
    return build_digest(
        items,
        start=start,
        end=end,
        since=since,
        gaps=gaps,
        cluster_ids=cluster_ids,
        cluster_names=cluster_names,
        projects=ask.projects,
        pools=ask.pools,
        systems=systems,
    )
