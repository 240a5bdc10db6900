"""Small phrasing helpers of the Run:ai report (pure; no I/O): folding and cutting quoted text, the cause
clause of a runtime message, the image a pull message names."""

from __future__ import annotations

import re

from diagnosis.redact import sanitize

#: The image a pull message names (``Failed to pull image "nvcr.io/x:1": …``), group 1.
IMAGE_REF = re.compile(r'(?i)(?:pull(?:ing)?|back-off pulling) image "([^"]+)"')

_EMPTY_CLAUSES = frozenset({"unknown", "error", "failed", "exit status 1", ""})


def short(text: str, limit: int = 700) -> str:
    """Whitespace folded; a long text keeps its head and its tail (where kubelet messages put the cause).
    Sanitized first, so a cut never splits a credential that the whole text would have masked.
    ``limit`` is in characters."""
    text = " ".join(sanitize(text).split())
    if len(text) <= limit:
        return text
    head = limit * 2 // 5
    return text[:head] + " … " + text[-(limit - head - 3) :]


def cause(text: str) -> str:
    """The last meaningful clause of a runtime message ("...: not found", "...: 401 Unauthorized"); runtimes end
    many messages with a bare ": unknown", which names nothing and is never the verdict's cause."""
    clauses = [c.strip() for c in text.rstrip(" .").split(": ")]
    while len(clauses) > 1 and clauses[-1].lower() in _EMPTY_CLAUSES:
        clauses.pop()
    return short(clauses[-1], 160)
