"""CPU work off the event loop, with a bound (issue 24: one 12 MB log held the bot's event loop for 25 s, so
``/healthz`` and Slack's acks waited too).

:func:`off_loop` runs a pure function (sanitizing and classifying what a diagnosis read) in one of
:data:`WORKERS` threads of a pool of its own: however many diagnoses run at once, at most that many such calls
run together and the rest queue, and the loop keeps answering meanwhile. Threads, not processes: the work is
on objects already in memory (nothing to pickle), and the interpreter hands the loop its turn between
bytecodes; each single call into C (a regular expression over one text) is kept short by bounding the text
(:func:`diagnosis.untrusted.clip`, Tier 2's 64 KiB log tails). A leaf module: it imports nothing of the product.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
#: Threads of CPU work at once across every diagnosis of the process.
WORKERS = 2
_POOL = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="cpu")


async def off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in the pool; its result or its exception. Cancelling the await does not stop a
    call already running (it ends on its own: the work is bounded by its input)."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_POOL, functools.partial(fn, *args, **kwargs))
