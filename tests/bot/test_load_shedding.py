"""Load shedding (issue 15 §4), end to end: signed requests -> the real AsyncApp (HTTP adapter) -> the real core ->
the sandbox; the mock Web API. With ``WD_MAX_IN_FLIGHT=2`` and two diagnoses held in the middle of their work,
a third command is answered "busy" in its ack and a mention privately, without starting their work; once the two
are answered their slots are free again. (The burst figures — ack p99, RSS before, at peak and after — are a
benchmark: ``bench/slack.py --scenario burst``.)"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from bot.app import build_bot, http_app
from bot.cli import backends_for
from bot.settings import Settings
from diagnosis import metrics
from diagnosis.answer import answer
from handlers.shedding import BUSY
from tests.handlers.test_slack_e2e import ALICE, CASES, CHAN, POLICY, headers_of
from tests.slack_mock import REDIS_URL, SECRET, TOKEN, Harness, SlackMock, mention

QUESTION = "train-gpt2 project=nlp"


class Held:
    """An answer function that holds every diagnosis until released (the work in flight, made visible)."""

    def __init__(self) -> None:
        self.entered = 0
        self.release = asyncio.Event()

    async def __call__(self, question: Any, backends: Any) -> Any:
        self.entered += 1
        await self.release.wait()
        return await answer(question, backends)


@contextlib.asynccontextmanager
async def bot_with(slack: SlackMock, prefix: str, tmp_path: Path, held: Held, limit: int) -> AsyncIterator[Harness]:
    path = tmp_path / "case.json"
    path.write_text((CASES / "text-only-question.json").read_text())
    settings = Settings(
        bot_token=TOKEN,
        signing_secret=SECRET,
        redis_url=REDIS_URL,
        api_url=slack.api_url,
        rate_limit=100,
        key_prefix=prefix,
        max_in_flight=limit,
    )
    with backends_for(str(path)) as (backends, _):
        bot = build_bot(settings, backends, policy=POLICY, answer_fn=held)
        await bot.start()
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=http_app(bot)), base_url="http://bot") as http:
            harness = Harness(slack, bot, http)
            try:
                yield harness
            finally:
                held.release.set()
                await harness.settle()
                await bot.close(grace=30)


async def _until(predicate: Any, what: str) -> None:
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


def _shed(kind: str) -> float:
    return metrics.REGISTRY.get_sample_value("workload_doctor_shed_requests_total", {"kind": kind}) or 0.0


async def test_beyond_the_limit_the_asker_is_told_busy(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    held = Held()
    shed_commands, shed_events = _shed("command"), _shed("event_callback")
    async with bot_with(slack, prefix, tmp_path, held, limit=2) as h:
        first = await h.command(QUESTION, user=ALICE, channel=CHAN)
        second = await h.command(QUESTION, user=ALICE, channel=CHAN)
        await _until(lambda: held.entered >= 1 and len(slack.of("chat.postMessage")) == 2, "two diagnoses in flight")
        busy = await h.command(QUESTION, user=ALICE, channel=CHAN)
        await h.event(mention("why did train-gpt2 fail in project nlp?", "300.000100", channel=CHAN))
        await slack.wait_for(lambda s: bool(s.of("chat.postEphemeral")), what="the mention told busy")

        assert first.status_code == second.status_code == busy.status_code == 200
        assert first.content == second.content == b""
        assert busy.json() == {"response_type": "ephemeral", "text": BUSY}, "told in the ack, nothing started"
        (told,) = [c.body for c in slack.of("chat.postEphemeral")]
        assert (told["text"], told["user"], told["thread_ts"]) == (BUSY, ALICE, "300.000100")
        assert len(slack.of("chat.postMessage")) == 2, "no 'Diagnosing…' for the requests turned away"

        held.release.set()
        await h.settle()
        answers = [u.body for u in slack.of("chat.update")]
        assert [headers_of(a) for a in answers] == [["💥 OOM killed"]] * 2

        # the slots are free again: the next command is answered
        again = await h.command(QUESTION, user=ALICE, channel=CHAN)
        await h.settle()
        assert again.content == b""
        assert len(slack.of("chat.update")) == 3
    assert _shed("command") == shed_commands + 1
    assert _shed("event_callback") == shed_events + 1
    assert metrics.REGISTRY.get_sample_value("workload_doctor_in_flight") == 0
    assert BUSY not in json.dumps([u.body for u in slack.of("chat.update")])


async def test_help_is_answered_in_the_ack_even_with_every_slot_taken(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    """Help takes no slot (it is answered in the ack, issue 26 §3: 1,000 helps a second filled the bound)."""
    held = Held()
    async with bot_with(slack, prefix, tmp_path, held, limit=1) as h:
        await h.command(QUESTION, user=ALICE, channel=CHAN)
        await _until(lambda: held.entered >= 1, "the one slot taken")
        helped = [await h.command("help", user=ALICE, channel=CHAN) for _ in range(3)]
        assert all(r.status_code == 200 and r.json()["text"] != BUSY for r in helped)
        assert all("/diagnose" in r.json()["text"] for r in helped), "the help itself"
        busy = await h.command(QUESTION, user=ALICE, channel=CHAN)
        assert busy.json() == {"response_type": "ephemeral", "text": BUSY}, "a question is still bounded"
