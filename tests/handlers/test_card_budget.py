"""Issue 13: the main message of every open case's answer is a compact card (at most 12 blocks and 1,500
characters of text: headers, sections, fields and context; button labels and URLs not counted), and
nothing that is not on the card is lost: every evidence value, gap, note and excerpt is in the ``thread``
of ``--format json`` (what the Evidence and Logs buttons post, or what is posted at once)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handlers.blocks import code, violations
from handlers.card import CARD_MAX_BLOCKS, CARD_MAX_CHARS, text_chars
from tests.case_runs import CASE_FILES, case_runs

OPEN = [p for p in CASE_FILES if p.parent.name != "digest"]


@pytest.fixture(scope="module")
def answers() -> dict[Path, dict[str, Any]]:
    """The JSON answer of every open case (the same CLI runs as tests/test_cases.py, made once per session)."""
    runs = case_runs()
    return {p: json.loads(runs[p].stdout) for p in OPEN}


def _thread_text(thread: list[dict[str, Any]]) -> str:
    parts: list[str] = []
    for m in thread:
        if "snippet" in m:
            parts.append(code(m["snippet"]["content"]))
        for b in m.get("blocks") or []:
            if b.get("type") == "section":
                parts.append(b["text"]["text"])
    return "\n".join(parts)


@pytest.mark.skipif(not OPEN, reason="../shared/cases is not beside this checkout")
@pytest.mark.timeout(1200)  # may be the first test to run every case (the session fixture)
def test_every_open_case_fits_the_card_budget_and_loses_nothing(answers: dict[Path, dict[str, Any]]) -> None:
    worst_blocks = worst_chars = 0
    for case_file, out in answers.items():
        blocks = out["blocks"]
        chars = text_chars(blocks)
        worst_blocks, worst_chars = max(worst_blocks, len(blocks)), max(worst_chars, chars)
        name = case_file.stem
        assert len(blocks) <= CARD_MAX_BLOCKS, (name, len(blocks))
        assert chars <= CARD_MAX_CHARS, (name, chars)
        assert violations({"text": "x", "blocks": blocks}) == [], name
        assert blocks[0]["type"] == "header" and "_" not in blocks[0]["text"]["text"].split(":")[0], name
        report = out["report"]
        if out["category"]:
            assert out["category"] in json.dumps(blocks), f"{name}: the category stays in the card's text"
        thread = _thread_text(out["thread"])
        for item in report["evidence"]:
            assert code(item["value"])[:200] in thread, (name, item["label"])
        for gap in report["gaps"]:
            assert code(gap["why"])[:200] in thread, (name, gap["what"])
        for note in report["notes"]:
            assert code(note)[:200] in thread, name
        for ex in report["excerpts"]:
            last = ex["text"].rstrip("\n").splitlines()[-1] if ex["text"].strip() else ""
            assert code(last)[:200] in thread, (name, ex["title"])
    print(f"card budget over {len(answers)} open cases: max {worst_blocks} blocks, max {worst_chars} characters")


@pytest.mark.skipif(not OPEN, reason="../shared/cases is not beside this checkout")
@pytest.mark.timeout(1200)
def test_the_feedback_buttons_cost_the_card_nothing(answers: dict[Path, dict[str, Any]]) -> None:
    """Issue 28: a card whose answer can be judged carries Right / Wrong in its one actions block: no block and no
    character of the budget more, on every open case."""
    from diagnosis.report import Report
    from handlers.blocks import render_report
    from handlers.card import RIGHT_ACTION, WRONG_ACTION, target
    from handlers.feedback_world import judgeable

    judged = 0
    for case_file, out in answers.items():
        report = Report.model_validate(out["report"])
        if not judgeable(report):
            assert target(report) is None or report.outcome.value in ("error", "needs_input"), case_file.stem
            continue
        judged += 1
        blocks = render_report(report.with_answer_ref("0123456789abcdef")).main.blocks
        assert len(blocks) <= CARD_MAX_BLOCKS and text_chars(blocks) <= CARD_MAX_CHARS, case_file.stem
        assert violations({"text": "x", "blocks": blocks}) == [], case_file.stem
        ids = [e.get("action_id") for b in blocks if b["type"] == "actions" for e in b["elements"]]
        assert RIGHT_ACTION in ids and WRONG_ACTION in ids, case_file.stem
        assert (len(blocks), text_chars(blocks)) == (len(out["blocks"]), text_chars(out["blocks"])), case_file.stem
    assert judged > len(answers) // 2
