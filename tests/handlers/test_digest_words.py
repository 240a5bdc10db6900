"""Issue 21: a digest asked in words ("what failed today?", "any failures since 9am in nlp?"), in the terminal
twin and in a thread with a pending question (never swallowed as its answer)."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest

from bot.chat import chat
from bot.cli_app import backends_for
from diagnosis.digests import window_in_words
from handlers.digests import digest_scope_in_words, is_digest
from tests.paths import SHARED

DIGEST = SHARED / "cases-next" / "digest" / "digest-runai-24h.json"
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    "text",
    [
        "what failed today?",
        "any failures since 9am in nlp?",
        "which jobs crashed in the last 3 hours",
        "show me this week's failures",
        "digest 24h",
    ],
)
def test_digest_words_are_a_digest(text: str) -> None:
    assert is_digest(text)


@pytest.mark.parametrize("text", ["why did train-7 fail today?", "what killed llama-ft-3?", "is nightly stuck?"])
def test_a_question_about_one_workload_is_not_a_digest(text: str) -> None:
    assert not is_digest(text)


def test_the_window_in_words() -> None:
    assert window_in_words("what failed today?", NOW) is None  # the default: the last 24 hours
    assert window_in_words("any failures since 9am", NOW) == "180m"
    assert window_in_words("failures since 2pm", NOW) == f"{22 * 60}m"  # still before 2pm: since yesterday's
    assert window_in_words("what crashed in the last 3 hours", NOW) == "3h"
    assert window_in_words("failures over the past two days", NOW) == "2d"
    assert window_in_words("this week's failures", NOW) == "7d"
    assert digest_scope_in_words("any failures since 9am in nlp?") == (None, ["nlp"])
    assert digest_scope_in_words("what failed in the last 3 hours on dgx-prod") == ("dgx-prod", None)


async def test_the_terminal_answers_a_digest_asked_in_words() -> None:
    if not DIGEST.is_file():
        pytest.skip("../shared is not beside this checkout")
    out = io.StringIO()
    lines = iter(["what failed today?", "any failures in the last 3 hours in nlp?", "quit"])
    with backends_for(str(DIGEST)) as (backends, _ask):
        await chat(backends, read=lambda: next(lines), out=out)
    text = out.getvalue()
    assert "20 failed in the last 24h" in text
    assert "in the last 3h" in text and "projects nlp" in text
