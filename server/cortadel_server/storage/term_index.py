"""One user's full-text terms in process, ranked by the BM25 that SQLite's FTS5 computes.

    index = TermIndex(version, rows, context_weight=0.3)   # rows: (memory id, text stems, context stems, current)
    index.append("m1", ["user", "live", "in", "berlin"], [], True)
    index.best([["berlin"]], totals, limit=8)   # [("m1", score)], or None: ask FTS5
    # totals(phrase): the table's Totals, read through a phrase the index knows to match

The dedup lookup of every write ranks the user's current memories against the new text by BM25.
FTS5 scores every row that shares a word with the text (about half of the user's rows for a
sentence), some 2 µs a row in its auxiliary function: 12 ms at 10,000 memories of one user. Here
the same formula runs over per-term postings with numpy, in a fraction of a millisecond.

Equal to FTS5, and never guessed: the scores follow ``fts5Bm25Function`` operation for operation
(k1 = 1.2, b = 0.75, IDF floored at 1e-6, a phrase's frequency summed instance by instance with
the column weights, the row's tokens over both columns against the average of the whole table),
so they come out bit for bit the same, and rows of equal score follow in rowid order, as FTS5
returns them. Where two of the best scores differ by a rounding error only (an order FTS5's own
rounding could swap), or a phrase has more than two tokens, ``best`` answers None and the caller
asks FTS5. ``tests/test_sqlite_text_search.py`` compares both, hits, order and scores.
"""

from __future__ import annotations

import bisect
import itertools
import math
import struct
import threading
from array import array
from collections import _count_elements  # type: ignore[attr-defined]
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

#: FTS5's bm25() constants
K1 = 1.2
B = 0.75
#: the IDF of a phrase in more than half the rows (FTS5 floors it so)
IDF_FLOOR = 1e-6
#: scores closer than this (relative) may be ordered otherwise by FTS5: such a lookup goes to FTS5
TIE = 1e-9
#: matched rows above which ``best_among`` first drops those below a floor (``_floor``)
FLOORED_ABOVE = 512


@dataclass(frozen=True)
class Totals:
    """What FTS5's BM25 reads about the whole table: its rows and their tokens, every user's."""

    rows: int
    tokens: int


#: A key's postings: its rows in increasing order (int64) and its weighted frequency in each
#: (float64), as two ``bytearray``s. Bytes, not objects: a bytearray holds no reference for
#: Python's garbage collector to walk (and the pair's tuple is untracked by its first collection),
#: where two arrays in a holder were three tracked objects a key, some 23,000 for a user of
#: 10,000 memories, walked by every full collection as long as the index is cached.
Postings = tuple[bytearray, bytearray]
_ROW = struct.Struct("=q")  # native order, as numpy reads them
_FREQ = struct.Struct("=d")
#: the rowid a removed row holds (0: a row that came without one)
_REMOVED = -1


def _held(postings: dict[str, Postings], key: str) -> Postings:
    """The postings of ``key``, made empty when it has none (a setdefault would make a pair per call)."""
    held = postings.get(key)
    if held is None:
        held = postings[key] = (bytearray(), bytearray())
    return held


def _place_of(rows: bytearray, row: int) -> int:
    """Where ``row`` is, or would go, among ``rows`` (int64, increasing), in bytes. For writers
    only: it exports the buffer for a moment, and a resize meanwhile would fail. Every change of an
    index runs under its cache's lock, and searches never export (``_rows_below``)."""
    with memoryview(rows) as raw, raw.cast("q") as keys:
        return bisect.bisect_left(keys, row) * _ROW.size


def _rows_below(rows: bytearray, n: int) -> int:
    """How many of ``rows`` (int64, increasing) are below ``n``, read without exporting the
    buffer: a search may run this while a write grows it."""
    low, high = 0, len(rows) // _ROW.size
    while low < high:
        middle = (low + high) // 2
        if _ROW.unpack_from(rows, middle * _ROW.size)[0] < n:
            low = middle + 1
        else:
            high = middle
    return low


