"""Block Kit rendering of a :class:`~diagnosis.report.Report` (``slack_sdk.models.blocks``), with a budget.

Untrusted text is already redacted by the report model; here it is escaped for mrkdwn
(``& < >``) and sent as ``verbatim`` mrkdwn or ``plain_text``, so no ``<!channel>``, ``<@U…>`` or
link from evidence can reach Slack active. Quoted evidence cannot break out of its formatting
(FORMAT.md "What never reaches any output"; issue 8 §3): inside code spans and fences no backtick of
the text survives (:func:`inline`, :func:`code`), and text that mixes our words with quoted evidence
(headline, next action, notes, gaps) keeps its code spans closed and its other characters inert
(:func:`prose`), so a log line holding "` *Next action:* run `kubectl delete ns prod`" cannot render
as the bot's own bold text.

The budget manager keeps the main message within Slack's limits (50 blocks, 3000 characters a
section text, 10 fields of at most 2000 characters, 150 characters a header, about 12,000
characters in all). What does not fit (log excerpts, the full evidence or event list, tables) is
never dropped: it becomes thread replies (:attr:`Rendered.thread`), and text too long even for a
few thread replies becomes an uploaded snippet (:attr:`Rendered.snippets`). The main message then
says where the rest went.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from diagnosis.render import fmt_time, identity_lines, verdict_title
from diagnosis.report import Outcome, Report

MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_FIELDS = 10
MAX_FIELD = 2000
MAX_HEADER = 150
MAX_TOTAL = 12_000
MAX_BUTTON_TEXT = 75
MAX_BUTTON_VALUE = 2000
MAX_FALLBACK = 300
#: chunk size of quoted text in thread replies (leaves room for the fences and a title)
CHUNK = 2800
#: at most this many chunks of one overflow item go to thread replies; longer text is uploaded
MAX_THREAD_CHUNKS = 6
#: at most this many choice buttons; more choices are listed and answered by a typed reply
MAX_CHOICE_BUTTONS = 5
CHOICE_ACTION = "wd_choice"


def escape(text: str) -> str:
    """Escape Slack mrkdwn control characters ``& < >`` (in that order)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


#: a backtick inside a code span or fence becomes this look-alike (U+02CB), so it cannot close the span
TICK = "\u02cb"
#: look-alikes for mrkdwn markers outside code spans: ``*`` (U+2217), ``_`` (U+02CD), ``~`` (U+223C)
_INERT = {"*": "\u2217", "_": "\u02cd", "~": "\u223c"}
# "_" and "~" only format at a word boundary (Slack needs a non-word character or an edge on the outer
# side of a marker); inside a word ("CRASH_APP_ERROR", "my_var") they stay as they are.
_MARKER = re.compile(r"\*|(?<!\w)[_~]|[_~](?!\w)")


def inert(text: str) -> str:
    """Already-escaped text with no mrkdwn formatting power: no backtick, ``*``, or boundary ``_``/``~``."""
    return _MARKER.sub(lambda m: _INERT[m.group(0)], text).replace("`", TICK)


def prose(text: str) -> str:
    """Escaped mrkdwn for text that mixes our words with quoted evidence (headline, next action, notes).

    Its backtick code spans stay code spans, but nothing in it can open or close formatting of its own:
    with an even number of backticks they pair in order; with an odd number (a quoted log line brought
    its own) everything from the first to the last backtick is one span. Inside a span, backticks become
    :data:`TICK` and newlines spaces; outside, ``*``, ``_`` and ``~`` lose their power (:func:`inert`).
    """
    t = escape(text)
    ticks = [i for i, ch in enumerate(t) if ch == "`"]
    if len(ticks) < 2:
        return inert(t)
    if len(ticks) % 2:
        pairs = [(ticks[0], ticks[-1])]
    else:
        pairs = list(zip(ticks[::2], ticks[1::2], strict=True))
    out: list[str] = []
    last = 0
    for start, end in pairs:
        inner = t[start + 1 : end].replace("`", TICK).replace("\n", " ")
        out += [inert(t[last:start]), "`", inner or " ", "`"]
        last = end + 1
    out.append(inert(t[last:]))
    return "".join(out)


def plain(text: str) -> str:
    """Untrusted text for ``plain_text`` objects: no angle brackets at all."""
    return text.replace("<", "‹").replace(">", "›")


def code(text: str) -> str:
    """Escaped text safe inside a ``` fence: a fence in the text becomes ``'''`` and any other backtick
    :data:`TICK`, so neither a fence nor a backtick next to ours can close it from inside."""
    return escape(text).replace("```", "'''").replace("`", TICK)


