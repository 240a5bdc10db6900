"""The compact Slack card of a report (issue 13): what happened, why we think so, what to do.

The main message is a header (status emoji and the verdict in words), one verdict sentence with the
deciding numbers, up to four key facts as fields, a few deduplicated "why" lines with short source
labels, the next action, a context line (category, cluster / project, evidence strength) and buttons:
*Evidence* (the full quoted evidence with its sources, posted in the thread), *Logs* (the log tail
uploaded as a snippet), *Re-diagnose* (again, bypassing the cache) and the console links.
Everything that is not on the card is in :attr:`Card.evidence` / :attr:`Card.logs` (what the buttons
post), so nothing is dropped. Untrusted text goes through the escaping helpers of
:mod:`handlers.blocks` only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from diagnosis.backends import REGISTRY
from diagnosis.report import Report

#: the card's text budget (headers, sections, fields, context; button labels and URLs not counted)
CARD_MAX_BLOCKS = 12
CARD_MAX_CHARS = 1500
#: Every action id of the card's buttons starts with this (the middleware counts them as costly).
CARD_PREFIX = "wd_card"
EVIDENCE_ACTION = f"{CARD_PREFIX}_evidence"
LOGS_ACTION = f"{CARD_PREFIX}_logs"
REDIAGNOSE_ACTION = f"{CARD_PREFIX}_rediagnose"
CARD_ACTIONS = (EVIDENCE_ACTION, LOGS_ACTION, REDIAGNOSE_ACTION)
#: "was this right?" (issue 28, handlers.feedback): the value is the answer's reference, nothing else
RIGHT_ACTION = "wd_fb_right"
WRONG_ACTION = "wd_fb_wrong"


def action_matcher(ids: Iterable[str] = (), numbered: Iterable[str] = ()) -> re.Pattern[str]:
    """The anchored pattern a listener registers for its buttons: exactly one of ``ids``, or one of the
    ``numbered`` prefixes followed by ``_<n>`` (``wd_choice_0``, ``wd_link_3``). Written from the constants the
    renderers build the buttons with, so an id is written once."""
    exact = [re.escape(i) for i in ids]
    counted = [rf"{re.escape(p)}_\d+" for p in numbered]
    return re.compile(rf"^(?:{'|'.join(exact + counted)})$")


def target(report: Report) -> dict[str, str] | None:
    """What the buttons re-read, as the report's backend encodes it (:meth:`diagnosis.backends.Backend.target`:
    a Run:ai workload by cluster and id, an OSMO workflow by id); None when it names nothing to re-read."""
    ident = report.identity
    backend = REGISTRY.get(ident.system) if ident is not None else None
    if ident is None or backend is None:
        return None
    return backend.target(ident)


def target_value(report: Report) -> str | None:
    t = target(report)
    return json.dumps(t, separators=(",", ":")) if t else None


def text_chars(blocks: list[dict[str, Any]]) -> int:
    """Characters of text a person reads on the card: headers, sections, fields and context elements
    (button labels and URLs not counted)."""
    total = 0
    for block in blocks:
        kind = block.get("type")
        if kind in ("header", "section") and isinstance(block.get("text"), dict):
            total += len(block["text"].get("text", ""))
        if kind == "section":
            total += sum(len(f.get("text", "")) for f in block.get("fields") or [])
        if kind == "context":
            total += sum(len(e.get("text", "")) for e in block.get("elements") or [] if isinstance(e, dict))
    return total
