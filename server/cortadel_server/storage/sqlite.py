"""The embedded backend: one SQLite file in WAL mode, FTS5 for BM25, exact cosine search in numpy.

Writer discipline: one write connection, taken under a lock with ``BEGIN IMMEDIATE``; reads go
through one connection per thread. Inside ``write()`` the writing thread reads through the write
connection, so a check-then-insert (dedup) sees its own transaction. Every query runs under a time
limit enforced by SQLite's progress handler.

Cache discipline: each user's vectors, term index and session index are held in process
(storage/vector_cache.py, storage/term_index.py, ``_Sessions``), labelled with the user version
they reflect. A write of this process moves the version once per transaction (``_version``),
stamps every row it changes with it (``changed_version``, on memories and session documents) and
applies the same change to the cached entries (``_bump``). An entry another process's write left
behind (or this process's deletion or edit) catches up at its next read by the rows changed since
its version, read with the user's version and row count in one snapshot (``_cached_or_loaded``):
rows that went away are told by the rowids left, a row's new terms replace its old ones in place.
Only what those rows cannot tell (a vector of another dimension, a deleted rowid given to a new
row, a member moved to another session) reads the user whole. A rollback drops the entries it
touched.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import apsw
import numpy as np

from cortadel_server.errors import StaleSnapshot, StorageError
from cortadel_server.language.entities import EntityKind, EntityMention
from cortadel_server.storage.base import (
    TRANSFER_KINDS,
    HistoryEntry,
    IndexInfo,
    Job,
    JobGroup,
    MemoryFilters,
    MemoryHead,
    MemoryRecord,
    ReconcileRun,
    ScoredId,
    Storage,
    StoredEntity,
    StoredJob,
    StoredMemory,
    Suggestion,
    UserSummary,
)
from cortadel_server.storage.columns import (
    ERASURES,
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
    transfer_checkpoint_key,
)
from cortadel_server.storage.curation_columns import (
    RUN_COLUMNS,
    RUN_JSON,
    SUGGESTION_COLUMNS,
    SUGGESTION_JSON,
    from_row,
    owned_rows,
    row_values,
)
from cortadel_server.storage.filters import Dialect, where_clause
from cortadel_server.storage.migrations import migrate
from cortadel_server.storage.overview import TRANSFER_USERS, USER_STATES, summarise_users
from cortadel_server.storage.search_terms import CONTEXT_WEIGHT
from cortadel_server.storage.sessions import SEPARATOR, context_for, rebuild_sessions
from cortadel_server.storage.sqlite_claims import BACKGROUND_DUTY, claimer_for
from cortadel_server.storage.sqlite_terms import UserTerms, indexed, register
from cortadel_server.storage.term_index import TermIndex, Totals
from cortadel_server.storage.vector_cache import (
    WATCHED_USERS,
    CacheReads,
    Change,
    ChangedRow,
    UserVectors,
    VectorCache,
    Versioned,
    VersionedCache,
    screened_searches,
)
from cortadel_server.text_caches import forget_texts

log = logging.getLogger("cortadel.storage")

#: what joins the texts of a session document, as its bytes (``_Sessions.catch_up``)
SEPARATOR_BYTES = SEPARATOR.encode()


class _Sessions:
    """One user's session documents as terms (a row a document, in rowid order: FTS5's order of
    ties) and each session's current members in write order, at one user version.

    A write in this process keeps it current as it keeps the term index (``_bump``): a new member
    joins its session, a member that ends leaves it, and the texts appended to a document extend
    its row (``TermIndex.extend``). Another process's writes, and this process's edits and
    deletions, are replayed from the rows they changed (``catch_up``): a document rebuilt has its
    row's terms replaced and its session's members read again, a document deleted loses its row.
    Anything else (a member current again, a member dated before the session's last, a member
    moved to another session) leaves it behind, to be loaded again. ``revision`` is odd while a
    change is under way and moves on with each: a search reading the entry meanwhile sees it moved
    and asks FTS5 instead."""

    def __init__(
        self, version: int, terms: TermIndex, members: dict[str, list[str]], session_of: dict[str, str],
        last_stems: dict[str, str], latest: dict[str, float], documents: dict[str, tuple[int, int]],
    ) -> None:
        self.version = version
        self.terms = terms
        #: per session, its document's rowid and its text's length in UTF-8 bytes: where what
        #: another process appended begins (``catch_up``)
        self.documents = documents
        self.members = members
        #: the session of every memory that has one, current or not
        self.session_of = session_of
        #: the stem each document ends with (the pair across the next append's join)
        self.last_stems = last_stems
        #: per session, the latest ``created_at`` of its members: members are in write order
        self.latest = latest
        self.revision = 0
        #: what the cache bounds itself by
        self.n = terms.n + len(session_of)

    def joined(self, memory_id: str, session_id: str, created_at: float, current: bool) -> bool:
        """A new memory of the session; False when it does not come last in write order."""
        if created_at < self.latest.get(session_id, created_at):
            return False
        self.revision += 1
        self.session_of[memory_id] = session_id
        self.latest[session_id] = created_at
        if current:
            self.members.setdefault(session_id, []).append(memory_id)
        self.n += 1
        self.revision += 1
        return True

    def set_current(self, memory_id: str, current: bool) -> bool:
        """A memory ended or became current again; False when it must take a place among its
        session's members that write order alone cannot tell."""
        session_id = self.session_of.get(memory_id)
        members = self.members.get(session_id, []) if session_id is not None else []
        if current:
            return session_id is None or memory_id in members
        if memory_id in members:
            self.revision += 1
            members.remove(memory_id)
            self.revision += 1
        return True

    def extend(self, session_id: str, added: Sequence[str], rowid: int, size: int) -> None:
        """Texts whose stems are ``added`` were appended to the session's document (or made it),
        row ``rowid``, now ``size`` bytes long."""
        held = session_id in self.terms
        self.documents[session_id] = (rowid, size)
        if held and not added:
            return
        self.revision += 1
        if held:
            self.terms.extend(session_id, self.last_stems.get(session_id), added)
        else:
            self.terms.append(session_id, added, [], True, rowid)
            self.n += 1
        if added:
            self.last_stems[session_id] = added[-1]
        self.revision += 1

    def catch_up(
        self, rows: Sequence[tuple[Any, ...]], documents: Sequence[tuple[Any, ...]], document_count: int,
        stems: Callable[[str], list[str]], read: SessionReads,
    ) -> bool:
        """Replay what writes changed since ``version``: the user's ``rows`` changed since (rowid,
        id, session id, created_at, current), the ``documents`` changed since (rowid, session id,
        text, rebuilt_version), in rowid order, and how many documents the user has now; ``read``
        reads what these cannot tell. False when they cannot tell even so: a row that write order
        alone cannot place, a document rebuilt under another rowid. The entry is then half
        changed, with ``revision`` left odd, and the cache drops it."""
        self.revision += 1
        for _, memory_id, session_id, created_at, current in rows:
            known = self.session_of.get(memory_id)
            if known is not None:
                if known != session_id or not self.set_current(memory_id, bool(current)):
                    return False
            elif session_id is not None and not self.joined(memory_id, session_id, created_at, bool(current)):
                return False
        rebuilt: list[str] = []
        for rowid, session_id, text, rebuilt_version in documents:
            data = text.encode()
            held = self.documents.get(session_id)
            if held is not None and rebuilt_version > self.version:
                # replaced, not appended to (an edit, or a member deleted): new terms in its place
                if held[0] != rowid:
                    return False
                words = stems(text)
                self.terms.replace(session_id, words, [])
                self.documents[session_id] = (rowid, len(data))
                self._last_stem(session_id, words)
                rebuilt.append(session_id)
                continue
            if held is None:  # a new document: after every held one, as FTS5 orders ties
                if rowid <= self.terms.last_rowid:
                    return False
                added = data
            else:
                held_rowid, size = held
                # appended to since, if at all: the held text, then the separator and the new texts
                if held_rowid != rowid or (len(data) != size and not data.startswith(SEPARATOR_BYTES, size)):
                    return False
                added = data[size + 1:]
            self.extend(session_id, stems(added.decode()) if added else [], rowid, len(data))
        if self.terms.rows_held != document_count:  # documents deleted (their members were)
            present = read.sessions()
            for session_id in [s for s in self.documents if s not in present]:
                self.terms.remove(session_id)
                del self.documents[session_id]
                self._last_stem(session_id, [])
                rebuilt.append(session_id)
            if self.terms.rows_held != document_count:
                return False
        if rebuilt:
            self._members_read(rebuilt, read.members(rebuilt))
        self.revision += 1
        return True

    def _last_stem(self, session_id: str, words: Sequence[str]) -> None:
        if words:
            self.last_stems[session_id] = words[-1]
        else:
            self.last_stems.pop(session_id, None)

    def _members_read(self, session_ids: Sequence[str], rows: Sequence[tuple[Any, ...]]) -> None:
        """The members of ``session_ids`` as read now (``_members_of``'s rows), in place of those
        held: deleted ones are gone from them."""
        members, session_of, latest = _members_of(rows)  # of these sessions only
        wanted = set(session_ids)
        stale = [m for m, s in self.session_of.items() if s in wanted]
        for memory_id in stale:
            del self.session_of[memory_id]
        for session_id in wanted:
            self.members.pop(session_id, None)
            self.latest.pop(session_id, None)
        self.session_of.update(session_of)
        self.members.update(members)
        self.latest.update(latest)
        self.n += len(session_of) - len(stale)


#: the user's session members, ended ones too, in write order; ``{sessions}`` says which sessions
MEMBER_ROWS = (
    "SELECT session_id, id, created_at, expired_at IS NULL AND invalid_at IS NULL FROM memories "
    "WHERE user_id = ? AND {sessions} ORDER BY session_id, created_at, rowid"
)


def _members_of(
    rows: Sequence[tuple[Any, ...]],
) -> tuple[dict[str, list[str]], dict[str, str], dict[str, float]]:
    """``MEMBER_ROWS`` as ``_Sessions`` holds them: each session's current members, every
    member's session, each session's latest ``created_at``."""
    members: dict[str, list[str]] = {}
    session_of: dict[str, str] = {}
    latest: dict[str, float] = {}
    for session_id, memory_id, created_at, current in rows:
        session_of[memory_id] = session_id
        latest[session_id] = created_at  # rows in write order: the last one stays
        if current:
            members.setdefault(session_id, []).append(memory_id)
    return members, session_of, latest


