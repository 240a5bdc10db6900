"""Block Kit for a :class:`~diagnosis.digests.Digest`: the channel message and its thread rows.

The main message: totals, one line per category with its count and the top project / pool, the
recurring workloads, an "I could not see" line and buttons (Refresh, Show all in thread, Diagnose
newest). The per-failure rows go to the thread (:func:`digest_thread`), cut to Slack's limits with a
"… N more" line whose totals still add up. Evidence text is already sanitized by the model; here it is
escaped for mrkdwn.
"""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.models.blocks import ActionsBlock, ButtonElement, ContextBlock, HeaderBlock, SectionBlock

from diagnosis.digests import Digest, scope_text, top_text, totals_text
from handlers.blocks import MAX_BLOCKS, MAX_SECTION, clip, escape, mrkdwn, plain

DIGEST_ACTIONS = ("wd_digest_refresh", "wd_digest_thread", "wd_digest_newest")
MAX_ROWS_PER_MESSAGE = 40


def render_digest_blocks(digest: Digest) -> list[dict[str, Any]]:
    """The main digest message (plain dicts), at most :data:`MAX_BLOCKS` blocks."""
    title = f"📋 Failures digest: {digest.failed} in the last {digest.since}"
    blocks: list[Any] = [HeaderBlock(text=plain(clip(title, 150)))]
    scope = escape(scope_text(digest))
    if digest.failed == 0:
        blocks.append(SectionBlock(text=mrkdwn(f"No failure was found in that window and scope ({scope}).")))
    else:
        lines = [f"{escape(totals_text(digest))} — {scope}"]
        for group in digest.groups:
            top = top_text(group.items)
            lines.append(f"• `{escape(group.category)}`: *{group.count}*" + (f" ({escape(top)})" if top else ""))
        blocks.append(SectionBlock(text=mrkdwn("\n".join(lines), MAX_SECTION)))
        if digest.recurring:
            names = ", ".join(f"`{escape(n)}`" for n in digest.recurring)
            blocks.append(SectionBlock(text=mrkdwn(f"Recurring (2+ failures of one cause): {names}")))
    if digest.gaps:
        seen = "; ".join(escape(f"{g.what}: {g.why}") for g in digest.gaps[:3])
        more = f" (+{len(digest.gaps) - 3} more)" if len(digest.gaps) > 3 else ""
        blocks.append(ContextBlock(elements=[mrkdwn(clip(f"I could not see: {seen}{more}", 2000))]))
    window = f"{digest.start:%Y-%m-%d %H:%M} to {digest.end:%Y-%m-%d %H:%M} UTC"
    blocks.append(ContextBlock(elements=[mrkdwn(escape(window))]))
    value = json.dumps({"since": digest.since, "projects": digest.projects, "pools": digest.pools})[:2000]
    buttons = [
        ButtonElement(text="Refresh", action_id=DIGEST_ACTIONS[0], value=value),
        ButtonElement(text="Show all in thread", action_id=DIGEST_ACTIONS[1], value=value),
    ]
    newest = max((i for g in digest.groups for i in g.items), key=lambda i: i.at, default=None)
    if newest is not None:
        target = json.dumps({"s": newest.system, "id": newest.id, "c": newest.cluster_id}, separators=(",", ":"))
        buttons.append(ButtonElement(text="Diagnose newest", action_id=DIGEST_ACTIONS[2], value=target[:2000]))
    blocks.append(ActionsBlock(elements=buttons))
    return [b.to_dict() for b in blocks[:MAX_BLOCKS]]


def digest_rows(digest: Digest) -> list[str]:
    """One mrkdwn line per failure (name, project or pool, time, one-line verdict), grouped by category."""
    rows: list[str] = []
    for group in digest.groups:
        for item in group.items:
            where = f"project {item.project}" if item.system == "runai" else f"pool {item.pool}"
            rows.append(
                f"`{escape(group.category)}` *{escape(item.name)}* ({escape(where)}, {item.at:%Y-%m-%d %H:%M} UTC): "
                + escape(clip(item.verdict, 300))
            )
    return rows


def digest_thread(digest: Digest, limit: int = MAX_ROWS_PER_MESSAGE) -> tuple[list[str], str]:
    """The thread messages (each within Slack's section limit) and the full table as a snippet.

    When the rows exceed ``limit`` a last "… N more" line says how many are only in the snippet."""
    rows = digest_rows(digest)
    shown, rest = rows[:limit], rows[limit:]
    messages: list[str] = []
    current = ""
    for row in shown:
        if len(current) + len(row) + 1 > MAX_SECTION - 100:
            messages.append(current)
            current = ""
        current = f"{current}\n{row}" if current else row
    if rest:
        current = f"{current}\n… {len(rest)} more (of {len(rows)}) in the attached table" if current else ""
    if current:
        messages.append(current)
    table = "\n".join(
        f"{i.system}\t{g.category}\t{i.name}\t{i.project or i.pool or ''}\t{i.at:%Y-%m-%dT%H:%M:%SZ}\t{i.verdict}"
        for g in digest.groups
        for i in g.items
    )
    return messages, "system\tcategory\tname\tproject_or_pool\tat\tverdict\n" + table
