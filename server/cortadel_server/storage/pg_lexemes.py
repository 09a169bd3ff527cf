"""One user's full-text rows in process, for the PostgreSQL backend: ranked exactly as ``ranked_sql``
(storage/postgres.py) ranks them in SQL.

    entry = UserLexemes(version, rows)   # rows: (rowid, memory id, tokens, current, search::text)
    entry.best([["berlin"]], [0.0, 0.0, 0.3, 1.0], limit=8)   # [ScoredId]
    entry.best([["carolin", "s"]], weights, 8, phrases={0: (["m1"], [1.0])})  # a phrase PostgreSQL matched

An entry another replica's write left behind catches up by the rows changed since its version
(``UserLexemes.apply``: storage/postgres.py reads them by ``changed_version``), not by a reload;
rows deleted meanwhile are told by the rowids of those left, and dropped (``remove``).

In SQL every row that holds a query word is scored (``@@`` and ``ts_rank_cd`` per word, some 8 µs a
row), and a sentence, which every add looks up for its dedup neighbours, matches thousands of rows
at 10,000 memories of one user. Here the same arithmetic runs over per-lexeme postings.

Equal to ``ranked_sql``, operation for operation: the IDF (k1 + 1) max(ln((N - n + 0.5) / (n + 0.5)),
1e-6) with N the user's rows and n the rows holding the lexeme (what ``term_stats`` counts); f what
``ts_rank_cd(weights, search, word, 0)`` gives for a one-lexeme word: each occurrence is a cover
of its own, worth 1 / (1 / weight), summed in position order in double precision and returned as
a float4; a row's score the sum, in the query's word order, of idf / (1 + (k1 (1 - b) + k1 b D /
avgdl) / f) over its words with f > 0; ties in row order. A word of several lexemes (a phrase to
``to_tsquery``: "caroline's") needs their positions, which the entry does not hold: PostgreSQL
matches it and gives f in the rows it matches (``ts_rank_cd`` itself, over the few rows holding
all its lexemes), the rest is done here; its n is its lexemes' smallest, as in ``ranked_sql``.
``tests/test_postgres_text_cache.py`` compares both, hits, order and scores.
"""

from __future__ import annotations

import math
import re
import threading
from array import array
from collections.abc import Iterable, Mapping, Sequence
from itertools import compress

import numpy as np

from cortadel_server.storage.base import ScoredId
from cortadel_server.storage.term_index import IDF_FLOOR, K1, B

#: the index of each weight label in ts_rank_cd's weights array ({D, C, B, A})
_LABEL = {"D": 0, "C": 1, "B": 2, "A": 3}

#: one row as loaded: rowid, memory id, tokens, current, its search vector in text form
Row = tuple[int, str, int, bool, str]
#: one lexeme of a tsvector's text form: 'quoted' (' and \ doubled), then its positions, each
#: with its weight label (none for D): 'sam':1A,4B
_ENTRY = re.compile(r"'((?:[^']|'')*)'(?::([0-9ABCD,]+))?")
_ESCAPED = re.compile(r"''|\\\\")
_DIGITS = str.maketrans("", "", "0123456789")


def _labels(positions: str) -> str:
    """"1A,3B,5" as "ABD"; no positions as one of weight D (tsrank.c's POSNULL)."""
    if "," not in positions:  # most lexemes occur once
        return positions[-1] if positions and positions[-1] in "ABC" else "D"
    return "".join(label or "D" for label in positions.translate(_DIGITS).split(","))


def _compacted(values: np.ndarray, live: np.ndarray) -> np.ndarray:
    """``values`` of the live slots (the first ``len(live)``), at the same capacity."""
    compacted = np.zeros_like(values)
    kept = values[: len(live)][live]
    compacted[: len(kept)] = kept
    return compacted


def postings(search: str) -> list[tuple[str, str]]:
    """A tsvector's text form as (lexeme, its weight labels in position order: "AAB")."""
    return [
        (_ESCAPED.sub(lambda m: m.group(0)[0], lexeme) if "'" in lexeme or "\\" in lexeme else lexeme, _labels(positions))
        for lexeme, positions in _ENTRY.findall(search)
    ]


