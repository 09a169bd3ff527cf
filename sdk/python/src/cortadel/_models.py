"""Option objects passed to the clients and the typed results they return.

Class and field names follow the published ``cortadel`` 1.x facade so code written against it
runs unchanged; the fields marked *extra* are what this server adds (point-in-time reads,
memory history, the remaining search switches of the REST contract).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Union

DEFAULT_LIST_SIZE = 20
"""Page size ``list()`` asks for when none is given (the REST default is 10; every Cortadel
SDK asks for 20 so their examples agree)."""

Instant = Union[datetime, str]  # noqa: UP007 - a public value: its repr is part of the facade the compat test compares
"""A point in time: an aware ``datetime`` (a naive one is read as UTC) or an ISO 8601 string
passed through as written."""


# ── Inputs ───────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One turn of a conversation given to ``add_conversation``."""

    role: str
    """``user``, ``assistant`` or ``system``."""
    content: str
    uuid: str | None = None
    """The producer's id for this turn; facts distilled from it remember it."""


@dataclass(frozen=True, slots=True)
class AddOptions:
    """How ``add`` stores a memory."""

    app: str | None = None
    """Name of the application writing the memory (echoed back as ``app_name``)."""
    metadata: dict[str, Any] | None = None
    """Free-form JSON object stored with the memory."""
    infer: bool | None = None
    """``False`` stores the text verbatim (deduplication still runs). Default ``True``."""
    memory_type: str | None = None
    """Pin the type: ``episodic``, ``semantic`` or ``procedural``; otherwise classified."""
    project: str | None = None
    """*Extra.* Project the memory belongs to."""
    tags: list[str] | None = None
    """*Extra.* Tags for scoped retrieval."""


@dataclass(frozen=True, slots=True)
class ConversationOptions:
    """How ``add_conversation`` files the facts it distils."""

    is_agent_memory: bool = False
    """Distil facts about the assistant rather than the user."""
    tags: list[str] | None = None
    """Tags put on every stored fact."""
    project: str | None = None
    session_id: str | None = None
    """Group the facts under this session (``SearchOptions.session_id`` finds them again)."""
    transcript_path: str | None = None
    """Where the producer keeps the full transcript; stored as a pointer on each fact."""


@dataclass(frozen=True, slots=True)
class BatchMemory:
    """*Extra.* One memory of ``add_batch``: a text and how to store it, as ``add`` takes them."""

    text: str
    options: AddOptions | None = None


@dataclass(frozen=True, slots=True)
class BatchConversation:
    """*Extra.* One conversation of ``add_batch``, as ``add_conversation`` takes it."""

    messages: list[ChatMessage]
    options: ConversationOptions | None = None


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """Tuning for ``search``."""

    top_k: int = 10
    """How many hits to return, 1 to 50."""
    mode: str = "hybrid"
    """``hybrid`` (keywords and vectors fused), ``text`` or ``vector``."""
    session_id: str | None = None
    """Only facts stored under this session."""
    rerank: str | None = None
    """``cross_encoder`` to rerank the fused list; ``None`` to skip."""
    memory_type: str | None = None
    """Only memories of this type."""
    as_of: Instant | None = None
    """*Extra.* Search the facts that were true at this moment (valid time)."""
    known_at: Instant | None = None
    """*Extra.* Search what the server had recorded by this moment (record time)."""
    include_faded: bool | None = None
    """*Extra.* Also return memories that faded from normal recall."""
    token_budget: int | None = None
    """*Extra.* Drop the lowest-ranked hits once their content exceeds this many tokens."""
    expand_query: bool | None = None
    """*Extra.* Widen the keyword search with related terms."""
    include_session_arm: bool | None = None
    """*Extra.* Also match session summaries and expand them to their member memories."""
    project: str | None = None
    """*Extra.* Only memories of this project."""
    tag: str | None = None
    """*Extra.* Only memories carrying this tag."""


@dataclass(frozen=True, slots=True)
class ListOptions:
    """Paging and filters for ``list``."""

    page: int = 1
    """1-based page number."""
    size: int = DEFAULT_LIST_SIZE
    """Items per page, at most 100."""
    app_id: str | None = None
    categories: str | None = None
    """Comma-separated category names."""
    search_query: str | None = None
    """Filter the list down to memories matching this text."""
    include_superseded: bool = False
    """Also list versions that a newer fact replaced."""
    memory_type: str | None = None
    as_of: Instant | None = None
    """*Extra.* List the facts that were true at this moment (valid time)."""
    known_at: Instant | None = None
    """*Extra.* List what the server had recorded by this moment (record time)."""


# ── Results ──────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class MemoryCreated:
    """What ``add`` did with the text."""

    id: str
    """The stored (or already known) memory's id; empty only when ``event`` is ``ERROR``."""
    content: str | None = None
    state: str | None = None
    created_at: str | None = None
    """ISO 8601 string here (``list`` and ``get`` give Unix seconds)."""
    event: str | None = None
    """``ADD``, ``SKIP_DUPLICATE``, ``SUPERSEDE``, ``INVALIDATE``, ``TOUCH``, ... (open set)."""
    app_name: str | None = None
    metadata: str | None = None
    """The stored metadata as a JSON-encoded string, as the server sends it."""
    error: str | None = None
    """*Extra.* Why nothing was stored, when ``event`` is ``ERROR``."""


