"""Redis state of the bot: event dedup, follow-up conversations, the report cache, the per-user
rate limit, and the registry of workflow watches.

Redis is a help, never a dependency of an answer: every operation catches Redis errors, logs the
outage once (and the recovery once), and falls back: dedup to a small in-process memory, the
rate limit to "allowed", the cache and conversations to "nothing remembered". redis-py reconnects
on the next command, so the bot recovers by itself when Redis returns.

Without a URL (the terminal twin) everything lives in process memory.

Leases (:meth:`Store.lease`): the one mechanism for claimed work, held through the one lease holder
:class:`diagnosis.lease.Lease`. A lease ``lease:<name>`` holds ``owner|token`` (``SET PX``, renewed while
its holder works); every fresh holder gets a new fencing token from ``leasetoken:<name>``, and shared state
is written only through :meth:`Store.fenced_put`, which checks the lease and the token atomically, so a
holder that stalled past its lease cannot overwrite its successor.

Watches (``/diagnose watch <workflow>``): one key per watch (``watch:<id>``, the id naming team,
channel, thread and workflow) holding its JSON, a set ``watches`` indexing the active ones, and the
lease ``watch:<id>`` renewed while a replica polls, so only one replica polls a watch at a time and
another one carries it on once the lease expires or is released. When Redis is down a watch runs
from process memory (logged). Digest slots use the same leases (``bot.digests``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError

from diagnosis import metrics
from diagnosis.redact import redact
from handlers.claims import EventClaimed
from handlers.watch import WATCH_TTL

log = logging.getLogger(__name__)

_ERRORS = (RedisError, OSError, TimeoutError)
#: Connections to Redis one process opens at most, and seconds a command waits for one when all are busy.
MAX_CONNECTIONS = 200
POOL_WAIT = 1.0

# A lease: KEYS[1] the lease ("owner|token"), KEYS[2] its token counter; ARGV[1] owner, ARGV[2] ms.
# Free: a new fencing token (INCR) and the lease; held by ARGV[1]: renewed, same token; else 0.
_LEASE = """
local held = redis.call('GET', KEYS[1])
if not held then
  local token = redis.call('INCR', KEYS[2])
  redis.call('SET', KEYS[1], ARGV[1] .. '|' .. token, 'PX', ARGV[2])
  return token
end
local sep = string.find(held, '|', 1, true)
if sep and string.sub(held, 1, sep - 1) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return tonumber(string.sub(held, sep + 1))
end
return 0
"""
_LEASE_RELEASE = """
local held = redis.call('GET', KEYS[1])
if held then
  local sep = string.find(held, '|', 1, true)
  if sep and string.sub(held, 1, sep - 1) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
  end
end
return 0
"""
# Write KEYS[2] = ARGV[2] (EX ARGV[3]) only while KEYS[1] (the lease) is exactly ARGV[1] ("owner|token").
_FENCED_SET = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3])
  return 1
end
return 0
"""

# An event claim (a lease whose state says whether the event was answered): KEYS[1] the lease, KEYS[2] its token
# counter, KEYS[3] the event's state (JSON written by the holder with _FENCED_SET); ARGV[1] owner, ARGV[2] ms.
# Returns {-1, state} when the event was answered, {0, state} while another owner holds the lease, else
# {token, state} with a fresh lease (state '' for a first delivery, the dead holder's state for a takeover).
_EVENT_CLAIM = """
local state = redis.call('GET', KEYS[3]) or ''
if string.find(state, '"done":true', 1, true) then
  return {-1, state}
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {0, state}
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. token, 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[2], 86400000)
if ARGV[3] ~= '' and redis.call('EXISTS', KEYS[4]) == 0 then
  redis.call('SET', KEYS[4], ARGV[3], 'EX', ARGV[5])
  redis.call('ZADD', KEYS[5], ARGV[4], ARGV[6])
end
return {token, state}
"""
# (issue 24) a first claim also keeps the request itself: KEYS[4] its body, KEYS[5] the index of questions not yet
# answered (score: when first claimed); ARGV[3] the body ('' none), ARGV[4] now, ARGV[5] seconds, ARGV[6] the name.
#: how long an answered event's state (and its claim's token counter) is kept: longer than Slack retries (5 min)
EVENT_STATE_TTL = 3600
#: how long a question acked and not answered is taken over by another replica (a slash command's
#: ``response_url`` takes answers for 30 minutes)
QUESTION_TTL = 1800
#: the largest request kept for a takeover (a Slack event or command is a few KiB)
QUESTION_MAX_BYTES = 64 * 1024


