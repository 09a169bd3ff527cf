"""The storage seam: records, filters and the interface every backend implements.

Callers (the write pipeline, retrieval, the API services) only ever see ``Storage``; which backend
sits behind it is decided once, by ``open_storage`` from the settings. Every method takes the
``user_id`` it acts for, and no implementation may return a row of another user.

Times are Unix seconds as floats (UTC). Valid time is ``valid_at``/``invalid_at`` (when the fact was
true in the world); record time is ``created_at``/``expired_at`` (when we believed it).
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from cortadel_server.language.entities import EntityMention

if TYPE_CHECKING:
    from cortadel_server.storage.vector_cache import CacheReads

#: memory.state values
ACTIVE = "active"
SUPERSEDED = "superseded"
INVALIDATED = "invalidated"
RESOLVED = "resolved"

class MemoryType(str, enum.Enum):
    """episodic (a dated event), semantic (a stable fact or preference) or procedural (how to do something)."""

    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"


MEMORY_TYPES = tuple(t.value for t in MemoryType)


@dataclass
class MemoryRecord:
    """One stored fact, with both time axes and its provenance."""

    id: str
    user_id: str
    text: str
    created_at: float
    fingerprint: str = ""
    gist: str | None = None
    memory_type: str = "semantic"
    categories: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    project: str | None = None
    app_name: str | None = None
    session_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    state: str = ACTIVE
    source_turn_uuids: list[str] = field(default_factory=list)
    transcript_path: str | None = None
    extraction_status: str = "done"
    valid_at: float | None = None
    invalid_at: float | None = None
    expired_at: float | None = None
    superseded_by: str | None = None
    updated_at: float | None = None

    @property
    def is_current(self) -> bool:
        """Still believed and still true: neither expired in record time nor ended in valid time."""
        return self.expired_at is None and self.invalid_at is None


@dataclass  # not frozen: a frozen dataclass's __init__ takes 1.5 against 0.3 µs, and a search makes 30
class MemoryHead:
    """What ranking reads of a memory before the hits are known (``Storage.memory_heads``)."""

    id: str
    text: str
    session_id: str | None


@dataclass(frozen=True)
class MemoryFilters:
    """Which of a user's memories an operation sees. The default: current facts only.

    ``as_of`` (valid time) and ``known_at`` (record time) turn the filter into a point-in-time
    view; either one lifts the current-only rule for the past it asks about. ``valid_between``
    keeps the facts whose valid time (``valid_at``, else ``created_at``) lies in ``[start, end)``.
    """

    session_id: str | None = None
    memory_type: str | None = None
    app_name: str | None = None
    project: str | None = None
    tag: str | None = None
    categories: tuple[str, ...] = ()
    include_superseded: bool = False
    as_of: float | None = None
    known_at: float | None = None
    ids: tuple[str, ...] = ()
    valid_between: tuple[float, float] | None = None
    #: one memory state (``active``, ``superseded`` …); it takes the place of the current-only rule
    state: str | None = None
    #: memories left out (a ranked listing's head, when it lists the rest)
    exclude_ids: tuple[str, ...] = ()

    @property
    def current_only(self) -> bool:
        return not (self.include_superseded or self.state or self.as_of is not None or self.known_at is not None)

    @property
    def narrows(self) -> bool:
        """True when anything beyond the current-facts rule restricts the rows."""
        return bool(
            self.session_id or self.memory_type or self.app_name or self.project or self.tag
            or self.categories or self.ids or self.exclude_ids or self.valid_between or not self.current_only
        )


@dataclass  # not frozen: a frozen dataclass's __init__ takes 1.5 against 0.3 µs, and a search makes 150
class ScoredId:
    id: str
    score: float


@dataclass(frozen=True)
class HistoryEntry:
    memory_id: str
    event: str
    at: float
    detail: dict[str, Any]


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    user_id: str
    memory_id: str | None
    payload: dict[str, Any]
    attempts: int


@dataclass
class ReconcileRun:
    """One reconciliation run of a user (curation/reconcile.py): queued, running, then finished."""

    id: str
    user_id: str
    status: str
    types: list[str]
    limit: int
    created_at: float
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    #: findings made into suggestions, and how many of them were applied at once
    suggested: int = 0
    auto_approved: int = 0


@dataclass
class Suggestion:
    """A finding of reconciliation (curation/suggestions.py): what to change, why, how sure.

    ``subject`` names what it acts on (entity names, memory ids); ``evidence`` says why, quoting
    memory ids rather than their text, so deleting a memory leaves no copy of it here; ``undo``
    is what applying it changed, recorded so it can be reversed exactly.
    """

    id: str
    user_id: str
    kind: str
    key: str
    confidence: float
    subject: dict[str, Any]
    evidence: list[dict[str, Any]]
    created_at: float
    status: str = "pending"
    run_id: str | None = None
    decided_at: float | None = None
    decided_by: str | None = None
    undo: dict[str, Any] | None = None
    undone_at: float | None = None


@dataclass(frozen=True)
class UserSummary:
    """One user at a glance: memories per state and the last time any of them was written."""

    user_id: str
    states: dict[str, int]
    last_activity: float


@dataclass(frozen=True)
class JobGroup:
    """The background jobs of one kind in one status (queued, running, failed) and the oldest one's age."""

    kind: str
    status: str
    count: int
    oldest_created_at: float


