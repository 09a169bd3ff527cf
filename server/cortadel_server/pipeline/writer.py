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
    per_input = writer.add_batch("alice", [TextInput("I live in Berlin.", infer=False), ConversationInput(turns)])
                                    # one list of outcomes per input, in order

    writer.close()

Every write is a batch (a single add or conversation is a batch of one input): each input is
turned into candidate facts, every candidate is embedded in one embedder call, and then, in one
storage write transaction for the whole batch and in input order, per candidate fact: find its
neighbours among the user's current facts (exact fingerprint, vector similarity and BM25, or the
entity's facts for a deletion), decide (`cortadel_server.pipeline.decide`), apply the event and
record it in the fact history. Because the neighbours are read inside the same serialised
transaction that writes, two concurrent writes of one fact give one `ADD` and one
`SKIP_DUPLICATE`, and a later fact of a batch sees the earlier ones. Embeddings, and any LLM call,
happen before the transaction. When storing a fact fails, the batch's transaction rolls back whole
and every fact is stored again in a transaction of its own, so only the failing fact is an `ERROR`
and nothing of it is half-applied. "Now" is read inside it too: a statement sent without a time gets the
instant its transaction began as its valid time (and every record time is that instant), so the
serial order of writes and their times agree.

Each request carries a `WriteBudget`: its LLM calls together end by CORTADEL_LLM_TIMEOUT and its
extraction by the whole budget (BudgetExceeded, a 413). Between facts the writer stops when the
client went away (what is stored stays stored), or reports the facts it had no time left for as
`ERROR`.

Events and what they store:
  ADD             a new current fact (extraction_status "pending" and an enrich job when inferring)
  SKIP_DUPLICATE  nothing; the outcome names the existing fact
  TOUCH           the existing fact's updated_at, and a TOUCH history entry
  SUPERSEDE       a new fact; the old one gets invalid_at = the new valid_at, or its own valid_at
                  when that is later (valid time), expired_at = now (record time), superseded_by,
                  state "superseded". A statement said (timestamped) before the current fact it
                  contradicts became valid is history, reported as `ADD`: it is stored already
                  superseded, valid until the next version in the slot's chain, and the version
                  before it (if any) now ends where it begins
  RESOLVE         as SUPERSEDE, the old (open) item in state "resolved"
  INVALIDATE      the retracted fact gets invalid_at = when it was retracted, expired_at = now,
                  state "invalidated"; no new fact
  DELETE_ENTITY   every fact mentioning the entity is deleted (one outcome per fact)
  ERROR           nothing; `error` says why (an LLM outage without fallback, a failed write)
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from cortadel_server.config import Settings
from cortadel_server.errors import BudgetExceeded, CortadelError, ExtractionFailed, RequestCancelled, StorageError
from cortadel_server.language.entities import canonical_entity
from cortadel_server.pipeline.budget import WriteBudget
from cortadel_server.pipeline.classify import Taxonomy
from cortadel_server.pipeline.decide import decide, needs_full_text, slot_query
from cortadel_server.pipeline.enrich import ENRICH, Enricher
from cortadel_server.pipeline.episodes import Written, episode_of
from cortadel_server.pipeline.extract import Extractor
from cortadel_server.pipeline.extractors import build_extractor
from cortadel_server.pipeline.fact_texts import FactTexts, KeptShapes
from cortadel_server.pipeline.llm import LlmJudge
from cortadel_server.pipeline.model import (
    Candidate,
    Decision,
    Event,
    Intent,
    Neighbour,
    Turn,
)
from cortadel_server.pipeline.rules import RulesExtractor, addresses_assistant, is_compound
from cortadel_server.providers import ChatClient, build_chat_client
from cortadel_server.providers.embedding.base import Embedder
from cortadel_server.storage.base import (
    INVALIDATED,
    MEMORY_TYPES,
    RESOLVED,
    SUPERSEDED,
    MemoryFilters,
    MemoryRecord,
    MemoryType,
    ScoredId,
    Storage,
)

if TYPE_CHECKING:
    from cortadel_server.retrieval.search import Retriever

__all__ = ["ConversationInput", "ConversationTurn", "TextInput", "WriteOutcome", "Writer"]

