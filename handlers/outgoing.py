"""The last seam before Slack: every text the bot posts passes :func:`clean_text` (issue 23).

Reports are sanitized when they are built (:mod:`diagnosis.report`), but a progress line, an error, a follow-up
question or an ephemeral note can quote what a person typed ("Diagnosing `... password=x`"). Every message
leaving through :class:`handlers.slack_surface.SlackSurface` (``chat.postMessage``, ``chat.update``,
``chat.postEphemeral``, ``files.upload``) or a ``response_url`` (:class:`handlers.slack_http.BoundedWebhookClient`)
is cleaned here, so nothing can bypass it: control and invisible characters are removed, credentials masked
(:func:`diagnosis.redact.redact`, the rules every report passes) and broadcast/group mentions made inert. The
bot's own user mentions (``<@U…>`` of the asker) stay; text quoted from people or evidence is escaped by the
renderers (``&lt;@…&gt;``) and so never reaches this point active.

Only display text is touched (``text`` of a message and of every Block Kit text object, ``alt_text``, a
snippet's title and content): a button's ``value`` and ``action_id`` are the bot's own data.
"""

from __future__ import annotations

import re
from typing import Any

from diagnosis.redact import redact, strip_control

#: broadcast and group mentions: the bot never posts one itself
_BROADCAST = re.compile(r"<!(?:channel|here|everyone|subteam\^[^>]*)(?:\|[^>]*)?>", re.IGNORECASE)
#: the display fields of a message and its blocks
_DISPLAY = frozenset({"text", "alt_text", "fallback", "pretext", "title"})


#: an emoji presentation selector right after a symbol (the bot's own "ℹ️", "⚠️"): kept, it renders the emoji
_EMOJI_VS = re.compile(r"(?<=[\u2000-\u2bff\u3030\u303d\u3297\u3299])\ufe0f")
_KEPT_VS = "\ue000"  # a private-use stand-in while the invisible characters are removed


def clean_text(text: str) -> str:
    """``text`` as it may be posted: no control character, no credential, no broadcast mention. An emoji's
    presentation selector (U+FE0F after a symbol) stays: removing it turns the bot's own "ℹ️" into "ℹ"."""
    if not text:
        return text
    kept = _EMOJI_VS.sub(_KEPT_VS, text.replace(_KEPT_VS, ""))
    cleaned = strip_control(kept).replace(_KEPT_VS, "\ufe0f")
    return _BROADCAST.sub("[broadcast mention removed]", redact(cleaned))


def clean_payload(value: Any, key: str | None = None) -> Any:
    """``value`` (a message payload, its blocks) with :func:`clean_text` applied to every display string."""
    if isinstance(value, str):
        return clean_text(value) if key in _DISPLAY else value
    if isinstance(value, dict):
        return {k: clean_payload(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_payload(v) for v in value]
    return value
