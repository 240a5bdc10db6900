"""What the conversation code needs from its collaborators, as Protocols: where replies go (:class:`Surface`),
the state it keeps (:class:`ConversationStore`, a subset of :class:`bot.state.Store`), the access policy
(:class:`AccessPolicy`, a subset of :class:`bot.policy.Policy`), and the commands the conversation hands requests
to (:class:`Command`, which know the conversation only as a :class:`Conversation`). Nearly a leaf: it imports only
the message types and :class:`~handlers.parsing.Ask`, so every handler module (and the terminal twin) can name
these types without an import cycle."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from diagnosis.lease import LeaseStore
from diagnosis.question import Question
from handlers.blocks import Message, Snippet
from handlers.parsing import Ask


class Surface(Protocol):
    """Where replies go. ``post`` returns the message id (Slack ``ts``) or None.

    A surface that only the asker reads (the terminal twin) may say ``shared = False``: then what would go
    to the asker privately needs no public stand-in."""

    async def post(self, message: Message, thread_ts: str | None = None) -> str | None: ...

    async def update(self, ts: str, message: Message) -> None: ...

    async def private(self, user: str, message: Message, thread_ts: str | None = None) -> None: ...

    async def upload(self, snippet: Snippet, thread_ts: str | None = None) -> bool: ...


class AnswerLost(Exception):
    """Raised by a surface's ``deliver`` (the answer, every fallback tried) when no way delivered it; the
    surface has already counted and logged it."""


class JsonStore(Protocol):
    """JSON values with a TTL in the bot's state (:class:`bot.state.Store`)."""

    async def get_json(self, *parts: str) -> Any: ...

    async def put_json(self, parts: tuple[str, ...], value: Any, ttl: int) -> bool: ...


class ConversationStore(JsonStore, Protocol):
    """The part of :class:`bot.state.Store` the conversation uses: dedup claims, JSON values with a TTL, and a
    consume-once read for pending follow-ups. ``down`` is True after a call failed because Redis is away."""

    down: bool

    async def claim(self, name: str, ttl: int = 3600) -> bool: ...

    async def take_json(self, *parts: str) -> Any: ...

    async def allow(self, team: str, user: str, limit: int, window: int = 60) -> bool: ...


class WatchStore(JsonStore, LeaseStore, Protocol):
    """The part of :class:`bot.state.Store` the watches use (:mod:`handlers.watch`): the watch records, their
    index and the polling lease (:class:`diagnosis.lease.Lease`)."""

    async def create_watch(self, watch_id: str, value: Any, ttl: int = ...) -> bool: ...

    async def save_watch(self, watch_id: str, value: Any) -> bool: ...

    async def load_watch(self, watch_id: str) -> Any: ...

    async def remove_watch(self, watch_id: str) -> None: ...

    async def active_watches(self) -> list[str]: ...

    async def forget_watch_index(self, watch_id: str) -> None: ...


class AccessPolicy(Protocol):
    """The part of :class:`bot.policy.Policy` the conversation uses."""

    def allows(
        self,
        user: str,
        *,
        clusters: set[str] | None = None,
        project: str | None = None,
        user_groups: set[str] | None = None,
        whole: bool = False,
    ) -> bool: ...

    def defaults_for(self, channel: str | None) -> dict[str, str]: ...

    def subteams(self) -> set[str]: ...


class DigestPolicy(AccessPolicy, Protocol):
    """The access policy with the channels' digest schedules (:mod:`handlers.digests`)."""

    @property
    def digests(self) -> Mapping[str, Sequence[Any]]: ...


class Conversation(Protocol):
    """What a :class:`Command` may ask of the conversation (:class:`handlers.doctor.Doctor`)."""

    async def reply(self, ask: Ask, surface: Surface, message: Message, private: bool = False) -> None:
        """Answer ``ask`` with a short message: to the asker only when ``private``, else in its thread."""
        ...

    def refusal(self) -> str:
        """The refusal's words."""
        ...

    async def admit(self, ask: Ask, surface: Surface) -> bool:
        """Count one costly request against the asker's rate limit; False (the asker told) when refused."""
        ...


class Command(Protocol):
    """A request the conversation hands over instead of diagnosing it (a digest, a watch): the conversation's
    command table (:class:`handlers.doctor.Doctor` ``commands``), asked in order, first with the text alone
    (``question`` None: before the text is read as a question), then with the question read from it."""

    def wants(self, text: str, question: Question | None) -> bool:
        """Whether this command answers ``text`` (mentions stripped) or the ``question`` read from it."""
        ...

    async def run(self, talk: Conversation, ask: Ask, surface: Surface, question: Question | None) -> None:
        """Answer it on ``surface`` (``question`` as given to :meth:`wants`)."""
        ...


class Jobs(Protocol):
    """The job queue the ack tier hands requests to (issue 26: :class:`bot.jobs.RequestQueue`)."""

    async def submit(self, body: dict[str, Any]) -> bool:
        """Enqueue the Slack request ``body`` for a worker; False when the queue is full."""
        ...
