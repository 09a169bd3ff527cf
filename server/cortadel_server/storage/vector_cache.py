"""In-process exact vector search: per-user embedding matrices, kept current by write-through.

A backend that searches vectors in process (SQLite) holds each user's embeddings here, labelled
with the user version (see ``Storage`` in base.py) they reflect. A write in this process advances
the entry with the same change it made to the rows (``VectorCache.advance``); any other change of
the version (another process wrote, a rollback) makes the entry stale, and the backend reloads it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Generic, Protocol, TypeVar

import numpy as np

from cortadel_server.storage.base import ScoredId


class UserVectors:
    """One user's embeddings in a growable matrix, with the row keys (the backend's rowids) that
    filtered search masks by, and the user version the entry reflects."""

    def __init__(self, version: int, dim: int, rowids: list[int], ids: list[str], vectors: np.ndarray, current: list[bool]) -> None:
        self.version = version
        self.dim = dim
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

    def append(self, rowid: int, memory_id: str, vector: np.ndarray, current: bool) -> None:
        if self.n == len(self.rowids):
            grow = len(self.rowids)
            self.rowids = np.concatenate([self.rowids, np.full(grow, -1, dtype=np.int64)])
            self.matrix = np.concatenate([self.matrix, np.zeros((grow, self.dim), dtype=np.float32)])
            self.current = np.concatenate([self.current, np.zeros(grow, dtype=bool)])
        i = self.n
        self.rowids[i] = rowid
        self.matrix[i] = vector if len(vector) == self.dim else 0.0
        self.current[i] = current
        self.ids.append(memory_id)
        self.index[memory_id] = i
        self.n += 1

    def set_current(self, memory_id: str, current: bool) -> None:
        i = self.index.get(memory_id)
        if i is not None:
            self.current[i] = current

    def remove(self, memory_ids: Sequence[str]) -> None:
        for memory_id in memory_ids:
            i = self.index.pop(memory_id, None)
            if i is not None:  # a hole: no rowid matches it, never current
                self.rowids[i] = -1
                self.current[i] = False

    def nearest(self, vector: np.ndarray, limit: int, allowed: Iterable[int] | None = None) -> list[ScoredId]:
        """The ``limit`` rows most similar to ``vector``: among the current ones, or among the row
        keys ``allowed`` (what a narrowing filter let through)."""
        if allowed is None:
            mask = self.current[: self.n]
        else:
            mask = np.isin(self.rowids[: self.n], np.fromiter(allowed, dtype=np.int64))
        count = int(mask.sum())
        if count == 0:
            return []
        scores = cosine(self.matrix[: self.n], np.asarray(vector, dtype=np.float32))
        scores[~mask] = -np.inf
        k = min(limit, count)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [ScoredId(self.ids[i], float(scores[i])) for i in top]


def cosine(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Dot products of unit vectors. einsum, not BLAS: a multi-threaded BLAS matrix-vector product
    is ten times slower on a busy two-core machine than this single-threaded loop."""
    return np.asarray(np.einsum("ij,j->i", matrix, query))


class Versioned(Protocol):
    """A per-user entry: the user version it reflects and how many rows it holds."""

    version: int
    n: int


Entry = TypeVar("Entry", bound=Versioned)


class VersionedCache(Generic[Entry]):
    """Per-user entries (``UserVectors``; SQLite's term index too), checked against the user's
    version on every read.

    Bounded by the number of rows held (least recently used users are dropped first).
    """

    def __init__(self, max_vectors: int = 2_000_000) -> None:
        self._users: OrderedDict[str, Entry] = OrderedDict()
        self._max = max_vectors
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
        another process in between, or a change the cache cannot replay) drops it.
        """
        entry = self.get(user_id)
        if entry is None:
            return
        if change is None or entry.version != version - 1:
            self.drop(user_id)
            return
        change(entry)
        entry.version = version

    def amend(self, user_id: str, version: int, change: Callable[[Entry], None] | None) -> None:
        """Apply one more change of the write that moved the user to ``version`` (which the entry
        reflects already); an entry at any other version, or a change it cannot replay, is dropped."""
        entry = self.get(user_id)
        if entry is None:
            return
        if change is None or entry.version != version:
            self.drop(user_id)
            return
        change(entry)

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
