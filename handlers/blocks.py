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
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from diagnosis.render import fmt_time
from diagnosis.report import Outcome, Report, recurrence_phrase, source_label
from diagnosis.wording import (
    NEIGHBOURS_TITLE,
    card_time,
    context_text,
    dedupe,
    focus_log,
    header_text,
    is_log,
    key_facts,
    neighbours_line,
    short_times,
    timeline_compact,
    timeline_lines,
    why_facts,
)

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
#: a follow-up's choice buttons are ``wd_choice_<n>``, the card's console links ``wd_link_<n>`` (acked only)
CHOICE_ACTION = "wd_choice"
LINK_ACTION = "wd_link"


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
    """The top-level ``text`` of a message (notifications, screen readers, search), escaped: the verdict in
    words, the category name and the verdict sentence."""
    head = header_text(report) + (f" ({report.category.value})" if report.category is not None else "")
    return prose(clip(f"{head}: {report.headline}", MAX_FALLBACK))


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
    #: what the Evidence button posts in the thread (messages, and snippets for text too long for them)
    evidence: list[Message] = field(default_factory=list)
    evidence_files: list[Snippet] = field(default_factory=list)
    #: what the Logs button uploads in the thread
    logs: list[Snippet] = field(default_factory=list)


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
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=False)).rstrip()]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip() for row in rows]
    return "\n".join(lines)


def choice_value(field_name: str, value: str, thread_ts: str | None) -> str:
    """The ``value`` of a choice button: JSON naming the parameter, its value and the thread."""
    return json.dumps({"f": field_name, "v": value, "t": thread_ts or ""}, separators=(",", ":"))


def choice_blocks(report: Report, thread_ts: str | None = None) -> list[dict[str, Any]]:
    """The follow-up question with its choices: buttons for a short list, otherwise a typed reply."""
    out: list[dict[str, Any]] = []
    rest = report.question_rest() if report.outcome == Outcome.NEEDS_INPUT else report.question
    if rest:
        out.append(_section("*Question:* " + prose(rest)))
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


_REPEAT = re.compile(r"\s*\(x(\d+), first ([^,]+), last ([^)]+)\)")


def _fact_line(fact: Any, full: bool = False) -> str:
    """One deduplicated evidence line: card style (short source label) or thread style (full call)."""
    item = fact.item
    rep = _REPEAT.search(item.value)
    value = item.value if full else short_times(clip(_REPEAT.sub("", item.value), 160))
    line = f"• *{prose(item.label)}:* `{inline(value)}`"
    first = card_time(fact.first) if fact.first else None
    last = card_time(fact.last) if fact.last else None
    if not full and rep:
        first, last = short_times(rep.group(2)).strip(), short_times(rep.group(3)).replace(" UTC", "").strip()
        first, last = first + " UTC", last + " UTC"
    if fact.count > 1 and first and last and first != last:
        line += f" ×{fact.count} (first {first}, last {last})"
    elif fact.count > 1:
        line += f" ×{fact.count}" + (f" at {last}" if last else "")
    elif item.at:
        line += f" at {card_time(item.at)}"
    if full:
        line += "\n   " + "; ".join(f"`{inline(src)}`" for src in fact.sources)
    else:
        labels = list(dict.fromkeys(source_label(src) for src in fact.sources))
        line += f" · _{prose(', '.join(labels))}_"
    return line


