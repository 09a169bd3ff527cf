"""Option objects passed to the clients and the typed results they return.

Class and field names follow the published ``cortadel`` 1.x facade so code written against it
runs unchanged; the fields marked *extra* are what this server adds (point-in-time reads,
memory history, the remaining search switches of the REST contract).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional, Union

DEFAULT_LIST_SIZE = 20
"""Page size ``list()`` asks for when none is given (the REST default is 10; every Cortadel
SDK asks for 20 so their examples agree)."""

Instant = Union[datetime, str]
"""A point in time: an aware ``datetime`` (a naive one is read as UTC) or an ISO 8601 string
passed through as written."""


# ── Inputs ───────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One turn of a conversation given to ``add_conversation``."""

    role: str
    """``user``, ``assistant`` or ``system``."""
    content: str
    uuid: Optional[str] = None
    """The producer's id for this turn; facts distilled from it remember it."""


@dataclass(frozen=True, slots=True)
class AddOptions:
    """How ``add`` stores a memory."""

    app: Optional[str] = None
    """Name of the application writing the memory (echoed back as ``app_name``)."""
    metadata: Optional[dict[str, Any]] = None
    """Free-form JSON object stored with the memory."""
    infer: Optional[bool] = None
    """``False`` stores the text verbatim (deduplication still runs). Default ``True``."""
    memory_type: Optional[str] = None
    """Pin the type: ``episodic``, ``semantic`` or ``procedural``; otherwise classified."""
    project: Optional[str] = None
    """*Extra.* Project the memory belongs to."""
    tags: Optional[list[str]] = None
    """*Extra.* Tags for scoped retrieval."""


@dataclass(frozen=True, slots=True)
class ConversationOptions:
    """How ``add_conversation`` files the facts it distils."""

    is_agent_memory: bool = False
    """Distil facts about the assistant rather than the user."""
    tags: Optional[list[str]] = None
    """Tags put on every stored fact."""
    project: Optional[str] = None
    session_id: Optional[str] = None
    """Group the facts under this session (``SearchOptions.session_id`` finds them again)."""
    transcript_path: Optional[str] = None
    """Where the producer keeps the full transcript; stored as a pointer on each fact."""


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """Tuning for ``search``."""

    top_k: int = 10
    """How many hits to return, 1 to 50."""
    mode: str = "hybrid"
    """``hybrid`` (keywords and vectors fused), ``text`` or ``vector``."""
    session_id: Optional[str] = None
    """Only facts stored under this session."""
    rerank: Optional[str] = None
    """``cross_encoder`` to rerank the fused list; ``None`` to skip."""
    memory_type: Optional[str] = None
    """Only memories of this type."""
    as_of: Optional[Instant] = None
    """*Extra.* Search the facts that were true at this moment (valid time)."""
    known_at: Optional[Instant] = None
    """*Extra.* Search what the server had recorded by this moment (record time)."""
    include_faded: Optional[bool] = None
    """*Extra.* Also return memories that faded from normal recall."""
    token_budget: Optional[int] = None
    """*Extra.* Drop the lowest-ranked hits once their content exceeds this many tokens."""
    expand_query: Optional[bool] = None
    """*Extra.* Widen the keyword search with related terms."""
    include_session_arm: Optional[bool] = None
    """*Extra.* Also match session summaries and expand them to their member memories."""
    project: Optional[str] = None
    """*Extra.* Only memories of this project."""
    tag: Optional[str] = None
    """*Extra.* Only memories carrying this tag."""


@dataclass(frozen=True, slots=True)
class ListOptions:
    """Paging and filters for ``list``."""

    page: int = 1
    """1-based page number."""
    size: int = DEFAULT_LIST_SIZE
    """Items per page, at most 100."""
    app_id: Optional[str] = None
    categories: Optional[str] = None
    """Comma-separated category names."""
    search_query: Optional[str] = None
    """Filter the list down to memories matching this text."""
    include_superseded: bool = False
    """Also list versions that a newer fact replaced."""
    memory_type: Optional[str] = None
    as_of: Optional[Instant] = None
    """*Extra.* List the facts that were true at this moment (valid time)."""
    known_at: Optional[Instant] = None
    """*Extra.* List what the server had recorded by this moment (record time)."""


# ── Results ──────────────────────────────────────────────────────────────────────────────────


