"""The end of a stream, bounded by memory (issue 22 §2): a log's newest lines are where its error is.

A :class:`TailRing` keeps the last ``keep`` bytes of whatever arrives, however much arrives; the reader bounds
the time (a wall clock) and the ring bounds the memory, so no byte count ends a stream whose end matters (an
OSMO log, a Kubernetes log tail). :meth:`TailRing.tail` gives what was kept as whole lines: a first line whose
start was pushed out of the ring, and a last line cut by the clock, are dropped, so no half of a credential
(which the redaction rules only recognise whole) is ever shown. A leaf module: it imports nothing of the product.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Tail:
    """What was kept of the end of a stream: ``data`` whole lines; ``received`` the bytes that arrived;
    ``skipped`` the bytes before ``data`` that are not shown (pushed out of the ring, with the partial line they
    cut); ``stopped`` the wall-clock seconds after which the reader stopped the stream, ``broken`` whether the
    connection broke before its end (either way its newest bytes may be missing, and a last line without its
    newline is dropped too)."""

    data: bytes
    received: int
    skipped: int = 0
    stopped: float | None = None
    broken: bool = False


class TailRing:
    """The last ``keep`` bytes of a stream: :meth:`add` every chunk, :meth:`tail` at the end. Memory is at most
    ``keep`` bytes plus one chunk, whatever the stream's length."""

    def __init__(self, keep: int) -> None:
        self.keep = max(0, keep)
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.received = 0
        self.dropped = 0
        #: whether the last byte pushed out of the ring ended a line (the kept part then starts one)
        self.dropped_line_end = False

    def add(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.received += len(chunk)
        self.chunks.append(chunk)
        self.size += len(chunk)
        while self.size > self.keep:
            excess = self.size - self.keep
            first = self.chunks[0]
            if len(first) <= excess:
                self.chunks.popleft()
                gone = first
            else:
                self.chunks[0] = first[excess:]
                gone = first[:excess]
            self.size -= len(gone)
            self.dropped += len(gone)
            self.dropped_line_end = gone.endswith(b"\n")

    def data(self) -> bytes:
        """The bytes kept, as they came (the first line may have lost its start)."""
        return b"".join(self.chunks)

    def tail(self, stopped: float | None = None, broken: bool = False) -> Tail:
        """What was kept, from a line start: when the ring dropped part of a line, the kept part starts at the next
        line; when the stream was ``stopped`` (seconds of wall clock) or ``broken``, a last line without its newline
        is dropped too (its end never came)."""
        data = self.data()
        skipped = self.dropped
        if self.dropped and not self.dropped_line_end:
            start = data.find(b"\n") + 1 if b"\n" in data else len(data)
            data = data[start:]
            skipped += start
        if (stopped is not None or broken) and not data.endswith(b"\n"):
            data = data[: data.rfind(b"\n") + 1]
        return Tail(data=data, received=self.received, skipped=skipped, stopped=stopped, broken=broken)