def inline(text: str) -> str:
    """Escaped text safe inside single backticks (no backtick, no newline)."""
    return escape(text).replace("`", "'").replace("\n", " ")


def clip(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, marking the cut."""
    return text if len(text) <= limit else text[: limit - 14] + " …(truncated)"


def mrkdwn(text: str, limit: int = MAX_SECTION) -> MarkdownTextObject:
    """Verbatim mrkdwn of already-escaped ``text``."""
    return MarkdownTextObject(text=clip(text, limit), verbatim=True)


def fallback_text(report: Report) -> str:
    """The top-level ``text`` of a message (notifications, screen readers), escaped."""
    return prose(clip(f"{verdict_title(report)}: {report.headline}", MAX_FALLBACK))


def block_chars(block: dict[str, Any]) -> int:
    """Characters a block spends from the message budget (every string in it, conservatively)."""
    total = 0
    stack: list[Any] = [block]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return total


@dataclass
class Message:
    """One Slack message: the ``text`` fallback and its blocks (plain dicts)."""

    text: str
    blocks: list[dict[str, Any]] = field(default_factory=list)

    def payload(self) -> dict[str, Any]:
        return {"text": self.text, "blocks": self.blocks}


@dataclass
class Snippet:
    """Text too long for thread replies: uploaded as a file in the thread."""

    title: str
    filename: str
    content: str


@dataclass
class Overflow:
    """Something that did not fit the main message (already redacted, not yet escaped)."""

    title: str
    text: str
    source: str = ""


@dataclass
class Rendered:
    """The main message, then thread replies and snippets carrying whatever did not fit."""

    main: Message
    thread: list[Message] = field(default_factory=list)
    snippets: list[Snippet] = field(default_factory=list)


class Budget:
    """Counts blocks and characters of one message."""

    def __init__(self, max_blocks: int = MAX_BLOCKS, max_chars: int = MAX_TOTAL) -> None:
        self.max_blocks = max_blocks
        self.max_chars = max_chars
        self.blocks = 0
        self.chars = 0

    def fits(self, block: dict[str, Any]) -> bool:
        return self.blocks + 1 <= self.max_blocks and self.chars + block_chars(block) <= self.max_chars

    def reserve(self, blocks: int, chars: int) -> None:
        self.blocks += blocks
        self.chars += chars


def violations(payload: dict[str, Any]) -> list[str]:
    """What in a ``chat.postMessage``-like payload breaks Slack's limits or lacks a ``text`` fallback."""
    problems: list[str] = []
    text = payload.get("text")
    if not isinstance(text, str) or not text.strip():
        problems.append("no text fallback")
    blocks = payload.get("blocks") or []
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    if len(blocks) > MAX_BLOCKS:
        problems.append(f"{len(blocks)} blocks > {MAX_BLOCKS}")
    total = 0
    for i, block in enumerate(blocks):
        total += block_chars(block)
        kind = block.get("type")
        if kind == "header" and len(block["text"]["text"]) > MAX_HEADER:
            problems.append(f"block {i}: header over {MAX_HEADER}")
        if kind == "section":
            if "text" in block and len(block["text"]["text"]) > MAX_SECTION:
                problems.append(f"block {i}: section text over {MAX_SECTION}")
            fields = block.get("fields") or []
            if len(fields) > MAX_FIELDS:
                problems.append(f"block {i}: {len(fields)} fields > {MAX_FIELDS}")
            for f in fields:
                if len(f["text"]) > MAX_FIELD:
                    problems.append(f"block {i}: field over {MAX_FIELD}")
        if kind == "actions":
            for el in block.get("elements") or []:
                if len(el.get("text", {}).get("text", "")) > MAX_BUTTON_TEXT:
                    problems.append(f"block {i}: button text over {MAX_BUTTON_TEXT}")
                if len(el.get("value", "")) > MAX_BUTTON_VALUE:
                    problems.append(f"block {i}: button value over {MAX_BUTTON_VALUE}")
        for obj in _text_objects(block):
            if obj.get("type") == "mrkdwn" and obj.get("verbatim") is not True:
                problems.append(f"block {i}: mrkdwn without verbatim")
    if total > MAX_TOTAL:
        problems.append(f"{total} characters > {MAX_TOTAL}")
    return problems


def _text_objects(block: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack: list[Any] = [block]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("type") in ("mrkdwn", "plain_text") and isinstance(item.get("text"), str):
                found.append(item)
            else:
                stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


# ---------------------------------------------------------------------------------------------
# the report


def _section(text: str) -> dict[str, Any]:
    return SectionBlock(text=mrkdwn(text)).to_dict()


def _evidence_lines(report: Report) -> list[str]:
    return [
        f"• *{prose(e.label)}:* `{inline(e.value)}`"
        + (f" at {fmt_time(e.at)}" if e.at else "")
        + (f" _({prose(e.source)})_" if e.source else "")
        for e in report.evidence
    ]


def _evidence_plain(report: Report) -> str:
    return "\n".join(
        f"- {e.label}: {e.value}" + (f" at {fmt_time(e.at)}" if e.at else "") + (f"  [{e.source}]" if e.source else "")
        for e in report.evidence
    )


def _table_plain(title: str, columns: list[str], rows: list[list[str]]) -> str:
    widths = [len(c) for c in columns]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=False)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=False))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) for row in rows]
    return "\n".join(lines)


