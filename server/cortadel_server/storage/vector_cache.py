"""In-process exact vector search: per-user embedding matrices, kept current by write-through.

A backend that searches vectors in process (SQLite, PostgreSQL) holds each user's embeddings here,
labelled with the user version (see ``Storage`` in base.py) they reflect. A write in this process
advances the entry with the same change it made to the rows (``VectorCache.advance``); any other
change of the version (another process wrote, a rollback) makes the entry stale, and the backend
brings it up to date by the rows changed since (``catch_up``, ``UserVectors.apply``), or reloads it
whole when those cannot tell.
"""

from __future__ import annotations

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
        capacity = max(16, self.n * 5 // 4)
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

    def _reserve(self, count: int) -> None:
        """Room for ``count`` more rows."""
        if self.n + count > len(self.rowids):
            # a quarter more: a whole read fills an entry to the brim, and most users then grow by a few rows
            grow = max(self.n + count, len(self.rowids) * 5 // 4) - len(self.rowids)
            self.rowids = np.concatenate([self.rowids, np.full(grow, -1, dtype=np.int64)])
            self.matrix = np.concatenate([self.matrix, np.zeros((grow, self.dim), dtype=np.float32)])
            self.current = np.concatenate([self.current, np.zeros(grow, dtype=bool)])

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
            k = min(limit, count)
            top = np.argpartition(-scores, k - 1)[:k]
            top = top[np.argsort(-scores[top], kind="stable")]
            # As Python ints and floats at once: indexing numpy scalars one by one cost 1 µs a hit.
            ids = self.ids
            return [ScoredId(ids[i], score) for i, score in zip(top.tolist(), scores[top].tolist(), strict=True)]


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

    def get(self, user_id: str) -> Entry | None:
        with self._lock:
            entry = self._users.get(user_id)
            if entry is not None:
                self._users.move_to_end(user_id)
            return entry

    def current(self, user_id: str, version: int) -> Entry | None:
        """The entry when it reflects exactly ``version`` (read from the database), else None."""
        entry = self.get(user_id)
        return entry if entry is not None and entry.version == version else None

    def put(self, user_id: str, entry: Entry) -> None:
        with self._lock:
            old = self._users.pop(user_id, None)
            if old is not None:
                self._held -= old.n
            self._users[user_id] = entry
            self._held += entry.n
            while self._held > self._max and len(self._users) > 1:
                _, dropped = self._users.popitem(last=False)
                self._held -= dropped.n

    def advance(self, user_id: str, version: int, change: Callable[[Entry], None] | None) -> None:
        """A write in this process moved the user to ``version``: apply ``change`` to the entry.

        The entry follows only when it reflects the version just before; anything else (a write by
        another process in between, or a change the cache cannot replay) leaves it behind.
        """
        with self._lock:
            entry = self._users.get(user_id)
            if entry is None:
                return
            if change is None or entry.version != version - 1:
                self._fall_behind(user_id, entry, entry.version)
                return
            before = entry.n
            change(entry)
            entry.version = version
            self._held += entry.n - before

    def amend(self, user_id: str, version: int, change: Callable[[Entry], None] | None) -> None:
        """Apply one more change of the write that moved the user to ``version`` (which the entry
        reflects already); an entry at any other version is left behind, and one the change cannot
        be replayed on is labelled the version before, so catching up reads every row of the write."""
        with self._lock:
            entry = self._users.get(user_id)
            if entry is None:
                return
            if entry.version != version or change is None:
                self._fall_behind(user_id, entry, entry.version if entry.version != version else version - 1)
                return
            before = entry.n
            change(entry)
            self._held += entry.n - before

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
            if not change(entry):
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
    """Per-user ``UserVectors``."""
