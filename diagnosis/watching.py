"""The one watch loop (issue 25): follow a target to its end, for every surface (Slack threads, the terminal).

The cadence and the state are the pure rules of :mod:`diagnosis.osmo.watch` (:class:`WatchState`, :func:`observe`,
``WatchState.interval()``); how a target is polled is its backend's (``Backend.watcher(backends)``: an async
context manager giving a :data:`Poll`, opened once per watch); where the changes go is the caller's
(:class:`WatchSink`); what must hold between polls (a stop mark, an expiry, a lease still held) and where the state
is kept are hooks (``before_poll``, ``save``). :func:`follow` is the loop:

1. sleep the cadence (not before the first poll);
2. ``before_poll(state)``: an :class:`Ending` stops the loop (stopped, expired, carried on elsewhere);
3. poll: the target gone ends the watch (:class:`TargetGone`); a failed poll counts, and :data:`MAX_FAILURES`
   in a row end it (``GAVE_UP``); the first poll also names the kind of work (the cadence);
4. fold the status into the state (:func:`observe`), ``save(state)`` (False: another holder carries the watch on),
   tell the sink (``seen``: the state and the change, or None when nothing changed);
5. a terminal status ends it (``FINISHED``); so does ``max_polls``.

Every ending is told to the sink (``ended``), which says what it means on its surface. Errors of the sink and of
the hooks propagate (the caller logs them); cancellation ends the loop at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol

from diagnosis.cancelling import checkpoint
from diagnosis.osmo.watch import StateChange, WatchState, WorkKind, observe

#: consecutive failed polls (the system unreachable) before a watch gives up and says so
MAX_FAILURES = 5


@dataclass(frozen=True)
class Polled:
    """One poll of a target: its ``status`` (the system's word, e.g. ``RUNNING``) and the ``kind`` of work it
    is (for the cadence; None when the backend cannot tell)."""

    status: str
    kind: WorkKind | None = None


class TargetGone(Exception):
    """Raised by a :data:`Poll` when the target does not exist (any more): the watch ends with ``GONE``."""


Poll = Callable[[str], Awaitable[Polled]]
#: what a backend gives to watch its targets (``Backend.watcher``): opened once per watch, closed at its end
Watcher = AbstractAsyncContextManager[Poll]


class Ending(StrEnum):
    """Why a watch loop ended."""

    FINISHED = "finished"  # a terminal status was seen
    STOPPED = "stopped"  # someone stopped it (unwatch)
    EXPIRED = "expired"  # still unfinished past its time to live
    GONE = "gone"  # the target does not exist
    GAVE_UP = "gave_up"  # MAX_FAILURES polls failed in a row
    CARRIED_ON = "carried_on"  # another holder has the watch now (its lease moved on)
    POLLS = "polls"  # the caller's max_polls were done


class WatchSink(Protocol):
    """Where a watch tells what it sees (a Slack thread, the terminal)."""

    async def seen(self, state: WatchState, change: StateChange | None) -> None:
        """After every successful poll: the new state, and the change (None when the status did not change)."""
        ...

    async def ended(self, state: WatchState, ending: Ending, failures: int) -> None:
        """Once, when the loop ends (``failures``: the failed polls in a row at the end)."""
        ...


async def follow(
    state: WatchState,
    poll: Poll,
    sink: WatchSink,
    *,
    interval: Callable[[WatchState], float] | None = None,
    before_poll: Callable[[WatchState], Awaitable[Ending | None]] | None = None,
    save: Callable[[WatchState], Awaitable[bool]] | None = None,
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    max_polls: int | None = None,
    max_failures: int = MAX_FAILURES,
) -> tuple[WatchState, Ending]:
    """Poll ``state.workflow_id`` until it ends (see the module); the last state and why it ended.

    ``interval(state)`` gives the seconds to the next poll (default: the spec's cadence, ``state.interval()``)."""
    wait = interval or WatchState.interval
    failures = 0
    ending: Ending
    while True:
        checkpoint()  # a cancellation swallowed during the last step ends the loop here, never sleeps again
        if state.polls:
            await sleep(wait(state))
        stop = await before_poll(state) if before_poll is not None else None
        if stop is not None:
            ending = stop
            break
        try:
            polled = await poll(state.workflow_id)
        except TargetGone:
            ending = Ending.GONE
            break
        except asyncio.CancelledError:
            raise
        except Exception:
            failures += 1
            if failures >= max_failures:
                ending = Ending.GAVE_UP
                break
            state = state.model_copy(update={"polls": state.polls + 1})
            continue
        failures = 0
        first = state.polls == 0
        state, change = observe(state, polled.status, clock())
        if first and state.user_cadence_s is None and polled.kind is not None:
            state = state.model_copy(update={"kind": polled.kind})
        if save is not None and not await save(state):
            ending = Ending.CARRIED_ON
            break
        await sink.seen(state, change)
        if state.done:
            ending = Ending.FINISHED
            break
        if max_polls is not None and state.polls >= max_polls:
            ending = Ending.POLLS
            break
    await sink.ended(state, ending, failures)
    return state, ending
