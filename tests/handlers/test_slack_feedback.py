"""Issue 28: "was this right?" on the card, through the real AsyncApp, the Slack mock, the sandbox and Redis.

A vote, a changed vote, a refused vote from a user without access, a "Wrong" with a choice and a note; the export
of that answer replays (``workload-doctor diagnose --snapshot FILE --format json``) to the same answer and carries
the person's verdict as ``expect``. What is kept holds nothing secret."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode

from bot.cli_feedback import export_cases, write_cases
from bot.feedback_store import FeedbackStore
from diagnosis import metrics
from handlers.card import RIGHT_ACTION, WRONG_ACTION
from handlers.doctor import REFUSAL
from tests.handlers.test_slack_e2e import ALICE, CHAN, EVE, MALLORY, finals, running
from tests.paths import ROOT
from tests.slack_mock import REDIS_URL, SlackMock, action_body, buttons_of

CLI = str(ROOT / ".venv" / "bin" / "workload-doctor")


def _card(slack: SlackMock) -> tuple[dict[str, Any], dict[str, Any]]:
    card = finals(slack)[-1]
    return card, {"ts": card["ts"], "blocks": card["blocks"]}


def _button(blocks: list[dict[str, Any]], action_id: str) -> dict[str, Any]:
    return next(b for b in buttons_of(blocks) if b["action_id"] == action_id)


def _with_note(body: str, ref: str, note: str) -> str:
    """An action body whose message holds the note input with ``note`` typed in it (Slack's ``state``)."""
    payload = json.loads(parse_qs(body)["payload"][0])
    payload["state"] = {"values": {f"wd_fb_note:{ref}": {"wd_fb_note": {"type": "plain_text_input", "value": note}}}}
    return urlencode({"payload": json.dumps(payload)})


def _private(slack: SlackMock) -> list[dict[str, Any]]:
    return [c.body for c in slack.of("webhook")]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A command run to its end (the CLI, the case runner)."""
    return subprocess.run(list(args), capture_output=True, text=True, env=env, timeout=120)


def _votes_metric(agreement: str) -> float:
    return metrics.FEEDBACK_VOTES.labels("runai", "OOM_KILLED", agreement)._value.get()


async def test_vote_change_refusal_and_wrong_with_a_note_export_and_replay(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    right_before, wrong_before = _votes_metric("right"), _votes_metric("wrong")
    # rate limit 1: the question spends it; the votes after it are free
    async with running(slack, prefix, tmp_path, "text-only-question", rate_limit=1) as h:
        await h.command("train-gpt2 project=nlp", user=ALICE, channel=CHAN)
        await h.settle()
        card, message = _card(slack)
        right, wrong = _button(card["blocks"], RIGHT_ACTION), _button(card["blocks"], WRONG_ACTION)
        ref = right["value"]
        assert wrong["value"] == ref and len(ref) == 16
        # the feedback sits in the card's one actions block, beside Evidence and Re-diagnose
        assert [b["block_id"] for b in card["blocks"] if b["type"] == "actions"] == ["wd_card_actions"]

        # a vote
        await h.click(right, message, user=ALICE, channel=CHAN)
        await h.settle()
        assert "marked right" in _private(slack)[-1]["text"]
        assert _private(slack)[-1]["response_type"] == "ephemeral"

        # a refused vote: Mallory may see only project speech, Eve nothing
        for user in (MALLORY, EVE):
            await h.click(right, message, user=user, channel=CHAN)
            await h.settle()
            assert _private(slack)[-1]["text"] == REFUSAL, user

        # "Wrong": asked privately, with the system's categories, "not a failure" and "wrong workload"
        await h.click(wrong, message, user=ALICE, channel=CHAN)
        await h.settle()
        question = _private(slack)[-1]
        assert question["response_type"] == "ephemeral" and question.get("replace_original") is False
        picks = {b["value"]: b for b in buttons_of(question["blocks"])}
        chosen = {json.loads(v)["v"] for v in picks}
        assert {"OOM_KILLED", "CRASH_APP_ERROR", "NODE_FAILURE", "not_a_failure", "wrong_workload"} <= chosen
        assert any(b["type"] == "input" and b.get("dispatch_action") for b in question["blocks"])
        crash = next(b for v, b in picks.items() if json.loads(v)["v"] == "CRASH_APP_ERROR")
        # the changed vote: a choice with a note typed in the same private message
        note = "the loader raised CUDA out of memory, token ghp_abcdefghijklmnopqrstuvwxyz0123456789 leaked"
        body = _with_note(
            action_body(
                crash, {"ts": "1764000000.999999"}, user=ALICE, channel=CHAN, response_url=slack.response_url("p")
            ),
            ref,
            note,
        )
        await h.send(body, "application/x-www-form-urlencoded")
        await h.settle()
        thanks = _private(slack)[-1]
        assert thanks.get("replace_original") is True
        assert "marked wrong" in thanks["text"] and "earlier vote is replaced" in thanks["text"]

        desk = FeedbackStore(h.bot.store)
        votes = await desk.votes(ref)
        assert set(votes) == {ALICE}  # one vote per person per answer; the refused ones kept nothing
        assert votes[ALICE]["verdict"] == "wrong" and votes[ALICE]["choice"] == "CRASH_APP_ERROR"
        assert "CUDA out of memory" in votes[ALICE]["note"] and "ghp_abcdef" not in votes[ALICE]["note"]
        cases = await export_cases(desk, everything=False, since=0)
    assert _votes_metric("right") == right_before + 1 and _votes_metric("wrong") == wrong_before + 1

    written = write_cases(tmp_path / "out", cases)
    assert len(written) == 1 and written[0][1] == "expect diagnosed CRASH_APP_ERROR"
    path = written[0][0]
    case = json.loads(path.read_text())
    assert case["format"] == "snapshot/1" and case["expect"] == {"outcome": "diagnosed", "category": "CRASH_APP_ERROR"}
    assert case["feedback"]["note"] == votes[ALICE]["note"] and "CUDA out of memory" in case["description"]
    # the replay gives the original answer (so the case fails until the product is fixed)
    out = _run(CLI, "diagnose", "--snapshot", str(path), "--format", "json")
    assert out.returncode == 0, out.stderr
    replay = json.loads(out.stdout)
    assert (replay["outcome"], replay["category"]) == ("diagnosed", "OOM_KILLED")
    assert "train-gpt2" in replay["report_text"]


async def test_the_cli_exports_a_right_answer_that_passes_and_purges(
    slack: SlackMock, prefix: str, tmp_path: Path
) -> None:
    async with running(slack, prefix, tmp_path, "secrets-and-injection") as h:
        await h.command("ctr-train project=ads", user=ALICE, channel=CHAN)
        await h.settle()
        card, message = _card(slack)
        right = _button(card["blocks"], RIGHT_ACTION)
        await h.click(right, message, user=ALICE, channel=CHAN)
        await h.settle()
        ref = right["value"]
        # nothing secret in what is kept: every key of this bot's feedback, scanned raw
        import redis

        raw = redis.Redis.from_url(REDIS_URL)
        keys = [k.decode() for k in raw.scan_iter(match=f"{prefix}fb:*")]
        assert any(k.endswith(f"answer:{ref}") for k in keys)
        desk = FeedbackStore(h.bot.store)
        record = await desk.answer(ref, world=True)
        assert record is not None and record["world"]["format"] == "snapshot/1"
        kept = json.dumps(record) + "".join(json.dumps(v) for v in (await desk.votes(ref)).values())
    fixture = json.loads((ROOT / "tests/fixtures/cases/runai/secrets-and-injection.json").read_text())
    for secret in fixture["expect"].get("never_mentions", []):
        assert secret not in kept, secret

    env = {**os.environ, "REDIS_URL": REDIS_URL, "WD_REDIS_PREFIX": prefix}
    stats = _run(CLI, "feedback", "stats", "--format", "json", env=env)
    assert stats.returncode == 0, stats.stderr
    data = json.loads(stats.stdout)
    assert data["votes"] == 1 and data["agreement"]["system"]["runai"]["agreement"] == 1.0 and data["wrong"] == []
    out = tmp_path / "cases"
    exported = _run(CLI, "feedback", "export", "-o", str(out), "--all", env=env)
    assert exported.returncode == 0, exported.stderr
    [case_file] = list(out.glob("*.json"))
    assert oct(case_file.stat().st_mode & 0o777) == "0o600"
    runner = ROOT.parent / "shared" / "tools" / "run-cases"
    if runner.exists():
        cases = _run(sys.executable, str(runner), "--cli", CLI, str(case_file))
        assert cases.returncode == 0, cases.stdout + cases.stderr  # marked right: it passes
    purged = _run(CLI, "feedback", "purge", env=env)
    assert purged.returncode == 0 and "purged" in purged.stdout
    assert not list(redis.Redis.from_url(REDIS_URL).scan_iter(match=f"{prefix}fb:*"))
