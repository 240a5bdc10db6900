"""Scale out on a job queue (issue 26 §1): the Slack-facing process verifies, acks and enqueues; workers answer.

The queue is SAQ on the bot's Redis (docs/architecture.md says why: acknowledged delivery, a dead worker's job
taken over by its heartbeat and the sweep, job timeouts and retries, asyncio-native, maintained). One job per
Slack request, ``answer_request(body=...)``: the request exactly as Slack sent it (its signature was checked by
the ack tier). A worker answers it by dispatching the body through its own Bolt app, as Socket Mode requests are
dispatched, so every middleware and listener runs as in one process, the event claim first:

* **Ack tier** (:class:`handlers.shedding.HandOver`): the listener acks, and the work it would start is handed to
  :meth:`RequestQueue.submit` instead. The job's key is the request's claim name, so Slack's retries of one event
  (to any ack replica) make one job while it is queued, running or recently done. A full queue
  (``WD_QUEUE_MAX``) is told privately ("busy, try again in a minute"), never dropped silently.
* **Worker** (:class:`RequestWorker`): the event's claim (:mod:`handlers.claims`) decides, with its fenced
  *answered* record: done, the job ends (a job redelivered after its answer was posted answers nothing); held by
  another holder, the job fails and SAQ tries it again later (a worker killed mid-answer holds its claim until the
  claim's lease expires: the retry then takes over, updating the dead worker's "Diagnosing…" message in place);
  ours, the answer is worked on, and the job lasts until the request's work ends, beating its heartbeat meanwhile
  (a job whose heartbeat stops is swept and retried: SIGKILL loses nothing).

What the listener said in its ack (a refusal, "busy" for a slash command) has no ack to ride on in a worker: it is
told through the request's ``response_url``.

Metrics: ``workload_doctor_queue_depth`` (requests waiting), ``workload_doctor_job_seconds`` (enqueue to answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from typing import Any, cast

from redis.exceptions import RedisError
from saq import Worker
from saq.job import TERMINAL_STATUSES, Job, Status
from saq.queue.redis import RedisQueue
from saq.types import Context
from slack_bolt.async_app import AsyncApp, AsyncBoltRequest

from bot.state import typed_text_redacted
from diagnosis import metrics
from diagnosis.lease import new_owner
from handlers.middleware import claim_name, tell_privately
from handlers.shedding import DELIVERY, Delivery

log = logging.getLogger(__name__)
FUNCTION = "answer_request"
#: Seconds a job may run at most (a diagnosis has its own deadline, far shorter; a watch start returns at once).
JOB_TIMEOUT = 900
#: How many times a job is tried: a held claim is tried again every :data:`RETRY_DELAY` seconds until the dead
#: holder's lease (``WD_EVENT_LEASE``) expires.
JOB_RETRIES = 40
RETRY_DELAY = 3.0
#: Seconds a finished job's key is kept (Slack's retries of the event within it make no second job).
JOB_TTL = 3600


#: Pollers of one worker asking Redis for a job at once. One at a time deals a burst out most evenly but a busy
#: worker then asks again only as fast as its event loop gets to it (the last jobs of a burst waited ~1 s in Redis);
#: all of them (SAQ's way) let the first worker to ask take most of a burst. Four: even within 4, promptly (bench).
TAKERS = 4


#: Seconds the sweep gives a live worker to abort a job it finds stuck before retrying it elsewhere. SAQ waits
#: 5 s per stuck job, one job after another: a killed worker's ten jobs would wait 50 s to be taken over.
SWEEP_ABORT = 0.5
#: The least seconds a sweep's running mark lives unrenewed (no two sweeps at once). It lives two sweep periods and
#: is renewed while the sweep runs, so a worker killed mid-sweep holds the next sweeps off that long, not a minute
#: (its own jobs waited 60 s to be taken over under load: the three-process test's timeout).
SWEEP_RUNNING = 2
#: Seconds a job taken from the queue but not yet marked running (its worker's loop is busy) is given to be marked
#: before the sweep takes its worker for dead.
DEQUEUE_GRACE = 1.0
#: Deletes a key only when it still holds the value given (a mark outlived by its holder is not the next one's).
_DELETE_IF = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
#: Extends a key's expiry (ms) only while it still holds the value given.
_RENEW_IF = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"


class _Queue(RedisQueue):
    """SAQ's Redis queue, its sweep made safe for answers that must be posted once, and prompt.

    SAQ's sweep decides from a snapshot of the running jobs taken when it starts, and then aborts and retries them
    one after another, waiting for each: a job that finished (or beat its heartbeat) meanwhile was still retried,
    its finished record overwritten, and the request answered twice (seen with a loaded worker). Here a swept job
    is read again first and left alone when it is finished or alive; and the sweep waits :data:`SWEEP_ABORT`
    seconds per job, not 5.

    SAQ's sweep also locks every other sweep out for 60 s (its ``lock``), whatever the worker's sweep timer says:
    a worker killed just after a sweep had its jobs taken over only by the sweep a minute later, 70 to 85 s after
    the kill (the scale bench's 90 s wait lost one). Here the lock lasts :attr:`sweep_every` seconds, the workers'
    sweep timer, every few seconds; and a sweep holds a running mark (renewed, so it outlives a killed sweeper by
    :attr:`mark_ttl` at most) for as long as it runs, so a sweep that outlasts
    its lock (many stuck jobs, :data:`SWEEP_ABORT` each) never runs beside the next one (whose older snapshot could
    abort a job the first had given back). A job in the running list that its worker has not marked running yet (a
    busy event loop between the two) is given :data:`DEQUEUE_GRACE` seconds before it is swept."""

    #: seconds between sweeps (across every worker of the queue); :class:`RequestQueue` sets it from the heartbeat
    sweep_every: int = 60

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._taking = asyncio.Semaphore(TAKERS)

    async def dequeue(self, timeout: float = 0.0, poll_interval: float = 0.0) -> Job | None:  # noqa: ASYNC109 (SAQ's)
        """The next job, asked for by at most :data:`TAKERS` of this process's pollers at a time.

        SAQ's worker runs one poller per slot (``WD_WORKER_CONCURRENCY``), each blocked in Redis, which hands
        jobs to blocked pollers first come, first served: the worker whose pollers blocked first took the first
        32 jobs of a 50-question burst and the other worker 18 (the scale bench), and answered its share a third
        later than an even split would. With a few pollers of each worker blocked at a time, a worker that took
        jobs queues behind the others for more: a burst is dealt out in turn, a few jobs at a time (and a busy
        worker, slower to ask again, takes fewer)."""
        async with self._taking:
            return await super().dequeue(timeout, poll_interval)

    @property
    def mark_ttl(self) -> int:
        """Seconds the sweep's running mark lives unless renewed: two sweep periods, :data:`SWEEP_RUNNING` at least."""
        return max(SWEEP_RUNNING, 2 * self.sweep_every)

    async def sweep(self, lock: int = 60, abort: float = SWEEP_ABORT) -> list[str]:
        mark, holder = f"{self._sweep}:running", uuid.uuid4().hex
        if not await self.redis.set(mark, holder, nx=True, ex=self.mark_ttl):
            return []  # another worker is sweeping
        holding = asyncio.create_task(self._hold(mark, holder), name="sweep-mark")
        try:
            return await super().sweep(min(lock, self.sweep_every), min(abort, SWEEP_ABORT))
        finally:
            holding.cancel()
            await self.redis.eval(_DELETE_IF, 1, mark, holder)

    async def _hold(self, mark: str, holder: str) -> None:
        """Renews the running mark every third of its life while the sweep runs (a long sweep keeps it; a killed
        sweeper's mark expires within :attr:`mark_ttl`). A failed renewal is tried again at the next third."""
        ttl = self.mark_ttl
        while True:
            await asyncio.sleep(ttl / 3)
            try:
                await self.redis.eval(_RENEW_IF, 1, mark, holder, int(ttl * 1000))
            except RedisError as exc:
                log.warning("sweep mark not renewed (%s)", exc)

    async def _settled(self, job: Job, error: str | None) -> bool:
        """A job the sweep is about to abort or retry that finished, is alive or was given back by now (read
        again)."""
        if error != self.swept_error_message:
            return False
        stored = await self.job(job.key)
        if stored is not None and stored.status == Status.QUEUED:
            if await self.redis.lpos(self._active, job.id) is None:
                log.info("job %s is queued again since the sweep looked: left alone", job.key)
                return True
            await asyncio.sleep(DEQUEUE_GRACE)  # taken, not yet marked running: its worker's loop may be busy
            stored = await self.job(job.key)
        if stored is None:
            return False
        if stored.status in TERMINAL_STATUSES or (stored.status == Status.ACTIVE and not stored.stuck):
            log.info("job %s finished or is alive since the sweep looked: left alone", job.key)
            return True
        return False

    async def abort(self, job: Job, error: str, ttl: float = 5) -> None:
        if not await self._settled(job, error):
            await super().abort(job, error, ttl)

    async def retry(self, job: Job, error: str | None) -> None:
        if not await self._settled(job, error):
            await super().retry(job, error)

    async def finish(
        self, job: Job, status: Status, *, result: Any = None, error: str | None = None, **kw: Any
    ) -> None:
        if not (status == Status.ABORTED and await self._settled(job, error)):
            await super().finish(job, status, result=result, error=error, **kw)


class ClaimHeld(Exception):
    """The request's event claim is held by another holder: the job is tried again later."""


class RequestQueue:
    """The requests waiting for a worker (``handlers.protocols.Jobs``), in SAQ on ``url`` under ``prefix``."""

    def __init__(self, url: str, *, prefix: str = "wd:", max_depth: int = 1000, heartbeat: float = 10.0) -> None:
        self.queue = cast(_Queue, _Queue.from_url(url, name=f"{prefix}requests"))
        self.prefix = prefix
        self.max_depth = max_depth
        self.heartbeat = max(1, round(heartbeat))
        #: a dead worker's job is swept within a heartbeat and this many seconds more (half a heartbeat)
        self.queue.sweep_every = max(1, self.heartbeat // 2)

    async def depth(self) -> int:
        """Requests waiting (not yet taken by a worker)."""
        depth = int(await self.queue.count("queued"))
        metrics.QUEUE_DEPTH.set(depth)
        return depth

    async def submit(self, body: dict[str, Any]) -> bool:
        """Enqueue the request ``body``; False when the queue is full (the asker is to be told "busy"). A request
        whose job exists already (a retry of the same event) is not enqueued twice: True."""
        if await self.depth() >= self.max_depth:
            metrics.SHED.labels("queue_full").inc()
            log.warning("the job queue is full (%d waiting, WD_QUEUE_MAX): request turned away", self.max_depth)
            return False
        key = claim_name(body) or uuid.uuid4().hex
        job = await self.queue.enqueue(
            FUNCTION,
            # SAQ keys a job's abort mark by the job's key alone (``saq:abort:<key>``): the prefix keeps another
            # deployment's (or test's) abort of the same event from refusing this one for the mark's seconds
            key=self.job_key(key),
            body=typed_text_redacted(body),  # kept in Redis until answered: nothing a person typed unsanitized
            enqueued_at=time.time(),
            timeout=JOB_TIMEOUT,
            heartbeat=self.heartbeat,
            retries=JOB_RETRIES,
            retry_delay=RETRY_DELAY,
            ttl=JOB_TTL,
        )
        if job is None:
            log.info("request %s is already on the queue: not enqueued again", key)
        return True

    def job_key(self, claim: str) -> str:
        """The job key of the request claimed as ``claim`` (``handlers.middleware.claim_name``)."""
        return f"{self.prefix}req:{claim}"

    async def close(self) -> None:
        await self.queue.disconnect()


class RequestWorker:
    """Answers the queued requests through ``app`` (the worker's Bolt app: claims on, work run here)."""

    def __init__(self, queue: RequestQueue, app: AsyncApp, *, concurrency: int = 32) -> None:
        self.queue = queue
        self.app = app
        self.worker: Worker[Context] = Worker(
            queue.queue,
            functions=[(FUNCTION, self.answer)],
            concurrency=concurrency,
            timers={"sweep": queue.queue.sweep_every, "abort": 1, "schedule": 1, "worker_info": 10},
            # stop at once: SAQ's grace waits for its idle dequeues too (10 s a shutdown); a job cut short is retried
            # by another worker, whose claim waits for this one's answer (the tracker drains it) and then drops it
            shutdown_grace_period_s=0,
            id=new_owner(),  # host:pid:nonce, as every holder of claimed work is named
        )
        self.worker.SIGNALS = []  # the process's own handlers stop it (uvicorn, run_socket, `worker`)
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        """Started and taking jobs."""
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.worker.start(), name="job-worker")

    async def stop(self) -> None:
        """Stop taking jobs; the jobs in progress get the shutdown grace, then are cancelled (and retried by
        another worker)."""
        await self.worker.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def answer(self, ctx: Context, *, body: dict[str, Any], enqueued_at: float = 0.0) -> None:
        """One request: dispatched through the app, then kept until its work ends (see the module). Raises
        :class:`ClaimHeld` when another holder has the event's claim (SAQ tries the job again later)."""
        job = ctx.get("job")
        delivery = Delivery()
        token = DELIVERY.set(delivery)
        try:
            response = await self.app.async_dispatch(AsyncBoltRequest(body=body, mode="socket_mode"))
        finally:
            DELIVERY.reset(token)
        await _relay(response, body, self.app.client)
        if delivery.work is not None:
            await _beating(delivery.work.ended, job, self.queue.heartbeat)
        if delivery.held_elsewhere:
            raise ClaimHeld(f"{claim_name(body)}: its claim is held by another holder")
        if enqueued_at:
            metrics.JOB_SECONDS.observe(max(0.0, time.time() - enqueued_at))


async def _beating(ended: asyncio.Event, job: Any, heartbeat: int) -> None:
    """Wait for ``ended``, touching ``job`` every third of its heartbeat (a live worker's job is never swept)."""
    while not ended.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ended.wait(), max(0.3, heartbeat / 3))
        if job is not None and not ended.is_set():
            with contextlib.suppress(Exception):  # a missed beat is retried at the next third
                await job.update()


async def _relay(response: Any, body: dict[str, Any], client: Any) -> None:
    """What the listener or a middleware said in the ack (a slash command's refusal, "busy", a reading error): in a
    worker there is no ack to carry it, so the asker is told through the request's ``response_url``."""
    payload = getattr(response, "body", "") or ""
    if not payload or not body.get("response_url"):
        return
    try:
        said = json.loads(payload) if isinstance(payload, str) else payload
    except ValueError:
        return
    text = said.get("text") if isinstance(said, dict) else None
    if text:
        await tell_privately(body, client, str(text))
