"""Issue 28: the feedback store's bounds (no Redis: the process-local store) and a vote's case and stats."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.feedback_cases import case_of, expect_of, stats
from bot.feedback_store import NOT_A_FAILURE, WRONG_WORKLOAD, FeedbackStore, Voted, clean_note
from bot.state import Store

WORLD: dict[str, Any] = {
    "format": "snapshot/1",
    "id": "captured-train-7",
    "description": "Captured.",
    "now": "2026-01-01T00:00:00Z",
    "runai": {"clusters": [], "projects": [], "workloads": []},
    "ask": {"text": "why did train-7 fail?"},
    "expect": {"outcome": "diagnosed", "category": "OOM_KILLED", "mentions": ["137"], "never_mentions": ["s3cr3t"]},
}


def _record(**kw: Any) -> dict[str, Any]:
    return {
        "ref": "0123456789abcdef",
        "system": "runai",
        "outcome": "diagnosed",
        "category": "OOM_KILLED",
        "confidence": "direct",
        "name": "train-7",
        "phase": "Failed",
        "at": "2026-01-01T00:00:00+00:00",
        **kw,
    }


def _voted(verdict: str, choice: str | None = None, note: str | None = None, **kw: Any) -> Voted:
    vote = {"verdict": verdict, "choice": choice, "note": note, "at": "2026-01-02T00:00:00Z"}
    return Voted(record=_record(**kw), votes={"U1": vote}, world=WORLD)


def test_expect_is_the_persons_verdict() -> None:
    assert expect_of(_voted("right"), WORLD) == WORLD["expect"]  # passes: the answer as it was
    wrong = expect_of(_voted("wrong", "CRASH_APP_ERROR"), WORLD)
    assert wrong == {"outcome": "diagnosed", "category": "CRASH_APP_ERROR", "never_mentions": ["s3cr3t"]}
    osmo = expect_of(_voted("wrong", "TIMEOUT", system="osmo"), WORLD)
    assert osmo["outcome"] == "failed" and osmo["category"] == "TIMEOUT"
    assert expect_of(_voted("wrong", NOT_A_FAILURE, phase="Completed"), WORLD)["outcome"] == "succeeded"
    assert expect_of(_voted("wrong", NOT_A_FAILURE, phase="Running"), WORLD)["outcome"] == "ask_past_run"
    assert expect_of(_voted("wrong", WRONG_WORKLOAD), WORLD)["outcome"] == "needs_input"


def test_the_case_carries_the_note_and_a_wrong_vote_wins_over_a_later_right_one() -> None:
    voted = _voted("wrong", "NODE_FAILURE", "node gpu-12 lost its GPU")
    voted.votes["U2"] = {"verdict": "right", "choice": None, "note": None, "at": "2026-01-03T00:00:00Z"}
    case = case_of(voted)
    assert case is not None and case["expect"]["category"] == "NODE_FAILURE"
    assert case["feedback"]["note"] == "node gpu-12 lost its GPU" and "node gpu-12" in case["description"]
    assert case["id"] == "feedback-train-7-0123456789abcdef" and WORLD["expect"]["category"] == "OOM_KILLED"
    assert case_of(Voted(record=_record(), votes=voted.votes, world=None)) is None


def test_stats_agreement_by_system_category_and_confidence() -> None:
    data = stats({"runai": 4}, [_voted("right"), _voted("wrong", "CRASH_APP_ERROR", "x")])
    assert data["answers_total"] == 4 and data["votes"] == 2 and data["voted_answers"] == 2
    assert data["agreement"]["category"]["OOM_KILLED"] == {"right": 1, "wrong": 1, "agreement": 0.5}
    assert data["agreement"]["confidence"]["direct"]["agreement"] == 0.5
    assert [w["really"] for w in data["wrong"]] == ["CRASH_APP_ERROR"]


def test_notes_are_redacted_and_one_line() -> None:
    note = clean_note("it was\nthe token AKIAIOSFODNN7EXAMPLE  again")
    assert note is not None and "AKIAIOSFODNN7EXAMPLE" not in note and "\n" not in note


def test_one_vote_per_person_changeable_and_worlds_bounded() -> None:
    async def run() -> None:
        desk = FeedbackStore(Store(None), max_world_bytes=200)
        record = _record()
        assert await desk.keep_answer(record, WORLD)  # over 200 bytes: kept without its world
        kept = await desk.answer(record["ref"], world=True)
        assert kept is not None and kept["world"] is None and "WD_FEEDBACK_MAX_WORLD_BYTES" in kept["world_omitted"]
        assert await desk.vote(record, "U1", "right") is None
        before = await desk.vote(record, "U1", "wrong", "UNKNOWN", "a note")
        assert before is not None and before["verdict"] == "right"
        await desk.vote(record, "U1", "wrong", "NODE_FAILURE")  # no note given: the earlier one is kept
        assert (await desk.votes(record["ref"]))["U1"] == {
            "verdict": "wrong",
            "choice": "NODE_FAILURE",
            "note": "a note",
            "at": (await desk.votes(record["ref"]))["U1"]["at"],
        }
        assert len(await desk.voted(0)) == 1 and (await desk.answered(0)) == {"runai": 1}
        assert await desk.purge() > 0 and await desk.answer(record["ref"]) is None

    asyncio.run(run())
