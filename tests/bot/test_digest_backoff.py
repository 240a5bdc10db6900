"""A scheduled digest whose post fails backs off (issue 24, "Stuck" §2): Slack answering ``not_in_channel`` to
every post, the slot is built again at a bounded rate (it was rebuilt on every tick: 636 list requests in 40 s
instead of 16), and ``digest status`` says it is failing, why, and when it is tried again. The real
:class:`DigestScheduler` and :class:`DigestDesk` on the sandbox and the Slack mock, Redis for the state."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta

from slack_sdk.web.async_client import AsyncWebClient

from bot.policy import Policy
from bot.scheduler import DigestScheduler
from bot.state import Store
from diagnosis.answer import Backends
from diagnosis.config import RunaiConfig
from handlers.digests import DigestDesk
from handlers.slack_surface import SlackSurface
from sandbox.server import Sandbox
from tests.handlers.test_slack_digest import ALICE, CHAN, FIXTURE
from tests.slack_mock import REDIS_URL, TOKEN, SlackMock

NOW = datetime(2026, 11, 28, 12, 0, 30, tzinfo=UTC)
POLICY = Policy.from_dict(
    {
        "access": [{"who": [ALICE], "clusters": ["*"], "projects": ["*"]}],
        "channels": {CHAN: {"cluster": "dgx-prod", "digests": [{"name": "daily", "cron": "0 12 * * *"}]}},
    }
)
#: the window watched, seconds, and the scheduler's tick in it
WINDOW, TICK = 3.0, 0.05


async def test_a_digest_whose_post_fails_backs_off_and_says_so_in_status(slack: SlackMock, prefix: str) -> None:
    slack.error_next("chat.postMessage", "not_in_channel", times=10_000)
    started = time.monotonic()
    with Sandbox(json.loads(FIXTURE.read_text())) as sandbox:
        backends = Backends(
            runai=RunaiConfig(sandbox.url, "sandbox", "sandbox", console_url=sandbox.url), now=lambda: NOW
        )
        store = Store(REDIS_URL, prefix=prefix)
        # the schedule ran yesterday (a new one would only start at its next slot: issue 27)
        yesterday = {"last_slot": "2026-11-27T12:00:00Z", "last_end": "2026-11-27T12:00:00Z"}
        await store.put_json(("digeststate", "T0TEAM001", CHAN, "daily"), yesterday, 3600)
        desk = DigestDesk(backends, POLICY, store=store)
        client = AsyncWebClient(token=TOKEN, base_url=slack.api_url)
        scheduler = DigestScheduler(
            desk,
            store,
            POLICY.schedules(),
            lambda channel: SlackSurface(client, channel),
            team="T0TEAM001",
            tick=TICK,
            # the scheduler's clock runs from NOW at the pace of the wall clock
            clock=lambda: NOW + timedelta(seconds=time.monotonic() - started),
            retry_first=0.5,
            retry_max=1.0,
        )
        runner = asyncio.create_task(scheduler.run_forever())
        await asyncio.sleep(WINDOW)
        runner.cancel()
        await scheduler.stop()
        lists = [r for r in sandbox.requests if r.path == "/api/v1/workloads"]
        states = {s.name: await scheduler.state(s) for s in scheduler.schedules if s.channel == CHAN}
        await store.close()
    posts = [c for c in slack.calls if c.method == "chat.postMessage"]
    # tried at about 0, 0.5, 1.5 and 2.5 s (0.5 s doubling to at most 1 s): 60 ticks in the window
    assert 2 <= len(posts) <= 5, f"{len(posts)} posts tried in {WINDOW} s"
    # a build cut off by the end of the window has listed but not posted: only those before the last post count
    built = [r for r in lists if r.started < posts[-1].at]
    per_build = len(built) / len(posts)
    assert per_build == int(per_build) and len(lists) < (len(posts) + 1) * per_build, (
        len(built),
        len(lists),
        len(posts),
    )
    failure = states["daily"]["failure"]
    assert failure["error"] == "not_in_channel" and failure["attempts"] == len(posts)
    status = desk.status_message(CHAN, states).text
    assert "failing" in status and "not_in_channel" in status and "tried again at" in status, status
