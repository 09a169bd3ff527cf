"""The embedded backend: one SQLite file in WAL mode, FTS5 for BM25, exact cosine search in numpy.

Writer discipline: one write connection, taken under a lock with ``BEGIN IMMEDIATE``; reads go
through one connection per thread. Inside ``write()`` the writing thread reads through the write
connection, so a check-then-insert (dedup) sees its own transaction. Every query runs under a time
limit enforced by SQLite's progress handler.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from cortadel_server.errors import StorageError
from cortadel_server.storage.base import (
    EntityMention,
    HistoryEntry,
    IndexInfo,
    Job,
    MemoryFilters,
    MemoryRecord,
    ScoredId,
    Storage,
)
from cortadel_server.storage.migrations import migrate
from cortadel_server.text import words

_JSON_FIELDS = ("categories", "tags", "metadata", "source_turn_uuids")
_COLUMNS = (
    "id", "user_id", "text", "fingerprint", "gist", "memory_type", "categories", "tags", "project",
    "app_name", "session_id", "metadata", "state", "source_turn_uuids", "transcript_path",
    "extraction_status", "valid_at", "invalid_at", "created_at", "expired_at", "superseded_by",
    "updated_at",
)
_SELECT = "SELECT " + ", ".join(_COLUMNS) + " FROM memories"
_UPDATABLE = frozenset(_COLUMNS) - {"id", "user_id", "created_at"}

# Words too common to carry evidence in a BM25 OR-query; they only slow ranking down.
_STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have he her hers him his how i "
    "if in into is it its me my no not of on or our ours she so than that the their them then there these they "
    "this to too up us was we were what when where which who whom why will with would you your yours".split()
)


#: BM25 weight of a memory's context column (the text written before it in its session) against
#: its own text (1.0). Tuned on LoCoMo dev: 0.3 lifts turn recall@5 of BM25 from 0.53 to 0.64.
CONTEXT_WEIGHT = 0.3


def user_key(user_id: str) -> str:
    """A single FTS token standing for one user (user ids may hold any characters)."""
    return "u" + hashlib.sha1(user_id.encode("utf-8")).hexdigest()[:20]


def fts_query(query: str) -> str | None:
    """An FTS5 OR-query of the query's words, each quoted so no word is read as syntax."""
    tokens = words(query)
    kept = [t for t in tokens if t not in _STOPWORDS] or tokens
    unique = list(dict.fromkeys(t.replace('"', "") for t in kept if t.replace('"', "")))
    if not unique:
        return None
    return " OR ".join(f'"{t}"' for t in unique)


class _UserVectors:
    """One user's embeddings in a growable matrix, kept in step with the database by write-through
    deltas (see ``SqliteStorage._change_vectors``) and labelled with the user version it reflects."""

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


