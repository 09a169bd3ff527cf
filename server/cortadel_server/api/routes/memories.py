"""The memory operations of the public contract, plus history."""

from __future__ import annotations

import math
from functools import partial
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from cortadel_server.api import render, schemas
from cortadel_server.api.deps import Authorized, QueryUser, QueryUserOrKey, Service
from cortadel_server.api.errors import error_responses, field_errors, summary
from cortadel_server.api.json_body import JsonBodyRoute
from cortadel_server.errors import PayloadTooLarge, ValidationFailed
from cortadel_server.inputs import parse_instant, parse_memory_id, parse_memory_type, search_filters
from cortadel_server.pipeline.budget import WriteBudget
from cortadel_server.pipeline.model import Event
from cortadel_server.pipeline.writer import ConversationInput, ConversationTurn, TextInput, WriteOutcome
from cortadel_server.retrieval.search import RECIPES, SearchRequest
from cortadel_server.storage.base import MEMORY_TYPES, MemoryFilters

router = APIRouter(prefix="/api/v1/memories", tags=["Memories"])

ERRORS = error_responses(400, 401, 403, 413, 500)
WITH_NOT_FOUND = error_responses(400, 401, 403, 404, 413, 500)


#: The last page a listing can ask for: its offset must stay a 64-bit integer in every backend.
MAX_PAGE = 1_000_000

MemoryIdPath = Annotated[str, Path(alias="memoryId", description="Memory identifier (a UUID).")]


@router.post(
    "",
    operation_id="Memories_Create",
    summary="Create a new memory for a user, with automatic deduplication.",
    response_model=schemas.MemoryCreatedResponse,
    responses=ERRORS,
)
async def create_memory(
    body: Authorized[schemas.CreateMemoryRequest], request: Request, service: Service
) -> schemas.MemoryCreatedResponse:
    budget = WriteBudget()
    add = partial(
        service.add,
        body.user_id,
        body.text,
        infer=True if body.infer is None else body.infer,
        app_name=body.app,
        memory_type=parse_memory_type(body.memory_type),
        metadata=body.metadata,
        project=body.project,
        tags=body.tags or (),
        session_id=body.session_id,
        at=parse_instant(body.timestamp, "timestamp"),
        budget=budget,
    )
    outcome = await service.workers.write(add, budget, request.receive)
    return schemas.MemoryCreatedResponse(**render.created(outcome))


@router.post(
    "/from-conversation",
    operation_id="Memories_FromConversation",
    summary="Distil a conversation into atomic facts and store each one.",
    response_model=schemas.ConversationIngestResponse,
    response_model_exclude_unset=True,
    responses=ERRORS,
)
async def add_conversation(
    body: Authorized[schemas.AddConversationRequest], request: Request, service: Service
) -> schemas.ConversationIngestResponse:
    budget = WriteBudget()
    add = partial(
        service.add_conversation,
        body.user_id,
        _turns(body.messages),
        is_agent_memory=bool(body.is_agent_memory),
        tags=body.tags or (),
        project=body.project,
        session_id=body.session_id,
        transcript_path=body.transcript_path,
        budget=budget,
    )
    outcomes = await service.workers.write(add, budget, request.receive)
    return schemas.ConversationIngestResponse(**render.conversation_result(outcomes))


def _turns(messages: list[schemas.ConversationMessageItem]) -> list[ConversationTurn]:
    return [ConversationTurn(m.role, m.content, m.uuid, parse_instant(m.timestamp, f"messages.{i}.timestamp"))
            for i, m in enumerate(messages)]


