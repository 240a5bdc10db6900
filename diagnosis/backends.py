"""The backend seam (issue 10 §4): what one system (Run:ai, OSMO) offers the core, and the registry of them.

:func:`diagnosis.answer.answer` and :func:`diagnosis.answer.answer_digest` route through :data:`REGISTRY`
(:func:`route`, :func:`configured`) and never name a system. A :class:`Backend` says whether the settings
configure it, whether a question is about its objects, how it answers one question, and how it scans a
window for a digest. It also answers what the outer layers (the card and its buttons, the digest rows, the
report cache, ``doctor``) would otherwise ask by the system's name: the button-target codec, a row's scope in
words, the cache keys, the terminal phases, the health probe. Adding a system is one class (plus its package
under ``diagnosis/``) and one :func:`register` call: docs/architecture.md "Adding a backend".

:class:`Backends` (plural) is the other half: the settings of every system for one diagnosis (where to ask)
and the diagnosis clock. The procedures are imported inside the methods, so importing this module stays
cheap and no procedure depends on it (no import cycle: the procedures import only leaf modules such as
:mod:`diagnosis.errors`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from diagnosis.config import KubeConfig, OsmoConfig, RunaiConfig
from diagnosis.errors import BackendUnavailable
from diagnosis.question import UUID_RE, Question
from diagnosis.report import SYSTEMS, Category, Gap, Identity, OsmoIdentity, Report, RunaiIdentity, SystemPart
from diagnosis.watching import Watcher

if TYPE_CHECKING:
    from diagnosis.digests import Digest, DigestAsk, DigestItem, RowCache


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
    """One system behind the core. ``name`` is the report's ``system`` (``"runai"``, ``"osmo"``).

    The core asks it to answer and to scan; the outer layers ask it what they would otherwise decide by the
    system's name (the members after :meth:`categories`). :class:`BackendDefaults` gives the answers of a
    system without clusters, projects, cached objects or settings of its own."""

    name: str
    #: The one line of :class:`~diagnosis.config.ConfigError` when a question needs it and it is not configured.
    not_configured: str
    #: Its name in a person's words (``"Run:ai"``): ``doctor``'s rows.
    label: str
    #: What it calls the object it diagnoses (``"Run:ai workload"``): a choice between systems names it.
    noun: str
    #: The class of its part of a report identity (``Identity.detail``), whose ``system`` is :attr:`name`.
    identity: type[SystemPart]
    #: Whether the words of a question are part of its answers' cache key (an answer that reads them: OSMO's
    #: status filter in "list failed workflows", a usage question).
    keyed_by_words: bool
    #: The phases (lowercase) after which its object no longer changes: such a report is cached a week under
    #: :meth:`object_key`.
    terminal_phases: frozenset[str]
    #: The settings that configure it (``doctor``: a system none of them is set for is skipped).
    settings_names: tuple[str, ...]
    #: The outcome of its report of a failure (FORMAT.md): what a case made from a "Wrong, it was X" vote expects.
    failure_outcome: str

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

    def bind(self, question: Question, name: str) -> Question:
        """``question`` bound to this system, about its object ``name`` (the only system holding that name:
        :mod:`diagnosis.systems`)."""
        ...

    # -- what the outer layers ask ---------------------------------------------------------------------------

    def target(self, identity: Identity) -> dict[str, str] | None:
        """What a card's buttons re-read, compact (a button's value is at most 2000 characters): a dict with
        ``"s"`` = :attr:`name` and the ids :meth:`question_of` reads back; None when the identity lacks them."""
        ...

    def question_of(self, target: Mapping[str, Any]) -> Question | None:
        """The question a card button re-asks from its :meth:`target` (None when it does not read)."""
        ...

    def row_question(self, item_id: str, cluster_id: str | None) -> Question:
        """The question that diagnoses one digest row (its ``id`` and ``cluster_id``): "Diagnose newest"."""
        ...

    def row_scope(self, item: DigestItem, *, brief: bool = False) -> str:
        """Where a digest row's failure ran, in words (``"project nlp"``, ``"pool p1"``); ``brief`` drops a word
        that the Slack row makes plain (``"nlp"``)."""
        ...

    def scope_words(self, digest: Digest) -> list[str]:
        """What a digest scanned of this system, in words (``["cluster dgx", "every project"]``)."""
        ...

    def object_key(self, identity: Identity) -> tuple[str, ...] | None:
        """The object a report is about, as key parts (``(cluster_id, workload_id)``), for the week-long cache
        of a terminal report; None: reports of this system are kept only by question."""
        ...

    def asked_key(self, question: Question) -> tuple[str, ...] | None:
        """The :meth:`object_key` a question names by id (None when it names none)."""
        ...

    async def clusters(self, backends: Backends) -> list[tuple[str, str]]:
        """The clusters of this system as ``(id, name)`` (the access policy names a cluster by either); raises
        when the system cannot be asked."""
        ...

    def read_settings(self, env: Mapping[str, str]) -> Any:
        """Its settings read from ``env``; raises :class:`~diagnosis.config.ConfigError` when incomplete."""
        ...

    def settings(self, backends: Backends) -> Any:
        """Its settings in ``backends`` (None when it is not configured)."""
        ...

    async def probe(self, settings: Any) -> tuple[str, str]:
        """``doctor``'s health check with ``settings`` (not None): ``(status, detail)``, status one of ``ok``,
        ``warn``, ``fail``; never raises."""
        ...

    def healthy_outcome(self, phase: str) -> str:
        """The outcome a case expects when a person said the answer's object (in ``phase``, lowercase) did not
        fail (FORMAT.md outcomes: ``succeeded``, ``status``, ...)."""
        ...

    def watcher(self, backends: Backends) -> Watcher | None:
        """What follows its targets to their end (:func:`diagnosis.watching.follow`: opened once per watch), or
        None when this system has nothing to watch or is not configured."""
        ...


class BackendDefaults:
    """The outer-layer answers of a system with no clusters, no projects, no object cached beyond its question
    and no settings of its own (a new backend overrides what it has): buttons re-read nothing, a digest row's
    scope is unsaid."""

    name: str
    label = ""
    identity: type[SystemPart] = SystemPart
    keyed_by_words = False
    terminal_phases: frozenset[str] = frozenset()
    settings_names: tuple[str, ...] = ()
    failure_outcome = "diagnosed"

    def target(self, identity: Identity) -> dict[str, str] | None:
        return None

    def question_of(self, target: Mapping[str, Any]) -> Question | None:
        return None

    def row_scope(self, item: DigestItem, *, brief: bool = False) -> str:
        return ""

    def scope_words(self, digest: Digest) -> list[str]:
        return []

    def object_key(self, identity: Identity) -> tuple[str, ...] | None:
        return None

    def asked_key(self, question: Question) -> tuple[str, ...] | None:
        return None

    async def clusters(self, backends: Backends) -> list[tuple[str, str]]:
        return []

    def read_settings(self, env: Mapping[str, str]) -> Any:
        return None

    def settings(self, backends: Backends) -> Any:
        return None

    async def probe(self, settings: Any) -> tuple[str, str]:
        return "ok", "configured"

    def healthy_outcome(self, phase: str) -> str:
        return "status"

    def watcher(self, backends: Backends) -> Watcher | None:
        return None


def error_line(exc: BaseException) -> str:
    """``Type: first line`` of an error, at most 300 characters (a probe's detail; the caller sanitizes it)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__


#: What a Run:ai workload that did not fail is answered with, by its phase (else ``phase_only``).
_RUNAI_HEALTHY = {
    "completed": "succeeded",
    "succeeded": "succeeded",
    "running": "ask_past_run",
    "suspended": "out_of_scope",
}


def _unreachable(exc: Exception) -> BackendUnavailable:
    return BackendUnavailable(f"the control plane did not answer: {type(exc).__name__}: {exc}")


class RunaiBackend(BackendDefaults):
    """Run:ai workloads (:mod:`diagnosis.runai`), with Tier 2 Kubernetes evidence when configured."""

    name = "runai"
    not_configured = (
        "Run:ai is not configured: set RUNAI_BASE_URL, RUNAI_CLIENT_ID and RUNAI_CLIENT_SECRET "
        "(with --snapshot, the snapshot needs a 'runai' section)"
    )
    label = "Run:ai"
    noun = "Run:ai workload"
    identity: type[SystemPart] = RunaiIdentity
    keyed_by_words = False
    terminal_phases: frozenset[str] = frozenset({"failed", "crashed", "stopped", "completed", "succeeded"})
    settings_names: tuple[str, ...] = ("RUNAI_BASE_URL", "RUNAI_CLIENT_ID", "RUNAI_CLIENT_SECRET")
    failure_outcome = "diagnosed"

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

    def target(self, identity: Identity) -> dict[str, str] | None:
        if not (identity.cluster_id and identity.workload_id):
            return None
        out = {"s": self.name, "c": identity.cluster_id, "w": identity.workload_id}
        if identity.project:
            out["p"] = identity.project
        return out

    def question_of(self, target: Mapping[str, Any]) -> Question | None:
        if not (target.get("c") and target.get("w")):
            return None
        project = str(target["p"]) if target.get("p") else None
        return Question(cluster_id=str(target["c"]), workload_id=str(target["w"]), project=project)

    def row_question(self, item_id: str, cluster_id: str | None) -> Question:
        return Question(workload_id=item_id, cluster_id=cluster_id, intent="terminal")

    def bind(self, question: Question, name: str) -> Question:
        update = {"system": self.name, "kind": "runai", "workflow_id": None, "workload_name": name.lower()}
        return question.model_copy(update=update)

    def row_scope(self, item: DigestItem, *, brief: bool = False) -> str:
        return str(item.project or "") if brief else f"project {item.project}"

    def scope_words(self, digest: Digest) -> list[str]:
        clusters = digest.cluster_names or digest.cluster_ids
        where = (
            ("cluster " if len(clusters) == 1 else "clusters ") + ", ".join(clusters) if clusters else "every cluster"
        )
        return [where, "projects " + ", ".join(digest.projects) if digest.projects else "every project"]

    def object_key(self, identity: Identity) -> tuple[str, ...] | None:
        return (identity.cluster_id, identity.workload_id) if identity.cluster_id and identity.workload_id else None

    def asked_key(self, question: Question) -> tuple[str, ...] | None:
        return (question.cluster_id, question.workload_id) if question.cluster_id and question.workload_id else None

    async def clusters(self, backends: Backends) -> list[tuple[str, str]]:
        import asyncio

        from diagnosis.runai.client import RunaiClient

        if backends.runai is None:
            return []
        async with RunaiClient(backends.runai) as client:
            found = await asyncio.wait_for(client.list_clusters(), 15.0)
        return [(c.uuid, c.name or "") for c in found]

    def read_settings(self, env: Mapping[str, str]) -> Any:
        return RunaiConfig.from_env(env)

    def settings(self, backends: Backends) -> Any:
        return backends.runai

    async def probe(self, settings: Any) -> tuple[str, str]:
        from diagnosis.runai.client import RunaiClient

        try:
            async with RunaiClient(settings) as client:
                clusters = await client.list_clusters()
        except Exception as exc:
            return "fail", f"token or clusters read failed: {error_line(exc)}"
        names = ", ".join(sorted(str(getattr(c, "name", "") or getattr(c, "uuid", "?")) for c in clusters)[:5])
        if not clusters:
            return "warn", "token ok, but the application sees no cluster (its role and scope?)"
        return "ok", f"token ok; {len(clusters)} cluster(s): {names}"

    def healthy_outcome(self, phase: str) -> str:
        return _RUNAI_HEALTHY.get(phase, "phase_only")

    def watcher(self, backends: Backends) -> Watcher | None:
        return None  # a Run:ai workload is asked about, not followed


class OsmoBackend(BackendDefaults):
    """OSMO workflows (:mod:`diagnosis.osmo`)."""

    name = "osmo"
    not_configured = (
        "OSMO is not configured: set OSMO_URL and OSMO_TOKEN (with --snapshot, the snapshot needs an 'osmo' section)"
    )
    label = "OSMO"
    noun = "OSMO workflow"
    identity: type[SystemPart] = OsmoIdentity
    keyed_by_words = True
    #: an OSMO report is kept only by its question (30 seconds): a workflow is re-read, never cached a week
    terminal_phases: frozenset[str] = frozenset()
    settings_names: tuple[str, ...] = ("OSMO_URL", "OSMO_TOKEN")
    failure_outcome = "failed"

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

    def target(self, identity: Identity) -> dict[str, str] | None:
        return {"s": self.name, "id": identity.workflow_id} if identity.workflow_id else None

    def question_of(self, target: Mapping[str, Any]) -> Question | None:
        return Question(workflow_id=str(target["id"])) if target.get("id") else None

    def row_question(self, item_id: str, cluster_id: str | None) -> Question:
        return Question(workflow_id=item_id)

    def bind(self, question: Question, name: str) -> Question:
        return question.model_copy(update={"system": self.name, "kind": "osmo_status", "workflow_id": name})

    def row_scope(self, item: DigestItem, *, brief: bool = False) -> str:
        return f"pool {item.pool}"

    def scope_words(self, digest: Digest) -> list[str]:
        pools = digest.pools
        return ["OSMO pools " + ", ".join(pools) if pools else "every OSMO pool" if pools is None else "no OSMO pool"]

    # no object_key / asked_key / clusters (BackendDefaults'): a workflow is kept only by its question, and OSMO
    # has no clusters an access rule names

    def read_settings(self, env: Mapping[str, str]) -> Any:
        return OsmoConfig.from_env(env)

    def settings(self, backends: Backends) -> Any:
        return backends.osmo

    async def probe(self, settings: Any) -> tuple[str, str]:
        from diagnosis.osmo.client import OsmoClient

        try:
            async with OsmoClient(settings) as client:
                await client.list_workflows(limit=1)
        except Exception as exc:
            return "fail", f"token exchange or workflow read failed: {error_line(exc)}"
        return "ok", "token exchanged; workflows readable"

    def healthy_outcome(self, phase: str) -> str:
        return "status"  # an OSMO workflow that did not fail is answered with its status

    def watcher(self, backends: Backends) -> Watcher | None:
        if backends.osmo is None:
            return None
        from diagnosis.osmo.watcher import polling

        return polling(backends.osmo)


#: Every backend, by name. The first is the default: it answers what no backend claims. The order is also
#: the order of a digest's systems. Filled by :func:`register` (a report's ``system`` is checked against
#: :data:`diagnosis.report.SYSTEMS`, which it fills too).
REGISTRY: dict[str, Backend] = {}


def register(backend: Backend) -> Callable[[], None]:
    """Add ``backend`` to :data:`REGISTRY` (after the others) and its identity part to
    :data:`diagnosis.report.SYSTEMS`; returns the function that undoes exactly this (a test's fixture).
    Raises ``ValueError`` when the name is taken or the identity part names another system."""
    if backend.name in REGISTRY:
        raise ValueError(f"a backend named {backend.name!r} is already registered")
    own = backend.identity.model_fields["system"].default
    if backend.identity is not SystemPart and own != backend.name:
        raise ValueError(f"{backend.identity.__name__}.system is {own!r}, not {backend.name!r}")
    had = SYSTEMS.get(backend.name)
    REGISTRY[backend.name] = backend
    SYSTEMS[backend.name] = backend.identity

    def undo() -> None:
        REGISTRY.pop(backend.name, None)
        if had is None:
            SYSTEMS.pop(backend.name, None)
        else:
            SYSTEMS[backend.name] = had

    return undo


register(RunaiBackend())
register(OsmoBackend())


def backend_of(system: str | None) -> Backend:
    """The registered backend named ``system``, else the default (the first registered)."""
    return REGISTRY.get(system or "") or next(iter(REGISTRY.values()))


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
