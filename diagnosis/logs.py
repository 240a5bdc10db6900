"""Logging that never prints a credential: every record is redacted before any handler sees it."""

from __future__ import annotations

import logging
import sys

from diagnosis.redact import sanitize


class RedactingFilter(logging.Filter):
    """Formats the record's message once, sanitizes it, and drops the args."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = str(record.msg)
        record.msg = sanitize(message)
        record.args = None
        if record.exc_text:
            record.exc_text = sanitize(record.exc_text)
        return True


def setup_logging(level: int | str = logging.WARNING) -> None:
    """Log to stderr through :class:`RedactingFilter` (idempotent)."""
    root = logging.getLogger()
    root.setLevel(level)
    for handler in root.handlers:
        if any(isinstance(f, RedactingFilter) for f in handler.filters):
            return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter())
    root.addHandler(handler)
