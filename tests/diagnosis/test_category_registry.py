"""One category, one entry (issue 10 §1): every category a backend can give has all of its texts in one
registry entry, so a missing text fails here instead of as a KeyError at report time.

Run:ai part below; the OSMO part goes in its own section.
"""

from __future__ import annotations

from dataclasses import fields

import pytest

from diagnosis.osmo import classify as osmo_classify
from diagnosis.osmo import pending as osmo_pending
from diagnosis.osmo.categories import CATEGORIES as OSMO_CATEGORIES
from diagnosis.osmo.categories import PENDING as OSMO_PENDING
from diagnosis.osmo.categories import FailedFacts, OsmoCategory, PendingFacts
from diagnosis.osmo.classify import TaskSignals
from diagnosis.report import Category, Outcome
from diagnosis.runai import classify as cls
from diagnosis.runai.categories import CATEGORIES, RunaiCategory, VerdictFacts
from diagnosis.runai.signals import Kind, Signal

# -- Run:ai ---------------------------------------------------------------------------------------------------

#: The Run:ai taxonomy (spec Step 4 and FORMAT.md): every one of these must have an entry.
RUNAI_TAXONOMY = (
    Category.OOM_KILLED,
    Category.IMAGE_PULL_FAILED,
    Category.INIT_FAILED,
    Category.DATASOURCE_MOUNT_FAILED,
    Category.CRASH_APP_ERROR,
    Category.NODE_FAILURE,
    Category.SCHEDULING_POLICY_TERMINATED,
    Category.UNKNOWN,
)
_TEXTS = [f.name for f in fields(RunaiCategory) if f.type in ("str", str)]


def test_the_runai_texts_checked_are_every_text_field() -> None:
    assert set(_TEXTS) == {"headline", "next_action", "plain", "emoji", "title"}


@pytest.mark.parametrize("category", RUNAI_TAXONOMY)
def test_every_runai_category_has_every_text(category: Category) -> None:
    entry = CATEGORIES.get(category)
    assert entry is not None, f"{category} has no entry in diagnosis.runai.categories"
    assert entry.category == category
    for name in _TEXTS:
        text = getattr(entry, name)
        assert isinstance(text, str) and text.strip(), f"{category}: {name} is empty"
        assert text == text.strip() and "  " not in text, f"{category}: {name} has stray whitespace"
    assert entry.next_action.endswith("."), f"{category}: the next action is a sentence"
    assert not entry.headline.endswith("."), f"{category}: the headline is a clause after the name"
    assert callable(entry.detail) and isinstance(entry.detail(VerdictFacts(primary=())), str)
    assert entry.verdict(VerdictFacts(primary=(), name="w")).startswith("w ")
    assert entry.action(VerdictFacts(primary=())).endswith(".")
    assert isinstance(entry.tier2, bool)


def test_every_analyzer_gives_the_category_of_its_entry() -> None:
    """Each analyzer of ``PRECEDENCE`` belongs to exactly one entry, and the category it returns is that entry's."""
    owners = {a: e.category for e in CATEGORIES.values() for a in e.analyzers}
    assert set(cls.PRECEDENCE) == set(owners), "an analyzer without an entry, or an entry naming no analyzer"
    assert sum(len(e.analyzers) for e in CATEGORIES.values()) == len(owners)
    # one signal of every direct kind: each analyzer that answers answers with its own entry's category
    signals = [Signal(k, text=f"{k.value} Secret x not found", source="test", pod="p", exit_code=1) for k in Kind]
    for analyzer, category in owners.items():
        finding = analyzer(signals)
        if finding is not None:
            assert finding.category == category, analyzer.__name__


def test_registry_has_no_category_outside_the_runai_taxonomy() -> None:
    assert set(CATEGORIES) == set(RUNAI_TAXONOMY)


def test_tier2_need_follows_spec_step_4() -> None:
    """Container-level evidence explains OOM, crash and init failures, ``describe node`` a node failure, and
    UNKNOWN always asks for it; image pull, mount and policy findings are explained by their Tier 1 messages."""
    need = {c for c, e in CATEGORIES.items() if e.tier2}
    assert need == {
        Category.OOM_KILLED,
        Category.CRASH_APP_ERROR,
        Category.INIT_FAILED,
        Category.NODE_FAILURE,
        Category.UNKNOWN,
    }


# -- OSMO -----------------------------------------------------------------------------------------------------

