"""The write path: from a text or a conversation to stored, deduplicated, versioned facts.

    writer = Writer.from_settings(settings, storage, embedder, retriever)
    writer.start_background()       # the enrichment job worker

    outcomes = writer.add_conversation(
        "alice",
        [ConversationTurn("user", "I moved to Paris last month.", uuid="t1")],
        is_agent_memory=False, app_name=None, tags=[], project=None,
        session_id=None, transcript_path=None,
    )                               # [] means no_facts_extracted
    outcome = writer.add_text("alice", "I live in Berlin.", infer=True, app_name="cli",
                              memory_type=None, metadata={}, project=None, tags=[], source="add")
    outcome.event, outcome.id, outcome.memory, outcome.record

    writer.close()

Per candidate fact, in one storage write transaction: find its neighbours among the user's current
facts (exact fingerprint, vector similarity and BM25, or the entity's facts for a deletion),
decide (`cortadel_server.pipeline.decide`), apply the event and record it in the fact history.
Because the neighbours are read inside the same serialised transaction that writes, two concurrent
writes of one fact give one `ADD` and one `SKIP_DUPLICATE`. Embeddings, and any LLM call, happen
before the transaction.

Events and what they store:
  ADD             a new current fact (extraction_status "pending" and an enrich job when inferring)
  SKIP_DUPLICATE  nothing; the outcome names the existing fact
  TOUCH           the existing fact's updated_at, and a TOUCH history entry
  SUPERSEDE       a new fact; the old one gets invalid_at = the new valid_at (valid time),
                  expired_at = now (record time), superseded_by, state "superseded"
  RESOLVE         as SUPERSEDE, the old (open) item in state "resolved"
  INVALIDATE      the retracted fact gets invalid_at = when it was retracted, expired_at = now,
                  state "invalidated"; no new fact
  DELETE_ENTITY   every fact mentioning the entity is deleted (one outcome per fact)
  ERROR           nothing; `error` says why (an LLM outage without fallback, a failed write)
"""

from __future__ import annotations

import dataclasses
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from cortadel_server.config import Settings
from cortadel_server.errors import CortadelError
from cortadel_server.pipeline.classify import Taxonomy
from cortadel_server.pipeline.decide import decide, slot_query
from cortadel_server.pipeline.enrich import ENRICH, Enricher, canonical_entity
from cortadel_server.pipeline.extract import Extractor, build_extractor
from cortadel_server.pipeline.llm import ExtractionFailed, LlmJudge
from cortadel_server.pipeline.model import (
    Candidate,
    Decision,
    Event,
    Intent,
    MemoryType,
    Neighbour,
    Turn,
)
from cortadel_server.pipeline.rules import RulesExtractor, is_compound
from cortadel_server.providers import build_chat_client
from cortadel_server.providers.embedding.base import Embedder
from cortadel_server.storage.base import (
    INVALIDATED,
    RESOLVED,
    SUPERSEDED,
    MemoryFilters,
    MemoryRecord,
    Storage,
)
from cortadel_server.text import fingerprint

if TYPE_CHECKING:
    from cortadel_server.retrieval.search import Retriever

__all__ = ["ConversationTurn", "WriteOutcome", "Writer"]

log = logging.getLogger("cortadel.pipeline")

#: How many nearest facts each arm (vector, BM25) offers decide() per candidate.
NEIGHBOURS_PER_ARM = 8
_MEMORY_TYPES = frozenset(t.value for t in MemoryType)
#: How many facts one "forget everything about X" may delete at most.
ENTITY_DELETE_LIMIT = 10_000


@dataclass(frozen=True)
class ConversationTurn:
    role: str
    content: str
    uuid: str | None = None
    #: when the turn was said (Unix seconds); None means now. Time expressions resolve against it.
    at: float | None = None