def _cosine(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Dot products of unit vectors. einsum, not BLAS: a multi-threaded BLAS matrix-vector product
    is ten times slower on a busy two-core machine than this single-threaded loop."""
    return np.einsum("ij,j->i", matrix, query)


class _VectorCache:
    """Per-user matrices of embeddings, checked against the user's version on every read.

    Bounded by the number of vectors held (least recently used users are dropped first).
    """

    def __init__(self, max_vectors: int = 2_000_000) -> None:
        self._users: OrderedDict[str, _UserVectors] = OrderedDict()
        self._max = max_vectors
        self._held = 0
        self._lock = threading.Lock()

    def get(self, user_id: str) -> _UserVectors | None:
        with self._lock:
            entry = self._users.get(user_id)
            if entry is not None:
                self._users.move_to_end(user_id)
            return entry

    def put(self, user_id: str, entry: _UserVectors) -> None:
        with self._lock:
            old = self._users.pop(user_id, None)
            if old is not None:
                self._held -= old.n
            self._users[user_id] = entry
            self._held += entry.n
            while self._held > self._max and len(self._users) > 1:
                _, dropped = self._users.popitem(last=False)
                self._held -= dropped.n

    def drop(self, user_id: str) -> None:
        with self._lock:
            old = self._users.pop(user_id, None)
            if old is not None:
                self._held -= old.n

    def clear(self) -> None:
        with self._lock:
            self._users.clear()
            self._held = 0


class _Connection(apsw.Connection):
    """A connection that carries the deadline of the query it is running."""

    deadline: float = float("inf")

    def past_deadline(self) -> bool:
        return time.monotonic() > self.deadline


class SqliteStorage(Storage):
    backend = "sqlite"

    def __init__(self, path: Path, *, query_timeout: float = 10.0) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._query_timeout = query_timeout
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._write_owner: int | None = None
        self._vectors = _VectorCache()
        #: users whose rows the open write transaction changed (their cached vectors are dropped on rollback)
        self._bumped: set[str] = set()
        self._all_conns: list[_Connection] = []
        self._conns_lock = threading.Lock()
        with self._translate():
            self._writer = self._connect()
            # WAL is a property of the file; switch it on outside any transaction.
            self._writer.execute("PRAGMA journal_mode=WAL")
            migrate(self._writer)

    # -- connections -----------------------------------------------------------------------------
    def _connect(self) -> _Connection:
        conn = _Connection(str(self.path))
        conn.set_busy_timeout(int(self._query_timeout * 1000))
        conn.execute("PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY")
        conn.set_progress_handler(conn.past_deadline, 10_000)
        with self._conns_lock:
            self._all_conns.append(conn)
        return conn

    def _conn(self) -> _Connection:
        if self._write_owner == threading.get_ident():
            return self._writer
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    @contextmanager
    def _translate(self) -> Iterator[None]:
        try:
            yield
        except apsw.InterruptError:
            raise StorageError(f"query interrupted after {self._query_timeout:g} s") from None
        except apsw.Error as exc:
            raise StorageError(f"database error: {exc}") from exc

    def _rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        conn = self._conn()
        conn.deadline = time.monotonic() + self._query_timeout
        try:
            with self._translate():
                return list(conn.execute(sql, params))
        finally:
            conn.deadline = float("inf")

    def _exec(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> None:
        self._rows(sql, params)

    def close(self) -> None:
        with self._conns_lock:
            for conn in self._all_conns:
                conn.close()
            self._all_conns.clear()

    def ping(self) -> None:
        self._rows("SELECT 1")

    @contextmanager
    def write(self) -> Iterator[None]:
        me = threading.get_ident()
        if self._write_owner == me:  # nested: part of the enclosing transaction
            yield
            return
        with self._write_lock:
            self._write_owner = me
            self._bumped = set()
            try:
                self._exec("BEGIN IMMEDIATE")
                try:
                    yield
                except BaseException:
                    self._exec("ROLLBACK")
                    for user_id in self._bumped:  # the cache may hold what never committed
                        self._vectors.drop(user_id)
                    raise
                self._exec("COMMIT")
            finally:
                self._write_owner = None

    def _bump(self, user_id: str, change: Callable[[_UserVectors], None] | None = None) -> None:
        """Move the user's version on and apply ``change`` to their cached vectors, write-through.

        The cached entry follows only when it reflects the version just before this one; anything
        else (a write by another process on the same file) drops it, to be reloaded on demand.
        """
        version = self._rows(
            "INSERT INTO user_versions(user_id, version) VALUES (?, 1) "
            "ON CONFLICT(user_id) DO UPDATE SET version = version + 1 RETURNING version",
            (user_id,),
        )[0][0]
        self._bumped.add(user_id)
        entry = self._vectors.get(user_id)
        if entry is None:
            return
        if change is None or entry.version != version - 1:
            self._vectors.drop(user_id)
            return
        change(entry)
        entry.version = version

    # -- memories --------------------------------------------------------------------------------
    def insert_memory(self, memory: MemoryRecord, embedding: np.ndarray) -> None:
        values = {name: getattr(memory, name) for name in _COLUMNS}
        for name in _JSON_FIELDS:
            values[name] = json.dumps(values[name])
        values["user_key"] = user_key(memory.user_id)
        values["embedding"] = np.asarray(embedding, dtype=np.float32).tobytes()
        names = [*values, "context"]
        with self.write():
            values["context"] = self._last_text(memory.user_id, memory.session_id)
            self._exec(
                f"INSERT INTO memories({', '.join(names)}) VALUES ({', '.join(':' + n for n in names)})", values
            )
            if memory.session_id is not None:
                self._exec(
                    "INSERT INTO session_docs(user_id, session_id, user_key, text) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(user_id, session_id) DO UPDATE SET text = text || char(10) || excluded.text",
                    (memory.user_id, memory.session_id, values["user_key"], memory.text),
                )
            rowid = self._conn().last_insert_rowid()
            vector = np.asarray(embedding, dtype=np.float32)
            self._bump(memory.user_id, lambda entry: entry.append(rowid, memory.id, vector, memory.is_current))

    def update_memory(self, user_id: str, memory_id: str, **fields: Any) -> None:
        unknown = set(fields) - _UPDATABLE
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        values = {k: json.dumps(v) if k in _JSON_FIELDS else v for k, v in fields.items()}
        assignments = ", ".join(f"{k} = :{k}" for k in values)
        with self.write():
            touched = self._sessions_of(user_id, [memory_id]) if {"text", "session_id"} & set(fields) else []
            self._exec(
                f"UPDATE memories SET {assignments} WHERE user_id = :_user AND id = :_id",
                {**values, "_user": user_id, "_id": memory_id},
            )
            if touched or fields.get("session_id"):
                self._rebuild_sessions(user_id, [*touched, *([fields["session_id"]] if fields.get("session_id") else [])])
            now_current = self._rows(
                "SELECT expired_at IS NULL AND invalid_at IS NULL FROM memories WHERE id = ? AND +user_id = ?",
                (memory_id, user_id),
            )
            flag = bool(now_current[0][0]) if now_current else False
            self._bump(user_id, lambda entry: entry.set_current(memory_id, flag))

    @staticmethod
    def _record(row: tuple[Any, ...]) -> MemoryRecord:
        values = dict(zip(_COLUMNS, row, strict=True))
        for name in _JSON_FIELDS:
            values[name] = json.loads(values[name])
        return MemoryRecord(**values)

    def get_memory(self, user_id: str, memory_id: str) -> MemoryRecord | None:
        rows = self._rows(_SELECT + " WHERE user_id = ? AND id = ?", (user_id, memory_id))
        return self._record(rows[0]) if rows else None

    def get_memories(self, user_id: str, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        if not ids:
            return {}
        rows = self._rows(
            # `+user_id` keeps the planner on the id index: the user index would scan every row.
            _SELECT + " WHERE id IN (SELECT value FROM json_each(?)) AND +user_id = ?",
            (json.dumps(list(ids)), user_id),
        )
        return {r.id: r for r in map(self._record, rows)}

    @staticmethod
    def _where(user_id: str, filters: MemoryFilters, alias: str = "") -> tuple[str, list[Any]]:
        p = alias
        clauses = [f"{p}user_id = ?"]
        params: list[Any] = [user_id]
        if filters.known_at is not None:
            # What we believed at known_at: recorded by then, not yet expired by then.
            clauses.append(f"{p}created_at <= ? AND ({p}expired_at IS NULL OR {p}expired_at > ?)")
            params += [filters.known_at, filters.known_at]
        if filters.as_of is not None:
            # What was true at as_of: valid from before it (or from when recorded) and not ended.
            clauses.append(
                f"COALESCE({p}valid_at, {p}created_at) <= ? AND ({p}invalid_at IS NULL OR {p}invalid_at > ?)"
            )
            params += [filters.as_of, filters.as_of]
            if filters.known_at is None and not filters.include_superseded:
                # Retractions and corrections made later do not rewrite what was true then, but a
                # row we expired without ending its valid time (a deletion of belief) stays out.
                clauses.append(f"({p}expired_at IS NULL OR {p}invalid_at IS NOT NULL)")
        if filters.current_only:
            clauses.append(f"{p}expired_at IS NULL AND {p}invalid_at IS NULL")
        if filters.valid_between is not None:
            clauses.append(f"COALESCE({p}valid_at, {p}created_at) >= ? AND COALESCE({p}valid_at, {p}created_at) < ?")
            params += list(filters.valid_between)
        for column in ("session_id", "memory_type", "app_name", "project"):
            value = getattr(filters, column)
            if value is not None:
                clauses.append(f"{p}{column} = ?")
                params.append(value)
        if filters.tag is not None:
            clauses.append(f"EXISTS (SELECT 1 FROM json_each({p}tags) WHERE value = ?)")
            params.append(filters.tag)
        if filters.categories:
            clauses.append(
                f"EXISTS (SELECT 1 FROM json_each({p}categories) WHERE value IN (SELECT value FROM json_each(?)))"
            )
            params.append(json.dumps(list(filters.categories)))
        if filters.ids:
            clauses.append(f"{p}id IN (SELECT value FROM json_each(?))")
            params.append(json.dumps(list(filters.ids)))
        return " AND ".join(clauses), params

    def list_memories(
        self, user_id: str, filters: MemoryFilters, *, offset: int, limit: int
    ) -> tuple[list[MemoryRecord], int]:
        where, params = self._where(user_id, filters)
        total = self._rows(f"SELECT count(*) FROM memories WHERE {where}", params)[0][0]
        rows = self._rows(
            f"{_SELECT} WHERE {where} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [self._record(r) for r in rows], total

    def find_by_fingerprint(self, user_id: str, fingerprint: str) -> MemoryRecord | None:
        rows = self._rows(
            _SELECT + " WHERE user_id = ? AND fingerprint = ? AND expired_at IS NULL AND invalid_at IS NULL "
            "ORDER BY created_at LIMIT 1",
            (user_id, fingerprint),
        )
        return self._record(rows[0]) if rows else None

    def delete_memories(self, user_id: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        id_list = json.dumps(list(ids))
        with self.write():
            existing = [
                r[0]
                for r in self._rows(
                    "SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?)) AND +user_id = ?",
                    (id_list, user_id),
                )
            ]
            if not existing:
                return 0
            found = json.dumps(existing)
            sessions = self._sessions_of(user_id, existing)
            self._exec("DELETE FROM memories WHERE id IN (SELECT value FROM json_each(?)) AND +user_id = ?", (found, user_id))
            self._exec("DELETE FROM memory_events WHERE user_id = ? AND memory_id IN (SELECT value FROM json_each(?))", (user_id, found))
            self._exec("DELETE FROM memory_entities WHERE memory_id IN (SELECT value FROM json_each(?))", (found,))
            self._exec("DELETE FROM jobs WHERE user_id = ? AND memory_id IN (SELECT value FROM json_each(?))", (user_id, found))
            # Entities nobody mentions any more go too: deletion really deletes.
            self._exec(
                "DELETE FROM entities WHERE user_id = ? AND id NOT IN (SELECT entity_id FROM memory_entities)",
                (user_id,),
            )
            # Session documents and contexts are rebuilt from the members left: deleted text leaves them too.
            self._rebuild_sessions(user_id, sessions)
            self._bump(user_id, lambda entry: entry.remove(existing))
            return len(existing)

    # -- session documents and turn context ------------------------------------------------------
    def _last_text(self, user_id: str, session_id: str | None) -> str:
        """The text written last in the session: the context of the next memory written to it."""
        if session_id is None:
            return ""
        rows = self._rows(
            "SELECT text FROM memories WHERE user_id = ? AND session_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (user_id, session_id),
        )
        return rows[0][0] if rows else ""

    def _sessions_of(self, user_id: str, ids: Sequence[str]) -> list[str]:
        rows = self._rows(
            "SELECT DISTINCT session_id FROM memories WHERE id IN (SELECT value FROM json_each(?)) "
            "AND +user_id = ? AND session_id IS NOT NULL",
            (json.dumps(list(ids)), user_id),
        )
        return [r[0] for r in rows]

    def _rebuild_sessions(self, user_id: str, session_ids: Sequence[str]) -> None:
        """Recompute the documents and member contexts of these sessions from their members (after
        a delete or an edit); drop the documents left empty."""
        for session_id in dict.fromkeys(session_ids):
            rows = self._rows(
                "SELECT rowid, text, context FROM memories WHERE user_id = ? AND session_id = ? ORDER BY created_at, rowid",
                (user_id, session_id),
            )
            texts = [text for _, text, _ in rows]
            for i, (rowid, _, context) in enumerate(rows):
                expected = texts[i - 1] if i else ""
                if context != expected:
                    self._exec("UPDATE memories SET context = ? WHERE rowid = ?", (expected, rowid))
            if not texts:
                self._exec("DELETE FROM session_docs WHERE user_id = ? AND session_id = ?", (user_id, session_id))
                continue
            self._exec(
                "INSERT INTO session_docs(user_id, session_id, user_key, text) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(user_id, session_id) DO UPDATE SET text = excluded.text",
                (user_id, session_id, user_key(user_id), "\n".join(texts)),
            )

    def session_search(self, user_id: str, query: str, limit: int) -> list[ScoredId]:
        match = fts_query(query)
        if match is None:
            return []
        rows = self._rows(
            "SELECT d.session_id, bm25(session_docs_fts, 1.0, 0.0) AS rank FROM session_docs_fts "
            "JOIN session_docs d ON d.rowid = session_docs_fts.rowid "
            "WHERE session_docs_fts MATCH ? ORDER BY rank LIMIT ?",
            (f"user_key:{user_key(user_id)} AND ({match})", limit),
        )
        return [ScoredId(session_id, -rank) for session_id, rank in rows]

    def session_members(
        self, user_id: str, session_ids: Sequence[str], filters: MemoryFilters
    ) -> dict[str, list[str]]:
        if not session_ids:
            return {}
        where, params = self._where(user_id, filters)
        rows = self._rows(
            f"SELECT session_id, id FROM memories WHERE {where} "
            "AND session_id IN (SELECT value FROM json_each(?)) ORDER BY session_id, created_at, rowid",
            [*params, json.dumps(list(session_ids))],
        )
        members: dict[str, list[str]] = {}
        for session_id, memory_id in rows:
            members.setdefault(session_id, []).append(memory_id)
        return members

    # -- retrieval arms --------------------------------------------------------------------------
    def text_search(
        self, user_id: str, query: str, filters: MemoryFilters, limit: int, *, context_weight: float = CONTEXT_WEIGHT
    ) -> list[ScoredId]:
        match = fts_query(query)
        if match is None:
            return []
        match = f"user_key:{user_key(user_id)} AND ({match})"
        if filters.narrows:
            where, params = self._where(user_id, filters, alias="m.")
            rows = self._rows(
                f"""SELECT m.id, bm25(memories_fts, 1.0, ?, 0.0) AS rank
                    FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
                    WHERE memories_fts MATCH ? AND {where}
                    ORDER BY rank LIMIT ?""",
                [context_weight, match, *params, limit],
            )
            return [ScoredId(memory_id, -rank) for memory_id, rank in rows]
        # The common case, current facts only: rank inside the index (an order of magnitude faster
        # than ranking through a join), then drop the few rows that are no longer current.
        fetch = limit * 2 + 10
        while True:
            ranked = self._rows(
                "SELECT rowid, bm25(memories_fts, 1.0, ?, 0.0) AS rank FROM memories_fts "
                "WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?",
                (context_weight, match, fetch),
            )
            current = dict(
                self._rows(
                    "SELECT rowid, id FROM memories WHERE rowid IN (SELECT value FROM json_each(?)) "
                    "AND expired_at IS NULL AND invalid_at IS NULL",
                    (json.dumps([r[0] for r in ranked]),),
                )
            )
            hits = [ScoredId(current[rowid], -rank) for rowid, rank in ranked if rowid in current]
            if len(hits) >= limit or len(ranked) < fetch:
                return hits[:limit]
            fetch *= 4

    def _user_vectors(self, user_id: str) -> _UserVectors | None:
        """The user's embeddings: the cached entry when it is at the user's version, else a reload.

        Writes in this process keep the entry current (``_bump``), so a reload happens on first use,
        after another process wrote, or after a rollback. Version and rows are read in one snapshot.
        """
        in_write = self._write_owner == threading.get_ident()
        if not in_write:
            self._exec("BEGIN")
        try:
            version_rows = self._rows("SELECT version FROM user_versions WHERE user_id = ?", (user_id,))
            if not version_rows:
                return None
            version = version_rows[0][0]
            cached = self._vectors.get(user_id)
            if cached is not None and cached.version == version:
                return cached
            rows = self._rows(
                "SELECT rowid, id, embedding, expired_at IS NULL AND invalid_at IS NULL FROM memories "
                "WHERE user_id = ? AND embedding IS NOT NULL ORDER BY rowid",
                (user_id,),
            )
        finally:
            if not in_write:
                self._exec("COMMIT")
        if not rows:
            return None
        dim = len(rows[0][2]) // 4
        # A vector of another dimension (before a reindex) stays zero: it cannot match.
        blobs = b"".join(r[2] if len(r[2]) == dim * 4 else bytes(dim * 4) for r in rows)
        entry = _UserVectors(
            version=version,
            dim=dim,
            rowids=[r[0] for r in rows],
            ids=[r[1] for r in rows],
            vectors=np.frombuffer(blobs, dtype=np.float32).reshape(len(rows), dim),
            current=[bool(r[3]) for r in rows],
        )
        # Inside a write, rows this transaction changed may never commit: cache only a clean view.
        if not in_write or user_id not in self._bumped:
            self._vectors.put(user_id, entry)
        return entry

    def vector_search(
        self, user_id: str, vector: np.ndarray, filters: MemoryFilters, limit: int
    ) -> list[ScoredId]:
        entry = self._user_vectors(user_id)
        if entry is None or entry.dim != len(vector):
            return []
        n = entry.n
        if filters.narrows:
            where, params = self._where(user_id, filters)
            allowed = np.fromiter(
                (r[0] for r in self._rows(f"SELECT rowid FROM memories WHERE {where}", params)), dtype=np.int64
            )
            mask = np.isin(entry.rowids[:n], allowed)
        else:
            mask = entry.current[:n]
        count = int(mask.sum())
        if count == 0:
            return []
        scores = _cosine(entry.matrix[:n], np.asarray(vector, dtype=np.float32))
        scores[~mask] = -np.inf
        k = min(limit, count)
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [ScoredId(entry.ids[i], float(scores[i])) for i in top]

    # -- history ---------------------------------------------------------------------------------
    def record_event(self, user_id: str, memory_id: str, event: str, at: float, detail: dict[str, Any]) -> None:
        with self.write():
            self._exec(
                "INSERT INTO memory_events(user_id, memory_id, event, at, detail) VALUES (?, ?, ?, ?, ?)",
                (user_id, memory_id, event, at, json.dumps(detail)),
            )

    def history(self, user_id: str, memory_id: str) -> list[HistoryEntry]:
        rows = self._rows(
            "SELECT memory_id, event, at, detail FROM memory_events WHERE user_id = ? AND memory_id = ? ORDER BY id",
            (user_id, memory_id),
        )
        return [HistoryEntry(m, e, at, json.loads(d)) for m, e, at, d in rows]

    # -- entities --------------------------------------------------------------------------------
    def link_entities(self, user_id: str, memory_id: str, mentions: Sequence[EntityMention]) -> None:
        with self.write():
            for mention in mentions:
                self._exec(
                    "INSERT INTO entities(user_id, canonical, kind) VALUES (?, ?, ?) "
                    "ON CONFLICT(user_id, canonical) DO NOTHING",
                    (user_id, mention.canonical, mention.kind),
                )
                entity_id = self._rows(
                    "SELECT id FROM entities WHERE user_id = ? AND canonical = ?", (user_id, mention.canonical)
                )[0][0]
                for alias in {mention.canonical.lower(), mention.name.lower()}:
                    self._exec(
                        "INSERT OR IGNORE INTO entity_aliases(entity_id, alias) VALUES (?, ?)", (entity_id, alias)
                    )
                self._exec(
                    "INSERT OR IGNORE INTO memory_entities(memory_id, entity_id) VALUES (?, ?)", (memory_id, entity_id)
                )

    def memories_for_entities(
        self, user_id: str, canonicals: Sequence[str], filters: MemoryFilters, limit: int
    ) -> list[ScoredId]:
        if not canonicals:
            return []
        where, params = self._where(user_id, filters, alias="m.")
        rows = self._rows(
            f"""SELECT m.id, count(*) AS hits FROM entities e
                JOIN memory_entities me ON me.entity_id = e.id
                JOIN memories m ON m.id = me.memory_id
                WHERE e.user_id = ? AND e.canonical IN (SELECT value FROM json_each(?)) AND {where}
                GROUP BY m.id ORDER BY hits DESC, m.created_at DESC LIMIT ?""",
            [user_id, json.dumps(list(canonicals)), *params, limit],
        )
        return [ScoredId(memory_id, float(hits)) for memory_id, hits in rows]

    def entity_names(self, user_id: str) -> dict[str, str]:
        rows = self._rows(
            "SELECT a.alias, e.canonical FROM entity_aliases a JOIN entities e ON e.id = a.entity_id WHERE e.user_id = ?",
            (user_id,),
        )
        return dict(rows)

    # -- jobs ------------------------------------------------------------------------------------
    def enqueue_job(self, kind: str, user_id: str, memory_id: str | None, payload: dict[str, Any]) -> None:
        now = time.time()
        with self.write():
            self._exec(
                "INSERT INTO jobs(kind, user_id, memory_id, payload, run_after, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (kind, user_id, memory_id, json.dumps(payload), now, now),
            )

    def claim_job(self, now: float) -> Job | None:
        with self.write():
            rows = self._rows(
                "SELECT id, kind, user_id, memory_id, payload, attempts FROM jobs "
                "WHERE status = 'queued' AND run_after <= ? ORDER BY run_after, id LIMIT 1",
                (now,),
            )
            if not rows:
                return None
            job_id, kind, user_id, memory_id, payload, attempts = rows[0]
            self._exec("UPDATE jobs SET status = 'running', attempts = attempts + 1 WHERE id = ?", (job_id,))
            return Job(job_id, kind, user_id, memory_id, json.loads(payload), attempts + 1)

    def requeue_running_jobs(self) -> int:
        """Jobs a previous process claimed but never finished go back to the queue."""
        with self.write():
            count = self._rows("SELECT count(*) FROM jobs WHERE status = 'running'")[0][0]
            self._exec("UPDATE jobs SET status = 'queued' WHERE status = 'running'")
            return count

    def finish_job(self, job_id: int) -> None:
        with self.write():
            self._exec("DELETE FROM jobs WHERE id = ?", (job_id,))

    def fail_job(self, job_id: int, error: str, retry_at: float | None) -> None:
        with self.write():
            if retry_at is None:
                self._exec("UPDATE jobs SET status = 'failed', last_error = ? WHERE id = ?", (error, job_id))
            else:
                self._exec(
                    "UPDATE jobs SET status = 'queued', last_error = ?, run_after = ? WHERE id = ?",
                    (error, retry_at, job_id),
                )

    def pending_jobs(self) -> int:
        return self._rows("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')")[0][0]

    # -- vectors ---------------------------------------------------------------------------------
    def _meta(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def _set_meta(self, key: str, value: str) -> None:
        self._exec("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    def index_info(self) -> IndexInfo:
        dim = self._meta("vector_dim")
        return IndexInfo(
            dim=int(dim) if dim else None,
            model=self._meta("vector_model"),
            vector_indexes=[f"memories.embedding[{dim}] cosine"] if dim else [],
        )

    def ensure_vector_index(self, dim: int, model: str) -> None:
        with self.write():
            if self._meta("vector_dim") is None:
                self._set_meta("vector_dim", str(dim))
                self._set_meta("vector_model", model)

    def iter_texts(self, batch: int) -> Iterator[list[tuple[str, str, str]]]:
        last = 0
        while True:
            rows = self._rows(
                "SELECT rowid, user_id, id, text FROM memories WHERE rowid > ? ORDER BY rowid LIMIT ?", (last, batch)
            )
            if not rows:
                return
            last = rows[-1][0]
            yield [(u, i, t) for _, u, i, t in rows]

    def rebuild_vector_index(self, dim: int, model: str) -> None:
        with self.write():
            self._exec("UPDATE memories SET embedding = NULL")
            self._set_meta("vector_dim", str(dim))
            self._set_meta("vector_model", model)
            self._exec("UPDATE user_versions SET version = version + 1")
        self._vectors.clear()

    def set_embeddings(self, items: Sequence[tuple[str, str, np.ndarray]]) -> None:
        with self.write():
            users = set()
            for user_id, memory_id, vector in items:
                self._exec(
                    "UPDATE memories SET embedding = ? WHERE user_id = ? AND id = ?",
                    (np.asarray(vector, dtype=np.float32).tobytes(), user_id, memory_id),
                )
                users.add(user_id)
            for user_id in users:
                self._bump(user_id)

    def count_memories(self) -> int:
        return self._rows("SELECT count(*) FROM memories")[0][0]

    def file_size(self) -> int:
        """Bytes on disk: the database file plus its WAL."""
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
