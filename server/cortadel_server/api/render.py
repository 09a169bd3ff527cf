"""From domain records to the contract's response shapes."""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime
from typing import Any

import pydantic_core
from fastapi.responses import JSONResponse

from cortadel_server.api import schemas
from cortadel_server.pipeline.writer import WriteOutcome
from cortadel_server.retrieval.search import Hit
from cortadel_server.storage.base import HistoryEntry, MemoryRecord


@functools.lru_cache(maxsize=16_384)
def iso(ts: float | None) -> str | None:
    # Cached: the same instants (a memory's created_at) go out search after search, and formatting
    # one took 1.5 µs, ten a search, against 0.1 µs for a lookup.
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def created(outcome: WriteOutcome) -> dict[str, Any]:
    """One ``schemas.MemoryCreatedResponse``, every field given, in its field order."""
    record = outcome.record
    return {
        "id": outcome.id or "",
        "content": outcome.memory,
        "state": record.state if record else None,
        "created_at": iso(record.created_at) if record else None,
        "event": outcome.event,
        "app_name": record.app_name if record else None,
        "metadata": json.dumps(record.metadata) if record and record.metadata else None,
        "error": outcome.error,
    }


def ingest_item(outcome: WriteOutcome) -> dict[str, Any]:
    """One ``schemas.ConversationIngestItem``, every field given, in its field order."""
    return {"id": outcome.id or "", "memory": outcome.memory, "event": outcome.event, "error": outcome.error}


def conversation_result(outcomes: list[WriteOutcome]) -> dict[str, Any]:
    """A conversation's ``schemas.ConversationIngestResponse`` as its route answers it (unset fields left out)."""
    return {"results": [ingest_item(o) for o in outcomes]} if outcomes else {"no_facts_extracted": True}


def batch_response(memories: list[WriteOutcome], conversations: list[list[WriteOutcome]]) -> dict[str, Any]:
    """The batch answer as ``schemas.BatchResponse`` gives it, built as plain dicts like the search
    answer: building, validating and dumping 500 items' models took 2.7 ms a batch, the dicts 0.4
    (tests/test_api_batch.py holds the two equal)."""
    return {"memories": [created(o) for o in memories], "conversations": [conversation_result(c) for c in conversations]}


def _record_fields(m: MemoryRecord) -> dict[str, Any]:
    """The fields list items and the detail share; only the text's key and a few extras differ."""
    return {
        "id": m.id,
        "created_at": int(m.created_at),
        "state": m.state,
        "app_id": m.app_name,
        "app_name": m.app_name,
        "categories": m.categories,
        "memory_type": m.memory_type,
        "extraction_status": m.extraction_status,
        "valid_at": iso(m.valid_at),
        "invalid_at": iso(m.invalid_at),
        "is_current": m.is_current,
        "is_global": False,
        "metadata_": m.metadata,
        "gist": m.gist,
        "tags": m.tags,
        "project": m.project,
        "session_id": m.session_id,
        "source_turn_uuids": m.source_turn_uuids,
        "superseded_by": m.superseded_by,
        "expired_at": iso(m.expired_at),
    }


def list_item(m: MemoryRecord) -> schemas.MemoryListItemResponse:
    return schemas.MemoryListItemResponse(content=m.text, **_record_fields(m))


def detail(m: MemoryRecord) -> schemas.MemoryDetailResponse:
    return schemas.MemoryDetailResponse(text=m.text, transcript_path=m.transcript_path, **_record_fields(m))


class CoreJSONResponse(JSONResponse):
    """A JSONResponse written by pydantic-core's serializer instead of ``json.dumps``: the same bytes
    for the search answer (tests/test_search_render.py), in a third of the time (0.05 against
    0.16 ms for ten hits); a float that is not a number goes out as null, not as invalid JSON."""

    def render(self, content: Any) -> bytes:
        return pydantic_core.to_json(content, inf_nan_mode="null")


def search_response(query: str, hits: list[Hit]) -> dict[str, Any]:
    """The search answer as ``schemas.SearchResponse.model_dump(by_alias=True)`` gives it, built as
    plain dicts: building and dumping the models cost more than the rest of the HTTP layer
    (tests/test_search_render.py holds the two equal)."""
    return {"query": query, "results": [search_result(h) for h in hits], "total": len(hits)}


def search_result(hit: Hit) -> dict[str, Any]:
    """One ``schemas.HybridSearchResult``, by its wire names, in its field order."""
    m = hit.memory
    source = m.metadata.get("source")
    return {
        "id": m.id,
        "content": m.text,
        "rrf_score": float(hit.score),
        "created_at": iso(m.created_at),
        "app_name": m.app_name,
        "categories": m.categories,
        "memory_type": m.memory_type,
        "tags": m.tags,
        "source": source if isinstance(source, str) else None,
        "global": False,
        "gist": m.gist,
        "project_id": m.project,
        "member_ids": [],
        "similar_ids": [],
        "text_rank": hit.ranks.get("text"),
        "vector_rank": hit.ranks.get("vector"),
        "attributes": hit.attributes,
    }


def history(memory_id: str, entries: list[HistoryEntry]) -> schemas.MemoryHistoryResponse:
    return schemas.MemoryHistoryResponse(
        id=memory_id,
        events=[schemas.HistoryEventResponse(event=e.event, at=iso(e.at) or "", detail=e.detail) for e in entries],
    )
