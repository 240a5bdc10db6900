"""The job queue between the ack tier and the workers (issue 26 §1), in one process: an ack-only bot and a worker
bot built by ``build_bot`` on one real Redis, each with its own bot token so the mock Slack tells who posted.

- a question acked by the ack tier is answered once, by a worker, Slack's retries of it included;
- a job redelivered after its answer was posted answers nothing;
- a job whose event claim is held (its holder died mid-answer) is tried again and answered once, in place;
- a full queue tells the asker privately that the bot is busy; nothing is dropped silently;
- one process (``serve``: the ack tier and an in-process worker) answers through the queue too.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
import pytest
from saq import Worker
from saq.job import Status

import bot.app as bot_app
import bot.jobs
from bot.app import Bot, Role, build_bot, http_app
from bot.cli_app import backends_for
from bot.jobs import FUNCTION, RequestQueue
from bot.settings import Settings, SettingsError
from handlers.shedding import BUSY
from tests.paths import TESTS
from tests.slack_mock import REDIS_URL, SECRET, Harness, SlackMock, event_body, mention

SNAPSHOT = TESTS / "fixtures" / "cases" / "runai" / "missing-cluster.json"
BARE = "C0BARE001"  # no channel defaults: the question gets a follow-up in its thread (an answer)
QUESTION = "why did asr-conformer fail in project speech?"


def settings_for(slack: SlackMock, prefix: str, token: str, **kw: Any) -> Settings:
    return Settings(
        bot_token=token,
        signing_secret=SECRET,
        redis_url=REDIS_URL,
        api_url=slack.api_url,
        key_prefix=prefix,
        rate_limit=1000,
        job_queue=True,
        job_heartbeat=kw.pop("job_heartbeat", 2.0),
        event_lease=kw.pop("event_lease", 30.0),
        **kw,
    )


@asynccontextmanager
async def queued(
    slack: SlackMock, prefix: str, roles: tuple[Role, ...] = ("ack", "worker"), **kw: Any
) -> AsyncIterator[tuple[Harness, list[Bot]]]:
    """Bots of ``roles`` on one Redis prefix (the first one Slack talks to), started; closed at the end."""
    async with AsyncExitStack() as stack:
        bots: list[Bot] = []
        for role in roles:
            backends, _ = stack.enter_context(backends_for(str(SNAPSHOT)))
            made = build_bot(settings_for(slack, prefix, f"xoxb-{role}", **kw), backends, role=role)
            await made.start()
            stack.push_async_callback(made.close, 30)
            bots.append(made)
        http = await stack.enter_async_context(
            httpx.AsyncClient(transport=httpx.ASGITransport(app=http_app(bots[0])), base_url="http://bot")
        )
        yield Harness(slack, bots[0], http), bots


async def done(queue: Any, limit: float = 20.0) -> None:
    """Until no job of ``queue`` is queued or running."""
    for _ in range(int(limit / 0.05)):
        if await queue.count("incomplete") == 0:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("jobs still incomplete")


def replies_in(slack: SlackMock, thread: str) -> list[Any]:
    return [c for c in slack.of("chat.postMessage") if c.body.get("thread_ts") == thread]


def posted_by(slack: SlackMock) -> set[str]:
    return {c.headers.get("authorization", "") for c in slack.posted() if c.method != "webhook"}


async def test_a_question_acked_by_the_ack_tier_is_answered_once_by_a_worker(slack: SlackMock, prefix: str) -> None:
    async with queued(slack, prefix) as (h, (ack, worker)):
        assert ack.worker is None and worker.worker is not None and worker.worker.running
        body = event_body(mention(QUESTION, "500.000001", channel=BARE), "EvQ1")
        for retry in range(3):  # the delivery and Slack's retries of it
            headers = {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"} if retry else {}
            response = await h.send(body, "application/json", headers)
            assert response.status_code == 200
        await slack.wait_for(lambda s: len(replies_in(s, "500.000001")) >= 1, what="the answer")
        await asyncio.sleep(1.0)  # a second answer would come meanwhile
        assert len(replies_in(slack, "500.000001")) == 1
        assert posted_by(slack) == {"Bearer xoxb-worker"}, "the ack tier answers nothing itself"
        assert await ack.queue.queue.count("incomplete") == 0  # type: ignore[union-attr]


async def test_a_job_redelivered_after_its_answer_was_posted_answers_nothing(slack: SlackMock, prefix: str) -> None:
    async with queued(slack, prefix) as (h, (_, worker)):
        body = event_body(mention(QUESTION, "500.000002", channel=BARE), "EvQ2")
        await h.send(body, "application/json")
        queue = worker.queue.queue  # type: ignore[union-attr]
        await slack.wait_for(lambda s: bool(s.of("chat.update")), what="the answer in place of its progress line")
        await done(queue)
        calls = len(slack.calls)
        again = await queue.enqueue(FUNCTION, key=f"{prefix}redelivered", body=json.loads(body), timeout=60)
        assert again is not None
        await again.refresh(until_complete=20)
        assert again.status == "complete"
        assert slack.calls[calls:] == [], "the redelivered job said nothing"


async def test_a_held_claim_is_tried_again_and_answered_once_in_place(
    slack: SlackMock, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bot.jobs, "RETRY_DELAY", 0.3)
    async with queued(slack, prefix, event_lease=1.5) as (h, (_, worker)):
        thread = "500.000003"
        name = f"app_mention:{BARE}:{thread}"
        # a worker took the event, posted "Diagnosing…" and was killed: its claim is held until its lease expires
        dead = await worker.store.claim_event(name, "dead-worker", 1.5)
        stale = await slack_post(slack, thread)
        assert await worker.store.note_event(
            name, "dead-worker", dead.token, {"done": False, "channel": BARE, "ts": stale, "thread": thread}
        )
        await h.send(event_body(mention(QUESTION, thread, channel=BARE), "EvQ3"), "application/json")
        await slack.wait_for(lambda s: any(c.body.get("ts") == stale for c in s.of("chat.update")), what="takeover")
        await asyncio.sleep(0.5)
        assert len(replies_in(slack, thread)) == 1, "the dead worker's message is updated, not posted again"


async def slack_post(slack: SlackMock, thread: str) -> str:
    """A "Diagnosing…" message in ``thread``, as the dead worker posted it; its ts."""
    async with httpx.AsyncClient() as client:
        got = await client.post(
            slack.api_url + "chat.postMessage",
            json={"channel": BARE, "thread_ts": thread, "text": "Diagnosing…"},
            headers={"Authorization": "Bearer xoxb-dead"},
        )
    return str(got.json()["ts"])


async def test_a_full_queue_tells_the_asker_the_bot_is_busy(slack: SlackMock, prefix: str) -> None:
    async with queued(slack, prefix, roles=("ack",), queue_max=1) as (h, _):
        await h.command(f"{QUESTION} cluster=dgx-prod", user="U0FIRST01")
        await h.command(f"{QUESTION} cluster=dgx-prod", user="U0SECOND1")
        await slack.wait_for(lambda s: any(BUSY in json.dumps(c.body) for c in s.of("webhook")), what="busy")
        busy = [c for c in slack.of("webhook") if BUSY in json.dumps(c.body)]
        assert len(busy) == 1 and busy[0].body.get("response_type") == "ephemeral"


async def test_serve_alone_is_the_ack_tier_and_a_worker_in_one_process(slack: SlackMock, prefix: str) -> None:
    async with queued(slack, prefix, roles=("all",)) as (h, (one,)):
        assert one.queue is not None and one.worker is not None
        await h.send(event_body(mention(QUESTION, "500.000004", channel=BARE), "EvQ4"), "application/json")
        await slack.wait_for(lambda s: len(replies_in(s, "500.000004")) >= 1, what="the answer")


async def test_the_sweep_leaves_alone_a_job_that_finished_since_it_looked(prefix: str) -> None:
    """SAQ's sweep works from a snapshot: a job it saw running without a heartbeat may have finished by the time it
    aborts and retries it. Read again, it is left alone: never run (and answered) twice."""
    requests = RequestQueue(REDIS_URL, prefix=prefix)
    queue = requests.queue
    try:
        assert await queue.enqueue(FUNCTION, key=f"{prefix}seen-stuck", body={}, heartbeat=1) is not None
        job = await queue.dequeue(timeout=5)  # a worker took it
        assert job is not None and job.key == f"{prefix}seen-stuck"
        seen = dataclasses.replace(job, status=Status.ACTIVE, touched=1)  # the sweep's snapshot: stuck
        await queue.finish(job, Status.COMPLETE)  # finished meanwhile
        await queue.abort(seen, queue.swept_error_message)
        await queue.retry(seen, queue.swept_error_message)
        stored = await queue.job(f"{prefix}seen-stuck")
        assert stored is not None and stored.status == Status.COMPLETE
        assert await queue.count("queued") == 0 and await queue.count("incomplete") == 0
    finally:
        await requests.close()


async def test_a_job_stuck_just_after_a_sweep_is_swept_by_the_next_one_not_a_minute_later(prefix: str) -> None:
    """SAQ's sweep locks the next one out for 60 s: a worker killed just after a sweep had its jobs taken over a
    minute later. Here the next sweep (the workers' sweep timer, half a heartbeat) takes them."""
    requests = RequestQueue(REDIS_URL, prefix=prefix, heartbeat=2.0)
    queue = requests.queue
    try:
        assert queue.sweep_every == 1
        assert await queue.sweep() == []  # a sweep just ran: nothing was stuck
        job = await queue.enqueue(FUNCTION, key=f"{prefix}dead-worker", body={}, heartbeat=1, retries=3)
        assert job is not None
        taken = await queue.dequeue(timeout=5)
        assert taken is not None and taken.key == f"{prefix}dead-worker"
        await taken.update(status=Status.ACTIVE, started=1, touched=1)  # its worker died long ago: no heartbeat
        await asyncio.sleep(queue.sweep_every + 0.1)
        assert await queue.sweep() == [taken.id]
        stored = await queue.job(f"{prefix}dead-worker")
        assert stored is not None and stored.status == Status.QUEUED  # given back, to be tried again
    finally:
        await requests.close()


async def test_no_sweep_runs_beside_another_and_a_job_being_marked_running_is_left_alone(prefix: str) -> None:
    """A sweep holds a running mark: another worker's sweep meanwhile does nothing (its older snapshot could abort a
    job the first gave back). A job taken from the queue whose worker marks it running within the grace (a busy
    loop) is not swept."""
    requests = RequestQueue(REDIS_URL, prefix=prefix, heartbeat=2.0)
    queue = requests.queue
    try:
        assert await queue.enqueue(FUNCTION, key=f"{prefix}being-taken", body={}, heartbeat=10, retries=3) is not None
        taken = await queue.dequeue(timeout=5)  # in the running list, not yet marked running
        assert taken is not None
        mark = f"{queue._sweep}:running"
        await queue.redis.set(mark, "another-worker", ex=60)
        assert await queue.sweep() == []  # another worker is sweeping
        await queue.redis.delete(mark)

        async def marked_late() -> None:
            await asyncio.sleep(0.3)
            # what SAQ's worker does once its loop gets to it
            await taken.update(status=Status.ACTIVE, started=int(time.time() * 1000))

        late = asyncio.create_task(marked_late())
        await queue.sweep()
        await late
        stored = await queue.job(f"{prefix}being-taken")
        assert stored is not None and stored.status == Status.ACTIVE  # left alone: its worker is alive
        assert await queue.count("queued") == 0 and await queue.redis.exists(mark) == 0
    finally:
        await requests.close()


async def test_a_sweep_renews_its_mark_and_a_killed_sweepers_mark_outlives_it_briefly(
    prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep's running mark lives two sweep periods and is renewed while the sweep runs: a long sweep keeps it, and
    a worker killed mid-sweep (no renewal after it) holds the next sweeps off that long, never a minute (its jobs
    waited 60 s to be taken over: the three-process test timed out under load)."""
    requests = RequestQueue(REDIS_URL, prefix=prefix, heartbeat=2.0)
    queue = requests.queue
    release = asyncio.Event()

    async def long_sweep(self: Any, lock: int = 60, abort: float = 5) -> list[str]:
        await release.wait()
        return []

    monkeypatch.setattr(bot.jobs.RedisQueue, "sweep", long_sweep)
    mark = f"{queue._sweep}:running"
    try:
        assert queue.mark_ttl == 2
        sweeping = asyncio.create_task(queue.sweep())
        for _ in range(4):  # three lives of the mark: renewed, and never for longer than one
            await asyncio.sleep(queue.mark_ttl / 2)
            assert 0 < await queue.redis.pttl(mark) <= queue.mark_ttl * 1000
        assert await queue.sweep() == []  # another sweep meanwhile does nothing
        release.set()
        assert await sweeping == [] and await queue.redis.exists(mark) == 0
    finally:
        release.set()
        await requests.close()


async def test_a_burst_is_dealt_out_to_the_workers_in_turn(prefix: str) -> None:
    """Each worker has a poller per slot blocked in Redis, which serves them first come, first served: the worker
    whose pollers blocked first took a whole burst (or its first 32 jobs of 50). A few pollers per worker at a time
    (bot.jobs.TAKERS) deal a burst out in turn."""
    took: list[str] = []
    release = asyncio.Event()

    async def answer_request(ctx: Any, **_: Any) -> None:
        took.append(str(ctx["worker_id"]))
        await release.wait()  # every job holds its slot: who took what is decided by the dequeues alone

    queues = [RequestQueue(REDIS_URL, prefix=prefix) for _ in range(2)]
    workers = [
        Worker(
            q.queue,
            functions=[(FUNCTION, answer_request)],
            concurrency=4 * bot.jobs.TAKERS,  # room for the whole burst in either worker
            id=f"w{i}",
            shutdown_grace_period_s=0,
        )
        for i, q in enumerate(queues)
    ]
    for w in workers:
        w.SIGNALS = []
        w.context["worker_id"] = w.id
    tasks = [asyncio.create_task(w.start()) for w in workers]
    try:
        await asyncio.sleep(0.5)  # every poller of both workers is waiting
        for i in range(2 * bot.jobs.TAKERS):
            await queues[0].queue.enqueue(FUNCTION, key=f"{prefix}burst-{i}", body={})
        for _ in range(100):
            if len(took) == 2 * bot.jobs.TAKERS:
                break
            await asyncio.sleep(0.05)
        assert len(took) == 2 * bot.jobs.TAKERS
        # in turn, a few at a time: neither takes the whole burst (SAQ's way: all 2 * TAKERS to the first)
        assert min(took.count(w.id) for w in workers) >= bot.jobs.TAKERS // 2, took
    finally:
        release.set()
        for w in workers:
            await w.stop()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for q in queues:
            await q.close()


async def test_a_queued_request_keeps_no_credential_a_person_typed(prefix: str) -> None:
    """The request waits in Redis until a worker answers it: its typed text is redacted like a kept question's."""
    secret = "xoxb-123456789012-123456789012-AbCdEfGhIjKlMnOpQrStUvWx"
    requests = RequestQueue(REDIS_URL, prefix=prefix)
    try:
        body = json.loads(event_body(mention(f"{QUESTION} token {secret}", "500.000009", channel=BARE), "EvQ9"))
        assert await requests.submit(body)
        job = await requests.queue.job(requests.job_key(f"app_mention:{BARE}:500.000009"))
        assert job is not None and job.kwargs is not None
        kept = json.dumps(job.kwargs["body"])
        assert secret not in kept and "asr-conformer" in kept and job.kwargs["body"]["event_id"] == "EvQ9"
    finally:
        await requests.close()


def test_an_ack_or_worker_role_without_the_queue_is_one_clear_line(slack: SlackMock, prefix: str) -> None:
    plain = Settings(bot_token="xoxb-1", signing_secret=SECRET, redis_url=REDIS_URL, key_prefix=prefix)
    with backends_for(str(SNAPSHOT)) as (backends, _), pytest.raises(SettingsError, match="WD_JOB_QUEUE=true"):
        build_bot(plain, backends, role="worker")
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "REDIS_URL": REDIS_URL}
    with pytest.raises(SettingsError, match="WD_JOB_QUEUE=true"):
        Settings.from_env("worker", env)
    assert Settings.from_env("worker", {**env, "WD_JOB_QUEUE": "true"}).job_queue


@pytest.mark.parametrize(("role", "loads"), [("ack", False), ("worker", True), ("all", True)])
def test_a_process_that_answers_loads_the_word_list_before_its_first_question(
    slack: SlackMock, prefix: str, monkeypatch: pytest.MonkeyPatch, role: Role, loads: bool
) -> None:
    """Loading it inside the first question held the worker's event loop, and every question in flight, for a few
    tenths of a second; the ack tier parses no question and does without it."""
    loaded: list[bool] = []
    monkeypatch.setattr(bot_app, "load_words", lambda: loaded.append(True))
    with backends_for(str(SNAPSHOT)) as (backends, _):
        build_bot(settings_for(slack, prefix, "xoxb-1"), backends, role=role)
    assert loaded == ([True] if loads else [])