class SessionReads(Protocol):
    """What ``_Sessions.catch_up`` reads when the changed rows cannot tell it."""

    def sessions(self) -> set[str]:
        """The sessions the user has a document of."""

    def members(self, session_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """``MEMBER_ROWS`` of these sessions."""


class _UserSessionReads:
    """``SessionReads`` of one user, in the caller's snapshot (counted as rows the cache read)."""

    def __init__(self, storage: SqliteStorage, user_id: str) -> None:
        self.storage, self.user_id = storage, user_id

    def sessions(self) -> set[str]:
        rows = self.storage._rows("SELECT session_id FROM session_docs WHERE user_id = ?", (self.user_id,))
        self.storage.cache_reads["sessions"].rows += len(rows)
        return {session_id for (session_id,) in rows}

    def members(self, session_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        rows = self.storage._rows(
            MEMBER_ROWS.format(sessions="session_id IN (SELECT value FROM json_each(?))"),
            (self.user_id, json.dumps(list(session_ids))),
        )
        self.storage.cache_reads["sessions"].rows += len(rows)
        return rows


_Loaded = TypeVar("_Loaded", bound=Versioned)


#: FTS5 data formats (its ``version`` setting) whose averages record ``fts5_varints`` reads
AVERAGES_FORMATS = frozenset({4, 5})


def fts5_varints(blob: bytes) -> list[int]:
    """The varints of an FTS5 record (SQLite's: 7 bits a byte, high bit set while more follow, a
    ninth byte whole)."""
    values = []
    at = 0
    while at < len(blob):
        value = 0
        for length in range(9):
            byte = blob[at]
            at += 1
            if length == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        values.append(value)
    return values


def _free(_: object) -> None:
    """Run by the loader thread with an entry a search dropped: the last reference goes there."""


def _no_change(_: object) -> None:
    """A write's change that leaves a cached entry as it is (its rows are not the entry's business)."""


def _user_vectors_of(version: int, rows: list[tuple[Any, ...]]) -> UserVectors | None:
    """A user's ``UserVectors`` from all their rows (rowid, id, embedding or None, current), in
    rowid order; None when no row has an embedding."""
    embedded = [r for r in rows if r[2] is not None]
    if not embedded:
        return None
    dim = len(embedded[0][2]) // 4
    # A vector of another dimension (before a reindex) stays zero: it cannot match.
    blobs = b"".join(r[2] if len(r[2]) == dim * 4 else bytes(dim * 4) for r in embedded)
    return UserVectors(
        version=version,
        dim=dim,
        rowids=[r[0] for r in embedded],
        ids=[r[1] for r in embedded],
        vectors=np.frombuffer(blobs, dtype=np.float32).reshape(len(embedded), dim),
        current=[bool(r[3]) for r in embedded],
        rows=len(rows),
        last_rowid=rows[-1][0],
    )


def _changed_vectors(rows: list[tuple[Any, ...]]) -> list[ChangedRow]:
    """Changed rows as ``UserVectors.apply`` takes them: the embedding as big-endian float4 bytes."""
    return [
        (rowid, memory_id, None if blob is None else np.frombuffer(blob, dtype=np.float32).astype(">f4").tobytes(),
         bool(current))
        for rowid, memory_id, blob, current in rows
    ]


#: where each ``MemoryRecord`` field sits in a row of ``SELECT_MEMORY``, and whether it is JSON
_RECORD_FIELDS = [(MEMORY_COLUMNS.index(f.name), f.name in JSON_COLUMNS) for f in dataclasses.fields(MemoryRecord)]


def _json_value(text: str) -> Any:
    # Most lists and dicts stored are empty; json.loads of "[]" alone took 1.4 µs.
    return [] if text == "[]" else {} if text == "{}" else json.loads(text)


def _json_text(value: Any) -> str:
    # The other way round: json.dumps of an empty list took 2 µs, four times a memory.
    return "[]" if value == [] else "{}" if value == {} else json.dumps(value)


#: a memory's row: its record's columns, then what the backend derives (the last one is filled
#: inside the write transaction)
_MEMORY_ROW = (*MEMORY_COLUMNS, "user_key", "embedding", "changed_version", "context")
_INSERT_MEMORY = f"INSERT INTO memories({', '.join(_MEMORY_ROW)}) VALUES ({', '.join(':' + n for n in _MEMORY_ROW)})"


#: a memory's full-text row, given at the end of its write (migration 0011)
_INSERT_MEMORY_TERMS = "INSERT INTO memories_fts(rowid, text, context) VALUES (?, ?, ?)"
#: a statement whose trigger hands the full-text index a memory's terms again: its row must be there
_REINDEXES = re.compile(r"UPDATE memories SET .*\b(?:text|context) = ")
_INSERT_EVENT = "INSERT INTO memory_events(user_id, memory_id, event, at, detail) VALUES (?, ?, ?, ?, ?)"
_INSERT_JOB = "INSERT INTO jobs(kind, user_id, memory_id, payload, run_after, created_at) VALUES (?, ?, ?, ?, ?, ?)"


def _table_of(insert: str) -> str:
    """The table an ``INSERT INTO <table>(…)`` statement writes."""
    return insert.removeprefix("INSERT INTO ").split("(", 1)[0]


#: a statement's words that change rows: a statement without them reads (a SELECT, WITH … SELECT)
_CHANGES = re.compile(r"\b(?:INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE)


@lru_cache(maxsize=4096)
def _may_change_memories(sql: str) -> bool:
    """Whether ``sql`` may change the memories' full-text rows: it names them and is not a read."""
    return "memories" in sql and bool(_CHANGES.search(sql))


@lru_cache(maxsize=4096)
def _needs_deferred(sql: str, inserts: tuple[str, ...]) -> bool:
    """Whether ``sql`` must run after the deferred ``inserts``' rows are in: it names one of their
    tables, deletes, or changes a memory's text (its trigger takes the old terms out of the index).
    Cached: the statements are a few dozen, and working it out each time was 1–4 µs a statement."""
    return sql.startswith("DELETE") or bool(_REINDEXES.match(sql)) or any(_table_of(insert) in sql for insert in inserts)


def user_key(user_id: str) -> str:
    """A single FTS token standing for one user (user ids may hold any characters)."""
    return "u" + hashlib.sha1(user_id.encode("utf-8")).hexdigest()[:20]


_DIALECT = Dialect(
    param="?",
    list_holds=lambda column: f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value = ?)",
    list_overlaps=lambda column: f"EXISTS (SELECT 1 FROM json_each({column}) WHERE value IN (SELECT value FROM json_each(?)))",
    value_in=lambda column: f"{column} IN (SELECT value FROM json_each(?))",
    list_param=lambda values: json.dumps(list(values)),
)


class _Connection(apsw.Connection):
    """A connection that carries the deadline of the query it is running, and what searches on it
    read once for as long as no other connection commits (``SqliteStorage.search_snapshot``)."""

    deadline: float = float("inf")
    #: the user terms the full-text index holds (set by ``_connect``)
    terms: UserTerms
    #: a search snapshot is open on this connection
    in_snapshot: bool = False
    #: and its search runs again in a new one on ``StaleSnapshot``
    renewable: bool = False
    #: the database's ``PRAGMA data_version`` that ``versions`` and ``totals`` were read at: a
    #: commit by any other connection (of any process) moves it on
    cached_at: int = -1
    #: user versions (at most ``VERSIONS_HELD``) and full-text tables' totals read in snapshots at ``cached_at``
    versions: dict[str, int]
    totals: dict[str, Totals]

    def past_deadline(self) -> bool:
        return time.monotonic() > self.deadline


class _LockWait:
    """A connection's busy handler: while another connection (of any process) holds the lock,
    try again every ``LOCK_POLL_SECONDS`` for up to ``timeout`` seconds. SQLite's own handler
    (``busy_timeout``) sleeps longer and longer, 100 ms at a time after the first 0.2 s: a writer
    waiting out another process's batch took the lock up to that long after it came free (0.09 s
    after a write of 0.24 s)."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._since = 0.0

    def __call__(self, prior_calls: int) -> bool:
        now = time.monotonic()
        if prior_calls == 0:
            self._since = now
        if now - self._since >= self.timeout:
            return False  # SQLITE_BUSY: the statement fails as "database is locked"
        time.sleep(LOCK_POLL_SECONDS)
        return True


#: how often a connection waiting for a lock tries again
LOCK_POLL_SECONDS = 0.001

#: a user's searches before their in-process indexes are loaded (``SqliteStorage._for_search``)
INDEX_AFTER_SEARCHES = 20
#: the most rows another process changed that a search's term index catches up by inline (8 ms of
#: stemming and appending, about one FTS5 lookup at 10,000 memories); past it FTS5 answers while the
#: loader thread catches up (``SqliteStorage._for_search``)
CATCH_UP_INLINE_ROWS = 1_000
#: users whose searches are counted at once, before the counts start over
SEARCH_COUNTS_HELD = 100_000
#: user versions a read connection keeps between commits (``SqliteStorage.search_snapshot``)
VERSIONS_HELD = 10_000
#: how often worker processes sharing a file look for each other's commits (``_watch``)
WATCH_SECONDS = 0.1
#: WAL pages past which a commit has the WAL copied back into the database (SQLite's own mark
#: for its automatic checkpoint), by the loader thread (``SqliteStorage._wal_grew``)
CHECKPOINT_PAGES = 1000
#: WAL pages past which the commit checkpoints itself as well: the WAL starts over only when a
#: write begins after a checkpoint that copied all of it, and back-to-back writes never leave the
#: loader's one that moment
CHECKPOINT_INLINE_PAGES = 4 * CHECKPOINT_PAGES
#: past the mark, the pages a WAL grows by before the loader copies them (what the commit's own
#: checkpoint is left to copy)
CHECKPOINT_STEP_PAGES = 250


class SqliteStorage(Storage):
    backend = "sqlite"

    def __init__(
        self, path: Path, *, query_timeout: float = 10.0, index_after_searches: int = INDEX_AFTER_SEARCHES,
        watch_seconds: float = 0.0,
    ) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._query_timeout = query_timeout
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._write_owner: int | None = None
        #: loads of term indexes for searches, off the request path and one at a time (``_for_search``);
        #: also catch-ups, checkpoints and room made ahead in the vector matrices
        self._term_loader = ThreadPoolExecutor(1, thread_name_prefix="cortadel-terms")
        # incremental: an entry another process's write left behind catches up by the rows it changed
        self._vectors = VectorCache(incremental=True, make_room=self._term_loader.submit)
        #: each user's full-text terms, for BM25 in process: the text arm and the dedup lookups (storage/term_index.py)
        self._terms: VersionedCache[TermIndex] = VersionedCache(incremental=True)
        #: what keeping the vectors and term indexes current read from the database
        self.cache_reads = {"vectors": CacheReads(), "text": CacheReads(), "sessions": CacheReads()}
        #: each user's session documents and members, for the session arm in process (``_session_index``),
        #: kept current by this process's writes (``_append_to_sessions``, ``_bump``), caught up after another's
        self._sessions: VersionedCache[_Sessions] = VersionedCache(incremental=True)
        self._term_loads: dict[tuple[str, str], Future[None]] = {}
        #: when each load may run again (a user who writes all the time would keep one busy); a
        #: key is here once its index was loaded in this process
        self._term_loads_after: dict[tuple[str, str], float] = {}
        #: searches per index and user before a load is asked for (``_for_search``)
        self._index_after_searches = index_after_searches
        self._searches: dict[tuple[str, str], int] = {}
        self._term_loads_lock = threading.Lock()
        #: users whose rows the open write transaction changed, and the version it moved each to
        #: (``_version``; their cached entries are dropped on rollback)
        self._bumped: dict[str, int] = {}
        #: users whose cached entries the open write transaction advanced already (``_bump``)
        self._written_through: set[str] = set()
        self._all_conns: list[_Connection] = []
        self._conns_lock = threading.Lock()
        #: a delete committed in the open write transaction: checkpoint once it commits
        self._purged = False
        #: texts the open write transaction added to session documents, written once before it commits
        self._appends: dict[tuple[str, str], list[str]] = {}
        #: the memories' full-text totals inside the open write transaction, kept in step by
        #: ``insert_memory`` and forgotten by any other statement that changes memories (``_may_change``):
        #: read through FTS5 once per batch, not once per dedup lookup
        self._memory_totals: Totals | None = None
        #: the writer's ``total_changes()`` when the open write transaction began: while it is the
        #: same, the transaction has changed nothing and the committed totals are its own
        self._changes_at_begin = 0
        #: per full-text table, whether ``_committed_totals`` can read its averages record
        self._averages_known: dict[str, bool] = {}
        #: rows the open write transaction added to the history, the job queue and the memories'
        #: full-text index, per insert statement: inserted together before any statement on that
        #: table, any delete or any change of a memory's text, at the latest before it commits
        #: (``_may_change``), one statement where each row made one
        self._deferred: dict[str, list[tuple[Any, ...]]] = {}
        with self._translate():
            self._writer = self._connect()
            self._set_up_file()
            #: the store's ``ERASURES`` count this process's caches of text were last emptied at
            #: (``_forget_if_erased``): none of them holds text yet
            self._erasures_seen = int(self._meta(ERASURES) or 0)
        #: this storage's name on the jobs it claims, and how it tells live claimers from gone ones
        self._claimer = claimer_for(self.path)
        #: set by ``close``: the watcher stops
        self._closing = threading.Event()
        self._watcher: threading.Thread | None = None
        if watch_seconds > 0:
            self._watcher = threading.Thread(target=self._watch, args=(watch_seconds,), name="cortadel-watch", daemon=True)
            self._watcher.start()
        #: a checkpoint is queued on the loader thread; the lock keeps checkpoints one at a time
        self._checkpoint_queued = False
        self._checkpoint_lock = threading.Lock()
        #: the WAL's pages when this process last asked for a checkpoint
        self._checkpoint_asked_at = 0
        self._writer.set_wal_hook(self._wal_grew)

    # -- connections -----------------------------------------------------------------------------
    def _connect(self) -> _Connection:
        conn = _Connection(str(self.path))
        # First: registering the tokenizer reads the file, which another process may hold (a new
        # file's VACUUM, a migration).
        conn.set_busy_handler(_LockWait(self._query_timeout))
        conn.terms = register(conn)
        conn.versions, conn.totals = {}, {}
        # secure_delete: freed cells and pages are zeroed, so deleted text leaves the file.
        conn.execute(
            "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY; PRAGMA secure_delete=ON"
        )
        conn.set_progress_handler(conn.past_deadline, 10_000)
        with self._conns_lock:
            self._all_conns.append(conn)
        return conn

    def _set_up_file(self) -> None:
        """Incremental vacuum, WAL and the pending migrations, each done once whoever else opens the
        file. Processes opening a new file at once contend for it: switching the journal mode (or
        vacuuming) while another process reads the file fails at once, without the busy handler
        (SQLite's guard against two connections each waiting for the other). Every step asks first
        whether it is done, so the lot is tried again until the query timeout."""
        deadline = time.monotonic() + self._query_timeout
        while True:
            try:
                self._enable_incremental_vacuum()
                # WAL is a property of the file; switch it on outside any transaction.
                self._writer.execute("PRAGMA journal_mode=WAL")
                migrate(self._writer)
                return
            except apsw.BusyError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(LOCK_POLL_SECONDS)

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
        self._may_change(sql)
        conn = self._conn()
        conn.deadline = time.monotonic() + self._query_timeout
        try:
            with self._translate():
                return list(conn.execute(sql, params))
        finally:
            conn.deadline = float("inf")

    def _exec(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> None:
        self._rows(sql, params)

    def _may_change(self, sql: str) -> None:
        """Before a statement of the writing thread: forget the write's ``_memory_totals`` when it
        may change the memories' full-text rows (``insert_memory`` keeps them in step with its own
        insert), and insert the ``_deferred`` rows when it touches their tables, deletes, or changes
        a memory's text (its trigger takes the old terms out of the index: they must be in)."""
        if self._write_owner != threading.get_ident():
            return  # a reader's statement: the write's state is not its to act on
        if self._memory_totals is not None and _may_change_memories(sql):
            self._memory_totals = None
        if self._deferred and _needs_deferred(sql, tuple(self._deferred)):
            self._insert_deferred()

    def _defer(self, insert: str, row: tuple[Any, ...]) -> None:
        """Run ``insert`` with ``row`` later in the open write transaction (``_deferred``)."""
        self._deferred.setdefault(insert, []).append(row)

    def _insert_deferred(self) -> None:
        deferred, self._deferred = self._deferred, {}
        totals = self._memory_totals  # its full-text rows were counted as they were deferred
        for insert, rows in deferred.items():
            self._insert_many(insert, rows)
        self._memory_totals = totals

    def close(self) -> None:
        self._closing.set()
        if self._watcher is not None:
            self._watcher.join()
        self._term_loader.shutdown(cancel_futures=True)  # a load in progress still needs its connection
        with self._conns_lock:
            for conn in self._all_conns:
                conn.close()
            self._all_conns.clear()
        self._claimer.close()

    def ping(self) -> None:
        self._rows("SELECT 1")

    def cache_counts(self) -> dict[str, CacheReads]:
        return self.cache_reads

    @contextmanager
    def write(self, user_id: str | None = None) -> Iterator[None]:
        # One writer at a time for the whole file: the turn of every user at once.
        me = threading.get_ident()
        if self._write_owner == me:  # nested: part of the enclosing transaction
            yield
            return
        with self._write_lock:
            self._write_owner = me
            self._bumped = {}
            self._written_through = set()
            self._purged = False
            self._appends = {}
            self._memory_totals = None
            self._deferred = {}
            try:
                self._exec("BEGIN IMMEDIATE")
                self._forget_if_erased()
                self._changes_at_begin = self._writer.total_changes()
                try:
                    yield
                    self._insert_deferred()
                    self._append_to_sessions()
                except BaseException:
                    # A statement interrupted past its deadline has rolled the transaction back
                    # itself: a second ROLLBACK failed, hid the cause and kept the caches' rows.
                    if not self._writer.getautocommit():
                        self._exec("ROLLBACK")
                    for bumped in self._bumped:  # the caches may hold what never committed
                        self._vectors.drop(bumped)
                        self._terms.drop(bumped)
                        self._sessions.drop(bumped)
                    raise
                self._exec("COMMIT")
                if self._purged:
                    self._checkpoint()
                moved, purged = self._bumped, self._purged
            finally:
                self._write_owner = None
        if purged:
            self._catch_up_now(moved)
            self._forget_if_erased()
        else:
            self._catch_up_soon(moved)

    def _left_behind(self, bumped: Mapping[str, int]) -> Iterator[tuple[VersionedCache[Any], Callable[[str], object], str, int]]:
        """The cached entries behind the user versions ``bumped`` (this process's committed write
        left them behind: a deletion or an edit, changes no write-through replays; or another
        process wrote, ``_watch``): each entry's cache, how it catches up, its user and version."""
        for user_id, version in bumped.items():
            for cache, catch_up in (
                (self._vectors, self._user_vectors), (self._terms, partial(self._term_index, whole=False)),
                (self._sessions, self._caught_up_sessions),
            ):
                held = cache.version_of(user_id)
                if held is not None and held < version:
                    yield cache, catch_up, user_id, version

    def _catch_up_soon(self, bumped: Mapping[str, int]) -> None:
        """The entries ``_left_behind`` caught up by the loader thread now, by the rows changed
        since, so the next search finds them current instead of catching them up itself (9 ms
        against 2 for the first search after a deletion at 10,000 memories)."""
        for _, catch_up, user_id, _ in self._left_behind(bumped):
            self._term_loader.submit(catch_up, user_id)

    def _catch_up_now(self, bumped: Mapping[str, int]) -> None:
        """After a deletion commits, and before it is acknowledged: the entries ``_left_behind``
        caught up on this thread (not queued behind the loader's work; the next write may go
        meanwhile), so no cache of the process holds the deleted text. An entry that cannot be
        caught up by the changed rows is dropped."""
        for cache, catch_up, user_id, version in self._left_behind(bumped):
            try:
                catch_up(user_id)
            except Exception:  # the deletion committed: it stands, and its entry goes
                log.warning("a cache's catch-up after a deletion failed; the entry is dropped", exc_info=True)
            held = cache.version_of(user_id)
            if held is not None and held < version:
                cache.drop(user_id)

    def _watch(self, every: float) -> None:
        """Every ``every`` seconds, when another connection committed since (``PRAGMA
        data_version``, one read of this thread's connection): the cached entries of the
        ``WATCHED_USERS`` users used last that another process's write left behind are caught up
        by the loader thread (``_catch_up_soon``). Worker processes sharing one file run it, so a
        search that comes a moment after another worker's write finds the user's entries current."""
        seen = None
        while not self._closing.wait(every):
            try:
                ((changed,),) = self._rows("PRAGMA data_version")
                if changed == seen:
                    continue
                seen = changed
                if not self._forget_if_erased():
                    self._catch_up_recent()
            except Exception:  # the watcher outlives a database hiccup: the next turn asks again
                log.warning("watch: reading what other processes changed failed", exc_info=True)

    def _catch_up_recent(self, *, erased: bool = False) -> None:
        """The cached entries of the ``WATCHED_USERS`` users used last that another process's write
        left behind, caught up by the loader thread (``_catch_up_soon``). After a deletion
        (``erased``), those of a user without a version (erased) are dropped; not otherwise, as a
        write of this process may hold a new user's entries before its version commits."""
        held: dict[str, int] = {}
        for cache in (self._vectors, self._terms, self._sessions):
            for user_id, version in cache.recent(WATCHED_USERS).items():
                held[user_id] = min(version, held.get(user_id, version))
        if not held:
            return
        versions = dict(self._rows(
            "SELECT user_id, version FROM user_versions WHERE user_id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(held)),),
        ))
        for user_id in held.keys() - versions.keys() if erased else ():
            for cache in (self._vectors, self._terms, self._sessions):
                cache.drop(user_id)
        self._catch_up_soon({user_id: version for user_id, version in versions.items() if held[user_id] < version})

    def _purge(self) -> None:
        """Called inside a write that deleted text: drop the terms of session documents' old
        versions (``_append_to_sessions`` leaves them behind delete markers), give the freed pages
        back now, and checkpoint once it commits, so no copy of the text is left in the file or in
        its WAL."""
        # A full merge applies every delete marker: it rewrites the whole session index (70 to 80 ms
        # for 8.8 MB of session text), next to nothing when no append happened since the last one.
        self._exec("INSERT INTO session_docs_fts(session_docs_fts) VALUES ('optimize')")
        self._exec("PRAGMA incremental_vacuum")
        self._exec(
            "INSERT INTO meta(key, value) VALUES (?, 1) ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
            (ERASURES,),
        )
        self._purged = True

    def _forget_if_erased(self) -> bool:
        """When a deletion committed since the process's caches of text were last emptied, by this
        process or another serving the same file: empty them (``forget_texts``), and catch up the
        entries of the users used last (``_catch_up_recent``), which another process's deletion
        left holding its rows. One read of the count; whether a deletion was found."""
        erasures = int(self._meta(ERASURES) or 0)
        if erasures == self._erasures_seen:
            return False
        self._erasures_seen = erasures
        forget_texts()
        self._catch_up_recent(erased=True)
        return True

    def _checkpoint(self) -> None:
        """Copy the WAL into the database and truncate it: the old page images in the WAL still
        hold the deleted text. A reader of another process may keep it from completing; the next
        checkpoint then finishes the job."""
        with self._checkpoint_lock:  # not beside the loader's: that one would make it give up
            self._exec("PRAGMA wal_checkpoint(TRUNCATE)")

    def _wal_grew(self, _conn: apsw.Connection, _database: str, pages: int) -> int:
        """SQLite's call after each commit of the writer, with the pages the WAL holds: past
        ``CHECKPOINT_PAGES`` the loader thread copies them into the database, PASSIVE (no reader or
        writer waits for it), off the write. SQLite's automatic checkpoint, which this hook stands
        in for, ran inside the commit that crossed the mark: 40 µs a memory of a batch in a store
        of 100,000 memories, and the single add that crossed it waited for all of it (a p99 of
        8.9 ms against 5.1 now, at 10,000 memories)."""
        # Nothing may escape: SQLite would report it as the error of a commit that took place.
        try:
            if pages < self._checkpoint_asked_at:  # the WAL started over
                self._checkpoint_asked_at = 0
            if pages >= CHECKPOINT_INLINE_PAGES:
                with self._checkpoint_lock:  # after the loader's: what is left of the WAL is little
                    self._writer.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_PASSIVE)
            elif pages >= max(CHECKPOINT_PAGES, self._checkpoint_asked_at + CHECKPOINT_STEP_PAGES) \
                    and not self._checkpoint_queued and not self._closing.is_set():
                # again each step: the WAL keeps its length until a write begins after a whole copy
                self._checkpoint_asked_at = pages
                self._checkpoint_queued = True
                self._term_loader.submit(self._checkpoint_passively)
        except apsw.BusyError:
            pass  # another process checkpoints: the next commit past the mark tries again
        except Exception:  # a closed loader, an I/O error: the next commit past the mark tries again
            log.warning("checkpoint: the commit's own checkpoint failed", exc_info=True)
        return apsw.SQLITE_OK

    def _checkpoint_passively(self) -> None:
        self._checkpoint_queued = False
        try:
            with self._checkpoint_lock:
                self._rows("PRAGMA wal_checkpoint(PASSIVE)")
        except StorageError:  # the next commit past the mark asks again
            log.warning("checkpoint: copying the WAL into the database failed", exc_info=True)

    def _version(self, user_id: str) -> int:
        """The version this write transaction moves the user to, moved in the database at its first
        call. Every row the transaction changes records it (``changed_version``), so it is taken
        before the first row change: another process whose cache is at any older version then finds
        the row among those changed since its own (``_changed_since``). Other processes only need a
        new version per commit: one row write per user and transaction, however many rows change.
        """
        version = self._bumped.get(user_id)
        if version is None:
            # A user erased and written again starts above every version an erased user had, so a
            # cache of the erased data (in another process) never looks current.
            version = self._bumped[user_id] = self._rows(
                "INSERT INTO user_versions(user_id, version) VALUES "
                f"(?, 1 + COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = '{VERSION_FLOOR}'), 0)) "
                "ON CONFLICT(user_id) DO UPDATE SET version = version + 1 RETURNING version",
                (user_id,),
            )[0][0]
        return version

    def _bump(
        self, user_id: str, change: Change[UserVectors] | None = None, terms: Change[TermIndex] | None = None,
        sessions: Change[_Sessions] | None = None,
    ) -> None:
        """After the transaction changed the user's rows: move their version on (``_version``, if
        nothing did yet) and apply ``change`` to their cached vectors, ``terms`` to their cached
        term index and ``sessions`` to their session index, write-through. A later change of the
        same transaction amends the entries.

        An entry follows only when it reflects the version just before this one; anything else (a
        write by another process on the same file in between), or a change left out (None: a
        deletion, an edit), leaves it behind, to catch up by the changed rows at its next read
        (``_cached_or_loaded``).
        """
        version = self._version(user_id)
        if user_id in self._written_through:
            self._vectors.amend(user_id, version, change)
            self._terms.amend(user_id, version, terms)
            self._sessions.amend(user_id, version, sessions)
            return
        self._written_through.add(user_id)
        self._vectors.advance(user_id, version, change)
        self._terms.advance(user_id, version, terms)
        self._sessions.advance(user_id, version, sessions)

    def user_version(self, user_id: str) -> int:
        conn = self._conn()
        if conn.in_snapshot:
            version = conn.versions.get(user_id)
            if version is None:
                if len(conn.versions) >= VERSIONS_HELD:
                    conn.versions.clear()
                version = conn.versions[user_id] = self._read_user_version(user_id)
            return version
        return self._read_user_version(user_id)

    def _read_user_version(self, user_id: str) -> int:
        rows = self._rows("SELECT version FROM user_versions WHERE user_id = ?", (user_id,))
        return int(rows[0][0]) if rows else 0

    @contextmanager
    def search_snapshot(self, user_id: str, *, renewable: bool = False) -> Iterator[None]:
        """One read transaction for the search: its arms read one snapshot, and the user's version
        (four reads a search) and the full-text totals (two reads of 0.1 ms) are read once for as
        long as no other connection commits, as ``PRAGMA data_version`` tells."""
        conn = self._conn()
        if self._write_owner == threading.get_ident() or conn.in_snapshot:
            yield  # inside a write its own view is the snapshot; nested: the enclosing one
            return
        self._exec("BEGIN")
        try:
            # The first read of the transaction: the data version of its snapshot.
            data_version = self._rows("PRAGMA data_version")[0][0]
            if data_version != conn.cached_at:
                self._forget_if_erased()
                conn.versions.clear()
                conn.totals.clear()
                conn.cached_at = data_version
            conn.in_snapshot, conn.renewable = True, renewable
            yield
        finally:
            conn.in_snapshot = conn.renewable = False
            if not conn.getautocommit():
                self._exec("COMMIT")

    # -- memories --------------------------------------------------------------------------------
    def insert_memory(self, memory: MemoryRecord, embedding: np.ndarray) -> None:
        values = {name: getattr(memory, name) for name in MEMORY_COLUMNS}
        for name in JSON_COLUMNS:
            values[name] = _json_text(values[name])
        values["user_key"] = user_key(memory.user_id)
        values["embedding"] = np.asarray(embedding, dtype=np.float32).tobytes()
        with self.write():
            values["changed_version"] = self._version(memory.user_id)
            # A session this transaction appended to already: its last text is at hand, no read.
            session = memory.session_id
            appended = self._appends.get((memory.user_id, session)) if session is not None else None
            context = values["context"] = context_for(appended or self._last_text(memory.user_id, session))
            totals = self._memory_totals
            self._exec(_INSERT_MEMORY, values)
            rowid = self._conn().last_insert_rowid()
            if memory.session_id is not None:
                self._appends.setdefault((memory.user_id, memory.session_id), []).append(memory.text)
            vector = np.asarray(embedding, dtype=np.float32)
            stems = self._conn().terms.stems
            text_terms, context_terms = stems(memory.text) if memory.text else [], stems(context) if context else []
            key = values["user_key"]
            # Its full-text row waits for the write's end (migration 0011), when the whole write's
            # rows go in at once; any statement that reads or changes the index first sends them.
            self._defer(_INSERT_MEMORY_TERMS, (rowid, indexed(key, text_terms), indexed(key, context_terms)))
            if totals is not None:  # one row of these terms, in both columns
                self._memory_totals = Totals(totals.rows + 1, totals.tokens + len(text_terms) + len(context_terms))
            self._bump(
                memory.user_id, lambda entry: entry.append(rowid, memory.id, vector, memory.is_current),
                lambda index: index.append(memory.id, text_terms, context_terms, memory.is_current, rowid),
                # its text joins the document when the write ends (_append_to_sessions)
                _no_change if session is None else
                lambda entry: entry.joined(memory.id, session, memory.created_at, memory.is_current),
            )

    def update_memory(self, user_id: str, memory_id: str, **fields: Any) -> None:
        unknown = set(fields) - UPDATABLE_COLUMNS
        if unknown:
            raise ValueError(f"not updatable: {sorted(unknown)}")
        values = {k: json.dumps(v) if k in JSON_COLUMNS else v for k, v in fields.items()}
        assignments = ", ".join(f"{k} = :{k}" for k in values)
        with self.write():
            touched = self._sessions_of(user_id, [memory_id]) if {"text", "session_id"} & set(fields) else []
            totals = self._memory_totals
            self._exec(
                f"UPDATE memories SET {assignments}, changed_version = :_version WHERE user_id = :_user AND id = :_id",
                {**values, "_version": self._version(user_id), "_user": user_id, "_id": memory_id},
            )
            if "text" not in fields:  # only a new text changes full-text rows (the update trigger): a supersede keeps the totals
                self._memory_totals = totals
            rebuilt = [*touched, *([fields["session_id"]] if fields.get("session_id") else [])]
            if rebuilt:
                rebuild_sessions(self, user_id, rebuilt)
            now_current = self._rows(
                "SELECT expired_at IS NULL AND invalid_at IS NULL FROM memories WHERE id = ? AND +user_id = ?",
                (memory_id, user_id),
            )
            flag = bool(now_current[0][0]) if now_current else False
            # A new text or session changes indexed terms, contexts and documents: those catch up by the rows.
            rewrites = bool(touched or {"text", "session_id"} & set(fields))
            self._bump(
                user_id, lambda entry: entry.set_current(memory_id, flag),
                None if rewrites else lambda index: index.set_current(memory_id, flag),
                None if rebuilt else lambda entry: entry.set_current(memory_id, flag),
            )

    @staticmethod
    def _record(row: tuple[Any, ...]) -> MemoryRecord:
        # Positional, and the empty JSON values without json.loads: 2.3 against 8 µs a record.
        return MemoryRecord(*[_json_value(row[at]) if is_json else row[at] for at, is_json in _RECORD_FIELDS])

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

    def memory_heads(self, user_id: str, ids: Sequence[str]) -> dict[str, MemoryHead]:
        if not ids:
            return {}
        rows = self._rows(
            # The plan of get_memories, three columns instead of a record with JSON.
            "SELECT id, text, session_id FROM memories WHERE id IN (SELECT value FROM json_each(?)) AND +user_id = ?",
            (json.dumps(list(ids)), user_id),
        )
        return {row[0]: MemoryHead(*row) for row in rows}

    def current_texts(self, user_id: str, ids: Sequence[str]) -> dict[str, str]:
        if not ids:
            return {}
        rows = self._rows(
            # The plan and row order of get_memories, two columns instead of a record with JSON.
            "SELECT id, text FROM memories WHERE id IN (SELECT value FROM json_each(?)) AND +user_id = ? "
            "AND expired_at IS NULL AND invalid_at IS NULL",
            (json.dumps(list(ids)), user_id),
        )
        return dict(rows)

    def neighbour_texts(self, user_id: str, ids: Sequence[str], fingerprint: str) -> tuple[str | None, dict[str, str]]:
        same = (
            "(SELECT id FROM memories WHERE user_id = ?1 AND fingerprint = ?2 AND expired_at IS NULL "
            "AND invalid_at IS NULL ORDER BY +created_at LIMIT 1)"
        )
        rows = self._rows(
            # find_by_fingerprint's lookup (its plan: the fingerprint index) joined to current_texts'
            # (the same plan and row order): one statement and no record where two were made. The
            # lookup is a scalar subquery, run once; as a CTE tested by `id IN same` in the result
            # it cost 91 µs a statement against 79 (warm, 10 ids, 10,000 memories of the user).
            f"SELECT id, text, id = {same} FROM memories WHERE id IN (SELECT value FROM json_each(?3) UNION ALL "
            f"SELECT {same}) AND +user_id = ?1 AND expired_at IS NULL AND invalid_at IS NULL",
            (user_id, fingerprint, json.dumps(list(ids))),
        )
        return next((memory_id for memory_id, _, same in rows if same), None), {memory_id: text for memory_id, text, _ in rows}

    def all_current_texts(self, user_id: str, limit: int) -> dict[str, str] | None:
        if self._vectors.holds_more_current(user_id, limit):
            return None
        rows = self._rows(
            "SELECT id, text FROM memories WHERE user_id = ? AND expired_at IS NULL AND invalid_at IS NULL LIMIT ?",
            (user_id, limit + 1),
        )
        return None if len(rows) > limit else dict(rows)

    def first_by_fingerprints(self, user_id: str, fingerprints: Sequence[str]) -> dict[str, str]:
        rows = self._rows(
            # find_by_fingerprint's lookup for every fingerprint at once, through the same index.
            "SELECT fingerprint, id FROM (SELECT fingerprint, id, row_number() OVER (PARTITION BY fingerprint "
            "ORDER BY created_at, rowid) AS n FROM memories WHERE user_id = ? AND fingerprint IN "
            "(SELECT value FROM json_each(?)) AND expired_at IS NULL AND invalid_at IS NULL) WHERE n = 1",
            (user_id, json.dumps(list(dict.fromkeys(fingerprints)))),
        )
        return dict(rows)

    @staticmethod
    def _where(user_id: str, filters: MemoryFilters, alias: str = "") -> tuple[str, list[Any]]:
        return where_clause(user_id, filters, _DIALECT, alias)

    def list_memories(
        self, user_id: str, filters: MemoryFilters, *, offset: int, limit: int
    ) -> tuple[list[MemoryRecord], int]:
        total = self.count_matching(user_id, filters)
        where, params = self._where(user_id, filters)
        rows = self._rows(
            f"{SELECT_MEMORY} WHERE {where} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        return [self._record(r) for r in rows], total

    def count_matching(self, user_id: str, filters: MemoryFilters) -> int:
        where, params = self._where(user_id, filters)
        return int(self._rows(f"SELECT count(*) FROM memories WHERE {where}", params)[0][0])

    def find_by_fingerprint(self, user_id: str, fingerprint: str) -> MemoryRecord | None:
        rows = self._rows(
            # `+created_at`: order the few rows the fingerprint index finds; a plain column lets the
            # planner walk the user's created_at index instead (3 ms at 10,000 memories, not 0.1).
            SELECT_MEMORY + " WHERE user_id = ? AND fingerprint = ? AND expired_at IS NULL AND invalid_at IS NULL "
            "ORDER BY +created_at LIMIT 1",
            (user_id, fingerprint),
        )
        return self._record(rows[0]) if rows else None

    def last_written(self, user_id: str, app_name: str | None) -> MemoryRecord | None:
        rows = self._rows(
            f"{SELECT_MEMORY} WHERE user_id = ? AND app_name IS ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (user_id, app_name),
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
            self._exec("DELETE FROM memory_recalls WHERE user_id = ? AND memory_id IN (SELECT value FROM json_each(?))", (user_id, found))
            self._exec("DELETE FROM jobs WHERE user_id = ? AND memory_id IN (SELECT value FROM json_each(?))", (user_id, found))
            # Entities nobody mentions any more go too: deletion really deletes.
            self._exec(
                "DELETE FROM entities WHERE user_id = ? AND id NOT IN (SELECT entity_id FROM memory_entities)",
                (user_id,),
            )
            # Session documents and contexts are rebuilt from the members left: deleted text leaves them too.
            rebuild_sessions(self, user_id, sessions)
            self._bump(user_id, lambda entry: entry.remove(existing), None, None if sessions else _no_change)
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
            ("memory_recalls", "DELETE FROM memory_recalls WHERE user_id = :user"),
            ("jobs", "DELETE FROM jobs WHERE user_id = :user"),
            ("reconcile_suggestions", "DELETE FROM reconcile_suggestions WHERE user_id = :user"),
            ("reconcile_runs", "DELETE FROM reconcile_runs WHERE user_id = :user"),
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
        for cache in (self._vectors, self._terms, self._sessions):  # nothing of the user stays in process
            cache.drop(user_id)
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
        self._exec(
            "UPDATE memories SET context = ?, changed_version = ? WHERE rowid = ? AND user_id = ?",
            (context, self._version(user_id), row_key, user_id),
        )

    def _append_to_sessions(self) -> None:
        """Write the session documents' new texts of the open write transaction, one update a session:
        each update re-indexes the whole document, so one per memory made a batch quadratic."""
        appends, self._appends = self._appends, {}
        if not appends:
            return
        # An append replaces a document by a longer one that still holds all of its text, so the old
        # version's terms need no secure delete, which rewrote every term's index page in place (most
        # of a single add's commit, 6 to 13 ms at load 8 against 0.3 ms). They wait behind FTS5's
        # delete markers until a merge, at the latest the `_purge` of a write that deletes text.
        self._exec("INSERT INTO session_docs_fts(session_docs_fts, rank) VALUES ('secure-delete', 0)")
        stems = self._conn().terms.stems
        for (user_id, session_id), texts in appends.items():
            added = SEPARATOR.join(texts)
            version = self._version(user_id)
            ((rowid, size),) = self._rows(
                "INSERT INTO session_docs(user_id, session_id, user_key, text, changed_version) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(user_id, session_id) DO UPDATE SET text = text || ? || excluded.text, "
                "changed_version = excluded.changed_version RETURNING rowid, length(CAST(text AS BLOB))",
                (user_id, session_id, user_key(user_id), added, version, SEPARATOR),
            )
            if self._sessions.get(user_id) is not None:
                # The separator is no word: the document's terms are its old ones, then the new text's.
                extend = partial(_Sessions.extend, session_id=session_id, added=stems(added), rowid=rowid, size=size)
                self._sessions.amend(user_id, version, extend)
        self._exec("INSERT INTO session_docs_fts(session_docs_fts, rank) VALUES ('secure-delete', 1)")

    def put_session_document(self, user_id: str, session_id: str, text: str | None) -> None:
        self._appends.pop((user_id, session_id), None)  # the document is rebuilt from every member
        if text is None:
            self._exec("DELETE FROM session_docs WHERE user_id = ? AND session_id = ?", (user_id, session_id))
            return
        version = self._version(user_id)
        self._exec(
            "INSERT INTO session_docs(user_id, session_id, user_key, text, changed_version, rebuilt_version) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(user_id, session_id) DO UPDATE SET text = excluded.text, "
            "changed_version = excluded.changed_version, rebuilt_version = excluded.rebuilt_version",
            (user_id, session_id, user_key(user_id), text, version, version),
        )

    def session_search(self, user_id: str, query: str, limit: int) -> list[ScoredId]:
        if self._write_owner == threading.get_ident():
            self._append_to_sessions()  # a search inside a write sees the write's own memories
        else:
            # BM25 in process, as text_search: FTS5 walked the long position lists of every
            # matching document. Same sessions, order and scores; FTS5 answers the rest.
            sessions = self._for_search(self._sessions, self._session_index, user_id, self._caught_up_sessions)
            revision = -1 if sessions is None else sessions.revision
            best = None if sessions is None or revision % 2 else sessions.terms.best_among(
                self._conn().terms.phrases(query), partial(self._fts_totals, "session_docs_fts", user_id),
                sessions.terms.current(), limit=limit,
            )
            # A write of this process that changed the entry meanwhile may have changed what it read.
            if best is not None and sessions is not None and sessions.revision == revision:
                return [ScoredId(session_id, score) for session_id, score in best]
        return self._fts5_session_search(user_id, query, limit)

    def _session_index(self, user_id: str) -> _Sessions:
        """The user's ``_Sessions`` at their version (documents and members in one snapshot: a
        write's, when it runs in one)."""
        with self._one_snapshot():
            version = self.user_version(user_id)
            documents = self._rows(
                "SELECT rowid, session_id, text FROM session_docs WHERE user_id = ? ORDER BY rowid", (user_id,)
            )
            # every session at once, ended facts too (for the writes to come)
            rows = self._rows(MEMBER_ROWS.format(sessions="session_id IS NOT NULL"), (user_id,))
        reads = self.cache_reads["sessions"]
        reads.reloads += 1
        reads.rows += len(documents) + len(rows)
        stems = self._conn().terms.stems
        documents_stems = [(session_id, stems(text) if text else []) for _, session_id, text in documents]
        terms = TermIndex.load(
            version, [(session_id, words, [], True) for session_id, words in documents_stems], context_weight=CONTEXT_WEIGHT,
            rowids=[rowid for rowid, _, _ in documents],
        )
        members, session_of, latest = _members_of(rows)
        last_stems = {session_id: words[-1] for session_id, words in documents_stems if words}
        sizes = {session_id: (rowid, len(text.encode()) if text else 0) for rowid, session_id, text in documents}
        sessions = _Sessions(version, terms, members, session_of, last_stems, latest, sizes)
        self._sessions.put(user_id, sessions)
        return sessions

    def _caught_up_sessions(self, user_id: str) -> _Sessions | None:
        """The user's ``_Sessions`` brought to their version by what another process's writes
        changed since its own (``_Sessions.catch_up``), inline in a search as the term index is;
        None when only a whole read (``_session_index``, by the loader thread) can tell."""
        def apply(entry: _Sessions, rows: list[tuple[Any, ...]]) -> bool:
            documents = self._rows(
                "SELECT rowid, session_id, text, rebuilt_version FROM session_docs "
                "WHERE user_id = ? AND changed_version > ? ORDER BY rowid",
                (user_id, entry.version),
            )
            # Counted on the documents' key, a few entries a user. A deletion shows here or as a rebuilt
            # document, so the user's session members need no count (0.17 ms at 10,000 memories).
            ((held,),) = self._rows("SELECT count(*) FROM session_docs WHERE user_id = ?", (user_id,))
            self.cache_reads["sessions"].rows += len(documents)
            return entry.catch_up(rows, documents, held, self._conn().terms.stems, _UserSessionReads(self, user_id))

        return self._cached_or_loaded(
            user_id, self._sessions, "rowid, id, session_id, created_at, expired_at IS NULL AND invalid_at IS NULL",
            None, apply, self.cache_reads["sessions"],
        )

    def _fts5_session_search(self, user_id: str, query: str, limit: int) -> list[ScoredId]:
        """``session_search`` ranked by FTS5's bm25()."""
        match = self._conn().terms.match(user_key(user_id), query)
        if match is None:
            return []
        rows = self._rows(
            # Rank inside the index, then join the few best: joining every matching document first
            # made the arm's cost grow with the user's sessions.
            "SELECT d.session_id, best.rank FROM (SELECT rowid, bm25(session_docs_fts) AS rank FROM session_docs_fts "
            "WHERE session_docs_fts MATCH ? ORDER BY rank LIMIT ?) AS best "
            # Ties in rowid order, as the index ranks them (the sorter alone left their order to chance).
            "JOIN session_docs d ON d.rowid = best.rowid AND d.user_id = ? ORDER BY best.rank, best.rowid",
            (match, limit, user_id),
        )
        return [ScoredId(session_id, -rank) for session_id, rank in rows]

    def session_members(
        self, user_id: str, session_ids: Sequence[str], filters: MemoryFilters
    ) -> dict[str, list[str]]:
        if not session_ids:
            return {}
        if not filters.narrows and self._write_owner != threading.get_ident():
            sessions = self._for_search(self._sessions, self._session_index, user_id, self._caught_up_sessions)
            if sessions is not None:  # a row lookup per member for the current-facts test, saved
                return {s: list(sessions.members[s]) for s in dict.fromkeys(session_ids) if s in sessions.members}
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
        # BM25 in process over the user's cached terms (storage/term_index.py), the filter as a row
        # mask: FTS5's bm25() took some 2 µs for every row sharing a word with the query (a third
        # of a search at 10,000 memories). Same hits, order and scores; FTS5 answers the rest.
        index = self._search_terms(user_id)
        if index is not None and context_weight == index.context_weight:
            allowed = index.rows_of(self._filtered_ids(user_id, filters)) if filters.narrows else index.current()
            best = index.best_among(
                self._conn().terms.phrases(query), partial(self._fts_totals, "memories_fts", user_id), allowed,
                limit=limit,
            )
            if best is not None:
                return [ScoredId(memory_id, score) for memory_id, score in best]
        return self._fts5_text_search(user_id, query, filters, limit, context_weight=context_weight)

    def _search_terms(self, user_id: str) -> TermIndex | None:
        """The user's term index for a search (``_for_search``). Inside a write: the write's own
        view, loaded at once (``_term_index``), as the dedup lookups of a batch need it."""
        if self._write_owner == threading.get_ident():
            index = self._term_index(user_id)
            if index is not None:
                self._first_session_index(user_id)
            return index
        return self._for_search(self._terms, self._term_index, user_id, partial(self._term_index, whole=False))

    def _first_session_index(self, user_id: str) -> None:
        """Inside a write, before its first change of the user: their session index, when it was
        never loaded in this process. Writes load the term index (their lookups need it) and keep
        both current, so every search after is ranked in process; a user who searches now and
        then (most users of a store of many) was otherwise ranked by FTS5 until their
        ``index_after_searches``-th search: 1.65 times the search time of one user alone."""
        key = (self._session_index.__name__, user_id)
        if user_id in self._bumped:  # the transaction's own changes are not in the rows yet
            return
        with self._term_loads_lock:
            if key in self._term_loads_after or key in self._term_loads:  # loaded before, or loading
                return
        self._timed_load(self._session_index, user_id)

    def _for_search(
        self, cache: VersionedCache[_Loaded], load: Callable[[str], _Loaded | None], user_id: str,
        catch_up: Callable[[str], _Loaded | None] | None = None,
    ) -> _Loaded | None:
        """The cached index when it is at the user's version, or brought to it here by ``catch_up``
        (the rows another process's write changed: 1.2 ms of CPU for vectors and terms after one
        add at 10,000 memories, against 145 ms for a whole read, so it runs inline); else None
        (FTS5 ranks this search) while the loader thread runs ``load``: no search waits for a whole
        read (0.3 s at 10,000 memories, after a restart, a deletion, an edit). A load runs again
        only after ten times its own duration, so at most a tenth of a core goes to loading.

        A load is asked for only once the user has searched ``index_after_searches`` times in this
        process: it costs about as much as forty searches save (42 ms of CPU for both indexes at
        1,000 memories), so a user who searches a few times is better served by FTS5 — a hundred
        such users each asking for loads made every search 2.8 times slower."""
        with self._one_snapshot():  # the version catch_up reads too
            version = self.user_version(user_id)
            if not version:  # no row (erased): nothing of the user is kept
                cache.drop(user_id)
                return None
            cached = cache.current(user_id, version)
            if cached is None and catch_up is not None and cache.get(user_id) is not None:
                cached = catch_up(user_id)
        if cached is None and ((held := cache.version_of(user_id)) is None or held < version):
            # Behind, or dropped: a load. An entry past this snapshot (another thread caught it up
            # to a later one) needs none.
            key = (load.__name__, user_id)
            with self._term_loads_lock:
                if len(self._searches) >= SEARCH_COUNTS_HELD:
                    self._searches.clear()  # counting starts over: bounded memory for any number of users
                searched = self._searches[key] = self._searches.get(key, 0) + 1
                if searched >= self._index_after_searches and key not in self._term_loads \
                        and time.monotonic() >= self._term_loads_after.get(key, 0.0):
                    self._term_loads[key] = self._term_loader.submit(self._load_for_search, load, key)
        return cached

    def _load_for_search(self, load: Callable[[str], Versioned | None], key: tuple[str, str]) -> None:
        try:
            self._timed_load(load, key[1])
        finally:
            with self._term_loads_lock:
                del self._term_loads[key]

    def _timed_load(self, load: Callable[[str], Versioned | None], user_id: str) -> None:
        """``load`` the user's index; it may run again after ten times its duration."""
        started = time.monotonic()
        try:
            load(user_id)
        finally:
            finished = time.monotonic()
            with self._term_loads_lock:
                self._term_loads_after[load.__name__, user_id] = finished + 10 * (finished - started)

    def _filtered_ids(self, user_id: str, filters: MemoryFilters) -> list[str]:
        where, params = self._where(user_id, filters)
        return [r[0] for r in self._rows(f"SELECT id FROM memories WHERE {where}", params)]

    def _fts_totals(self, table: str, user_id: str, phrase: Sequence[str]) -> Totals:
        """The full-text ``table``'s totals as FTS5's BM25 reads them (this transaction's rows
        included), through a ``phrase`` some row of the user holds. Inside a write, the memories'
        totals are read once and then follow its inserts (``_memory_totals``)."""
        in_write = table == "memories_fts" and self._write_owner == threading.get_ident()
        if in_write and self._memory_totals is not None:
            return self._memory_totals
        conn = self._conn()
        if conn.in_snapshot and (cached := conn.totals.get(table)) is not None:
            return cached  # every user's rows: the same for every search until a commit
        # Outside a write, what committed; inside one, FTS5's pending rows count too (only its API
        # has them) once it has changed a row: a single add's lookups run before its first change.
        unchanged = self._write_owner != threading.get_ident() or conn.total_changes() == self._changes_at_begin
        totals = self._committed_totals(table) if unchanged else None
        if totals is None:
            row = self._rows(
                f"SELECT fts_rows({table}), fts_tokens({table}) FROM {table} WHERE {table} MATCH ? LIMIT 1",
                ('"' + " ".join(user_key(user_id) + stem for stem in phrase) + '"',),
            )
            if not row:
                return Totals(0, 0)
            totals = Totals(*row[0])
            if in_write:
                self._memory_totals = totals
        if conn.in_snapshot:
            conn.totals[table] = totals
        return totals

    def _committed_totals(self, table: str) -> Totals | None:
        """The full-text ``table``'s committed totals from FTS5's averages record (row 1 of its
        ``_data`` table: the row count, then each column's tokens, as varints), which every commit
        writes: a read of one row, where the query through a phrase cost 70 to 100 µs, and every
        commit of any writer sends each search to it again. None when the table's data format is
        one whose record this does not know (the query answers)."""
        known = self._averages_known.get(table)
        if known is None:
            version = self._rows(f"SELECT v FROM {table}_config WHERE k = 'version'")
            known = self._averages_known[table] = (int(version[0][0]) if version else 4) in AVERAGES_FORMATS
        if not known:
            return None
        record = self._rows(f"SELECT block FROM {table}_data WHERE id = 1")
        if not record:
            return Totals(0, 0)
        rows, *tokens = fts5_varints(record[0][0])
        return Totals(rows, sum(tokens))

    def _fts5_text_search(
        self, user_id: str, query: str, filters: MemoryFilters, limit: int, *, context_weight: float
    ) -> list[ScoredId]:
        """``text_search`` ranked by FTS5's bm25()."""
        match = self._conn().terms.match(user_key(user_id), query)
        if match is None:
            return []
        if not filters.narrows:
            # The common case, current facts only: rank inside the index (an order of magnitude
            # faster than ranking through a join), then drop the few rows that are no longer current
            # (their id comes back NULL; the left join keeps the ranked order and count).
            fetch = limit * 2 + 10
            ranked = self._rows(
                "SELECT best.rank, m.id FROM (SELECT rowid, bm25(memories_fts, 1.0, ?) AS rank FROM memories_fts "
                "WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?) AS best "
                "LEFT JOIN memories m ON m.rowid = best.rowid AND +m.user_id = ? "
                "AND m.expired_at IS NULL AND m.invalid_at IS NULL",
                (context_weight, match, fetch, user_id),
            )
            hits = [ScoredId(memory_id, -rank) for rank, memory_id in ranked if memory_id is not None]
            if len(hits) >= limit or len(ranked) < fetch:
                return hits[:limit]
            # Mostly past versions (one slot corrected many times): widening the window again and
            # again ranked every version several times per call, so filter through the join once.
        where, params = self._where(user_id, filters, alias="m.")
        rows = self._rows(
            f"""SELECT m.id, bm25(memories_fts, 1.0, ?) AS rank
                FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid
                WHERE memories_fts MATCH ? AND {where}
                ORDER BY rank LIMIT ?""",
            [context_weight, match, *params, limit],
        )
        return [ScoredId(memory_id, -rank) for memory_id, rank in rows]

    def _cached_or_loaded(
        self, user_id: str, cache: VersionedCache[_Loaded], columns: str,
        build: Callable[[int, list[tuple[Any, ...]]], _Loaded | None] | None,
        apply: Callable[[_Loaded, list[tuple[Any, ...]]], bool], reads: CacheReads,
    ) -> _Loaded | None:
        """``cache``'s entry for the user brought to their version: as it is when it is at it;
        caught up by ``apply`` (the entry, the ``columns`` of the rows changed since its version,
        in rowid order; it reads what else it needs in the same snapshot) when that can tell; else
        the one ``build`` makes of the version and all the rows' ``columns``. Versions and rows are
        read in one snapshot. None for a user without rows, or (no ``build``) when only a whole
        read can tell or more than ``CATCH_UP_INLINE_ROWS`` rows changed. Inside a write the view
        may hold rows that never commit: a rollback drops the entry (caching it, a batch for a new
        user no longer reloads per memory)."""
        in_write = self._write_owner == threading.get_ident()
        if in_write and user_id in self._bumped:  # this transaction set the version: no read
            cached = cache.current(user_id, self._bumped[user_id])
            if cached is not None:
                return cached
        with self._one_snapshot():
            version = self.user_version(user_id)
            if not version:  # no row: versions start at 1
                cache.drop(user_id)
                return None
            entry = cache.get(user_id)
            if entry is not None and entry.version == version:
                return entry
            if entry is not None and entry.version < version:
                with cache.catching_up(user_id):
                    # Another thread (the loader, a search, the watcher) may have caught it up
                    # meanwhile, all or part of the way or past this snapshot: from where it is now.
                    latest = cache.get(user_id)
                    if latest is not None and latest.version == version:
                        return latest
                    if latest is not None and latest.version < version:
                        entry, since = latest, latest.version
                        changed = self._changed_since(user_id, columns, since, None if build is not None else CATCH_UP_INLINE_ROWS)
                        if changed is None:  # too many for a search to wait for
                            return None
                        reads.rows += len(changed)
                        if cache.catch_up(user_id, entry, since, version, lambda held: apply(held, changed)):
                            reads.catch_ups += 1
                            return entry
                moved = cache.current(user_id, version)
                if moved is not None:  # brought to it meanwhile by another way (this process's write)
                    return moved
            held = cache.version_of(user_id)
            if held is not None and held > version:
                # Another thread caught the entry up past this snapshot; it is as it should be.
                conn = self._conn()
                if not conn.in_snapshot and (newer := cache.get(user_id)) is not None:
                    return newer  # a read on its own (the loader's): the newer entry serves it as well
                if build is None:
                    return None  # FTS5 answers this search
                if conn.renewable:  # the search runs again, rather than read the user whole
                    raise StaleSnapshot(f"a search snapshot at version {version} of a user the cache holds at {held}")
            if build is None:
                if entry is not None:
                    # Dropped by the cache: the loader thread frees it, not this search (an index is
                    # tens of thousands of objects, 2 ms at 10,000 memories). This frame lets go first.
                    self._term_loader.submit(_free, entry)
                return None
            rows = self._rows(f"SELECT {columns} FROM memories WHERE user_id = ? ORDER BY rowid", (user_id,))
            reads.rows += len(rows)
            reads.reloads += 1
        loaded = build(version, rows)
        if loaded is None:
            cache.drop(user_id)
        else:
            cache.put(user_id, loaded)
        return loaded

    @contextmanager
    def _one_snapshot(self) -> Iterator[None]:
        """The reads inside in one snapshot: the open write's or search snapshot's when the thread
        is in one (or an enclosing ``_one_snapshot``'s), else a read transaction of their own."""
        if self._write_owner == threading.get_ident() or not self._conn().getautocommit():
            yield
            return
        self._exec("BEGIN")
        try:
            yield
        finally:
            self._exec("COMMIT")

    def _changed_since(
        self, user_id: str, columns: str, since: int, at_most: int | None = None
    ) -> list[tuple[Any, ...]] | None:
        """``columns`` of the user's rows changed since version ``since``, in rowid order; None,
        reading no row, when more than ``at_most`` changed. Read in the caller's snapshot."""
        if at_most is not None:
            # counted on the user's changed_version index: the rows themselves (sorted by rowid
            # below, so a LIMIT there would still read them all) are never read
            (over,) = self._rows(
                "SELECT count(*) > ? FROM (SELECT 1 FROM memories WHERE user_id = ? AND changed_version > ? LIMIT ?)",
                (at_most, user_id, since, at_most + 1),
            )[0]
            if over:
                return None
        return self._rows(
            f"SELECT {columns} FROM memories WHERE user_id = ? AND changed_version > ? ORDER BY rowid", (user_id, since)
        )

    def _rows_besides(self, user_id: str, changed: Sequence[object]) -> int:
        """How many of the user's rows are not among ``changed`` (``_changed_since``'s), in the
        caller's snapshot: what tells a cache that rows went away."""
        # counted on the user's created_at index: its entries are small, no row is read
        return int(self._rows("SELECT count(*) FROM memories WHERE user_id = ?", (user_id,))[0][0]) - len(changed)

    def _user_vectors(self, user_id: str) -> UserVectors | None:
        """The user's embeddings: the cached entry when it is at the user's version, else caught up
        by the changed rows, else read whole. Writes in this process keep the entry current
        (``_bump``): it catches up after another process wrote, and is read whole on first use and
        after a rollback or a deletion by another process."""
        def apply(entry: UserVectors, rows: list[tuple[Any, ...]]) -> bool:
            changed = _changed_vectors(rows)
            unchanged = self._rows_besides(user_id, rows)
            present = self._present_rowids(
                user_id, (entry.rows, entry.last_rowid, entry.index.__contains__), unchanged, changed, self.cache_reads["vectors"]
            )
            return entry.apply(unchanged, changed, present)

        return self._cached_or_loaded(
            user_id, self._vectors, "rowid, id, embedding, expired_at IS NULL AND invalid_at IS NULL",
            _user_vectors_of, apply, self.cache_reads["vectors"],
        )

    def _present_rowids(
        self, user_id: str, entry: tuple[int, int, Callable[[str], bool]], unchanged: int,
        changed: Sequence[tuple[Any, ...]], reads: CacheReads,
    ) -> np.ndarray | None:
        """When rows of a cached entry went away (the user's rows are fewer than the entry's and
        the new ones), the rowids of all the user's rows, sorted, read in the caller's snapshot:
        what tells the entry's ``apply`` which went away. ``entry``: the rows it holds, the last
        rowid it holds, and whether it holds a memory id; ``changed`` rows start (rowid, memory
        id). None when none went away, or when a changed row holds a rowid the entry had for
        another row: SQLite gives a deleted last rowid to the next row, which the rowids left
        cannot tell (the count fails then, and the entry is read whole)."""
        rows, last_rowid, holds = entry
        new = sum(1 for row in changed if row[0] > last_rowid)
        if unchanged + len(changed) >= rows + new:
            return None
        if any(row[0] <= last_rowid and not holds(row[1]) for row in changed):
            return None
        # One string sorted here: a row a rowid and SQLite's sort for ORDER BY took 3.1 ms at 10,000 rows, this 0.47.
        ((joined,),) = self._rows("SELECT group_concat(rowid) FROM memories WHERE user_id = ?", (user_id,))
        present = np.sort(np.fromstring(joined or "", dtype=np.int64, sep=","))
        reads.rowids += len(present)
        return present

    def vector_search(
        self, user_id: str, vector: np.ndarray, filters: MemoryFilters, limit: int
    ) -> list[ScoredId]:
        entry = self._user_vectors(user_id)
        if entry is None or entry.dim != len(vector):
            return []
        if not filters.narrows:
            return entry.nearest(vector, limit)
        where, params = self._where(user_id, filters)
        return entry.nearest(vector, limit, allowed=(r[0] for r in self._rows(f"SELECT rowid FROM memories WHERE {where}", params)))

    def vector_searches(self, user_id: str, vectors: np.ndarray, limit: int) -> Callable[[int], list[ScoredId]]:
        return screened_searches(lambda: self._user_vectors(user_id), vectors, limit)

    # -- the term index (text_search, and through it the dedup lookup of every write) ------------
    def _term_index(self, user_id: str, *, whole: bool = True) -> TermIndex | None:
        """The user's term index: the cached one when it is at the user's version, else caught up by
        the changed rows (``TermIndex.apply``), else (``whole``) read whole."""
        stems = self._conn().terms.stems

        def stemmed_rows(rows: list[tuple[Any, ...]]) -> list[tuple[int, str, list[str], list[str], bool]]:
            stemmed: dict[str, list[str]] = {}  # a row's context is mostly the text before it: stem each once

            def terms(text: str | None) -> list[str]:
                if not text:
                    return []
                found = stemmed.get(text)
                if found is None:
                    found = stemmed[text] = stems(text)
                return found

            return [(rowid, i, terms(t), terms(c), bool(cur)) for rowid, i, t, c, cur in rows]

        def build(version: int, rows: list[tuple[Any, ...]]) -> TermIndex:
            return TermIndex.load(
                version, [row[1:] for row in stemmed_rows(rows)], context_weight=CONTEXT_WEIGHT,
                rowids=[row[0] for row in rows],
            )

        def apply(index: TermIndex, rows: list[tuple[Any, ...]]) -> bool:
            unchanged = self._rows_besides(user_id, rows)
            present = self._present_rowids(
                user_id, (index.rows_held, index.last_rowid, index.__contains__), unchanged, rows,
                self.cache_reads["text"],
            )
            return index.apply(unchanged, stemmed_rows(rows), present)

        return self._cached_or_loaded(
            user_id, self._terms, "rowid, id, text, context, expired_at IS NULL AND invalid_at IS NULL",
            build if whole else None, apply, self.cache_reads["text"],
        )

    # -- history ---------------------------------------------------------------------------------
    def record_event(self, user_id: str, memory_id: str, event: str, at: float, detail: dict[str, Any]) -> None:
        with self.write():
            self._defer(_INSERT_EVENT, (user_id, memory_id, event, at, json.dumps(detail)))

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

    def entity_aliases(self, user_id: str) -> list[tuple[str, str]]:
        # BINARY collation: UTF-8 bytes in order, which is code point order. The plan walks the
        # entities' (user_id, canonical) index and each one's aliases by key: no sort.
        return cast(list[tuple[str, str]], self._rows(
            "SELECT a.alias, e.canonical FROM entity_aliases a JOIN entities e ON e.id = a.entity_id WHERE e.user_id = ? "
            "ORDER BY e.canonical, a.alias",
            (user_id,),
        ))

    # -- fading and communities ------------------------------------------------------------------
    def record_recalls(self, user_id: str, memory_ids: Sequence[str], at: float) -> None:
        if not memory_ids:
            return
        with self.write(user_id):
            self._exec(
                "INSERT INTO memory_recalls(user_id, memory_id, at) "
                "SELECT ?, m.id, ? FROM memories m WHERE m.id IN (SELECT value FROM json_each(?)) AND +m.user_id = ? "
                "ON CONFLICT(user_id, memory_id) DO UPDATE SET at = max(at, excluded.at)",
                (user_id, at, json.dumps(list(memory_ids)), user_id),
            )

    def last_seen(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, float]:
        rows = self._rows(
            "SELECT m.id, max(m.created_at, COALESCE(m.updated_at, 0), COALESCE(r.at, 0)) FROM memories m "
            "LEFT JOIN memory_recalls r ON r.user_id = m.user_id AND r.memory_id = m.id "
            "WHERE m.id IN (SELECT value FROM json_each(?)) AND +m.user_id = ?",
            (json.dumps(list(memory_ids)), user_id),
        )
        return {memory_id: float(seen) for memory_id, seen in rows}

    def entity_links(self, user_id: str) -> list[tuple[str, str]]:
        rows = self._rows(
            "SELECT m.id, e.canonical FROM memories m JOIN memory_entities me ON me.memory_id = m.id "
            "JOIN entities e ON e.id = me.entity_id AND e.user_id = m.user_id "
            "WHERE m.user_id = ? AND m.expired_at IS NULL AND m.invalid_at IS NULL ORDER BY m.created_at, m.rowid, e.canonical",
            (user_id,),
        )
        return [(memory_id, canonical) for memory_id, canonical in rows]

    # -- jobs ------------------------------------------------------------------------------------
    def enqueue_job(self, kind: str, user_id: str, memory_id: str | None, payload: dict[str, Any]) -> None:
        now = time.time()
        with self.write():
            self._defer(_INSERT_JOB, (kind, user_id, memory_id, json.dumps(payload), now, now))

    def claim_jobs(self, now: float, limit: int) -> list[Job]:
        with self.write():
            self._requeue_orphans()  # a job of a process that died is due again, as PostgreSQL's replicas take it over
            first = self._rows(
                "SELECT kind, user_id FROM jobs WHERE status = 'queued' AND run_after <= ? ORDER BY run_after, id LIMIT 1",
                (now,),
            )
            if not first:
                return []
            kind, user_id = first[0]
            # The oldest due job is the first of its kind and user in queue order, so it is among them.
            rows = self._rows(
                "UPDATE jobs SET status = 'running', attempts = attempts + 1, claimed_by = ? WHERE id IN ("
                "SELECT id FROM jobs WHERE status = 'queued' AND run_after <= ? AND user_id = ? AND kind = ? "
                "ORDER BY run_after, id LIMIT ?) RETURNING id, kind, user_id, memory_id, payload, attempts, run_after",
                (self._claimer.name, now, user_id, kind, limit),
            )
        rows.sort(key=lambda row: (row[6], row[0]))  # RETURNING keeps no order
        return [Job(job_id, kind, user_id, memory_id, json.loads(payload), attempts) for job_id, kind, user_id, memory_id, payload, attempts, _ in rows]

    def requeue_running_jobs(self) -> int:
        """Jobs claimed by a process that is gone go back to the queue, and this storage's own (its
        worker calls this as it starts: nothing it claimed before is running); a live process's stay its own."""
        with self.write():
            return self._requeue_orphans(own=True)

    def _requeue_orphans(self, own: bool = False) -> int:
        """Inside a write: queue again the running jobs whose claimer is gone (storage/sqlite_claims.py),
        and with ``own`` those of this storage."""
        claimers = [c for (c,) in self._rows("SELECT DISTINCT claimed_by FROM jobs WHERE status = 'running'")]
        gone = [c for c in claimers if (own and c == self._claimer.name) or not self._claimer.alive(c)]
        if not gone:
            return 0
        # IS, not =: a job claimed before claimers were recorded has none
        where = "status = 'running' AND (" + " OR ".join(["claimed_by IS ?"] * len(gone)) + ")"
        return len(self._rows("UPDATE jobs SET status = 'queued', claimed_by = NULL WHERE " + where + " RETURNING id", gone))

    def holds_background_duty(self) -> bool:
        return self._claimer.holds_duty(BACKGROUND_DUTY)

    def finish_jobs(self, job_ids: Sequence[int]) -> None:
        with self.write():
            self._exec("DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(list(job_ids)),))

    def fail_job(self, job_id: int, error: str, retry_at: float | None) -> None:
        with self.write():
            if retry_at is None:
                self._exec("UPDATE jobs SET status = 'failed', last_error = ?, claimed_by = NULL WHERE id = ?", (error, job_id))
            else:
                self._exec(
                    "UPDATE jobs SET status = 'queued', last_error = ?, run_after = ?, claimed_by = NULL WHERE id = ?",
                    (error, retry_at, job_id),
                )

    def pending_jobs(self) -> int:
        return int(self._rows("SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')")[0][0])

    def job_groups(self) -> list[JobGroup]:
        rows = self._rows("SELECT kind, status, count(*), min(created_at) FROM jobs GROUP BY kind, status ORDER BY kind, status")
        return [JobGroup(kind, status, int(count), float(oldest)) for kind, status, count, oldest in rows]

    # -- curation --------------------------------------------------------------------------------
    def put_entities(self, user_id: str, entities: Sequence[StoredEntity]) -> None:
        with self.write():
            for entity in entities:
                entity_id = self._rows(
                    "INSERT INTO entities(user_id, canonical, kind) VALUES (?, ?, ?) "
                    "ON CONFLICT(user_id, canonical) DO UPDATE SET kind = excluded.kind RETURNING id",
                    (user_id, entity.canonical, entity.kind),
                )[0][0]
                self._exec("DELETE FROM entity_aliases WHERE entity_id = ?", (entity_id,))
                self._exec("DELETE FROM memory_entities WHERE entity_id = ?", (entity_id,))
                for alias in entity.aliases:
                    self._exec("INSERT INTO entity_aliases(entity_id, alias) VALUES (?, ?)", (entity_id, alias))
                for memory_id in entity.memory_ids:
                    self._exec("INSERT INTO memory_entities(memory_id, entity_id) VALUES (?, ?)", (memory_id, entity_id))

    def save_reconcile_run(self, run: ReconcileRun) -> None:
        self._upsert_owned("reconcile_runs", row_values(run, RUN_COLUMNS, RUN_JSON, json.dumps))

    def reconcile_runs(self, user_id: str, *, run_id: str | None = None, active: bool = False, limit: int = 1) -> list[ReconcileRun]:
        where = "user_id = :user" + (" AND id = :id" if run_id is not None else "") + (
            " AND status IN ('queued', 'running')" if active else "")
        rows = self._rows(
            f"SELECT {', '.join(RUN_COLUMNS.values())} FROM reconcile_runs WHERE {where} "
            "ORDER BY created_at DESC, rowid DESC LIMIT :limit",
            {"user": user_id, "id": run_id, "limit": limit},
        )
        return [from_row(ReconcileRun, row, RUN_COLUMNS, RUN_JSON, json.loads) for row in rows]

    def save_suggestion(self, suggestion: Suggestion) -> None:
        self._upsert_owned("reconcile_suggestions", row_values(suggestion, SUGGESTION_COLUMNS, SUGGESTION_JSON, json.dumps))

    def _upsert_owned(self, table: str, values: dict[str, Any]) -> None:
        """Insert the row, or update the one with its id — only while it belongs to the same user."""
        with self.write():
            self._exec(
                f"INSERT INTO {table}({', '.join(values)}) VALUES ({', '.join(':' + c for c in values)}) "
                "ON CONFLICT(id) DO UPDATE SET " + ", ".join(f"{c} = excluded.{c}" for c in values if c != "id")
                + f" WHERE {table}.user_id = excluded.user_id",
                values,
            )

    def suggestions(
        self, user_id: str, *, status: str | None = None, ids: Sequence[str] = (), keys: Sequence[str] = (),
        offset: int = 0, limit: int = 100,
    ) -> tuple[list[Suggestion], int]:
        where = "user_id = :user" + (" AND status = :status" if status else "") + (
            " AND id IN (SELECT value FROM json_each(:ids))" if ids else "") + (
            " AND key IN (SELECT value FROM json_each(:keys))" if keys else "")
        params = {"user": user_id, "status": status, "ids": json.dumps(list(ids)), "keys": json.dumps(list(keys))}
        total = int(self._rows(f"SELECT count(*) FROM reconcile_suggestions WHERE {where}", params)[0][0])
        rows = self._rows(
            f"SELECT {', '.join(SUGGESTION_COLUMNS.values())} FROM reconcile_suggestions WHERE {where} "
            "ORDER BY created_at DESC, rowid DESC LIMIT :limit OFFSET :offset",
            {**params, "limit": limit, "offset": offset},
        )
        return [from_row(Suggestion, row, SUGGESTION_COLUMNS, SUGGESTION_JSON, json.loads) for row in rows], total

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
                    "UPDATE memories SET embedding = ?, changed_version = ? WHERE user_id = ? AND id = ? RETURNING rowid",
                    (np.asarray(vector, dtype=np.float32).tobytes(), self._version(user_id), user_id, memory_id),
                )
                reached = max([reached, *(r[0] for r in updated)])
                users.add(user_id)
            through = self._meta(REINDEX_THROUGH)
            if through is not None and reached > int(through):
                self._set_meta(REINDEX_THROUGH, str(reached))
            for user_id in users:
                self._bump(user_id, sessions=_no_change)

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

    # -- transfer --------------------------------------------------------------------------------
    def transfer_users(self) -> list[str]:
        return [r[0] for r in self._rows(TRANSFER_USERS)]

    def user_row_counts(self, user_id: str) -> dict[str, int]:
        # memory_entities and entity_aliases carry no user_id: reached through their entity.
        row = self._rows(
            """SELECT (SELECT count(*) FROM memories WHERE user_id = :u),
                      (SELECT count(*) FROM memory_events WHERE user_id = :u),
                      (SELECT count(*) FROM entities WHERE user_id = :u),
                      (SELECT count(*) FROM entity_aliases a JOIN entities e ON e.id = a.entity_id WHERE e.user_id = :u),
                      (SELECT count(*) FROM memory_entities me JOIN entities e ON e.id = me.entity_id WHERE e.user_id = :u),
                      (SELECT count(*) FROM session_docs WHERE user_id = :u),
                      (SELECT count(*) FROM jobs WHERE user_id = :u),
                      (SELECT count(*) FROM reconcile_runs WHERE user_id = :u),
                      (SELECT count(*) FROM reconcile_suggestions WHERE user_id = :u),
                      (SELECT count(*) FROM memory_recalls WHERE user_id = :u)""",
            {"u": user_id},
        )[0]
        return dict(zip(TRANSFER_KINDS, map(int, row), strict=True))

    def dump_memories(self, user_id: str, after: int, limit: int) -> list[StoredMemory]:
        rows = self._rows(
            SELECT_MEMORY.replace(" FROM memories", ", context, embedding, rowid FROM memories")
            + " WHERE user_id = ? AND rowid > ? ORDER BY rowid LIMIT ?",
            (user_id, after, limit),
        )
        width = len(MEMORY_COLUMNS)
        return [StoredMemory(self._record(r[:width]), r[width], r[width + 1], r[width + 2]) for r in rows]

    def dump_history(self, user_id: str, after: int, limit: int) -> list[tuple[int, HistoryEntry]]:
        rows = self._rows(
            "SELECT id, memory_id, event, at, detail FROM memory_events WHERE user_id = ? AND id > ? ORDER BY id LIMIT ?",
            (user_id, after, limit),
        )
        return [(key, HistoryEntry(m, e, at, json.loads(d))) for key, m, e, at, d in rows]

    def dump_entities(self, user_id: str) -> list[StoredEntity]:
        entities = self._rows("SELECT id, canonical, kind FROM entities WHERE user_id = ? ORDER BY id", (user_id,))
        aliases: dict[int, list[str]] = {}
        for entity_id, alias in self._rows(
            "SELECT a.entity_id, a.alias FROM entity_aliases a JOIN entities e ON e.id = a.entity_id "
            "WHERE e.user_id = ? ORDER BY a.entity_id, a.alias",
            (user_id,),
        ):
            aliases.setdefault(entity_id, []).append(alias)
        mentions: dict[int, list[str]] = {}
        for entity_id, memory_id in self._rows(
            "SELECT me.entity_id, me.memory_id FROM memory_entities me JOIN entities e ON e.id = me.entity_id "
            "WHERE e.user_id = ? ORDER BY me.entity_id, me.memory_id",
            (user_id,),
        ):
            mentions.setdefault(entity_id, []).append(memory_id)
        return [
            StoredEntity(canonical, kind, tuple(aliases.get(key, ())), tuple(mentions.get(key, ())))
            for key, canonical, kind in entities
        ]

    def dump_sessions(self, user_id: str) -> list[tuple[str, str]]:
        rows = self._rows("SELECT session_id, text FROM session_docs WHERE user_id = ? ORDER BY session_id", (user_id,))
        return [(session_id, text) for session_id, text in rows]

    def dump_jobs(self, user_id: str) -> list[StoredJob]:
        rows = self._rows(
            "SELECT kind, memory_id, payload, CASE status WHEN 'running' THEN 'queued' ELSE status END, attempts, "
            "run_after, last_error, created_at FROM jobs WHERE user_id = ? ORDER BY id",
            (user_id,),
        )
        return [StoredJob(k, m, json.loads(p), s, a, r, e, c) for k, m, p, s, a, r, e, c in rows]

    def dump_reconcile_runs(self, user_id: str) -> list[ReconcileRun]:
        rows = self._rows(
            f"SELECT {', '.join(RUN_COLUMNS.values())} FROM reconcile_runs WHERE user_id = ? ORDER BY created_at, id", (user_id,)
        )
        return [from_row(ReconcileRun, row, RUN_COLUMNS, RUN_JSON, json.loads) for row in rows]

    def dump_suggestions(self, user_id: str) -> list[Suggestion]:
        rows = self._rows(
            f"SELECT {', '.join(SUGGESTION_COLUMNS.values())} FROM reconcile_suggestions WHERE user_id = ? ORDER BY created_at, id",
            (user_id,),
        )
        return [from_row(Suggestion, row, SUGGESTION_COLUMNS, SUGGESTION_JSON, json.loads) for row in rows]

    def dump_recalls(self, user_id: str) -> list[tuple[str, float]]:
        rows = self._rows("SELECT memory_id, at FROM memory_recalls WHERE user_id = ? ORDER BY memory_id", (user_id,))
        return [(memory_id, float(at)) for memory_id, at in rows]

    def _insert_many(self, sql: str, rows: Sequence[Sequence[Any] | Mapping[str, Any]]) -> None:
        self._may_change(sql)
        conn = self._conn()
        conn.deadline = time.monotonic() + self._query_timeout
        try:
            with self._translate():
                conn.executemany(sql, rows)
        finally:
            conn.deadline = float("inf")

    def load_memories(self, user_id: str, memories: Sequence[StoredMemory]) -> None:
        names = [*MEMORY_COLUMNS, "user_key", "context", "embedding", "changed_version"]
        key = user_key(user_id)
        rows = []
        for stored in memories:
            if stored.record.user_id != user_id:
                raise ValueError(f"memory {stored.record.id} belongs to {stored.record.user_id!r}, not {user_id!r}")
            values = [getattr(stored.record, name) for name in MEMORY_COLUMNS]
            rows.append([json.dumps(v) if n in JSON_COLUMNS else v for n, v in zip(MEMORY_COLUMNS, values, strict=True)]
                        + [key, stored.context, stored.embedding])
        with self.write(user_id):
            version = self._version(user_id)
            for row in rows:
                row.append(version)
            self._insert_many(f"INSERT INTO memories({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", rows)
            self._exec(
                "INSERT INTO memories_fts(rowid, text, context) SELECT rowid, user_terms(user_key, text), "
                "user_terms(user_key, context) FROM memories WHERE id IN (SELECT value FROM json_each(?))",
                (json.dumps([stored.record.id for stored in memories]),),
            )
            self._bump(user_id)

    def load_history(self, user_id: str, events: Sequence[HistoryEntry]) -> None:
        with self.write(user_id):
            self._insert_many(
                "INSERT INTO memory_events(user_id, memory_id, event, at, detail) VALUES (?, ?, ?, ?, ?)",
                [(user_id, e.memory_id, e.event, e.at, json.dumps(e.detail)) for e in events],
            )

    def load_entities(self, user_id: str, entities: Sequence[StoredEntity]) -> None:
        with self.write(user_id):
            for entity in entities:
                entity_id = self._rows(
                    "INSERT INTO entities(user_id, canonical, kind) VALUES (?, ?, ?) RETURNING id",
                    (user_id, entity.canonical, entity.kind),
                )[0][0]
                self._insert_many(
                    "INSERT INTO entity_aliases(entity_id, alias) VALUES (?, ?)", [(entity_id, a) for a in entity.aliases]
                )
                self._insert_many(
                    "INSERT INTO memory_entities(memory_id, entity_id) VALUES (?, ?)",
                    [(m, entity_id) for m in entity.memory_ids],
                )

    def load_sessions(self, user_id: str, documents: Sequence[tuple[str, str]]) -> None:
        with self.write(user_id):
            version = self._version(user_id)
            self._insert_many(
                "INSERT INTO session_docs(user_id, session_id, user_key, text, changed_version, rebuilt_version) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(user_id, session_id, user_key(user_id), text, version, version) for session_id, text in documents],
            )
            # A new version: a session index cached before the import is left behind (vectors and terms are not).
            self._bump(user_id, _no_change, _no_change)

    def load_jobs(self, user_id: str, jobs: Sequence[StoredJob]) -> None:
        with self.write(user_id):
            self._insert_many(
                "INSERT INTO jobs(kind, user_id, memory_id, payload, status, attempts, run_after, last_error, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(j.kind, user_id, j.memory_id, json.dumps(j.payload), j.status, j.attempts, j.run_after, j.last_error,
                  j.created_at) for j in jobs],
            )

    def load_reconcile_runs(self, user_id: str, runs: Sequence[ReconcileRun]) -> None:
        self._load_records(user_id, "reconcile_runs", owned_rows(user_id, runs, RUN_COLUMNS, RUN_JSON, json.dumps))

    def load_suggestions(self, user_id: str, suggestions: Sequence[Suggestion]) -> None:
        self._load_records(
            user_id, "reconcile_suggestions", owned_rows(user_id, suggestions, SUGGESTION_COLUMNS, SUGGESTION_JSON, json.dumps)
        )

    def _load_records(self, user_id: str, table: str, rows: Sequence[dict[str, Any]]) -> None:
        if not rows:
            return
        columns = list(rows[0])
        with self.write(user_id):
            self._insert_many(f"INSERT INTO {table}({', '.join(columns)}) VALUES ({', '.join(':' + c for c in columns)})", rows)

    def load_recalls(self, user_id: str, recalls: Sequence[tuple[str, float]]) -> None:
        with self.write(user_id):
            self._insert_many(
                "INSERT INTO memory_recalls(user_id, memory_id, at) VALUES (?, ?, ?)", [(user_id, m, at) for m, at in recalls]
            )

    def transfer_checkpoints(self, source: str) -> set[str]:
        prefix = transfer_checkpoint_key(source, "")
        rows = self._rows("SELECT substr(key, ?) FROM meta WHERE substr(key, 1, ?) = ?", (len(prefix) + 1, len(prefix), prefix))
        return {r[0] for r in rows}

    def set_transfer_checkpoint(self, source: str, user_id: str | None) -> None:
        with self.write():
            if user_id is None:
                prefix = transfer_checkpoint_key(source, "")
                self._exec("DELETE FROM meta WHERE substr(key, 1, ?) = ?", (len(prefix), prefix))
            else:
                self._set_meta(transfer_checkpoint_key(source, user_id), "loaded")

    def file_size(self) -> int:
        """Bytes on disk: the database file plus its WAL."""
        return sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
