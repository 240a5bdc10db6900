"""``/diagnose watch <workflow>`` and "watch <workflow>" mentions, end to end: signed requests -> the
real AsyncApp behind its HTTP adapter (lifespan entered, so watches resume at startup) -> the
sandbox serving an OSMO case whose workflow the test moves from state to state; replies go to the
mock Slack Web API; watches live in a real Redis under a unique key prefix.

Every watch interval is scaled down (``watch_scale``); nothing here asserts a timing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import sandbox.osmo
from bot.policy import Policy
from bot.settings import Settings, SettingsError
from diagnosis.backends import Backends
from diagnosis.osmo.watch import WatchState
from handlers.doctor import REFUSAL
from handlers.watch import Watches, parse_cadence, watch_id
from sandbox.server import Sandbox
from tests.slack_mock import (
    REDIS_URL,
    SlackMock,
    mention,
    osmo_bot,
    osmo_snapshot,
    set_workflow_status,
)

ALICE = "U0ALICE01"
EVE = "U0EVE0001"  # no access rule
CHAN = "C0CHAN001"
WORKFLOW = "warehouse-sdg-render-33"
POLICY = Policy.from_dict({"groups": {"ml": [ALICE]}, "access": [{"who": ["@ml"]}]})


@pytest.fixture
def osmo(monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    """The sandbox serving a RUNNING workflow (links null). A live stream normally stays open until
    the client's 5 s deadline; here it ends after its text so status reports come fast."""
    monkeypatch.setattr(sandbox.osmo, "LIVE_STREAM_HOLD_S", 0.0)
    sb = Sandbox(osmo_snapshot("osmo-running-links-null"))
    sb.start()
    yield sb
    sb.stop()


def rkeys(prefix: str, pattern: str) -> list[str]:
    r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        return sorted(r.scan_iter(match=prefix + pattern))
    finally:
        r.close()


def stored_watches(prefix: str) -> list[dict[str, Any]]:
    r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        return [json.loads(r.get(k) or "{}") for k in r.scan_iter(match=prefix + "watch:*")]
    finally:
        r.close()


def polls(prefix: str) -> int:
    found = stored_watches(prefix)
    return max((w.get("state", {}).get("polls", 0) for w in found), default=0)


def texts(slack: SlackMock) -> list[str]:
    return [json.dumps(c.body) for c in slack.of("chat.postMessage")]


def headers(posts: list[Any]) -> list[str]:
    """The cards' verdicts in words (headers without the workflow name)."""
    return [
        b["text"]["text"].split(": ")[0] for p in posts for b in p.body.get("blocks") or [] if b.get("type") == "header"
    ]


def count(slack: SlackMock, needle: str) -> int:
    return sum(needle in t for t in texts(slack))


async def test_watch_posts_each_change_in_the_thread_and_stops_at_terminal(
    slack: SlackMock, prefix: str, osmo: Sandbox
) -> None:
    async with osmo_bot(slack, prefix, osmo, policy=POLICY) as h:
        resp = await h.command(f"watch {WORKFLOW}", user=ALICE, channel=CHAN)
        assert resp.status_code == 200
        await slack.wait_for(lambda s: count(s, "is not available for this workflow") >= 1, what="status report")
        root = slack.of("chat.postMessage")[0]
        assert "Watching workflow" in root.body["text"] and root.body.get("thread_ts") is None
        root_ts = "1764000000.000001"
        # the watch is in Redis (state, index, lease) and keeps polling the unchanged RUNNING state
        assert rkeys(prefix, "watches") and rkeys(prefix, "lease:watch:*")
        await slack.wait_for(lambda s: polls(prefix) >= 3, what="several unchanged polls")
        assert count(slack, "RUNNING -") == 0  # nothing posted for unchanged polls
        set_workflow_status(osmo, WORKFLOW, "WAITING")
        await slack.wait_for(lambda s: count(s, "RUNNING -&gt; WAITING") == 1, what="RUNNING -> WAITING")
        set_workflow_status(
            osmo, WORKFLOW, "FAILED", exit_code=137, message="Container render was OOMKilled (exit code 137)"
        )
        await slack.wait_for(lambda s: count(s, "WAITING -&gt; FAILED (final)") == 1, what="-> FAILED")
        await h.settle()  # the watch ends by itself at the terminal state
        assert h.bot.watches.running == {}
    posts = slack.of("chat.postMessage")
    assert all(p.body.get("thread_ts") == root_ts for p in posts[1:]), [p.body.get("thread_ts") for p in posts]
    sentences = [p.body["text"] for p in posts if "Watching" in p.body["text"] or " -&gt; " in p.body["text"]]
    assert sentences[1:] == [
        f"Watching {WORKFLOW}: it is RUNNING.",
        f"{WORKFLOW}: RUNNING -&gt; WAITING.",
        f"{WORKFLOW}: WAITING -&gt; FAILED (final).",
    ], sentences
    # the final report is the failure diagnosis, not only the status word
    assert headers(posts) == ["ℹ️ Status", "💥 OOM killed"], headers(posts)
    assert rkeys(prefix, "watch:*") == [] and rkeys(prefix, "lease:watch:*") == []
    r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    assert r.smembers(prefix + "watches") == set()
    r.close()
    slack.check_payloads(allowed_mentions=(ALICE,))


