"""Identical questions asked while their diagnosis is running share it (handlers.doctor.Doctor._answer):
one diagnosis, every asker answered, errors and cancellation kept per asker."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

from bot.policy import Policy
from bot.state import Store
from diagnosis.answer import Backends
from diagnosis.config import OsmoConfig
from diagnosis.question import Question
from diagnosis.report import Category, Outcome, Report
from handlers import messages
from handlers.blocks import Message, Snippet
from handlers.doctor import Ask, Doctor, parse_command
from handlers.replies import report_in_thread

TRAIN_7 = "train-7 project=nlp cluster=dgx-prod"


class Surface:
    """Records what one asker was shown."""

    def __init__(self) -> None:
        self.shown: list[Message] = []
        self.told: list[Message] = []  # to the asker only
        self._ts = itertools.count(1)

    async def post(self, message: Message, thread_ts: str | None = None) -> str | None:
        self.shown.append(message)
        return f"1.{next(self._ts)}"

    async def update(self, ts: str, message: Message) -> None:
        self.shown.append(message)

    async def private(self, user: str, message: Message, thread_ts: str | None = None) -> None:
        self.told.append(message)

    async def upload(self, snippet: Snippet, thread_ts: str | None = None) -> bool:
        return True

    @property
    def final(self) -> str:
        return json.dumps(self.shown[-1].payload())


class Core:
    """A diagnosis that waits until released, counting the questions it was asked."""

    def __init__(self, fail: bool = False) -> None:
        self.asked: list[Question] = []
        self.release = asyncio.Event()
        self.fail = fail
        self.cancelled = 0

    async def __call__(self, question: Question, backends: Backends) -> Report:
        self.asked.append(question)
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        if self.fail:
            raise RuntimeError("the control plane fell over")
        return Report(
            system="runai",
            outcome=Outcome.DIAGNOSED,
            category=Category.OOM_KILLED,
            headline=f"{question.workload_name} was OOMKilled.",
        )


def doctor(core: Core) -> Doctor:
    return Doctor(Backends(), Store(None, prefix="wdtest:"), Policy(), answer_fn=core)


def mention(text: str, i: int) -> Ask:
    return Ask(team="T1", channel=f"C{i}", user=f"U{i}", text=text, source="mention", message_ts=f"{i}.0001")


def ask(text: str, i: int) -> Ask:
    """What ``/diagnose <text>`` from user ``i`` in channel ``i`` becomes (as the listener builds it)."""
    _, explicit = parse_command(text)
    return Ask(team="T1", channel=f"C{i}", user=f"U{i}", text=text, source="command", explicit=explicit)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_identical_questions_in_flight_share_one_diagnosis() -> None:
    core = Core()
    doc = doctor(core)
    same = [Surface() for _ in range(5)]
    other = Surface()
    tasks = [asyncio.create_task(doc.ask(ask(TRAIN_7, i), s)) for i, s in enumerate(same)]
    tasks.append(asyncio.create_task(doc.ask(ask("train-8 project=nlp cluster=dgx-prod", 9), other)))
    await settle()
    assert sorted(q.workload_name or "" for q in core.asked) == ["train-7", "train-8"]
    core.release.set()
    await asyncio.gather(*tasks)
    assert len(core.asked) == 2
    for s in same:
        assert "OOM_KILLED" in s.final and "train-7 was OOMKilled." in s.final
    assert "train-8 was OOMKilled." in other.final


async def test_a_failed_diagnosis_reaches_every_asker_and_is_not_shared_later() -> None:
    core = Core(fail=True)
    doc = doctor(core)
    surfaces = [Surface() for _ in range(3)]
    tasks = [asyncio.create_task(doc.ask(ask(TRAIN_7, i), s)) for i, s in enumerate(surfaces)]
    await settle()
    core.release.set()
    await asyncio.gather(*tasks)
    assert len(core.asked) == 1
    for s in surfaces:
        # each asker is told privately; the public "diagnosing…" message becomes a neutral line (issue 11)
        told = json.dumps([m.payload() for m in s.told])
        assert "Something went wrong while diagnosing" in told and "ref" in told
        assert "fell over" not in told  # details go to the log only
        assert s.final == json.dumps(messages.answered_privately().payload())
        assert "Something went wrong" not in json.dumps([m.payload() for m in s.shown])
    # the failure is neither cached nor still in flight: asking again diagnoses again
    again = Surface()
    await doc.ask(ask(TRAIN_7, 7), again)
    assert len(core.asked) == 2


async def test_a_cancelled_asker_does_not_cancel_the_others() -> None:
    core = Core()
    doc = doctor(core)
    first, second = Surface(), Surface()
    t1 = asyncio.create_task(doc.ask(ask(TRAIN_7, 1), first))
    t2 = asyncio.create_task(doc.ask(ask(TRAIN_7, 2), second))
    await settle()
    t1.cancel()
    await settle()
    core.release.set()
    await t2
    assert t1.cancelled()
    assert len(core.asked) == 1
    assert "train-7 was OOMKilled." in second.final


async def test_a_fresh_status_never_joins_a_diagnosis_in_flight() -> None:
    core = Core()
    doc = doctor(core)
    question = Question(workload_name="train-7", project="nlp", cluster="dgx-prod")
    asked = asyncio.create_task(doc.ask(ask(TRAIN_7, 1), Surface()))
    await settle()
    fresh: Any = asyncio.create_task(report_in_thread(doc.reports, question, Surface(), "1.1", fresh=True))
    await settle()
    assert len(core.asked) == 2
    core.release.set()
    await asyncio.gather(asked, fresh)


async def test_osmo_questions_that_differ_in_words_are_not_shared() -> None:
    """An OSMO answer reads the words ("running" vs "failed" filters the list): they are part of the key."""
    core = Core()
    backends = Backends(osmo=OsmoConfig("http://osmo.example", "token"))
    doc = Doctor(backends, Store(None, prefix="wdtest:"), Policy(), answer_fn=core)
    running = asyncio.create_task(doc.ask(mention("list running workflows", 1), Surface()))
    failed = asyncio.create_task(doc.ask(mention("list failed workflows", 2), Surface()))
    same = asyncio.create_task(doc.ask(mention("list  FAILED workflows", 3), Surface()))
    await settle()
    assert sorted(q.text or "" for q in core.asked) == ["list failed workflows", "list running workflows"]
    core.release.set()
    await asyncio.gather(running, failed, same)


async def test_closing_cancels_a_diagnosis_nobody_waits_for_any_more() -> None:
    core = Core()
    doc = doctor(core)
    asker = asyncio.create_task(doc.ask(ask(TRAIN_7, 1), Surface()))
    await settle()
    asker.cancel()  # shutdown: the tracker cancelled the asker
    await settle()
    await doc.aclose()
    assert core.cancelled == 1
