"""Issue 27: a digest message people read: counts first, causes in the card's words (never codes), the three largest
causes with what more than one of their failures share, the preempted ones apart, nothing failed in one line, and
the main message within the card's budget whatever the digest holds (every row is in the thread)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from diagnosis.digests import DigestItem, build_digest
from diagnosis.report import Category, Gap
from handlers.card import CARD_MAX_BLOCKS, CARD_MAX_CHARS, text_chars
from handlers.digest_blocks import digest_thread, render_digest_blocks, thread_payload

T0 = datetime(2026, 11, 28, 12, tzinfo=UTC)
CODE = re.compile(r"\b[A-Z]+(?:_[A-Z]+)+\b")


def row(name: str, category: str, minutes: int, **kw: object) -> DigestItem:
    data: dict[str, object] = {
        "system": "runai",
        "name": name,
        "id": f"id-{name}",
        "project": "nlp",
        "at": T0 - timedelta(minutes=minutes),
        "category": category,
        "verdict": f"{name} failed",
        **kw,
    }
    return DigestItem.model_validate(data)


def _text(blocks: list[dict[str, object]]) -> str:
    return json.dumps(blocks, ensure_ascii=False)


def test_counts_first_causes_in_words_and_only_what_more_than_one_failure_shares() -> None:
    items = [
        row("a-1", "OOM_KILLED", 1, node="dgx-04", image="nvcr.io/nvidia/pytorch:24.08-py3"),
        row("a-2", "OOM_KILLED", 2, node="dgx-04", image="nvcr.io/nvidia/pytorch:24.05-py3"),
        row("a-3", "OOM_KILLED", 3, node="dgx-09", project="speech"),
        row("b-1", "CRASH_APP_ERROR", 4, node="dgx-01"),
        row("b-2", "CRASH_APP_ERROR", 5, node="dgx-02"),
        row("c-1", "NODE_FAILURE", 6),
        row("d-1", "IMAGE_PULL_FAILED", 7),
    ]
    preempted = [row("p-1", "PREEMPTED", 8), row("p-2", "PREEMPTED", 9)]
    digest = build_digest(items, start=T0 - timedelta(hours=24), end=T0, since="24h", preempted=preempted)
    blocks = render_digest_blocks(digest)
    text = _text(blocks)
    assert blocks[0]["type"] == "header" and "7 failed in the last 24h" in text
    assert "*7 failed*: 7 new, 0 seen before" in text and "2 preempted, not counted" in text
    assert "*3 OOM killed*" in text and "2 on node dgx-04" in text  # shared by two
    assert "dgx-09" not in text and "pytorch" not in text  # one failure each: nothing shared
    assert "*2 Crashed (application error)*" in text and "dgx-01" not in text
    assert "*1 Image pull failed*" in text and "*Also:* 1 Node failure" in text  # the three largest, then one line
    assert not CODE.search(text.replace("wd_digest_", "")), CODE.search(text)
    assert digest.failed == 7 and len(digest.preempted) == 2  # preempted are never counted


def test_the_main_message_stays_within_the_card_budget_and_every_row_is_in_the_thread() -> None:
    long = "x" * 60
    items = [
        row(
            f"{long}-{c.value.lower()}-{i}",
            c.value,
            i,
            node=f"node-{i % 3}",
            image=f"reg/{long}:{i % 2}",
            recurring=True,
        )
        for c in Category
        for i in range(12)
    ]
    gaps = [Gap(what=f"project {long}-{i}", why="HTTP 503 after retries " + long) for i in range(30)]
    digest = build_digest(items, start=T0 - timedelta(days=7), end=T0, since="7d", gaps=gaps)
    blocks = render_digest_blocks(digest)
    assert text_chars(blocks) <= CARD_MAX_CHARS and len(blocks) <= CARD_MAX_BLOCKS
    messages, table = digest_thread(digest, limit=10_000)
    assert sum(m.count("\n• ") + m.startswith("• ") for m in messages) == digest.failed
    assert len(table.splitlines()) == digest.failed + 1
    assert thread_payload(digest)[-1].get("snippet")  # past the thread's cut, the whole table is a snippet


def test_nothing_failed_is_one_line() -> None:
    digest = build_digest([], start=T0 - timedelta(hours=24), end=T0, since="24h")
    blocks = render_digest_blocks(digest)
    assert len(blocks) == 1 and blocks[0]["type"] == "section"
    assert blocks[0]["text"]["text"].startswith("✅ Nothing failed in the last 24h")
    assert "\n" not in blocks[0]["text"]["text"] and thread_payload(digest) == []
