"""Each server operation as data: what to send and how to read the answer.

Both clients run the same ``Call`` objects; they differ only in how they wait for I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from . import _wire
from ._models import (
    AddOptions,
    BatchConversation,
    BatchMemory,
    BatchResult,
    ChatMessage,
    ConversationOptions,
    ConversationResult,
    HealthResult,
    ListOptions,
    MemoryCreated,
    MemoryDetail,
    MemoryHistory,
    MemoryList,
    SearchOptions,
    SearchResults,
)

T = TypeVar("T")

MEMORIES = "/api/v1/memories"


@dataclass(frozen=True)
class Scope:
    """Who the calls are made for: the bound user (``None`` lets the API key decide) and the
    app name searches are logged under."""

    user_id: str | None
    app_name: str


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    decode: Callable[[_wire.Json], T]
    params: dict[str, str] | None = None
    body: _wire.Json | None = None
    idempotent: bool = False
    """Safe to send again after a failure (only such calls are retried)."""
    absent_on_404: bool = False
    """A 404 means "no such memory" and the call returns ``None``."""
    body_on_503: bool = False
    """A 503 carries a normal result (a degraded health report)."""


def add(scope: Scope, text: str, options: AddOptions | None) -> Call[MemoryCreated]:
    body = _wire.without_nulls({"user_id": scope.user_id, **_memory_fields(text, options)})
    return Call("POST", MEMORIES, _wire.memory_created, body=body)


def add_conversation(
    scope: Scope, messages: Iterable[ChatMessage], options: ConversationOptions | None
) -> Call[ConversationResult]:
    body = _wire.without_nulls({"user_id": scope.user_id, **_conversation_fields(messages, options)})
    return Call("POST", f"{MEMORIES}/from-conversation", _wire.conversation_result, body=body)


def add_batch(
    scope: Scope, memories: Iterable[str | BatchMemory], conversations: Iterable[BatchConversation]
) -> Call[BatchResult]:
    items = [m if isinstance(m, BatchMemory) else BatchMemory(m) for m in memories]
    body = _wire.without_nulls(
        {
            "user_id": scope.user_id,
            "memories": [_wire.without_nulls(_memory_fields(m.text, m.options)) for m in items],
            "conversations": [_wire.without_nulls(_conversation_fields(c.messages, c.options)) for c in conversations],
        }
    )
    return Call("POST", f"{MEMORIES}/batch", _wire.batch_result, body=body)


def _memory_fields(text: str, options: AddOptions | None) -> _wire.Json:
    """What one add sends about its memory (a batch sends the same per memory)."""
    o = options or AddOptions()
    return {
        "text": text,
        "infer": True if o.infer is None else o.infer,
        "app": o.app,
        "memory_type": o.memory_type,
        "metadata": None if o.metadata is None else dict(o.metadata),
        "project": o.project,
        "tags": None if o.tags is None else list(o.tags),
    }


def _conversation_fields(messages: Iterable[ChatMessage], options: ConversationOptions | None) -> _wire.Json:
    o = options or ConversationOptions()
    return {
        "messages": [_wire.without_nulls({"role": m.role, "content": m.content, "uuid": m.uuid}) for m in messages],
        "is_agent_memory": o.is_agent_memory,
        "tags": list(o.tags) if o.tags else None,
        "project": o.project,
        "session_id": o.session_id,
        "transcript_path": o.transcript_path,
    }


def search(scope: Scope, query: str, options: SearchOptions | None) -> Call[SearchResults]:
    o = options or SearchOptions()
    body = _wire.without_nulls(
        {
            "query": query,
            "user_id": scope.user_id,
            "app_name": scope.app_name,
            "top_k": o.top_k,
            "mode": o.mode,
            "session_id": o.session_id,
            "rerank": o.rerank,
            "memory_type": o.memory_type,
            "as_of": _instant(o.as_of),
            "known_at": _instant(o.known_at),
            "include_faded": o.include_faded,
            "token_budget": o.token_budget,
            "expand_query": o.expand_query,
            "include_session_arm": o.include_session_arm,
            "project": o.project,
            "tag": o.tag,
        }
    )
    return Call("POST", f"{MEMORIES}/search", _wire.search_results, body=body, idempotent=True)


def list_memories(scope: Scope, options: ListOptions | None) -> Call[MemoryList]:
    o = options or ListOptions()
    params = _wire.without_nulls(
        {
            "user_id": scope.user_id,
            "page": str(o.page),
            "size": str(o.size),
            "app_id": o.app_id or None,
            "categories": o.categories or None,
            "search_query": o.search_query or None,
            "include_superseded": "true" if o.include_superseded else None,
            "memory_type": o.memory_type or None,
            "as_of": _instant(o.as_of),
            "known_at": _instant(o.known_at),
        }
    )
    return Call("GET", MEMORIES, _wire.memory_list, params=params, idempotent=True)


def get(scope: Scope, memory_id: str) -> Call[MemoryDetail | None]:
    return Call[MemoryDetail | None](
        "GET",
        f"{MEMORIES}/{_segment(memory_id)}",
        _wire.memory_detail,
        params=_user_query(scope),
        idempotent=True,
        absent_on_404=True,
    )


def history(scope: Scope, memory_id: str) -> Call[MemoryHistory | None]:
    return Call[MemoryHistory | None](
        "GET",
        f"{MEMORIES}/{_segment(memory_id)}/history",
        _wire.memory_history,
        params=_user_query(scope),
        idempotent=True,
        absent_on_404=True,
    )


def delete(scope: Scope, memory_ids: Iterable[str]) -> Call[str]:
    body = _wire.without_nulls({"user_id": scope.user_id, "memory_ids": list(memory_ids)})
    return Call("DELETE", MEMORIES, _wire.message, body=body, idempotent=True)


def health() -> Call[HealthResult]:
    return Call("GET", "/api/health", _wire.health_result, idempotent=True, body_on_503=True)


def _user_query(scope: Scope) -> dict[str, str]:
    return {} if scope.user_id is None else {"user_id": scope.user_id}


def _segment(memory_id: str) -> str:
    return quote(memory_id, safe="")


def _instant(value: Any) -> str | None:
    return None if value is None else _wire.instant(value)
