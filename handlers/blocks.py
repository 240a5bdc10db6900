"""Block Kit rendering of a :class:`~diagnosis.report.Report` (``slack_sdk.models.blocks``).

Untrusted text is already redacted by the report model; here it is escaped for mrkdwn
(``& < >``) and sent as ``verbatim`` mrkdwn or ``plain_text``, so no ``<!channel>``, ``<@U…>`` or
link from evidence can reach Slack active. Message budget: at most 50 blocks, 3000 characters a
section text, 10 fields a section, 150 characters a header.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from diagnosis.render import fmt_time, identity_lines, verdict_title
from diagnosis.report import Report

MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_FIELDS = 10
MAX_FIELD = 2000
MAX_HEADER = 150


def escape(text: str) -> str:
    """Escape Slack mrkdwn control characters ``& < >`` (in that order)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 12] + " …(truncated)"


def mrkdwn(text: str, limit: int = MAX_SECTION) -> MarkdownTextObject:
    """Verbatim mrkdwn of already-escaped ``text``."""
    return MarkdownTextObject(text=clip(text, limit), verbatim=True)


def fallback_text(report: Report) -> str:
    """The top-level ``text`` of a message (notifications, screen readers)."""
    return clip(f"{verdict_title(report)}: {report.headline}", 3000)


def render_blocks(report: Report) -> list[dict[str, Any]]:
    """Block Kit blocks for ``report`` as plain dicts, within the message budget."""
    blocks: list[Block] = [HeaderBlock(text=PlainTextObject(text=clip(verdict_title(report), MAX_HEADER)))]
    blocks.append(SectionBlock(text=mrkdwn(escape(report.headline))))
    if report.question:
        blocks.append(SectionBlock(text=mrkdwn("*Question:* " + escape(report.question))))
    ident = identity_lines(report)
    if ident:
        fields = [mrkdwn(f"*{escape(k)}*\n{escape(v)}", MAX_FIELD) for k, v in ident[:MAX_FIELDS]]
        blocks.append(SectionBlock(fields=fields))
    if report.evidence:
        lines = [
            f"• *{escape(e.label)}:* `{escape(e.value)}`" + (f" at {fmt_time(e.at)}" if e.at else "")
            + f" _({escape(e.source)})_"
            for e in report.evidence
        ]
        blocks.append(SectionBlock(text=mrkdwn("*Evidence*\n" + "\n".join(lines))))
    if report.recurrence is not None:
        rec = report.recurrence
        times = ", ".join(fmt_time(t) for t in rec.occurrences)
        state = "recurring" if rec.recurring else "not recurring"
        blocks.append(
            SectionBlock(text=mrkdwn(f"*Recurrence:* {rec.count} occurrence(s), {state}" + (f"\n{times}" if times else "")))
        )
    if report.next_action:
        blocks.append(SectionBlock(text=mrkdwn("*Next action (recommended, not performed):* " + escape(report.next_action))))
    if report.gaps:
        gap_lines = "\n".join(f"• {escape(g.what)}: {escape(g.why)}" for g in report.gaps)
        blocks.append(SectionBlock(text=mrkdwn("*Could not see*\n" + gap_lines)))
    for ex in report.excerpts[:3]:
        blocks.append(SectionBlock(text=mrkdwn(f"*{escape(ex.title)}*\n```{escape(ex.text)}```")))
    buttons = [
        ButtonElement(text=PlainTextObject(text=clip(link.label, 75)), url=link.url, action_id=f"link_{i}")
        for i, link in enumerate(report.links[:5])
        if link.url.startswith(("http://", "https://"))
    ]
    if buttons:
        blocks.append(DividerBlock())
        blocks.append(ActionsBlock(elements=buttons))
    if report.generated_at:
        blocks.append(ContextBlock(elements=[mrkdwn(f"Workload Doctor · {fmt_time(report.generated_at)}")]))
    return [b.to_dict() for b in blocks[:MAX_BLOCKS]]
