"""A cancellation a library swallowed, honoured at the next step of a loop.

Python 3.11's ``asyncio.wait_for`` returns its inner result instead of raising when it is cancelled just as that
result arrives (python/cpython#86296, fixed in 3.12), and a few libraries catch cancellation inside their retries.
The task is then left *cancelling* (``Task.cancelling()`` > 0) and runs on: a watch cancelled at shutdown went to
sleep again, and the shutdown waited for it (issue 25: the resumed-watch test that hung in some full runs).
Every loop that runs until it is cancelled calls :func:`checkpoint` at each step. A leaf module.
"""

from __future__ import annotations

import asyncio


def checkpoint() -> None:
    """Raise :class:`asyncio.CancelledError` when the current task was asked to cancel and is still running."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
