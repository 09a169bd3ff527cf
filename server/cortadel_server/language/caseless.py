"""Case-insensitive patterns asked only whether they occur, found faster.

    _FAREWELL = Caseless(r"\b(?:bye|goodbye|take care)\b")
    _FAREWELL.found_in("OK, BYE for now")   # True

sre's IGNORECASE folds the case of every character it compares: searches took two to three times
as long as the same pattern without it (docs/performance.md). Over ASCII text, most text, a
pattern written in lower case finds the same in the lower-cased text without the flag: lower()
keeps an ASCII text's length and changes no character but an upper-case letter. Other text is
searched with the flag.
"""

from __future__ import annotations

import re

__all__ = ["Caseless"]

_ESCAPE = re.compile(r"\\.")


class Caseless:
    """A pattern searched case-insensitively, for whether it occurs (a match's groups would hold
    the lower-cased text, so none is handed out)."""

    __slots__ = ("_any_case", "_lower")

    def __init__(self, pattern: str) -> None:
        unescaped = _ESCAPE.sub("", pattern)
        # An upper-case letter ("[A-Z]") would not see the lowered text, and IGNORECASE folds some
        # non-ASCII characters onto ASCII ones (the Kelvin sign onto "k").
        if not unescaped.isascii() or unescaped != unescaped.lower():
            raise ValueError(f"a caseless pattern is written in lower-case ASCII: {pattern!r}")
        self._any_case = re.compile(pattern, re.IGNORECASE)
        self._lower = re.compile(pattern)

    def found_in(self, text: str) -> bool:
        """Whether the pattern occurs in ``text``, in any case."""
        if text.isascii():
            return self._lower.search(text.lower()) is not None
        return self._any_case.search(text) is not None
