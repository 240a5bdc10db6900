"""The deployed policy allows nobody (issue 22 §3): the refusal says so, in the command's ack, to a mention, on
the terminal and in ``workload-doctor doctor``, instead of the "not allowed in that cluster or project" a
person with no rule gets under a policy that names others."""

from __future__ import annotations

import io
from pathlib import Path

from bot.chat import chat
from bot.cli import backends_for
from bot.cli_doctor import check_policy
from bot.policy import Policy
from handlers.messages import NOBODY_ALLOWED, REFUSAL, refusal_words
from tests.handlers.test_slack_e2e import ALICE, CASES, POLICY, running
from tests.slack_mock import SlackMock, mention

NOBODY = Policy.from_dict({"groups": {}, "access": [], "channels": {}})


def test_the_words_follow_the_policy() -> None:
    assert NOBODY.allows_nobody and not NOBODY.allows(ALICE)
    assert refusal_words(NOBODY) == NOBODY_ALLOWED
    assert refusal_words(POLICY) == REFUSAL and refusal_words(Policy()) == REFUSAL
    assert not Policy().allows_nobody, "no policy file: everyone may ask (not 'nobody')"
    assert "WD_POLICY_FILE" in NOBODY_ALLOWED and "access" in NOBODY_ALLOWED


async def test_slack_refusals_say_the_policy_names_nobody(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    async with running(slack, prefix, tmp_path, "text-only-question", policy=NOBODY) as h:
        ack = await h.command("train-gpt2 project=nlp", user=ALICE)
        await h.event(mention("why did train-gpt2 fail in project nlp?", "900.000100", user=ALICE))
        await h.settle()
    assert ack.json()["text"] == NOBODY_ALLOWED
    told = [c.body["text"] for c in slack.of("chat.postEphemeral")]
    assert told == [NOBODY_ALLOWED], told
    assert not slack.public(), "nothing is diagnosed or posted"
    assert h.bot.doctor.refusal() == NOBODY_ALLOWED


async def test_the_terminal_twin_says_so_too() -> None:
    out = io.StringIO()
    with backends_for(str(CASES / "text-only-question.json")) as (backends, _ask):
        await chat(backends, policy=NOBODY, first="why did train-gpt2 fail in project nlp?", read=lambda: None, out=out)
    assert "nobody may ask me anything yet" in out.getvalue(), out.getvalue()


def test_doctor_warns_while_the_policy_allows_nobody(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("access: []\n")
    row = check_policy({"WD_POLICY_FILE": str(path)}, "socket")
    assert row.status == "warn" and row.detail.startswith("allows nobody"), row
    path.write_text("groups: {team: [U0ALICE01]}\naccess:\n  - who: ['@team']\n")
    row = check_policy({"WD_POLICY_FILE": str(path)}, "socket")
    assert row.status == "ok" and "1 access rule(s) naming @team" in row.detail, row
    path.write_text("access: [{who: ['@missing']}]\n")
    assert check_policy({"WD_POLICY_FILE": str(path)}, "socket").status == "fail"
    assert check_policy({}, "socket").status == "warn", "no policy file: everyone may ask, said"
    assert check_policy({}, None).status == "skip"
