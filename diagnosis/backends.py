"""The backend seam (issue 10 §4): what one system (Run:ai, OSMO) offers the core, and the registry of them.

:func:`diagnosis.answer.answer` and :func:`diagnosis.answer.answer_digest` route through :data:`REGISTRY`
(:func:`route`, :func:`configured`) and never name a system. A :class:`Backend` says whether the settings
configure it, whether a question is about its objects, how it answers one question, and how it scans a
window for a digest. Adding a system is one class here (plus its package under ``diagnosis/``) and one
registry entry: docs/architecture.md "Adding a backend".

:class:`Backends` (plural) is the other half: the settings of every system for one diagnosis (where to ask)
and the diagnosis clock. The procedures are imported inside the methods, so importing this module stays
cheap and no procedure depends on it (no import cycle: the procedures import only leaf modules such as
:mod:`diagnosis.errors`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from diagnosis.config import KubeConfig, OsmoConfig, RunaiConfig
from diagnosis.errors import BackendUnavailable
from diagnosis.question import UUID_RE, Question
from diagnosis.report import Category, Gap, Report

if TYPE_CHECKING:
    from diagnosis.digests import DigestAsk, DigestItem, RowCache


def utcnow() -> datetime:
    """The default diagnosis clock (UTC, aware)."""
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
        """The name of the backend that answers ``question`` (:func:`route`): ``"osmo"`` for workflow questions
        (or when only OSMO is configured), else ``"runai"``."""
        return route(question, self).name


class Scan(Protocol):
    """What a backend's digest scan found: the failures (``items``) and what it could not read (``gaps``).
    A scan may also carry ``cluster_ids`` / ``cluster_names`` (the Run:ai clusters it covered)."""

    items: list[DigestItem]
    gaps: list[Gap]


class CategoryEntry(Protocol):
    """What every system's category entry has (:class:`diagnosis.runai.categories.RunaiCategory`,
    :class:`diagnosis.osmo.categories.OsmoCategory`): the category, its plain-language clause and its words on the
    card's header and the text's first line."""

    @property
    def category(self) -> Category: ...
    @property
    def plain(self) -> str: ...
    @property
    def emoji(self) -> str: ...
    @property
    def title(self) -> str: ...


class Backend(Protocol):
    """One system behind the core. ``name`` is the report's ``system`` (``"runai"``, ``"osmo"``)."""

    name: str
    #: The one line of :class:`~diagnosis.config.ConfigError` when a question needs it and it is not configured.
    not_configured: str

    def configured(self, backends: Backends) -> bool:
        """Whether ``backends`` holds this system's settings."""
        ...

    def claims(self, question: Question) -> bool:
        """Whether ``question`` names this system's objects (a workflow ID, an ``osmo_*`` kind)."""
        ...

    async def holds(self, names: Sequence[str], question: Question, backends: Backends) -> set[str]:
        """Which of ``names`` exist in this system (in the question's project and cluster when it names them),
        in one concurrent round trip (:mod:`diagnosis.systems`). Raises when the system cannot be asked."""
        ...

    async def answer(self, question: Question, backends: Backends) -> Report:
        """Answer one question (always a report; raises what :func:`diagnosis.answer.answer` documents)."""
        ...

    async def scan(
        self,
        ask: DigestAsk,
        backends: Backends,
        *,
        start: datetime,
        end: datetime,
        since: str,
        cache: RowCache | None,
    ) -> Scan:
        """The failures in ``[start, end]`` (UTC) for a digest. Raises :class:`BackendUnavailable` when the
        system cannot be reached at all; every other problem is a gap of the scan."""
        ...

    def preload(self) -> None:
        """Import the procedure now (a long-running process calls this at startup)."""
        ...

    def categories(self) -> Mapping[Category, CategoryEntry]:
        """This system's category registry (each entry: rule, texts, words)."""
        ...


def _unreachable(exc: Exception) -> BackendUnavailable:
    return BackendUnavailable(f"the control plane did not answer: {type(exc).__name__}: {exc}")


