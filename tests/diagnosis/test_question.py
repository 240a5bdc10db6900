"""The one question parser (shared by the CLI and the bot)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from diagnosis.question import (
    Question,
    QuestionError,
    clean_text,
    infer_intent,
    named_symptom,
    parse_lookback,
    parse_text,
)


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


# --- the workload among people's words (FORMAT.md "Questions": names, scope, English words, intent) ---


@pytest.mark.parametrize(
    "text",
    [
        "why did main fail in core on atlas?",
        "<@U0ABCDEF> project core on atlas, please check main!",
        "the job main in project core on cluster atlas \u2014 what killed it?",
        "is test stuck in sandbox on atlas",
    ],
)
def test_a_very_common_word_is_still_looked_up_as_a_workload(text: str) -> None:
    """A workload may be called ``main`` or ``test``: a word that frequent is a candidate (checked against the
    API), never dropped before any lookup."""
    q = parse_text(text)
    assert q.workload_name is None
    assert q.words[0] in {"main", "test"}


def test_the_most_common_words_are_never_candidates() -> None:
    q = parse_text("why did it fail in project nlp? the job was running")
    assert not {"it", "the", "was", "job", "running"} & set(q.words)


@pytest.mark.parametrize(
    ("text", "word", "name"),
    [
        ("the re-run of baseline in core on atlas failed?", "baseline", "re-run"),
        ("after the cuda-12.4 upgrade sweep in test on atlas is stuck", "sweep", "cuda-12.4"),
    ],
)
def test_a_word_where_the_workload_stands_is_looked_up_beside_the_names(text: str, word: str, name: str) -> None:
    """A name-shaped token that may not exist never hides the English-word workload that does: both are
    candidates, and the one that exists decides."""
    q = parse_text(text)
    assert q.workload_name is None
    assert q.candidates == [name, word]


def test_a_most_common_word_before_a_scope_is_no_candidate_beside_a_name() -> None:
    assert parse_text("asr-v2.2 went down in core on atlas").candidates == ["asr-v2.2"]


def test_many_versions_before_the_workload_keep_the_workload_a_candidate() -> None:
    q = parse_text(
        "after bumping torch-2.4, cuda-12.4, nccl-2.21, te-1.9 and flash-attn-2.6, t5.xxl-v1.1 broke in core on atlas"
    )
    assert "t5.xxl-v1.1" in q.candidates


def test_many_words_before_the_workload_keep_the_workload_a_candidate() -> None:
    q = parse_text("metrics look noisy, loss spikes oddly and now sweep in test on atlas is stuck")
    assert q.words[0] == "sweep"
    assert not q.candidates


@pytest.mark.parametrize(
    ("text", "name", "scope"),
    [
        ("_asr-v2.1_ in core on atlas-dr won't start", "asr-v2.1", "core"),
        ("t5.xxl-v1.1 failed in _core_ on atlas", "t5.xxl-v1.1", "core"),
        ("*asr-v2.1* died in core on atlas", "asr-v2.1", "core"),
    ],
)
def test_slack_italics_and_bold_are_markup(text: str, name: str, scope: str) -> None:
    q = parse_text(text)
    assert q.workload_name == name
    assert scope in q.scopes


def test_an_underscore_inside_a_token_stays() -> None:
    assert "HF_TOKEN" in clean_text("why is HF_TOKEN unset for _asr-v2.1_")
    assert "asr-v2.1 " in clean_text("why is HF_TOKEN unset for _asr-v2.1_")


@pytest.mark.parametrize(
    "text",
    [
        "asr-v2.1: why did it die in core on atlas",
        "hmm\u2026asr-v2.1 died in core on atlas",
        "hmm...asr-v2.1 died in core on atlas",
        "name=asr-v2.1 project=core cluster=atlas",
    ],
)
def test_punctuation_stuck_to_the_name_is_no_part_of_it(text: str) -> None:
    assert parse_text(text).workload_name == "asr-v2.1"


def test_a_colon_inside_a_token_still_joins_it() -> None:
    q = parse_text("why is x-1 in Init:Error on atlas")
    assert "init" not in q.words and "error" not in q.candidates


@pytest.mark.parametrize(
    ("text", "loose"),
    [
        ("<@U0ABCDEF> project core on atlas, please check t5.xxl-v1.1!", ["core"]),
        ("project test on atlas: is sweep stuck?", ["test"]),
        ("cluster atlas, project core: why did t5.xxl-v1.1 fail?", ["atlas", "core"]),
    ],
)
def test_an_english_word_after_project_or_cluster_before_the_workload_is_checked(text: str, loose: list[str]) -> None:
    """ "project X" / "cluster X" before the workload: X is an English word, so it names a project or a cluster
    only when one of that name exists; it is among the tokens checked against the API lists."""
    q = parse_text(text)
    assert q.loose[: len(loose)] == loose
    assert q.project is None


@pytest.mark.parametrize(
    "text",
    [
        "asr-v2.1 won\u2019t start in core on atlas",
        "asr-v2.1 hasn\u2019t started yet, core on atlas",
        "why is asr-v2.1 failing to start? core on atlas",
        "asr-v2.1 doesn't launch in core on atlas",
        "asr-v2.1 can't pull its image, core on atlas",
        "asr-v2.1 can\u2019t pull the new image",
    ],
)
def test_words_of_not_starting_are_a_current_symptom(text: str) -> None:
    assert parse_text(text).effective_intent() == "current"


def test_pulling_its_image_names_the_image_pull_symptom() -> None:
    assert named_symptom("asr-v2.1 can\u2019t pull its image, core on atlas") == "image_pull"
    assert infer_intent("why did asr-v2.1 fail yesterday?") == "terminal"