def _evidence_overflow(report: Report) -> list[Overflow]:
    """Everything the card leaves out, as the Evidence button posts it (full quotes, full sources)."""
    out: list[Overflow] = []
    if report.timeline:
        out.append(
            Overflow("Timeline (the first failure decides)", "\n".join(f"- {t}" for t in timeline_lines(report)))
        )
    if report.neighbours is not None:
        out.append(Overflow(NEIGHBOURS_TITLE, f"- {neighbours_line(report)}"))
    if report.evidence:
        lines = []
        for fact in dedupe(report.evidence):
            item = fact.item
            line = f"- {item.label}: {item.value}"
            if fact.count > 1 and fact.first and fact.last and fact.first != fact.last:
                line += f"  (x{fact.count}, first {fmt_time(fact.first)}, last {fmt_time(fact.last)})"
            elif item.at:
                line += f" at {fmt_time(item.at)}"
            line += "\n    source: " + "; ".join(fact.sources)
            for other in fact.others:
                when = f" at {fmt_time(other.at)}" if other.at else ""
                line += f"\n    same as {other.label}: {other.value}{when}  [{other.source}]"
            lines.append(line)
        out.append(Overflow("Evidence (full, with sources)", "\n".join(lines)))
    if report.confidence is not None and report.confidence.signals:
        basis = "\n".join(f"- {s}" for s in report.confidence.signals)
        out.append(Overflow(f"Evidence strength: {report.confidence.level}", basis))
    if report.recurrence is not None and report.recurrence.occurrences:
        rec = report.recurrence
        times = "\n".join(fmt_time(t) for t in rec.occurrences)
        out.append(Overflow(f"Recurrence: {recurrence_phrase(rec)} ({rec.category or 'failure'})", times))
    if report.gaps:
        out.append(Overflow("Could not see", "\n".join(f"- {g.what}: {g.why}" for g in report.gaps)))
    if report.notes:
        out.append(Overflow("Notes", "\n".join(f"- {n}" for n in report.notes)))
    for table in report.tables:
        out.append(Overflow(table.title, _table_plain(table.title, table.columns, table.rows)))
    for ex in report.excerpts:
        if is_log(ex.title):
            out.append(Overflow("Log lines around the error (Logs: the whole tail)", focus_log(ex.text), ex.source))
        else:
            out.append(Overflow(ex.title, ex.text, ex.source))
    return out


def _log_snippets(report: Report) -> list[Snippet]:
    snippets = []
    for ex in report.excerpts:
        if is_log(ex.title):
            name = "".join(ch if ch.isalnum() else "-" for ch in ex.title.lower()).strip("-") or "log"
            snippets.append(Snippet(title=f"{ex.title} ({ex.source})", filename=f"{name}.txt", content=ex.text))
    return snippets


def _card_buttons(report: Report, value: str | None, has_logs: bool) -> list[dict[str, Any]]:
    from handlers.card import EVIDENCE_ACTION, LOGS_ACTION, REDIAGNOSE_ACTION

    elements: list[ButtonElement] = []
    if value is not None:
        elements.append(
            ButtonElement(
                text=PlainTextObject(text="Evidence"), action_id=EVIDENCE_ACTION, value=value, style="primary"
            )
        )
        if has_logs:
            elements.append(ButtonElement(text=PlainTextObject(text="Logs"), action_id=LOGS_ACTION, value=value))
        elements.append(
            ButtonElement(text=PlainTextObject(text="Re-diagnose"), action_id=REDIAGNOSE_ACTION, value=value)
        )
        if report.answer_ref:  # "was this right?" (issue 28): in the same actions block, no text of the budget
            elements += _feedback_buttons(report.answer_ref)
    links = [link for link in report.links if link.url.startswith(("http://", "https://")) and len(link.url) <= 3000]
    for i, link in enumerate(links[: 25 - len(elements)]):
        elements.append(
            ButtonElement(
                text=PlainTextObject(text=clip(plain(link.label), MAX_BUTTON_TEXT)),
                url=link.url,
                action_id=f"{LINK_ACTION}_{i}",
            )
        )
    if not elements:
        return []
    return [ActionsBlock(block_id="wd_card_actions", elements=elements).to_dict()]


def _feedback_buttons(ref: str) -> list[ButtonElement]:
    from handlers.card import RIGHT_ACTION, WRONG_ACTION

    return [
        ButtonElement(text=PlainTextObject(text="👍 Right"), action_id=RIGHT_ACTION, value=ref),
        ButtonElement(text=PlainTextObject(text="👎 Wrong"), action_id=WRONG_ACTION, value=ref),
    ]


