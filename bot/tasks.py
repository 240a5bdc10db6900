"""Tracked background tasks: every diagnosis after an ack runs here, so none is garbage-collected
and all are drained on shutdown (SIGTERM).

Workflow watches run here too (they are cancelled first at shutdown: their state is in Redis and
another replica carries them on). A task spawned while a Slack request's work is current
(:data:`handlers.shedding.CURRENT`, set by the middleware) runs as part of that work
(:meth:`handlers.shedding.Work.run`: its event claim confirmed and renewed, its in-flight slot freed when the
last of its tasks ends). ``daemon``
tasks (the watch sweeper) never end by themselves: :meth:`TaskTracker.idle` does not wait for them and
:meth:`TaskTracker.drain` cancels them at once."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Coroutine
from typing import Any

from handlers import shedding

log = logging.getLogger(__name__)
#: Seconds a drain waits for cancelled tasks to end.
DAEMON_STOP_SECONDS = 10.0


def _names(tasks: set[asyncio.Task[Any]]) -> str:
    return ", ".join(sorted(task.get_name() for task in tasks))


class TaskTracker:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._daemons: set[asyncio.Task[Any]] = set()
        self.closing = False

    def spawn(
        self, coro: Coroutine[Any, Any, Any], name: str | None = None, *, daemon: bool = False, detached: bool = False
    ) -> asyncio.Task[Any]:
        """Run ``coro`` as a tracked task: part of the current request's work, unless ``daemon`` (a loop that never
        ends by itself) or ``detached`` (bookkeeping after an answer: awaited by :meth:`idle` and drained, but the
        request is answered, its slot freed and its claim finished without waiting for it)."""
        work = shedding.current()
        context = None
        if work is not None and not daemon and not detached:
            coro = work.run(coro)
        elif work is not None or shedding.CLAIM.get() is not None:
            # spawned by a request's work (a watch's polling loop, a kept world): it outlives the request, not its
            # claim
            context = contextvars.copy_context()
            context.run(shedding.CURRENT.set, None)
            context.run(shedding.CLAIM.set, None)
        task = asyncio.get_running_loop().create_task(coro, name=name, context=context)
        (self._daemons if daemon else self._tasks).add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        self._daemons.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    def __len__(self) -> int:
        return len(self._tasks)

    async def drain(self, grace: float = 60.0) -> int:
        """Wait for running tasks up to ``grace`` seconds, cancel the rest; return how many were cancelled."""
        self.closing = True
        daemons = set(self._daemons)
        for task in daemons:
            task.cancel()
        if daemons:
            # bounded: a daemon whose cancellation is swallowed (a library retrying inside) must not hold the drain
            _, stuck = await asyncio.wait(daemons, timeout=DAEMON_STOP_SECONDS)
            if stuck:
                log.warning("%d background loop(s) did not stop when cancelled: %s", len(stuck), _names(stuck))
        if not self._tasks:
            return 0
        log.info("draining %d diagnosis task(s)", len(self._tasks))
        # the tasks spawned meanwhile are waited for too (a diagnosis ending in the drain keeps its world after it)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self._tasks and loop.time() < deadline:
            await asyncio.wait(set(self._tasks), timeout=deadline - loop.time())
        still = set(self._tasks)
        for task in still:
            task.cancel()
        if still:
            _, stuck = await asyncio.wait(still, timeout=DAEMON_STOP_SECONDS)
            if stuck:
                log.warning("%d task(s) did not stop when cancelled: %s", len(stuck), _names(stuck))
        return len(still)

    async def idle(self, limit: float = 30.0) -> None:
        """Wait until no task runs (tests, the terminal twin); new tasks spawned meanwhile are awaited too."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit
        while self._tasks:
            left = deadline - loop.time()
            if left <= 0:
                raise TimeoutError(f"{len(self._tasks)} task(s) still running")
            await asyncio.wait(set(self._tasks), timeout=left)
