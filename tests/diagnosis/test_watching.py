"""The one watch loop (issue 25, :func:`diagnosis.watching.follow`): how each ending is reached and told, and that a
cancellation a library swallowed still ends the loop (the resumed-watch test's intermittent hang)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from diagnosis.osmo.watch import StateChange, WatchState
from diagnosis.watching import MAX_FAILURES, Ending, Polled, TargetGone, follow


class Sink:
    def __init__(self) -> None:
        self.changes: list[str] = []
        self.polls = 0
        self.endings: list[tuple[Ending, int]] = []

    async def seen(self, state: WatchState, change: StateChange | None) -> None:
        self.polls += 1
        if change is not None:
            self.changes.append(change.status)

    async def ended(self, state: WatchState, ending: Ending, failures: int) -> None:
        self.endings.append((ending, failures))


async def no_sleep(seconds: float) -> None:
    return None


def polls(*statuses: str | Exception) -> Iterator[str | Exception]:
    return iter(statuses)


async def run(statuses: Iterator[str | Exception], **kwargs: object) -> tuple[WatchState, Ending, Sink]:
    async def poll(_: str) -> Polled:
        got = next(statuses)
        if isinstance(got, Exception):
            raise got
        return Polled(got, "short")

    sink = Sink()
    state, ending = await follow(WatchState(workflow_id="w-1"), poll, sink, sleep=no_sleep, **kwargs)  # type: ignore[arg-type]
    return state, ending, sink


async def test_the_first_poll_names_the_kind_of_work_and_a_terminal_status_finishes() -> None:
    state, ending, sink = await run(polls("PENDING", "RUNNING", "RUNNING", "COMPLETED"))
    assert ending is Ending.FINISHED and sink.endings == [(Ending.FINISHED, 0)]
    assert sink.changes == ["PENDING", "RUNNING", "COMPLETED"] and sink.polls == 4
    assert state.kind == "short" and state.done and state.polls == 4


async def test_failed_polls_in_a_row_give_up_and_a_success_resets_the_count() -> None:
    boom = ConnectionError("unreachable")
    _, ending, sink = await run(polls(boom, boom, "RUNNING", *[boom] * MAX_FAILURES))
    assert ending is Ending.GAVE_UP and sink.endings == [(Ending.GAVE_UP, MAX_FAILURES)]
    assert sink.changes == ["RUNNING"]


async def test_a_target_gone_ends_the_watch() -> None:
    _, ending, sink = await run(polls("RUNNING", TargetGone("w-1")))
    assert ending is Ending.GONE and sink.changes == ["RUNNING"]


async def test_the_hooks_stop_it_and_a_refused_save_means_another_holder_has_it() -> None:
    async def stop_at_second(state: WatchState) -> Ending | None:
        return Ending.STOPPED if state.polls >= 1 else None

    _, ending, sink = await run(polls("RUNNING", "RUNNING"), before_poll=stop_at_second)
    assert ending is Ending.STOPPED and sink.polls == 1

    async def refuse(state: WatchState) -> bool:
        return False

    _, ending, sink = await run(polls("RUNNING"), save=refuse)
    assert ending is Ending.CARRIED_ON and sink.polls == 0, "nothing is told from a state that was not kept"
    _, ending, _ = await run(polls("RUNNING", "RUNNING", "RUNNING"), max_polls=2)
    assert ending is Ending.POLLS


async def test_a_cancellation_swallowed_during_a_poll_ends_the_loop_before_it_sleeps_again() -> None:
    polling = asyncio.Event()
    slept: list[float] = []

    async def poll(_: str) -> Polled:
        polling.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            pass  # what Python 3.11's wait_for does when its result arrives together with the cancellation
        return Polled("RUNNING")

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await asyncio.sleep(3600)

    task = asyncio.create_task(follow(WatchState(workflow_id="w-1"), poll, Sink(), sleep=sleep))
    await polling.wait()
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=5)
    assert done, "the loop went to sleep again after its cancellation"
    assert task.cancelled() and slept == []


@pytest.mark.parametrize("statuses", [("FAILED",), ("RUNNING", "FAILED")])
async def test_every_ending_is_told_once(statuses: tuple[str, ...]) -> None:
    _, _, sink = await run(polls(*statuses))
    assert len(sink.endings) == 1