_BACKGROUND: set[asyncio.Task[Any]] = set()  # Redis writes the ack did not wait for (strong references)


def _settled(task: asyncio.Task[Any]) -> None:
    _BACKGROUND.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.warning("a Redis write finished after the ack failed: %s", type(task.exception()).__name__)


def _driver_info() -> dict[str, Any]:
    """The client name and version redis-py sends on each new connection, computed once: without it
    redis-py reads its package metadata again for every connection the pool opens (about 1 ms each)."""
    try:
        from redis.driver_info import DriverInfo
    except ImportError:  # redis-py before 7.1 caches it itself
        return {}
    return {"driver_info": DriverInfo()}


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


class _Memory:
    """A tiny expiring key-value store (fallback and the no-Redis mode)."""

    def __init__(self, max_keys: int = 10_000) -> None:
        self.data: dict[str, tuple[float, str]] = {}
        self.max_keys = max_keys

    def _alive(self, key: str) -> tuple[float, str] | None:
        item = self.data.get(key)
        if item is None:
            return None
        if item[0] < time.monotonic():
            self.data.pop(key, None)
            return None
        return item

    def get(self, key: str) -> str | None:
        item = self._alive(key)
        return item[1] if item else None

    def set(self, key: str, value: str, ttl: float, nx: bool = False) -> bool:
        if nx and self._alive(key) is not None:
            return False
        if len(self.data) >= self.max_keys:
            now = time.monotonic()
            for k in [k for k, (exp, _) in self.data.items() if exp < now] or list(self.data)[: self.max_keys // 10]:
                self.data.pop(k, None)
        self.data[key] = (time.monotonic() + ttl, value)
        return True

    def incr(self, key: str, ttl: float) -> int:
        item = self._alive(key)
        value = int(item[1]) + 1 if item else 1
        self.data[key] = (item[0] if item else time.monotonic() + ttl, str(value))
        return value

    def delete(self, key: str) -> None:
        self.data.pop(key, None)


class Store:
    """The bot's state. ``prefix`` namespaces every key (tests use one prefix each)."""

    def __init__(self, url: str | None, prefix: str = "wd:") -> None:
        self.prefix = prefix
        self.url = url
        self.memory = _Memory()
        self.down = False
        #: seconds a claim on the ack path waits for Redis (``WD_ACK_REDIS_BUDGET``; set by the middleware)
        self.ack_budget = 0.2
        self.redis: aioredis.Redis | None = None
        if url:
            # a blocking pool: past MAX_CONNECTIONS a command waits POOL_WAIT seconds for a free connection, where
            # redis-py's default pool raised at once and the store counted Redis as down (a burst of 1,000
            # requests a second, issue 26 §3)
            pool = aioredis.BlockingConnectionPool.from_url(
                url,
                max_connections=MAX_CONNECTIONS,
                timeout=POOL_WAIT,
                socket_connect_timeout=0.5,
                socket_timeout=1.0,
                retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), 1),
                decode_responses=True,
                **_driver_info(),
            )
            self.redis = aioredis.Redis(connection_pool=pool)

    def key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    def _failed(self, op: str, exc: BaseException) -> None:
        metrics.REDIS_ERRORS.labels(op).inc()
        if not self.down:
            log.warning(
                "Redis unavailable (%s: %s): answering without cache, follow-up memory or shared dedup",
                op,
                type(exc).__name__,
            )
        self.down = True

    def _ok(self) -> None:
        if self.down:
            log.warning("Redis is back: cache, follow-ups and dedup restored")
        self.down = False

    async def ping(self) -> bool:
        if self.redis is None:
            return True
        try:
            await self.redis.ping()
        except _ERRORS as exc:
            self._failed("ping", exc)
            return False
        self._ok()
        return True

    async def claim(self, name: str, ttl: int = 3600) -> bool:
        """True the first time ``name`` is claimed within ``ttl`` seconds (SET NX EX).

        Used on the ack path (the HTTP replay check): it waits for Redis :attr:`ack_budget` seconds at most, then
        decides from process memory (logged, counted in ``workload_doctor_dedup_fallbacks``) while the SET goes
        on in the background, so a later duplicate is still caught by Redis."""
        key = self.key("claim", name)
        if self.redis is None:
            return self.memory.set(key, "1", ttl, nx=True)
        setting: asyncio.Task[Any] = asyncio.ensure_future(self.redis.set(key, "1", nx=True, ex=ttl))
        done, _ = await asyncio.wait({setting}, timeout=self.ack_budget)
        if not done:
            metrics.DEDUP_FALLBACKS.labels("slow").inc()
            log.warning(
                "Redis did not answer the claim of %s within %.2f s: decided in process memory", name, self.ack_budget
            )
            _BACKGROUND.add(setting)
            setting.add_done_callback(_settled)
            return self.memory.set(key, "1", ttl, nx=True)
        try:
            ok = setting.result()
        except _ERRORS as exc:
            self._failed("claim", exc)
            return self.memory.set(key, "1", ttl, nx=True)
        self._ok()
        # also remember locally: a later outage must not let a duplicate through
        self.memory.set(key, "1", ttl, nx=False)
        return bool(ok)

    async def allow(self, team: str, user: str, limit: int, window: int = 60) -> bool:
        """Per-user rate limit: at most ``limit`` requests per ``window`` seconds (fixed window)."""
        bucket = str(int(time.time() // window))
        key = self.key("rate", team or "-", user or "-", bucket)
        if self.redis is None:
            return self.memory.incr(key, window + 5) <= limit
        try:
            pipe = self.redis.pipeline()
            pipe.incr(key)
            pipe.expire(key, window + 5)
            count, _ = await pipe.execute()
        except _ERRORS as exc:
            self._failed("rate limit", exc)
            return True
        self._ok()
        return int(count) <= limit

    async def get_json(self, *parts: str) -> Any:
        key = self.key(*parts)
        if self.redis is None:
            raw = self.memory.get(key)
        else:
            try:
                raw = _text(await self.redis.get(key))
            except _ERRORS as exc:
                self._failed("get", exc)
                return None
            self._ok()
        return _decode(raw)

    async def put_json(self, parts: tuple[str, ...], value: Any, ttl: int) -> bool:
        key = self.key(*parts)
        raw = json.dumps(value, separators=(",", ":"), default=str)
        if self.redis is None:
            return self.memory.set(key, raw, ttl)
        try:
            await self.redis.set(key, raw, ex=ttl)
        except _ERRORS as exc:
            self._failed("set", exc)
            return False
        self._ok()
        return True

    async def delete(self, *parts: str) -> None:
        key = self.key(*parts)
        if self.redis is None:
            self.memory.delete(key)
            return
        try:
            await self.redis.delete(key)
        except _ERRORS as exc:
            self._failed("delete", exc)
            return
        self._ok()

    async def take_json(self, *parts: str) -> Any:
        """Get and delete atomically (GETDEL): a follow-up answer is consumed once, by one replica."""
        key = self.key(*parts)
        if self.redis is None:
            raw = self.memory.get(key)
            self.memory.delete(key)
        else:
            try:
                raw = _text(await self.redis.getdel(key))
            except _ERRORS as exc:
                self._failed("getdel", exc)
                return None
            self._ok()
        return _decode(raw)

    # -- watches ----------------------------------------------------------------------------------

    async def create_watch(self, watch_id: str, value: Any, ttl: int = WATCH_TTL) -> bool:
        """Claim a new watch id (SET NX EX ``ttl``): False when a watch with this id is already active.

        It enters the index of active watches at its first :meth:`save_watch`, so a watch whose
        start never finished is forgotten after ``ttl``. With Redis down the claim is made in
        process memory only (and logged)."""
        key = self.key("watch", watch_id)
        raw = json.dumps(value, separators=(",", ":"), default=str)
        if self.redis is None:
            return self.memory.set(key, raw, ttl, nx=True)
        try:
            created = await self.redis.set(key, raw, nx=True, ex=ttl)
        except _ERRORS as exc:
            self._failed("watch create", exc)
            log.warning("watch %s kept in process memory only (Redis unavailable)", watch_id)
            return self.memory.set(key, raw, ttl, nx=True)
        self._ok()
        return bool(created)

    async def save_watch(self, watch_id: str, value: Any) -> bool:
        """Store the watch's current state (it stays in the index). False when Redis is down."""
        key = self.key("watch", watch_id)
        raw = json.dumps(value, separators=(",", ":"), default=str)
        self.memory.set(key, raw, WATCH_TTL)
        if self.redis is None:
            return True
        try:
            pipe = self.redis.pipeline()
            pipe.set(key, raw, ex=WATCH_TTL)
            pipe.sadd(self.key("watches"), watch_id)
            await pipe.execute()
        except _ERRORS as exc:
            self._failed("watch save", exc)
            return False
        self._ok()
        return True

    async def load_watch(self, watch_id: str) -> Any:
        return await self.get_json("watch", watch_id)

    async def remove_watch(self, watch_id: str) -> None:
        """Forget a finished watch: its state, its index entry and its lease."""
        self.memory.delete(self.key("watch", watch_id))
        self.memory.delete(self.key("lease", f"watch:{watch_id}"))
        if self.redis is None:
            return
        try:
            pipe = self.redis.pipeline()
            pipe.delete(self.key("watch", watch_id), self.key("lease", f"watch:{watch_id}"))
            pipe.srem(self.key("watches"), watch_id)
            await pipe.execute()
        except _ERRORS as exc:
            self._failed("watch remove", exc)
            return
        self._ok()

    async def active_watches(self) -> list[str]:
        """Ids of the watches in the index (empty without Redis: nothing to carry on)."""
        if self.redis is None:
            return []
        try:
            members = await self.redis.smembers(self.key("watches"))
        except _ERRORS as exc:
            self._failed("watch list", exc)
            return []
        self._ok()
        return sorted(str(_text(m)) for m in members)

    async def forget_watch_index(self, watch_id: str) -> None:
        """Drop a stale index entry (its state expired)."""
        if self.redis is None:
            return
        try:
            await self.redis.srem(self.key("watches"), watch_id)
        except _ERRORS as exc:
            self._failed("watch index", exc)

    # -- leases (one mechanism for all scheduled work: watches, digest slots) ------------------------

    async def lease(self, name: str, owner: str, ttl: float) -> int | None:
        """Take or renew the lease ``name`` for ``ttl`` seconds.

        Returns the lease's fencing token (a positive int, new for every fresh holder, kept while the holder
        renews), 0 when another owner holds it, or None when Redis is unavailable (the caller decides whether
        to go on from memory). A holder writes shared state only with :meth:`fenced_put`, so a holder that
        stalled past its lease cannot overwrite what its successor wrote."""
        key = self.key("lease", name)
        ms = max(1, int(ttl * 1000))
        if self.redis is None:
            held = self.memory.get(key)
            if held is not None and held.split("|", 1)[0] != owner:
                return 0
            token = int(held.split("|", 1)[1]) if held else self.memory.incr(self.key("leasetoken", name), 86400 * 365)
            self.memory.set(key, f"{owner}|{token}", ttl)
            return token
        try:
            result = await self.redis.eval(_LEASE, 2, key, self.key("leasetoken", name), owner, ms)
        except _ERRORS as exc:
            self._failed("lease", exc)
            return None
        self._ok()
        return int(result)

    async def release(self, name: str, owner: str) -> None:
        """Give the lease up, if ``owner`` still holds it."""
        key = self.key("lease", name)
        held = self.memory.get(key)
        if held is not None and held.split("|", 1)[0] == owner:
            self.memory.delete(key)
        if self.redis is None:
            return
        try:
            await self.redis.eval(_LEASE_RELEASE, 1, key, owner)
        except _ERRORS as exc:
            self._failed("lease release", exc)

    async def fenced_put(
        self, lease: str, owner: str, token: int, parts: tuple[str, ...], value: Any, ttl: int
    ) -> bool:
        """Write ``value`` at ``parts`` only while ``owner`` holds ``lease`` with ``token`` (atomically).

        False when the lease moved on (or Redis is down): the caller must stop, its successor owns the state."""
        if self.redis is None:
            held = self.memory.get(self.key("lease", lease))
            if held != f"{owner}|{token}":
                return False
            return await self.put_json(parts, value, ttl)
        raw = json.dumps(value, separators=(",", ":"), default=str)
        try:
            ok = await self.redis.eval(
                _FENCED_SET, 2, self.key("lease", lease), self.key(*parts), f"{owner}|{token}", raw, ttl
            )
        except _ERRORS as exc:
            self._failed("fenced write", exc)
            return False
        self._ok()
        return bool(ok)

    # -- event claims (at-least-once answers: a lease renewed while the answer is worked on) ------------------

    async def claim_event(
        self, event_id: str, owner: str, ttl: float, body: dict[str, Any] | None = None
    ) -> EventClaimed:
        """Claim the Slack event ``event_id`` for ``ttl`` seconds (the lease ``evt:<id>``, renewed with
        :meth:`lease` while the answer is worked on, see :mod:`handlers.claims`).

        An event whose state says it was answered stays a duplicate; one whose holder died (its lease expired
        unanswered) is claimed again, with the state its holder recorded. With Redis down the claim is made in
        process memory (``shared`` False): a duplicate delivered to this replica is still caught.

        ``body`` (the request) is kept with the first claim, in the same script, until the question is answered
        (:meth:`forget_question`): a replica takes over the question of one that died (:meth:`orphaned_questions`)."""
        name = f"evt:{event_id}"
        lease, counter, state_key = (
            self.key("lease", name),
            self.key("leasetoken", name),
            self.key("evtstate", event_id),
        )
        kept = _kept_body(event_id, body)
        if self.redis is not None:
            try:
                token, raw = await self.redis.eval(
                    _EVENT_CLAIM,
                    5,
                    lease,
                    counter,
                    state_key,
                    self.key("question", event_id),
                    self.key("questions"),
                    owner,
                    int(ttl * 1000),
                    kept,
                    f"{time.time():.3f}",
                    QUESTION_TTL,
                    event_id,
                )
            except _ERRORS as exc:
                self._failed("event claim", exc)
            else:
                self._ok()
                return EventClaimed(int(token), _decode(_text(raw) or None) or {})
        state = _decode(self.memory.get(state_key)) or {}
        if state.get("done"):
            return EventClaimed(-1, state, shared=self.redis is None)
        if self.memory.get(lease) is not None:
            return EventClaimed(0, state, shared=self.redis is None)
        token = self.memory.incr(counter, EVENT_STATE_TTL)
        self.memory.set(lease, f"{owner}|{token}", ttl)
        return EventClaimed(token, state, shared=self.redis is None)

    async def note_event(self, event_id: str, owner: str, token: int, state: dict[str, Any]) -> bool:
        """Record the state of a claimed event (its progress message; ``done`` once answered), fenced by the
        claim: False when the claim moved on to another replica (or Redis is down)."""
        key = self.key("evtstate", event_id)
        # also remember locally: a duplicate delivered here during a later outage is still caught
        self.memory.set(key, json.dumps(state, separators=(",", ":")), EVENT_STATE_TTL)
        if self.redis is None:
            return True
        return await self.fenced_put(f"evt:{event_id}", owner, token, ("evtstate", event_id), state, EVENT_STATE_TTL)

    async def forget_question(self, event_id: str) -> None:
        """The question ``event_id`` was answered: no replica takes it over (its body and index entry dropped)."""
        if self.redis is None:
            return
        try:
            pipe = self.redis.pipeline()
            pipe.zrem(self.key("questions"), event_id)
            pipe.delete(self.key("question", event_id))
            await pipe.execute()
        except _ERRORS as exc:
            self._failed("question forget", exc)

    async def orphaned_questions(self, limit: int = 20) -> list[dict[str, Any]]:
        """Requests acked and not answered whose claim no live replica holds (its holder died, or gave it up at
        shutdown), oldest first, at most ``limit``; those past :data:`QUESTION_TTL` (or already forgotten) leave
        the index. Empty without Redis."""
        if self.redis is None:
            return []
        index = self.key("questions")
        try:
            await self.redis.zremrangebyscore(index, "-inf", time.time() - QUESTION_TTL)
            names = [str(_text(n)) for n in await self.redis.zrange(index, 0, 4 * limit)]
            if not names:
                return []
            pipe = self.redis.pipeline()
            for name in names:
                pipe.exists(self.key("lease", f"evt:{name}"))
                pipe.get(self.key("question", name))
                pipe.get(self.key("evtstate", name))
            found = await pipe.execute()
        except _ERRORS as exc:
            self._failed("question sweep", exc)
            return []
        self._ok()
        orphans: list[dict[str, Any]] = []
        for name, held, raw, state in zip(names, found[::3], found[1::3], found[2::3], strict=True):
            body = _decode(_text(raw))
            if not isinstance(body, dict) or (_decode(_text(state)) or {}).get("done"):
                await self.forget_question(name)
            elif not held and len(orphans) < limit:
                orphans.append(body)
        return orphans

    async def close(self) -> None:
        if self.redis is not None:
            try:
                await self.redis.aclose()
                await self.redis.connection_pool.disconnect()  # the pool is ours (given to the client, not made by it)
            except _ERRORS:
                pass


def typed_text_redacted(value: Any, key: str | None = None) -> Any:
    """``value`` with every ``text`` string (what a person typed: the event's, the command's, its blocks')
    redacted: a credential typed into a question is never stored (nothing unsanitized is kept), while ids,
    ``response_url`` and the rest stay as Slack sent them, for the takeover's answer."""
    if isinstance(value, str):
        return redact(value) if key == "text" else value
    if isinstance(value, dict):
        return {k: typed_text_redacted(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [typed_text_redacted(v, key) for v in value]
    return value


def _kept_body(event_id: str, body: dict[str, Any] | None) -> str:
    """The request to keep for a takeover, as JSON ('' none: no body, or larger than :data:`QUESTION_MAX_BYTES`);
    typed text redacted (:func:`typed_text_redacted`)."""
    if not body:
        return ""
    raw = json.dumps(typed_text_redacted(body), separators=(",", ":"), default=str)
    if len(raw) > QUESTION_MAX_BYTES:
        log.warning("question %s not kept for a takeover: %d bytes", event_id, len(raw))
        return ""
    return raw


def _decode(raw: str | None) -> Any:
    """JSON from Redis, or None when absent or not JSON (a corrupt entry is treated as missing)."""
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None