#: FORMAT.md "Categories (OSMO `failed`)": every one of these must have an entry.
OSMO_TAXONOMY = (
    Category.OOM_KILLED,
    Category.IMAGE_PULL_FAILED,
    Category.INIT_FAILED,
    Category.DATA_FAILED,
    Category.START_FAILED,
    Category.CRASH_APP_ERROR,
    Category.NODE_FAILURE,
    Category.PREEMPTED,
    Category.TIMEOUT,
    Category.CANCELED,
    Category.UPSTREAM_FAILED,
    Category.SERVER_ERROR,
    Category.UNKNOWN,
)
#: FORMAT.md "Outcomes (OSMO)" a PENDING or queued workflow can get (``status``: no numeric cause).
OSMO_PENDING_OUTCOMES = (
    Outcome.POOL_UNAVAILABLE,
    Outcome.PENDING_QUOTA,
    Outcome.PENDING_CAPACITY,
    Outcome.PENDING_FRAGMENTATION,
    Outcome.PENDING_CONSTRAINT,
    Outcome.STATUS,
)
#: facts that exercise every branch of the phrases (with and without task, NCCL, memory, image, error)
OSMO_FACTS = (
    FailedFacts(workflow="w-1", status="FAILED", who="the workflow", how="FAILED"),
    FailedFacts(
        workflow="w-1",
        status="FAILED",
        who="task train",
        how="FAILED with exit code 1",
        task="train",
        exit_code=1,
        signal="exit code 1",
        detail="NCCL",
        error="2026/11/28 10:00:00 [train] RuntimeError: boom",
        memory="16Gi",
        image="nvcr.io/x:1",
    ),
    FailedFacts(
        workflow="w-1",
        status="FAILED",
        who="task train",
        how="FAILED with exit code 137",
        task="train",
        exit_code=137,
        signal="OOMKilled",
        error="2026/11/28 10:00:00 [train] RuntimeError: boom",
    ),
)


def _sentence(text: object, what: str, complete: bool = True) -> None:
    """A non-empty, trimmed text; with ``complete`` facts (a task is known), no missing value shows as None."""
    assert isinstance(text, str) and text.strip(), f"{what} is empty"
    assert text == text.strip() and "  " not in text, f"{what} has stray whitespace"
    assert not complete or "None" not in text, f"{what} shows a missing value as None"


def test_the_osmo_texts_checked_are_every_text_field() -> None:
    texts = {f.name for f in fields(OsmoCategory) if f.type in ("str", str)}
    phrases = {f.name for f in fields(OsmoCategory) if "Phrase" in str(f.type)}
    assert texts == {"plain", "emoji", "title"} and phrases == {"next_action", "detail", "variant"}


@pytest.mark.parametrize("category", OSMO_TAXONOMY)
def test_every_osmo_category_has_every_text(category: Category) -> None:
    entry = OSMO_CATEGORIES.get(category)
    assert entry is not None, f"{category} has no entry in diagnosis.osmo.categories"
    assert entry.category == category
    _sentence(entry.plain, f"{category}: plain")
    assert not entry.plain.endswith("."), f"{category}: the plain text is a clause of the verdict"
    assert entry.emoji and entry.title, f"{category}: its words on the card"
    for facts in OSMO_FACTS:
        _sentence(entry.next_action(facts), f"{category}: next action")
        assert entry.next_action(facts).endswith("."), f"{category}: the next action is a sentence"
        headline = entry.headline(facts)
        _sentence(headline, f"{category}: headline", facts.task is not None)
        assert headline.startswith("Workflow w-1 is FAILED"), headline
        assert isinstance(entry.detail(facts), str)


def test_registry_has_no_category_outside_the_osmo_taxonomy() -> None:
    assert set(OSMO_CATEGORIES) == set(OSMO_TAXONOMY)