def render_report(report: Report, *, thread_ts: str | None = None, footer: str | None = None) -> Rendered:
    """The compact card (:mod:`handlers.card`) as the main message; what the Evidence and Logs buttons
    post in :attr:`Rendered.evidence` / :attr:`Rendered.logs`. Without anything to re-read (no workload or
    workflow id) there are no such buttons, and the same messages are posted in the thread at once."""
    from handlers.card import CARD_MAX_BLOCKS, CARD_MAX_CHARS, target_value, text_chars

    value = target_value(report)
    logs = _log_snippets(report)
    # (block, optional): optional blocks are left out, last first, until the card fits its budget
    parts: list[tuple[dict[str, Any], bool]] = []
    parts.append(
        (HeaderBlock(text=PlainTextObject(text=clip(plain(header_text(report)), MAX_HEADER))).to_dict(), False)
    )
    parts.append((_section(clip(prose(report.headline), 600)), False))
    if report.outcome == Outcome.NEEDS_INPUT or report.choices:  # not_found suggestions, "the failed run I found"
        parts += [(b, False) for b in choice_blocks(report, thread_ts)]
    elif report.question:
        parts.append((_section(clip("*Question:* " + prose(report.question), 300)), False))
    facts = key_facts(report)
    if facts:
        fields = [mrkdwn(f"*{escape(k)}*\n{prose(clip(v, 120))}", MAX_FIELD) for k, v in facts]
        parts.append((SectionBlock(fields=fields).to_dict(), False))
    why = why_facts(report)
    failed = report.outcome in (Outcome.DIAGNOSED, Outcome.FAILED)
    why_title = "*Why we think so*\n" if failed else "*Key evidence*\n"
    why_at = len(parts)
    if why:
        parts.append((_section(why_title + "\n".join(_fact_line(f) for f in why)), True))
    timeline = timeline_compact(report)
    if timeline:
        # several pods or tasks: what failed first and what followed, one line (the whole of it: Evidence); after
        # the "why", so the budget drops it first
        parts.append((_section(clip("*Timeline:* " + prose(timeline), 400)), True))
    if report.next_action:
        parts.append(
            (_section(clip("*Next action (recommended, not performed):* " + prose(report.next_action), 700)), False)
        )
    if report.gaps:
        gaps = "; ".join(f"{g.what} ({g.why})" for g in report.gaps)
        parts.append((_section(clip("*Could not see:* " + prose(gaps), 300)), True))
    # "the Grafana link is not available…": said on the card, beside the links that are there
    missing_links = [n for n in report.notes if "is not available for this workflow" in n]
    if missing_links:
        parts.append((_section("_" + prose(" ".join(missing_links)) + "_"), False))
    for table in report.tables[:1]:
        body = _table_plain(table.title, table.columns, table.rows)
        if len(body) < 1250:
            parts.append((_section(f"*{prose(table.title)}*\n```{code(body)}```"), True))
    actions = _card_buttons(report, value, bool(logs))
    ctx = ContextBlock(elements=[mrkdwn(clip(prose(context_text(report, footer)), 400))]).to_dict()
    tail = [*actions, ctx]

    def assemble() -> list[dict[str, Any]]:
        return [b for b, _ in parts] + tail

    while (len(assemble()) > CARD_MAX_BLOCKS or text_chars(assemble()) > CARD_MAX_CHARS) and any(
        opt for _, opt in parts
    ):
        last = max(i for i, (_, opt) in enumerate(parts) if opt)
        if last == why_at and len(why) > 1:
            why = why[:-1]
            parts[last] = (_section(why_title + "\n".join(_fact_line(f) for f in why)), True)
        else:
            del parts[last]
    blocks = assemble()
    main = Message(text=fallback_text(report), blocks=blocks[:MAX_BLOCKS])
    rendered = Rendered(main=main)
    extra = Rendered(main=Message(text=""))
    for o in _evidence_overflow(report):
        spill(o, extra)
    if value is None:
        rendered.thread, rendered.snippets = extra.thread, extra.snippets + logs
    else:
        rendered.evidence, rendered.evidence_files, rendered.logs = extra.thread, extra.snippets, logs
    return rendered


def thread_payload(rendered: Rendered) -> list[dict[str, Any]]:
    """The messages the bot posts in the thread, at once (``auto``) or by a button (``evidence``, ``logs``):
    the ``thread`` of ``--format json``."""
    out: list[dict[str, Any]] = []
    for via, messages, files in (
        ("auto", rendered.thread, rendered.snippets),
        ("evidence", rendered.evidence, rendered.evidence_files),
        ("logs", [], rendered.logs),
    ):
        out += [{"via": via, **m.payload()} for m in messages]
        out += [
            {"via": via, "snippet": {"title": f.title, "filename": f.filename, "content": f.content}} for f in files
        ]
    return out


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
    from handlers.card import CARD_PREFIX

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
                elif str(el.get("action_id", "")).startswith(CARD_PREFIX):
                    out.append(f"  [{label}] (a button in Slack)")
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
