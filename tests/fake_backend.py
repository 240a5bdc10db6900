"""A third backend, plain Kubernetes Jobs ("k8sjobs"), built the way docs/architecture.md "Adding a backend" says:
its identity part, its class on :class:`diagnosis.backends.BackendDefaults` and one :func:`diagnosis.backends.register`
call, undone after each test (:func:`registered`). No product module is edited for it: the tests that use it
(``tests/diagnosis/test_backends.py``, ``tests/handlers/test_third_backend.py``) are the proof of the recipe."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from diagnosis.backends import BackendDefaults, Backends, register
from diagnosis.digests import Digest, DigestAsk, DigestItem, RowCache
from diagnosis.question import Question
from diagnosis.report import Category, Gap, Identity, Outcome, Report, SystemPart

NAME = "k8sjobs"
AT = datetime(2026, 11, 28, 11, 0, tzinfo=UTC)


class JobIdentity(SystemPart):
    """The Job's own part of a report identity: its namespace."""

    system: Literal["k8sjobs"] = "k8sjobs"
    namespace: str | None = None


@dataclass
class FakeScan:
    items: list[DigestItem] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)


@dataclass
class JobsBackend(BackendDefaults):
    """Answers without I/O: a Job named ``job-*`` failed with OOM in namespace ``etl``."""

    name: str = NAME
    not_configured: str = "Kubernetes Jobs are not configured"
    label: str = "Kubernetes Jobs"
    noun: str = "Kubernetes Job"
    identity: type[SystemPart] = JobIdentity
    terminal_phases: frozenset[str] = frozenset({"failed", "complete"})
    asked: list[Question] = field(default_factory=list)
    scanned: list[tuple[datetime, datetime]] = field(default_factory=list)

    def configured(self, backends: Backends) -> bool:
        return True

    def claims(self, question: Question) -> bool:
        if question.system is not None:
            return question.system == self.name
        return (question.workload_name or "").startswith("job-")

    async def holds(self, names: Sequence[str], question: Question, backends: Backends) -> set[str]:
        return {n for n in names if n.startswith("job-")}

    def bind(self, question: Question, name: str) -> Question:
        return Question.model_validate({**question.model_dump(), "system": self.name, "workload_name": name})

    async def answer(self, question: Question, backends: Backends) -> Report:
        self.asked.append(question)
        return job_report(question.workload_name or "job-unknown")

    async def scan(
        self,
        ask: DigestAsk,
        backends: Backends,
        *,
        start: datetime,
        end: datetime,
        since: str,
        cache: RowCache | None,
    ) -> FakeScan:
        self.scanned.append((start, end))
        return FakeScan(items=[job_item("job-etl-7")])

    def preload(self) -> None:
        return None

    def categories(self) -> Mapping[Category, Any]:
        return {}

    # -- what the outer layers ask: a Job is re-read by namespace and name ---------------------------------

    def target(self, identity: Identity) -> dict[str, str] | None:
        part = identity.detail
        namespace = part.namespace if isinstance(part, JobIdentity) else None
        return {"s": self.name, "ns": namespace, "job": identity.name} if namespace and identity.name else None

    def question_of(self, target: Mapping[str, Any]) -> Question | None:
        if not (target.get("ns") and target.get("job")):
            return None
        return Question(workload_name=str(target["job"]), project=str(target["ns"]))

    def row_question(self, item_id: str, cluster_id: str | None) -> Question:
        return Question(workload_name=item_id)

    def row_scope(self, item: DigestItem, *, brief: bool = False) -> str:
        return str(item.project) if brief else f"namespace {item.project}"

    def scope_words(self, digest: Digest) -> list[str]:
        return ["every namespace"]

    def object_key(self, identity: Identity) -> tuple[str, ...] | None:
        part = identity.detail
        namespace = part.namespace if isinstance(part, JobIdentity) else None
        return ("jobs", namespace, identity.name) if namespace and identity.name else None


def job_report(name: str, phase: str = "Failed") -> Report:
    """The fake's answer: an OOM-killed Job in namespace ``etl``."""
    ident = Identity(system=NAME, name=name, id=f"uid-{name}", phase=phase, detail={"system": NAME, "namespace": "etl"})
    return Report(
        system=NAME,
        outcome=Outcome.DIAGNOSED,
        category=Category.OOM_KILLED,
        headline=f"The Job {name} was OOM-killed.",
        identity=ident,
        next_action="Raise the Job's memory limit.",
    )


def job_item(name: str) -> DigestItem:
    """One digest row of the fake: an OOM-killed Job in namespace ``etl``."""
    return DigestItem(
        system=NAME,
        name=name,
        id=f"uid-{name}",
        project="etl",
        at=AT,
        category="OOM_KILLED",
        verdict=f"The Job {name} was OOM-killed.",
    )


@contextmanager
def registered() -> Iterator[JobsBackend]:
    """The third backend registered for the duration (the registry and the report's systems restored after)."""
    backend = JobsBackend()
    undo = register(backend)
    try:
        yield backend
    finally:
        undo()
