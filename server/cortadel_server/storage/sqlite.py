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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import numpy as np

from cortadel_server.errors import StorageError
from cortadel_server.language.entities import EntityKind, EntityMention
from cortadel_server.storage.base import (
    HistoryEntry,
    IndexInfo,
    Job,
    MemoryFilters,
    MemoryRecord,
    ScoredId,
    Storage,
    UserSummary,
)
from cortadel_server.storage.columns import (
    JSON_COLUMNS,
    MEMORY_COLUMNS,
    REINDEX_DIM,
    REINDEX_MODEL,
    REINDEX_THROUGH,
    SELECT_MEMORY,
    UPDATABLE_COLUMNS,
    VECTOR_DIM,
    VECTOR_MODEL,
    VERSION_FLOOR,
)
from cortadel_server.storage.filters import Dialect, where_clause
from cortadel_server.storage.migrations import migrate
from cortadel_server.storage.overview import USER_STATES, summarise_users
from cortadel_server.storage.search_terms import CONTEXT_WEIGHT, query_terms
from cortadel_server.storage.sessions import SEPARATOR, context_for, rebuild_sessions
from cortadel_server.storage.vector_cache import UserVectors, VectorCache


def user_key(user_id: str) -> str:
    """A single FTS token standing for one user (user ids may hold any characters)."""
    return "u" + hashlib.sha1(user_id.encode("utf-8")).hexdigest()[:20]


def fts_query(query: str) -> str | None:
    """An FTS5 OR-query of the query's words, each quoted so no word is read as syntax."""
    terms = query_terms(query)
    return " OR ".join(f'"{t}"' for t in terms) if terms else None


