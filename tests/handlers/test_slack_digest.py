"""Digests in Slack (issue 12): ``/diagnose digest`` through the real AsyncApp (signed requests, mock Web API,
real Redis), the buttons, and scheduled digests posted exactly once by several schedulers on one Redis."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from bot.app import build_bot, http_app
from bot.policy import DigestSchedule, Policy
from bot.scheduler import DigestScheduler
from bot.settings import Settings
from bot.state import Store
from diagnosis.answer import Backends
from diagnosis.config import RunaiConfig
from diagnosis.digests import Digest, DigestAsk, build_digest
from handlers.card import CARD_MAX_CHARS, text_chars
from handlers.digests import DigestDesk, _links
from handlers.slack_surface import SlackSurface
from sandbox.server import Sandbox
from tests.paths import TESTS
from tests.slack_mock import REDIS_URL, SECRET, TOKEN, Harness, SlackMock, buttons_of

FIXTURE = TESTS / "fixtures" / "cases" / "digest" / "digest-runai-24h.json"
ALICE = "U0ALICE01"
MALLORY = "U0MALLORY"
CHAN = "C0CHAN001"
POLICY = Policy.from_dict(
    {
        "groups": {"ml": [ALICE]},
        "access": [
            {"who": ["@ml"], "clusters": ["*"], "projects": ["*"]},
            {"who": [MALLORY], "clusters": ["*"], "projects": ["speech"]},
        ],
        "channels": {CHAN: {"cluster": "dgx-prod"}},
    }
)


@contextlib.asynccontextmanager
async def digest_bot(slack: SlackMock, prefix: str) -> AsyncIterator[tuple[Harness, Sandbox]]:
    snapshot = json.loads(FIXTURE.read_text())
    with Sandbox(snapshot) as sandbox:
        now = datetime(2026, 11, 28, 12, tzinfo=UTC)
        backends = Backends(
            runai=RunaiConfig(sandbox.url, "sandbox", "sandbox", console_url=sandbox.url), now=lambda: now
        )
        settings = Settings(
            bot_token=TOKEN, signing_secret=SECRET, redis_url=REDIS_URL, api_url=slack.api_url, key_prefix=prefix
        )
        bot = build_bot(settings, backends, policy=POLICY)
        app = http_app(bot)
        async with app.router.lifespan_context(app):
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bot") as http:
                yield Harness(slack, bot, http), sandbox


def roots(slack: SlackMock) -> list[Any]:
    return [c for c in slack.of("chat.postMessage") if not c.body.get("thread_ts")]


async def test_an_on_demand_digest_posts_the_summary_and_its_rows_in_the_thread(slack: SlackMock, prefix: str) -> None:
    async with digest_bot(slack, prefix) as (h, _):
        resp = await h.command("digest 24h", user=ALICE, channel=CHAN)
        assert resp.status_code == 200
        await h.settle()
    (root,) = roots(slack)
    text = json.dumps(root.body["blocks"])
    assert "18" in root.body["text"] and "OOM killed" in text and "gpt-distill-4" in text
    assert "5 OOM killed" in root.body["text"]
    rows = [c for c in slack.of("chat.postMessage") if c.body.get("thread_ts")]
    assert rows and "kws-train" in json.dumps([r.body for r in rows])
    # verdicts in words, never codes (issue 27), in the message, its notification text and its thread
    for body in [root.body, *(r.body for r in rows)]:
        assert not re.search(r"\b(OOM_KILLED|SCHEDULING_POLICY_TERMINATED|CRASH_APP_ERROR)\b", json.dumps(body))
    assert text_chars(root.body["blocks"]) <= CARD_MAX_CHARS
    everything = slack.texts()
    assert "staging-llama-ft" not in everything and "staging-smoke-test" not in everything


async def test_an_on_demand_digest_shows_only_what_the_asker_may_see(slack: SlackMock, prefix: str) -> None:
    async with digest_bot(slack, prefix) as (h, _):
        await h.command("digest 24h", user=MALLORY, channel=CHAN)
        await h.settle()
    everything = slack.texts()
    assert "kws-train" in everything  # speech
    assert "llama-sft-12" not in everything and "vit-huge-ft" not in everything  # nlp, vision


async def test_refresh_updates_the_same_message(slack: SlackMock, prefix: str) -> None:
    async with digest_bot(slack, prefix) as (h, _):
        await h.command("digest 24h", user=ALICE, channel=CHAN)
        await h.settle()
        (root,) = roots(slack)
        ts = "1764000000.000001"
        message = {"ts": ts, "blocks": root.body["blocks"], "text": root.body["text"]}
        refresh = next(b for b in buttons_of(root.body["blocks"]) if b["action_id"] == "wd_digest_refresh")
        await h.click(refresh, message, user=ALICE, channel=CHAN)
        await h.settle()
    (update,) = slack.of("chat.update")
    assert update.body["ts"] == ts and "18" in update.body["text"]
    assert len(roots(slack)) == 1


async def test_digest_status_lists_the_schedules_privately(slack: SlackMock, prefix: str) -> None:
    async with digest_bot(slack, prefix) as (h, _):
        await h.command("digest status", user=ALICE, channel=CHAN)
        await h.settle()
    assert roots(slack) == []
    assert "no scheduled digest" in slack.texts()


# -- scheduled digests: exactly once ------------------------------------------------------------------------


class FakeDesk(DigestDesk):
    """The real desk posting real Slack calls, with a digest built from a fixed list (no control plane)."""

    def __init__(self, stall: float = 0.0) -> None:
        super().__init__(Backends(), POLICY, digest_fn=self._digest)
        self.windows: list[tuple[datetime, datetime]] = []
        self.stall = stall

    async def _digest(self, ask: DigestAsk, backends: Backends, *, start: Any = None, end: Any = None) -> Digest:
        assert start is not None and end is not None
        self.windows.append((start, end))
        if self.stall:
            await asyncio.sleep(self.stall)
        return build_digest([], start=start, end=end, since="1d")


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


SCHEDULE = DigestSchedule(channel=CHAN, name="every-minute", cron="* * * * *", max_window=3600)
T0 = datetime(2026, 11, 28, 9, 0, 30, tzinfo=UTC)


def schedulers(slack: SlackMock, prefix: str, clock: Clock, n: int = 3, **kw: Any) -> list[DigestScheduler]:
    from slack_sdk.web.async_client import AsyncWebClient

    client = AsyncWebClient(token=TOKEN, base_url=slack.api_url)
    out = []
    for i in range(n):
        desk = kw.pop("desk", None) or FakeDesk()
        out.append(
            DigestScheduler(
                desk,
                Store(REDIS_URL, prefix=prefix),
                [SCHEDULE],
                lambda channel: SlackSurface(client, channel),
                team="T0TEAM001",
                owner=f"replica-{i}",
                lease_ttl=kw.get("lease_ttl", 5.0),
                clock=clock,
            )
        )
    return out


async def settle(replicas: list[DigestScheduler]) -> None:
    for r in replicas:
        for task in list(r.running.values()):
            with contextlib.suppress(Exception):
                await task


async def started(replicas: list[DigestScheduler], clock: Clock) -> None:
    """The schedule as it was a slot before ``clock``: a new schedule starts without a post (issue 27)."""
    at = clock.at
    clock.at = at - timedelta(minutes=1)
    await asyncio.gather(*(r.tick_once() for r in replicas))
    await settle(replicas)
    clock.at = at


async def test_three_replicas_post_each_of_twenty_slots_exactly_once(slack: SlackMock, prefix: str) -> None:
    clock = Clock(T0)
    replicas = schedulers(slack, prefix, clock)
    await started(replicas, clock)
    for minute in range(20):
        clock.at = T0 + timedelta(minutes=minute)
        await asyncio.gather(*(r.tick_once() for r in replicas))
        await settle(replicas)
    keys = [c.body.get("metadata") for c in roots(slack)]
    assert len(keys) == 20
    assert len({json.dumps(k, sort_keys=True) for k in keys}) == 20
    assert sum(r.runs for r in replicas) == 20


async def test_a_replica_that_died_after_posting_and_before_recording_is_adopted(slack: SlackMock, prefix: str) -> None:
    clock = Clock(T0)
    first, second = schedulers(slack, prefix, clock, n=2)
    await started([first], clock)
    real_put = first.store.fenced_put

    async def die_before_recording(*args: Any, **kw: Any) -> bool:
        value = args[4]
        if value.get("posting") is None:  # the final "done" write
            raise RuntimeError("the process is gone")
        return bool(await real_put(*args, **kw))

    first.store.fenced_put = die_before_recording  # type: ignore[method-assign]
    await first.tick_once()
    await settle([first])
    assert len(roots(slack)) == 1
    await first.store.release(first._name(SCHEDULE), first.owner)  # its lease expires
    await second.tick_once()
    await settle([second])
    assert len(roots(slack)) == 1, "the successor adopted the message instead of posting again"
    assert second.runs == 1
    assert slack.of("conversations.history")


async def test_a_replica_stalled_past_its_lease_does_not_post(slack: SlackMock, prefix: str) -> None:
    clock = Clock(T0)
    stalled = schedulers(slack, prefix, clock, n=1, desk=FakeDesk(stall=1.5), lease_ttl=0.6)[0]
    healthy = schedulers(slack, prefix, clock, n=1, lease_ttl=0.6)[0]
    healthy.owner = "replica-healthy"
    stalled.lease_ttl = 0.6

    async def never_renew(*args: Any, **kw: Any) -> int:
        return 0  # the stalled replica cannot renew (it is frozen), so its lease lapses

    slow = asyncio.create_task(stalled.run_slot(SCHEDULE, T0.replace(second=0)))
    await asyncio.sleep(0.1)
    stalled.store.lease = never_renew  # type: ignore[method-assign]
    await asyncio.sleep(0.8)  # past the lease
    await healthy.tick_once()
    await settle([healthy])
    await slow
    assert len(roots(slack)) == 1


async def test_after_a_full_outage_one_catch_up_digest_covers_the_missed_time(slack: SlackMock, prefix: str) -> None:
    clock = Clock(T0)
    desk = FakeDesk()
    (replica,) = schedulers(slack, prefix, clock, n=1, desk=desk)
    await started([replica], clock)
    await replica.tick_once()
    await settle([replica])
    clock.at = T0 + timedelta(minutes=7)  # seven slots missed while nothing ran
    await replica.tick_once()
    await settle([replica])
    assert len(roots(slack)) == 2
    start, end = desk.windows[-1]
    assert end - start == timedelta(minutes=7)


async def test_a_second_digest_reuses_cached_rows_and_marks_families_seen_before(slack: SlackMock, prefix: str) -> None:
    async with digest_bot(slack, prefix) as (h, sandbox):
        await h.command("digest 24h", user=ALICE, channel=CHAN)
        await h.settle()
        first = len(sandbox.requests)
        await h.command("digest 24h", user=ALICE, channel=CHAN)
        await h.settle()
        second = len(sandbox.requests) - first
    assert second < first / 3, (first, second)  # only the listing: every row came from the Redis cache
    one, two = roots(slack)
    assert "18 new, 0 seen before" in json.dumps(one.body["blocks"])
    assert "0 new, 18 seen before" in json.dumps(two.body["blocks"])


async def test_refresh_pressed_on_another_replica_updates_the_same_message(slack: SlackMock, prefix: str) -> None:
    async with digest_bot(slack, prefix) as (first, _), digest_bot(slack, prefix) as (second, _):
        await first.command("digest 24h", user=ALICE, channel=CHAN)
        await first.settle()
        (root,) = roots(slack)
        message = {"ts": "1764000000.000001", "blocks": root.body["blocks"], "text": root.body["text"]}
        refresh = next(b for b in buttons_of(root.body["blocks"]) if b["action_id"] == "wd_digest_refresh")
        await second.click(refresh, message, user=ALICE, channel=CHAN)
        await second.settle()
    (update,) = slack.of("chat.update")
    assert update.body["ts"] == "1764000000.000001"
    assert json.dumps(update.body["blocks"]).count("OOM_KILLED") == json.dumps(root.body["blocks"]).count("OOM_KILLED")


# -- issue 27: status from the saved state, a new or changed schedule starts at its next slot -------------------


def _status_policy(cron: str = "* * * * *") -> Policy:
    return Policy.from_dict(
        {
            "groups": {"ml": [ALICE]},
            "access": [{"who": ["@ml"], "clusters": ["*"], "projects": ["*"]}],
            "channels": {CHAN: {"digests": [{"name": "every-minute", "cron": cron, "max_window": "1h"}]}},
        }
    )


async def test_digest_status_shows_the_last_digest_posted_with_a_link_and_the_next_slot(
    slack: SlackMock, prefix: str
) -> None:
    from slack_sdk.web.async_client import AsyncWebClient

    clock = Clock(T0)
    (replica,) = schedulers(slack, prefix, clock, n=1)
    await started([replica], clock)
    desk = DigestDesk(Backends(now=lambda: T0), _status_policy(), store=replica.store)
    states = await desk.schedule_states(str(replica.team), CHAN)
    assert "last posted never" in desk.status_message(CHAN, states).text
    await replica.tick_once()
    await settle([replica])
    assert len(roots(slack)) == 1
    states = await desk.schedule_states(str(replica.team), CHAN)
    surface = SlackSurface(AsyncWebClient(token=TOKEN, base_url=slack.api_url), CHAN)
    status = desk.status_message(CHAN, states, await _links(surface, states)).text
    ts = str(states["every-minute"]["last_posted"]["ts"])
    when = datetime.fromtimestamp(float(ts), tz=UTC)
    assert f"last posted {when:%Y-%m-%d %H:%M} UTC (<" in status, status
    assert f"/archives/{CHAN}/p{ts.replace('.', '')}|open>" in status, status
    assert "next 2026-11-28 09:01 UTC" in status and "`* * * * *` (UTC)" in status, status
    assert "never" not in status


async def test_a_new_schedule_posts_at_its_next_slot_covering_one_period_not_days(
    slack: SlackMock, prefix: str
) -> None:
    clock = Clock(T0)
    desk = FakeDesk()
    (replica,) = schedulers(slack, prefix, clock, n=1, desk=desk)
    await replica.tick_once()  # the schedule is new: its due slot (09:00) is not posted
    await settle([replica])
    assert roots(slack) == [] and desk.windows == []
    clock.at = T0 + timedelta(minutes=1)
    await replica.tick_once()
    await settle([replica])
    assert len(roots(slack)) == 1
    assert desk.windows == [(T0.replace(second=0), T0.replace(second=0) + timedelta(minutes=1))]


async def test_a_changed_schedule_starts_again_at_its_next_slot_and_an_outage_is_covered_once(
    slack: SlackMock, prefix: str
) -> None:
    clock = Clock(T0)
    desk = FakeDesk()
    (replica,) = schedulers(slack, prefix, clock, n=1, desk=desk)
    await started([replica], clock)
    await replica.tick_once()
    await settle([replica])
    assert len(roots(slack)) == 1
    # the cron changes to every 5 minutes: nothing is posted at once, the next slot (09:05) is
    replica.schedules = [DigestSchedule(channel=CHAN, name="every-minute", cron="*/5 * * * *", max_window=3600)]
    clock.at = T0 + timedelta(minutes=2)
    await replica.tick_once()
    await settle([replica])
    assert len(roots(slack)) == 1
    clock.at = T0 + timedelta(minutes=5)
    await replica.tick_once()
    await settle([replica])
    assert len(roots(slack)) == 2
    assert desk.windows[-1] == (T0.replace(second=0), T0.replace(second=0) + timedelta(minutes=5))
    # an outage: three slots missed, one digest covers them once
    clock.at = T0 + timedelta(minutes=21)
    await replica.tick_once()
    await settle([replica])
    clock.at = T0 + timedelta(minutes=22)
    await replica.tick_once()
    await settle([replica])
    assert len(roots(slack)) == 3
    assert desk.windows[-1] == (
        T0.replace(second=0) + timedelta(minutes=5),
        T0.replace(second=0) + timedelta(minutes=20),
    )