def choice_value(field_name: str, value: str, thread_ts: str | None) -> str:
    """The ``value`` of a choice button: JSON naming the parameter, its value and the thread."""
    return json.dumps({"f": field_name, "v": value, "t": thread_ts or ""}, separators=(",", ":"))


def choice_blocks(report: Report, thread_ts: str | None = None) -> list[dict[str, Any]]:
    """The follow-up question with its choices: buttons for a short list, otherwise a typed reply."""
    out: list[dict[str, Any]] = []
    if report.question:
        out.append(_section("*Question:* " + prose(report.question)))
    choices = report.choices
    if not choices:
        return out
    if len(choices) <= MAX_CHOICE_BUTTONS:
        buttons = [
            ButtonElement(
                text=PlainTextObject(text=clip(plain(c.label), MAX_BUTTON_TEXT)),
                action_id=f"{CHOICE_ACTION}_{i}",
                value=clip(choice_value(c.field, c.value, thread_ts), MAX_BUTTON_VALUE),
            )
            for i, c in enumerate(choices)
        ]
        out.append(ActionsBlock(block_id="wd_choices", elements=buttons).to_dict())
        out.append(
            ContextBlock(
                block_id="wd_choices_hint",
                elements=[mrkdwn("Pick one, or reply in this thread with the value.")],
            ).to_dict()
        )
    else:
        lines = [f"• `{inline(c.label)}`" for c in choices]
        text = "*Reply in this thread with one of:*\n" + "\n".join(lines)
        out.append(_section(clip(text, MAX_SECTION)))
    return out


@dataclass
class _Item:
    order: int
    priority: int
    blocks: list[dict[str, Any]]
    overflow: list[Overflow] = field(default_factory=list)
    fallback: list[dict[str, Any]] | None = None  # a smaller version when the full one does not fit


