"""Block Kit for a :class:`~diagnosis.digests.Digest`: the channel message and its thread rows.

The main message is read on a phone (issue 27): counts first (failed, new vs seen before, recurring, the
preempted ones that are not counted), then the three largest causes in the card's words
(:func:`diagnosis.digest_text.cause_words`, never a code), each with what more than one of its failures share
(a node, an image, a project), the other causes on one line, what could not be seen, the window and scope, and
buttons (Refresh, Show all in thread, Diagnose newest). It stays within the card's budget
(:data:`~handlers.card.CARD_MAX_CHARS` characters, one phone screen); nothing failed is one line. Every row is
in the thread (:func:`digest_thread`), cut to Slack's limits with a "… N more" line whose totals still add
up. Evidence text is already sanitized by the model; here it is escaped for mrkdwn.
"""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.models.blocks import ActionsBlock, ButtonElement, ContextBlock, HeaderBlock, SectionBlock

from diagnosis.digest_text import cause_words, group_system, preempted_text, row_scope, scope_text
from diagnosis.digests import Digest, DigestGroup, shared
from handlers.blocks import MAX_BLOCKS, MAX_SECTION, clip, escape, mrkdwn, plain, text_message

#: Every action id of a digest's buttons starts with this (the middleware counts them as costly).
DIGEST_PREFIX = "wd_digest"
REFRESH_ACTION = f"{DIGEST_PREFIX}_refresh"
THREAD_ACTION = f"{DIGEST_PREFIX}_thread"
NEWEST_ACTION = f"{DIGEST_PREFIX}_newest"
DIGEST_ACTIONS = (REFRESH_ACTION, THREAD_ACTION, NEWEST_ACTION)
MAX_ROWS_PER_MESSAGE = 40
#: the causes the main message names with what their failures share; the others share one line
TOP_GROUPS = 3
#: recurring workloads named in the main message (the rest are counted; all are in the thread)
MAX_RECURRING_NAMED = 3
_SHARED_WORDS = {"node": "on node", "image": "with image", "project": "in project", "pool": "in pool"}


def _short_image(image: str) -> str:
    """``nvcr.io/nvidia/pytorch:24.08-py3`` -> ``pytorch:24.08-py3`` (the registry path says little on a phone)."""
    return image.rsplit("/", 1)[-1]


def _group_line(group: DigestGroup) -> str:
    emoji, title = cause_words(group.category, group_system(group.items))
    line = f"{emoji} *{group.count} {escape(title)}*"
    common = [
        f"{count} {_SHARED_WORDS[label]} {escape(_short_image(value) if label == 'image' else value)}"
        for label, value, count in shared(group.items)
    ]
    return line + (f"\n       ↳ {' · '.join(common)}" if common else "")


def _counts_line(digest: Digest) -> str:
    """``*18 failed*: 16 new, 2 seen before · recurring: gpt-distill-4`` and the preempted ones on their own line."""
    seen = len(digest.seen_before)
    line = f"*{digest.failed} failed*: {digest.failed - seen} new, {seen} seen before"
    if digest.recurring:
        named = ", ".join(f"`{escape(n)}`" for n in digest.recurring[:MAX_RECURRING_NAMED])
        more = len(digest.recurring) - MAX_RECURRING_NAMED
        line += f" · recurring: {named}" + (f" and {more} more" if more > 0 else "")
    if digest.preempted:
        line += f"\n{preempted_text(digest)}"
    return line


def _causes(digest: Digest) -> str:
    lines = [_group_line(g) for g in digest.groups[:TOP_GROUPS]]
    rest = digest.groups[TOP_GROUPS:]
    if rest:
        words = [f"{g.count} {cause_words(g.category, group_system(g.items))[1]}" for g in rest]
        lines.append(clip("*Also:* " + escape(" · ".join(words)), 400))
    return "\n".join(lines)


def _footer(digest: Digest) -> str:
    """The window and scope, and the GPU-hours and the previous digest when known."""
    parts = [scope_text(digest), f"{digest.start:%d %b %H:%M} → {digest.end:%d %b %H:%M} UTC"]
    hours, known = digest.gpu_hours
    if known:
        parts.append(f"{hours:.0f} GPU-hours lost ({known} of {digest.failed} known)")
    if digest.previous_failed is not None:
        parts.append(f"previous digest {digest.previous_failed} ({digest.failed - digest.previous_failed:+d})")
    return clip(escape(" · ".join(parts)), 400)


def _gaps(digest: Digest) -> ContextBlock | None:
    if not digest.gaps:
        return None
    seen = "; ".join(escape(f"{g.what}: {g.why}") for g in digest.gaps[:2])
    more = f" (+{len(digest.gaps) - 2} more in the thread)" if len(digest.gaps) > 2 else ""
    return ContextBlock(elements=[mrkdwn(clip(f"⚠️ I could not see: {seen}", 300) + more)])


