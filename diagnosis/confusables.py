"""Look-alike letters read as the ASCII letters they imitate (Unicode TR39 confusables), for key names.

A key written ``DB_PАSSWORD`` (a Cyrillic ``А``) or ``ΑPI_TOKEN`` (a Greek ``Α``) names a secret as surely as
its ASCII spelling. :func:`fold` maps every non-ASCII letter whose TR39 prototype (``confusables.txt``, as
packaged by ``confusable-homoglyphs``) is one ASCII letter to that letter, one character for one character,
so a text keeps its length and a span found in the folded text is the same span of the original. ASCII is
left as it is (TR39 also folds ``0``/``O`` and ``1``/``l``/``I``: those never hide a key name from a reader).
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache


@lru_cache(maxsize=1)
def _table() -> dict[int, str]:
    """``str.translate`` table: non-ASCII letter -> its one ASCII letter prototype (the source's case kept)."""
    from confusable_homoglyphs.utils import load  # the data (~1 MB of JSON) is read on first use only

    table: dict[int, str] = {}
    for char, homoglyphs in load("confusables.json").items():
        if len(char) != 1 or char.casefold().isascii() or not unicodedata.category(char).startswith("L"):
            # ASCII, or a case variant that case folding already reads as ASCII ("ſ" is "s", not TR39's "f")
            continue
        letters = [h["c"] for h in homoglyphs if len(h["c"]) == 1 and h["c"].isascii() and h["c"].isalpha()]
        if not letters:
            continue
        proto = letters[0]
        if char.isupper() and proto == "l":
            proto = "I"  # TR39 folds I and l together; a capital look-alike of I reads as I
        table[ord(char)] = proto
    return table


def fold(text: str) -> str:
    """``text`` with each confusable non-ASCII letter replaced by its ASCII prototype (same length)."""
    if text.isascii():
        return text
    return text.translate(_table())