@dataclass
class WriteOutcome:
    """One fact's fate: the event, the memory it concerns, or the error.

    `id`/`memory` name the stored fact (the new one for ADD/SUPERSEDE/RESOLVE, the existing one for
    SKIP_DUPLICATE/TOUCH, the retracted or deleted one for INVALIDATE/DELETE_ENTITY); `record` is
    that fact as stored now; `extra` carries `targets` (ids acted on) and `reason`.
    """

    event: str
    id: str | None = None
    memory: str | None = None
    error: str | None = None
    record: MemoryRecord | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class _Scope:
    """What the request says about every fact it writes."""

    user_id: str
    infer: bool
    source: str
    app_name: str | None = None
    memory_type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    project: str | None = None
    tags: tuple[str, ...] = ()
    session_id: str | None = None
    transcript_path: str | None = None


def _ts(moment: datetime) -> float:
    return moment.timestamp()


class Writer:
    def __init__(
        self,
        storage: Storage,
        embedder: Embedder,
        extractor: Extractor,
        *,
        taxonomy: Taxonomy | None = None,
        judge: LlmJudge | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.storage = storage
        self.embedder = embedder
        self.extractor = extractor
        self.taxonomy = taxonomy or Taxonomy.from_setting(None)
        self.rules = RulesExtractor(self.taxonomy)
        self.judge = judge
        self.clock = clock
        self.enricher = Enricher(storage, self.taxonomy)  # job times are wall-clock times

    @classmethod
    def from_settings(cls, settings: Settings, storage: Storage, embedder: Embedder, retriever: Retriever | None = None) -> Writer:
        """The writer the settings describe (`retriever` is accepted for the service's wiring;
        neighbours come from the storage arms directly, inside the write transaction)."""
        taxonomy = Taxonomy.from_setting(settings.categories)
        chat = build_chat_client(settings) if settings.extractor == "llm" else None
        extractor = build_extractor(settings, chat)
        return cls(storage, embedder, extractor, taxonomy=taxonomy, judge=LlmJudge(chat) if chat else None)

    def start_background(self) -> None:
        self.enricher.start()

    def close(self) -> None:
        self.enricher.stop()

    # -- public entry points ---------------------------------------------------------------------
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
        session_id: str | None = None,
        at: float | None = None,
    ) -> WriteOutcome:
        """One text. With `infer` it runs through the extractor like a one-message conversation the
        user asked to remember (and is stored as written when the extractor finds no statement in
        it, a lone "thanks" say); without, it is
        stored verbatim, but retractions/resolutions in it are still recognised and it is still
        deduplicated. All results are in `extra["results"]`; the first one is returned."""
        scope = _Scope(user_id, infer, source, app_name, memory_type, dict(metadata), project, tuple(tags), session_id)
        turn = Turn("user", text, None, datetime.fromtimestamp(self.clock() if at is None else at, UTC))
        candidates: list[Candidate] = []
        if infer:
            try:
                candidates = self.extractor.extract([turn], explicit=True)
            except ExtractionFailed as exc:
                return WriteOutcome(Event.ERROR.value, error=str(exc))
        if not candidates:
            candidates = [self.rules.verbatim(text, turn)]
        outcomes = self._write(scope, candidates)
        if not outcomes:
            return WriteOutcome(Event.ERROR.value, memory=text, error="Nothing to forget: no current memory matches.")
        first = outcomes[0]
        first.extra["results"] = outcomes
        return first

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
        """Distil the turns into facts and store each one; [] when nothing was extracted (and
        nothing stored). An extraction outage without fallback gives one ERROR outcome."""
        now = self.clock()
        timed = [Turn(t.role, t.content, t.uuid, datetime.fromtimestamp(now if t.at is None else t.at, UTC)) for t in turns]
        try:
            candidates = self.extractor.extract(timed, is_agent_memory=is_agent_memory)
        except ExtractionFailed as exc:
            return [WriteOutcome(Event.ERROR.value, error=str(exc))]
        scope = _Scope(user_id, True, "conversation", app_name, None, {}, project, tuple(tags), session_id, transcript_path)
        return self._write(scope, candidates)

    # -- the pipeline ----------------------------------------------------------------------------
    def _write(self, scope: _Scope, candidates: Sequence[Candidate]) -> list[WriteOutcome]:
        if not candidates:
            return []
        texts = list(dict.fromkeys([c.text for c in candidates] + [_query(c) for c in candidates]))
        vectors = dict(zip(texts, self.embedder.embed(texts), strict=True))
        outcomes: list[WriteOutcome] = []
        forced = scope.memory_type if scope.memory_type in _MEMORY_TYPES else None  # invalid → classify
        for candidate in candidates:
            if forced:
                candidate = dataclasses.replace(candidate, memory_type=MemoryType(forced))
            try:
                outcomes.extend(self._one(scope, candidate, vectors[candidate.text], vectors[_query(candidate)]))
            except CortadelError as exc:
                log.error("write failed for %r: %s", candidate.text, exc)
                outcomes.append(WriteOutcome(Event.ERROR.value, memory=candidate.text, error=str(exc)))
        if any(o.event in (Event.ADD.value, Event.SUPERSEDE.value, Event.RESOLVE.value) for o in outcomes) and scope.infer:
            self.enricher.wake()
        return outcomes

    def _one(self, scope: _Scope, candidate: Candidate, vector: np.ndarray, query_vector: np.ndarray) -> list[WriteOutcome]:
        judged: tuple[Decision, Decision] | None = None
        if self.judge is not None and candidate.intent is Intent.REMEMBER:
            # Settle an ambiguous case with the model before taking the write lock.
            neighbours = self._neighbours(scope.user_id, candidate, query_vector)
            ruled = decide(candidate, neighbours)
            if ruled.ambiguous:
                judged = (ruled, self.judge.judge(candidate, neighbours, ruled))
        with self.storage.write():
            neighbours = self._neighbours(scope.user_id, candidate, query_vector)
            decision = decide(candidate, neighbours)
            if judged is not None and judged[0] == decision:
                decision = judged[1]
            if decision.event is Event.SUPERSEDE and not scope.infer and is_compound(candidate.text):
                # Two raw turns that start alike are not one fact corrected: verbatim text of several
                # sentences is only deduplicated.
                decision = Decision(Event.ADD, (), "verbatim text is only deduplicated")
            return self._apply(scope, candidate, decision, vector, {n.id: n for n in neighbours})

    def _neighbours(self, user_id: str, candidate: Candidate, query_vector: np.ndarray) -> list[Neighbour]:
        """The current facts decide() should compare the candidate with, best first (for an entity
        deletion: every fact, past versions included, oldest first)."""
        current = MemoryFilters()
        query = _query(candidate)
        if candidate.intent is Intent.FORGET_ENTITY:
            # Forgetting someone removes the past versions too, not only what is current.
            everything = MemoryFilters(include_superseded=True)
            canonical = canonical_entity(query, self.storage.entity_names(user_id))
            linked = self.storage.memories_for_entities(user_id, [canonical], everything, ENTITY_DELETE_LIMIT)
            texts = self.storage.text_search(user_id, query, everything, ENTITY_DELETE_LIMIT)
            found = self.storage.get_memories(user_id, list(dict.fromkeys(s.id for s in [*texts, *linked])))
            return [Neighbour(r.id, r.text) for r in sorted(found.values(), key=lambda r: r.created_at)]
        # Full-text hits count as candidates without a similarity; the vector arm gives one.
        scores = {s.id: 0.0 for s in self.storage.text_search(user_id, query, current, NEIGHBOURS_PER_ARM)}
        by_slot = slot_query(candidate.text) if candidate.intent is Intent.REMEMBER else None
        if by_slot:
            scores.update({s.id: 0.0 for s in self.storage.text_search(user_id, by_slot, current, NEIGHBOURS_PER_ARM)})
        for hit in self.storage.vector_search(user_id, query_vector, current, NEIGHBOURS_PER_ARM):
            scores[hit.id] = max(hit.score, 0.0)
        same = self.storage.find_by_fingerprint(user_id, fingerprint(candidate.text))
        if same is not None:
            scores[same.id] = 1.0
        records = self.storage.get_memories(user_id, list(scores))
        neighbours = [Neighbour(r.id, r.text, scores[r.id]) for r in records.values() if r.is_current]
        return sorted(neighbours, key=lambda n: -n.score)

    def _apply(
        self,
        scope: _Scope,
        candidate: Candidate,
        decision: Decision,
        vector: np.ndarray,
        neighbours: dict[str, Neighbour],
    ) -> list[WriteOutcome]:
        now = self.clock()
        user = scope.user_id
        event = decision.event
        extra = {"targets": list(decision.targets), "reason": decision.reason}
        if event is Event.NOOP:
            log.info("no-op for %r: %s", candidate.text, decision.reason)
            return []
        if event is Event.DELETE_ENTITY:
            gone = [(t, neighbours[t].text) for t in decision.targets]
            self.storage.delete_memories(user, [t for t, _ in gone])
            return [WriteOutcome(event.value, t, text, extra=dict(extra)) for t, text in gone]
        if event in (Event.SKIP_DUPLICATE, Event.TOUCH):
            target = decision.targets[0]
            if event is Event.TOUCH:
                self.storage.update_memory(user, target, updated_at=now)
                self.storage.record_event(user, target, event.value, now, {"statement": candidate.text, "source": scope.source})
            record = self.storage.get_memory(user, target)
            return [WriteOutcome(event.value, target, record.text if record else None, record=record, extra=extra)]
        if event is Event.INVALIDATE:
            target = decision.targets[0]
            self.storage.update_memory(
                user, target, invalid_at=_ts(candidate.valid_at), expired_at=now, state=INVALIDATED, updated_at=now,
            )
            self.storage.record_event(user, target, event.value, now, {"statement": candidate.text, "source": scope.source})
            record = self.storage.get_memory(user, target)
            return [WriteOutcome(event.value, target, record.text if record else None, record=record, extra=extra)]

        record = self._insert(scope, candidate, vector, now)
        if event in (Event.SUPERSEDE, Event.RESOLVE):
            old = decision.targets[0]
            self.storage.update_memory(
                user, old,
                invalid_at=record.valid_at, expired_at=now, superseded_by=record.id,
                state=RESOLVED if event is Event.RESOLVE else SUPERSEDED, updated_at=now,
            )
            self.storage.record_event(user, old, event.value, now, {"superseded_by": record.id, "statement": candidate.text})
            self.storage.record_event(user, record.id, event.value, now, {"supersedes": old, "source": scope.source})
        else:
            self.storage.record_event(user, record.id, Event.ADD.value, now, {"source": scope.source})
        return [WriteOutcome(event.value, record.id, record.text, record=record, extra=extra)]

    def _insert(self, scope: _Scope, candidate: Candidate, vector: np.ndarray, now: float) -> MemoryRecord:
        record = MemoryRecord(
            id=str(uuid.uuid4()),
            user_id=scope.user_id,
            text=candidate.text,
            created_at=now,
            fingerprint=fingerprint(candidate.text),
            gist=candidate.gist,
            memory_type=candidate.memory_type.value,
            categories=list(candidate.categories) if scope.infer else [],
            tags=list(scope.tags),
            project=scope.project,
            app_name=scope.app_name,
            session_id=scope.session_id,
            metadata=dict(scope.metadata),
            source_turn_uuids=list(candidate.source_turn_uuids),
            transcript_path=scope.transcript_path,
            extraction_status="pending" if scope.infer else "done",
            valid_at=_ts(candidate.valid_at),
            updated_at=now,
        )
        self.storage.insert_memory(record, vector)
        if scope.infer:
            self.storage.enqueue_job(ENRICH, scope.user_id, record.id, {})
        return record


def _query(candidate: Candidate) -> str:
    """What to look neighbours up by: the retracted/resolved/forgotten thing, else the fact."""
    if candidate.intent is not Intent.REMEMBER and candidate.target:
        return candidate.target
    return candidate.text
