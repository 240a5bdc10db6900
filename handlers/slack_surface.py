"""The Slack Web API as a :class:`~handlers.doctor.Surface`.

Posts never parse links or names (``unfurl_*`` off, no ``link_names``); every payload carries a
``text`` fallback, and every text posted is cleaned first (:mod:`handlers.outgoing`: no credential, whatever
the message quotes). When the bot is not in the channel of a slash command it answers through the
command's ``response_url`` instead.

An answer is never silently dropped (issue 15 §2): a call that failed in a way worth repeating (a 5xx, also
with a non-JSON body, which slack_sdk's retry handlers do not retry; a connection error) is retried a few
times; a ``chat.update`` that still fails becomes a new message in the thread (also sent to the channel), a
``chat.postMessage`` that still fails goes through the command's ``response_url`` when there is one. The answer
itself (:meth:`SlackSurface.deliver`, issue 24) goes on past those: to the asker alone in the thread
(``chat.postEphemeral``), then in a direct message, with a bounded pause before each way; only an answer that
no way delivered is counted lost (``workload_doctor_answers_lost``, one log line).

Within the work of a claimed Slack event (:mod:`handlers.claims`) the first message posted is recorded in the
claim, and when the event is a redelivery whose first holder died mid-answer, that holder's stale
"Diagnosing…" message is updated in place instead of posting a new one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from diagnosis import metrics
from handlers.blocks import Message, Snippet
from handlers.claims import PROGRESS_TAG
from handlers.outgoing import clean_payload, clean_text
from handlers.protocols import AnswerLost
from handlers.shedding import current_claim

log = logging.getLogger(__name__)
_NOT_MEMBER = {"not_in_channel", "channel_not_found", "is_archived", "restricted_action"}
#: the metadata of the message being posted (a claimed delivery's first message carries its event's tag)
_TAG: ContextVar[dict[str, Any] | None] = ContextVar("wd_progress_tag", default=None)
#: attempts of one call (after slack_sdk's own retry handlers) and the first pause between them (doubling)
ATTEMPTS = 3
BACKOFF = 0.3
#: the pause before the answer's next way after one failed (doubling, at most FALLBACK_PAUSE_MAX): seconds
FALLBACK_PAUSE = 0.5
FALLBACK_PAUSE_MAX = 4.0


def _status(exc: SlackApiError) -> int:
    """The HTTP status of a failed call: a SlackResponse has ``status_code``, a raw aiohttp response (the
    non-JSON body case) ``status``."""
    resp = exc.response
    return int(getattr(resp, "status_code", None) or getattr(resp, "status", None) or 0)


def _error(exc: SlackApiError) -> str | None:
    """Slack's ``error`` code, when the response was JSON."""
    get = getattr(exc.response, "get", None)
    return str(get("error")) if callable(get) and get("error") else None


def transient(exc: BaseException) -> bool:
    """Worth another attempt: a 5xx (whatever its body), an unreadable body, a connection error or timeout."""
    if isinstance(exc, SlackApiError):
        return _status(exc) >= 500 or (_error(exc) is None and "non-JSON" in str(exc))
    return isinstance(exc, aiohttp.ClientError | asyncio.TimeoutError | ConnectionError)


async def call(method: str, fn: Callable[..., Awaitable[Any]], **kwargs: Any) -> Any:
    """``fn(**kwargs)`` (a Web API method), retried :data:`ATTEMPTS` times in all when it fails transiently."""
    for attempt in range(ATTEMPTS):
        try:
            return await fn(**kwargs)
        except Exception as exc:
            if attempt + 1 >= ATTEMPTS or not transient(exc):
                raise
            metrics.SLACK_RETRIES.labels(method).inc()
            log.warning("%s failed (%s); retrying", method, _describe(exc))
            await asyncio.sleep(BACKOFF * 2**attempt)
    raise AssertionError("unreachable")


def outgoing(message: Message) -> Message:
    """``message`` as it may be posted (:mod:`handlers.outgoing`): every display text cleaned, idempotent."""
    return Message(text=clean_text(message.text), blocks=clean_payload(message.blocks))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return f"HTTP {_status(exc)} {_error(exc) or 'unreadable body'}"
    return type(exc).__name__


