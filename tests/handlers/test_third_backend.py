"""A third backend (``tests/fake_backend.py``: Kubernetes Jobs), registered in the test only, goes through the outer
layers unchanged: its card and buttons (handlers.blocks / card / card_buttons), its digest row (handlers.digest_blocks,
diagnosis.digest_text) and its cached answer (handlers.report_cache through a real Store). No product module names it:
docs/architecture.md "Adding a backend" is literally true."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.state import Store
from diagnosis.answer import Backends
from diagnosis.backends import backend_of
from diagnosis.digest_text import digest_json, render_digest_text
from diagnosis.digests import build_digest
from diagnosis.question import Question
from diagnosis.render import render_text
from diagnosis.report import Report
from handlers.blocks import blocks_to_text, render_report
from handlers.card import CARD_ACTIONS
from handlers.card_buttons import question_of
from handlers.digest_blocks import NEWEST_ACTION, digest_rows, render_digest_blocks
from handlers.report_cache import Reports, question_key
from tests.fake_backend import AT, NAME, JobsBackend, job_item, job_report, registered


@pytest.fixture
def k8sjobs() -> Iterator[JobsBackend]:
    with registered() as backend:
        yield backend


def _buttons(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for b in blocks if b.get("type") == "actions" for e in b.get("elements") or []]


def test_its_card_carries_its_own_target_and_its_buttons_reask_it(k8sjobs: JobsBackend) -> None:
    rendered = render_report(job_report("job-etl-7"))
    text = blocks_to_text(rendered.main.blocks)
    assert "job-etl-7" in text and "OOM" in text
    card = [b for b in _buttons(rendered.main.blocks) if b.get("action_id") in CARD_ACTIONS]
    assert card, "a report the backend can re-read has the card's buttons"
    assert {json.loads(b["value"])["s"] for b in card} == {NAME}
    assert json.loads(card[0]["value"]) == {"s": NAME, "ns": "etl", "job": "job-etl-7"}
    asked = question_of(card[0]["value"])
    assert asked is not None and (asked.workload_name, asked.project) == ("job-etl-7", "etl")
    # the terminal's text reads its identity too (the generic labels)
    assert "job-etl-7" in render_text(job_report("job-etl-7"))


def test_its_digest_row_is_said_in_its_words(k8sjobs: JobsBackend) -> None:
    start = AT - timedelta(hours=24)
    digest = build_digest([job_item("job-etl-7")], start=start, end=AT, since="24h", systems=[NAME])
    text = render_digest_text(digest)
    assert "Scope: every namespace" in text
    assert "  - job-etl-7 (namespace etl, 2026-11-28 11:00 UTC): The Job job-etl-7 was OOM-killed." in text
    assert any(row.startswith("• *job-etl-7* · etl · 28 Nov 11:00 UTC — ") for row in digest_rows(digest))
    blocks = render_digest_blocks(digest)
    newest = next(b for b in _buttons(blocks) if b["action_id"] == NEWEST_ACTION)
    target = json.loads(newest["value"])
    assert target["s"] == NAME
    assert backend_of(target["s"]).row_question(target["id"], target.get("c")).workload_name == "uid-job-etl-7"
    data: Any = digest_json(digest, blocks)["digest"]
    assert data["groups"][0]["items"][0]["system"] == NAME


def test_its_answer_is_cached_by_its_object_and_read_back(k8sjobs: JobsBackend) -> None:
    calls: list[Question] = []

    async def answer_fn(question: Question, backends: Backends) -> Report:
        calls.append(question)
        return job_report(question.workload_name or "")

    async def run() -> tuple[Report, Report, Any]:
        store = Store(None, prefix="wdtest-third:")
        reports = Reports(store, Backends(now=lambda: datetime(2026, 11, 28, 12, 0, tzinfo=UTC)), answer_fn)
        question = Question(text="why did job-etl-7 fail?", workload_name="job-etl-7")
        first = await reports.answer(question)
        again = await reports.answer(question)
        kept = await store.get_json("report", "jobs", "etl", "job-etl-7", "unknown")
        await reports.aclose()
        return first, again, kept

    first, again, kept = asyncio.run(run())
    assert len(calls) == 1, "the second ask is answered from the cache"
    assert again == first and again.system == NAME
    assert isinstance(kept, dict) and kept["identity"]["detail"] == {"system": NAME, "namespace": "etl"}
    # the question's words are not part of its key (keyed_by_words is False), unlike OSMO's
    q = Question(text="why did job-etl-7 fail?", workload_name="job-etl-7")
    assert question_key(q, NAME) == question_key(q.model_copy(update={"text": "job-etl-7 failed?"}), NAME)
    assert question_key(q, "osmo") != question_key(q.model_copy(update={"text": "job-etl-7 failed?"}), "osmo")
