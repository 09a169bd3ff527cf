"""The process's caches of users' text, emptied when text is deleted.

    @holds_text
    @functools.lru_cache(maxsize=8192)
    def shape(text: str) -> FactShape: ...

    holds_text(self.forget_held)   # a bound method: held weakly, called while its object lives
    forget_texts()                 # storage calls it once a deletion commits

Deletion really deletes: once a delete is acknowledged, no copy of the deleted text is left in the
database's files, and none in the caches of the process that served it either. The caches below
hold every user's texts mixed (a fact's comparison shape, its first time expression, a word's
stems, an alias's evidence), so one text cannot be taken out alone: each is emptied whole, and
refills as writes and searches come (deletions are rare against them). The caches of one user's
rows (vectors, full-text postings, session documents) are not here: storage catches them up by the
rows deleted. Another process serving the same store learns of the deletion through its storage
(``Storage`` implementations call ``forget_texts`` there too).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from types import MethodType
from typing import TypeVar

__all__ = ["forget_texts", "holds_text"]

Clear = TypeVar("Clear", bound=Callable[..., object])

_lock = threading.Lock()
_caches: list[Callable[[], Callable[[], object] | None]] = []


def holds_text(cache: Clear) -> Clear:
    """Register ``cache`` (an ``lru_cache``'d function, emptied by its ``cache_clear``, or a
    callable that empties a cache) to be emptied by ``forget_texts``; returns it unchanged."""
    clear = getattr(cache, "cache_clear", cache)
    # A bound method is held weakly: the object it empties (a connection's stems) may go.
    ref = weakref.WeakMethod(clear) if isinstance(clear, MethodType) else (lambda: clear)
    with _lock:
        _caches.append(ref)
    return cache


def forget_texts() -> None:
    """Empty every registered cache (those whose object is gone are dropped from the list)."""
    with _lock:
        _caches[:] = [ref for ref in _caches if ref() is not None]
        clears = [ref() for ref in _caches]
    for clear in clears:
        if clear is not None:
            clear()
