"""The incident timeline: what ended when, over every pod (or task) of one run, and which failure came first.

A diagnosis of a workload with several pods (a PyTorchJob's master and workers, an MPIJob's launcher and
ranks, a gang of replicas) or of a workflow with several tasks must not reason about one pod at a time: when
one replica dies, its peers die after it (a cleanup SIGTERM, an NCCL watchdog timeout, an eviction of the
gang), and the last exit is the loudest, not the cause. FORMAT.md "Workloads with several pods": the first
failure decides, every later termination is a consequence, reported as such.

This module is that rule, once, for every system:

- A backend turns what it read into :class:`Entry` values, one per termination or failure of a *subject*
  (a pod, a task, a task's retry), each with its time, the container when known, what happened in a few words
  (``"OOMKilled (exit 137)"``, ``"exit 1: NCCL watchdog timeout"``) and the source it was read from. It says
  whether the failure is the subject's *own* (``own=False``: a consequence or a follower, such as an OSMO
  ``FAILED_UPSTREAM`` task or a peer stopped by the operator's cleanup) and may rank equals (``rank``: lower
  first, e.g. a task that reported an exit code before one that did not).
- :class:`Timeline` orders the entries by time (entries without a time last, in the order given), and answers
  :meth:`Timeline.first` (the one "which failed first" rule), :meth:`Timeline.failing` (subjects in the order
  they failed) and :meth:`Timeline.consequences`.
- :func:`compact` and :func:`lines` phrase it for the card, the text and the JSON
  (``"12:03:41 worker-3 OOMKilled (exit 137) -> 12:03:52 master exit 1"``).

Pure: no I/O, no system names. Times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

#: How many entries the compact form shows (the thread and ``report`` show them all).
COMPACT = 3


@dataclass(frozen=True)
class Entry:
    """One termination or failure of ``subject`` (a pod, a task) at ``at`` (UTC; None when not known).

    ``what``: a few words, verbatim reasons where there are some (``"OOMKilled (exit 137)"``); ``source``: the
    call it was read from; ``container``: the container, when known; ``own``: the failure is the subject's own
    (False: a consequence of an earlier failure, or a follower such as an upstream-failed task); ``rank``: among
    own failures, lower comes first before time decides (0 for all when nothing ranks them); ``failure`` False:
    context of the run (a phase update of the workload), ordered with the rest but never a failure."""

    subject: str
    at: datetime | None
    what: str
    source: str = ""
    container: str | None = None
    own: bool = True
    rank: int = 0
    #: False for context that is not a failure (the workload's phase updates): shown in order, never first
    failure: bool = True

    def text(self) -> str:
        """``"12:03:41 worker-3 OOMKilled (exit 137)"`` (``"?"`` for an unknown time)."""
        when = f"{self.at:%H:%M:%S}" if self.at is not None else "?"
        who = self.subject + (f" ({self.container})" if self.container else "")
        return f"{when} {who} {self.what}".strip()


@dataclass(frozen=True)
class Timeline:
    """The entries of one run ordered by time. Build it with :meth:`of`."""

    entries: tuple[Entry, ...] = ()

    @classmethod
    def of(cls, entries: Iterable[Entry]) -> Timeline:
        """Order ``entries`` by time; entries without a time go last, keeping the order they were given in."""
        given = list(entries)
        order = sorted(range(len(given)), key=lambda i: (given[i].at is None, _stamp(given[i].at), i))
        return cls(tuple(given[i] for i in order))

    def failing(self) -> list[str]:
        """Every subject with a failure, in the order it first failed (unknown times last)."""
        return list(dict.fromkeys(e.subject for e in self.entries if e.failure))

    def with_context(self, context: Iterable[Entry]) -> Timeline:
        """This timeline with ``context`` entries (not failures: ``failure=False``) put in time order among them."""
        return Timeline.of([*self.entries, *(replace(e, failure=False) for e in context)])

    def first(self) -> Entry | None:
        """The failure that came first among the subjects' own failures: the lowest ``rank``, then the earliest
        time, then the order given. None when no entry is a failure of its own (every visible failure is a
        consequence: the cause is in something that cannot be seen)."""
        own = [(i, e) for i, e in enumerate(self.entries) if e.own and e.failure]
        if not own:
            return None
        return min(own, key=lambda pair: (pair[1].rank, pair[1].at is None, _stamp(pair[1].at), pair[0]))[1]

    def consequences(self) -> list[Entry]:
        """The failures of other subjects that followed the first (and every failure not of its own)."""
        first = self.first()
        return [
            e for e in self.entries if e.failure and e is not first and (first is None or e.subject != first.subject)
        ]

    def lines(self) -> list[str]:
        """Every entry, one line each, the first failure marked (:func:`lines`)."""
        return lines(self.entries, self.first())

    def compact(self, limit: int = COMPACT) -> str:
        """The first failure and what followed, on one line (:func:`compact`)."""
        return compact(self.entries, self.first(), limit)


def lines(entries: Sequence[Entry], first: Entry | None) -> list[str]:
    """Every entry, one line each, ``first`` marked and each later one said for what it is:
    ``"12:03:41 worker-3 OOMKilled (exit 137) (first failure)"``, ``"... (consequence)"`` for a failure that is
    not its subject's own, ``"... (later failure)"`` for an own one after the first (a retry). The one phrasing
    of a timeline (the report's, rebuilt from its entries, too)."""
    after = False
    out = []
    for e in entries:
        if not e.failure:
            out.append(e.text())
        elif e is first:
            out.append(e.text() + " (first failure)")
            after = True
        elif not e.own:
            out.append(e.text() + " (consequence)")
        else:
            out.append(e.text() + (" (later failure)" if after else ""))
    return out


def compact(entries: Sequence[Entry], first: Entry | None, limit: int = COMPACT) -> str:
    """``first`` and what followed, on one line: ``"12:03:41 worker-3 OOMKilled (exit 137) -> 12:03:52 master
    exit 1"``, with ``"(+2 more)"`` past ``limit`` entries. Empty with fewer than two subjects (one pod's story
    needs no timeline)."""
    if len({e.subject for e in entries if e.failure}) < 2:
        return ""
    start = entries.index(first) if first is not None else 0
    shown = [e.text() for e in entries[start : start + limit]]
    rest = len(entries) - start - len(shown)
    # entries before the first failure (a follower's earlier time, an earlier retry) are not hidden silently
    before = sum(1 for e in entries[:start] if e.failure)
    earlier = f"(+{before} earlier) " if before else ""
    return earlier + " -> ".join(shown) + (f" (+{rest} more)" if rest > 0 else "")


def _stamp(at: datetime | None) -> float:
    return at.timestamp() if at is not None else 0.0