class UserLexemes:
    """One user's rows (every one, current or not: the statistics count them all) by lexeme, and
    the user version they reflect.

    A row removed, or whose lexemes changed (it moves to a new slot), leaves a hole: rowid -1, out
    of the statistics at once, and out of the postings as ``best`` reads them; when holes outnumber
    the rows, the postings are rewritten without them (``_compact``). Taking a row out of every
    posting at once was a pass over all of them: 36 ms a catch-up at 10,000 memories."""

    def __init__(self, version: int, rows: Iterable[Row] = ()) -> None:
        self.version = version
        # held by every read and change: a replica's search and its catch-up may run at once
        self._lock = threading.Lock()
        self.ids: list[str] = []
        self.index: dict[str, int] = {}
        #: per lexeme: the rows holding it (int32: 4 bytes a posting, not a Python int's 36) and its
        #: weight labels in each
        self._postings: dict[str, tuple[array[int], list[str]]] = {}
        #: per lexeme, made on first use: its rows as an array, and f in each for a weights array
        self._arrays: dict[str, tuple[np.ndarray, dict[tuple[float, ...], np.ndarray]]] = {}
        #: slots, holes included
        self.n = 0
        #: the user's rows the entry holds (N of the IDF), and the highest rowid it has had
        self.rows = 0
        self.last_rowid = 0
        self.rowids = np.zeros(16, dtype=np.int64)
        self.tokens = np.zeros(16, dtype=np.float64)
        self.current = np.zeros(16, dtype=bool)
        #: a hash of each row's search vector (as text): whether a changed row's lexemes changed
        self._searched = np.zeros(16, dtype=np.int64)
        self.total_tokens = 0
        self.apply(0, list(rows))

    def _reserve(self, count: int) -> None:
        if self.n + count > len(self.rowids):
            # a quarter more: a whole read fills an entry to the brim, and most users then grow by a few rows
            grow = max(self.n + count, len(self.rowids) * 5 // 4) - len(self.rowids)
            self.rowids = np.concatenate([self.rowids, np.zeros(grow, dtype=np.int64)])
            self.tokens = np.concatenate([self.tokens, np.zeros(grow, dtype=np.float64)])
            self.current = np.concatenate([self.current, np.zeros(grow, dtype=bool)])
            self._searched = np.concatenate([self._searched, np.zeros(grow, dtype=np.int64)])

    def _index_row(self, i: int, search: str) -> None:
        """Adds row ``i`` to the postings of its lexemes."""
        for lexeme, labels in postings(search):
            found = self._postings.get(lexeme)
            if found is None:
                found = self._postings[lexeme] = (array("i"), [])
            found[0].append(i)
            found[1].append(labels)

    def _compact(self) -> None:
        """Close the holes once they outnumber the rows: each row moves down to its place among
        those left, in every posting."""
        if self.n - self.rows <= self.rows:
            return
        live = self.rowids[: self.n] >= 0
        slot = np.cumsum(live) - 1
        for lexeme, (held, labels) in list(self._postings.items()):
            rows = np.frombuffer(held, dtype=np.int32)
            keep = live[rows]
            if keep.any():
                moved = array("i")
                moved.frombytes(slot[rows[keep]].astype(np.int32).tobytes())
                self._postings[lexeme] = (moved, list(compress(labels, keep.tolist())))
            else:
                del self._postings[lexeme]
        self._arrays.clear()
        self.ids = list(compress(self.ids[: self.n], live.tolist()))
        self.index = {memory_id: i for i, memory_id in enumerate(self.ids)}
        self.n = len(self.ids)
        self.rowids = _compacted(self.rowids, live)
        self.tokens = _compacted(self.tokens, live)
        self.current = _compacted(self.current, live)
        self._searched = _compacted(self._searched, live)

    def _set(self, i: int, row: Row) -> None:
        rowid, _, tokens, current, search = row
        self.rowids[i] = rowid
        self.total_tokens += tokens - int(self.tokens[i])
        self.tokens[i] = tokens
        self.current[i] = current
        self._searched[i] = hash(search)

    def append(self, rowid: int, memory_id: str, tokens: int, current: bool, search: str) -> None:
        with self._lock:
            self._add([(rowid, memory_id, tokens, current, search)])

    def _add(self, rows: Sequence[Row]) -> None:
        self._reserve(len(rows))
        for row in rows:
            i = self.n
            self.ids.append(row[1])
            self.index[row[1]] = i
            self.tokens[i] = 0
            self._set(i, row)
            self._index_row(i, row[4])
            self.n += 1
        self.rows += len(rows)
        self.last_rowid = max([self.last_rowid, *(row[0] for row in rows)])

    def remove(self, memory_ids: Sequence[str]) -> None:
        """The user's rows ``memory_ids`` went away."""
        with self._lock:
            self._drop([i for i in map(self.index.get, memory_ids) if i is not None])
            self._compact()

    def _drop(self, held: Sequence[int]) -> None:
        """Make holes of the rows at these indexes; a lexeme only holes hold goes (a deleted text's
        words are not kept)."""
        for i in held:
            del self.index[self.ids[i]]
            self.ids[i] = ""
            self.total_tokens -= int(self.tokens[i])
            self.tokens[i] = 0
            self.rowids[i] = -1
            self.current[i] = False
        self.rows -= len(held)
        if held:
            self._forget_lexemes_of_holes()

    def _forget_lexemes_of_holes(self) -> None:
        """Take out the lexemes no live row holds. Only a lexeme of at most as many rows as there
        are holes can be one, and most lexemes of a user are in a row or two: at 10,000 memories
        this looks at every key's length and at the rows of the short ones (a few ms)."""
        holes = self.n - self.rows
        dead = (self.rowids[: self.n] < 0).tobytes()  # one byte a slot, read in Python
        gone = [lexeme for lexeme, (rows, _) in self._postings.items() if len(rows) <= holes and all(dead[r] for r in rows)]
        for lexeme in gone:
            del self._postings[lexeme]
            self._arrays.pop(lexeme, None)

    def apply(self, unchanged: int, changed: Sequence[Row], present: np.ndarray | None = None) -> bool:
        """Bring the entry to a later version from the user's rows changed since its own (in rowid
        order) and the count of the others (``unchanged``): afterwards it holds what a full read of
        the rows gives. Rows that went away leave no trace but the count: then ``present``, the
        rowids of all the user's rows (read in the same snapshot), tells which, and they are
        dropped. False, the entry untouched, when rows went away and ``present`` is not given."""
        with self._lock:
            gone: list[int] = []
            if present is not None:
                held = self.rowids[: self.n]
                gone = np.nonzero((held >= 0) & ~np.isin(held, present))[0].tolist()
            replaced: list[tuple[int, Row]] = []
            added: list[Row] = []
            for row in changed:
                if row[0] > self.last_rowid:  # a user's rows are numbered in the order their writes commit
                    added.append(row)
                    continue
                i = self.index.get(row[1])
                if i is None or int(self.rowids[i]) != row[0]:
                    return False
                replaced.append((i, row))
            if unchanged + len(replaced) != self.rows - len(gone):
                return False
            # a row whose lexemes changed (new text or context) moves to a new slot
            moved = {i: row for i, row in replaced if hash(row[4]) != self._searched[i]}
            self._drop([*gone, *moved])
            for i, row in replaced:
                if i not in moved:
                    self._set(i, row)
            self._add([*moved.values(), *added])
            self._compact()
            return True

    def set_current(self, memory_id: str, current: bool) -> None:
        with self._lock:
            i = self.index.get(memory_id)
            if i is not None:
                self.current[i] = current

    def _held(self, lexeme: str) -> tuple[np.ndarray, dict[tuple[float, ...], np.ndarray]]:
        """The rows holding ``lexeme`` (holes included), and f in each by weights array so far.
        Kept between searches and extended by the rows added since (postings only grow until
        ``_compact``, which drops them all): made again whole at every add, the common words'
        were most of a search."""
        held = self._postings[lexeme][0]
        arrays = self._arrays.get(lexeme)
        if arrays is None:
            arrays = self._arrays[lexeme] = (np.frombuffer(held, dtype=np.int32).astype(np.int64), {})
        elif len(arrays[0]) < len(held):
            tail = np.frombuffer(held, dtype=np.int32)[len(arrays[0]):].astype(np.int64)
            arrays = self._arrays[lexeme] = (np.concatenate([arrays[0], tail]), arrays[1])
        return arrays

    def _live(self, rows: np.ndarray) -> np.ndarray | None:
        """Which of ``rows`` are live, None when all are (no holes)."""
        return self.rowids[rows] >= 0 if self.n > self.rows else None

    def _rows_and_frequencies(self, lexeme: str, weights: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
        """The live rows holding ``lexeme`` and f in each for ``weights``."""
        rows, frequencies = self._held(lexeme)
        f = frequencies.get(weights)
        if f is None or len(f) < len(rows):
            # 1 / (1 / w) as calc_rank_cd computes a one-position cover; a weight of 0 gives 0
            # there (1 / inf); the float4 it returns, as a double again
            cover = [1.0 / (1.0 / w) if w else 0.0 for w in weights]
            done = 0 if f is None else len(f)
            tail = np.array(
                [sum(cover[_LABEL[label]] for label in row) for row in self._postings[lexeme][1][done : len(rows)]],
                dtype=np.float32,
            ).astype(np.float64)
            f = frequencies[weights] = tail if f is None else np.concatenate([f, tail])
        live = self._live(rows)
        return (rows, f) if live is None else (rows[live], f[live])

    def _phrase(self, lexemes: Sequence[str], matches: tuple[Sequence[str], Sequence[float]]) -> tuple[int, np.ndarray, np.ndarray]:
        """A word of several lexemes: its document frequency as ranked_sql takes it (the smallest
        of its lexemes', those no row holds left out), and the rows PostgreSQL matched with f in
        each (``matches``: memory ids and f), those this entry holds."""
        held = [
            len(rows) if (live := self._live(rows)) is None else int(live.sum())
            for rows in (self._held(lexeme)[0] for lexeme in dict.fromkeys(lexemes) if lexeme in self._postings)
        ]
        found = [(self.index[memory_id], f) for memory_id, f in zip(*matches, strict=True) if memory_id in self.index]
        return (
            min(held, default=0),
            np.array([slot for slot, _ in found], dtype=np.int64),
            np.array([f for _, f in found], dtype=np.float64),
        )

    def best(
        self, words: Sequence[Sequence[str]], weights: Sequence[float], limit: int, allowed: Iterable[int] | None = None,
        phrases: Mapping[int, tuple[Sequence[str], Sequence[float]]] | None = None,
    ) -> list[ScoredId]:
        """The ``limit`` best rows for the query words (each given as its lexemes), among the current
        ones or the row keys ``allowed``. A word of several lexemes (a phrase to ``to_tsquery``:
        "caroline's") is matched by PostgreSQL, which has the positions: ``phrases`` holds, by the
        word's index, the memories it matched and f in each (``ts_rank_cd``, as ranked_sql has it)."""
        keys = None if allowed is None else np.fromiter(allowed, dtype=np.int64)
        with self._lock:
            ranked = tuple(float(np.float32(w)) for w in weights)  # ts_rank_cd's weights are float4
            n = self.rows
            avgdl = max(self.total_tokens, 1) / max(n, 1)
            base = K1 * (1 - B)
            per_token = K1 * B / avgdl
            scores = np.zeros(self.n)
            matched = np.zeros(self.n, dtype=bool)
            for word, lexemes in enumerate(words):
                if len(lexemes) > 1:
                    df, rows, f = self._phrase(lexemes, (phrases or {}).get(word, ((), ())))
                elif lexemes and lexemes[0] in self._postings:
                    rows, f = self._rows_and_frequencies(lexemes[0], ranked)
                    df = len(rows)
                else:
                    continue
                idf = (K1 + 1) * max(math.log((n - df + 0.5) / (df + 0.5)), IDF_FLOOR)
                matched[rows] = True
                scoring = f != 0
                rows, f = rows[scoring], f[scoring]
                scores[rows] += idf / (1 + (base + per_token * self.tokens[rows]) / f)
            mask = matched & (self.current[: self.n] if keys is None else np.isin(self.rowids[: self.n], keys))
            found = np.flatnonzero(mask)
            if len(found) > 4 * limit:
                # Only rows at or above the limit-th best score can be among the best (every row tied
                # with it stays): sorting all the matches (most of the user's rows for a sentence)
                # was most of a lookup.
                among = scores[found]
                found = found[among >= np.partition(among, len(among) - limit)[len(among) - limit]]
            order = np.lexsort((self.rowids[found], -scores[found]))[:limit]
            return [ScoredId(self.ids[i], float(scores[i])) for i in found[order]]
