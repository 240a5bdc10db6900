"""What people said of the answers (issue 28), kept in Redis beside the bot's other state.

Per answer a person can judge (``handlers.feedback_world``): its record (reference, system, verdict, confidence,
what it was about) and the redacted world it was made from, zlib-compressed, under ``fb:answer:<ref>``; the votes,
one per user (a later vote replaces it), in the hash ``fb:votes:<ref>``; two indexes, answers by system
(``fb:answers:<system>``) and voted answers (``fb:voted``), sorted by time.

Bounds: an answer nobody votes on is kept :data:`VOTE_WINDOW` (or the retention, when shorter); a vote keeps its
answer and world for ``WD_FEEDBACK_RETENTION_DAYS`` (default 30) from the last vote; a world larger than
``WD_FEEDBACK_MAX_WORLD_BYTES`` is not kept (the record says so); at most ``WD_FEEDBACK_MAX_ANSWERS`` answers per
system are indexed, the oldest dropped with their records. Everything kept is sanitized: the world is the snapshot
``capture`` writes, the record the report's own (sanitized) strings, a note passes :func:`diagnosis.redact.redact`.
Without Redis (tests, the terminal) it is kept in this process only. ``workload-doctor feedback purge`` deletes it.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from diagnosis import metrics
from diagnosis.redact import redact

log = logging.getLogger(__name__)

#: seconds an answer nobody voted on stays votable (its card's buttons answer "no longer kept" after that)
VOTE_WINDOW = 7 * 86400
DAY = 86400
#: a note is one line
NOTE_MAX = 500
#: what a person may answer "Wrong" with besides a category of the system
NOT_A_FAILURE = "not_a_failure"
WRONG_WORKLOAD = "wrong_workload"


@dataclass
class Voted:
    """One voted answer: its record, its votes by user, and its world (when asked for and kept)."""

    record: dict[str, Any]
    votes: dict[str, dict[str, Any]]
    world: dict[str, Any] | None = None

    @property
    def last(self) -> dict[str, Any]:
        """The latest vote."""
        return max(self.votes.values(), key=lambda v: str(v.get("at") or ""))

    @property
    def wrong(self) -> list[dict[str, Any]]:
        """The votes that say the answer was wrong, latest first."""
        return sorted(
            (v | {"user": u} for u, v in self.votes.items() if v.get("verdict") == "wrong"),
            key=lambda v: str(v.get("at") or ""),
            reverse=True,
        )


@dataclass
class _Memory:
    answers: dict[str, tuple[float, str]] = field(default_factory=dict)  # ref -> (expiry, json)
    votes: dict[str, dict[str, str]] = field(default_factory=dict)
    index: dict[str, dict[str, float]] = field(default_factory=dict)  # index name -> ref -> time


def world_json(world: dict[str, Any]) -> bytes:
    """``world`` as compact JSON bytes (what its size is measured on, and what :func:`pack_world` packs)."""
    return json.dumps(world, separators=(",", ":")).encode()


def pack_world(raw: bytes) -> str:
    """A world's JSON bytes (:func:`world_json`) compressed, as base64 text."""
    return base64.b64encode(zlib.compress(raw, 6)).decode("ascii")


def unpack_world(packed: str) -> dict[str, Any] | None:
    try:
        value = json.loads(zlib.decompress(base64.b64decode(packed)))
    except (ValueError, zlib.error):
        return None
    return value if isinstance(value, dict) else None


def clean_note(text: str | None) -> str | None:
    """A person's note as kept: one line, bounded, redacted (a pasted token never reaches Redis)."""
    line = " ".join(str(text or "").split())[:NOTE_MAX]
    return redact(line) or None


