"""The one question parser (shared by the CLI and the bot)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from diagnosis.question import Question, QuestionError, parse_lookback, parse_text


@pytest.mark.parametrize(
    ("text", "name", "project", "intent"),
    [
        ("why did train-7 fail?", "train-7", None, "terminal"),
        ("why did my training job llama-ft crash?", "llama-ft", None, "terminal"),
        ("what killed train-gpt2 in project nlp?", "train-gpt2", "nlp", "terminal"),
        ("why is seg-train CrashLoopBackOff?", "seg-train", None, "current"),
        ("why is my pending workload vit-train stuck in ImagePullBackOff?", "vit-train", None, "current"),
        ("jupyter-eda stopped, what happened?", "jupyter-eda", None, "terminal"),
        ("<@U012AB3CD> why did bert-ft-7 fail? project=nlp", "bert-ft-7", "nlp", "terminal"),
        ("why is my pod CrashLoopBackOff? it's seg-train in project cv", "seg-train", "cv", "current"),
    ],
)
def test_names_project_and_intent(text: str, name: str, project: str | None, intent: str) -> None:
    q = parse_text(text)
    assert q.workload_name == name
    assert q.project == project
    assert q.effective_intent() == intent


def test_pasted_workload_id_and_cluster() -> None:
    q = parse_text("check workload B7C7A147-941E-39CD-52B9-A6DA66BA17BF on cluster dgx-prod")
    assert q.workload_id == "b7c7a147-941e-39cd-52b9-a6da66ba17bf"
    assert q.cluster == "dgx-prod"
    assert q.workload_name is None


def test_no_cluster_or_project_is_guessed() -> None:
    q = parse_text("asr-finetune in speech has been stuck for 45 minutes")
    assert q.project is None and q.cluster is None


def test_explicit_values_win_over_text() -> None:
    q = Question(project="vision").merged(parse_text("why did a-1 fail in project nlp"))
    assert q.project == "vision" and q.workload_name == "a-1"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("7d", timedelta(days=7)),
        ("36h", timedelta(hours=36)),
        (None, timedelta(days=7)),
        ("90m", timedelta(minutes=90)),
    ],
)
def test_lookback(raw: str | None, expected: timedelta) -> None:
    assert parse_lookback(raw) == expected


@pytest.mark.parametrize("raw", ["7 days", "-1d", "0d", "1000d", "d7"])
def test_bad_lookback(raw: str) -> None:
    with pytest.raises(QuestionError):
        parse_lookback(raw)


@pytest.mark.parametrize(
    ("text", "name", "project", "intent"),
    [
        ("vit-b won't start (project nlp)", "vit-b", "nlp", "current"),
        ("why won't gpt-small start? project nlp", "gpt-small", "nlp", "current"),
        ("why did `gpt-small` fail in project nlp?", "gpt-small", "nlp", "terminal"),
        ("why did gpt-small fail in the nlp project?", "gpt-small", "nlp", "terminal"),
        ("gpt-small (project nlp) failed", "gpt-small", "nlp", "terminal"),
        ("why did the workload gpt-small in nlp fail", "gpt-small", None, "terminal"),
    ],
)
def test_more_phrasings(text: str, name: str, project: str | None, intent: str) -> None:
    q = parse_text(text)
    assert (q.workload_name, q.project, q.effective_intent()) == (name, project, intent)


def test_cluster_named_without_the_word_cluster_is_only_a_hint() -> None:
    q = parse_text("why did stg-run fail on dgx-staging in project nlp?")
    assert q.cluster is None and q.cluster_hint == "dgx-staging"