def test_every_osmo_rule_belongs_to_one_entry_and_names_its_category() -> None:
    """Each rule of ``classify.RULES`` belongs to exactly one entry (UNKNOWN is the fallback, with none), and
    the category a rule gives is that entry's."""
    owners = {r: e.category for e in OSMO_CATEGORIES.values() for r in (e.rule, *e.also) if r is not None}
    assert set(osmo_classify.RULES) == set(owners), "a rule without an entry, or an entry naming no rule"
    assert OSMO_CATEGORIES[Category.UNKNOWN].rule is None
    statuses = [
        "FAILED",
        "FAILED_CANCELED",
        "FAILED_EXEC_TIMEOUT",
        "FAILED_PREEMPTED",
        "FAILED_IMAGE_PULL",
        "FAILED_START_ERROR",
        "FAILED_BACKEND_ERROR",
        "FAILED_EVICTED",
        "FAILED_SERVER_ERROR",
        "FAILED_UPSTREAM",
    ]
    codes = (None, 1, 137, 256, 301, 303, 305, 1001, 2002, 2012, 3000, 3001, 3004, 3006, 4000)
    for status in statuses:
        for code in codes:
            signals = TaskSignals(task="t", status=status, exit_code=code, failure_message="", workflow_status=status)
            for rule, category in owners.items():
                finding = rule(signals)
                if finding is not None:
                    assert finding.category == category, rule.__name__


PENDING_FACTS = PendingFacts(
    head="Workflow w-1 is PENDING",
    pool="h100",
    ask="8",
    quota_free="0",
    quota_limit="32",
    total_free="16",
    total_capacity="64",
    task_ask="8",
    largest="4",
    priority="NORMAL",
    pool_status="OFFLINE",
    status="PENDING",
    has_group=True,
    constraint=("no nodes match the workflow's hardware requirements", "node affinity"),
)


@pytest.mark.parametrize("outcome", OSMO_PENDING_OUTCOMES)
def test_every_pending_verdict_has_every_text(outcome: Outcome) -> None:
    entry = OSMO_PENDING.get(outcome)
    assert entry is not None, f"{outcome} has no entry in diagnosis.osmo.categories.PENDING"
    assert entry.outcome == outcome
    for facts in (PENDING_FACTS, PendingFacts(**{**PENDING_FACTS.__dict__, "has_group": False, "status": "WAITING"})):
        _sentence(entry.headline(facts), f"{outcome}: headline")
        assert entry.headline(facts).startswith(facts.head) and entry.headline(facts).endswith(".")
        _sentence(entry.next_action(facts), f"{outcome}: next action")
        assert entry.next_action(facts).endswith(".")


def test_pending_rules_and_verdicts_are_one_to_one() -> None:
    """Each rule of ``pending.PENDING_RULES`` has one verdict entry, and the plain status report has none."""
    rules = {v.rule: v.outcome for v in OSMO_PENDING.values() if v.rule is not None}
    assert set(osmo_pending.PENDING_RULES) == set(rules)
    assert OSMO_PENDING[Outcome.STATUS].rule is None
    assert set(OSMO_PENDING) == set(OSMO_PENDING_OUTCOMES)


def test_every_category_and_outcome_has_its_words_for_the_card_and_text() -> None:
    """The verdict in words (emoji and title) lives on each category's entry; every category some system gives has
    them, a category both systems give reads alike in both, and every outcome has its words in
    :mod:`diagnosis.wording`. A category without words would fall back to its raw enum value on the card."""
    from diagnosis.wording import _OUTCOME_WORDS, category_words

    entries = [*CATEGORIES.values(), *OSMO_CATEGORIES.values()]
    assert {e.category for e in entries} == set(Category), set(Category) - {e.category for e in entries}
    assert all(e.emoji and e.title and e.title[0].isupper() for e in entries)
    for category in set(CATEGORIES) & set(OSMO_CATEGORIES):
        assert (CATEGORIES[category].emoji, CATEGORIES[category].title) == (
            OSMO_CATEGORIES[category].emoji,
            OSMO_CATEGORIES[category].title,
        ), category
    assert category_words(Category.SCHEDULING_POLICY_TERMINATED, "osmo") == ("⛔", "Stopped by a scheduling policy")
    assert set(_OUTCOME_WORDS) == set(Outcome), set(Outcome) - set(_OUTCOME_WORDS)


def test_precedence_lists_exactly_the_entries_analyzers_each_once() -> None:
    """``classify.PRECEDENCE`` (the order the strongest direct signal is looked for) is tested against the
    entries: every analyzer of an entry is in it once, and nothing else is; an entry's own analyzers keep their
    order in it."""
    assert len(cls.PRECEDENCE) == len(set(cls.PRECEDENCE))
    assert sorted(a.__name__ for e in CATEGORIES.values() for a in e.analyzers) == sorted(
        a.__name__ for a in cls.PRECEDENCE
    )
    for e in CATEGORIES.values():
        ranks = [cls.PRECEDENCE.index(a) for a in e.analyzers]
        assert ranks == sorted(ranks), e.category