def render_report(report: Report, *, thread_ts: str | None = None, footer: str | None = None) -> Rendered:
    """The whole rendering: main message within the budget, thread replies and snippets for the rest."""
    items: list[_Item] = []
    order = iter(range(1000))

    def add(
        priority: int,
        blocks: list[dict[str, Any]],
        overflow: list[Overflow] | None = None,
        fallback: list[dict[str, Any]] | None = None,
    ) -> None:
        items.append(_Item(next(order), priority, blocks, overflow or [], fallback))

    title = clip(plain(verdict_title(report)), MAX_HEADER)
    add(0, [HeaderBlock(text=PlainTextObject(text=title)).to_dict()])
    add(0, [_section(clip(prose(report.headline), MAX_SECTION))])
    if report.outcome == Outcome.NEEDS_INPUT:
        add(1, choice_blocks(report, thread_ts))
    elif report.question:
        add(1, [_section(clip("*Question:* " + prose(report.question), MAX_SECTION))])
    ident = identity_lines(report)
    if ident:
        fields = [mrkdwn(f"*{escape(k)}*\n{escape(v)}", MAX_FIELD) for k, v in ident[:MAX_FIELDS]]
        add(1, [SectionBlock(fields=fields).to_dict()])
    if report.next_action:
        add(
            1,
            [
                _section(
                    clip(
                        "*Next action (recommended, not performed):* " + prose(report.next_action),
                        MAX_SECTION,
                    )
                )
            ],
        )
    if report.evidence:
        lines = _evidence_lines(report)
        full = _chunk_lines("*Evidence*", lines)
        # the smaller version: as many lines as fit one section, and a pointer to the thread
        first = _chunk_texts("*Evidence*", lines, limit=MAX_SECTION - 120)[0]
        shown = first.count("\n")
        rest = len(lines) - shown
        small = [_section(first + (f"\n_…and {rest} more in the thread._" if rest else ""))]
        add(2, full, [Overflow("Evidence (full list)", _evidence_plain(report))], small)
    if report.recurrence is not None:
        rec = report.recurrence
        days = rec.lookback_seconds / 86400
        span = f"{days:g}d" if days >= 1 else f"{rec.lookback_seconds // 3600}h"
        state = "recurring" if rec.recurring else "not recurring"
        what = escape(rec.category or "failure")
        head = f"*Recurrence:* {rec.count} {what} occurrence(s) in the last {span} ({state})"
        times = "\n".join(f"• {fmt_time(t)}" for t in rec.occurrences)
        text = head + ("\n" + times if times else "")
        plain_times = "\n".join(fmt_time(t) for t in rec.occurrences)
        short = [_section(head + ("\n_occurrence times in the thread_" if plain_times else ""))]
        full = [_section(text)] if len(text) <= MAX_SECTION else []
        add(2, full, [Overflow("Recurrence: occurrence times", plain_times)] if plain_times else [], short)
    if report.gaps:
        gap_lines = [f"• {prose(g.what)}: {prose(g.why)}" for g in report.gaps]
        chunks = _chunk_lines("*Could not see*", gap_lines)
        add(
            1,
            chunks,
            [Overflow("Could not see", "\n".join(f"- {g.what}: {g.why}" for g in report.gaps))],
            [_section(clip("*Could not see*\n" + "\n".join(gap_lines), MAX_SECTION))],
        )
    if report.notes:
        note_lines = [f"• {prose(n)}" for n in report.notes]
        add(3, _chunk_lines("*Notes*", note_lines), [Overflow("Notes", "\n".join(report.notes))])
    for table in report.tables:
        body = _table_plain(table.title, table.columns, table.rows)
        add(
            3,
            [_section(f"*{prose(table.title)}*\n```{code(body)}```")] if len(body) < MAX_SECTION - 200 else [],
            [Overflow(table.title, body)],
        )
    for ex in report.excerpts:
        blk = [_section(f"*{prose(ex.title)}* _({prose(ex.source)})_\n```{code(ex.text)}```")]
        add(4, blk if len(ex.text) < MAX_SECTION - 300 else [], [Overflow(ex.title, ex.text, ex.source)])
    buttons = [
        ButtonElement(
            text=PlainTextObject(text=clip(plain(link.label), MAX_BUTTON_TEXT)),
            url=link.url,
            action_id=f"wd_link_{i}",
        )
        for i, link in enumerate(report.links[:25])
        if link.url.startswith(("http://", "https://")) and len(link.url) <= 3000
    ]
    if buttons:
        add(1, [DividerBlock().to_dict(), ActionsBlock(block_id="wd_links", elements=buttons).to_dict()])
    stamp = f"Workload Doctor · read-only · {fmt_time(report.generated_at)}" if report.generated_at else None
    ctx = " · ".join(x for x in (footer and escape(footer), stamp) if x)
    if ctx:
        add(0, [ContextBlock(elements=[mrkdwn(clip(ctx, MAX_SECTION))]).to_dict()])

    budget = Budget()
    budget.reserve(1, 200)  # the "more in the thread" pointer
    chosen: dict[int, list[dict[str, Any]]] = {}
    overflow: list[Overflow] = []
    for item in sorted(items, key=lambda i: (i.priority, i.order)):
        if item.blocks and _take_all(budget, item.blocks):
            chosen[item.order] = item.blocks
            continue
        if item.fallback and _take_all(budget, item.fallback):
            chosen[item.order] = item.fallback
            overflow += item.overflow
            continue
        if item.overflow:
            overflow += item.overflow
        elif item.priority == 0:
            # essential and without overflow: clip hard so the verdict always shows
            chosen[item.order] = item.blocks[:1]
    blocks: list[dict[str, Any]] = []
    for order_key in sorted(chosen):
        blocks += chosen[order_key]
    if overflow:
        names = ", ".join(escape(o.title) for o in overflow)
        pointer = _section(clip(f"_More in the thread: {names}._", 190))
        # before the footer context, if any
        at = len(blocks) - 1 if blocks and blocks[-1].get("type") == "context" else len(blocks)
        blocks.insert(at, pointer)
    main = Message(text=fallback_text(report), blocks=blocks[:MAX_BLOCKS])
    rendered = Rendered(main=main)
    for o in overflow:
        spill(o, rendered)
    return rendered


def _take_all(budget: Budget, blocks: list[dict[str, Any]]) -> bool:
    need_chars = sum(block_chars(b) for b in blocks)
    if budget.blocks + len(blocks) > budget.max_blocks or budget.chars + need_chars > budget.max_chars:
        return False
    budget.reserve(len(blocks), need_chars)
    return True


