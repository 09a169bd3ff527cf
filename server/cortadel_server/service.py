"""The memory service: the one core that REST and MCP both call.

It owns the storage, the providers, the retriever and the write pipeline, and speaks in domain
terms (records, hits, write outcomes). The front doors translate to and from their wire formats.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cortadel_server import __version__
from cortadel_server.config import Settings
from cortadel_server.curation.communities import Communities
from cortadel_server.curation.fading import Fading, RecallLog
from cortadel_server.curation.reconcile import RECONCILE, Reconciler
from cortadel_server.curation.reconcile_judge import ReconcileJudge
from cortadel_server.errors import DimensionMismatch, NotFound, ValidationFailed
from cortadel_server.media.captions import Captioner
from cortadel_server.media.ingest import MediaIngest
from cortadel_server.metrics import JobQueue, Metrics, RecentError
from cortadel_server.pipeline.budget import WriteBudget
from cortadel_server.pipeline.enrich import ENRICH
from cortadel_server.pipeline.model import Event
from cortadel_server.pipeline.writer import ConversationInput, ConversationTurn, TextInput, WriteOutcome, Writer
from cortadel_server.providers import build_chat_client, build_embedder, build_reranker
from cortadel_server.providers.embedding.base import Embedder
from cortadel_server.providers.reranking.base import Reranker
from cortadel_server.retrieval.search import Hit, Retriever, SearchRequest
from cortadel_server.storage import open_storage
from cortadel_server.storage.base import (
    INVALIDATED,
    SUPERSEDED,
    HistoryEntry,
    JobGroup,
    MemoryFilters,
    MemoryRecord,
    Storage,
    UserSummary,
)
from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.text import fingerprint
from cortadel_server.workers import WorkerPools

log = logging.getLogger("cortadel")

#: How many memories a listing with a search query ranks by relevance; the rest follow newest first.
RANKED_LISTING_DEPTH = 1000

#: how many users the overview lists at most (the most recently active)
USERS_LIMIT = 1000
#: how many versions of one fact the dashboard's timeline walks at most (chains are short; a cycle is not endless)
VERSION_LIMIT = 100


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
        fading = Fading.from_settings(settings)
        self.retriever = Retriever(
            storage, self.embedder, self.reranker, observe_timings=self.metrics.observe_search, fading=fading
        )
        #: with fading on, what searches return is recorded as recalled (in the background)
        self.recalls = RecallLog(storage, settings.now) if fading is not None else None
        #: documents and images, read into passages or a caption and written as one batch
        self.media = MediaIngest(settings, self.add_batch, Captioner.from_settings(settings))
        self.communities = Communities.from_settings(settings, storage)
        self.writer = Writer.from_settings(settings, storage, self.embedder, self.retriever, watch_chat=self.metrics.watch_chat)
        chat = build_chat_client(settings)
        #: reconciliation runs on the writer's job queue; an LLM, when configured, judges what the rules are unsure of
        self.reconciler = Reconciler(storage, self.embedder, settings,
                                     ReconcileJudge(self.metrics.watch_chat(chat)) if chat is not None else None,
                                     self.writer.enricher.wake)
        self.writer.enricher.handlers[RECONCILE] = self.reconciler.run_job
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
        """Start the off-request-path work: the enrichment job worker, and (in the one process of
        several serving a SQLite file that holds that duty) the reconcile schedule and the repair
        of embeddings an interrupted reindex left stale or missing."""
        self.writer.start_background()
        if not self.storage.holds_background_duty():
            return
        self.reconciler.start_schedule()
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
        self.reconciler.stop()
        self._closing.set()  # a running reindex stops after its batch; the next start resumes it
        with self._reindex_lock:
            self.writer.close()
            if self.recalls is not None:
                self.recalls.close()
            self.media.close()
            self.communities.close()
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
        self._wrote(user_id, outcome.extra.get("results", [outcome]))
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
        self._wrote(user_id, outcomes)
        return outcomes

    def add_batch(
        self, user_id: str, inputs: Sequence[TextInput | ConversationInput], *, budget: WriteBudget | None = None
    ) -> list[list[WriteOutcome]]:
        """Many texts and conversations of one user in one transaction; per input, its outcomes."""
        outcomes = self.writer.add_batch(user_id, inputs, budget)
        self._wrote(user_id, [o for per_input in outcomes for o in per_input])
        return outcomes

    def _wrote(self, user_id: str, outcomes: Sequence[WriteOutcome]) -> None:
        """Count a write's events; the facts a "forget X" deleted leave the communities' words."""
        self.metrics.count_writes(o.event for o in outcomes)
        deleted = [o.id for o in outcomes if o.event == Event.DELETE_ENTITY.value and o.id is not None]
        if deleted:
            self.communities.forget(user_id, deleted)

    def delete(self, user_id: str, ids: Sequence[str]) -> int:
        count = self.storage.delete_memories(user_id, ids)
        if count:
            self.communities.forget(user_id, ids)  # their words may quote what went
        return count

    def delete_user(self, user_id: str) -> dict[str, int]:
        """Erase everything of one user; the rows erased per table (the receipt)."""
        erased = self.storage.delete_user(user_id)
        self.communities.forget(user_id)
        log.info("erased a user: %s", ", ".join(f"{table}={count}" for table, count in erased.items()))
        return erased

    # -- reads -----------------------------------------------------------------------------------
    def search(self, request: SearchRequest) -> list[Hit]:
        """A search by an agent: what it returns counts as recalled (for fading)."""
        hits = self.retriever.search(request)
        if self.recalls is not None:
            self.recalls.note(request.user_id, [h.memory.id for h in hits])
        return hits

    def get(self, user_id: str, memory_id: str) -> MemoryRecord:
        record = self.storage.get_memory(user_id, memory_id)
        if record is None:
            raise NotFound(f"Memory {memory_id} not found")
        return record

    def list_memories(
        self,
        user_id: str,
        filters: MemoryFilters,
        *,
        offset: int,
        limit: int,
        search_query: str | None = None,
        ranked_depth: int = RANKED_LISTING_DEPTH,
    ) -> tuple[list[MemoryRecord], int]:
        """A page of the memories passing ``filters`` and their total: newest first, or with a
        ``search_query`` the ``ranked_depth`` most relevant in hybrid order, then every other one
        newest first — each memory exactly once, and the total counts them all.

        The ranked head is computed at the same depth for every page: fused scores depend on how
        deep each arm fetched, so ranking only as deep as the page would let pages overlap; ranking
        everything costs seconds at 100,000 memories."""
        if not search_query:
            return self.storage.list_memories(user_id, filters, offset=offset, limit=limit)
        total = self.storage.count_matching(user_id, filters)
        if offset >= total:
            return [], total
        # Every memory is listed once, faded or not: the ranked head hides none, so the tail stays exact.
        hits = self.retriever.search(
            SearchRequest(user_id, search_query, top_k=min(total, ranked_depth), filters=filters, include_faded=True)
        )
        head = [h.memory for h in hits]
        page = head[offset : offset + limit]
        if len(page) == limit or offset + len(page) >= total:
            return page, total
        # The rest, newest first: one query that leaves the ranked ones out.
        rest, _ = self.storage.list_memories(
            user_id, dataclasses.replace(filters, exclude_ids=tuple(m.id for m in head)),
            offset=max(0, offset - len(head)), limit=limit - len(page),
        )
        return page + rest, total

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

    # -- the dashboard: curating and inspecting ------------------------------------------------------
    def revise(self, user_id: str, memory_id: str, text: str, *, source: str = "dashboard") -> MemoryRecord:
        """A corrected wording of a current fact, stored as a new version that supersedes it.

        A correction, not a change in the world: the new version keeps the old one's valid time, and
        the old one leaves the record (expired, valid time left open), so a look at the past through
        ``known_at`` still finds the old wording and one through ``as_of`` only the new."""
        vector = self.embedder.embed([text])[0]
        with self.storage.write(user_id):
            old = self.get(user_id, memory_id)
            if not old.is_current:
                raise ValidationFailed({"text": ["Only a current fact can be edited; this one is " + old.state]})
            now = time.time()
            new = dataclasses.replace(
                old, id=str(uuid.uuid4()), text=text, fingerprint=fingerprint(text), gist=None, created_at=now,
                updated_at=now, valid_at=old.valid_at if old.valid_at is not None else old.created_at,
                extraction_status="pending", metadata=dict(old.metadata), tags=list(old.tags),
                categories=list(old.categories), source_turn_uuids=list(old.source_turn_uuids),
            )
            self.storage.insert_memory(new, vector)
            self.storage.update_memory(user_id, old.id, expired_at=now, superseded_by=new.id, state=SUPERSEDED, updated_at=now)
            self.storage.record_event(user_id, old.id, Event.SUPERSEDE.value, now, {"superseded_by": new.id, "statement": text, "source": source})
            self.storage.record_event(user_id, new.id, Event.SUPERSEDE.value, now, {"supersedes": old.id, "source": source})
            self.storage.enqueue_job(ENRICH, user_id, new.id, {})  # its entities and categories, as for any new fact
        self.writer.enricher.wake()
        return self.get(user_id, new.id)

    def invalidate(self, user_id: str, memory_id: str, *, since: float | None = None, source: str = "dashboard") -> MemoryRecord:
        """A current fact stops being true at ``since`` (default now), as a retraction does."""
        with self.storage.write(user_id):
            fact = self.get(user_id, memory_id)
            if not fact.is_current:
                raise ValidationFailed({"memory_id": ["Only a current fact can be invalidated; this one is " + fact.state]})
            now = time.time()
            began = fact.valid_at if fact.valid_at is not None else fact.created_at
            ends = now if since is None else since
            if ends < began:
                raise ValidationFailed({"invalid_since": ["Must not be before the fact became true"]})
            self.storage.update_memory(user_id, memory_id, invalid_at=ends, expired_at=now, state=INVALIDATED, updated_at=now)
            self.storage.record_event(user_id, memory_id, Event.INVALIDATE.value, now, {"invalid_at": ends, "source": source})
        return self.get(user_id, memory_id)

    def versions(self, user_id: str, memory_id: str) -> list[MemoryRecord]:
        """Every version of the fact's slot, oldest first: back along the history's ``supersedes``
        links, forward along ``superseded_by``."""
        fact = self.get(user_id, memory_id)
        chain = [fact]
        seen = {fact.id}
        while len(chain) < VERSION_LIMIT:
            earlier = next((e.detail.get("supersedes") for e in reversed(self.storage.history(user_id, chain[0].id))
                            if e.detail.get("supersedes") not in (None, *seen)), None)
            record = self.storage.get_memory(user_id, str(earlier)) if earlier else None
            if record is None:
                break
            chain.insert(0, record)
            seen.add(record.id)
        while len(chain) < VERSION_LIMIT and chain[-1].superseded_by and chain[-1].superseded_by not in seen:
            record = self.storage.get_memory(user_id, chain[-1].superseded_by)
            if record is None:
                break
            chain.append(record)
            seen.add(record.id)
        return chain

    def entities(self, user_id: str) -> dict[str, list[str]]:
        """The user's entities: canonical name → its aliases (folded), both sorted."""
        grouped: dict[str, list[str]] = {}
        for alias, canonical in self.storage.entity_names(user_id).items():
            grouped.setdefault(canonical, []).append(alias)
        return {canonical: sorted(aliases) for canonical, aliases in sorted(grouped.items(), key=lambda kv: kv[0].lower())}

    def entity_facts(self, user_id: str, canonical: str, limit: int) -> list[MemoryRecord]:
        """The current facts that mention the entity, most recent first."""
        found = self.storage.memories_for_entities(user_id, [canonical], MemoryFilters(), limit)
        records = self.storage.get_memories(user_id, [s.id for s in found])
        return [records[s.id] for s in found if s.id in records]

    def user_summaries(self, limit: int = USERS_LIMIT) -> list[UserSummary]:
        """Who has memories: counts by state and last activity, most recently active first."""
        return self.storage.user_summaries(limit)

    def system_status(self) -> SystemStatus:
        """What an operator looks at first: health, what is stored and what is waiting."""
        storage = self.storage
        return SystemStatus(
            health=self.health(),
            backend=storage.backend,
            memories=storage.count_memories(),
            jobs=storage.job_groups() if isinstance(storage, JobQueue) else None,
            storage_bytes=storage.file_size() if isinstance(storage, SqliteStorage) else None,
            recent_errors=self.metrics.recent_errors(),
        )



@dataclass(frozen=True)
class SystemStatus:
    health: Health
    backend: str
    memories: int
    jobs: list[JobGroup] | None
    storage_bytes: int | None
    recent_errors: list[RecentError]


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