log = logging.getLogger("cortadel.pipeline")

#: How many nearest facts each arm (vector, BM25) offers decide() per candidate.
NEIGHBOURS_PER_ARM = 8
#: A batch reads all its user's current texts at once when they are at most this many per fact of
#: it: a text read so costs about a sixtieth of the dedup statement it saves (4 against 270 µs at
#: 9,000 memories), and a lookup that finds its neighbours known runs none.
TEXTS_READ_PER_FACT = 25
#: A batch indexes its user's current facts' shapes to decide its new facts without their full-text
#: lookups (decide.needs_full_text) when at most this many per fact of it are not cached: one made
#: costs about 80 µs, a fact decided so saves two or three lookups, about 300 µs.
SHAPES_MADE_PER_FACT = 2
#: How many facts one "forget everything about X" may delete at most.
ENTITY_DELETE_LIMIT = 10_000
#: How far back a dated statement is placed in its slot's chain of versions.
CHAIN_LIMIT = 100
INSTRUCTION_NOT_STORED = (
    "Not stored: the text gives the assistant instructions rather than stating a fact. "
    "Send it with infer: false to keep it verbatim as data."
)


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
class TextInput:
    """One text to remember, as a single add takes it (`add_text` names each field)."""

    text: str
    infer: bool = True
    app_name: str | None = None
    memory_type: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    project: str | None = None
    tags: tuple[str, ...] = ()
    source: str = "add"
    session_id: str | None = None
    at: float | None = None


@dataclass(frozen=True)
class ConversationInput:
    """One conversation to distil into facts (`add_conversation` names each field)."""

    turns: Sequence[ConversationTurn]
    is_agent_memory: bool = False
    app_name: str | None = None
    tags: tuple[str, ...] = ()
    project: str | None = None
    session_id: str | None = None
    transcript_path: str | None = None


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


@dataclass
class _Pending:
    """One input of a batch on its way to storage: its candidate facts and their outcomes (preset
    when it stores nothing)."""

    scope: _Scope
    candidates: list[Candidate]
    outcomes: list[WriteOutcome] = field(default_factory=list)


#: per (user, app): what the open write transaction knows its user wrote (pipeline/episodes.py)
_WrittenMemo = dict[tuple[str, str | None], Written]


