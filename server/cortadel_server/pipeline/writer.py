"""The write path: from a text or a conversation to stored, deduplicated facts.

NOTE FOR THE PIPELINE HELPER (from the lead): this is the lead's interim implementation so the
REST API works end to end. You own this file from here on. Keep the public interface that
``cortadel_server.service.MemoryService`` calls — ``Writer.from_settings(settings, storage,
embedder, retriever)``, ``Writer.add_text(...)``, ``Writer.add_conversation(...)``,
``Writer.close()``, ``WriteOutcome``, ``ConversationTurn`` — and replace the body with the real
pipeline (extractors, intents, decide, supersede, history, entities, jobs). Extend the interface
(new keyword arguments, new fields on WriteOutcome) freely; tell the lead what you changed.
The storage interface is ``cortadel_server.storage.base.Storage`` (see its docstrings), and
``cortadel_server.text.fingerprint`` is the dedup key stored on each record.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from cortadel_server.config import Settings
from cortadel_server.providers.embedding.base import Embedder
from cortadel_server.retrieval.search import Retriever
from cortadel_server.storage.base import MemoryRecord, Storage
from cortadel_server.text import fingerprint, words

#: Cosine similarity above which two statements count as the same fact.
NEAR_DUPLICATE = 0.97


@dataclass(frozen=True)
class ConversationTurn:
    role: str
    content: str
    uuid: str | None = None


@dataclass
class WriteOutcome:
    """One fact's fate: the event, the memory it concerns, or the error."""

    event: str
    id: str | None = None
    memory: str | None = None
    error: str | None = None
    record: MemoryRecord | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _same_words(a: str, b: str) -> bool:
    """Near-identical wording: the same numbers and nearly the same words."""
    wa, wb = set(words(a)), set(words(b))
    if {w for w in wa if w.isdigit()} != {w for w in wb if w.isdigit()}:
        return False
    return len(wa & wb) / max(1, len(wa | wb)) >= 0.8


class Writer:
    def __init__(self, settings: Settings, storage: Storage, embedder: Embedder, retriever: Retriever) -> None:
        self.settings = settings
        self.storage = storage
        self.embedder = embedder
        self.retriever = retriever

    @classmethod
    def from_settings(cls, settings: Settings, storage: Storage, embedder: Embedder, retriever: Retriever) -> Writer:
        return cls(settings, storage, embedder, retriever)

    def start_background(self) -> None:
        pass

    def close(self) -> None:
        pass

    def add_text(
        self,
        user_id: str,
        text: str,
        *,
        infer: bool,
        app_name: str | None,
        memory_type: str | None,
        metadata: dict[str, Any],
        project: str | None,
        tags: list[str],
        source: str,
    ) -> WriteOutcome:
        vector = self.embedder.embed([text])[0]
        now = time.time()
        with self.storage.write():
            existing = self.storage.find_by_fingerprint(user_id, fingerprint(text))
            if existing is None:
                from cortadel_server.storage.base import MemoryFilters

                near = self.storage.vector_search(user_id, vector, MemoryFilters(), 1)
                if near and near[0].score >= NEAR_DUPLICATE:
                    candidate = self.storage.get_memory(user_id, near[0].id)
                    if candidate is not None and _same_words(candidate.text, text):
                        existing = candidate
            if existing is not None:
                return WriteOutcome("SKIP_DUPLICATE", existing.id, existing.text, record=existing)
            record = MemoryRecord(
                id=str(uuid.uuid4()),
                user_id=user_id,
                text=text,
                created_at=now,
                valid_at=now,
                fingerprint=fingerprint(text),
                memory_type=memory_type or "semantic",
                app_name=app_name,
                metadata=metadata,
                project=project,
                tags=tags,
                gist=text[:100],
            )
            self.storage.insert_memory(record, vector)
            self.storage.record_event(user_id, record.id, "ADD", now, {"source": source})
        return WriteOutcome("ADD", record.id, record.text, record=record)

    def add_conversation(
        self,
        user_id: str,
        turns: Sequence[ConversationTurn],
        *,
        is_agent_memory: bool,
        app_name: str | None,
        tags: list[str],
        project: str | None,
        session_id: str | None,
        transcript_path: str | None,
    ) -> list[WriteOutcome]:
        raise NotImplementedError("from-conversation arrives with the write pipeline")
