"""Text normalisation shared by dedup, full-text queries and fingerprints."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
#: ``_WORD`` over lower-cased ASCII text: a class of ranges, where ``_WORD`` looks up each character's category
_ASCII_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def words(text: str) -> list[str]:
    """Lower-cased word tokens, accents folded, apostrophes kept inside words."""
    if text.isascii():  # nothing to fold (NFKD leaves ASCII as it is): the per-character pass skipped
        return _ASCII_WORD.findall(text.lower())
    folded = unicodedata.normalize("NFKD", text)
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch)).lower()
    return [w.replace("’", "'") for w in _WORD.findall(folded)]


def normalize_text(text: str) -> str:
    """Case-, accent-, punctuation- and whitespace-insensitive form of a statement."""
    return " ".join(words(text))


def fingerprint(text: str) -> str:
    """A stable key for exact-duplicate detection of one user's statements."""
    return hashlib.sha1(normalize_text(text).encode("utf-8")).hexdigest()
