"""The backend seam (issue 10 §4): routing by the registry (a third backend added, not one replaced), and the
report identity's common + per-system shape."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from diagnosis import backends as seam
from diagnosis.answer import Backends, answer, answer_digest
from diagnosis.config import ConfigError, OsmoConfig, RunaiConfig
from diagnosis.digests import DigestAsk
from diagnosis.question import Question
from diagnosis.report import SYSTEMS, Identity, OsmoIdentity, Outcome, Report, RunaiIdentity
from tests.fake_backend import FakeScan, JobIdentity, JobsBackend, registered

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


@pytest.fixture
def k8sjobs() -> Iterator[JobsBackend]:
    """A third backend registered for one test; the registry and the report's systems are restored after."""
    with registered() as backend:
        yield backend


def test_a_third_backend_is_added_and_removed_without_touching_the_two(k8sjobs: JobsBackend) -> None:
    assert list(seam.REGISTRY) == ["runai", "osmo", "k8sjobs"]
    assert seam.REGISTRY["runai"] is not k8sjobs and isinstance(seam.REGISTRY["osmo"], seam.OsmoBackend)
    assert SYSTEMS["k8sjobs"] is JobIdentity
    with pytest.raises(ValueError, match="already registered"):
        seam.register(JobsBackend())


def test_registration_is_undone() -> None:
    with registered():
        assert "k8sjobs" in seam.REGISTRY
    assert list(seam.REGISTRY) == ["runai", "osmo"] and "k8sjobs" not in SYSTEMS
    with pytest.raises(ValueError, match="unknown system 'k8sjobs'"):
        Report(system="k8sjobs", outcome=Outcome.STATUS, headline="x")


def test_answer_and_answer_digest_route_through_the_registry(
    k8sjobs: JobsBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def holds_nothing(*args: Any, **kwargs: Any) -> set[str]:
        return set()

    async def scans_nothing(*args: Any, **kwargs: Any) -> Any:
        return FakeScan()

    for name in ("runai", "osmo"):
        monkeypatch.setattr(seam.REGISTRY[name], "holds", holds_nothing)
        monkeypatch.setattr(seam.REGISTRY[name], "scan", scans_nothing)
    # three configured: the name is looked up in each system, and the one that has it answers
    report = asyncio.run(answer(Question(text="why did job-etl-7 fail?", workload_name="job-etl-7"), both()))
    assert (report.system, report.headline) == ("k8sjobs", "The Job job-etl-7 was OOM-killed.")
    assert [(q.system, q.workload_name) for q in k8sjobs.asked] == [("k8sjobs", "job-etl-7")]
    assert report.identity is not None and report.identity.detail == JobIdentity(namespace="etl")

    digest = asyncio.run(answer_digest(DigestAsk(since="24h"), both()))
    assert digest.systems == ["runai", "osmo", "k8sjobs"]
    assert k8sjobs.scanned == [(datetime(2026, 11, 27, 12, 0, tzinfo=UTC), NOW)]
    assert [(i.system, i.name) for g in digest.groups for i in g.items] == [("k8sjobs", "job-etl-7")]


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
