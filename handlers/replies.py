"""Posting an answer on a :class:`~handlers.protocols.Surface`: the answer in place of its "diagnosing…" message or
in its thread (:func:`show`), the thread replies and snippets after it (:func:`spill`), and a question's whole report
in a thread with no one asker (:func:`report_in_thread`: a watch's status and final report). Shared by the
conversation (:class:`handlers.doctor.Doctor`), the card buttons and the watches, which need no Doctor for it."""

from __future__ import annotations

import logging
import secrets

from diagnosis.logs import set_ref
from diagnosis.question import Question
from diagnosis.report import Report
from handlers import messages
from handlers.blocks import Message, Overflow, Rendered, render_report
from handlers.blocks import spill as spill_into
from handlers.protocols import AnswerLost, Surface
from handlers.report_cache import Reports

log = logging.getLogger(__name__)


def ref_id() -> str:
    """A short reference for one request's log records and the error message its asker sees (6 hex digits)."""
    ref = secrets.token_hex(3)
    set_ref(ref)  # this task's log records carry it (diagnosis.logs)
    return ref


async def show(surface: Surface, progress_ts: str | None, root: str | None, message: Message) -> None:
    """The answer: in place of the "diagnosing…" message ``progress_ts``, or in the thread ``root``. A surface with
    ways to fall back (Slack: ``deliver``) tries every one of them, and counts an answer lost itself. Never raises."""
    deliver = getattr(surface, "deliver", None)
    try:
        if deliver is not None:
            await deliver(message, progress_ts, root)
        elif progress_ts:
            await surface.update(progress_ts, message)
        else:
            await surface.post(message, root)
    except AnswerLost:
        pass  # counted and logged by the surface, after every fallback
    except Exception:
        log.exception("could not post the answer")


async def _post_each(surface: Surface, thread: list[Message], root: str | None) -> None:
    for message in thread:
        try:
            await surface.post(message, root)
        except Exception:
            log.exception("could not post a thread reply")


async def spill(surface: Surface, rendered: Rendered, root: str | None) -> None:
    """Post ``rendered``'s thread replies and snippets in the thread ``root`` (a failed upload becomes thread
    replies: nothing is silently dropped). Never raises."""
    await _post_each(surface, rendered.thread, root)
    for snippet in rendered.snippets:
        ok = False
        try:
            ok = await surface.upload(snippet, root)
        except Exception:
            log.exception("could not upload snippet %s", snippet.title)
        if not ok:
            # never silently dropped: fall back to as many thread replies as it takes
            extra = Rendered(main=Message(text=""))
            spill_into(Overflow(snippet.title, snippet.content), extra, max_chunks=10_000)
            await _post_each(surface, extra.thread, root)


async def report_in_thread(
    reports: Reports,
    question: Question,
    surface: Surface,
    root: str | None,
    *,
    footer: str | None = None,
    fresh: bool = False,
) -> Report | None:
    """Answer ``question`` through ``reports`` (the cache; ``fresh`` skips it) and post the report in the thread
    ``root``. Errors become the same short messages as for a question, in the thread (a watch's thread is its own,
    with no one asker to tell); None then."""
    ref = ref_id()
    try:
        report = await reports.answer(question, fresh=fresh)
    except Exception as exc:
        await show(surface, None, root, messages.failure(exc, ref))
        return None
    rendered = render_report(report, thread_ts=root, footer=footer)
    await show(surface, None, root, rendered.main)
    await spill(surface, rendered, root)
    return report
