"""Digests (issue 12, FORMAT.md "Digests"): the pure counting, the window, and the scan through the sandbox."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from diagnosis.answer import Backends, answer_digest
from diagnosis.config import OsmoConfig, RunaiConfig
from diagnosis.digests import DigestAsk, DigestItem, build_digest, parse_digest_text, parse_since
from diagnosis.question import QuestionError
from diagnosis.units import parse_time
from handlers.digest_blocks import digest_thread, render_digest_blocks
from sandbox.server import Sandbox
from tests.conftest import SHARED

CLI = str(Path(sys.executable).parent / "workload-doctor")
DIGEST = SHARED / "cases-next" / "digest" / "digest-runai-24h.json"
MIXED = SHARED / "cases-next" / "digest" / "digest-mixed-runai-osmo.json"
T0 = datetime(2026, 11, 28, 12, tzinfo=UTC)
needs_shared = pytest.mark.skipif(not DIGEST.is_file(), reason="../shared/cases-next is not beside this checkout")


def item(name: str, category: str, minutes: int, *, system: str = "runai", recurring: bool = False) -> DigestItem:
    return DigestItem(
        system=system,  # type: ignore[arg-type]
        name=name,
        id=f"id-{name}",
        project="nlp" if system == "runai" else None,
        pool="p" if system == "osmo" else None,
        at=T0 - timedelta(minutes=minutes),
        category=category,
        verdict=f"{name} failed",
        recurring=recurring,
    )


def test_counting_is_once_per_failure_groups_largest_first_items_newest_first() -> None:
    items = [
        item("a", "OOM_KILLED", 10, recurring=True),
        item("a", "OOM_KILLED", 10, recurring=True),  # the same workload listed twice (live and deleted query)
        item("b", "OOM_KILLED", 5),
        item("c", "CRASH_APP_ERROR", 1),
        item("wf-1", "CANCELED", 2, system="osmo", recurring=True),
    ]
    digest = build_digest(items, start=T0 - timedelta(hours=24), end=T0, since="24h")
    assert digest.failed == 4
    assert digest.by_category == {"OOM_KILLED": 2, "CANCELED": 1, "CRASH_APP_ERROR": 1}
    assert [g.category for g in digest.groups] == ["OOM_KILLED", "CANCELED", "CRASH_APP_ERROR"]
    assert [i.name for i in digest.groups[0].items] == ["b", "a"]
    assert digest.recurring == ["a"]  # OSMO adds nothing to recurring
    assert sum(g.count for g in digest.groups) == digest.failed


def test_parse_since_and_text() -> None:
    assert parse_since("90m") == timedelta(minutes=90)
    assert parse_since(None) == timedelta(hours=24)
    with pytest.raises(QuestionError):
        parse_since("1.5d")
    ask = parse_digest_text("digest 7d project=nlp,speech pool=h100 cluster=dgx-prod")
    assert (ask.since, ask.projects, ask.pools, ask.cluster_id) == ("7d", ["nlp", "speech"], ["h100"], "dgx-prod")


def test_thread_rows_are_cut_with_a_count_that_adds_up() -> None:
    items = [item(f"w{i}", "OOM_KILLED", i) for i in range(50)]
    digest = build_digest(items, start=T0 - timedelta(hours=24), end=T0, since="24h")
    messages, table = digest_thread(digest, limit=40)
    text = "\n".join(messages)
    assert text.count("\n• *w") == 40 and "… 10 more (of 50)" in text
    assert "OOM_KILLED" not in text and "💥 *OOM killed* (50)" in text  # the cause in words, once
    assert len(table.splitlines()) == 51
    assert len(render_digest_blocks(digest)) <= 50


def _digest(snapshot: dict[str, Any], **ask: Any) -> Any:
    import asyncio

    with Sandbox(snapshot) as sandbox:
        now = parse_time(snapshot["now"])
        assert now is not None
        backends = Backends(
            runai=RunaiConfig(sandbox.url, "sandbox", "sandbox", console_url=sandbox.url)
            if "runai" in snapshot
            else None,
            osmo=OsmoConfig(sandbox.url, "sandbox") if "osmo" in snapshot else None,
            now=lambda: now,
        )
        digest = asyncio.run(answer_digest(DigestAsk.model_validate({**snapshot["ask"], **ask}), backends))
        return digest, list(sandbox.requests)


@needs_shared
def test_the_scan_is_filtered_on_the_server_and_never_lists_everything() -> None:
    digest, requests = _digest(json.loads(DIGEST.read_text()))
    lists = [r for r in requests if r.path == "/api/v1/workloads"]
    assert lists, "the workloads were listed"
    for r in lists:
        query = r.query if isinstance(r.query, str) else str(r.query)
        assert "phaseUpdatedAt" in query and "clusterId" in query, query
    assert all(r.method == "GET" for r in requests if not r.path.endswith("/token"))
    assert digest.failed == 18


@needs_shared
def test_a_listed_project_that_does_not_exist_adds_nothing_and_is_a_gap() -> None:
    digest, _ = _digest(json.loads(DIGEST.read_text()), projects=["nlp", "nlp-prod"])
    assert {g.items[0].project for g in digest.groups} == {"nlp"}
    assert any("nlp-prod" in g.what for g in digest.gaps)


@needs_shared
def test_an_empty_window_says_no_failure_was_found(tmp_path: Path) -> None:
    snap = json.loads(DIGEST.read_text())
    snap["now"] = "2027-06-01T00:00:00Z"  # months after every failure of the snapshot
    digest, _ = _digest(snap)
    assert digest.failed == 0 and digest.groups == []
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(snap))
    run = [CLI, "digest", "--snapshot", str(path)]
    out = json.loads(subprocess.run([*run, "--format", "json"], capture_output=True, text=True, check=True).stdout)
    assert out["outcome"] == "digest"
    assert out["digest"]["failed"] == 0 and out["digest"]["groups"] == []
    text = subprocess.run(run, capture_output=True, text=True, check=True).stdout
    assert "No failure was found in that window" in text


def test_a_digest_snapshot_that_is_not_a_file_is_one_clear_line() -> None:
    result = subprocess.run(
        [CLI, "digest", "--snapshot", "-", "--format", "json"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2  # "-" is not a file: one clear line, no traceback
    assert "Traceback" not in result.stderr and "snapshot file not found: -" in result.stderr


@needs_shared
def test_digest_cli_options_replace_the_asks_keys(tmp_path: Path) -> None:
    snap = copy.deepcopy(json.loads(MIXED.read_text()))
    path = tmp_path / "s.json"
    path.write_text(json.dumps(snap))
    result = subprocess.run(
        [CLI, "digest", "--snapshot", str(path), "--format", "json", "--since", "90m", "--pool", "nope"],
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(result.stdout)
    assert out["outcome"] == "digest"
    assert all(i["system"] == "runai" for g in out["digest"]["groups"] for i in g["items"])
    same = subprocess.run(
        [CLI, "diagnose", "--snapshot", str(path), "--format", "json"], capture_output=True, text=True, check=True
    )
    direct = subprocess.run(
        [CLI, "digest", "--snapshot", str(path), "--format", "json"], capture_output=True, text=True, check=True
    )
    assert json.loads(same.stdout)["digest"] == json.loads(direct.stdout)["digest"]


@pytest.mark.parametrize("text", ["3x", "since=abc", "digest 2w", "lookback=forever project=nlp"])
def test_a_window_that_is_there_but_unreadable_is_an_error_not_the_default(text: str) -> None:
    """``/diagnose digest 3x`` must not quietly become the last 24 h (a private error names it)."""
    with pytest.raises(QuestionError, match="bad digest window"):
        parse_digest_text(text)


def test_a_window_given_as_a_key_is_read() -> None:
    assert parse_digest_text("since=24h project=nlp").since == "24h"
    assert parse_digest_text("pool=h100").since is None
