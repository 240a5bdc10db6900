"""Follow-up replies as slot filling (issue 11 §2), at the unit level: what a reply fills, and only that."""

from __future__ import annotations

import pytest

from diagnosis.question import Question, parse_text
from handlers.doctor import apply_reply, control_word, is_new_question

PENDING = Question(text="why did bert-ft fail?", workload_name="bert-ft", candidates=["bert-ft"])
UUID = "71f69d83-ba66-4822-adf5-55ce55efd210"


def test_a_one_word_reply_fills_only_the_one_slot_asked() -> None:
    q = apply_reply(PENDING.model_copy(update={"project": "vision"}), ["cluster"], [], "dgx-prod")
    assert q is not None and q.cluster == "dgx-prod" and q.project == "vision"
    q = apply_reply(PENDING.model_copy(update={"cluster": "dgx-prod"}), ["project"], [], "vision")
    assert q is not None and q.project == "vision" and q.cluster == "dgx-prod"


@pytest.mark.parametrize(
    "reply",
    ["project vision cluster dgx-prod", "vision on dgx-prod", "cluster=dgx-prod project=vision", "vision in dgx-prod"],
)
def test_a_combined_reply_fills_what_it_names(reply: str) -> None:
    q = apply_reply(PENDING, ["cluster", "project"], [], reply)
    assert q is not None and q.project == "vision" and q.cluster == "dgx-prod"


def test_a_cluster_uuid_fills_the_cluster_not_the_workload() -> None:
    q = apply_reply(PENDING.model_copy(update={"project": "vision"}), ["cluster"], [], UUID)
    assert q is not None and q.cluster_id == UUID and q.workload_id is None and q.workload_name == "bert-ft"


def test_a_one_word_reply_to_several_slots_is_checked_against_what_exists() -> None:
    q = apply_reply(PENDING, ["cluster", "project"], [], "vision")
    assert q is not None and q.scopes == ["vision"] and q.project is None and q.cluster is None


def test_a_choice_by_number_or_label() -> None:
    choices = [{"label": "dgx-prod", "field": "cluster_id", "value": UUID}]
    for reply in ("1", "dgx-prod", UUID):
        q = apply_reply(PENDING, ["cluster"], choices, reply)
        assert q is not None and q.cluster_id == UUID


def test_help_cancel_and_new_questions_are_recognised() -> None:
    assert control_word("help") == "help" and control_word(" Cancel ") == "cancel"
    assert control_word("dgx-prod") is None
    assert is_new_question(PENDING, "why did resnet-50x fail in vision?")
    assert not is_new_question(PENDING, "dgx-prod")
    assert not is_new_question(PENDING, "why did bert-ft fail on dgx-prod?")


def test_an_english_word_before_the_name_is_not_the_workload() -> None:
    for text in ("training bert-ft-7 failed", "again bert-ft-7 broke", "nightly job bert-ft-7 died"):
        assert parse_text(text).workload_name == "bert-ft-7"
    assert parse_text("bert-ft-7 in nlp failed").workload_name == "bert-ft-7"  # a name first is the name


@pytest.mark.parametrize("reply", ["dgx-prod please", "it's dgx-prod", "try DGX-PROD", "what about dgx-prod?"])
def test_a_reply_with_filler_words_around_one_offered_choice_picks_it(reply: str) -> None:
    choices = [
        {"label": "dgx-prod", "field": "cluster_id", "value": UUID},
        {"label": "dgx-staging", "field": "cluster_id", "value": "0b5e4c1a-0000-4000-8000-000000000000"},
    ]
    q = apply_reply(PENDING.model_copy(update={"project": "vision"}), ["cluster"], choices, reply)
    assert q is not None and q.cluster_id == UUID and q.workload_name == "bert-ft"


def test_a_reply_naming_two_offered_choices_picks_neither() -> None:
    choices = [
        {"label": "dgx-prod", "field": "cluster_id", "value": UUID},
        {"label": "dgx-staging", "field": "cluster_id", "value": "0b5e4c1a-0000-4000-8000-000000000000"},
    ]
    q = apply_reply(PENDING.model_copy(update={"project": "vision"}), ["cluster"], choices, "dgx-prod or dgx-staging")
    assert q is None or q.cluster_id is None
