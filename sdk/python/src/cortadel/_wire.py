"""JSON bodies to result objects, and option values to wire values.

The server may send any nullable field as an explicit ``null``; a ``null`` reads as the field's
default, as an absent key does.
"""

from __future__ import annotations

from datetime import timezone
from typing import Any

from ._models import (
    BatchResult,
    ConversationIngestItem,
    ConversationResult,
    HealthResult,
    HistoryEvent,
    Instant,
    MemoryCreated,
    MemoryDetail,
    MemoryHistory,
    MemoryList,
    MemoryListItem,
    SearchHit,
    SearchResults,
)

Json = dict[str, Any]


def instant(value: Instant) -> str:
    """An ISO 8601 string for the wire; a naive ``datetime`` is taken to be UTC."""
    if isinstance(value, str):
        return value
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def memory_created(d: Json) -> MemoryCreated:
    return MemoryCreated(
        id=d.get("id") or "",
        content=d.get("content"),
        state=d.get("state"),
        created_at=d.get("created_at"),
        event=d.get("event"),
        app_name=d.get("app_name"),
        metadata=d.get("metadata"),
        error=d.get("error"),
    )


def conversation_result(d: Json) -> ConversationResult:
    items = d.get("results")
    return ConversationResult(
        results=[
            ConversationIngestItem(id=i.get("id"), memory=i.get("memory"), event=i.get("event"), error=i.get("error"))
            for i in items
        ]
        if items
        else None,
        no_facts_extracted=d.get("no_facts_extracted"),
    )


def batch_result(d: Json) -> BatchResult:
    return BatchResult(
        memories=[memory_created(m) for m in d.get("memories") or []],
        conversations=[conversation_result(c) for c in d.get("conversations") or []],
    )


def search_results(d: Json) -> SearchResults:
    return SearchResults(
        query=d.get("query") or "",
        results=[_search_hit(h) for h in d.get("results") or []],
        total=d.get("total") or 0,
    )


def _search_hit(h: Json) -> SearchHit:
    return SearchHit(
        id=h.get("id") or "",
        content=h.get("content") or "",
        rrf_score=h.get("rrf_score"),
        created_at=h.get("created_at"),
        app_name=h.get("app_name"),
        categories=h.get("categories"),
        memory_type=h.get("memory_type"),
        tags=h.get("tags"),
        source=h.get("source"),
        is_global=bool(h.get("global")),
        gist=h.get("gist"),
        project_id=h.get("project_id"),
        member_ids=h.get("member_ids"),
        similar_ids=h.get("similar_ids"),
        text_rank=h.get("text_rank"),
        vector_rank=h.get("vector_rank"),
        attributes=h.get("attributes"),
    )


def memory_list(d: Json) -> MemoryList:
    return MemoryList(
        items=[_memory_list_item(i) for i in d.get("items") or []],
        total=d.get("total") or 0,
        page=d.get("page") or 0,
        size=d.get("size") or 0,
        pages=d.get("pages") or 0,
    )


def _memory_list_item(i: Json) -> MemoryListItem:
    return MemoryListItem(
        id=i.get("id") or "",
        content=i.get("content") or "",
        created_at=i.get("created_at") or 0,
        state=i.get("state") or "active",
        app_id=i.get("app_id"),
        app_name=i.get("app_name"),
        categories=i.get("categories") or [],
        memory_type=i.get("memory_type"),
        extraction_status=i.get("extraction_status"),
        valid_at=i.get("valid_at"),
        invalid_at=i.get("invalid_at"),
        is_current=i.get("is_current"),
        is_global=bool(i.get("is_global")),
        metadata=i.get("metadata_"),
        gist=i.get("gist"),
        tags=i.get("tags"),
        project=i.get("project"),
        session_id=i.get("session_id"),
        source_turn_uuids=i.get("source_turn_uuids"),
        superseded_by=i.get("superseded_by"),
        expired_at=i.get("expired_at"),
    )


def memory_detail(d: Json) -> MemoryDetail:
    return MemoryDetail(
        id=d.get("id") or "",
        text=d.get("text") or "",
        created_at=d.get("created_at") or 0,
        state=d.get("state") or "active",
        app_id=d.get("app_id"),
        app_name=d.get("app_name"),
        categories=d.get("categories") or [],
        metadata=d.get("metadata_"),
        valid_at=d.get("valid_at"),
        invalid_at=d.get("invalid_at"),
        is_current=d.get("is_current"),
        superseded_by=d.get("superseded_by"),
        is_global=bool(d.get("is_global")),
        gist=d.get("gist"),
        memory_type=d.get("memory_type"),
        tags=d.get("tags"),
        project=d.get("project"),
        session_id=d.get("session_id"),
        source_turn_uuids=d.get("source_turn_uuids"),
        transcript_path=d.get("transcript_path"),
        extraction_status=d.get("extraction_status"),
        expired_at=d.get("expired_at"),
    )


def memory_history(d: Json) -> MemoryHistory:
    return MemoryHistory(
        id=d.get("id") or "",
        events=[
            HistoryEvent(event=e.get("event") or "", at=e.get("at") or "", detail=e.get("detail") or {})
            for e in d.get("events") or []
        ],
    )


def health_result(d: Json) -> HealthResult:
    return HealthResult(status=d.get("status") or "", checked_at=d.get("checked_at"), checks=d.get("checks"))


def message(d: Json) -> str:
    return str(d.get("message") or "")


def without_nulls(fields: dict[str, Any | None]) -> Json:
    """Drop unset fields: the server treats a missing key as "not given"."""
    return {k: v for k, v in fields.items() if v is not None}