@router.post(
    "/batch",
    operation_id="Memories_Batch",
    summary="Add many memories and conversations of one user in one request (extension).",
    description=(
        "One write transaction for the whole batch, in order: a later item is deduplicated against, "
        "and supersedes, an earlier one. Each item gets the result its single request would give, in "
        "the order sent; an invalid item is an `ERROR` result and never stops the others. At most "
        "CORTADEL_MAX_BATCH_ITEMS items and CORTADEL_MAX_BATCH_BYTES bytes (413 beyond)."
    ),
    response_model=schemas.BatchResponse,
    response_model_exclude_unset=True,
    responses=ERRORS,
)
async def add_batch(body: Authorized[schemas.BatchRequest], request: Request, service: Service) -> JSONResponse:
    memories = [_memory_input(raw) for raw in body.memories or ()]
    conversations = [_conversation_input(raw) for raw in body.conversations or ()]
    if not memories and not conversations:
        raise ValidationFailed({"memories": ["Send at least one memory or conversation"]})
    most = service.settings.max_batch_items
    if len(memories) + len(conversations) > most:
        raise PayloadTooLarge(
            f"A batch holds at most {most} memories and conversations together (CORTADEL_MAX_BATCH_ITEMS); "
            f"this one has {len(memories) + len(conversations)}: send it in smaller batches."
        )
    inputs = [i for i in (*memories, *conversations) if not isinstance(i, str)]
    budget = WriteBudget()
    stored = iter(await service.workers.write(partial(service.add_batch, body.user_id, inputs, budget=budget), budget, request.receive))
    return render.CoreJSONResponse(render.batch_response(
        [_failed(m) if isinstance(m, str) else next(stored)[0] for m in memories],
        [[_failed(c)] if isinstance(c, str) else next(stored) for c in conversations],
    ))


def _memory_input(raw: object) -> TextInput | str:
    """The batch item as the writer takes it, or why it is invalid."""
    try:
        item = schemas.NewMemory.model_validate(raw)
        return TextInput(
            item.text,
            infer=True if item.infer is None else item.infer,
            app_name=item.app,
            memory_type=parse_memory_type(item.memory_type),
            metadata=item.metadata or {},
            project=item.project,
            tags=tuple(item.tags or ()),
            session_id=item.session_id,
            at=parse_instant(item.timestamp, "timestamp"),
        )
    except ValidationError as exc:
        return summary(field_errors(exc)[0])
    except ValidationFailed as exc:
        return summary(exc.errors)


def _conversation_input(raw: object) -> ConversationInput | str:
    try:
        item = schemas.NewConversation.model_validate(raw)
        return ConversationInput(
            _turns(item.messages),
            is_agent_memory=bool(item.is_agent_memory),
            tags=tuple(item.tags or ()),
            project=item.project,
            session_id=item.session_id,
            transcript_path=item.transcript_path,
        )
    except ValidationError as exc:
        return summary(field_errors(exc)[0])
    except ValidationFailed as exc:
        return summary(exc.errors)


def _failed(error: str) -> WriteOutcome:
    return WriteOutcome(Event.ERROR.value, error=f"Invalid item: {error}")


async def search_memories(body: Authorized[schemas.SearchMemoriesRequest], service: Service) -> JSONResponse:
    mode = body.mode or "hybrid"
    if mode not in RECIPES:
        raise ValidationFailed({"mode": [f"Must be one of {', '.join(RECIPES)}"]})
    if body.rerank not in (None, "", "cross_encoder", "none"):
        raise ValidationFailed({"rerank": ['Must be "cross_encoder" or null']})
    filters = search_filters(
        session_id=body.session_id,
        memory_type=body.memory_type,
        project=body.project,
        tag=body.tag,
        include_superseded=body.include_superseded,
        as_of=body.as_of,
        known_at=body.known_at,
    )
    hits = await service.workers.read(
        service.search,
        SearchRequest(
            user_id=body.user_id,
            query=body.query,
            top_k=body.top_k or 10,
            mode=mode,
            filters=filters,
            rerank=body.rerank == "cross_encoder",
            token_budget=body.token_budget or None,
            include_session_arm=body.include_session_arm,
            include_faded=bool(body.include_faded),
        ),
    )
    return render.CoreJSONResponse(render.search_response(body.query, hits))


