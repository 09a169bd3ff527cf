"""Case-insensitive patterns asked only whether they occur, found faster.

    _FAREWELL = Caseless(r"\b(?:bye|goodbye|take care)\b")
    _FAREWELL.found_in("OK, BYE for now")   # True

sre's IGNORECASE folds the case of every character it compares: searches took two to three times
as long as the same pattern without it (docs/performance.md). Over ASCII text, most text, a
pattern written in lower case finds the same in the lower-cased text without the flag: lower()
keeps an ASCII text's length and changes no character but an upper-case letter. Other text is
searched with the flag.

Patterns are written in lower case. A non-ASCII character in one ("€", "é") keeps the faster
search unless IGNORECASE folds it onto an ASCII letter (the Kelvin sign onto "k", the long s onto
"s"): such a pattern always takes the flag.
"""

from __future__ import annotations

import re
import string

__all__ = ["Caseless"]

#: an escape: one that writes a character by its code or name ("\u212a", "\N{KELVIN SIGN}"), or
#: any other ("\W", "\\"), read left to right so that "\\u" is an escaped backslash and a "u"
_ESCAPE = re.compile(r"\\(?:(?P<char>x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]+\})|.)", re.DOTALL)
_ASCII_LETTERS = string.ascii_letters


def _folds_onto_ascii(char: str) -> bool:
    return not char.isascii() and re.search(re.escape(char), _ASCII_LETTERS, re.IGNORECASE) is not None


class Caseless:
    """A pattern searched case-insensitively, for whether it occurs (a match's groups would hold
    the lower-cased text, so none is handed out)."""

    __slots__ = ("_any_case", "_lower")

    def __init__(self, pattern: str) -> None:
        # The pattern's own characters, those its escapes spell included; other escapes left out.
        unescaped = _ESCAPE.sub(lambda m: m[0].encode().decode("unicode_escape") if m["char"] else "", pattern)
        # An upper-case letter ("[A-Z]") would not see the lowered text: a mistake, or a pattern
        # that means case.
        if any(char.isascii() and char.isupper() for char in unescaped):
            raise ValueError(f"a caseless pattern is written in lower case: {pattern!r}")
        self._any_case = re.compile(pattern, re.IGNORECASE)
        self._lower = None if any(map(_folds_onto_ascii, unescaped)) else re.compile(pattern)

    def found_in(self, text: str) -> bool:
        """Whether the pattern occurs in ``text``, in any case."""
        if self._lower is not None and text.isascii():
            return self._lower.search(text.lower()) is not None
        return self._any_case.search(text) is not None