@dataclass(frozen=True)
class IndexInfo:
    """What the vector index holds, for the health check and the dimension guard."""

    dim: int | None
    model: str | None
    vector_indexes: list[str]
    #: memories with no embedding at all (invisible to vector search until repaired)
    missing_embeddings: int = 0
    #: the model label an unfinished reindex is moving to, and the memories it has still to re-embed
    reindex_target: str | None = None
    reindex_remaining: int = 0


@dataclass(frozen=True)
class StoredMemory:
    """A memory as stored, for export and import: its record, the derived context the backend keeps
    for it, and its embedding (float32 bytes; None when missing). ``row_key`` is its place in write
    order (a cursor for ``dump_memories``; a load assigns new ones in the same order)."""

    record: MemoryRecord
    context: str
    embedding: bytes | None
    row_key: int = 0


@dataclass(frozen=True)
class StoredEntity:
    """An entity of one user with its aliases and the memories that mention it (both sorted)."""

    canonical: str
    kind: str
    aliases: tuple[str, ...]
    memory_ids: tuple[str, ...]


@dataclass(frozen=True)
class StoredJob:
    """A queued or failed job of one user (a running job is dumped as queued: its claimer stays behind)."""

    kind: str
    memory_id: str | None
    payload: dict[str, Any]
    status: str
    attempts: int
    run_after: float
    last_error: str | None
    created_at: float


#: the rows of one user per kind, as ``user_row_counts`` reports them
TRANSFER_KINDS = (
    "memories", "events", "entities", "aliases", "mentions", "sessions", "jobs", "reconcile_runs", "suggestions", "recalls",
)


