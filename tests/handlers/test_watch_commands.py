"""OSMO watches can be listed, stopped and expire (issue 14 §2): ``/diagnose watches``, ``/diagnose unwatch X``,
``WD_WATCH_TTL``, and a resumed watch checks the requester's access again. Real bot, sandbox OSMO, real Redis."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.policy import Policy
from bot.settings import Settings, SettingsError
from handlers.watch import parse_watch_command
from sandbox.server import Sandbox
from tests.handlers.test_slack_watch import ALICE, CHAN, POLICY, WORKFLOW, count, osmo, polls, stored_watches
from tests.slack_mock import SlackMock, mention, osmo_bot, set_workflow_status

__all__ = ["osmo"]  # the fixture


def test_parse_watch_commands() -> None:
    assert parse_watch_command("unwatch sdg-render-7") == ("unwatch", "sdg-render-7")
    assert parse_watch_command("/diagnose unwatch workflow sdg-render-7") == ("unwatch", "sdg-render-7")
    assert parse_watch_command("stop watching sdg-render-7") == ("unwatch", "sdg-render-7")
    assert parse_watch_command("watches") == ("watches", None)
    assert parse_watch_command("list watches") == ("watches", None)
    assert parse_watch_command("watch sdg-render-7") is None
    assert parse_watch_command("why did train-7 fail?") is None


def test_watch_ttl_setting_defaults_to_seven_days_and_is_checked() -> None:
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "REDIS_URL": "redis://r", "SLACK_SIGNING_SECRET": "s"}
    assert Settings.from_env("http", env).watch_ttl == 7 * 86400
    assert Settings.from_env("http", {**env, "WD_WATCH_TTL": "60"}).watch_ttl == 60
    with pytest.raises(SettingsError, match=r"^WD_WATCH_TTL must be a number, not 'soon'$"):
        Settings.from_env("http", {**env, "WD_WATCH_TTL": "soon"})


async def test_watches_lists_and_unwatch_stops(slack: SlackMock, prefix: str, osmo: Sandbox) -> None:
    async with osmo_bot(slack, prefix, osmo, policy=POLICY) as h:
        await h.command("watches", user=ALICE, channel=CHAN)
        await slack.wait_for(lambda s: "No workflow is watched" in str(s.of("webhook")), what="an empty list")
        await h.command(f"watch {WORKFLOW}", user=ALICE, channel=CHAN)
        await slack.wait_for(lambda s: polls(prefix) >= 2, what="polling")
        await h.command("watches", user=ALICE, channel=CHAN)
        await slack.wait_for(
            lambda s: any(
                WORKFLOW in str(c.body) and "Watched in this channel" in str(c.body) for c in s.of("webhook")
            ),
            what="the list",
        )
        await h.command("unwatch no-such-flow", user=ALICE, channel=CHAN)
        await slack.wait_for(lambda s: any("I'm not watching" in str(c.body) for c in s.of("webhook")), what="none")
        await h.command(f"unwatch {WORKFLOW}", user=ALICE, channel=CHAN)
        await slack.wait_for(lambda s: count(s, "stopped this watch") == 1, what="stop note in the thread")
        await h.settle()
        assert h.bot.watches.running == {}
        assert stored_watches(prefix) == []
        set_workflow_status(osmo, WORKFLOW, "COMPLETED", exit_code=0)
        await h.settle()
    assert count(slack, "COMPLETED (final)") == 0, "a stopped watch posts nothing more"


async def test_unwatch_by_mention_stops_a_watch_another_replica_polls(
    slack: SlackMock, prefix: str, osmo: Sandbox
) -> None:
    async with (
        osmo_bot(slack, prefix, osmo, policy=POLICY) as first,
        osmo_bot(slack, prefix, osmo, policy=POLICY) as second,
    ):
        await first.command(f"watch {WORKFLOW}", user=ALICE, channel=CHAN)
        await slack.wait_for(lambda s: polls(prefix) >= 2, what="polling on the first replica")
        assert len(first.bot.watches.running) == 1 and second.bot.watches.running == {}
        await second.event(mention(f"unwatch {WORKFLOW}", "900.000100", channel=CHAN))
        await slack.wait_for(lambda s: count(s, f"Stopped watching `{WORKFLOW}`") == 1, what="reply")
        await slack.wait_for(lambda s: not first.bot.watches.running, limit=20, what="the poller stops")
        assert stored_watches(prefix) == []


async def test_a_watch_expires_after_its_ttl(slack: SlackMock, prefix: str, osmo: Sandbox) -> None:
    async with osmo_bot(slack, prefix, osmo, policy=POLICY) as h:
        watches = h.bot.watches
        await h.command(f"watch {WORKFLOW}", user=ALICE, channel=CHAN)
        await slack.wait_for(lambda s: polls(prefix) >= 2, what="polling")
        real = watches.clock
        watches.clock = lambda: real() + timedelta(days=8)
        await slack.wait_for(lambda s: count(s, "has not finished after 7 day(s)") == 1, what="expiry note")
        await h.settle()
        assert watches.running == {} and stored_watches(prefix) == []


async def test_a_resumed_watch_checks_the_requesters_access_again(slack: SlackMock, prefix: str, osmo: Sandbox) -> None:
    async with osmo_bot(slack, prefix, osmo, policy=POLICY) as first:
        await first.command(f"watch {WORKFLOW}", user=ALICE, channel=CHAN)
        await slack.wait_for(lambda s: polls(prefix) >= 2, what="polling")
    assert len(stored_watches(prefix)) == 1
    revoked = Policy.from_dict({"groups": {"ml": ["U0SOMEONE"]}, "access": [{"who": ["@ml"]}]})
    async with osmo_bot(slack, prefix, osmo, policy=revoked) as restarted:
        assert restarted.bot.watches.running == {}
        await slack.wait_for(lambda s: count(s, "no longer allows") == 1, what="the note")
    assert stored_watches(prefix) == []