@dataclass(frozen=True, slots=True)
class BatchResult:
    """*Extra.* What ``add_batch`` did: one result per memory and per conversation sent, in the
    order sent, each as ``add`` or ``add_conversation`` answers it. An invalid item is an
    ``ERROR`` result whose ``error`` says why; the other items are stored all the same."""

    memories: list[MemoryCreated] = field(default_factory=list)
    conversations: list[ConversationResult] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked memory from ``search``."""

    id: str
    content: str
    rrf_score: float | None = None
    """Fused relevance score, higher is better."""
    created_at: str | None = None
    app_name: str | None = None
    """The app that wrote the memory."""
    categories: list[str] | None = None
    memory_type: str | None = None
    tags: list[str] | None = None
    source: str | None = None
    is_global: bool = False
    """A memory shared globally by another user (``global`` on the wire)."""
    gist: str | None = None
    project_id: str | None = None
    member_ids: list[str] | None = None
    similar_ids: list[str] | None = None
    text_rank: int | None = None
    """Position in the keyword arm before fusion, when it matched there."""
    vector_rank: int | None = None
    """Position in the vector arm before fusion, when it matched there."""
    attributes: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class SearchResults:
    """The hits for one query, best first."""

    query: str
    results: list[SearchHit] = field(default_factory=list)
    total: int = 0


@dataclass(frozen=True, slots=True)
class MemoryListItem:
    """One memory on a ``list`` page."""

    id: str
    content: str
    created_at: int
    """Unix seconds."""
    state: str = "active"
    app_id: str | None = None
    app_name: str | None = None
    categories: list[str] = field(default_factory=list)
    memory_type: str | None = None
    extraction_status: str | None = None
    """``done``, ``pending`` or ``failed``."""
    valid_at: str | None = None
    """ISO 8601: since when the fact holds."""
    invalid_at: str | None = None
    """ISO 8601: when a newer fact replaced or retracted it."""
    is_current: bool | None = None
    is_global: bool = False
    metadata: Any | None = None
    """The stored metadata object (``metadata_`` on the wire)."""
    gist: str | None = None
    """*Extra.* One-line summary, when the server made one."""
    tags: list[str] | None = None
    """*Extra.*"""
    project: str | None = None
    """*Extra.*"""
    session_id: str | None = None
    """*Extra.*"""
    source_turn_uuids: list[str] | None = None
    """*Extra.* Ids of the conversation turns the fact came from."""
    superseded_by: str | None = None
    """*Extra.* Id of the memory that replaced this one."""
    expired_at: str | None = None
    """*Extra.* ISO 8601 record time at which the server stopped holding this version."""


@dataclass(frozen=True, slots=True)
class MemoryList:
    """One page of ``list``, newest first."""

    items: list[MemoryListItem] = field(default_factory=list)
    total: int = 0
    page: int = 0
    size: int = 0
    pages: int = 0


@dataclass(frozen=True, slots=True)
class MemoryDetail:
    """One memory from ``get``. Its content field is ``text``."""

    id: str
    text: str
    created_at: int
    """Unix seconds."""
    state: str = "active"
    app_id: str | None = None
    app_name: str | None = None
    categories: list[str] = field(default_factory=list)
    metadata: Any | None = None
    """The stored metadata object (``metadata_`` on the wire)."""
    valid_at: str | None = None
    invalid_at: str | None = None
    is_current: bool | None = None
    superseded_by: str | None = None
    """Id of the memory that replaced this one."""
    is_global: bool = False
    gist: str | None = None
    """*Extra.* One-line summary, when the server made one."""
    memory_type: str | None = None
    """*Extra.*"""
    tags: list[str] | None = None
    """*Extra.*"""
    project: str | None = None
    """*Extra.*"""
    session_id: str | None = None
    """*Extra.*"""
    source_turn_uuids: list[str] | None = None
    """*Extra.* Ids of the conversation turns the fact came from."""
    transcript_path: str | None = None
    """*Extra.*"""
    extraction_status: str | None = None
    """*Extra.* ``done``, ``pending`` or ``failed``."""
    expired_at: str | None = None
    """*Extra.* ISO 8601 record time at which the server stopped holding this version."""


@dataclass(frozen=True, slots=True)
class ConversationIngestItem:
    """One fact distilled from a conversation, and what storing it did."""

    id: str | None = None
    """Empty when nothing was stored (``ERROR``)."""
    memory: str | None = None
    event: str | None = None
    error: str | None = None
    """Why storing failed, when ``event`` is ``ERROR``."""


@dataclass(frozen=True, slots=True)
class ConversationResult:
    """Outcome of ``add_conversation``: either ``results`` or ``no_facts_extracted``, never both."""

    results: list[ConversationIngestItem] | None = None
    no_facts_extracted: bool | None = None


@dataclass(frozen=True, slots=True)
class HealthResult:
    """The server's own report on its database and embedder."""

    status: str
    """``ok`` or ``degraded``."""
    checked_at: str | None = None
    checks: dict[str, Any] | None = None
    """Per-dependency details keyed ``memgraph`` (the database), ``embeddings``, ``indexes``."""


@dataclass(frozen=True, slots=True)
class HistoryEvent:
    """*Extra.* One recorded change to a memory."""

    event: str
    """What happened: ``ADD``, ``SUPERSEDE``, ``INVALIDATE``, ``TOUCH``, ... (open set)."""
    at: str
    """ISO 8601 time the server recorded the change."""
    detail: dict[str, Any] = field(default_factory=dict)
    """Event-specific facts, e.g. the text before and after, or the id of the newer memory."""


@dataclass(frozen=True, slots=True)
class MemoryHistory:
    """*Extra.* Every change recorded for one memory, oldest first."""

    id: str
    events: list[HistoryEvent] = field(default_factory=list)