class Storage(abc.ABC):
    """A user-namespaced memory store with full-text and vector arms, history, entities and jobs.

    The contract every backend keeps (tests/test_storage_contract.py holds each backend to it):

    **Tenancy.** Every method that reads or writes a user's data takes that ``user_id`` and filters
    every statement on it, joins included; no method returns or changes a row of another user. The
    only cross-user operations are the job queue (``claim_jobs`` and ``requeue_running_jobs`` take
    any user's job, which then names its user), the index maintenance of the vectors section and
    ``user_summaries`` (the admin's overview of every user).

    **Transactions.** ``write()`` opens one transaction; everything inside commits together when
    the block exits, or rolls back together when it raises. Writers of one user are serialised,
    across threads and across processes on the same database: a second writer that touches the
    user waits until the first commits, and then sees what it wrote, so a check-then-insert
    (deduplication, supersede) inside one ``write()`` is atomic. Inside ``write()`` every read of
    the writing thread sees the transaction's own uncommitted writes. ``write()`` is re-entrant:
    a nested call (every mutating method opens one) joins the enclosing transaction. Outside
    ``write()`` a read sees only committed data; each mutating method called alone is its own
    transaction. A backend may serialise more (SQLite: every writer), never less.

    **Caches and versions.** Every change to a user's memories (insert, update, delete,
    embeddings) moves that user's version on (``user_versions``) in the same transaction; erasing
    a user never lets a later version repeat an earlier one. A process may cache per-user data
    derived from memory rows (the SQLite backend's vector matrices) only labelled with the version
    it reflects, and must compare it with the stored version in the snapshot it reads from before
    using it: that is how a cache learns another process wrote. Nothing else is cached: after one
    process's ``write()`` returns, a read in any process sees the change.

    **Derived text.** A memory's context and its session's document (storage/sessions.py) are
    kept by the backend on every insert, edit and delete, by the rules in that module.
    """

    backend: str
    location: str

    # -- lifecycle -------------------------------------------------------------------------------
    @abc.abstractmethod
    def close(self) -> None: ...

    @abc.abstractmethod
    def ping(self) -> None:
        """Run a trivial query; raise StorageError when the database is unreachable."""

    @abc.abstractmethod
    def write(self, user_id: str | None = None) -> AbstractContextManager[None]:
        """One write transaction, as the class describes. ``user_id`` takes that user's writer turn
        at once; without it the turn of each user is taken at the first method called for that
        user inside the block (reads included), before it reads anything."""

    @abc.abstractmethod
    def user_version(self, user_id: str) -> int:
        """The user's version (0 before their first write): what a cache of their data compares with."""

    def search_snapshot(self, user_id: str, *, renewable: bool = False) -> AbstractContextManager[None]:
        """The reads of one search of ``user_id``, made inside this block of the calling thread: a
        backend may make them in one snapshot and read the user's version (and what else only a
        commit changes) once for all of them, so the records a search returns are in the state its
        arms ranked (SQLite: one read transaction; PostgreSQL: a read-only REPEATABLE READ one).
        Inside ``write()`` the write's own view is the snapshot; a write inside the block goes
        through ``write()``. This default leaves each read on its own.

        ``renewable``: the caller runs the block again in a new snapshot when a read raises
        ``StaleSnapshot``, which a backend may raise when a cache of its moved past this snapshot
        (SQLite's vectors, PostgreSQL's vectors and full-text rows), instead of reading the user whole for
        this snapshot alone."""
        return nullcontext()

    def cache_counts(self) -> Mapping[str, CacheReads]:
        """What keeping this process's caches current has read from the database since the backend
        opened, by cache (``vectors``, ``text``): the server's metrics count it. This default: no
        cache counts its reads."""
        return {}

    # -- memories --------------------------------------------------------------------------------
    @abc.abstractmethod
    def insert_memory(self, memory: MemoryRecord, embedding: np.ndarray) -> None: ...

    @abc.abstractmethod
    def update_memory(self, user_id: str, memory_id: str, **fields: Any) -> None:
        """Set the named MemoryRecord fields. Leaving the current set removes the vector from the
        current-fact index; the row, its text and its embedding stay for history."""

    @abc.abstractmethod
    def get_memory(self, user_id: str, memory_id: str) -> MemoryRecord | None: ...

    @abc.abstractmethod
    def get_memories(self, user_id: str, ids: Sequence[str]) -> dict[str, MemoryRecord]: ...

    def memory_heads(self, user_id: str, ids: Sequence[str]) -> Mapping[str, MemoryHead | MemoryRecord]:
        """The text and session of those of ``ids`` that exist, in any state: what a search's
        stages after fusion read of its fused head, of which it returns only the best few. A
        backend may answer with whole records (this default does, from ``get_memories``); the
        search then reads no record twice."""
        return self.get_memories(user_id, ids)

    def current_texts(self, user_id: str, ids: Sequence[str]) -> dict[str, str]:
        """The texts of those of ``ids`` that are current, in the order ``get_memories`` gives
        them: what a write's dedup decision reads of its neighbours, which a backend may answer
        without building whole records."""
        return {r.id: r.text for r in self.get_memories(user_id, ids).values() if r.is_current}

    def neighbour_texts(self, user_id: str, ids: Sequence[str], fingerprint: str) -> tuple[str | None, dict[str, str]]:
        """What a write's dedup decision reads of the store in one go: the id of the current memory
        with ``fingerprint`` (``find_by_fingerprint``, None when there is none) and ``current_texts``
        of ``ids`` with that one added (a backend may answer both in one statement)."""
        same = self.find_by_fingerprint(user_id, fingerprint)
        if same is None:
            return None, self.current_texts(user_id, ids)
        return same.id, self.current_texts(user_id, list(dict.fromkeys([*ids, same.id])))

    def all_current_texts(self, user_id: str, limit: int) -> dict[str, str] | None:
        """The texts of all the user's current memories by id, or None when they are more than
        ``limit``: a batch reads them at once when that costs less than its dedup lookups would."""
        found, total = self.list_memories(user_id, MemoryFilters(), offset=0, limit=limit)
        return None if total > limit else {r.id: r.text for r in found}

    def first_by_fingerprints(self, user_id: str, fingerprints: Sequence[str]) -> dict[str, str]:
        """Per fingerprint, the id of the memory ``find_by_fingerprint`` finds, for those that have
        one: a batch's dedup lookups read them all at once (a backend may answer in one statement)."""
        found = ((f, self.find_by_fingerprint(user_id, f)) for f in dict.fromkeys(fingerprints))
        return {f: record.id for f, record in found if record is not None}

    @abc.abstractmethod
    def list_memories(
        self, user_id: str, filters: MemoryFilters, *, offset: int, limit: int
    ) -> tuple[list[MemoryRecord], int]:
        """Newest first (record time), with the total count of rows matching ``filters``."""

    @abc.abstractmethod
    def count_matching(self, user_id: str, filters: MemoryFilters) -> int:
        """How many of the user's memories pass ``filters``."""

    @abc.abstractmethod
    def find_by_fingerprint(self, user_id: str, fingerprint: str) -> MemoryRecord | None:
        """The current memory whose normalised text has this fingerprint, if any."""

    @abc.abstractmethod
    def last_written(self, user_id: str, app_name: str | None) -> MemoryRecord | None:
        """The memory the user wrote last with this app (None: with no app), in any state; the
        episode a memory without a session continues (pipeline/episodes.py)."""

    @abc.abstractmethod
    def delete_memories(self, user_id: str, ids: Sequence[str]) -> int:
        """Hard delete: rows, full-text entries, vectors, history, entity links, and their text
        quoted in other memories' history. Once it returns, no copy of the text is left in the
        database files. Returns the count."""

    @abc.abstractmethod
    def delete_user(self, user_id: str) -> dict[str, int]:
        """Erase everything of one user, as ``delete_memories`` erases a memory. Returns the rows
        erased per table."""

    # -- retrieval arms --------------------------------------------------------------------------
    @abc.abstractmethod
    def text_search(
        self, user_id: str, query: str, filters: MemoryFilters, limit: int, *, context_weight: float = 0.3
    ) -> list[ScoredId]:
        """BM25 over the user's memories; higher score is better. A memory's context (the text
        written just before it in its session) counts with ``context_weight`` against its own text's 1.0."""

    @abc.abstractmethod
    def vector_search(
        self, user_id: str, vector: np.ndarray, filters: MemoryFilters, limit: int
    ) -> list[ScoredId]:
        """Nearest neighbours by cosine similarity; higher score is better."""

    def vector_searches(self, user_id: str, vectors: np.ndarray, limit: int) -> Callable[[int], list[ScoredId]]:
        """For the dedup lookups of one write transaction, made in turn while it writes: ``search(i)``
        gives the hits ``vector_search(user_id, vectors[i], MemoryFilters(), limit)`` would give at
        that moment (the same ids and scores; equal scores in any order). A backend may screen
        every vector against the stored rows at once (``UserVectors.screen``)."""
        return lambda i: self.vector_search(user_id, vectors[i], MemoryFilters(), limit)

    @abc.abstractmethod
    def session_search(self, user_id: str, query: str, limit: int) -> list[ScoredId]:
        """BM25 over the user's session documents (each session's member texts, kept at write
        time); the ids are session ids, higher score is better."""

    @abc.abstractmethod
    def session_members(
        self, user_id: str, session_ids: Sequence[str], filters: MemoryFilters
    ) -> dict[str, list[str]]:
        """The memories of each session that pass ``filters``, in write order (oldest first)."""

    # -- history ---------------------------------------------------------------------------------
    @abc.abstractmethod
    def record_event(self, user_id: str, memory_id: str, event: str, at: float, detail: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    def history(self, user_id: str, memory_id: str) -> list[HistoryEntry]: ...

    # -- entities --------------------------------------------------------------------------------
    @abc.abstractmethod
    def link_entities(self, user_id: str, memory_id: str, mentions: Sequence[EntityMention]) -> None: ...

    @abc.abstractmethod
    def memories_for_entities(self, user_id: str, canonicals: Sequence[str], filters: MemoryFilters, limit: int) -> list[ScoredId]:
        """Memories linked to any of the entities, scored by how many of them they mention."""

    @abc.abstractmethod
    def entity_aliases(self, user_id: str) -> list[tuple[str, str]]:
        """Every (alias (folded), canonical name) pair of the user's entities, by canonical name,
        then alias, in code point order: between two aliases a new name matches, the order picks
        the entity it joins (``canonical_entity``), so every backend gives the same one."""

    def entity_names(self, user_id: str) -> dict[str, str]:
        """Every alias (folded) → canonical name known for the user, in ``entity_aliases`` order
        (an alias of several entities: the last of them)."""
        return dict(self.entity_aliases(user_id))

    # -- jobs ------------------------------------------------------------------------------------
    @abc.abstractmethod
    def enqueue_job(self, kind: str, user_id: str, memory_id: str | None, payload: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    def claim_jobs(self, now: float, limit: int) -> list[Job]:
        """Take the oldest due job, or one whose claiming process is gone, and up to ``limit - 1``
        more due jobs of its kind and user, in queue order (none: []). Each stays claimed, by this
        process, until finished or failed, or until this process ends."""

    def claim_job(self, now: float) -> Job | None:
        """``claim_jobs`` of one job."""
        jobs = self.claim_jobs(now, 1)
        return jobs[0] if jobs else None

    @abc.abstractmethod
    def requeue_running_jobs(self) -> int:
        """Jobs claimed by a process that is gone go back to the queue. Returns how many. Several
        live processes share one queue (PostgreSQL replicas, the worker processes of
        ``cortadel serve --workers`` on one SQLite file): a live claimer's jobs stay its own."""

    def holds_background_duty(self) -> bool:
        """Whether this process does the store's once-only background work (the reconcile schedule,
        the repair of stale embeddings): on SQLite, one of the processes serving the file at a
        time, and the next to start once it ends; here, every process (each PostgreSQL replica does it)."""
        return True

    @abc.abstractmethod
    def finish_jobs(self, job_ids: Sequence[int]) -> None:
        """The jobs are done: they leave the queue."""

    def finish_job(self, job_id: int) -> None:
        self.finish_jobs([job_id])

    @abc.abstractmethod
    def fail_job(self, job_id: int, error: str, retry_at: float | None) -> None:
        """Record a failure: retried at ``retry_at``, or given up when it is None."""

    # -- curation: entities as records, reconciliation runs and suggestions -----------------------
    @abc.abstractmethod
    def put_entities(self, user_id: str, entities: Sequence[StoredEntity]) -> None:
        """Make each entity exactly so, by canonical name: its row (created when missing, keeping
        its id when not), its aliases and its memory links. An entity put with neither keeps its
        row: a merge leaves its source so, and its undo finds it where it was."""

    @abc.abstractmethod
    def save_reconcile_run(self, run: ReconcileRun) -> None:
        """Insert or replace the run (by id)."""

    @abc.abstractmethod
    def reconcile_runs(self, user_id: str, *, run_id: str | None = None, active: bool = False, limit: int = 1) -> list[ReconcileRun]:
        """The user's runs, newest first: the one with ``run_id``, or only queued and running ones."""

    @abc.abstractmethod
    def save_suggestion(self, suggestion: Suggestion) -> None:
        """Insert or replace the suggestion (by id); ``key`` is unique per user."""

    @abc.abstractmethod
    def suggestions(
        self, user_id: str, *, status: str | None = None, ids: Sequence[str] = (), keys: Sequence[str] = (),
        offset: int = 0, limit: int = 100,
    ) -> tuple[list[Suggestion], int]:
        """The user's suggestions (of that status, ids or keys), newest first, with the total count."""

    # -- fading and communities (curation/fading.py, curation/communities.py) ----------------------
    @abc.abstractmethod
    def record_recalls(self, user_id: str, memory_ids: Sequence[str], at: float) -> None:
        """Note that these memories were recalled at ``at`` (a later time never moves back). Not a
        change to the memories: the user's version stays, no cache derives from recall times."""

    @abc.abstractmethod
    def last_seen(self, user_id: str, memory_ids: Sequence[str]) -> dict[str, float]:
        """For each existing memory of the ids: the latest of its write, its last touch
        (``updated_at``) and its last recall."""

    @abc.abstractmethod
    def entity_links(self, user_id: str) -> list[tuple[str, str]]:
        """(memory id, entity canonical name) for every current memory of the user and each entity
        it mentions, in memory write order."""

    # -- vectors ---------------------------------------------------------------------------------
    @abc.abstractmethod
    def index_info(self) -> IndexInfo: ...

    @abc.abstractmethod
    def ensure_vector_index(self, dim: int, model: str) -> None:
        """Create the vector index for ``dim`` when there is none yet."""

    @abc.abstractmethod
    def begin_reindex(self, dim: int, model: str) -> None:
        """Record that every memory is to be re-embedded with ``model`` (of ``dim``). The old
        embeddings stay until replaced; an unfinished reindex to the same model keeps its progress."""

    @abc.abstractmethod
    def stale_embeddings(self, limit: int) -> list[tuple[str, str, str]]:
        """The next (user_id, memory_id, text) whose embedding is due: not yet re-embedded by the
        unfinished reindex, or missing. Empty when there is nothing left to embed."""

    @abc.abstractmethod
    def set_embeddings(self, items: Sequence[tuple[str, str, np.ndarray]]) -> None:
        """(user_id, memory_id, vector) triples: store each and index the current ones, and move an
        unfinished reindex past them, all in one transaction."""

    @abc.abstractmethod
    def finish_reindex(self) -> bool:
        """Switch the index to the reindex's model once no memory is left to re-embed. Returns
        whether no reindex is left unfinished."""

    @abc.abstractmethod
    def count_memories(self) -> int: ...

    # -- overview --------------------------------------------------------------------------------
    @abc.abstractmethod
    def user_summaries(self, limit: int) -> list[UserSummary]:
        """Every user with memories, most recently active first (at most ``limit``)."""

    # -- transfer (export, import, migrate: cortadel_server/transfer) ----------------------------
    # Rows as stored, so a store copied through them is the same store. Loads run inside the
    # caller's ``write(user_id)`` and move the user's version on, as any write does.
    @abc.abstractmethod
    def transfer_users(self) -> list[str]:
        """Every user with any stored row (memories, history, entities, sessions, jobs, reconcile runs,
        suggestions or recalls), sorted.
        Cross-user, like ``user_summaries``."""

    @abc.abstractmethod
    def user_row_counts(self, user_id: str) -> dict[str, int]:
        """The user's rows per kind of ``TRANSFER_KINDS``."""

    @abc.abstractmethod
    def dump_memories(self, user_id: str, after: int, limit: int) -> list[StoredMemory]:
        """The user's memories with a row key above ``after``, in write order, at most ``limit``."""

    @abc.abstractmethod
    def dump_history(self, user_id: str, after: int, limit: int) -> list[tuple[int, HistoryEntry]]:
        """The user's history events with a row key above ``after``, in order: (row key, event)."""

    @abc.abstractmethod
    def dump_entities(self, user_id: str) -> list[StoredEntity]:
        """The user's entities in the order they were first seen."""

    @abc.abstractmethod
    def dump_sessions(self, user_id: str) -> list[tuple[str, str]]:
        """The user's session documents as (session id, text), by session id."""

    @abc.abstractmethod
    def dump_jobs(self, user_id: str) -> list[StoredJob]:
        """The user's queued and failed jobs, oldest first."""

    @abc.abstractmethod
    def dump_reconcile_runs(self, user_id: str) -> list[ReconcileRun]:
        """The user's reconcile runs, oldest first (ties by id)."""

    @abc.abstractmethod
    def dump_suggestions(self, user_id: str) -> list[Suggestion]:
        """The user's suggestions of every status, undo state included, oldest first (ties by id)."""

    @abc.abstractmethod
    def dump_recalls(self, user_id: str) -> list[tuple[str, float]]:
        """The user's recalls as (memory id, last recalled at), by memory id."""

    @abc.abstractmethod
    def load_memories(self, user_id: str, memories: Sequence[StoredMemory]) -> None:
        """Insert the memories as they are (context and embedding included, nothing derived), in order."""

    @abc.abstractmethod
    def load_history(self, user_id: str, events: Sequence[HistoryEntry]) -> None: ...

    @abc.abstractmethod
    def load_entities(self, user_id: str, entities: Sequence[StoredEntity]) -> None: ...

    @abc.abstractmethod
    def load_sessions(self, user_id: str, documents: Sequence[tuple[str, str]]) -> None: ...

    @abc.abstractmethod
    def load_jobs(self, user_id: str, jobs: Sequence[StoredJob]) -> None: ...

    @abc.abstractmethod
    def load_reconcile_runs(self, user_id: str, runs: Sequence[ReconcileRun]) -> None:
        """Insert the runs as they are; a run of another user is refused (ValueError)."""

    @abc.abstractmethod
    def load_suggestions(self, user_id: str, suggestions: Sequence[Suggestion]) -> None:
        """Insert the suggestions as they are; a suggestion of another user is refused (ValueError)."""

    @abc.abstractmethod
    def load_recalls(self, user_id: str, recalls: Sequence[tuple[str, float]]) -> None: ...

    @abc.abstractmethod
    def transfer_checkpoints(self, source: str) -> set[str]:
        """The users an unfinished import from ``source`` (an opaque label) has already loaded."""

    @abc.abstractmethod
    def set_transfer_checkpoint(self, source: str, user_id: str | None) -> None:
        """Record that the import from ``source`` loaded ``user_id`` (inside that user's write, so the
        mark commits with the rows); None forgets every mark of ``source`` (the import finished)."""
