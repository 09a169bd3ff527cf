"""In-process exact vector search: per-user embedding matrices, kept current by write-through.

A backend that searches vectors in process (SQLite, PostgreSQL) holds each user's embeddings here,
labelled with the user version (see ``Storage`` in base.py) they reflect. A write in this process
advances the entry with the same change it made to the rows (``VectorCache.advance``); any other
change of the version (another process wrote, a rollback) makes the entry stale, and the backend
brings it up to date by the rows changed since (``catch_up``, ``UserVectors.apply``), or reloads it
whole when those cannot tell.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import numpy as np

from cortadel_server.storage.base import ScoredId

#: one row changed since an entry's version, for ``UserVectors.apply``: rowid, memory id, its
#: embedding as big-endian float4 bytes (PostgreSQL's binary form) or None, current
ChangedRow = tuple[int, str, bytes | None, bool]


class UserVectors:
    """One user's embeddings in a growable matrix, with the row keys (the backend's rowids) that
    filtered search masks by, and the user version the entry reflects.

    ``rows`` and ``last_rowid`` describe every row of the user at that version, those without an
    embedding too: what a read of the rows changed since (``apply``) is checked against."""

    def __init__(
        self, version: int, dim: int, rowids: list[int], ids: list[str], vectors: np.ndarray, current: list[bool],
        *, rows: int | None = None, last_rowid: int | None = None,
    ) -> None:
        self.version = version
        self.dim = dim
        # held by every read and change: a replica's search and its catch-up may run at once
        self._lock = threading.Lock()
        self.n = len(ids)
        capacity = _with_room(self.n)
        self.rowids = np.full(capacity, -1, dtype=np.int64)
        self.rowids[: self.n] = rowids
        self.ids = list(ids)
        self.index = {memory_id: i for i, memory_id in enumerate(ids)}
        self.matrix = np.zeros((capacity, dim), dtype=np.float32)
        self.matrix[: self.n] = vectors
        self.current = np.zeros(capacity, dtype=bool)
        self.current[: self.n] = current
        self.rows = self.n if rows is None else rows
        self.last_rowid = max(rowids, default=0) if last_rowid is None else last_rowid
        #: moves on whenever a held row's vector changes or a row becomes current again: what a
        #: ``screen`` of the rows took for granted (rows only appended or ended since) then fails
        self.revision = 0
        #: ``make_room`` was asked for and has not run yet
        self.room_asked = False

    def _reserve(self, count: int) -> None:
        """Room for ``count`` more rows."""
        if self.n + count > len(self.rowids):
            # a quarter more than the rows then held, as a whole read leaves (the constructor's, or
            # ``apply`` filling an empty entry): most users then grow by a few rows at a time
            self._move_into(_allocated(_with_room(self.n + count), self.dim))

    def _move_into(self, arrays: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        """The rows held, copied into larger ``_allocated`` arrays, which the entry then holds."""
        rowids, matrix, current = arrays
        n = self.n
        rowids[:n], matrix[:n], current[:n] = self.rowids[:n], self.matrix[:n], self.current[:n]
        self.rowids, self.matrix, self.current = rowids, matrix, current

    def needs_room(self) -> bool:
        """Seven eighths full, and ``make_room`` not asked for yet (it is, from now on)."""
        if self.room_asked or self.n * 8 < len(self.rowids) * 7:
            return False
        self.room_asked = True
        return True

    def make_room(self) -> None:
        """A quarter more rows, made ahead of the write that would grow the arrays itself: their
        pages are faulted in before the lock, and only the rows' copy runs under it (a growth
        inside a single add at 10,000 × 256 took 2 to 32 ms of it)."""
        with self._lock:
            capacity, dim = len(self.rowids), self.dim
            if self.n * 8 < capacity * 7:  # a write grew the arrays itself meanwhile
                self.room_asked = False
                return
        arrays = _allocated(_with_room(capacity), dim)
        with self._lock:
            self.room_asked = False
            if len(self.rowids) == capacity and self.dim == dim:  # else grown or replaced meanwhile
                self._move_into(arrays)

    def append(self, rowid: int, memory_id: str, vector: np.ndarray, current: bool) -> None:
        with self._lock:
            self._reserve(1)
            i = self.n
            self.rowids[i] = rowid
            self.matrix[i] = vector if len(vector) == self.dim else 0.0
            self.current[i] = current
            self.ids.append(memory_id)
            self.index[memory_id] = i
            self.n += 1
            self.rows += 1
            self.last_rowid = max(self.last_rowid, rowid)

    def set_current(self, memory_id: str, current: bool) -> None:
        with self._lock:
            i = self.index.get(memory_id)
            if i is not None:
                self.revision += bool(current and not self.current[i])
                self.current[i] = current

    def remove(self, memory_ids: Sequence[str]) -> None:
        """The user's rows ``memory_ids`` (each one of theirs, with or without an embedding) went away."""
        with self._lock:
            self._drop([i for i in map(self.index.get, memory_ids) if i is not None])
            self.rows -= len(memory_ids)

    def _drop(self, held: Iterable[int]) -> None:
        """Make holes of the rows at these indexes: no rowid matches one, never current."""
        for i in held:
            del self.index[self.ids[i]]
            self.rowids[i] = -1
            self.current[i] = False

    @classmethod
    def empty(cls) -> UserVectors:
        """An entry of no rows, below every version: ``apply`` fills it as a full read would."""
        return cls(-1, 0, [], [], np.zeros((0, 0), dtype=np.float32), [])

    def apply(self, unchanged: int, changed: Sequence[ChangedRow], present: np.ndarray | None = None) -> bool:
        """Bring the entry to a later version from the user's rows changed since its own (in rowid
        order) and the count of the others (``unchanged``): afterwards it holds what a full read
        of the rows gives, row for row. Rows that went away leave no trace but the count: then
        ``present``, the rowids of all the user's rows (sorted, read in the same snapshot), tells
        which, and they are dropped. False, the entry untouched, when these cannot tell: rows went
        away and ``present`` is not given, a row lost its embedding or got one in the middle of the
        matrix, or a vector of another dimension came (a reindex).

        An empty entry takes the dimension of the first vector; a vector of another dimension
        (before a reindex) then stays zero: it cannot match."""
        with self._lock:
            fresh = self.n == 0 and self.rows == 0
            dim = next((len(blob) // 4 for _, _, blob, _ in changed if blob is not None), 0) if fresh else self.dim
            gone = np.zeros(0, dtype=np.int64)
            kept = self.rows  # rows of the entry's version still there
            if present is not None:
                held = self.rowids[: self.n]
                gone = np.nonzero((held >= 0) & ~np.isin(held, present))[0]
                # the rows without an embedding are only counted: those left are the present ones it had
                kept = int(np.searchsorted(present, self.last_rowid, side="right"))
            replaced: list[tuple[int, bytes, bool]] = []
            added: list[ChangedRow] = []
            known = 0  # rows the entry's version had
            for row in changed:
                rowid, memory_id, blob, current = row
                if rowid > self.last_rowid:  # a user's rows are numbered in the order their writes commit
                    if blob is not None:
                        if not fresh and len(blob) != dim * 4:
                            return False
                        added.append(row)
                    continue
                known += 1
                i = self.index.get(memory_id)
                if i is None:  # without an embedding at the entry's version: still without one
                    if blob is not None:
                        return False
                    continue
                if blob is None or len(blob) != dim * 4 or int(self.rowids[i]) != rowid:
                    return False
                replaced.append((i, blob, current))
            if unchanged + known != kept:
                return False
            self._drop(gone.tolist())
            self.rows = kept
            self.revision += bool(replaced) or dim != self.dim
            if dim != self.dim:
                self.dim = dim
                self.matrix = np.zeros((len(self.rowids), dim), dtype=np.float32)
            for i, blob, current in replaced:
                self.matrix[i] = _floats(blob, 1, dim)
                self.current[i] = current
            self._reserve(len(added))
            start = self.n
            for j, (rowid, memory_id, _, current) in enumerate(added):
                self.rowids[start + j] = rowid
                self.current[start + j] = current
                self.ids.append(memory_id)
                self.index[memory_id] = start + j
            if added:
                blobs = b"".join(blob if blob is not None and len(blob) == dim * 4 else bytes(dim * 4) for _, _, blob, _ in added)
                self.matrix[start: start + len(added)] = _floats(blobs, len(added), dim)
            self.n += len(added)
            self.rows += len(changed) - known
            if changed:
                self.last_rowid = max(self.last_rowid, changed[-1][0])
            return True

    def nearest(self, vector: np.ndarray, limit: int, allowed: Iterable[int] | None = None) -> list[ScoredId]:
        """The ``limit`` rows most similar to ``vector``: among the current ones, or among the row
        keys ``allowed`` (what a narrowing filter let through)."""
        keys = None if allowed is None else np.fromiter(allowed, dtype=np.int64)
        with self._lock:
            mask = self.current[: self.n] if keys is None else np.isin(self.rowids[: self.n], keys)
            count = int(np.count_nonzero(mask))  # sum() would cast every flag to an integer first
            if count == 0:
                return []
            scores = cosine(self.matrix[: self.n], np.asarray(vector, dtype=np.float32))
            scores[~mask] = -np.inf
            top = best_rows(scores, min(limit, count))
            # As Python ints and floats at once: indexing numpy scalars one by one cost 1 µs a hit.
            ids = self.ids
            return [ScoredId(ids[i], score) for i, score in zip(top.tolist(), scores[top].tolist(), strict=True)]

    def current_rows(self) -> int:
        """How many of the rows held are current."""
        with self._lock:
            return int(np.count_nonzero(self.current[: self.n]))

    def screen(self, queries: np.ndarray, limit: int) -> VectorScreen | None:
        """A screen of the rows held now for ``queries`` (one per row), for a write's lookups that
        follow one another while it appends and ends rows (``nearest_screened``); None when the
        rows are too few for it to pay (``SCREEN_MIN_ROWS``)."""
        with self._lock:
            if self.n < SCREEN_MIN_ROWS:
                return None
            return VectorScreen(self, np.ascontiguousarray(queries, dtype=np.float32), limit)

    def nearest_screened(self, screen: VectorScreen, at: int) -> list[ScoredId]:
        """``nearest(screen.queries[at], screen.limit)`` as it answers now, the same hits in the same
        order: the rows the screen kept for the query and the rows appended since are scored exactly
        as ``nearest`` scores them, every other row is provably below the ``limit``-th best
        (``VectorScreen``), so every row tied with the last place is among them and ``best_rows``
        picks the same ones. ``nearest`` answers itself when the screen cannot tell (it was made of
        another entry, rows changed, too many rows within its margin)."""
        query, limit = screen.queries[at], screen.limit
        with self._lock:
            kept = screen.candidates(self, at)
            if kept is not None:
                start = screen.rows
                appended = np.flatnonzero(self.current[start: self.n])
                rows = np.concatenate([np.sort(kept), appended + start])  # in row order, as best_rows wants them
                # Row by row the same float32 sums as nearest's scan of the whole matrix.
                scores = np.concatenate([cosine(self.matrix[rows[: len(kept)]], query), cosine(self.matrix[start: self.n], query)[appended]])
                if np.isfinite(scores).all():
                    top = best_rows(scores, min(limit, len(scores)))
                    ids = self.ids
                    return [ScoredId(ids[i], s) for i, s in zip(rows[top].tolist(), scores[top].tolist(), strict=True)]
            screen.fallbacks += 1
        return self.nearest(query, screen.limit)


def screened_searches(
    entry_of: Callable[[], UserVectors | None], vectors: np.ndarray, limit: int
) -> Callable[[int], list[ScoredId]]:
    """``Storage.vector_searches`` for a backend that keeps ``UserVectors``: one screen of the
    user's rows for every lookup of the write. ``entry_of`` gives the user's entry as it is now
    (caught up, None without vectors), at the screen and again at each lookup."""
    entry = entry_of()
    screen = entry.screen(vectors, limit) if entry is not None and entry.dim == vectors.shape[1] else None

    def search(at: int) -> list[ScoredId]:
        held = entry_of()
        if held is None or held.dim != len(vectors[at]):
            return []
        return held.nearest_screened(screen, at) if screen is not None else held.nearest(vectors[at], limit)

    return search


#: rows below which a full scan costs little more than a screened lookup (about 40 µs of fixed
#: work, with 8 µs a query per 1,000 rows for the product, against 60 µs per 1,000 rows scanned)
SCREEN_MIN_ROWS = 1_000
#: queries a screen scores at once; with ``_screen_rows`` a product small enough that OpenBLAS runs
#: it on the calling thread (its threads would spin on after each product, about 0.1 s of CPU)
SCREEN_QUERIES = 16
#: rows the screen keeps per query: the ``limit`` best and this many more, for rows the write
#: ends before the query's turn and for the margin
SCREEN_SLACK = 24
#: how many times the rounding bound the screen's margin is
SCREEN_SAFETY = 8.0
#: the most a screen copies of the current rows' vectors to score them alone (256 MB: 250,000 of 256 floats)
SCREEN_COPY_BYTES = 2**28


def _screen_rows(dim: int) -> int:
    return max(1, 2**18 // (SCREEN_QUERIES * max(dim, 1)))


class VectorScreen:
    """The rows of one ``UserVectors`` that can be among the ``limit`` nearest of each query, from
    one BLAS product per block of queries (made when a query of the block is first asked).

    A BLAS product rounds otherwise than ``cosine`` (up to 1.8e-7 apart here), so it only screens:
    each float32 dot product of dimension d is within γ_d·|q|·|m| of the exact one (γ_d =
    d·2⁻²⁴/(1 − d·2⁻²⁴), any order of summation), so the screen's score and ``cosine``'s differ by
    at most δ = 2·γ_d·|q|·max|m|, taken ``SCREEN_SAFETY`` times over. Per query it keeps the rows
    current at the screen with the best screen scores, best first. At the query's turn, if ``limit``
    kept rows are still current, the ``limit``-th of them scores t on the screen, so ``limit``
    current rows score at least t − δ exactly; a row below t − 2δ on the screen scores below
    t − δ exactly and cannot be among the ``limit`` nearest. The rows kept above t − 2δ are the
    candidates, with every row appended since (scored exactly, row by row, by ``cosine``); when
    the rows kept do not reach down to t − 2δ, the screen cannot tell."""

    def __init__(self, entry: UserVectors, queries: np.ndarray, limit: int) -> None:
        self.entry = entry
        self.revision = entry.revision
        self.dim = entry.dim
        self.queries = queries
        self.limit = limit
        self.rows = entry.n  # rows held at the screen; later ones are appended by the write
        self.fallbacks = 0
        #: per query: kept rows and their screen scores (best first), the best screen score left
        #: out (-inf: none), and the margin 2δ; None until its block is screened or when it cannot be
        self._kept: list[tuple[np.ndarray, np.ndarray, float, float] | None] = [None] * len(queries)
        self._screened = np.zeros(len(queries), dtype=bool)
        self._current = entry.current[: self.rows].copy()
        current = self._current_count = int(np.count_nonzero(self._current))
        #: the rows the screen scores, when it scores the current ones only (None: every row held),
        #: and their vectors, copied once: a user's superseded facts pile up (half the rows of a
        #: conversation bench that moves house and job), and a product skips what it does not hold
        self._columns: np.ndarray | None = None
        self._held: np.ndarray | None = None
        if current <= self.rows * 3 // 4 and current * self.dim * 4 <= SCREEN_COPY_BYTES:
            self._columns = np.flatnonzero(self._current)
            self._held = entry.matrix[self._columns]
        held = self._matrix()
        # In float32: a sum of d squares is within γ_d of its exact value (far below the 0.1 %
        # it is rounded up by), and it is read six times faster than summed in float64 (9 ms at
        # 40,000 rows, once per batch).
        norms = np.sqrt(np.einsum("ij,ij->i", held, held))
        d = float(max(self.dim, 1))
        gamma = d * 2.0**-24 / (1 - d * 2.0**-24)
        # the margin 2δ (times SCREEN_SAFETY) of a query of norm 1; norms rounded up a little
        self._bound = SCREEN_SAFETY * 2 * 2 * gamma * float(norms.max(initial=0.0)) * 1.001

    def candidates(self, entry: UserVectors, at: int) -> np.ndarray | None:
        """The rows held at the screen (indexes into ``entry``) that, with the rows appended since,
        decide query ``at``, or None when the screen cannot tell. Called under the entry's lock."""
        if entry is not self.entry or entry.revision != self.revision or entry.dim != self.dim or len(self.queries[at]) != self.dim:
            return None
        if not self._screened[at]:
            self._screen_block(at - at % SCREEN_QUERIES)
        kept = self._kept[at]
        if kept is None:
            return None
        rows, approx, left_out, margin = kept
        now = entry.current[rows]
        live: np.ndarray = rows[now]
        live_approx = approx[now]
        if len(live) >= self.limit:
            floor = float(live_approx[self.limit - 1]) - margin
            if left_out >= floor:
                return None
            live = live[live_approx >= floor]
        elif left_out != -np.inf:  # fewer than limit kept rows still current, and others were left out
            return None
        return live

    def _matrix(self) -> np.ndarray:
        """The vectors the screen scores: the current rows' copy, else the entry's rows held at the screen."""
        return self._held if self._held is not None else self.entry.matrix[: self.rows]

    def _screen_block(self, start: int) -> None:
        block = self.queries[start: start + SCREEN_QUERIES]
        self._screened[start: start + len(block)] = True
        held = self._matrix()
        approx = np.empty((len(block), len(held)), dtype=np.float32)
        step = _screen_rows(self.dim)
        for first in range(0, len(held), step):
            np.matmul(block, held[first: first + step].T, out=approx[:, first: first + step])
        if not (np.isfinite(approx).all() and np.isfinite(block).all() and math.isfinite(self._bound)):
            return  # NaN orders nothing: nearest() answers these
        if self._columns is None:
            approx[:, ~self._current] = -np.inf
        keep = min(self.limit + SCREEN_SLACK, self._current_count)
        norms = np.sqrt(np.einsum("ij,ij->i", block, block, dtype=np.float64)) * 1.001
        for j, (top, scores, left_out) in enumerate(best_per_row(approx, keep)):
            rows = top if self._columns is None else self._columns[top]  # columns in row order: ties stay in it
            self._kept[start + j] = (rows, scores, left_out, self._bound * float(norms[j]))


#: columns of a row whose maximum ``best_per_row`` takes as one value, at most
SCREEN_CHUNK = 64


def best_per_row(values: np.ndarray, keep: int) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Per row of ``values``: the columns of its ``keep`` highest values (``keep`` at most the
    columns), best first, equal values in column order; those values; and the highest value left
    out (-inf: none).

    The rows are cut into chunks of columns; the (keep + 1)-th highest chunk maximum is a value
    at least keep + 1 columns reach, so no column below it is kept or is the best left out, and
    only the few at or above it are sorted. A partition of the whole rows (``np.argpartition``)
    took as long as the screen's product: 6.3 ms for 16 queries against 40,000 rows."""
    queries, columns = values.shape
    width = min(SCREEN_CHUNK, columns // (4 * (keep + 1)))
    if width > 1:
        chunks = columns // width  # the last columns, when fewer than a chunk, are compared all the same
        maxima = values[:, : chunks * width].reshape(queries, chunks, width).max(axis=2)
        threshold = np.partition(maxima, chunks - keep - 1, axis=1)[:, chunks - keep - 1]
        row_of, column = np.nonzero(values >= threshold[:, None])
    else:
        row_of, column = np.divmod(np.arange(values.size), columns)
    found = values[row_of, column]
    order = np.lexsort((-found, row_of))  # by row, best first; lexsort is stable: ties in column order
    column, found = column[order], found[order]
    starts = np.concatenate([[0], np.cumsum(np.bincount(row_of, minlength=queries))]).tolist()
    return [
        (column[first: first + keep], found[first: first + keep], float(found[first + keep]) if first + keep < end else -np.inf)
        for first, end in itertools.pairwise(starts)
    ]


#: scores up to which ``best_rows`` sorts them all: a screened lookup scores a few hundred rows, and
#: one stable sort of 300 cost 4 µs where the partition and its tie rule cost 8 (six small calls)
SORTED_ROWS = 512


def best_rows(scores: np.ndarray, k: int) -> np.ndarray:
    """The indexes of the ``k`` highest ``scores``, best first, equal scores in index order, at the
    last place too: of rows tied there, the first ones. A partition alone keeps whichever tied rows
    it meets (templated texts embed to identical vectors), and a screened lookup could not tell
    which; with the rule it keeps the same ones as the full scan."""
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if len(scores) <= SORTED_ROWS:
        return np.argsort(-scores, kind="stable")[:k]  # the same rows in the same order, in one call
    top = np.argpartition(-scores, k - 1)[:k]
    edge = scores[top].min()
    tied = np.flatnonzero(scores == edge)
    if len(tied) > np.count_nonzero(scores[top] == edge):  # the partition chose among them
        top = np.concatenate([np.flatnonzero(scores > edge), tied])[:k]
    else:
        top.sort()
    return top[np.argsort(-scores[top], kind="stable")]


def _with_room(rows: int) -> int:
    """The capacity an entry of ``rows`` rows is given: a quarter more, 16 at least."""
    return max(16, rows * 5 // 4)


def _allocated(capacity: int, dim: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Empty rowids, matrix and current flags for ``capacity`` rows, every page written: numpy
    maps zeros lazily, and the faults then fell on the copy (and on the lock held for it)."""
    matrix = np.empty((capacity, dim), dtype=np.float32)
    matrix.fill(0.0)
    return np.full(capacity, -1, dtype=np.int64), matrix, np.zeros(capacity, dtype=bool)


def _floats(blob: bytes, rows: int, dim: int) -> np.ndarray:
    """``rows`` vectors from big-endian float4 bytes."""
    return np.frombuffer(blob, dtype=">f4").astype(np.float32).reshape(rows, dim)


def cosine(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Dot products of unit vectors. einsum, not BLAS: a multi-threaded BLAS matrix-vector product
    is ten times slower on a busy two-core machine than this single-threaded loop."""
    return np.asarray(np.einsum("ij,j->i", matrix, query))


class Versioned(Protocol):
    """A per-user entry: the user version it reflects and how many rows it holds."""

    version: int
    n: int


@dataclass
class CacheReads:
    """What a backend read from the database to keep one cache current: whole users (``reloads``),
    users brought up to date by their changed rows (``catch_ups``), the rows read by both, and the
    rowids read to tell which rows went away (``rowids``: a deletion by another process)."""

    reloads: int = 0
    catch_ups: int = 0
    rows: int = 0
    rowids: int = 0


Entry = TypeVar("Entry", bound=Versioned)
#: a write's change to a cached entry; False: it cannot be replayed on it (and changed nothing)
Change = Callable[[Entry], "bool | None"]


#: locks a cache's catch-ups are spread over: one user's catch-up rarely waits for another's
CATCH_UP_STRIPES = 16
#: users whose entries are caught up when another process may have left them behind (SQLite's
#: watcher; a deletion, on PostgreSQL): the ones whose cached entries were used last
WATCHED_USERS = 256


class VersionedCache(Generic[Entry]):
    """Per-user entries (``UserVectors``; SQLite's term index too), checked against the user's
    version on every read.

    Bounded by the number of rows held (least recently used users are dropped first). An entry
    that falls behind is dropped, to be reloaded whole, unless the cache is ``incremental``: then
    it stays, at the version it reflects, for the backend to bring up to date with the rows
    changed since (``catch_up``).
    """

    def __init__(self, max_vectors: int = 2_000_000, *, incremental: bool = False) -> None:
        self._users: OrderedDict[str, Entry] = OrderedDict()
        self._max = max_vectors
        self._incremental = incremental
        self._held = 0
        self._lock = threading.Lock()
        #: per user (striped), held by a backend while it reads the rows to catch an entry up and
        #: applies them: a second thread behind on the same entry (a search, the loader) waits,
        #: then finds it current, rather than read the same rows again
        self._catching_up = tuple(threading.Lock() for _ in range(CATCH_UP_STRIPES))

    def get(self, user_id: str) -> Entry | None:
        with self._lock:
            entry = self._users.get(user_id)
            if entry is not None:
                self._users.move_to_end(user_id)
            return entry

    def catching_up(self, user_id: str) -> threading.Lock:
        """The lock a catch-up of the user's entry holds (shared with a few other users)."""
        return self._catching_up[hash(user_id) % CATCH_UP_STRIPES]

    def recent(self, n: int) -> dict[str, int]:
        """The versions of the ``n`` entries used last, the last first (their order of use unchanged)."""
        with self._lock:
            return {user_id: self._users[user_id].version for user_id in itertools.islice(reversed(self._users), n)}

    def version_of(self, user_id: str) -> int | None:
        """The version the user's entry reflects, None without one (its order of use unchanged)."""
        with self._lock:
            entry = self._users.get(user_id)
            return None if entry is None else entry.version

    def current(self, user_id: str, version: int) -> Entry | None:
        """The entry when it reflects exactly ``version`` (read from the database), else None."""
        entry = self.get(user_id)
        return entry if entry is not None and entry.version == version else None

    def put(self, user_id: str, entry: Entry) -> None:
        """Hold ``entry`` for the user, unless the one held is at its version or a later one: a
        load that read before a write of this process finishes after the write moved the entry
        on (versions only grow), and replacing it would throw that work away."""
        with self._lock:
            old = self._users.get(user_id)
            if old is not None and old.version >= entry.version:
                self._users.move_to_end(user_id)
                return
            old = self._users.pop(user_id, None)
            if old is not None:
                self._held -= old.n
            self._users[user_id] = entry
            self._held += entry.n
            while self._held > self._max and len(self._users) > 1:
                _, dropped = self._users.popitem(last=False)
                self._held -= dropped.n

    def advance(self, user_id: str, version: int, change: Change[Entry] | None) -> None:
        """A write in this process moved the user to ``version``: apply ``change`` to the entry.

        The entry follows only when it reflects the version just before; anything else (a write by
        another process in between, or a change the cache cannot replay: None, or one that answers
        False, having changed nothing) leaves it behind.
        """
        with self._lock:
            entry = self._users.get(user_id)
            if entry is None:
                return
            before = entry.n
            if change is None or entry.version != version - 1 or self._apply(user_id, entry, change) is False:
                self._fall_behind(user_id, entry, entry.version)
                return
            entry.version = version
            self._held += entry.n - before

    def amend(self, user_id: str, version: int, change: Change[Entry] | None) -> None:
        """Apply one more change of the write that moved the user to ``version`` (which the entry
        reflects already); an entry at any other version is left behind, and one the change cannot
        be replayed on is labelled the version before, so catching up reads every row of the write."""
        with self._lock:
            entry = self._users.get(user_id)
            if entry is None:
                return
            if entry.version != version:
                self._fall_behind(user_id, entry, entry.version)
                return
            before = entry.n
            if change is None or self._apply(user_id, entry, change) is False:
                self._fall_behind(user_id, entry, version - 1)
                return
            self._held += entry.n - before

    def _apply(self, user_id: str, entry: Entry, change: Change[Entry]) -> bool | None:
        """``change(entry)``; one that raised may have left the entry half changed, and it is dropped."""
        before = entry.n
        try:
            return change(entry)
        except BaseException:
            self._held -= before
            del self._users[user_id]
            raise

    def _fall_behind(self, user_id: str, entry: Entry, version: int) -> None:
        """``entry`` no longer reflects the user's version; it is taken for ``version`` (one it may
        have moved past in part: the rows changed since are read again)."""
        if self._incremental:
            entry.version = version
        else:
            self._held -= entry.n
            del self._users[user_id]

    def catch_up(self, user_id: str, entry: Entry, since: int, version: int, change: Callable[[Entry], bool]) -> bool:
        """Bring ``entry`` from ``since`` to ``version`` by ``change`` (which applies the rows changed
        in between, read from the database), if it is still the user's entry at ``since`` (another
        thread may have moved or replaced it meanwhile). False when it is not, or ``change`` could
        not apply them (it then returns False): the entry is then dropped, as only a whole read
        brings it up to date (a search meanwhile does not try again)."""
        with self._lock:
            if self._users.get(user_id) is not entry or entry.version != since:
                return False
            before = entry.n
            if not self._apply(user_id, entry, change):
                self._held -= before
                del self._users[user_id]
                return False
            entry.version = version
            self._held += entry.n - before
            return True

    def drop(self, user_id: str) -> None:
        with self._lock:
            old = self._users.pop(user_id, None)
            if old is not None:
                self._held -= old.n

    def clear(self) -> None:
        with self._lock:
            self._users.clear()
            self._held = 0


class VectorCache(VersionedCache[UserVectors]):
    """Per-user ``UserVectors``. ``make_room``, when given, runs an entry's ``make_room`` off the
    write (the backend's loader thread) once a change leaves it seven eighths full."""

    def __init__(
        self, max_vectors: int = 2_000_000, *, incremental: bool = False,
        make_room: Callable[[Callable[[], None]], object] | None = None,
    ) -> None:
        super().__init__(max_vectors, incremental=incremental)
        self._make_room = make_room

    def holds_more_current(self, user_id: str, limit: int) -> bool:
        """Whether the user's cached vectors, as this process last read or wrote them, count more
        than ``limit`` current rows: a hint (were they behind, a batch would read its texts lookup
        by lookup, its answers unchanged) that spares reading ``limit`` + 1 rows to learn it, 30 ms
        a batch at 35,000 memories (``Storage.all_current_texts``)."""
        held = self.get(user_id)
        return held is not None and held.current_rows() > limit

    def _apply(self, user_id: str, entry: UserVectors, change: Change[UserVectors]) -> bool | None:
        changed = super()._apply(user_id, entry, change)
        if self._make_room is not None and entry.needs_room():
            try:
                self._make_room(entry.make_room)
            except RuntimeError:  # the loader is gone (the store closes): the write grows the arrays itself
                entry.room_asked = False
        return changed
