"""Wire schemas of the REST API, separate from storage records.

Field names, types and limits follow the public Cortadel contract. Requests forbid unknown fields
(a camelCase body is a 400); explicit ``null`` is accepted for every optional field and means absent.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SkipValidation, StrictBool, field_validator

from cortadel_server.inputs import storable


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Every field must survive a round trip through stored JSON (no lone surrogates, bounded depth).
    _storable = field_validator("*", mode="before")(storable)


class Response(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _a_json_number(value: Any) -> Any:
    # Lax validation would read true as 1 and "10" as 10: a count must be a JSON number.
    if isinstance(value, bool | str):
        raise ValueError("Must be a JSON number")  # noqa: TRY004 - pydantic reports ValueError, not TypeError, as a 400
    return value


Count = Annotated[int | None, BeforeValidator(_a_json_number)]


def _integer_text(value: Any) -> Any:
    # Lax validation would read the query text "2.0" as page 2: a query count is written in digits.
    if isinstance(value, str) and not value.strip().lstrip("+-").isdigit():
        raise ValueError("Must be an integer")
    return value


#: an integer query parameter (page, size, limit, level …)
QueryInt = Annotated[int, BeforeValidator(_integer_text)]


def _not_a_bool(value: Any) -> Any:
    # JSON true/false would otherwise pass as the numbers 1 and 0.
    if isinstance(value, bool):
        raise ValueError("Must be an ISO 8601 date-time string or Unix seconds, not a boolean")  # noqa: TRY004 - as above
    return value


UserId = Annotated[str, Field(min_length=1, description="User identifier: the namespace of the memory.")]
Timestamp = Annotated[
    str | float | None,
    BeforeValidator(_not_a_bool),
    Field(description="An instant: ISO 8601 (naive means UTC) or Unix seconds."),
]


# -- requests ------------------------------------------------------------------------------------
class NewMemory(Request):
    """A memory to add: every field of a single add but its user."""

    text: str = Field(min_length=1, max_length=50000, description="The statement to remember.")
    infer: StrictBool | None = Field(None, description="Run fact extraction (default true); false stores the text verbatim.")
    app: str | None = Field(None, description="Name of the application writing the memory.")
    memory_type: str | None = Field(None, description="episodic | semantic | procedural.")
    metadata: dict[str, Any] | None = Field(None, description="Free-form JSON object kept with the memory.")
    project: str | None = Field(None, description="Project the memory belongs to (extension).")
    tags: list[str] | None = Field(None, description="Tags (extension).")
    session_id: str | None = Field(None, description="Session the memory belongs to (extension).")
    timestamp: Timestamp = Field(None, description="When the statement was made (extension; default now): its valid time starts then and relative time expressions resolve against it.")


class CreateMemoryRequest(NewMemory):
    user_id: UserId


class ConversationMessageItem(Request):
    role: str = Field(min_length=1, max_length=20)
    content: str = Field(min_length=1, max_length=50000)
    uuid: str | None = Field(None, description="Turn id; ends up in the fact's source_turn_uuids.")
    timestamp: Timestamp = Field(None, description="When the turn was said (extension; default now): relative time expressions resolve against it.")


class NewConversation(Request):
    """A conversation to distil: every field of a single from-conversation request but its user."""

    messages: list[ConversationMessageItem] = Field(min_length=1, max_length=500)
    is_agent_memory: StrictBool | None = Field(None, description="Extract the assistant's statements instead of the user's.")
    tags: list[str] | None = None
    project: str | None = None
    session_id: str | None = None
    transcript_path: str | None = None


class AddConversationRequest(NewConversation):
    user_id: UserId


class BatchRequest(BaseModel):
    """Many memories and conversations of one user (extension). Each item is validated on its own:
    a bad one is that item's `ERROR` result, never a 400 of the batch, so items arrive unvalidated."""

    model_config = ConfigDict(extra="forbid")

    user_id: UserId
    memories: list[SkipValidation[NewMemory]] | None = Field(None, description="Memories to add, as single adds take them.")
    conversations: list[SkipValidation[NewConversation]] | None = Field(None, description="Conversations to distil, as from-conversation takes them.")

    _storable = field_validator("user_id", mode="before")(storable)


class SearchMemoriesRequest(Request):
    query: str = Field(min_length=1, max_length=5000)
    user_id: UserId
    top_k: Count = Field(None, ge=1, le=50, description="Results to return (default 10).")
    mode: str | None = Field(None, description="hybrid (default) | text | vector | deep (extension: every arm).")
    app_name: str | None = Field(None, description="The searching application's name (a label, not a filter).")
    session_id: str | None = Field(None, description="Only facts stored under this session.")
    rerank: str | None = Field(None, description='"cross_encoder" to rerank with the configured cross-encoder.')
    memory_type: str | None = None
    token_budget: Count = Field(None, ge=0, le=200000, description="Drop the lowest-ranked hits beyond this many tokens (0: no limit).")
    expand_query: StrictBool | None = None
    include_faded: StrictBool | None = Field(None, description="Also return memories that faded from recall (default false). Has no effect unless the server has fading enabled (CORTADEL_FADE_HALF_LIFE_DAYS).")
    include_session_arm: StrictBool | None = None
    as_of: Timestamp = Field(None, description="Valid time: facts true at this instant (extension).")
    known_at: Timestamp = Field(None, description="Record time: facts we held at this instant (extension).")
    project: str | None = Field(None, description="Only facts of this project (extension).")
    tag: str | None = Field(None, description="Only facts with this tag (extension).")
    include_superseded: StrictBool | None = Field(None, description="Also superseded, retracted and resolved facts (extension).")