async def test_duplicate_watch_in_the_same_thread_is_ignored(slack: SlackMock, prefix: str, osmo: Sandbox) -> None:
    async with osmo_bot(slack, prefix, osmo, policy=POLICY) as h:
        await h.event(mention(f"watch {WORKFLOW}", "800.000100", channel=CHAN))
        await slack.wait_for(lambda s: count(s, "it is RUNNING") == 1, what="first observation")
        # the same ask again in the thread, and a redelivery of the first one
        await h.event(mention(f"watch {WORKFLOW}", "800.000200", channel=CHAN, thread_ts="800.000100"))
        await h.event(mention(f"watch {WORKFLOW}", "800.000100", channel=CHAN))
        # a /diagnose watch in the channel is another thread: allowed once, then refused as a duplicate
        await h.command(f"watch {WORKFLOW}", user=ALICE, channel=CHAN)
        await slack.wait_for(lambda s: len(h.bot.watches.running) == 2, what="second watch (command)")
        await h.command(f"watch {WORKFLOW}", user=ALICE, channel=CHAN)
        await slack.wait_for(
            lambda s: any("already watching" in c.body.get("text", "") for c in s.of("webhook")), what="refusal"
        )
        await slack.wait_for(lambda s: count(s, "already watching") == 1, what="duplicate in thread")
        assert len(h.bot.watches.running) == 2
        assert len(rkeys(prefix, "watch:*")) == 2
        set_workflow_status(osmo, WORKFLOW, "COMPLETED", exit_code=0)
        await h.settle()
    in_thread = [p for p in slack.of("chat.postMessage") if p.body.get("thread_ts") == "800.000100"]
    assert sum("RUNNING -&gt; COMPLETED (final)" in p.body["text"] for p in in_thread) == 1
    assert sum("Watching workflow" in p.body["text"] for p in in_thread) == 1
    assert rkeys(prefix, "watch:*") == []
    slack.check_payloads(allowed_mentions=(ALICE,))


async def test_a_watch_in_redis_is_resumed_by_a_new_bot(slack: SlackMock, prefix: str, osmo: Sandbox) -> None:
    async with osmo_bot(slack, prefix, osmo, policy=POLICY) as first:
        await first.command(f"watch {WORKFLOW}", user=ALICE, channel=CHAN)
        await slack.wait_for(lambda s: count(s, "is not available for this workflow") >= 1, what="status")
        await slack.wait_for(lambda s: polls(prefix) >= 2, what="polling")
        # a second replica starting now finds the watch held by a live replica: it leaves it alone
        async with osmo_bot(slack, prefix, osmo, policy=POLICY) as second:
            assert second.bot.watches.running == {}
            owner = first.bot.watches.owner
            r = redis.Redis.from_url(REDIS_URL, decode_responses=True)
            (lease,) = rkeys(prefix, "lease:watch:*")
            assert str(r.get(lease)).split("|")[0] == owner  # "owner|fencing token"
            r.close()
        before = len(slack.of("chat.postMessage"))
    # the first replica is gone (restart): its watch stays in Redis, its lease released
    assert len(stored_watches(prefix)) == 1 and rkeys(prefix, "lease:watch:*") == []
    async with osmo_bot(slack, prefix, osmo, policy=POLICY) as restarted:
        assert len(restarted.bot.watches.running) == 1  # resumed at startup (lifespan)
        resumed_from = polls(prefix)
        await slack.wait_for(lambda s: polls(prefix) > resumed_from, what="polling again")
        set_workflow_status(osmo, WORKFLOW, "COMPLETED", exit_code=0)
        await slack.wait_for(lambda s: count(s, "RUNNING -&gt; COMPLETED (final)") == 1, what="final")
        await restarted.settle()
    after = slack.of("chat.postMessage")[before:]
    assert after and all(p.body.get("thread_ts") == "1764000000.000001" for p in after)
    assert count(slack, "it is RUNNING") == 1  # nothing re-announced after the restart
    assert "COMPLETED" in json.dumps(after[-1].body)  # the final report
    assert stored_watches(prefix) == []
    slack.check_payloads(allowed_mentions=(ALICE,))