@dataclass(frozen=True, slots=True)
class MemoryCreated:
    """What ``add`` did with the text."""

    id: str
    """The stored (or already known) memory's id; empty only when ``event`` is ``ERROR``."""
    content: Optional[str] = None
    state: Optional[str] = None
    created_at: Optional[str] = None
    """ISO 8601 string here (``list`` and ``get`` give Unix seconds)."""
    event: Optional[str] = None
    """``ADD``, ``SKIP_DUPLICATE``, ``SUPERSEDE``, ``INVALIDATE``, ``TOUCH``, ... (open set)."""
    app_name: Optional[str] = None
    metadata: Optional[str] = None
    """The stored metadata as a JSON-encoded string, as the server sends it."""
    error: Optional[str] = None
    """*Extra.* Why nothing was stored, when ``event`` is ``ERROR``."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One ranked memory from ``search``."""

    id: str
    content: str
    rrf_score: Optional[float] = None
    """Fused relevance score, higher is better."""
    created_at: Optional[str] = None
    app_name: Optional[str] = None
    """The app that wrote the memory."""
    categories: Optional[list[str]] = None
    memory_type: Optional[str] = None
    tags: Optional[list[str]] = None
    source: Optional[str] = None
    is_global: bool = False
    """A memory shared globally by another user (``global`` on the wire)."""
    gist: Optional[str] = None
    project_id: Optional[str] = None
    member_ids: Optional[list[str]] = None
    similar_ids: Optional[list[str]] = None
    text_rank: Optional[int] = None
    """Position in the keyword arm before fusion, when it matched there."""
    vector_rank: Optional[int] = None
    """Position in the vector arm before fusion, when it matched there."""
    attributes: Optional[dict[str, Any]] = None


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
    app_id: Optional[str] = None
    app_name: Optional[str] = None
    categories: list[str] = field(default_factory=list)
    memory_type: Optional[str] = None
    extraction_status: Optional[str] = None
    """``done``, ``pending`` or ``failed``."""
    valid_at: Optional[str] = None
    """ISO 8601: since when the fact holds."""
    invalid_at: Optional[str] = None
    """ISO 8601: when a newer fact replaced or retracted it."""
    is_current: Optional[bool] = None
    is_global: bool = False
    metadata: Optional[Any] = None
    """The stored metadata object (``metadata_`` on the wire)."""
    gist: Optional[str] = None
    """*Extra.* One-line summary, when the server made one."""
    tags: Optional[list[str]] = None
    """*Extra.*"""
    project: Optional[str] = None
    """*Extra.*"""
    session_id: Optional[str] = None
    """*Extra.*"""
    source_turn_uuids: Optional[list[str]] = None
    """*Extra.* Ids of the conversation turns the fact came from."""
    superseded_by: Optional[str] = None
    """*Extra.* Id of the memory that replaced this one."""
    expired_at: Optional[str] = None
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
    app_id: Optional[str] = None
    app_name: Optional[str] = None
    categories: list[str] = field(default_factory=list)
    metadata: Optional[Any] = None
    """The stored metadata object (``metadata_`` on the wire)."""
    valid_at: Optional[str] = None
    invalid_at: Optional[str] = None
    is_current: Optional[bool] = None
    superseded_by: Optional[str] = None
    """Id of the memory that replaced this one."""
    is_global: bool = False
    gist: Optional[str] = None
    """*Extra.* One-line summary, when the server made one."""
    memory_type: Optional[str] = None
    """*Extra.*"""
    tags: Optional[list[str]] = None
    """*Extra.*"""
    project: Optional[str] = None
    """*Extra.*"""
    session_id: Optional[str] = None
    """*Extra.*"""
    source_turn_uuids: Optional[list[str]] = None
    """*Extra.* Ids of the conversation turns the fact came from."""
    transcript_path: Optional[str] = None
    """*Extra.*"""
    extraction_status: Optional[str] = None
    """*Extra.* ``done``, ``pending`` or ``failed``."""
    expired_at: Optional[str] = None
    """*Extra.* ISO 8601 record time at which the server stopped holding this version."""


@dataclass(frozen=True, slots=True)
class ConversationIngestItem:
    """One fact distilled from a conversation, and what storing it did."""

    id: Optional[str] = None
    """Empty when nothing was stored (``ERROR``)."""
    memory: Optional[str] = None
    event: Optional[str] = None
    error: Optional[str] = None
    """Why storing failed, when ``event`` is ``ERROR``."""


@dataclass(frozen=True, slots=True)
class ConversationResult:
    """Outcome of ``add_conversation``: either ``results`` or ``no_facts_extracted``, never both."""

    results: Optional[list[ConversationIngestItem]] = None
    no_facts_extracted: Optional[bool] = None


@dataclass(frozen=True, slots=True)
class HealthResult:
    """The server's own report on its database and embedder."""

    status: str
    """``ok`` or ``degraded``."""
    checked_at: Optional[str] = None
    checks: Optional[dict[str, Any]] = None
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