_DIALECT = Dialect(
    param="?",
    list_holds=lambda column: f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)",
    list_overlaps=lambda column: f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value IN (SELECT value FROM json_each(?)))",
    value_in=lambda column: f"{column} IN (SELECT value FROM json_each(?))",
    list_param=lambda values: json.dumps(list(values)),
)


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
        self._vectors = VectorCache()
        #: users whose rows the open write transaction changed (their cached vectors are dropped on rollback)
        self._bumped: set[str] = set()
        self._all_conns: list[_Connection] = []
        self._conns_lock = threading.Lock()
        #: a delete committed in the open write transaction: checkpoint once it commits
        self._purged = False
        with self._translate():
            self._writer = self._connect()
            self._enable_incremental_vacuum()
            # WAL is a property of the file; switch it on outside any transaction.
            self._writer.execute("PRAGMA journal_mode=WAL")
            migrate(self._writer)

    # -- connections -----------------------------------------------------------------------------
    def _connect(self) -> _Connection:
        conn = _Connection(str(self.path))
        conn.set_busy_timeout(int(self._query_timeout * 1000))
        # secure_delete: freed cells and pages are zeroed, so deleted text leaves the file.
        conn.execute(
            "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY; PRAGMA secure_delete=ON"
        )
        conn.set_progress_handler(conn.past_deadline, 10_000)
        with self._conns_lock:
            self._all_conns.append(conn)
        return conn

    def _enable_incremental_vacuum(self) -> None:
        """Let deletes hand freed pages back to the file system. A file made before this needs one
        VACUUM to switch (instant on a new, empty file)."""
        if next(self._writer.execute("PRAGMA auto_vacuum"))[0] == 0:
            self._writer.execute("PRAGMA auto_vacuum=INCREMENTAL")
            self._writer.execute("VACUUM")

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
    def write(self, user_id: str | None = None) -> Iterator[None]:
        # One writer at a time for the whole file: the turn of every user at once.
        me = threading.get_ident()
        if self._write_owner == me:  # nested: part of the enclosing transaction
            yield
            return
        with self._write_lock:
            self._write_owner = me
            self._bumped = set()
            self._purged = False
            try:
                self._exec("BEGIN IMMEDIATE")
                try:
                    yield
                except BaseException:
                    self._exec("ROLLBACK")
                    for bumped in self._bumped:  # the cache may hold what never committed
                        self._vectors.drop(bumped)
                    raise
                self._exec("COMMIT")
                if self._purged:
                    self._checkpoint()
            finally:
                self._write_owner = None

    def _purge(self) -> None:
        """Called inside a write that deleted text: give the freed pages back now, and checkpoint
        once it commits, so no copy of the text is left in the file or in its WAL."""
        self._exec("PRAGMA incremental_vacuum")
        self._purged = True

    def _checkpoint(self) -> None:
        """Copy the WAL into the database and truncate it: the old page images in the WAL still
        hold the deleted text. A reader of another process may keep it from completing; the next
        checkpoint then finishes the job."""
        self._exec("PRAGMA wal_checkpoint(TRUNCATE)")

    def _bump(self, user_id: str, change: Callable[[UserVectors], None] | None = None) -> None:
        """Move the user's version on and apply ``change`` to their cached vectors, write-through.

        The cached entry follows only when it reflects the version just before this one; anything
        else (a write by another process on the same file) drops it, to be reloaded on demand.
        """
        # A user erased and written again starts above every version an erased user had, so a
        # cache of the erased data (in another process) never looks current.
        version = self._rows(
            "INSERT INTO user_versions(user_id, version) VALUES "
            f"(?, 1 + COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = '{VERSION_FLOOR}'), 0)) "
            "ON CONFLICT(user_id) DO UPDATE SET version = version + 1 RETURNING version",
            (user_id,),
        )[0][0]
        self._bumped.add(user_id)
        self._vectors.advance(user_id, version, change)

    def user_version(self, user_id: str) -> int:
        rows = self._rows("SELECT version FROM user_versions WHERE user_id = ?", (user_id,))
        return int(rows[0][0]) if rows else 0

    # -- memories --------------------------------------------------------------------------------
    def insert_memory(self, memory: MemoryRecord, embedding: np.ndarray) -> None:
        values = {name: getattr(memory, name) for name in MEMORY_COLUMNS}
        for name in JSON_COLUMNS:
            values[name] = json.dumps(values[name])
        values["user_key"] = user_key(memory.user_id)
        values["embedding"] = np.asarray(embedding, dtype=np.float32).tobytes()
        names = [*values, "context"]
        with self.write():
            values["context"] = context_for(self._last_text(memory.user_id, memory.session_id))
            self._exec(
                f"INSERT INTO memories({', '.join(names)}) VALUES ({', '.join(':' + n for n in names)})", values
            )
            rowid = self._conn().last_insert_rowid()  # before the session_docs insert moves it on
            if memory.session_id is not None:
                self._exec(
                    "INSERT INTO session_docs(user_id, session_id, user_key, text) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(user_id, session_id) DO UPDATE SET text = text || ? || excluded.text",
                    (memory.user_id, memory.session_id, values["user_key"], memory.text, SEPARATOR),
                )
            vector = np.asarray(embedding, dtype=np.float32)
            self._bump(memory.user_id, lambda entry: entry.append(rowid, memory.id, vector, memory.is_current))

    def update_memory(self, user_id: str, memory_id: str, **fields: Any) -> None:
        unknown = set(fields) - UPDATABLE_COLUMNS
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        values = {k: json.dumps(v) if k in JSON_COLUMNS else v for k, v in fields.items()}
        assignments = ", ".join(f"{k} = :{k}" for k in values)
        with self.write():
            touched = self._sessions_of(user_id, [memory_id]) if {"text", "session_id"} & set(fields) else []
            self._exec(
                f"UPDATE memories SET {assignments} WHERE user_id = :_user AND id = :_id",
                {**values, "_user": user_id, "_id": memory_id},
            )
            if touched or fields.get("session_id"):
                rebuild_sessions(self, user_id, [*touched, *([fields["session_id"]] if fields.get("session_id") else [])])
            now_current = self._rows(
                "SELECT expired_at IS NULL AND invalid_at IS NULL FROM memories WHERE id = ? AND +user_id = ?",
                (memory_id, user_id),
            )
            flag = bool(now_current[0][0]) if now_current else False
            self._bump(user_id, lambda entry: entry.set_current(memory_id, flag))

    @staticmethod
    def _record(row: tuple[Any, ...]) -> MemoryRecord:
        values = dict(zip(MEMORY_COLUMNS, row, strict=True))
        for name in JSON_COLUMNS:
            values[name] = json.loads(values[name])
        return MemoryRecord(**values)

    def get_memory(self, user_id: str, memory_id: str) -> MemoryRecord | None:
        rows = self._rows(SELECT_MEMORY + " WHERE user_id = ? AND id = ?", (user_id, memory_id))
        return self._record(rows[0]) if rows else None

    def get_memories(self, user_id: str, ids: Sequence[str]) -> dict[str, MemoryRecord]:
        if not ids:
            return {}
        rows = self._rows(
            # `+user_id` keeps the planner on the id index: the user index would scan every row.
            SELECT_MEMORY + " WHERE id IN (SELECT value FROM json_each(?)) AND +user_id = ?",
            (json.dumps(list(ids)), user_id),
        )
        return {r.id: r for r in map(self._record, rows)}

    @staticmethod
    def _where(user_id: str, filters: MemoryFilters, alias: str = "") -> tuple[str, list[Any]]:
        return where_clause(user_id, filters, _DIALECT, alias)

    def list_memories(
        self, user_id: str, filters: MemoryFilters, *, offset: int, limit: int
    ) -> tuple[list[MemoryRecord], int]:
        where, params = self._where(user_id, filters)
        total = self._rows(f"SELECT count(*) FROM memories WHERE {where}", params)[0][0]
        rows = self._rows(
            f"{SELECT_MEMORY} WHERE {where} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [self._record(r) for r in rows], total

    def find_by_fingerprint(self, user_id: str, fingerprint: str) -> MemoryRecord | None:
        rows = self._rows(
            # `+created_at`: order the few rows the fingerprint index finds; a plain column lets the
            # planner walk the user's created_at index instead (3 ms at 10,000 memories, not 0.1).
            SELECT_MEMORY + " WHERE user_id = ? AND fingerprint = ? AND expired_at IS NULL AND invalid_at IS NULL "
            "ORDER BY +created_at LIMIT 1",
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
            # Other memories' history may quote these texts (a superseded fact's event names the
            # statement that replaced it): the quote goes, the event stays.
            self._exec(
                "UPDATE memory_events SET detail = json_remove(detail, '$.statement') WHERE user_id = ? "
                "AND json_extract(detail, '$.statement') IS NOT NULL "
                "AND (json_extract(detail, '$.superseded_by') IN (SELECT value FROM json_each(?)) "
                "     OR json_extract(detail, '$.statement') IN "
                "        (SELECT text FROM memories WHERE id IN (SELECT value FROM json_each(?)) AND +user_id = ?))",
                (user_id, found, found, user_id),
            )
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
            rebuild_sessions(self, user_id, sessions)
            self._bump(user_id, lambda entry: entry.remove(existing))
            self._purge()
            return len(existing)

    def delete_user(self, user_id: str) -> dict[str, int]:
        ids = "SELECT id FROM memories WHERE user_id = :user"
        entity_ids = "SELECT id FROM entities WHERE user_id = :user"
        # Children before parents; the full-text rows follow their tables through the triggers.
        steps = (
            ("memory_entities", f"DELETE FROM memory_entities WHERE memory_id IN ({ids}) OR entity_id IN ({entity_ids})"),
            ("entity_aliases", f"DELETE FROM entity_aliases WHERE entity_id IN ({entity_ids})"),
            ("entities", "DELETE FROM entities WHERE user_id = :user"),
            ("memory_events", "DELETE FROM memory_events WHERE user_id = :user"),
            ("jobs", "DELETE FROM jobs WHERE user_id = :user"),
            ("session_docs", "DELETE FROM session_docs WHERE user_id = :user"),
            ("memories", "DELETE FROM memories WHERE user_id = :user"),
            ("user_versions", "DELETE FROM user_versions WHERE user_id = :user"),
        )
        erased: dict[str, int] = {}
        with self.write():
            version = self._rows("SELECT version FROM user_versions WHERE user_id = ?", (user_id,))
            if version:
                floor = int(self._meta(VERSION_FLOOR) or 0)
                self._set_meta(VERSION_FLOOR, str(max(floor, version[0][0])))
            for table, sql in steps:
                erased[table] = len(self._rows(sql + " RETURNING 1", {"user": user_id}))
            self._purge()
        self._vectors.drop(user_id)
        return erased

    # -- session documents and turn context ------------------------------------------------------
    def _last_text(self, user_id: str, session_id: str | None) -> list[str]:
        """The text written last in the session (none or one), the context of the next memory."""
        if session_id is None:
            return []
        rows = self._rows(
            "SELECT text FROM memories WHERE user_id = ? AND session_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (user_id, session_id),
        )
        return [rows[0][0]] if rows else []

    def _sessions_of(self, user_id: str, ids: Sequence[str]) -> list[str]:
        rows = self._rows(
            "SELECT DISTINCT session_id FROM memories WHERE id IN (SELECT value FROM json_each(?)) "
            "AND +user_id = ? AND session_id IS NOT NULL",
            (json.dumps(list(ids)), user_id),
        )
        return [r[0] for r in rows]

    # SessionRows, for storage/sessions.py
    def session_texts(self, user_id: str, session_id: str) -> list[tuple[int, str, str]]:
        rows = self._rows(
            "SELECT rowid, text, context FROM memories WHERE user_id = ? AND session_id = ? ORDER BY created_at, rowid",
            (user_id, session_id),
        )
        return [(rowid, text, context) for rowid, text, context in rows]

    def set_context(self, user_id: str, row_key: int, context: str) -> None:
        self._exec("UPDATE memories SET context = ? WHERE rowid = ? AND user_id = ?", (context, row_key, user_id))

    def put_session_document(self, user_id: str, session_id: str, text: str | None) -> None:
        if text is None:
            self._exec("DELETE FROM session_docs WHERE user_id = ? AND session_id = ?", (user_id, session_id))
            return
        self._exec(
            "INSERT INTO session_docs(user_id, session_id, user_key, text) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(user_id, session_id) DO UPDATE SET text = excluded.text",
            (user_id, session_id, user_key(user_id), text),
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
        if not filters.narrows:
            # The common case, current facts only: rank inside the index (an order of magnitude
            # faster than ranking through a join), then drop the few rows that are no longer current.
            fetch = limit * 2 + 10
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
            # Mostly past versions (one slot corrected many times): widening the window again and
            # again ranked every version several times per call, so filter through the join once.
        where, params = self._where(user_id, filters, alias="m.")
        rows = self._rows(
            f"""SELECT m.id, bm25(memories_fts, 1.0, ?, 0.0) AS rank
                FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
                WHERE memories_fts MATCH ? AND {where}
                ORDER BY rank LIMIT ?""",
            [context_weight, match, *params, limit],
        )
        return [ScoredId(memory_id, -rank) for memory_id, rank in rows]

    def _user_vectors(self, user_id: str) -> UserVectors | None:
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
            cached = self._vectors.current(user_id, version)
            if cached is not None:
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
        entry = UserVectors(
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
        return entry.nearest(vector, mask, limit)

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
                    (user_id, mention.key, EntityKind(mention.kind).value),
                )
                entity_id = self._rows(
                    "SELECT id FROM entities WHERE user_id = ? AND canonical = ?", (user_id, mention.key)
                )[0][0]
                for alias in {mention.key.lower(), mention.name.lower()}:
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
            count = int(self._rows("SELECT count(*) FROM jobs WHERE status = 'running'")[0][0])
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
        return int(self._rows("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')")[0][0])

    # -- vectors ---------------------------------------------------------------------------------
    def _meta(self, key: str) -> str | None:
        rows = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else None

    def _set_meta(self, key: str, value: str) -> None:
        self._exec("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", (key, value))

    def index_info(self) -> IndexInfo:
        dim = self._meta(VECTOR_DIM)
        target = self._meta(REINDEX_MODEL)
        return IndexInfo(
            dim=int(dim) if dim else None,
            model=self._meta(VECTOR_MODEL),
            vector_indexes=[f"memories.embedding[{dim}] cosine"] if dim else [],
            missing_embeddings=self._rows("SELECT count(*) FROM memories WHERE embedding IS NULL")[0][0],
            reindex_target=target,
            reindex_remaining=(
                self._rows("SELECT count(*) FROM memories WHERE rowid > ?", (int(self._meta(REINDEX_THROUGH) or 0),))[0][0]
                if target else 0
            ),
        )

    def ensure_vector_index(self, dim: int, model: str) -> None:
        with self.write():
            if self._meta(VECTOR_DIM) is None:
                self._set_meta(VECTOR_DIM, str(dim))
                self._set_meta(VECTOR_MODEL, model)

    def begin_reindex(self, dim: int, model: str) -> None:
        with self.write():
            if self._meta(REINDEX_MODEL) == model and self._meta(REINDEX_DIM) == str(dim):
                return  # the same reindex, interrupted: carry on from where it stopped
            self._set_meta(REINDEX_MODEL, model)
            self._set_meta(REINDEX_DIM, str(dim))
            self._set_meta(REINDEX_THROUGH, "0")

    def stale_embeddings(self, limit: int) -> list[tuple[str, str, str]]:
        through = self._meta(REINDEX_THROUGH)
        if through is not None:
            rows = self._rows(
                "SELECT user_id, id, text FROM memories WHERE rowid > ? ORDER BY rowid LIMIT ?", (int(through), limit)
            )
            if rows:
                return [tuple(r) for r in rows]
        rows = self._rows(  # through the partial index of missing embeddings: no scan
            "SELECT user_id, id, text FROM memories WHERE embedding IS NULL ORDER BY rowid LIMIT ?", (limit,)
        )
        return [tuple(r) for r in rows]

    def set_embeddings(self, items: Sequence[tuple[str, str, np.ndarray]]) -> None:
        with self.write():
            users = set()
            reached = 0
            for user_id, memory_id, vector in items:
                updated = self._rows(
                    "UPDATE memories SET embedding = ? WHERE user_id = ? AND id = ? RETURNING rowid",
                    (np.asarray(vector, dtype=np.float32).tobytes(), user_id, memory_id),
                )
                reached = max([reached, *(r[0] for r in updated)])
                users.add(user_id)
            through = self._meta(REINDEX_THROUGH)
            if through is not None and reached > int(through):
                self._set_meta(REINDEX_THROUGH, str(reached))
            for user_id in users:
                self._bump(user_id)

    def finish_reindex(self) -> bool:
        with self.write():
            target, dim, through = (self._meta(k) for k in (REINDEX_MODEL, REINDEX_DIM, REINDEX_THROUGH))
            if target is None or through is None or dim is None:
                return True
            if self._rows("SELECT count(*) FROM memories WHERE rowid > ?", (int(through),))[0][0]:
                return False  # written since the last batch: one more pass
            self._set_meta(VECTOR_DIM, dim)
            self._set_meta(VECTOR_MODEL, target)
            self._exec(
                "DELETE FROM meta WHERE key IN (?, ?, ?)", (REINDEX_MODEL, REINDEX_DIM, REINDEX_THROUGH)
            )
            self._exec("UPDATE user_versions SET version = version + 1")
        self._vectors.clear()
        return True

    def count_memories(self) -> int:
        return int(self._rows("SELECT count(*) FROM memories")[0][0])

    def user_summaries(self, limit: int) -> list[UserSummary]:
        return summarise_users(self._rows(USER_STATES), limit)

    def file_size(self) -> int:
        """Bytes on disk: the database file plus its WAL."""
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
