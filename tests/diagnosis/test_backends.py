"""The backend seam (issue 10 §4): routing by the registry, and the report identity's common + per-system shape."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from diagnosis import backends as seam
from diagnosis.answer import Backends, answer, answer_digest
from diagnosis.config import ConfigError, OsmoConfig, RunaiConfig
from diagnosis.digests import DigestAsk
from diagnosis.question import Question
from diagnosis.report import Identity, OsmoIdentity, Outcome, Report, RunaiIdentity

RUNAI = RunaiConfig("https://runai.test", "id", "secret", console_url="https://runai.test")
OSMO = OsmoConfig("https://osmo.test", "token")
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def both() -> Backends:
    return Backends(runai=RUNAI, osmo=OSMO, now=lambda: NOW)


@pytest.mark.parametrize(
    ("runai", "osmo", "question", "system"),
    [
        (RUNAI, OSMO, Question(text="why did train-7 fail?"), "runai"),
        (RUNAI, OSMO, Question(text="status of sdg-7", workflow_id="sdg-7"), "osmo"),
        (RUNAI, OSMO, Question(text="list recent workflows", kind="osmo_list"), "osmo"),
        (None, OSMO, Question(text="why did train-7 fail?"), "osmo"),  # the only configured system
        (RUNAI, None, Question(text="status of sdg-7", workflow_id="sdg-7"), "runai"),
        (None, None, Question(text="status of sdg-7", workflow_id="sdg-7"), "osmo"),  # says OSMO is missing
        (None, None, Question(text="why did train-7 fail?"), "runai"),  # the default
    ],
)
def test_route_picks_the_claiming_then_the_configured_then_the_default_backend(
    runai: RunaiConfig | None, osmo: OsmoConfig | None, question: Question, system: str
) -> None:
    backends = Backends(runai=runai, osmo=osmo)
    assert seam.route(question, backends).name == system
    assert backends.system_for(question) == system


def test_the_registry_holds_both_systems_and_the_default_first() -> None:
    assert list(seam.REGISTRY) == ["runai", "osmo"]
    assert all(name == b.name for name, b in seam.REGISTRY.items())


@pytest.mark.parametrize(
    ("question", "needs"),
    [
        (Question(text="why did train-7 fail?"), "Run:ai is not configured: set RUNAI_BASE_URL"),
        (Question(text="status of sdg-7", workflow_id="sdg-7"), "OSMO is not configured: set OSMO_URL"),
    ],
)
def test_an_unconfigured_backend_is_its_own_config_error(question: Question, needs: str) -> None:
    with pytest.raises(ConfigError, match=needs):
        asyncio.run(answer(question, Backends()))


@dataclass
class FakeScan:
    items: list[Any] = field(default_factory=list)
    gaps: list[Any] = field(default_factory=list)


@dataclass
class FakeBackend:
    """A backend that answers without I/O: how a new system plugs in."""

    name: str
    not_configured: str = "fake is not configured"
    asked: list[Question] = field(default_factory=list)
    scanned: list[tuple[datetime, datetime]] = field(default_factory=list)

    def configured(self, backends: Backends) -> bool:
        return True

    def claims(self, question: Question) -> bool:
        return question.workflow_id == "fake"

    async def holds(self, names: Sequence[str], question: Question, backends: Backends) -> set[str]:
        return {n for n in names if n == "fake"}

    async def answer(self, question: Question, backends: Backends) -> Report:
        self.asked.append(question)
        return Report(system="osmo", outcome=Outcome.STATUS, headline=f"answered by {self.name}")

    async def scan(
        self, ask: DigestAsk, backends: Backends, *, start: datetime, end: datetime, since: str, cache: Any
    ) -> FakeScan:
        self.scanned.append((start, end))
        return FakeScan()

    def preload(self) -> None:
        return None


def test_answer_and_answer_digest_route_through_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeBackend("osmo")
    monkeypatch.setitem(seam.REGISTRY, "osmo", fake)

    async def no_runai_workload(*args: Any, **kwargs: Any) -> set[str]:
        return set()

    # both configured: the name is looked up in each system, and the one that has it answers
    monkeypatch.setattr(seam.REGISTRY["runai"], "holds", no_runai_workload)
    report = asyncio.run(answer(Question(text="status of fake", workflow_id="fake"), both()))
    assert report.headline == "answered by osmo" and len(fake.asked) == 1

    async def no_runai_scan(*args: Any, **kwargs: Any) -> FakeScan:
        return FakeScan()

    monkeypatch.setattr(seam.REGISTRY["runai"], "scan", no_runai_scan)
    digest = asyncio.run(answer_digest(DigestAsk(since="24h"), both()))
    assert digest.systems == ["runai", "osmo"]
    assert fake.scanned == [(datetime(2026, 11, 27, 12, 0, tzinfo=UTC), NOW)]


def test_a_digest_needs_a_configured_backend() -> None:
    with pytest.raises(ConfigError, match="no backend configured"):
        asyncio.run(answer_digest(DigestAsk(), Backends()))


def test_identity_is_common_fields_plus_the_systems_part() -> None:
    runai = Identity(
        system="runai", cluster_id="c1", cluster_name="dgx", project="nlp", workload_id="w1", workload_name="t7"
    )
    assert (runai.name, runai.id) == ("t7", "w1")
    assert runai.detail == RunaiIdentity(cluster_id="c1", cluster_name="dgx", project="nlp")
    assert (runai.workload_name, runai.cluster_id, runai.project, runai.workflow_id, runai.pool) == (
        "t7",
        "c1",
        "nlp",
        None,
        None,
    )
    osmo = Identity(system="osmo", workflow_id="sdg-7", status="FAILED", pool="p1", user="u")
    assert (osmo.name, osmo.id, osmo.phase) == ("sdg-7", "sdg-7", "FAILED")
    assert osmo.detail == OsmoIdentity(pool="p1", user="u")
    assert (osmo.workflow_id, osmo.status, osmo.pool, osmo.workload_name, osmo.cluster_id) == (
        "sdg-7",
        "FAILED",
        "p1",
        None,
        None,
    )
    data = osmo.model_dump(mode="json")
    assert set(data) == {"system", "name", "id", "phase", "phase_updated_at", "detail"}
    assert data["detail"] == {"system": "osmo", "pool": "p1", "user": "u"}
    assert Identity.model_validate(data) == osmo


def test_a_flat_identity_of_an_earlier_version_still_reads() -> None:
    """A report cached before the change (Redis) keeps its meaning."""
    flat = {"system": "runai", "cluster_id": "c1", "workload_id": "w1", "workload_name": "t7", "phase": "Failed"}
    ident = Identity.model_validate(flat)
    assert (ident.name, ident.id, ident.phase, ident.cluster_id) == ("t7", "w1", "Failed", "c1")
    assert Identity.model_validate({"system": "osmo", "workflow_id": "w", "status": "RUNNING"}).phase == "RUNNING"
    assert Identity(system="osmo", id="w").detail == OsmoIdentity()
