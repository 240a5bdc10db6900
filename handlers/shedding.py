"""The work of one Slack request after its ack, and the bound on work in flight (issue 15 §2–§4).

The middleware (:mod:`handlers.middleware`) opens a :class:`Work` for every request it lets through and makes it
current (:data:`CURRENT`, a context variable: Bolt's listener task and the tasks the listener spawns inherit it).
:meth:`bot.tasks.TaskTracker.spawn` runs every task spawned under it through :meth:`Work.run`, which

1. first passes the work's gates once (the event claim confirmed after the ack, user groups looked up after the
   ack when Redis was slow): a gate saying no drops the work (a duplicate, a refusal already told);
2. renews the event claim while the work runs;
3. when the last of its tasks ends, marks the event answered and frees its in-flight slot.

:class:`InFlight` bounds the diagnoses one process works on at once (``WD_MAX_IN_FLIGHT``): a request beyond it is
answered "busy" at once, without starting its work, so acks stay fast and memory bounded in a burst. When the
process goes idle after a burst the allocator is asked to return freed memory to the system.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import gc
import logging
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from typing import Any

from diagnosis import metrics
from handlers.protocols import Jobs

log = logging.getLogger(__name__)
BUSY = "I'm busy with many diagnoses right now: please try again in a minute."
#: listeners are thin: they spawn their work in their first step, which the loop runs before any timer set when
#: the dispatch returns; the work of a request that spawned nothing by then (an ignored event, a text answered in
#: the ack) is finished this many seconds after the dispatch (its slot freed at once for the next request)
LISTENER_GRACE = 0.1
#: after a burst (at least this many in flight at once), memory is returned once the process is idle this long
TRIM_AFTER = 1.0
TRIM_PEAK = 8

Gate = Callable[[], Awaitable[bool]]
CURRENT: ContextVar[Work | None] = ContextVar("wd_work", default=None)
#: what one dispatch of a queued request did, when a worker's job dispatches it (:class:`Delivery`)
DELIVERY: ContextVar[Delivery | None] = ContextVar("wd_delivery", default=None)
#: the event claim of the request the running task answers (set by :meth:`Work.run` for its task only)
CLAIM: ContextVar[Any] = ContextVar("wd_claim", default=None)
_KEEP: set[asyncio.Task[Any]] = set()  # finishing tasks (strong references until they end)


def _libc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc: freed memory is the allocator's business
        return None
    return trim


class InFlight:
    """A non-blocking counting semaphore: :meth:`try_enter` takes a slot or says no at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.count = 0
        self.peak = 0
        self._trim: asyncio.TimerHandle | None = None
        self._malloc_trim = _libc_trim()

    def try_enter(self) -> bool:
        if self.count >= self.limit:
            return False
        self.count += 1
        self.peak = max(self.peak, self.count)
        metrics.IN_FLIGHT.set(self.count)
        if self._trim is not None:
            self._trim.cancel()
            self._trim = None
        return True

    def leave(self) -> None:
        self.count = max(0, self.count - 1)
        metrics.IN_FLIGHT.set(self.count)
        if self.count == 0 and self.peak >= TRIM_PEAK:
            with contextlib.suppress(RuntimeError):  # no loop: nothing to schedule (tests of the class alone)
                self._trim = asyncio.get_running_loop().call_later(TRIM_AFTER, self.return_memory)

    def return_memory(self) -> None:
        """Collect the garbage a burst left and give freed pages back to the system (glibc ``malloc_trim``):
        without it the process keeps its peak RSS long after the burst."""
        self._trim = None
        self.peak = self.count
        collected = gc.collect()
        trimmed = self._malloc_trim(0) if self._malloc_trim is not None else 0
        log.info("idle after a burst: %d objects collected, memory %sreturned", collected, "" if trimmed else "not ")


class Delivery:
    """What one dispatch of a request did, for the job that dispatched it (issue 26: a worker answering a queued
    request waits for the request's :class:`Work` to end, and retries the job later when the event's claim is
    held by another holder, alive or dead)."""

    def __init__(self) -> None:
        #: the claim of the request (None: not a claimed request)
        self.claim: Any = None
        #: the work the request started (None: nothing to answer, or a duplicate)
        self.work: Work | None = None

    @property
    def held_elsewhere(self) -> bool:
        """The event's claim is held by another holder: answered by it, or by whoever takes over once its lease
        expires (the job must be tried again later, not dropped)."""
        return self.claim is not None and bool(getattr(self.claim, "held_elsewhere", False))