def render_digest_blocks(digest: Digest) -> list[dict[str, Any]]:
    """The main digest message (plain dicts): within the card's budget, one phone screen."""
    gaps = _gaps(digest)
    if digest.failed == 0:
        line = f"✅ Nothing failed in the last {digest.since} ({escape(scope_text(digest))})."
        if digest.preempted:
            line = line[:-1] + f"; {preempted_text(digest)}."
        return [SectionBlock(text=mrkdwn(clip(line, 600))).to_dict()] + ([gaps.to_dict()] if gaps else [])
    blocks: list[Any] = [
        HeaderBlock(text=plain(clip(f"📋 {digest.failed} failed in the last {digest.since}", 150))),
        SectionBlock(text=mrkdwn(_counts_line(digest), 600)),
        SectionBlock(text=mrkdwn(_causes(digest), 900)),
    ]
    if gaps is not None:
        blocks.append(gaps)
    blocks.append(ContextBlock(elements=[mrkdwn(_footer(digest))]))
    value = json.dumps({"since": digest.since, "projects": digest.projects, "pools": digest.pools})[:2000]
    buttons = [
        ButtonElement(text="Refresh", action_id=REFRESH_ACTION, value=value),
        ButtonElement(text="Show all in thread", action_id=THREAD_ACTION, value=value),
    ]
    newest = max((i for g in digest.groups for i in g.items), key=lambda i: i.at, default=None)
    if newest is not None:
        target = json.dumps({"s": newest.system, "id": newest.id, "c": newest.cluster_id}, separators=(",", ":"))
        buttons.append(ButtonElement(text="Diagnose newest", action_id=NEWEST_ACTION, value=target[:2000]))
    blocks.append(ActionsBlock(elements=buttons))
    return [b.to_dict() for b in blocks[:MAX_BLOCKS]]


def digest_rows(digest: Digest) -> list[str]:
    """One mrkdwn line per failure, under its cause in words: name, project or pool, time, the one-line verdict.
    The preempted ones (not counted) and what could not be seen follow."""
    rows: list[str] = []
    for group in digest.groups:
        emoji, title = cause_words(group.category, group_system(group.items))
        rows.append(f"{emoji} *{escape(title)}* ({group.count})")
        for item in group.items:
            rows.append(
                f"• *{escape(item.name)}* · {escape(row_scope(item, brief=True))} · {item.at:%d %b %H:%M} UTC — "
                + escape(clip(item.verdict, 300))
            )
    if digest.preempted:
        names = ", ".join(f"*{escape(i.name)}*" for i in digest.preempted)
        rows.append(clip(f"⏸️ {preempted_text(digest)}: {names}", 1000))
    if len(digest.gaps) > 2:
        rows += [escape(clip(f"⚠️ I could not see {g.what}: {g.why}", 500)) for g in digest.gaps]
    return rows


def digest_thread(digest: Digest, limit: int = MAX_ROWS_PER_MESSAGE) -> tuple[list[str], str]:
    """The thread messages (each within Slack's section limit) and the full table as a snippet.

    When the rows exceed ``limit`` a last "… N more" line says how many are only in the snippet."""
    rows = digest_rows(digest)
    failures = sum(1 for row in rows if row.startswith("• "))
    cut, counted = len(rows), 0
    for at, row in enumerate(rows):
        counted += row.startswith("• ")
        if counted > limit:
            cut = at
            break
    shown, rest = rows[:cut], rows[cut:]
    hidden = failures - min(failures, limit)
    messages: list[str] = []
    current = ""
    for row in shown:
        if len(current) + len(row) + 1 > MAX_SECTION - 100:
            messages.append(current)
            current = ""
        current = f"{current}\n{row}" if current else row
    if rest:
        current = f"{current}\n… {hidden} more (of {failures}) in the attached table" if current else ""
    if current:
        messages.append(current)
    table = "\n".join(
        f"{i.system}\t{g.category}\t{i.name}\t{i.project or i.pool or ''}\t{i.at:%Y-%m-%dT%H:%M:%SZ}\t{i.verdict}"
        for g in digest.groups
        for i in g.items
    )
    return messages, "system\tcategory\tname\tproject_or_pool\tat\tverdict\n" + table


def thread_payload(digest: Digest) -> list[dict[str, Any]]:
    """What the bot posts in the digest's thread (:meth:`handlers.digests.DigestDesk.rows`), as ``thread`` of
    ``--format json``: each message, then the whole table as a snippet when the rows were cut."""
    if not digest.failed:
        return []
    messages, table = digest_thread(digest)
    out: list[dict[str, Any]] = [{"via": "auto", **text_message(m).payload()} for m in messages]
    if messages and "more (of" in messages[-1]:
        snippet = {"title": "All failures of this digest", "filename": "digest.tsv", "content": table}
        out.append({"via": "auto", "snippet": snippet})
    return out
