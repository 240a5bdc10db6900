"""A user authorised through a Slack user group (issue 15 §5), end to end: the policy names the group (``S…``),
the mock Web API lists its members; the person's typed reply to the bot's follow-up question in the thread is
diagnosed, not refused, and a person outside the group is still refused."""

from __future__ import annotations

from pathlib import Path

from bot.policy import Policy
from tests.handlers.test_slack_e2e import BARE, finals, headers_of, running
from tests.slack_mock import SlackMock, mention, thread_message

GROUP = "S0MLPLAT01"
MEMBER = "U0GROUPIE1"
OUTSIDER = "U0OUTSIDE1"
POLICY = Policy.from_dict({"access": [{"who": [GROUP], "clusters": ["*"], "projects": ["*"]}]})


async def test_a_group_member_is_answered_on_a_typed_follow_up(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    slack.usergroups[GROUP] = [MEMBER]
    async with running(slack, prefix, tmp_path, "missing-cluster", policy=POLICY) as h:
        await h.event(mention("why did asr-conformer fail in project speech?", "420.000100", user=MEMBER, channel=BARE))
        await h.settle()
        assert headers_of(finals(slack)[-1]) == ["❔ Need more information"]
        await h.event(thread_message("dgx-prod", "420.000300", "420.000100", user=MEMBER, channel=BARE))
        await h.settle()
    assert headers_of(finals(slack)[-1]) == ["🔥 Crashed (application error)"], finals(slack)[-1]["text"]
    assert slack.of("chat.postEphemeral") == [], "nobody was refused"


async def test_someone_outside_the_group_is_refused(slack: SlackMock, prefix: str, tmp_path: Path) -> None:
    slack.usergroups[GROUP] = [MEMBER]
    async with running(slack, prefix, tmp_path, "missing-cluster", policy=POLICY) as h:
        await h.event(
            mention("why did asr-conformer fail in project speech?", "430.000100", user=OUTSIDER, channel=BARE)
        )
        await h.settle()
    assert finals(slack) == [] and not [c for c in slack.of("chat.postMessage") if "Diagnosing" in c.body["text"]]
    assert [c.body["user"] for c in slack.of("chat.postEphemeral")] == [OUTSIDER]