# The hot path: its body validated in one pass and the endpoint called directly (api/json_body.py).
router.add_api_route(
    "/search",
    search_memories,
    methods=["POST"],
    operation_id="Memories_Search",
    summary="Search memories with hybrid BM25 + vector retrieval.",
    response_model=schemas.SearchResponse,
    responses=ERRORS,
    route_class_override=JsonBodyRoute,
)


@router.get(
    "",
    operation_id="Memories_List",
    summary="List memories, newest first, with filters and optional hybrid search.",
    response_model=schemas.MemoryListPagedResponse,
    responses=ERRORS,
)
async def list_memories(
    service: Service,
    user_id: QueryUser,
    app_id: Annotated[str | None, Query(description="Only memories written by this app.")] = None,
    categories: Annotated[str | None, Query(description="Comma-separated category names.")] = None,
    search_query: Annotated[str | None, Query(max_length=5000, description="Hybrid search inside the listing: the 1,000 most relevant memories passing the filters, then the rest newest first; total counts them all.")] = None,
    page: Annotated[schemas.QueryInt, Query(ge=1, le=MAX_PAGE, description="Page number (default 1).")] = 1,
    size: Annotated[schemas.QueryInt, Query(ge=1, le=100, description="Page size (default 10, max 100).")] = 10,
    include_superseded: Annotated[str | None, Query(description='"true" to include superseded and retracted memories.')] = None,
    as_of: Annotated[str | None, Query(description="Valid time: only facts true at this instant (ISO 8601 or Unix seconds).")] = None,
    known_at: Annotated[str | None, Query(description="Record time: only facts we held at this instant (ISO 8601 or Unix seconds).")] = None,
    memory_type: Annotated[str | None, Query(description="episodic | semantic | procedural; invalid values are ignored.")] = None,
) -> schemas.MemoryListPagedResponse:
    filters = MemoryFilters(
        app_name=app_id or None,
        categories=tuple(c.strip() for c in (categories or "").split(",") if c.strip()),
        include_superseded=(include_superseded or "").lower() == "true",
        as_of=parse_instant(as_of, "as_of"),
        known_at=parse_instant(known_at, "known_at"),
        memory_type=memory_type if memory_type in MEMORY_TYPES else None,
    )
    records, total = await service.workers.read(
        partial(service.list_memories, user_id, filters, offset=(page - 1) * size, limit=size, search_query=search_query)
    )
    return schemas.MemoryListPagedResponse(
        items=[render.list_item(m) for m in records],
        total=total,
        page=page,
        size=size,
        pages=math.ceil(total / size) if total else 0,
    )


@router.get(
    "/{memoryId}",
    operation_id="Memories_Get",
    summary="Get one memory by id.",
    response_model=schemas.MemoryDetailResponse,
    responses=WITH_NOT_FOUND,
)
async def get_memory(memory_id: MemoryIdPath, user_id: QueryUserOrKey, service: Service) -> schemas.MemoryDetailResponse:
    return render.detail(await service.workers.read(service.get, user_id, parse_memory_id(memory_id)))


@router.get(
    "/{memoryId}/history",
    operation_id="Memories_History",
    summary="Every change recorded for a memory, oldest first.",
    response_model=schemas.MemoryHistoryResponse,
    responses=WITH_NOT_FOUND,
)
async def memory_history(memory_id: MemoryIdPath, user_id: QueryUserOrKey, service: Service) -> schemas.MemoryHistoryResponse:
    return render.history(memory_id, await service.workers.read(service.history, user_id, parse_memory_id(memory_id)))


@router.delete(
    "",
    operation_id="Memories_BulkDelete",
    summary="Hard-delete memories by id: rows, full-text entries, vectors and history.",
    response_model=schemas.DeleteMemoriesResponse,
    responses=ERRORS,
)
async def delete_memories(body: Authorized[schemas.DeleteMemoriesRequest], service: Service) -> schemas.DeleteMemoriesResponse:
    count = await service.workers.write(partial(service.delete, body.user_id, body.memory_ids))
    return schemas.DeleteMemoriesResponse(message=f"Deleted {count} {'memory' if count == 1 else 'memories'}")