class FeedbackStore:
    """Answers, their worlds and the votes on them. ``store`` is :class:`bot.state.Store` (its Redis and prefix)."""

    def __init__(
        self, store: Any, *, retention_days: int = 30, max_world_bytes: int = 2_000_000, max_answers: int = 20_000
    ) -> None:
        self.store = store
        self.retention = int(retention_days) * DAY
        self.max_world_bytes = int(max_world_bytes)
        self.max_answers = int(max_answers)
        self._memory = _Memory()

    @classmethod
    def for_settings(cls, store: Any, settings: Any) -> FeedbackStore:
        return cls(
            store,
            retention_days=int(getattr(settings, "feedback_retention_days", 30)),
            max_world_bytes=int(getattr(settings, "feedback_max_world_bytes", 2_000_000)),
            max_answers=int(getattr(settings, "feedback_max_answers", 20_000)),
        )

    @property
    def redis(self) -> Any:
        return getattr(self.store, "redis", None)

    def _key(self, *parts: str) -> str:
        return str(self.store.key("fb", *parts))

    # -- answers -------------------------------------------------------------------------------

    async def keep_answer(self, record: dict[str, Any], world: dict[str, Any] | None) -> bool:
        """Keep one answer (``record["ref"]``) with its world, bounded; True when it was kept."""
        ref, system = str(record["ref"]), str(record.get("system") or "unknown")
        entry = dict(record)
        if world is not None or "world_omitted" not in entry:
            entry |= self._world_fields(world)
        ttl = min(VOTE_WINDOW, self.retention)
        now = time.time()
        if self.redis is None:
            self._memory.answers[ref] = (now + ttl, json.dumps(entry))
            self._memory.index.setdefault(f"answers:{system}", {})[ref] = now
            return True
        try:
            pipe = self.redis.pipeline()
            pipe.set(self._key("answer", ref), json.dumps(entry, separators=(",", ":")), ex=ttl)
            pipe.zadd(self._key("answers", system), {ref: now})
            pipe.zremrangebyscore(self._key("answers", system), "-inf", now - self.retention)
            pipe.expire(self._key("answers", system), self.retention)
            await pipe.execute()
            await self._bound(system)
        except Exception as exc:  # Redis away: the answer is given, only its feedback is lost
            log.warning("answer %s not kept for feedback (%s)", ref, type(exc).__name__)
            return False
        return True

    def _world_fields(self, world: dict[str, Any] | None) -> dict[str, str]:
        """What an answer's entry keeps of ``world``: ``world_z`` (packed), or ``world_omitted`` saying why not."""
        if world is None:
            return {"world_omitted": "the world could not be built"}
        raw = world_json(world)  # serialized once: measured, then packed
        if len(raw) > self.max_world_bytes:
            return {"world_omitted": f"{len(raw)} bytes, over WD_FEEDBACK_MAX_WORLD_BYTES ({self.max_world_bytes})"}
        return {"world_z": pack_world(raw)}

    async def keep_world(self, ref: str, world: dict[str, Any] | None) -> bool:
        """Add ``world`` to the answer ``ref`` kept before without it (``handlers.feedback_world``: built after the
        answer); None says it could not be built. The record keeps its expiry (a vote meanwhile lengthened it) and
        is not written again once gone (bounded out, purged, expired): False then."""
        update = self._world_fields(world)
        if self.redis is None:
            kept = self._memory.answers.get(ref)
            if kept is None:
                return False
            entry = json.loads(kept[1])
            entry.pop("world_omitted", None)
            self._memory.answers[ref] = (kept[0], json.dumps(entry | update))
            return True
        key = self._key("answer", ref)
        try:
            raw_entry = await self.redis.get(key)
            if not raw_entry:
                return False
            entry = json.loads(raw_entry)
            entry.pop("world_omitted", None)
            text = json.dumps(entry | update, separators=(",", ":"))
            written = await self.redis.set(key, text, xx=True, keepttl=True)
        except Exception as exc:  # Redis away: the answer stands, its world is not kept
            log.warning("the world of answer %s not kept (%s)", ref, type(exc).__name__)
            return False
        return bool(written)

    async def _bound(self, system: str) -> None:
        """At most :attr:`max_answers` answers of ``system``: the oldest go, with their records and votes."""
        index = self._key("answers", system)
        extra = int(await self.redis.zcard(index)) - self.max_answers
        if extra <= 0:
            return
        old = [str(r) for r in await self.redis.zrange(index, 0, extra - 1)]
        if old:
            await self.redis.delete(*[self._key(k, r) for r in old for k in ("answer", "votes")])
            await self.redis.zrem(index, *old)
            await self.redis.zrem(self._key("voted"), *old)

    async def answer(self, ref: str, *, world: bool = False) -> dict[str, Any] | None:
        """The record of answer ``ref`` (with ``"world"`` unpacked when asked), or None when it is not kept."""
        raw: str | None
        if self.redis is None:
            kept = self._memory.answers.get(ref)
            raw = kept[1] if kept and kept[0] > time.time() else None
        else:
            raw = await self.redis.get(self._key("answer", ref))
        if not raw:
            return None
        entry = json.loads(raw)
        packed = entry.pop("world_z", None)
        if world:
            entry["world"] = unpack_world(packed) if packed else None
        return dict(entry)

    # -- votes ---------------------------------------------------------------------------------

    async def vote(
        self, record: dict[str, Any], user: str, verdict: str, choice: str | None = None, note: str | None = None
    ) -> dict[str, Any] | None:
        """``user``'s vote on the answer ``record`` (one per user: it replaces their earlier one, whose value is
        returned). A vote without a note keeps the note given before."""
        ref = str(record["ref"])
        before = (await self.votes(ref)).get(user)
        kept_note = clean_note(note) if note is not None else (before or {}).get("note")
        vote = {"verdict": verdict, "choice": choice, "note": kept_note, "at": _iso(time.time())}
        now = time.time()
        if self.redis is None:
            self._memory.votes.setdefault(ref, {})[user] = json.dumps(vote)
            self._memory.index.setdefault("voted", {})[ref] = now
            expiry, raw = self._memory.answers[ref]
            self._memory.answers[ref] = (max(expiry, now + self.retention), raw)
        else:
            pipe = self.redis.pipeline()
            pipe.hset(self._key("votes", ref), user, json.dumps(vote, separators=(",", ":")))
            pipe.expire(self._key("votes", ref), self.retention)
            pipe.expire(self._key("answer", ref), self.retention)  # a voted answer is kept the retention
            pipe.zadd(self._key("voted"), {ref: now})
            pipe.zremrangebyscore(self._key("voted"), "-inf", now - self.retention)
            pipe.expire(self._key("voted"), self.retention)
            await pipe.execute()
        metrics.feedback_vote(str(record.get("system") or "unknown"), record.get("category"), verdict)
        return before

    async def note(self, record: dict[str, Any], user: str, note: str) -> bool:
        """Add ``note`` to ``user``'s vote on ``record`` (False: they have not voted on it)."""
        before = (await self.votes(str(record["ref"]))).get(user)
        if before is None:
            return False
        await self.vote(record, user, str(before.get("verdict")), before.get("choice"), note)
        return True

    async def votes(self, ref: str) -> dict[str, dict[str, Any]]:
        if self.redis is None:
            raw = self._memory.votes.get(ref, {})
        else:
            raw = await self.redis.hgetall(self._key("votes", ref))
        return {str(u): json.loads(v) for u, v in raw.items()}

    # -- reading it back (the CLI) ---------------------------------------------------------------

    async def answered(self, since: float) -> dict[str, int]:
        """How many answers each system gave (and kept for feedback) since ``since`` (epoch seconds)."""
        out: dict[str, int] = {}
        if self.redis is None:
            for name, refs in self._memory.index.items():
                if name.startswith("answers:"):
                    out[name.split(":", 1)[1]] = sum(1 for t in refs.values() if t >= since)
            return out
        async for key in self.redis.scan_iter(match=self._key("answers", "*")):
            system = str(key).rsplit(":", 1)[1]
            out[system] = int(await self.redis.zcount(key, since, "+inf"))
        return out

    async def voted(self, since: float, *, world: bool = False) -> list[Voted]:
        """Every answer voted on since ``since``, oldest first (with its world when asked)."""
        if self.redis is None:
            refs = [r for r, t in sorted(self._memory.index.get("voted", {}).items(), key=lambda i: i[1]) if t >= since]
        else:
            refs = [str(r) for r in await self.redis.zrangebyscore(self._key("voted"), since, "+inf")]
        out: list[Voted] = []
        for ref in refs:
            record = await self.answer(ref, world=world)
            votes = await self.votes(ref)
            if record is not None and votes:
                out.append(Voted(record=record, votes=votes, world=record.pop("world", None)))
        return out

    async def purge(self) -> int:
        """Delete every answer, world, vote and index kept (the number of keys deleted)."""
        if self.redis is None:
            n = len(self._memory.answers) + len(self._memory.votes) + len(self._memory.index)
            self._memory = _Memory()
            return n
        keys = [k async for k in self.redis.scan_iter(match=self._key("*"), count=500)]
        for start in range(0, len(keys), 500):
            await self.redis.delete(*keys[start : start + 500])
        return len(keys)


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
