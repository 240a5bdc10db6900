"""Step 1 name resolution (diagnosis/runai/resolve.py): names are matched against the API case-insensitively
(FORMAT.md "Questions"), and the API's own spelling is what the next filter uses."""

from __future__ import annotations

from diagnosis.runai import resolve
from diagnosis.runai.resolve import ProjectInfo

PROD, STAGING = "c-prod", "c-staging"
PROJECTS = [ProjectInfo("nlp", PROD), ProjectInfo("nlp", STAGING), ProjectInfo("Vision", STAGING)]


def test_a_project_typed_in_other_letter_case_is_the_api_spelling() -> None:
    assert resolve.project_named("NLP", PROJECTS, STAGING) == "nlp"
    assert resolve.project_named("vision", PROJECTS, STAGING) == "Vision"
    assert resolve.project_named("VISION", PROJECTS, None) == "Vision"


def test_a_project_that_is_not_on_the_cluster_is_not_named() -> None:
    assert resolve.project_named("vision", PROJECTS, PROD) is None
    assert resolve.project_named("speech", PROJECTS, None) is None


def test_spellings_that_differ_only_in_case_are_not_guessed() -> None:
    both = [ProjectInfo("Team", PROD), ProjectInfo("team", PROD)]
    assert resolve.project_named("team", both, PROD) == "team"
    assert resolve.project_named("TEAM", both, PROD) is None


def test_same_name_folds_case() -> None:
    assert resolve.same_name("DGX-Staging", "dgx-staging")
    assert not resolve.same_name("dgx-prod", "dgx-staging")
    assert not resolve.same_name(None, "x")