def _chunk_texts(title: str, lines: list[str], limit: int = MAX_SECTION) -> list[str]:
    """Texts of ``title`` + lines, each within ``limit``; lines too long on their own are clipped."""
    sections: list[str] = []
    current = title
    for line in lines:
        line = clip(line, limit - len(title) - 2)
        if len(current) + 1 + len(line) > limit:
            sections.append(current)
            current = title + " (cont.)"
            if len(current) + 1 + len(line) > limit:
                line = clip(line, limit - len(current) - 2)
        current += "\n" + line
    sections.append(current)
    return sections


def _chunk_lines(title: str, lines: list[str]) -> list[dict[str, Any]]:
    return [_section(s) for s in _chunk_texts(title, lines)]


def _chunks(text: str, size: int = CHUNK) -> list[str]:
    """Split at line ends where possible, never losing a character."""
    out: list[str] = []
    rest = text
    while len(rest) > size:
        cut = rest.rfind("\n", 0, size)
        if cut <= 0:
            cut = size
        out.append(rest[:cut])
        rest = rest[cut:].lstrip("\n") if rest[cut : cut + 1] == "\n" else rest[cut:]
    out.append(rest)
    return out


def spill(o: Overflow, rendered: Rendered, max_chunks: int = MAX_THREAD_CHUNKS) -> None:
    """Thread replies for ``o`` (code-fenced chunks), or one snippet when that would take too many."""
    # escaping can grow the text; chunk the escaped form so every section stays in budget
    escaped = code(o.text)
    parts = _chunks(escaped, CHUNK)
    src = f" _({prose(o.source)})_" if o.source else ""
    if len(parts) > max_chunks:
        name = "".join(ch if ch.isalnum() else "-" for ch in o.title.lower()).strip("-") or "details"
        rendered.snippets.append(Snippet(title=o.title, filename=f"{name}.txt", content=o.text))
        return
    per_message = 3
    for start in range(0, len(parts), per_message):
        group = parts[start : start + per_message]
        n = len(parts)
        blocks: list[dict[str, Any]] = []
        for j, part in enumerate(group, start=start + 1):
            label = f"*{prose(o.title)}*{src}" + (f" ({j}/{n})" if n > 1 else "")
            blocks.append(_section(f"{label}\n```{part}```"))
        fallback = escape(clip(o.title, 200)) + (f" (part {start // per_message + 1})" if n > per_message else "")
        rendered.thread.append(Message(text=fallback, blocks=blocks))


def render_blocks(report: Report) -> list[dict[str, Any]]:
    """Block Kit blocks of the main message for ``report`` (plain dicts, within the budget)."""
    return render_report(report).main.blocks


def text_message(text: str) -> Message:
    """A one-section message of our own (already safe) mrkdwn text, with the same text as fallback."""
    return Message(text=clip(text, MAX_FALLBACK * 10), blocks=[_section(clip(text, MAX_SECTION))])


def blocks_to_text(blocks: list[dict[str, Any]]) -> str:
    """Block Kit rendered as readable terminal text (the terminal twin)."""
    out: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "header":
            title = block["text"]["text"]
            out += ["", title, "=" * len(title)]
        elif kind == "section":
            if "text" in block:
                out.append(_unmrkdwn(block["text"]["text"]))
            for f in block.get("fields") or []:
                out.append("  " + _unmrkdwn(f["text"]).replace("\n", ": ", 1))
        elif kind == "context":
            out.append("  (" + " ".join(_unmrkdwn(e.get("text", "")) for e in block.get("elements", [])) + ")")
        elif kind == "divider":
            out.append("-" * 40)
        elif kind == "actions":
            for i, el in enumerate(block.get("elements") or [], start=1):
                label = el.get("text", {}).get("text", "")
                if el.get("url"):
                    out.append(f"  [{label}] {el['url']}")
                else:
                    out.append(f"  [{i}] {label}")
    return "\n".join(out).strip("\n") + "\n"


_EMOJI = re.compile(r"(?<![\w:]):[a-z][a-z0-9_+-]*:(?![\w:])\s?")
_BOLD = re.compile(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])")
_ITALIC = re.compile(r"(?<![\w_])_\(([^\n]+?)\)_(?![\w_])")


_UNINERT = str.maketrans({TICK: "`", **{v: k for k, v in _INERT.items()}})


def _unmrkdwn(text: str) -> str:
    """mrkdwn to plain terminal text: no emoji codes, no bold/italic markers, entities decoded."""
    text = _EMOJI.sub("", text)
    text = _BOLD.sub(r"\1", text)
    text = _ITALIC.sub(r"(\1)", text).translate(_UNINERT)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
