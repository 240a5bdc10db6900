"""The terminal twin of the bot: the same :class:`~handlers.doctor.Doctor` (parsing, follow-ups,
diagnosis, Block Kit) with messages printed as readable text. Type a question; answer a
follow-up by typing the value or the number of a choice; ``quit`` or end of input stops."""

from __future__ import annotations

import asyncio
import itertools
import sys
from collections.abc import Callable
from typing import TextIO

from bot.policy import Policy
from bot.state import Store
from diagnosis.answer import Backends
from handlers.blocks import Message, Snippet, blocks_to_text
from handlers.digests import DigestDesk
from handlers.doctor import Doctor
from handlers.parsing import Ask, parse_command
from handlers.report_cache import AnswerFn

THREAD = "terminal"
USER = "U_TERMINAL"


class TerminalSurface:
    """The terminal as a :class:`~handlers.protocols.Surface`: everything is printed, to the one person there."""

    #: nobody else reads the terminal: a private answer needs no public stand-in (handlers.doctor)
    shared = False

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._ts = itertools.count(1)

    def _print(self, text: str) -> None:
        self.out.write(text if text.endswith("\n") else text + "\n")
        self.out.flush()

    async def post(self, message: Message, thread_ts: str | None = None) -> str | None:
        self._print(blocks_to_text(message.blocks) if message.blocks else message.text)
        return f"{next(self._ts)}.000"

    async def update(self, ts: str, message: Message) -> None:
        self._print(blocks_to_text(message.blocks) if message.blocks else message.text)

    async def private(self, user: str, message: Message, thread_ts: str | None = None) -> None:
        self._print(blocks_to_text(message.blocks) if message.blocks else message.text)

    async def upload(self, snippet: Snippet, thread_ts: str | None = None) -> bool:
        name = snippet.filename
        self._print(f"--- {snippet.title} ({name}) ---\n{snippet.content}\n--- end of {name} ---")
        return True


async def chat(
    backends: Backends,
    *,
    policy: Policy | None = None,
    channel: str = "terminal",
    read: Callable[[], str | None] | None = None,
    out: TextIO = sys.stdout,
    answer_fn: AnswerFn | None = None,
    first: str | None = None,
) -> None:
    """Run the conversation until ``quit`` or end of input."""
    access = policy or Policy()
    store = Store(None)
    # digests on demand ("digest 24h", "what failed today?"), as in Slack (no schedules in a terminal)
    doctor = Doctor(backends, store, access, answer_fn=answer_fn, digests=DigestDesk(backends, access, store=store))
    surface = TerminalSurface(out)

    def default_read() -> str | None:
        try:
            return input("you> ")
        except EOFError:
            return None

    reader = read or default_read
    surface._print(
        "Workload Doctor (terminal). Ask e.g. 'why did train-7 fail in project nlp?', or 'what failed today?' "
        "(a digest); 'quit' to stop."
    )
    pending = [first] if first else []
    while True:
        line = pending.pop(0) if pending else await asyncio.to_thread(reader)
        if line is None or line.strip().lower() in ("quit", "exit", ":q"):
            break
        if not line.strip():
            continue
        ask = Ask(team="T_TERMINAL", channel=channel, user=USER, text=line, source="chat", thread_ts=THREAD)
        if line.strip().startswith("/diagnose"):
            is_help, explicit = parse_command(line.strip()[len("/diagnose") :])
            ask.text = "help" if is_help else line.strip()[len("/diagnose") :]
            ask.source = "command"
            ask.explicit = None if is_help else explicit
            await doctor.ask(ask, surface)
            continue
        if await doctor.follow_up(ask, surface, only_if_answers=True):
            continue
        await doctor.ask(ask, surface)