class DeleteMemoriesRequest(Request):
    user_id: UserId
    memory_ids: list[str] = Field(min_length=1)


# -- responses -----------------------------------------------------------------------------------
class MemoryCreatedResponse(Response):
    id: str | None
    content: str | None
    state: str | None
    created_at: str | None
    event: str | None
    app_name: str | None
    metadata: str | None = Field(description="The memory's metadata as a JSON-encoded string.")
    error: str | None = None


class ConversationIngestItem(Response):
    id: str | None
    memory: str | None
    event: str | None
    error: str | None


class ConversationIngestResponse(Response):
    results: list[ConversationIngestItem] | None = None
    no_facts_extracted: bool | None = None


class BatchResponse(Response):
    memories: list[MemoryCreatedResponse] = Field(description="One per memory sent, in order, as a single add answers it.")
    conversations: list[ConversationIngestResponse] = Field(description="One per conversation sent, in order, as from-conversation answers it.")


class HybridSearchResult(Response):
    id: str | None
    content: str | None
    rrf_score: float
    created_at: str | None
    app_name: str | None
    categories: list[str] | None
    memory_type: str | None
    tags: list[str] | None
    source: str | None
    global_: bool = Field(alias="global", serialization_alias="global")
    gist: str | None
    project_id: str | None
    member_ids: list[str] | None
    similar_ids: list[str] | None
    text_rank: int | None
    vector_rank: int | None
    attributes: dict[str, Any] | None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class SearchResponse(Response):
    query: str | None
    results: list[HybridSearchResult] | None
    total: int


class MemoryListItemResponse(Response):
    id: str | None
    content: str | None
    created_at: int
    state: str | None
    app_id: str | None
    app_name: str | None
    categories: list[str] | None
    memory_type: str | None
    extraction_status: str | None
    valid_at: str | None
    invalid_at: str | None
    is_current: bool | None
    is_global: bool
    metadata_: Any = None
    # extensions
    gist: str | None = None
    tags: list[str] | None = None
    project: str | None = None
    session_id: str | None = None
    source_turn_uuids: list[str] | None = None
    superseded_by: str | None = None
    expired_at: str | None = None


class MemoryListPagedResponse(Response):
    items: list[MemoryListItemResponse] | None
    total: int
    page: int
    size: int
    pages: int


class MemoryDetailResponse(Response):
    id: str | None
    text: str | None
    created_at: int
    state: str | None
    app_id: str | None
    app_name: str | None
    categories: list[str] | None
    metadata_: Any = None
    valid_at: str | None
    invalid_at: str | None
    is_current: bool
    superseded_by: str | None
    is_global: bool
    # extensions
    gist: str | None = None
    memory_type: str | None = None
    tags: list[str] | None = None
    project: str | None = None
    session_id: str | None = None
    source_turn_uuids: list[str] | None = None
    transcript_path: str | None = None
    extraction_status: str | None = None
    expired_at: str | None = None


class HistoryEventResponse(Response):
    event: str
    at: str
    detail: dict[str, Any]


class MemoryHistoryResponse(Response):
    id: str
    events: list[HistoryEventResponse]


class DeleteMemoriesResponse(Response):
    message: str | None


class DeleteUserResponse(Response):
    message: str
    user_id: str
    erased: dict[str, int] = Field(description="Rows erased per table: the receipt.")


class ReindexResponse(Response):
    message: str
    reindexed: int
    model: str
    dim: int


class ErrorResponse(Response):
    status: int
    code: str | None
    message: str | None
    detail: str | None


class ValidationProblemDetails(BaseModel):
    type: str | None
    title: str | None
    status: int | None
    detail: str | None
    errors: dict[str, list[str]] | None
    instance: str | None = None


class MemgraphCheck(Response):
    ok: bool
    url: str | None
    user: str | None
    latency_ms: int | None
    error: str | None


class EmbeddingCheck(Response):
    ok: bool
    provider: str | None
    model: str | None
    dim: int | None
    latency_ms: int | None
    error: str | None


class IndexesCheck(Response):
    ok: bool
    model: str | None
    provider_dim: int | None
    vector_indexes: list[str] | None
    mismatches: list[str] | None
    error: str | None


class HealthChecks(Response):
    memgraph: MemgraphCheck
    embeddings: EmbeddingCheck
    indexes: IndexesCheck


class HealthResponse(Response):
    status: str | None
    checked_at: str | None
    checks: HealthChecks
    version: str | None = None
