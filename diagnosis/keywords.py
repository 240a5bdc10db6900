"""Which of many keywords occur in a text, found in one pass (Aho-Corasick).

The redaction rules (:mod:`diagnosis.redact`) and the instruction patterns (:mod:`diagnosis.untrusted`) run a
regex only when one of its keywords is in the text, the way gitleaks prefilters its rules. Testing each of a few
hundred keywords with ``in`` reads the text once per keyword; an Aho-Corasick automaton (``ahocorasick_rs``) reads
it once for all of them. A leaf: imports nothing of the project.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from itertools import accumulate

from ahocorasick_rs import AhoCorasick, MatchKind

#: A lone surrogate (bytes that were not UTF-8, decoded with ``surrogateescape``): the automaton reads UTF-8 only.
_SURROGATE = re.compile("[\ud800-\udfff]")


class Keywords:
    """A fixed set of keywords (matched as given: callers pass lower-case keywords and lower-cased text).

    :meth:`present` is exactly ``{w for w in words if w in text}``: every occurrence counts, overlapping ones and
    a keyword inside another (``"pass"`` in ``"password"``) included.
    """

    def __init__(self, words: Iterable[str]) -> None:
        self.words: tuple[str, ...] = tuple(dict.fromkeys(words))
        if not all(self.words):
            raise ValueError("an empty keyword occurs everywhere")
        if any(_SURROGATE.search(w) or "\ufffd" in w for w in self.words):
            raise ValueError("a keyword holds a surrogate or U+FFFD, which stand for bytes that were not UTF-8")
        self._automaton = AhoCorasick(self.words, matchkind=MatchKind.Standard)

    def _matches(self, text: str) -> list[tuple[int, int, int]]:
        """(keyword index, start, end) of every occurrence. A lone surrogate is read as U+FFFD: one code point for
        one, so the offsets stay, and no keyword holds either."""
        try:
            return self._automaton.find_matches_as_indexes(text, overlapping=True)
        except UnicodeEncodeError:
            return self._automaton.find_matches_as_indexes(_SURROGATE.sub("\ufffd", text), overlapping=True)

    def present(self, text: str) -> set[str]:
        """The keywords that occur in ``text``."""
        words = self.words
        return {words[i] for i, _, _ in self._matches(text)}

    def by_line(self, text: str) -> dict[int, set[str]]:
        """Line index (``text.split("\\n")``) -> the keywords that occur in that line; lines with none are absent.

        A keyword that holds a newline is counted in the line where it starts (no caller has one)."""
        matches = self._matches(text)
        if not matches:
            return {}
        # where each line after the first starts: a match starting at or past it is on that line or a later one
        starts = list(accumulate(len(line) + 1 for line in text.split("\n")[:-1]))
        words = self.words
        out: dict[int, set[str]] = {}
        for i, start, _ in matches:
            out.setdefault(bisect_right(starts, start), set()).add(words[i])
        return out
