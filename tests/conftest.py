"""Shared fixtures: run a snapshot through the real core against the sandbox over loopback HTTP."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from diagnosis.answer import Backends, answer
from diagnosis.config import KubeConfig, OsmoConfig, RunaiConfig
from diagnosis.question import Question
from diagnosis.report import Report
from diagnosis.units import parse_time
from sandbox.server import Sandbox
from tests.slack_mock import REDIS_URL, SlackMock

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
CASES = SHARED / "cases"

Diagnose = Callable[..., Awaitable[tuple[Report, Sandbox]]]


@pytest.fixture
def diagnose() -> Diagnose:
    """``await diagnose(snapshot, **question_overrides)`` -> (report, sandbox after the run); ``sandbox`` gives
    the :class:`Sandbox` options (``rbac=...``: a narrower install than the shipped one)."""

    async def run(
        snapshot: dict[str, Any], deadline: float = 30.0, sandbox: dict[str, Any] | None = None, **overrides: Any
    ) -> tuple[Report, Sandbox]:
        return await _run(snapshot, deadline, Sandbox(snapshot, **(sandbox or {})), overrides)

    async def _run(
        snapshot: dict[str, Any], deadline: float, sandbox: Sandbox, overrides: dict[str, Any]
    ) -> tuple[Report, Sandbox]:
        sandbox.start()
        try:
            now = parse_time(snapshot["now"])
            assert now is not None
            backends = Backends(
                runai=RunaiConfig(
                    sandbox.url,
                    "sandbox",
                    "sandbox",
                    console_url="https://runai.example.com",
                    deadline=deadline,
                    request_timeout=5.0,
                )
                if "runai" in snapshot
                else None,
                kube=KubeConfig.from_env(sandbox.kube_env()),  # one context per cluster with kubernetes_by_cluster
                osmo=OsmoConfig(sandbox.url, "sandbox") if "osmo" in snapshot else None,
                now=lambda: now,
            )
            ask = {k: v for k, v in (snapshot.get("ask") or {}).items() if v is not None}
            ask.update(overrides)
            question = Question.model_validate(ask)
            from diagnosis.question import parse_text

            question = question.merged(parse_text(question.text))
            report = await answer(question, backends)
        finally:
            sandbox.stop()
        return report, sandbox

    return run


@pytest.fixture
def slack() -> Iterator[SlackMock]:
    """A local mock of the Slack Web API on an ephemeral port, recording every call."""
    mock = SlackMock().start()
    yield mock
    mock.stop()


@pytest.fixture
def prefix() -> Iterator[str]:
    """A Redis key prefix of this test's own; its keys are deleted afterwards."""
    p = f"wdtest:{uuid.uuid4().hex[:12]}:"
    yield p
    r = redis.Redis.from_url(REDIS_URL)
    for key in r.scan_iter(match=p + "*"):
        r.delete(key)
    r.close()
