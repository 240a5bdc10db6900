"""Logging that never prints a credential: every record is redacted before any handler sees it.

``WD_LOG_FORMAT=json`` (the container image's default) writes one JSON object per line: ``time``, ``level``,
``logger``, ``message``, ``ref`` (the reference id of the request being answered, the one a user sees in an
error message, when there is one), ``exception`` — each redacted by :func:`diagnosis.redact.sanitize`.
Otherwise (``text``, the default) a plain line.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from datetime import UTC, datetime

from diagnosis.config import environment
from diagnosis.redact import sanitize

#: The reference id of the request this task is answering (set by ``handlers.doctor.ref_id``).
REF: contextvars.ContextVar[str | None] = contextvars.ContextVar("wd_ref", default=None)


def set_ref(ref: str | None) -> None:
    """Tag this task's (and its children's) log records with the reference id ``ref``."""
    REF.set(ref)


class RedactingFilter(logging.Filter):
    """Formats the record's message once, sanitizes it, and drops the args."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = str(record.msg)
        record.msg = sanitize(message)
        record.args = None
        if not hasattr(record, "ref"):
            record.ref = REF.get()
        if record.exc_text:
            record.exc_text = sanitize(record.exc_text)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per record; the message is already redacted, the exception is redacted here."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        ref = getattr(record, "ref", None) or REF.get()
        if ref:
            entry["ref"] = ref
        if record.exc_info:
            entry["exception"] = sanitize(self.formatException(record.exc_info))
        elif record.exc_text:
            entry["exception"] = sanitize(record.exc_text)
        return json.dumps(entry, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """The plain line, with ``[ref …]`` when the record has a reference id and a redacted traceback."""

    def format(self, record: logging.LogRecord) -> str:
        ref = getattr(record, "ref", None)
        line = super().format(record)
        return sanitize(f"{line} [ref {ref}]" if ref and f"[ref {ref}]" not in line else line)


def log_format(value: str | None = None) -> str:
    """``value``, else ``WD_LOG_FORMAT``: ``json`` or ``text`` (default)."""
    if value is None:
        env = environment()
        value = env.get("WD_LOG_FORMAT") or "text"
    raw = value.strip().lower()
    return "json" if raw == "json" else "text"


def setup_logging(level: int | str = logging.WARNING, fmt: str | None = None) -> None:
    """Log to stderr through :class:`RedactingFilter` (idempotent); ``fmt``: see :func:`log_format`."""
    root = logging.getLogger()
    root.setLevel(level)
    # httpx logs every request at INFO: a line per Run:ai and OSMO call (most of a worker's log, and a few per cent
    # of its CPU, formatted and redacted); the request records keep them, and --debug shows them
    numeric = logging.getLevelName(level.upper()) if isinstance(level, str) else level  # "DEBUG" -> 10
    debug = isinstance(numeric, int) and numeric <= logging.DEBUG
    logging.getLogger("httpx").setLevel(logging.NOTSET if debug else logging.WARNING)
    for handler in root.handlers:
        if any(isinstance(f, RedactingFilter) for f in handler.filters):
            return
    handler = logging.StreamHandler(sys.stderr)
    if log_format(fmt) == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    root.addHandler(handler)
