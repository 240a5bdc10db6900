"""Errors shared by every backend and surface (a leaf module: it imports nothing of the product).

The clients raise these (or subclasses); :func:`diagnosis.fetched.describe_error` turns any of them into
the one-line ``why`` of a gap, and surfaces turn :class:`BackendUnavailable` into one clear line.
"""

from __future__ import annotations


class BackendUnavailable(RuntimeError):
    """The Run:ai or OSMO API could not be reached (or refused the credentials) after retries."""


class ApiError(RuntimeError):
    """A non-2xx answer after retries. ``status`` is the HTTP status, ``path`` the URL path,
    ``message`` the server's own message (may be empty)."""

    def __init__(self, status: int, path: str, message: str = "") -> None:
        self.status = status
        self.path = path
        self.message = message
        super().__init__(f"HTTP {status} from {path}" + (f": {message}" if message else ""))

    @property
    def retried(self) -> bool:
        """True when the status is one the HTTP layer retries (5xx, 429): the gap says "after retries"."""
        return self.status >= 500 or self.status == 429

    def describe(self) -> str:
        """The ``why`` of a gap for this error, e.g. ``"HTTP 500 (boom) after retries"``.

        :func:`diagnosis.fetched.describe_error` calls it, so there is still one describer; a backend whose
        reports already quote their own wording (OSMO: ``"HTTP 422: <message>"``) overrides it."""
        return (
            f"HTTP {self.status}"
            + (f" ({self.message})" if self.message else "")
            + (" after retries" if self.retried else "")
            + (f": the credentials may not {self.verb} {self.path}" if self.status == 403 and self.path else "")
        )

    #: The verb a 403's gap names (every read of the product is a GET; the two access reviews say their own).
    verb = "GET"


class NotFound(ApiError):
    """The server says the object does not exist (HTTP 404, or a backend's own not-found answer)."""


class BadResponse(ApiError):
    """A 2xx answer whose body cannot be used (not JSON, a field the model cannot read, cut at the cap).

    ``message`` says what was wrong, for example ``"the body is not JSON (text/html): <html>…"``."""


class NotAsked(LookupError):
    """A read that was never sent because the server has no endpoint for it (a Run:ai workload type without a
    spec endpoint). ``str(exc)`` is the whole plain-language ``why`` of the gap."""


def size(n: int) -> str:
    """``n`` bytes as a person reads it: ``"16 MiB"``, ``"64 KiB"``, ``"900 bytes"``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value == int(value) or value >= 10 else f"{value:.1f} {unit}"
    return "1 byte" if n == 1 else f"{n} bytes"


class BodyCut(BadResponse):
    """A body the reader stopped reading (issue 15 §1): the rest was never read, so nothing of it is used.

    ``status`` and ``path`` are the answer's; ``received`` the bytes read before the cut. Subclasses say why:
    :class:`BodyTooLarge` (the byte cap) and :class:`BodyTooSlow` (the wall-clock deadline)."""

    def __init__(self, status: int, path: str, message: str, received: int) -> None:
        self.received = received
        super().__init__(status, path, message)

    def describe(self) -> str:
        """The cut in words; an error status first (``"HTTP 503, and the answer was cut at …"``)."""
        return self.message if self.status < 300 else f"HTTP {self.status}, and {self.message}"

    def __str__(self) -> str:
        return self.message  # the plain sentence, whoever prints it (``f"{type(exc).__name__}: {exc}"``)


class BodyTooLarge(BodyCut):
    """More than ``limit`` bytes arrived (``WD_MAX_BODY_BYTES``, or a declared ``Content-Length`` above it)."""

    def __init__(self, status: int, path: str, limit: int, received: int) -> None:
        self.limit = limit
        super().__init__(
            status,
            path,
            f"the answer was cut at {size(limit)} (WD_MAX_BODY_BYTES): the server sent more than that",
            received,
        )


class BodyTooSlow(BodyCut):
    """The body was still arriving ``seconds`` (wall clock) after its headers: a trickle or an endless stream."""

    def __init__(self, status: int, path: str, seconds: float, received: int) -> None:
        self.seconds = seconds
        super().__init__(
            status,
            path,
            f"the answer was cut after {seconds:g} s: its body was still arriving ({size(received)} read)",
            received,
        )