def _counts(stems: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    _count_elements(counts, stems)  # Counter's C loop, in first-seen order
    return counts


def _joined(text: Sequence[str], context: Sequence[str]) -> str:
    """A row's terms as one string (no stem holds a space or a line break): what ``remove`` and
    ``replace`` take back out of the postings, and what tells ``apply`` whether a row's terms changed."""
    return " ".join(text) + "\n" + " ".join(context)


def _split(terms: str) -> tuple[list[str], list[str]]:
    """``_joined``'s text and context stems again."""
    text, context = terms.split("\n")
    return text.split(), context.split()


def _pairs(stems: Sequence[str]) -> dict[str, int]:
    """Adjacent stems as one key ("sam" "s" → "sam s"): what a two-token phrase matches."""
    return _counts(map(" ".join, itertools.pairwise(stems)))


def _floor(rows: np.ndarray, hit_counts: Sequence[int], scores: np.ndarray, allowed: np.ndarray, keep: int) -> float:
    """A score the ``keep`` best allowed rows all reach, or 0.0: the ``keep``-th best of some of
    them (of a part, it is at most the whole's), allowed rows of the query's rarest phrases, whose
    IDF is the largest (``rows`` holds each phrase's rows in turn, ``hit_counts`` of them), the
    newest of each: a write ends older versions."""
    starts = [0, *itertools.accumulate(hit_counts)]
    picked, wanted = [], 4 * keep  # a few more than keep: rows holding several of the phrases come once
    for phrase in sorted(range(len(hit_counts)), key=hit_counts.__getitem__):
        held = rows[max(starts[phrase], starts[phrase + 1] - 8 * wanted): starts[phrase + 1]]
        picked.append(held[allowed[held]][-wanted:])
        wanted -= len(picked[-1])
        if wanted <= 0:
            break
    some = picked[0] if len(picked) == 1 else np.unique(np.concatenate(picked))
    if len(some) < keep:
        return 0.0
    return float(np.partition(scores[some], len(some) - keep)[len(some) - keep])


def _best(candidates: np.ndarray, scores: np.ndarray, keep: int, floor: float) -> np.ndarray:
    """The ``keep`` best of the rows ``candidates`` (in row order), best first, equal scores in row
    order; ``floor`` a score ``keep`` of them reach (0.0: none known)."""
    among = scores[candidates]
    if floor > 0.0:
        # numpy's partition slows a hundredfold on many equal scores, which is what the rows that
        # hold only a query's common words score ("i moved to", the same length): a third of a
        # conversation batch's time at 30,000 memories. Rows below the floor are not among the best;
        # when fewer than keep are above it, the floor is the keep-th best, and no partition is needed.
        above = among > floor
        count = int(np.count_nonzero(above))
        if count < keep:
            top = np.concatenate([candidates[above], candidates[among == floor][: keep - count]])
            floored: np.ndarray = top[np.argsort(-scores[top], kind="stable")]  # the rows at the floor stay last, in row order
            return floored
        candidates, among = candidates[above], among[above]
    edge = np.partition(among, len(candidates) - keep)[len(candidates) - keep]
    top = candidates[among >= edge]  # every row tied at the edge, in row order
    best: np.ndarray = top[np.argsort(-scores[top], kind="stable")][:keep]  # equal scores stay in row order
    return best


class TermIndex:
    """One user's rows as FTS5 indexes them, for BM25 in process. ``version`` is the user version
    it reflects; ``n`` the rows held (the cache bounds itself by it), ``removed`` of them gone.

    Rows are appended in rowid order, FTS5's order of ties. A row removed keeps its place, holding
    no posting; a row whose terms changed has them replaced in place. Both change postings a search
    may be reading: ``revision`` is odd while they do and moves on with each, and ``best_among``
    answers None (ask FTS5) when it saw it move.
    """

    def __init__(
        self, version: int, rows: Iterable[tuple[str, Sequence[str], Sequence[str], bool]] = (), *, context_weight: float
    ) -> None:
        self.version = version
        self.context_weight = context_weight
        self.n = 0
        self.ids: list[str] = []
        self._position: dict[str, int] = {}
        self._current = array("b")
        self._length = array("d")
        #: ``_length`` as numpy for ``best_among``, and how many of its first rows are filled (``_lengths``)
        self._length_copy: tuple[np.ndarray, int] = (np.empty(0), 0)
        #: held while the copy grows and while ``extend`` changes a length: neither loses the other's
        self._length_lock = threading.Lock()
        #: each row's terms (``_joined``); "" for a removed row
        self._row_terms: list[str] = []
        #: each row's key (the backend's rowid): 0 when it came without one, ``_REMOVED`` once removed
        self._rowids = array("q")
        #: the largest row key held; 0 when rows came without one
        self.last_rowid = 0
        self.removed = 0
        self.revision = 0
        self._terms: dict[str, Postings] = {}
        self._pairs: dict[str, Postings] = {}
        for memory_id, text, context, current in rows:
            self.append(memory_id, text, context, current)

    def append(
        self, memory_id: str, text: Sequence[str], context: Sequence[str], current: bool, rowid: int | None = None
    ) -> None:
        """Adds a row after every other; ``rowid`` its row key, when known (``apply`` needs it)."""
        row = self.n
        self.ids.append(memory_id)
        self._position[memory_id] = row
        self._current.append(current)
        self._length.append(len(text) + len(context))
        self._row_terms.append(_joined(text, context))
        self._rowids.append(rowid or 0)
        if rowid is not None:
            self.last_rowid = max(self.last_rowid, rowid)
        pack_row, pack_freq = _ROW.pack, _FREQ.pack
        for postings, weights in ((self._terms, self._weighed(_counts(text), _counts(context))),
                                  (self._pairs, self._weighed(_pairs(text), _pairs(context)))):
            for key, weight in weights.items():
                held = postings.get(key)
                if held is None:
                    postings[key] = (bytearray(pack_row(row)), bytearray(pack_freq(weight)))
                else:
                    held[0].extend(pack_row(row))
                    held[1].extend(pack_freq(weight))
        self.n += 1

    def _weights(self, text: Sequence[str], context: Sequence[str]) -> tuple[dict[str, float], dict[str, float]]:
        """A row's weighted frequency of each term, and of each pair: one posting per key and row."""
        return self._weighed(_counts(text), _counts(context)), self._weighed(_pairs(text), _pairs(context))

    def _weighed(self, in_text: dict[str, int], in_context: dict[str, int]) -> dict[str, float]:
        """The text's keys (with their count in the context), then the context's own."""
        if not in_context:
            return {key: float(count) for key, count in in_text.items()}
        weights = {}
        for key, count in in_text.items():
            also = in_context.pop(key, 0)
            weights[key] = self._frequency(count, also) if also else float(count)
        for key, count in in_context.items():
            weights[key] = self._frequency(0, count)
        return weights

    def _set_length(self, row: int, length: float) -> None:
        with self._length_lock:
            self._length[row] = length
            lengths, filled = self._length_copy
            if row < filled:
                lengths[row] = length

    def __contains__(self, memory_id: str) -> bool:
        return memory_id in self._position

    @property
    def rows_held(self) -> int:
        """The rows held, removed ones left out."""
        return self.n - self.removed

    def extend(self, memory_id: str, last: str | None, added: Sequence[str]) -> None:
        """The text of row ``memory_id``, which has no context, grew by ``added`` stems at its end
        (a session document appended to); ``last`` is the stem it ended with, for the pair across
        the join. The row keeps its place, so rows stay in the order FTS5 breaks ties by; its
        postings and length change in place (a search reading meanwhile must check it was not
        changed under it)."""
        row = self._position[memory_id]
        joined = [last, *added] if last is not None else added
        for postings, counts in ((self._terms, _counts(added)), (self._pairs, _pairs(joined))):
            for key, count in counts.items():
                rows, freq = _held(postings, key)
                at = _place_of(rows, row)
                if at < len(rows) and _ROW.unpack_from(rows, at)[0] == row:
                    # whole instances only (no context): the sum is exact
                    _FREQ.pack_into(freq, at, _FREQ.unpack_from(freq, at)[0] + count)
                else:
                    rows[at:at] = _ROW.pack(row)
                    freq[at:at] = _FREQ.pack(float(count))
        self._set_length(row, self._length[row] + len(added))
        if added:
            text, _, context = self._row_terms[row].partition("\n")
            self._row_terms[row] = (f"{text} " if text else "") + " ".join(added) + "\n" + context

    def _frequency(self, in_text: int, in_context: int) -> float:
        """FTS5's sum: 1.0 per instance in the text, then the context weight per instance in the
        context, added one by one (the rounding is part of the score)."""
        freq = float(in_text)
        for _ in range(in_context):
            freq += self.context_weight
        return freq

    @classmethod
    def load(
        cls, version: int, rows: Sequence[tuple[str, Sequence[str], Sequence[str], bool]], *, context_weight: float,
        rowids: Sequence[int] = (),
    ) -> TermIndex:
        """What ``TermIndex(version, rows)`` builds row by row, counted with numpy instead: a user's
        first search in a process loads their index, and row by row that took 0.15 to 0.3 ms a memory.
        ``rowids``: the rows' keys, in the same order (none: not known)."""
        index = cls(version, context_weight=context_weight)
        index.last_rowid = max(rowids, default=0)
        n = len(rows)
        if n == 0:
            return index
        vocabulary: dict[str, int] = {}
        code = vocabulary.setdefault
        # Each row's text, then its context: segments 2r and 2r + 1 of one run of term codes.
        sizes = np.fromiter((len(part) for _, text, context, _ in rows for part in (text, context)), np.int64, 2 * n)
        codes = np.fromiter(
            (code(stem, len(vocabulary)) for _, text, context, _ in rows for part in (text, context) for stem in part),
            np.int64, int(sizes.sum()),
        )
        segments = np.repeat(np.arange(2 * n), sizes)
        words = list(vocabulary)
        index._load_postings(index._terms, codes, segments, lambda key: words[key])
        adjacent = segments[1:] == segments[:-1]  # pairs never span the text and its context
        size = len(words)
        index._load_postings(
            index._pairs, codes[:-1][adjacent] * size + codes[1:][adjacent], segments[:-1][adjacent],
            lambda key: f"{words[key // size]} {words[key % size]}",
        )
        index.ids = [memory_id for memory_id, *_ in rows]
        index._position = {memory_id: row for row, memory_id in enumerate(index.ids)}
        index._current = array("b", [bool(current) for *_, current in rows])
        index._length.frombytes((sizes[0::2] + sizes[1::2]).astype(np.float64).tobytes())
        index._row_terms = [_joined(text, context) for _, text, context, _ in rows]
        index._rowids = array("q", rowids) if rowids else array("q", bytes(8 * n))
        index.n = n
        return index

    def apply(
        self, unchanged: int, changed: Sequence[tuple[int, str, Sequence[str], Sequence[str], bool]],
        present: np.ndarray | None = None,
    ) -> bool:
        """Bring the index to a later version from the user's rows changed since its own, in rowid
        order (rowid, memory id, text stems, context stems, current), the count of the others
        (``unchanged``) and, when rows went away, every rowid the user has now, sorted
        (``present``). A row's current state changes, a row whose terms changed (an edit, a new
        context) has them replaced in place, a row gone is removed, a new row is appended. False,
        the index untouched, when these cannot tell and a full read must: rows went away and
        ``present`` is not given or a held row's rowid is not known, or a row known by its id came
        back under a later rowid (deleted and written again)."""
        flags: list[tuple[int, bool]] = []
        replaced: list[tuple[int, str, bool]] = []
        added: list[tuple[int, str, Sequence[str], Sequence[str], bool]] = []
        for row in changed:
            rowid, memory_id, text, context, current = row
            at = self._position.get(memory_id)
            if rowid > self.last_rowid:  # a user's rows are numbered in the order their writes commit
                if at is not None:
                    return False
                added.append(row)
                continue
            if at is None:
                return False
            terms = _joined(text, context)
            if self._row_terms[at] == terms:
                flags.append((at, current))
            else:
                replaced.append((at, terms, current))
        gone: list[int] = []
        if unchanged + len(flags) + len(replaced) != self.rows_held:
            rowids = np.array(self._rowids, dtype=np.int64)[: self.n]
            held_rows = rowids != _REMOVED
            if present is None or np.any(rowids[held_rows] == 0):
                return False
            gone = np.flatnonzero(held_rows & ~np.isin(rowids, present)).tolist()
            if unchanged + len(flags) + len(replaced) != self.rows_held - len(gone):
                return False
        if gone or replaced:
            self.revision += 1  # odd: a search reading postings meanwhile asks FTS5
            for at in gone:
                self._remove(at)
            for at, terms, _ in replaced:
                self._replace(at, terms)
            self.revision += 1
        for at, current in [*flags, *((at, current) for at, _, current in replaced)]:
            self._current[at] = current
        for rowid, memory_id, text, context, current in added:
            self.append(memory_id, text, context, current, rowid)
        return True

    def remove(self, memory_id: str) -> None:
        """Row ``memory_id`` went away; its place stays (see the class)."""
        self.revision += 1
        self._remove(self._position[memory_id])
        self.revision += 1

    def replace(self, memory_id: str, text: Sequence[str], context: Sequence[str]) -> None:
        """Row ``memory_id``'s terms are now these, in its place."""
        self.revision += 1
        self._replace(self._position[memory_id], _joined(text, context))
        self.revision += 1

    def _remove(self, row: int) -> None:
        """Row ``row`` went away: its postings go, its place stays (later rows keep theirs)."""
        self._repost(row, self._row_terms[row], "\n")
        del self._position[self.ids[row]]
        self.ids[row] = ""  # nothing of a deleted memory is kept
        self._current[row] = False
        self._row_terms[row] = ""
        self._rowids[row] = _REMOVED
        self._set_length(row, 0.0)
        self.removed += 1

    def _replace(self, row: int, terms: str) -> None:
        """Row ``row``'s terms are now ``terms`` (``_joined``)."""
        self._repost(row, self._row_terms[row], terms)
        self._row_terms[row] = terms
        text, context = _split(terms)
        self._set_length(row, float(len(text) + len(context)))

    def _repost(self, row: int, old: str, new: str) -> None:
        """Row ``row``'s postings from its ``old`` terms to its ``new`` ones (``_joined``), in row
        order: only the keys whose weight changed (a rebuilt session document keeps most). A key
        left without postings goes."""
        for postings, was, now in zip((self._terms, self._pairs), self._weights(*_split(old)), self._weights(*_split(new)),
                                      strict=True):
            for key, weight in was.items():
                if now.get(key) == weight:
                    continue
                rows, freq = postings[key]
                at = _place_of(rows, row)
                if key in now:
                    _FREQ.pack_into(freq, at, now[key])
                    continue
                del rows[at:at + _ROW.size]
                del freq[at:at + _ROW.size]
                if not rows:
                    del postings[key]
            for key, weight in now.items():
                if key not in was:
                    rows, freq = _held(postings, key)
                    at = _place_of(rows, row)
                    rows[at:at] = _ROW.pack(row)
                    freq[at:at] = _FREQ.pack(weight)

    def _load_postings(
        self, into: dict[str, Postings], keys: np.ndarray, segments: np.ndarray, name: Callable[[int], str]
    ) -> None:
        """Postings of ``keys`` (term or pair codes) found in ``segments`` (2 × row + column), rows
        in order, frequencies summed as ``_frequency`` sums them."""
        if len(keys) == 0:
            return
        n = int(segments.max()) // 2 + 1
        combined, counts = np.unique((keys * n + segments // 2) * 2 + segments % 2, return_counts=True)
        key_rows, columns = combined // 2, combined % 2
        starts = np.r_[True, key_rows[1:] != key_rows[:-1]]
        group = np.cumsum(starts) - 1
        key_rows = key_rows[starts]
        in_text = np.zeros(len(key_rows), dtype=np.int64)
        in_text[group[columns == 0]] = counts[columns == 0]
        in_context = np.zeros(len(key_rows), dtype=np.int64)
        in_context[group[columns == 1]] = counts[columns == 1]
        freq = in_text.astype(np.float64)
        for times in range(1, int(in_context.max()) + 1):  # one addition per instance, as FTS5 adds them
            freq[in_context >= times] += self.context_weight
        key_of = key_rows // n
        all_rows, all_freq = memoryview((key_rows % n).astype(np.int64).tobytes()), memoryview(freq.tobytes())
        bounds = [*np.flatnonzero(np.r_[True, key_of[1:] != key_of[:-1]]).tolist(), len(key_of)]
        for start, end in itertools.pairwise(bounds):
            cut = slice(start * _ROW.size, end * _ROW.size)
            into[name(int(key_of[start]))] = (bytearray(all_rows[cut]), bytearray(all_freq[cut]))

    def _postings(self, phrase: Sequence[str]) -> Postings | None:
        postings = (self._terms if len(phrase) == 1 else self._pairs).get(" ".join(phrase))
        return postings if postings is not None and postings[0] else None

    def set_current(self, memory_id: str, current: bool) -> None:
        row = self._position.get(memory_id)
        if row is not None:
            self._current[row] = current

    def best(
        self, phrases: Sequence[Sequence[str]], totals: Callable[[Sequence[str]], Totals], *, limit: int
    ) -> list[tuple[str, float]] | None:
        """The ``limit`` current rows FTS5 ranks best for an OR of ``phrases`` (each a list of
        stems), best first with their scores; None when only FTS5 can tell (see the module).
        ``totals`` is asked once, with a phrase some row holds, and only when one does."""
        return self.best_among(phrases, totals, self.current(), limit=limit)

    def current(self) -> np.ndarray:
        """Which rows are current, as a row mask for ``best_among``."""
        n = self.n  # first: a write appending meanwhile adds its flag before its postings
        # The slice is a copy made at once; numpy reading the array itself exported its buffer for
        # as long as it converted, and an append by a catch-up in another thread then failed.
        return np.array(self._current[:n], dtype=bool)

    def rows_of(self, memory_ids: Iterable[str]) -> np.ndarray:
        """The rows of ``memory_ids`` as a row mask for ``best_among`` (ids it does not hold are left out)."""
        mask = np.zeros(self.n, dtype=bool)
        position = self._position
        mask[[row for memory_id in memory_ids if (row := position.get(memory_id)) is not None]] = True
        return mask

    def best_among(
        self, phrases: Sequence[Sequence[str]], totals: Callable[[Sequence[str]], Totals], allowed: np.ndarray,
        *, limit: int,
    ) -> list[tuple[str, float]] | None:
        """``best`` over the rows ``allowed`` (a row mask: ``current``, ``rows_of``) instead of the
        current ones; the statistics stay the table's, as FTS5's under a filter."""
        if any(len(p) > 2 for p in phrases):
            return None
        revision = self.revision
        if revision % 2:  # postings are being removed or replaced
            return None
        found = [(p, postings) for p in phrases if (postings := self._postings(p)) is not None]
        if not found:
            return []
        # FTS5 gives its totals through a query on a phrase: the rarest one's rows are read fastest
        # (the first phrase was often "user", in every row: 30 ms at 35,000 rows).
        table = totals(min(found, key=lambda item: len(item[1][0]))[0])
        if table.rows <= 0:
            return None
        # Searches read while a write appends: the rows ``allowed`` covers, and copies, never views
        # (an array exporting its buffer cannot grow: the write would fail).
        n = len(allowed)
        average = table.tokens / table.rows
        # Every phrase's postings gathered into arrays of this call's own (numpy views of them are
        # safe), then handed to numpy once: converting phrase by phrase was most of a lookup.
        gathered_rows, gathered_freq = bytearray(), bytearray()
        idfs, hit_counts = [], []
        for _, (held_rows, held_freq) in found:
            # Rows are appended in order; a write's own lookups see them all (no search). Cut even
            # then: a write may append in between.
            size = len(held_rows)
            try:
                if _ROW.unpack_from(held_rows, size - _ROW.size)[0] >= n:
                    size = _rows_below(held_rows, n) * _ROW.size
            except struct.error:  # emptied meanwhile by a removal (the revision below tells)
                return None
            gathered_rows += held_rows[:size]
            gathered_freq += held_freq[:size]
            hits = size // _ROW.size
            if hits > table.rows:  # totals read after a deletion this index has not caught up with yet
                return None
            idf = math.log((table.rows - hits + 0.5) / (hits + 0.5))  # C's log, as FTS5's
            idfs.append(idf if idf > 0.0 else IDF_FLOOR)
            hit_counts.append(hits)
        # Every phrase's terms at once. The operations of fts5Bm25Function, in its order, element by
        # element: the same doubles; bincount adds each row's terms in phrase order, as FTS5 does.
        rows = np.frombuffer(gathered_rows, dtype=np.int64)
        freq = np.frombuffer(gathered_freq, dtype=np.float64)
        # idf · (freq · (k1 + 1)) / (freq + k1 · ((1 − b) + b · length / average)), in place: each
        # step is one of the formula's (a sum or product with its operands swapped is the same double).
        terms = self._lengths(n)[rows]
        terms *= B
        terms /= average
        terms += 1 - B
        terms *= K1
        terms += freq
        weighted = freq * (K1 + 1.0)
        weighted /= terms
        weighted *= np.repeat(np.array(idfs, dtype=np.float64), hit_counts)
        scores = np.bincount(rows, weights=weighted, minlength=n)
        # Every term of a row holding one scores above 0 (its IDF is floored above 0): the rows matched.
        candidates = np.flatnonzero((scores > 0.0) & allowed)
        if len(candidates) == 0:
            return []
        keep = min(limit + 1, len(candidates))  # one more: the row just outside must be told apart too
        floor = _floor(rows, hit_counts, scores, allowed, keep) if len(candidates) > FLOORED_ABOVE else 0.0
        top = _best(candidates, scores, keep, floor)
        ranked = scores[top].tolist()  # a few: Python compares them faster than numpy calls would
        if any(0.0 < better - worse <= TIE * better for better, worse in itertools.pairwise(ranked)):
            return None
        ids = self.ids
        best = [(ids[i], score) for i, score in zip(top[:limit].tolist(), ranked[:limit], strict=True)]
        return best if self.revision == revision else None  # else postings changed under this read

    def _lengths(self, n: int) -> np.ndarray:
        """Every row's tokens, as numpy, for the first ``n`` rows. The copy grows by the rows
        appended since (only ``extend`` changes a row's length, and patches the copy too; a change
        that drops rows makes a new index), with room to spare: copying the whole array on every
        lookup was a tenth of one, and a batch write looks up between its appends. Searches call this
        side by side: an array and the rows filled in it are published together, each pair whole,
        and a copy that grows is made under a lock."""
        lengths, filled = self._length_copy
        if filled < n:
            with self._length_lock:
                lengths, filled = self._length_copy
                if filled < n:
                    if len(lengths) < n:
                        grown = np.empty(max(n, 2 * len(lengths)), dtype=np.float64)
                        grown[:filled] = lengths[:filled]
                        lengths = grown
                    # copied, never a view: an array exporting its buffer cannot grow (an append would fail)
                    lengths[filled:n] = np.array(self._length[filled:n], dtype=np.float64)
                    self._length_copy = (lengths, n)
        return lengths[:n]
