"""The memory service: the one core that REST and MCP both call.

It owns the storage, the providers, the retriever and the write pipeline, and speaks in domain
terms (records, hits, write outcomes). The front doors translate to and from their wire formats.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cortadel_server import __version__
from cortadel_server.config import Settings
from cortadel_server.errors import DimensionMismatch, NotFound
from cortadel_server.metrics import Metrics
from cortadel_server.pipeline.budget import WriteBudget
from cortadel_server.pipeline.writer import ConversationTurn, WriteOutcome, Writer
from cortadel_server.providers import build_embedder, build_reranker
from cortadel_server.providers.embedding.base import Embedder
from cortadel_server.providers.reranking.base import Reranker
from cortadel_server.retrieval.search import Hit, Retriever, SearchRequest
from cortadel_server.storage import open_storage
from cortadel_server.storage.base import HistoryEntry, MemoryFilters, MemoryRecord, Storage
from cortadel_server.workers import WorkerPools

log = logging.getLogger("cortadel")


@dataclass(frozen=True)
class Check:
    ok: bool
    latency_ms: int | None = None
    error: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Health:
    ok: bool
    checked_at: float
    database: Check
    embeddings: Check
    indexes: Check


class MemoryService:
    def __init__(self, settings: Settings, storage: Storage, embedder: Embedder, reranker: Reranker | None) -> None:
        self.settings = settings
        self.storage = storage
        self.metrics = Metrics(storage)
        self.embedder = self.metrics.watch_embedder(embedder)
        self.reranker = self.metrics.watch_reranker(reranker)
        self.retriever = Retriever(storage, self.embedder, self.reranker, observe_timings=self.metrics.observe_search)
        self.writer = Writer.from_settings(settings, storage, self.embedder, self.retriever, watch_chat=self.metrics.watch_chat)
        #: the front doors run writes, searches and health checks here, each kind in its own pool
        self.workers = WorkerPools(writes=settings.write_workers, reads=settings.read_workers)
        #: one re-embedding run at a time (a reindex request, the startup repair)
        self._reindex_lock = threading.Lock()
        self._closing = threading.Event()

    @classmethod
    def open(cls, settings: Settings) -> MemoryService:
        """Open storage and providers, then run the dimension guard."""
        storage = open_storage(settings)
        embedder = build_embedder(settings)
        service = cls(settings, storage, embedder, build_reranker(settings))
        service.guard_dimension()
        return service

    def start_background(self) -> None:
        """Start the off-request-path work: the enrichment job worker, and the repair of embeddings
        an interrupted reindex left stale or missing."""
        self.writer.start_background()
        info = self.storage.index_info()
        if info.missing_embeddings or info.reindex_target:
            threading.Thread(target=self._repair_embeddings, name="cortadel-reindex", daemon=True).start()

    def _repair_embeddings(self) -> None:
        try:
            count = self.reindex(resume_only=True)
            log.info("reindex: re-embedded %d memories left by an interrupted run", count)
        except Exception:  # a failed repair is reported by the health check, never fatal
            log.exception("reindex: repair of stale embeddings failed")

    def close(self) -> None:
        self._closing.set()  # a running reindex stops after its batch; the next start resumes it
        with self._reindex_lock:
            self.writer.close()
            self.storage.close()

    # -- startup ---------------------------------------------------------------------------------
    def guard_dimension(self) -> None:
        info = self.storage.index_info()
        if info.dim is None:
            self.storage.ensure_vector_index(self.embedder.dim, self.model_label)
            return
        # An interrupted reindex to this very embedder is resumed (start_background), not refused.
        resumable = info.reindex_target == self.model_label
        if info.dim != self.embedder.dim and not resumable and not self.settings.allow_dim_mismatch:
            raise DimensionMismatch(
                f"stored vectors have dimension {info.dim} ({info.model}) but the embedder "
                f"{self.model_label} gives {self.embedder.dim}: run `cortadel reindex` to re-embed, "
                "or set CORTADEL_ALLOW_DIM_MISMATCH=true to start anyway"
            )

    @property
    def model_label(self) -> str:
        return f"{self.embedder.provider}/{self.embedder.model}"

    # -- writes ----------------------------------------------------------------------------------
    def add(
        self,
        user_id: str,
        text: str,
        *,
        infer: bool = True,
        app_name: str | None = None,
        memory_type: str | None = None,
        metadata: dict[str, Any] | None = None,
        project: str | None = None,
        tags: Sequence[str] = (),
        session_id: str | None = None,
        at: float | None = None,
        source: str = "add",
        budget: WriteBudget | None = None,
    ) -> WriteOutcome:
        outcome = self.writer.add_text(
            user_id,
            text,
            infer=infer,
            app_name=app_name,
            memory_type=memory_type,
            metadata=metadata or {},
            project=project,
            tags=list(tags),
            source=source,
            session_id=session_id,
            at=at,
            budget=budget,
        )
        self.metrics.count_writes(o.event for o in outcome.extra.get("results", [outcome]))
        return outcome

    def add_conversation(
        self,
        user_id: str,
        turns: Sequence[ConversationTurn],
        *,
        is_agent_memory: bool = False,
        app_name: str | None = None,
        tags: Sequence[str] = (),
        project: str | None = None,
        session_id: str | None = None,
        transcript_path: str | None = None,
        budget: WriteBudget | None = None,
    ) -> list[WriteOutcome]:
        outcomes = self.writer.add_conversation(
            user_id,
            turns,
            is_agent_memory=is_agent_memory,
            app_name=app_name,
            tags=list(tags),
            project=project,
            session_id=session_id,
            transcript_path=transcript_path,
            budget=budget,
        )
        self.metrics.count_writes(o.event for o in outcomes)
        return outcomes

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        return self.storage.delete_memories(user_id, ids)

    def delete_user(self, user_id: str) -> dict[str, int]:
        """Erase everything of one user; the rows erased per table (the receipt)."""
        erased = self.storage.delete_user(user_id)
        log.info("erased a user: %s", ", ".join(f"{table}={count}" for table, count in erased.items()))
        return erased

    # -- reads -----------------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> list[Hit]:
        return self.retriever.search(request)

    def get(self, user_id: str, memory_id: str) -> MemoryRecord:
        record = self.storage.get_memory(user_id, memory_id)
        if record is None:
            raise NotFound(f"Memory {memory_id} not found")
        return record

    def list_memories(
        self, user_id: str, filters: MemoryFilters, *, offset: int, limit: int, search_query: str | None = None
    ) -> tuple[list[MemoryRecord], int]:
        """A page of the memories passing ``filters`` and their total: newest first, or with a
        ``search_query`` every one of them in hybrid relevance order (the total counts them all).

        The relevance order is computed over all of them for every page: fused scores depend on how
        deep each arm fetched, so ranking only as deep as the page would let pages overlap."""
        if not search_query:
            return self.storage.list_memories(user_id, filters, offset=offset, limit=limit)
        _, total = self.storage.list_memories(user_id, filters, offset=0, limit=0)
        if offset >= total:
            return [], total
        hits = self.retriever.search(SearchRequest(user_id, search_query, top_k=total, filters=filters))
        return [h.memory for h in hits[offset : offset + limit]], total

    def history(self, user_id: str, memory_id: str) -> list[HistoryEntry]:
        self.get(user_id, memory_id)
        return self.storage.history(user_id, memory_id)

    # -- operations ------------------------------------------------------------------------------
    def health(self) -> Health:
        started = time.perf_counter()
        # Health is open to anyone: name the backend, never its path or credentials.
        where = f"{self.storage.backend}://"
        try:
            self.storage.ping()
            database = Check(True, _ms(started), fields={"url": where})
        except Exception as exc:  # noqa: BLE001 - any failure is the health check's answer, not a crash
            database = Check(False, _ms(started), str(exc), {"url": where})
        started = time.perf_counter()
        embed_fields = {"provider": self.embedder.provider, "model": self.embedder.model, "dim": self.embedder.dim}
        try:
            vector = self.embedder.embed(["health check"])
            ok = vector.shape == (1, self.embedder.dim)
            embeddings = Check(ok, _ms(started), None if ok else f"embedder returned shape {vector.shape}", embed_fields)
        except Exception as exc:  # noqa: BLE001 - as above
            embeddings = Check(False, _ms(started), str(exc), embed_fields)
        try:
            info = self.storage.index_info()
            mismatches = (
                [f"{name}: dimension {info.dim} != embedder {self.embedder.dim}" for name in info.vector_indexes]
                if info.dim is not None and info.dim != self.embedder.dim
                else []
            )
            problems = (["vector dimension mismatch: run `cortadel reindex`"] if mismatches else []) + (
                [f"{info.missing_embeddings} memories have no embedding (repaired in the background)"]
                if info.missing_embeddings else []
            )
            indexes = Check(
                not problems,
                error="; ".join(problems) or None,
                fields={"model": info.model, "provider_dim": self.embedder.dim,
                        "vector_indexes": info.vector_indexes, "mismatches": mismatches,
                        "missing_embeddings": info.missing_embeddings, "reindex_remaining": info.reindex_remaining},
            )
        except Exception as exc:  # noqa: BLE001 - as above
            indexes = Check(False, error=str(exc), fields={"provider_dim": self.embedder.dim,
                                                            "vector_indexes": [], "mismatches": []})
        return Health(database.ok and embeddings.ok and indexes.ok, time.time(), database, embeddings, indexes)

    def reindex(self, progress: Callable[[int], object] | None = None, batch: int = 256, *, resume_only: bool = False) -> int:
        """Re-embed every memory with the configured embedder (``resume_only``: finish an
        interrupted reindex and embed the memories that have none). Returns how many were embedded.

        Resumable: the old embeddings stay until replaced, and each batch commits with the progress
        it made, so a killed run leaves every memory searchable and the next start carries on.
        """
        done = 0
        with self._reindex_lock:
            # Resuming a reindex to another model than ours restarts it with ours.
            if not resume_only or self.storage.index_info().reindex_target is not None:
                self.storage.begin_reindex(self.embedder.dim, self.model_label)
            while not self._closing.is_set():
                while not self._closing.is_set() and (rows := self.storage.stale_embeddings(batch)):
                    vectors = self.embedder.embed([text for _, _, text in rows])
                    self.storage.set_embeddings([(u, m, v) for (u, m, _), v in zip(rows, vectors, strict=True)])
                    done += len(rows)
                    if progress is not None:
                        progress(len(rows))
                if self.storage.finish_reindex():
                    break
        return done

    @property
    def version(self) -> str:
        return __version__


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
