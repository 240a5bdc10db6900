"""The Slack Web API as a :class:`~handlers.doctor.Surface`.

Posts never parse links or names (``unfurl_*`` off, no ``link_names``); every payload carries a
``text`` fallback. When the bot is not in the channel of a slash command it answers through the
command's ``response_url`` instead.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from handlers.blocks import Message, Snippet

log = logging.getLogger(__name__)
_NOT_MEMBER = {"not_in_channel", "channel_not_found", "is_archived", "restricted_action"}


class SlackSurface:
    def __init__(self, client: AsyncWebClient, channel: str, respond: Any = None) -> None:
        self.client = client
        self.channel = channel
        self.respond = respond

    async def post(self, message: Message, thread_ts: str | None = None) -> str | None:
        try:
            resp = await self.client.chat_postMessage(
                channel=self.channel,
                text=message.text,
                blocks=message.blocks,
                thread_ts=thread_ts,
                unfurl_links=False,
                unfurl_media=False,
            )
        except SlackApiError as exc:
            if self.respond is not None and exc.response.get("error") in _NOT_MEMBER:
                log.info("not a member of %s: answering through response_url", self.channel)
                await self.respond(
                    text=message.text,
                    blocks=message.blocks,
                    response_type="in_channel",
                    replace_original=False,
                )
                return None
            raise
        return str(resp["ts"])

    async def update(self, ts: str, message: Message) -> None:
        await self.client.chat_update(channel=self.channel, ts=ts, text=message.text, blocks=message.blocks)

    async def private(self, user: str, message: Message, thread_ts: str | None = None) -> None:
        if self.respond is not None:
            await self.respond(
                text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False
            )
            return
        await self.client.chat_postEphemeral(
            channel=self.channel, user=user, text=message.text, blocks=message.blocks, thread_ts=thread_ts
        )

    async def upload(self, snippet: Snippet, thread_ts: str | None = None) -> bool:
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
        resp = await self.client.chat_postMessage(
            channel=self.channel,
            text=message.text,
            blocks=message.blocks,
            unfurl_links=False,
            unfurl_media=False,
            metadata={"event_type": event_type, "event_payload": {"key": key}},
        )
        return str(resp["ts"])

    async def find_tagged(self, event_type: str, key: str, oldest: float) -> str | None:
        """The ts of a root message of this channel posted since ``oldest`` (epoch seconds) whose metadata carries
        ``key``, or None (``conversations.history`` with ``include_all_metadata``, paged)."""
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
                if meta.get("event_type") == event_type and (meta.get("event_payload") or {}).get("key") == key:
                    return str(msg.get("ts"))
            cursor = ((resp.get("response_metadata") or {}).get("next_cursor")) or None
            if not cursor:
                return None
        return None