class Work:
    """What one request does after its ack: its event claim, its in-flight slot, its gates, its tasks."""

    def __init__(self, claim: Any = None, body: dict[str, Any] | None = None, client: Any = None) -> None:
        self.claim = claim
        #: the request as Slack sent it and the Web API client of its app (a hand-over to a worker, a "busy")
        self.body = body
        self.client = client
        #: handed to a worker through the job queue (:class:`HandOver`): nothing of it runs here
        self.handed_over = False
        #: set once the work is over (its tasks ended, its claim finished)
        self.ended = asyncio.Event()
        self.slot: InFlight | None = None
        self.gates: list[Gate] = []
        #: loop time by which the ack must be on its way (``WD_ACK_REDIS_BUDGET`` after the request came in)
        self.deadline = 0.0
        self._ready: asyncio.Task[bool] | None = None
        self._tasks = 0
        self._held = True  # the listener's hold, until it had its chance to spawn
        self._ran = False
        self._cancelled = False
        self._finished = False

    def listener_started(self) -> None:
        """The ack is on its way: give the listener :data:`LISTENER_GRACE` seconds to spawn its work."""
        asyncio.get_running_loop().call_later(LISTENER_GRACE, self._hold_over)

    def _hold_over(self) -> None:
        self._held = False
        self._release_hold()

    async def _pass_gates(self) -> bool:
        if self.claim is not None and not await self.claim.confirm():
            return False
        for gate in self.gates:
            if not await gate():
                return False
        return True

    async def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        """Run ``coro`` as part of this work (after the gates; the claim renewed meanwhile). The last task of the
        work to end finishes it (marks the event answered, frees the slot) before it ends itself, so waiting for
        the tasks (:meth:`bot.tasks.TaskTracker.idle`) waits for that too."""
        self._tasks += 1
        self._held = False  # the listener spawned its work
        CURRENT.set(None)  # what this task spawns (a watch's polling loop) is not part of the request
        CLAIM.set(self.claim)
        try:
            if self._ready is None:
                self._ready = asyncio.get_running_loop().create_task(self._pass_gates())
            if not await asyncio.shield(self._ready):
                coro.close()
                return None
            self._ran = True
            if self.claim is not None:
                self.claim.start_renewing()
            return await coro
        except asyncio.CancelledError:
            self._cancelled = True
            raise
        finally:
            coro.close()  # no-op once it ran; a never-started coroutine must not warn
            self._tasks -= 1
            if self._last():
                await self._finish_claim()

    def _release_hold(self) -> None:
        if self._last():
            task = asyncio.get_running_loop().create_task(self._finish_claim(), name="claim-finish")
            _KEEP.add(task)
            task.add_done_callback(_KEEP.discard)

    def _last(self) -> bool:
        """True once, when the work is over: frees the slot; the caller then finishes the claim."""
        if self._finished or self._held or self._tasks > 0:
            return False
        self._finished = True
        if self.slot is not None:
            self.slot.leave()
            self.slot = None
        if self.claim is None:
            self.ended.set()
        return self.claim is not None

    async def _finish_claim(self) -> None:
        # not cancelled: answered, or turned away, or a duplicate (the claim then holds nothing to finish)
        try:
            await self.claim.finish(answered=not self._cancelled)
        except Exception:
            log.exception("could not finish the claim of event %s", getattr(self.claim, "event_id", "?"))
        finally:
            self.ended.set()


def current() -> Work | None:
    return CURRENT.get()


def current_claim() -> Any:
    """The event claim of the request this task works for, or None."""
    return CLAIM.get()


class HandOver:
    """The ack tier's spawner of request work (issue 26 §1): what a listener starts for a request after its ack is
    handed to a worker through the job queue (``jobs.submit(body)``: the request itself, which the worker dispatches
    again) instead of being run here; a full queue tells the asker "busy" privately (``tell(body, client, text)``).
    Anything spawned outside a request's work (a daemon, a reply to the ack) runs here with ``spawn``."""

    def __init__(
        self,
        jobs: Jobs,
        spawn: Callable[..., asyncio.Task[Any]],
        tell: Callable[[dict[str, Any], Any, str], Awaitable[None]],
    ) -> None:
        self.jobs = jobs
        self.spawn = spawn
        self.tell = tell

    def __call__(
        self, coro: Coroutine[Any, Any, Any], name: str | None = None, *, daemon: bool = False
    ) -> asyncio.Task[Any]:
        work = current()
        if daemon or work is None or work.body is None:
            return self.spawn(coro, name=name, daemon=daemon)
        coro.close()  # the worker runs this work, from the request
        if work.handed_over:
            return self.spawn(_nothing(), name=name)
        work.handed_over = True
        return self.spawn(self._submit(work.body, work.client), name=f"enqueue-{name or 'request'}")

    async def _submit(self, body: dict[str, Any], client: Any) -> None:
        try:
            queued = await self.jobs.submit(body)
        except Exception:
            log.exception("could not enqueue the request")
            queued = False
        if not queued:
            await self.tell(body, client, BUSY)


async def _nothing() -> None:
    return None