async def test_watch_refused_by_policy(slack: SlackMock, prefix: str, osmo: Sandbox) -> None:
    async with osmo_bot(slack, prefix, osmo, policy=POLICY) as h:
        resp = await h.command(f"watch {WORKFLOW}", user=EVE, channel=CHAN)
        await h.event(mention(f"watch {WORKFLOW}", "810.000100", user=EVE, channel=CHAN))
        await h.settle()
        await slack.wait_for(lambda s: len(s.of("chat.postEphemeral")) == 1, what="ephemeral refusal")
    assert resp.json() == {"response_type": "ephemeral", "text": REFUSAL}
    assert slack.of("chat.postEphemeral")[0].body["text"] == REFUSAL
    assert slack.of("chat.postMessage") == []
    assert rkeys(prefix, "watch*") == []
    assert not [r for r in osmo.requests if r.path.startswith("/api/workflow")]


async def test_watch_of_an_unknown_workflow_says_so_and_ends(slack: SlackMock, prefix: str, osmo: Sandbox) -> None:
    async with osmo_bot(slack, prefix, osmo, policy=POLICY) as h:
        await h.command("watch no-such-workflow-9", user=ALICE, channel=CHAN)
        await h.settle()
    assert headers(slack.of("chat.postMessage")) == ["🔍 Not found"]
    assert "no-such-workflow-9" in texts(slack)[-1]
    assert stored_watches(prefix) == [] and rkeys(prefix, "watch*") == []
    slack.check_payloads(allowed_mentions=(ALICE,))


async def test_watch_runs_in_memory_when_redis_is_down(slack: SlackMock, prefix: str, osmo: Sandbox) -> None:
    async with osmo_bot(slack, prefix, osmo, policy=POLICY, redis_url="redis://127.0.0.1:1/0") as h:
        await h.event(mention(f"watch {WORKFLOW} every 20s", "820.000100", channel=CHAN))
        await slack.wait_for(lambda s: count(s, "it is RUNNING") == 1, what="first observation")
        assert "every 20 s" in texts(slack)[0]
        set_workflow_status(osmo, WORKFLOW, "COMPLETED", exit_code=0)
        await h.settle()
    assert count(slack, "RUNNING -&gt; COMPLETED (final)") == 1
    assert all(p.body.get("thread_ts") == "820.000100" for p in slack.of("chat.postMessage"))
    slack.check_payloads(allowed_mentions=(ALICE,))


# -- units: cadence, settings ----------------------------------------------------------------------


def test_cadence_is_the_cores_scaled_and_floored() -> None:
    watches = Watches(None, None, None, None, backends=Backends(), report=None, scale=0.5, min_interval=5.0)  # type: ignore[arg-type]
    training = WatchState(workflow_id="w-1", kind="training", status="RUNNING")
    short = WatchState(workflow_id="w-1", kind="short", status="RUNNING")
    backed_off = training.model_copy(update={"unchanged_polls": 4})
    user = WatchState(workflow_id="w-1", status="RUNNING", user_cadence_s=1.0)
    assert [watches.interval(s) for s in (short, training, backed_off, user)] == [7.5, 15.0, 30.0, 2.5]
    assert parse_cadence("watch sdg-render-7 every 20s") == 20.0
    assert parse_cadence("watch sdg-render-7 every 2 minutes") == 120.0
    assert parse_cadence("watch sdg-render-7 interval=45") == 45.0
    assert parse_cadence("watch sdg-render-7") is None
    assert watch_id("T1", "C1", None, "w-1") == "T1:C1:cmd:w-1"


def test_watch_settings_from_env() -> None:
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "REDIS_URL": "redis://x", "SLACK_SIGNING_SECRET": "s"}
    default = Settings.from_env("http", env)
    assert (default.watch_scale, default.watch_min_interval) == (1.0, 5.0)
    tuned = Settings.from_env("http", {**env, "WD_WATCH_SCALE": "0.01", "WD_WATCH_MIN_INTERVAL": "10"})
    assert (tuned.watch_scale, tuned.watch_min_interval) == (0.01, 10.0)
    for bad in ("0", "-1", "fast", "nan"):
        with pytest.raises(SettingsError, match="WD_WATCH_SCALE"):
            Settings.from_env("http", {**env, "WD_WATCH_SCALE": bad})
