"""Slack answers read with a cap (issue 15 §1, issue 22 §2): the Web API session's and every ``response_url``'s.

The Slack SDK reads every answer whole (``await resp.text()``). The bot's Web API session reads them through
:class:`BoundedSlackResponse` (at most ``WD_MAX_BODY_BYTES``); a ``response_url`` answer (Bolt's ``respond``,
and :func:`handlers.middleware.tell_privately`) goes through slack_sdk's ``AsyncWebhookClient``, which opens a
session of its own per call: :class:`BoundedWebhookClient` opens it with the same bounded response class and a
wall clock (:data:`WEBHOOK_SECONDS`), and :class:`BoundedRespond` is Bolt's ``respond`` on that client (set on
every request's context by the middleware). A body past the cap raises :class:`SlackBodyTooLarge`, which the
callers already treat as a failed answer; a server that never stops sending ends at the wall clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aiohttp
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.context.respond.internals import _build_message
from slack_sdk.models.attachments import Attachment
from slack_sdk.models.blocks import Block
from slack_sdk.webhook.async_client import AsyncWebhookClient, WebhookResponse

from diagnosis import errors
from diagnosis.config import max_body_bytes as env_max_body_bytes
from handlers.outgoing import clean_payload

#: Wall-clock seconds of one ``response_url`` call (slack_sdk's own default is 30).
WEBHOOK_SECONDS = 15


class SlackBodyTooLarge(errors.BodyTooLarge, aiohttp.ClientPayloadError):
    """A Slack Web API answer longer than the cap (an ``aiohttp.ClientPayloadError`` too: a broken answer)."""


class BoundedSlackResponse(aiohttp.ClientResponse):
    """An aiohttp response whose body is read at most :attr:`max_body_bytes` bytes (``WD_MAX_BODY_BYTES``): the
    Slack SDK reads every answer whole (``await resp.text()``). The session's ``timeout`` (15 s total) is the
    wall clock. Raises :class:`SlackBodyTooLarge` past the cap, or on a ``Content-Length`` above it before a
    byte is read; the connection is closed, never reused."""

    max_body_bytes: int = 0  # bytes; 0: no cap (set by :func:`bounded_response_class`)

    async def read(self) -> bytes:
        if self._body is None:
            limit = self.max_body_bytes
            try:
                declared = self.content_length
                if limit and declared is not None and declared > limit:
                    raise SlackBodyTooLarge(self.status, self.url.path, limit, 0)
                parts: list[bytes] = []
                received = 0
                while chunk := await self.content.read(64 * 1024):
                    received += len(chunk)
                    if limit and received > limit:
                        raise SlackBodyTooLarge(self.status, self.url.path, limit, received)
                    parts.append(chunk)
                self._body = b"".join(parts)
            except BaseException:
                self.close()
                raise
        return await super().read()  # the body is in place: the base class only waits for the release


def bounded_response_class(limit: int | None = None) -> type[BoundedSlackResponse]:
    """:class:`BoundedSlackResponse` capped at ``limit`` bytes (default ``WD_MAX_BODY_BYTES``)."""
    cap = limit if limit is not None else env_max_body_bytes()
    return type("BoundedSlackResponse", (BoundedSlackResponse,), {"max_body_bytes": cap})


class BoundedWebhookClient(AsyncWebhookClient):
    """slack_sdk's ``response_url`` client whose own per-call session reads answers with a cap (``limit`` bytes,
    default ``WD_MAX_BODY_BYTES``) and a wall clock of ``timeout`` seconds (default :data:`WEBHOOK_SECONDS`)."""

    def __init__(self, url: str, *, limit: int | None = None, timeout: int = WEBHOOK_SECONDS, **kwargs: Any) -> None:
        super().__init__(url, timeout=timeout, **kwargs)
        self.response_class = bounded_response_class(limit)

    async def send_dict(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> WebhookResponse:
        """Every ``response_url`` message (``respond``, a private refusal) is cleaned as a Web API post is
        (:mod:`handlers.outgoing`)."""
        return await super().send_dict(clean_payload(body), headers)

    async def _perform_http_request(self, *, body: dict[str, Any], headers: dict[str, str]) -> WebhookResponse:
        if self.session is not None and not self.session.closed:
            return await super()._perform_http_request(body=body, headers=headers)
        self.session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self.timeout),
            auth=self.auth,
            trust_env=self.trust_env_in_session,
            response_class=self.response_class,
        )
        try:
            return await super()._perform_http_request(body=body, headers=headers)
        finally:
            await self.session.close()
            self.session = None


class BoundedRespond(AsyncRespond):
    """Bolt's ``respond`` (a message to the request's ``response_url``) through :class:`BoundedWebhookClient`."""

    async def __call__(
        self,
        text: str | dict[str, Any] = "",
        blocks: Sequence[dict[str, Any] | Block] | None = None,
        attachments: Sequence[dict[str, Any] | Attachment] | None = None,
        response_type: str | None = None,
        replace_original: bool | None = None,
        delete_original: bool | None = None,
        unfurl_links: bool | None = None,
        unfurl_media: bool | None = None,
        thread_ts: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> WebhookResponse:
        if self.response_url is None:
            raise ValueError("respond is unsupported here as there is no response_url")
        client = BoundedWebhookClient(self.response_url, proxy=self.proxy, ssl=self.ssl)
        if isinstance(text, dict):
            return await client.send_dict(_build_message(**text))
        message = _build_message(
            text=text,
            blocks=blocks,
            attachments=attachments,
            response_type=response_type,
            replace_original=replace_original,
            delete_original=delete_original,
            unfurl_links=unfurl_links,
            unfurl_media=unfurl_media,
            thread_ts=thread_ts,
            metadata=metadata,
        )
        return await client.send_dict(message)