class RunaiBackend:
    """Run:ai workloads (:mod:`diagnosis.runai`), with Tier 2 Kubernetes evidence when configured."""

    name = "runai"
    not_configured = (
        "Run:ai is not configured: set RUNAI_BASE_URL, RUNAI_CLIENT_ID and RUNAI_CLIENT_SECRET "
        "(with --snapshot, the snapshot needs a 'runai' section)"
    )

    def configured(self, backends: Backends) -> bool:
        return backends.runai is not None

    def claims(self, question: Question) -> bool:
        # Run:ai is the default system: it claims nothing but a question bound to it, and answers what no other
        # backend claims.
        return question.system == "runai"

    async def holds(self, names: Sequence[str], question: Question, backends: Backends) -> set[str]:
        import asyncio

        from diagnosis.runai.client import RunaiClient

        assert backends.runai is not None
        scope = [f"projectName=={question.project}"] if question.project else []
        if question.cluster_id and UUID_RE.fullmatch(question.cluster_id):
            scope.append(f"clusterId=={question.cluster_id.lower()}")
        async with RunaiClient(backends.runai) as client:
            found = await asyncio.gather(
                *(
                    client.list_workloads([f"name=={n.lower()}", *scope], deleted=deleted)
                    for n in names
                    for deleted in (False, True)
                )
            )
        pairs = [(n, ws) for n, ws in zip([n for n in names for _ in (0, 1)], found, strict=True)]
        return {n for n, ws in pairs if any((w.name or "").casefold() == n.casefold() for w in ws)}

    async def answer(self, question: Question, backends: Backends) -> Report:
        from diagnosis.runai.procedure import diagnose_runai

        assert backends.runai is not None  # answer() checks configured() first
        return await diagnose_runai(
            question, backends.runai, backends.kube, now=backends.now(), offer_choices=backends.offer_choices
        )

    async def scan(
        self,
        ask: DigestAsk,
        backends: Backends,
        *,
        start: datetime,
        end: datetime,
        since: str,
        cache: RowCache | None,
    ) -> Scan:
        import httpx

        from diagnosis.runai.client import ApiError
        from diagnosis.runai.digest_source import scan_runai

        assert backends.runai is not None
        try:
            return await scan_runai(
                backends.runai,
                cluster_id=ask.cluster_id,
                projects=ask.projects,
                start=start,
                end=end,
                since=since,
                cache=cache,
            )
        except (ApiError, httpx.HTTPError) as exc:
            # A whole-plane scan that cannot list the clusters has nothing to report: one clear line.
            raise _unreachable(exc) from exc

    def categories(self) -> Mapping[Category, CategoryEntry]:
        from diagnosis.runai.categories import CATEGORIES

        return CATEGORIES

    def preload(self) -> None:
        import diagnosis.runai.procedure  # noqa: F401
        from diagnosis.k8s import preload as preload_k8s

        preload_k8s()


class OsmoBackend:
    """OSMO workflows (:mod:`diagnosis.osmo`)."""

    name = "osmo"
    not_configured = (
        "OSMO is not configured: set OSMO_URL and OSMO_TOKEN (with --snapshot, the snapshot needs an 'osmo' section)"
    )

    def configured(self, backends: Backends) -> bool:
        return backends.osmo is not None

    def claims(self, question: Question) -> bool:
        if question.system is not None:
            return question.system == "osmo"
        return bool(question.workflow_id) or question.kind.startswith("osmo")

    async def holds(self, names: Sequence[str], question: Question, backends: Backends) -> set[str]:
        import asyncio

        from diagnosis.osmo.client import OsmoClient, WorkflowNotFound

        assert backends.osmo is not None
        async with OsmoClient(backends.osmo) as client:
            found = await asyncio.gather(*(client.get_workflow(n) for n in names), return_exceptions=True)
        errors = [r for r in found if isinstance(r, BaseException) and not isinstance(r, WorkflowNotFound)]
        if errors and len(errors) == len(names):
            raise errors[0]
        return {n for n, r in zip(names, found, strict=True) if not isinstance(r, BaseException)}

    async def answer(self, question: Question, backends: Backends) -> Report:
        from diagnosis.osmo.procedure import answer_osmo

        assert backends.osmo is not None
        return await answer_osmo(question, backends.osmo, now=backends.now())

    async def scan(
        self,
        ask: DigestAsk,
        backends: Backends,
        *,
        start: datetime,
        end: datetime,
        since: str,
        cache: RowCache | None,
    ) -> Scan:
        import httpx

        from diagnosis.osmo.digest_source import scan_osmo

        assert backends.osmo is not None
        try:
            return await scan_osmo(backends.osmo, pools=ask.pools, start=start, end=end, now=end, cache=cache)
        except httpx.HTTPError as exc:
            raise _unreachable(exc) from exc

    def categories(self) -> Mapping[Category, CategoryEntry]:
        from diagnosis.osmo.categories import CATEGORIES

        return CATEGORIES

    def preload(self) -> None:
        import diagnosis.osmo.procedure  # noqa: F401


#: Every backend, by name. The first is the default: it answers what no backend claims. The order is also
#: the order of a digest's systems.
REGISTRY: dict[str, Backend] = {b.name: b for b in (RunaiBackend(), OsmoBackend())}


def configured(backends: Backends) -> list[Backend]:
    """The registered backends ``backends`` configures, in registry order."""
    return [b for b in REGISTRY.values() if b.configured(backends)]


def route(question: Question, backends: Backends) -> Backend:
    """The backend that answers ``question``: the one that claims it, when it is configured (or when nothing
    is); else the first configured one; else the default (the first registered). The caller raises the
    backend's :attr:`~Backend.not_configured` when the chosen one is not configured."""
    ready = configured(backends)
    claimed = next((b for b in REGISTRY.values() if b.claims(question)), None)
    if claimed is not None and (claimed in ready or not ready):
        return claimed
    return ready[0] if ready else next(iter(REGISTRY.values()))


def category_entry(system: str | None, category: Category) -> CategoryEntry | None:
    """The entry of ``category`` in ``system``'s registry, else in the first registry that has it (a digest row
    or a report without a system), else None."""
    own = REGISTRY.get(system or "")
    for backend in ([own] if own is not None else []) + list(REGISTRY.values()):
        entry = backend.categories().get(category)
        if entry is not None:
            return entry
    return None


def names(backends: Sequence[Backend]) -> list[str]:
    """``["runai", "osmo"]``: the report ``system`` of each backend."""
    return [b.name for b in backends]