def _out_of_time(budget: WriteBudget) -> WriteOutcome:
    error = f"Not stored: the request's {budget.seconds:g} s budget (CORTADEL_WRITE_BUDGET) ran out; send this part again."
    return WriteOutcome(Event.ERROR.value, error=error)


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
        budget_seconds: float = math.inf,
        llm_seconds: float = math.inf,
        episode_gap: float = Settings.episode_gap,
    ) -> None:
        self.storage = storage
        self.embedder = embedder
        self.extractor = extractor
        self.taxonomy = taxonomy or Taxonomy.from_setting(None)
        self.rules = RulesExtractor(self.taxonomy)
        self.judge = judge
        self.clock = clock
        self.budget_seconds = budget_seconds
        self.llm_seconds = llm_seconds  # for all the LLM calls of one request together
        self.episode_gap = episode_gap  # seconds of statement time that end an inferred episode
        self.enricher = Enricher(storage, self.taxonomy)  # job times are wall-clock times
        self.kept_shapes = KeptShapes()

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        storage: Storage,
        embedder: Embedder,
        retriever: Retriever | None = None,
        watch_chat: Callable[[ChatClient], ChatClient] | None = None,
    ) -> Writer:
        """The writer the settings describe (`retriever` is accepted for the service's wiring;
        neighbours come from the storage arms directly, inside the write transaction). `watch_chat`
        wraps the chat client (the server counts its failures)."""
        taxonomy = Taxonomy.from_setting(settings.categories)
        chat = build_chat_client(settings) if settings.extractor == "llm" else None
        if chat is not None and watch_chat is not None:
            chat = watch_chat(chat)
        extractor = build_extractor(settings, chat)
        return cls(
            storage, embedder, extractor, taxonomy=taxonomy, judge=LlmJudge(chat) if chat else None,
            clock=settings.now, budget_seconds=settings.write_budget, llm_seconds=settings.llm_timeout,
            episode_gap=settings.episode_gap,
        )

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
        budget: WriteBudget | None = None,
    ) -> WriteOutcome:
        """One text. With `infer` it runs through the extractor like a one-message conversation the
        user asked to remember (and is stored as written when the extractor finds no statement in
        it, a lone "thanks" say); without, it is
        stored verbatim, but retractions/resolutions in it are still recognised and it is still
        deduplicated. All results are in `extra["results"]`; the first one is returned. Text that
        only gives the assistant orders is not stored when inferring (an `ERROR` outcome says so).
        Raises BudgetExceeded when extraction outruns the budget, StorageError when the database
        failed for every fact of it."""
        item = TextInput(text, infer, app_name, memory_type, dict(metadata), project, tuple(tags), source, session_id, at)
        outcomes = self.add_batch(user_id, [item], budget)[0]
        failed = [cause for o in outcomes if isinstance(cause := o.extra.get("cause"), StorageError)]
        if len(failed) == len(outcomes):
            raise failed[0]  # nothing stored because the database failed: the request fails (503), not its item
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
        budget: WriteBudget | None = None,
    ) -> list[WriteOutcome]:
        """Distil the turns into facts and store each one; [] when nothing was extracted (and
        nothing stored). An extraction outage without fallback gives one ERROR outcome; raises
        BudgetExceeded when extraction outruns the budget."""
        item = ConversationInput(tuple(turns), is_agent_memory, app_name, tuple(tags), project, session_id, transcript_path)
        return self.add_batch(user_id, [item], budget)[0]

    def add_batch(
        self, user_id: str, inputs: Sequence[TextInput | ConversationInput], budget: WriteBudget | None = None
    ) -> list[list[WriteOutcome]]:
        """Store many inputs of one user: per input, in order, its outcomes as `add_text` (never
        empty, the first is the answer) or `add_conversation` (empty: nothing extracted) gives them.

        Every fact of the batch is embedded in one call and stored in one transaction, in input
        order, so a later input is deduplicated against (and supersedes) an earlier one. Raises
        BudgetExceeded when extracting the first input outruns the budget; when a later one does,
        it and the rest are `ERROR` outcomes and what was extracted before is stored."""
        budget = (budget or WriteBudget()).start(self.budget_seconds, llm_seconds=self.llm_seconds)
        pending: list[_Pending] = []
        for index, item in enumerate(inputs):
            try:
                pending.append(self._prepare(user_id, item, budget))
            except BudgetExceeded:
                if index == 0:
                    raise
                pending.extend(_Pending(_Scope(user_id, False, "add"), [], [_out_of_time(budget)]) for _ in inputs[index:])
                break
        self._write(user_id, pending, budget)
        for item, unit in zip(inputs, pending, strict=True):
            if isinstance(item, TextInput) and not unit.outcomes:
                unit.outcomes.append(
                    WriteOutcome(Event.ERROR.value, memory=item.text, error="Nothing to forget: no current memory matches.")
                )
        return [unit.outcomes for unit in pending]

    # -- the pipeline ----------------------------------------------------------------------------
    def _prepare(self, user_id: str, item: TextInput | ConversationInput, budget: WriteBudget) -> _Pending:
        """The input's candidate facts, or the outcome that says why it stores nothing."""
        if isinstance(item, ConversationInput):
            return self._prepare_conversation(user_id, item, budget)
        scope = _Scope(
            user_id, item.infer, item.source, item.app_name, item.memory_type, dict(item.metadata), item.project,
            item.tags, item.session_id,
        )
        turn = Turn("user", item.text, None, datetime.fromtimestamp(self.clock() if item.at is None else item.at, UTC), at_now=item.at is None)
        candidates: list[Candidate] = []
        if item.infer:
            try:
                candidates = self.extractor.extract([turn], explicit=True, budget=budget)
            except (ExtractionFailed, RequestCancelled) as exc:
                return _Pending(scope, [], [WriteOutcome(Event.ERROR.value, error=str(exc))])
            if not candidates and addresses_assistant(item.text):
                return _Pending(scope, [], [WriteOutcome(Event.ERROR.value, error=INSTRUCTION_NOT_STORED)])
        if not candidates:
            candidates = [self.rules.verbatim(item.text, turn, labels=item.infer)]
        forced = item.memory_type if item.memory_type in MEMORY_TYPES else None  # invalid → classify
        if forced:
            candidates = [dataclasses.replace(c, memory_type=MemoryType(forced)) for c in candidates]
        return _Pending(scope, candidates)

    def _prepare_conversation(self, user_id: str, item: ConversationInput, budget: WriteBudget) -> _Pending:
        now = self.clock()
        timed = [
            Turn(t.role, t.content, t.uuid, datetime.fromtimestamp(now if t.at is None else t.at, UTC), at_now=t.at is None)
            for t in item.turns
        ]
        scope = _Scope(
            user_id, True, "conversation", item.app_name, None, {}, item.project, item.tags, item.session_id,
            item.transcript_path,
        )
        try:
            return _Pending(scope, self.extractor.extract(timed, is_agent_memory=item.is_agent_memory, budget=budget))
        except ExtractionFailed as exc:
            return _Pending(scope, [], [WriteOutcome(Event.ERROR.value, error=str(exc))])
        except RequestCancelled:
            return _Pending(scope, [])

    def _write(self, user_id: str, pending: Sequence[_Pending], budget: WriteBudget) -> None:
        """Store every candidate of `pending`, filling in their outcomes."""
        candidates = [c for unit in pending for c in unit.candidates]
        if not candidates:
            return
        texts = list(dict.fromkeys([c.text for c in candidates] + [_query(c) for c in candidates]))
        vectors = dict(zip(texts, self.embedder.embed(texts), strict=True))
        if len(candidates) == 1 or self.judge is not None:
            # The model is never asked while the write lock is held: with a judge, each fact takes
            # its own transaction after its verdict.
            self._store(pending, vectors, budget, alone=True)
        else:
            try:
                with self.storage.write(user_id):
                    known = self._store(pending, vectors, budget, alone=False)
                if known is not None and known.made_shapes is not None:
                    self.kept_shapes.keep(user_id, known.made_shapes)
            except CortadelError as exc:
                # The batch rolled back whole: store each fact alone, so only the failing one is lost.
                log.warning("a batch of %d facts failed (%s); storing each fact in its own transaction", len(candidates), exc)
                for unit in pending:
                    if unit.candidates:
                        unit.outcomes.clear()
                self._store(pending, vectors, budget, alone=True)
        written = (Event.ADD.value, Event.SUPERSEDE.value, Event.RESOLVE.value)
        if any(unit.scope.infer and any(o.event in written for o in unit.outcomes) for unit in pending):
            self.enricher.wake()

    def _store(
        self, pending: Sequence[_Pending], vectors: dict[str, np.ndarray], budget: WriteBudget, *, alone: bool
    ) -> FactTexts | None:
        """Decide and apply each candidate in order. `alone`: each in its own transaction, a failure
        being that fact's `ERROR`; else a failure propagates (and rolls the enclosing one back), and
        what the batch's transaction knows of the user's current facts is returned."""
        todo = [(unit, c) for unit in pending for c in unit.candidates]
        shared: _WrittenMemo = {}  # what the batch's transaction wrote so far, per app (one transaction)
        # What the batch's transaction read and wrote (alone: each fact's transaction has its own).
        known = None if alone else FactTexts(self.storage, pending[0].scope.user_id)
        batch_search: Callable[[int], list[ScoredId]] | None = None
        if known is not None:
            known.expect(
                (c.fingerprint for _, c in todo if c.intent is not Intent.FORGET_ENTITY),
                texts_up_to=TEXTS_READ_PER_FACT * len(todo), shapes_made_up_to=SHAPES_MADE_PER_FACT * len(todo),
                shapes=self.kept_shapes.take(known.user_id),
            )
            # Every lookup's vector arm screened against the stored rows at once (exact hits all the same).
            batch_search = self.storage.vector_searches(
                known.user_id, np.stack([vectors[_query(c)] for _, c in todo]), NEIGHBOURS_PER_ARM
            )
        for done, (unit, candidate) in enumerate(todo):
            if budget.cancelled:
                log.info("client went away: %d of %d facts written, the rest dropped", done, len(todo))
                return known
            if budget.spent:
                for later, fact in todo[done:]:
                    later.outcomes.append(dataclasses.replace(_out_of_time(budget), memory=fact.text))
                return known
            try:
                query_vector = vectors[_query(candidate)]
                judged = self._judge(unit.scope.user_id, candidate, query_vector, budget)
                written, facts = (shared, known) if known is not None else ({}, FactTexts(self.storage, unit.scope.user_id))
                nearest = partial(batch_search, done) if batch_search is not None else self._nearest(unit.scope.user_id, query_vector)
                unit.outcomes.extend(self._one(unit.scope, candidate, vectors[candidate.text], nearest, judged, written, facts))
            except CortadelError as exc:
                if not alone:
                    raise
                log.error("write failed for a %d-character fact: %s", len(candidate.text), exc)  # never the text
                unit.outcomes.append(WriteOutcome(Event.ERROR.value, memory=candidate.text, error=str(exc), extra={"cause": exc}))
        return known

    def _judge(
        self, user_id: str, candidate: Candidate, query_vector: np.ndarray, budget: WriteBudget
    ) -> tuple[Decision, Decision] | None:
        """The rule decision and the model's verdict on it, when the rules found it ambiguous
        (asked before the write lock is taken; `_one` re-checks the rule decision under it)."""
        if self.judge is None or candidate.intent is not Intent.REMEMBER:
            return None
        neighbours = self._neighbours(user_id, candidate, self._nearest(user_id, query_vector), FactTexts(self.storage, user_id))
        ruled = decide(candidate, neighbours)
        return (ruled, self.judge.judge(candidate, neighbours, ruled, budget)) if ruled.ambiguous else None

    def _nearest(self, user_id: str, query_vector: np.ndarray) -> Callable[[], list[ScoredId]]:
        """The vector arm of one lookup, asked when it runs."""
        return partial(self.storage.vector_search, user_id, query_vector, MemoryFilters(), NEIGHBOURS_PER_ARM)

    def _one(
        self, scope: _Scope, candidate: Candidate, vector: np.ndarray, nearest: Callable[[], list[ScoredId]],
        judged: tuple[Decision, Decision] | None, written: _WrittenMemo, known: FactTexts,
    ) -> list[WriteOutcome]:
        # The user's writer turn first, then the clock: serial order and valid-time order must agree.
        with self.storage.write(scope.user_id):
            now = self.clock()
            if candidate.at_now:
                moved = timedelta(seconds=now - _ts(candidate.said_at))
                candidate = dataclasses.replace(candidate, said_at=candidate.said_at + moved, valid_at=candidate.valid_at + moved)
            decision, neighbours = self._decide(scope.user_id, candidate, nearest, known)
            if judged is not None and judged[0] == decision:
                decision = judged[1]
            if decision.event is Event.SUPERSEDE and not scope.infer and is_compound(candidate.text):
                # Two raw turns that start alike are not one fact corrected: verbatim text of several
                # sentences is only deduplicated.
                decision = Decision(Event.ADD, (), "verbatim text is only deduplicated")
            return self._apply(scope, candidate, decision, vector, {n.id: n for n in neighbours}, now, written, known)

    def _decide(
        self, user_id: str, candidate: Candidate, nearest: Callable[[], list[ScoredId]], known: FactTexts
    ) -> tuple[Decision, list[Neighbour]]:
        """decide() on the candidate's neighbours: without the full-text ones when the transaction
        knows every current fact and they cannot change the decision (``decide.needs_full_text``)."""
        current = known.current_shapes()
        full_text = current is None or needs_full_text(candidate, current)
        neighbours = self._neighbours(user_id, candidate, nearest, known, full_text=full_text)
        return decide(candidate, neighbours), neighbours

    def _neighbours(
        self, user_id: str, candidate: Candidate, nearest: Callable[[], list[ScoredId]], known: FactTexts,
        *, full_text: bool = True,
    ) -> list[Neighbour]:
        """The current facts decide() should compare the candidate with, best first, ties in id
        order (for an entity deletion: every fact, past versions included, oldest first).
        ``nearest`` is the vector arm: ``vector_search`` of the query, current facts only; without
        ``full_text``, the only arm."""
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
        scores: dict[str, float] = {}
        if full_text:
            # Full-text hits count as candidates without a similarity; the vector arm gives one.
            scores = {s.id: 0.0 for s in self.storage.text_search(user_id, query, current, NEIGHBOURS_PER_ARM)}
            by_slot = slot_query(candidate.text) if candidate.intent is Intent.REMEMBER else None
            # A correction or switch names what it replaces ("not Lisbon", "from VS Code"): look that up too.
            for extra_query in (by_slot, candidate.target if candidate.intent is Intent.REMEMBER else None):
                if extra_query:
                    scores.update({s.id: 0.0 for s in self.storage.text_search(user_id, extra_query, current, NEIGHBOURS_PER_ARM)})
        for hit in nearest():
            scores[hit.id] = max(hit.score, 0.0)
        same, current_texts = known.neighbour_texts(list(scores), candidate.fingerprint)
        if same is not None:
            scores[same] = 1.0
        return sorted((Neighbour(i, text, scores[i]) for i, text in current_texts.items()), key=lambda n: -n.score)

    def _apply(
        self,
        scope: _Scope,
        candidate: Candidate,
        decision: Decision,
        vector: np.ndarray,
        neighbours: dict[str, Neighbour],
        now: float,
        written: _WrittenMemo,
        known: FactTexts,
    ) -> list[WriteOutcome]:
        user = scope.user_id
        event = decision.event
        extra = {"targets": list(decision.targets), "reason": decision.reason}
        if event is Event.NOOP:
            log.info("no-op: a retraction matched no current fact")  # the reason quotes the text
            return []
        if event is Event.DELETE_ENTITY:
            gone = [(t, neighbours[t].text) for t in decision.targets]
            self.storage.delete_memories(user, [t for t, _ in gone])
            known.ended(t for t, _ in gone)
            for memo in written.values():
                memo.forget()
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
            retracted = self.storage.get_memory(user, target)
            self.storage.update_memory(
                user, target, invalid_at=_ends_at(_ts(candidate.valid_at), retracted), expired_at=now, state=INVALIDATED,
                updated_at=now,
            )
            known.ended([target])
            self.storage.record_event(user, target, event.value, now, {"statement": candidate.text, "source": scope.source})
            record = self.storage.get_memory(user, target)
            return [WriteOutcome(event.value, target, record.text if record else None, record=record, extra=extra)]

        replaced = self.storage.get_memory(user, decision.targets[0]) if event in (Event.SUPERSEDE, Event.RESOLVE) else None
        # Said before the current fact even held: history. Said later but dated earlier ("I moved
        # last month"): a correction, and the old fact's validity ends where it began at the latest.
        if event is Event.SUPERSEDE and replaced is not None and replaced.valid_at is not None \
                and _ts(candidate.said_at) < replaced.valid_at:
            return [self._insert_history(scope, candidate, vector, replaced, now, extra, written, known)]
        record = self._insert(scope, candidate, vector, now, written, known)
        if event in (Event.SUPERSEDE, Event.RESOLVE):
            old = decision.targets[0]
            self.storage.update_memory(
                user, old,
                invalid_at=_ends_at(record.valid_at, replaced), expired_at=now, superseded_by=record.id,
                state=RESOLVED if event is Event.RESOLVE else SUPERSEDED, updated_at=now,
            )
            known.ended([old])
            self.storage.record_event(user, old, event.value, now, {"superseded_by": record.id, "statement": candidate.text})
            self.storage.record_event(user, record.id, event.value, now, {"supersedes": old, "source": scope.source})
        else:
            # Stored even when the decision was unsure (dropping loses data); the doubt goes in its history.
            doubt = {"uncertain": decision.uncertain} if decision.uncertain else {}
            self.storage.record_event(user, record.id, Event.ADD.value, now, {"source": scope.source, **doubt})
            extra.update(doubt)
        return [WriteOutcome(event.value, record.id, record.text, record=record, extra=extra)]

    def _insert_history(
        self, scope: _Scope, candidate: Candidate, vector: np.ndarray, current: MemoryRecord, now: float, extra: dict[str, Any],
        written: _WrittenMemo, known: FactTexts,
    ) -> WriteOutcome:
        """A statement dated before the current fact of its slot: a past version, never current.

        It is valid from its own time until the next version after it in the chain of versions
        that ends at `current`; the version before it, if its validity covered that time, now ends
        where the statement begins. No interval ends before it starts and none overlap.
        """
        user = scope.user_id
        valid_at = _ts(candidate.valid_at)
        after, before = current, self._predecessor(user, current)
        for _ in range(CHAIN_LIMIT):
            if before is None or before.valid_at is None or before.valid_at <= valid_at:
                break
            after, before = before, self._predecessor(user, before)
        record = self._insert(scope, candidate, vector, now, written, known)
        self.storage.update_memory(
            user, record.id, invalid_at=after.valid_at, expired_at=now, superseded_by=after.id, state=SUPERSEDED,
        )
        known.ended([record.id])
        self.storage.record_event(user, record.id, Event.ADD.value, now, {"source": scope.source, "superseded_by": after.id})
        # The chain now runs before -> record -> after; the history entries are what _predecessor walks.
        self.storage.record_event(user, after.id, Event.SUPERSEDE.value, now, {"supersedes": record.id})
        if before is not None:
            self.storage.record_event(user, record.id, Event.SUPERSEDE.value, now, {"supersedes": before.id})
            if before.invalid_at is None or before.invalid_at > valid_at:
                self.storage.update_memory(user, before.id, invalid_at=valid_at, superseded_by=record.id, updated_at=now)
                known.ended([before.id])
                self.storage.record_event(
                    user, before.id, Event.SUPERSEDE.value, now, {"superseded_by": record.id, "statement": candidate.text}
                )
        stored = self.storage.get_memory(user, record.id)
        reason = f"dated before the current fact {current.id}: stored as a past version"
        return WriteOutcome(Event.ADD.value, record.id, record.text, record=stored, extra={**extra, "reason": reason})

    def _predecessor(self, user_id: str, memory: MemoryRecord) -> MemoryRecord | None:
        """The version just before `memory` in its slot, from its history (None for the first)."""
        for entry in reversed(self.storage.history(user_id, memory.id)):  # a dated insert may come later
            previous = entry.detail.get("supersedes")
            if entry.event == Event.SUPERSEDE.value and previous:
                return self.storage.get_memory(user_id, previous)
        return None

    def _insert(
        self, scope: _Scope, candidate: Candidate, vector: np.ndarray, now: float, written: _WrittenMemo, known: FactTexts,
    ) -> MemoryRecord:
        episodes = written.get((scope.user_id, scope.app_name))
        if episodes is None:
            episodes = written[scope.user_id, scope.app_name] = Written(self.storage, scope.user_id, scope.app_name)
        record = MemoryRecord(
            id=str(uuid.uuid4()),
            user_id=scope.user_id,
            text=candidate.text,
            created_at=now,
            fingerprint=candidate.fingerprint,
            gist=candidate.gist,
            memory_type=candidate.memory_type.value,
            categories=list(candidate.categories) if scope.infer else [],
            tags=list(scope.tags),
            project=scope.project,
            app_name=scope.app_name,
            session_id=episode_of(
                scope.session_id, scope.metadata, candidate.text, _ts(candidate.said_at),
                episodes, gap=self.episode_gap,
            ),
            metadata=dict(scope.metadata),
            source_turn_uuids=list(candidate.source_turn_uuids),
            transcript_path=scope.transcript_path,
            extraction_status="pending" if scope.infer else "done",
            valid_at=_ts(candidate.valid_at),
            updated_at=now,
        )
        self.storage.insert_memory(record, vector)
        episodes.wrote(record)
        known.wrote(record)
        if scope.infer:
            self.storage.enqueue_job(ENRICH, scope.user_id, record.id, {})
        return record


def _ends_at(instant: float | None, fact: MemoryRecord | None) -> float | None:
    """When `fact` stops being valid, `instant`, but never before it began."""
    began = fact.valid_at if fact is not None else None
    return instant if instant is None or began is None else max(instant, began)


def _query(candidate: Candidate) -> str:
    """What to look neighbours up by: the retracted/resolved/forgotten thing, else the fact."""
    if candidate.intent is not Intent.REMEMBER and candidate.target:
        return candidate.target
    return candidate.text