#: one way of delivering the answer: (its fallback kind, the method it calls, the call)
_Way = tuple[str, str, Callable[[], Awaitable[Any]]]


class SlackSurface:
    def __init__(self, client: AsyncWebClient, channel: str, respond: Any = None, asker: str | None = None) -> None:
        self.client = client
        self.channel = channel
        self.respond = respond
        #: who asked (a user ID): the answer's last ways reach them alone
        self.asker = asker
        #: the thread of each message this surface posted (None: a root message), for the update fallback
        self._threads: dict[str, str | None] = {}

    async def post(self, message: Message, thread_ts: str | None = None) -> str | None:
        return await self._post_claimed(message, thread_ts, self._post)

    async def _post_claimed(
        self, message: Message, thread_ts: str | None, send: Callable[[Message, str | None], Awaitable[str | None]]
    ) -> str | None:
        claim = current_claim()
        stale = claim.take_stale(self.channel) if claim is not None else None
        if stale is not None and not stale.get("ts"):
            # its holder died while posting it: the message, when Slack got it, carries the event's tag
            found = await self._find_progress(str(claim.event_id), stale.get("thread"))
            stale = {**stale, "ts": found} if found else None
        if stale is not None:
            # a redelivery whose first holder died: its "Diagnosing…" message becomes this one
            try:
                await self._update(str(stale["ts"]), message)
                self._threads[str(stale["ts"])] = stale.get("thread")
                await claim.posted(self.channel, str(stale["ts"]), stale.get("thread"))
                return str(stale["ts"])
            except Exception as exc:
                log.warning("could not update the stale message %s (%s): posting anew", stale["ts"], _describe(exc))
        token = None
        if claim is not None and not claim.noted:
            await claim.posting(self.channel, thread_ts)
            token = _TAG.set({"event_type": PROGRESS_TAG, "event_payload": {"key": str(claim.event_id)}})
        try:
            ts = await send(message, thread_ts)
        finally:
            if token is not None:
                _TAG.reset(token)
        if ts is not None and claim is not None:
            await claim.posted(self.channel, ts, thread_ts)
        return ts

    async def _find_progress(self, event_id: str, thread: str | None) -> str | None:
        """The ts of this channel's message tagged as ``event_id``'s progress message (in ``thread``, else among the
        newest root messages), or None: not found, or Slack could not be asked (a second message then)."""
        try:
            if thread:
                resp = await self.client.conversations_replies(
                    channel=self.channel, ts=thread, include_all_metadata=True, limit=200
                )
            else:
                resp = await self.client.conversations_history(
                    channel=self.channel, include_all_metadata=True, limit=50
                )
        except Exception as exc:
            log.warning("could not look for a dead holder's progress message (%s)", _describe(exc))
            return None
        for msg in resp.get("messages") or []:
            meta = msg.get("metadata") or {}
            if meta.get("event_type") == PROGRESS_TAG and (meta.get("event_payload") or {}).get("key") == event_id:
                return str(msg.get("ts"))
        return None

    async def _send(self, message: Message, thread_ts: str | None, broadcast: bool = False) -> str:
        """``chat.postMessage`` in this channel (retried), nothing else."""
        message = outgoing(message)
        resp = await call(
            "chat.postMessage",
            self.client.chat_postMessage,
            channel=self.channel,
            text=message.text,
            blocks=message.blocks,
            thread_ts=thread_ts,
            reply_broadcast=True if broadcast and thread_ts else None,
            unfurl_links=False,
            unfurl_media=False,
            metadata=_TAG.get(),
        )
        ts = str(resp["ts"])
        self._threads[ts] = thread_ts
        return ts

    async def _respond(self, message: Message) -> None:
        message = outgoing(message)
        await self.respond(text=message.text, blocks=message.blocks, response_type="in_channel", replace_original=False)

    async def _post(self, message: Message, thread_ts: str | None, broadcast: bool = False) -> str | None:
        try:
            return await self._send(message, thread_ts, broadcast)
        except SlackApiError as exc:
            if self.respond is not None and (_error(exc) in _NOT_MEMBER or transient(exc)):
                if _error(exc) in _NOT_MEMBER:
                    log.info("not a member of %s: answering through response_url", self.channel)
                else:
                    log.warning("chat.postMessage failed (%s): answering through response_url", _describe(exc))
                    metrics.SLACK_FALLBACKS.labels("post_to_response_url").inc()
                try:
                    await self._respond(message)
                except Exception:
                    metrics.ANSWERS_LOST.labels("response_url").inc()
                    raise
                return None
            metrics.ANSWERS_LOST.labels("chat.postMessage").inc()
            raise
        except Exception:
            metrics.ANSWERS_LOST.labels("chat.postMessage").inc()
            raise

    async def _update(self, ts: str, message: Message) -> None:
        message = outgoing(message)
        await call(
            "chat.update",
            self.client.chat_update,
            channel=self.channel,
            ts=ts,
            text=message.text,
            blocks=message.blocks,
        )

    async def update(self, ts: str, message: Message) -> None:
        """Replace the message ``ts``; when Slack will not (after the retries), post ``message`` in its thread
        instead, also sent to the channel: the answer arrives, next to the message it should have replaced."""
        try:
            await self._update(ts, message)
            return
        except Exception as exc:
            log.warning("chat.update of %s failed (%s): posting the answer as a new message", ts, _describe(exc))
            metrics.SLACK_FALLBACKS.labels("update_to_post").inc()
        await self._post(message, self._threads.get(ts) or ts, broadcast=True)

    async def deliver(self, message: Message, progress_ts: str | None, root: str | None) -> None:
        """The answer, by the first way that works (issue 24): in place of the "diagnosing…" message
        ``progress_ts`` (or posted in ``root`` when there is none), a new message in its thread also sent to the
        channel, the command's ``response_url``, the asker alone in the thread, a direct message to the asker.
        Each way is retried (:func:`call`); before the next one a pause, doubling up to
        :data:`FALLBACK_PAUSE_MAX`. Raises :class:`AnswerLost`, counted and logged once, when none worked."""
        ways = self._ways(message, progress_ts, root)
        failed: list[str] = []
        for n, (kind, method, attempt) in enumerate(ways):
            if n:
                metrics.SLACK_FALLBACKS.labels(kind).inc()
                await asyncio.sleep(min(FALLBACK_PAUSE * 2 ** (n - 1), FALLBACK_PAUSE_MAX))
            try:
                await attempt()
                return
            except Exception as exc:
                failed.append(f"{method} ({_describe(exc)})")
                if n + 1 < len(ways):
                    log.warning("answer: %s failed (%s); next: %s", method, _describe(exc), ways[n + 1][0])
        metrics.ANSWERS_LOST.labels(ways[-1][1]).inc()
        log.error("answer lost in %s for %s: every way failed: %s", self.channel, self.asker or "-", "; ".join(failed))
        raise AnswerLost(self.channel)

    def _ways(self, message: Message, progress_ts: str | None, root: str | None) -> list[_Way]:
        """The ways :meth:`deliver` tries, in order."""
        ways: list[_Way] = []
        thread = (self._threads.get(progress_ts) or progress_ts) if progress_ts else root
        if progress_ts:
            ways.append(("update", "chat.update", lambda: self._update(progress_ts, message)))
            ways.append(("update_to_post", "chat.postMessage", lambda: self._send(message, thread, broadcast=True)))
        else:
            ways.append(("post", "chat.postMessage", lambda: self._post_claimed(message, root, self._send)))
        if self.respond is not None:
            ways.append(("post_to_response_url", "response_url", lambda: self._respond(message)))
        if self.asker:
            asker = self.asker
            ways.append(("to_ephemeral", "chat.postEphemeral", lambda: self._ephemeral(asker, message, thread)))
            ways.append(("to_direct_message", "chat.postMessage", lambda: self._direct(asker, message)))
        return ways

    async def _ephemeral(self, user: str, message: Message, thread_ts: str | None) -> None:
        message = outgoing(message)
        await call(
            "chat.postEphemeral",
            self.client.chat_postEphemeral,
            channel=self.channel,
            user=user,
            text=message.text,
            blocks=message.blocks,
            thread_ts=thread_ts,
        )

    async def _direct(self, user: str, message: Message) -> None:
        """A direct message to ``user`` (``chat.postMessage`` to a user ID: the app's DM with them)."""
        message = outgoing(message)
        await call(
            "chat.postMessage",
            self.client.chat_postMessage,
            channel=user,
            text=message.text,
            blocks=message.blocks,
            unfurl_links=False,
            unfurl_media=False,
        )

    async def private(self, user: str, message: Message, thread_ts: str | None = None) -> None:
        message = outgoing(message)
        if self.respond is not None:
            await self.respond(
                text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False
            )
            return
        await self._ephemeral(user, message, thread_ts)

    async def upload(self, snippet: Snippet, thread_ts: str | None = None) -> bool:
        snippet = Snippet(
            title=clean_text(snippet.title), filename=snippet.filename, content=clean_text(snippet.content)
        )
        try:
            await self.client.files_upload_v2(
                channel=self.channel,
                thread_ts=thread_ts,
                content=snippet.content,
                filename=snippet.filename,
                title=snippet.title,
            )
        except SlackApiError as exc:
            log.warning("snippet upload failed (%s): posting it as thread replies", exc.response.get("error"))
            return False
        return True

    async def post_tagged(self, message: Message, event_type: str, key: str) -> str | None:
        """Post a root message carrying ``key`` in its Slack message metadata (an idempotency key)."""
        message = outgoing(message)
        resp = await self.client.chat_postMessage(
            channel=self.channel,
            text=message.text,
            blocks=message.blocks,
            unfurl_links=False,
            unfurl_media=False,
            metadata={"event_type": event_type, "event_payload": {"key": key}},
        )
        return str(resp["ts"])

    async def permalink(self, ts: str) -> str:
        """A link to the message ``ts`` of this channel (``chat.getPermalink``; the archive address without it)."""
        try:
            link = (await self.client.chat_getPermalink(channel=self.channel, message_ts=ts)).get("permalink")
        except Exception:
            link = None
        return str(link) if link else archive_link(self.channel, ts)

    async def find_tagged(self, event_type: str, key: str, oldest: float) -> str | None:
        """The ts of a root message of this channel posted since ``oldest`` (epoch seconds) whose metadata carries
        ``key``, or None (``conversations.history`` with ``include_all_metadata``, paged)."""
        found = await self.newest_tagged(event_type, key, oldest)
        return str(found.get("ts")) if found is not None else None

    async def newest_tagged(self, event_type: str, prefix: str, oldest: float) -> dict[str, Any] | None:
        """The newest root message of this channel posted since ``oldest`` whose metadata key starts with
        ``prefix`` (a whole key: that one), or None: the message as Slack gives it (``ts``, ``blocks``,
        ``metadata``). ``conversations.history`` (newest first) with ``include_all_metadata``, paged."""
        cursor: str | None = None
        for _ in range(10):
            resp = await self.client.conversations_history(
                channel=self.channel,
                oldest=f"{max(oldest, 0):.6f}",
                include_all_metadata=True,
                limit=200,
                cursor=cursor,
            )
            for msg in resp.get("messages") or []:
                meta = msg.get("metadata") or {}
                key = str((meta.get("event_payload") or {}).get("key") or "")
                if meta.get("event_type") == event_type and key.startswith(prefix):
                    return dict(msg)
            cursor = ((resp.get("response_metadata") or {}).get("next_cursor")) or None
            if not cursor:
                return None
        return None

    async def replies_of_mine(self, ts: str) -> int:
        """How many replies the bot posted in the thread of ``ts`` (``conversations.replies``, paged)."""
        me = await self.client.auth_test()
        user, bot = me.get("user_id"), me.get("bot_id")
        count, cursor = 0, None
        for _ in range(10):
            resp = await self.client.conversations_replies(channel=self.channel, ts=ts, limit=200, cursor=cursor)
            for msg in resp.get("messages") or []:
                if msg.get("ts") != ts and ((user and msg.get("user") == user) or (bot and msg.get("bot_id") == bot)):
                    count += 1
            cursor = ((resp.get("response_metadata") or {}).get("next_cursor")) or None
            if not cursor:
                break
        return count


def archive_link(channel: str, ts: str) -> str:
    """The archive address of a message (``https://slack.com/archives/C…/p1764…``), which Slack opens in the
    workspace of whoever follows it."""
    return f"https://slack.com/archives/{channel}/p{ts.replace('.', '')}"
