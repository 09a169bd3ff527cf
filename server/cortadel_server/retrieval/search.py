"""Hybrid retrieval: composable arms, one fusion step, neighbour context, an optional rerank.

Configuration is data (``SearchConfig`` built from ``ArmConfig``s, with named recipes); each arm
over-fetches, fusion is a plain function, and every phase is timed into the hit's attributes,
which also say which arms found the hit and at what rank. No LLM is ever called on this path.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from cortadel_server.curation.fading import Fading
from cortadel_server.errors import StaleSnapshot
from cortadel_server.language.speakers import asked_about
from cortadel_server.providers.embedding.base import Embedder
from cortadel_server.providers.reranking.base import Reranker
from cortadel_server.retrieval.arms import ARMS, Arm, ArmConfig, ArmContext
from cortadel_server.retrieval.fusion import (
    RRF_K,
    dense_ranks,
    fuse_ranks,
    reference_scores,
    score_fusion,
    trim_to_token_budget,
)
from cortadel_server.retrieval.request import SearchRequest
from cortadel_server.retrieval.stages import (
    NeighbourConfig,
    add_neighbours,
    is_question,
    spread_sessions,
    weigh_questions,
    weigh_speaker,
)
from cortadel_server.storage.base import MemoryHead, MemoryRecord, ScoredId, Storage

__all__ = [
    "ARMS",
    "RECIPES",
    "Arm",
    "ArmConfig",
    "Fusion",
    "Hit",
    "NeighbourConfig",
    "Retriever",
    "SearchConfig",
    "SearchRequest",
]


class Fusion(str, Enum):
    #: weighted reciprocal rank fusion (ranks only)
    RRF = "rrf"
    #: weighted sum of min-max normalised arm scores
    SCORE = "score"


@dataclass(frozen=True)
class SearchConfig:
    arms: tuple[ArmConfig, ...]
    fusion: Fusion = Fusion.RRF
    rrf_k: int = RRF_K
    #: how many fused candidates a cross-encoder rescores
    rerank_depth: int = 30
    #: neighbour context after fusion; None leaves it out
    neighbours: NeighbourConfig | None = None
    #: per-session decay of fused scores over the head (1.0 or None: off); see spread_sessions
    session_decay: float | None = None
    #: score factor of memories that end in a question, over the head (1.0: off); see weigh_questions
    question_weight: float = 1.0
    #: score factor of memories said by the person the query asks about, over the head (1.0: off); see weigh_speaker
    speaker_weight: float = 1.0
    #: the session arm's settings when a request asks for it and the recipe has none
    session_arm: ArmConfig = ArmConfig(Arm.SESSION, weight=0.2)  # noqa: RUF009 - frozen, so sharing it is safe

    def for_request(self, request: SearchRequest) -> SearchConfig:
        """This recipe with the request's switches applied (``include_session_arm``)."""
        has_session = any(a.arm is Arm.SESSION for a in self.arms)
        if request.include_session_arm and not has_session:
            return dataclasses.replace(self, arms=(*self.arms, self.session_arm))
        if request.include_session_arm is False and has_session:
            return dataclasses.replace(self, arms=tuple(a for a in self.arms if a.arm is not Arm.SESSION))
        return self


#: The default. Measured on LoCoMo (dev half, raw turns with session ids; see docs/benchmarks.md):
#: score-aware fusion keeps BM25's margin where equal-weight RRF let the weaker vector arm drag
#: good hits down; the session arm adds the episode around the words that matched; a memory that
#: ends in a question is weaker evidence than a statement, but the reply written after it often is
#: the answer, so it lends the reply a share; a question about a person is answered by what that
#: person said. Neighbour context in both directions did not pay once the context column was in.
HYBRID = SearchConfig(
    arms=(ArmConfig(Arm.TEXT), ArmConfig(Arm.VECTOR, weight=0.1), ArmConfig(Arm.SESSION, weight=0.2)),
    fusion=Fusion.SCORE,
    question_weight=0.8,
    neighbours=NeighbourConfig(depth=10, window=1, share=0.3, replies_only=True),
    speaker_weight=1.2,
)
TEXT_ONLY = SearchConfig(arms=(ArmConfig(Arm.TEXT),))
VECTOR_ONLY = SearchConfig(arms=(ArmConfig(Arm.VECTOR),))
#: Every arm: hybrid plus the entity (graph) and time arms, and the neighbours of the best hits,
#: each at the setting measured for it. For questions that name people, places and dates. Measured
#: one by one over the default on LoCoMo, none of them paid (that data rarely needs them;
#: docs/benchmarks.md), so this recipe is asked for by name, never the default.
DEEP = dataclasses.replace(
    HYBRID,
    arms=(*HYBRID.arms, ArmConfig(Arm.ENTITY, weight=0.1), ArmConfig(Arm.TIME, weight=0.3)),
    neighbours=NeighbourConfig(depth=1, share=0.2),
)

#: request ``mode`` → recipe
RECIPES: Mapping[str, SearchConfig] = {"hybrid": HYBRID, "text": TEXT_ONLY, "vector": VECTOR_ONLY, "deep": DEEP}


@dataclass
class Hit:
    memory: MemoryRecord
    score: float
    ranks: dict[str, int]
    attributes: dict[str, Any] = field(default_factory=dict)


class Retriever:
    """Runs a search request through the arms of its recipe, fuses, adds context, reranks and trims."""

    def __init__(
        self,
        storage: Storage,
        embedder: Embedder,
        reranker: Reranker | None = None,
        *,
        observe_timings: Callable[[Mapping[str, float]], None] | None = None,
        fading: Fading | None = None,
    ) -> None:
        self.storage = storage
        self.embedder = embedder
        self.reranker = reranker
        #: told every search's phase timings (the server's metrics), whether or not it found anything
        self.observe_timings = observe_timings
        #: weighs candidates by how long they went unseen, hides the faded (None: fading is off)
        self.fading = fading

    def search(self, request: SearchRequest, config: SearchConfig | None = None) -> list[Hit]:
        config = (config or RECIPES[request.mode]).for_request(request)
        try:
            with self.storage.search_snapshot(request.user_id, renewable=True):
                return self._search(request, config)
        except StaleSnapshot:
            # Another thread moved a cache past the snapshot while this search ran: once more in a
            # new one (a few ms), which reads the user whole only if that happens again.
            with self.storage.search_snapshot(request.user_id):
                return self._search(request, config)

    def _search(self, request: SearchRequest, config: SearchConfig) -> list[Hit]:
        timings: dict[str, float] = {}
        vector_cache: list[np.ndarray] = []

        def query_vector() -> np.ndarray:
            if not vector_cache:
                started = time.perf_counter()
                vector_cache.append(self.embedder.embed([request.query])[0])
                timings["embed_ms"] = _ms(started)
            return vector_cache[0]

        ctx = ArmContext(self.storage, request, query_vector, time.time())
        found: dict[str, list[ScoredId]] = {}
        for arm_config in config.arms:
            embedded = timings.get("embed_ms", 0.0)
            started = time.perf_counter()
            found[arm_config.arm.value] = ARMS[arm_config.arm](ctx, arm_config, max(arm_config.limit, request.top_k))
            # The query's embedding is a phase of its own, not part of the arm that first asked for it.
            timings[f"{arm_config.arm.value}_ms"] = round(_ms(started) - (timings.get("embed_ms", 0.0) - embedded), 3)

        started = time.perf_counter()
        weights = {a.arm.value: a.weight for a in config.arms}
        ranks = {arm: dense_ranks(items) for arm, items in found.items()}
        if config.fusion is Fusion.SCORE:
            fused = score_fusion(found, weights)
        else:
            fused = fuse_ranks(ranks, weights, k=config.rrf_k)
        fade_weights: dict[str, float] = {}
        if self.fading is not None:
            fused, fade_weights = self.fading.weigh(self.storage, request.user_id, fused, include_faded=request.include_faded)
        depth = max(request.top_k, config.rerank_depth if request.rerank else 0)
        # Re-ranking stages look at a wider head than they return, so what they lift has been seen.
        reranking = config.question_weight != 1.0 or config.speaker_weight != 1.0 or config.session_decay is not None
        head_size = max(depth, config.rerank_depth) if reranking else depth
        # The head's texts and sessions are what the stages read; whole records only for the hits
        # returned (unless they are the whole head).
        read_heads = self.storage.memory_heads if head_size > request.top_k else self.storage.get_memories
        reading = time.perf_counter()
        heads: dict[str, MemoryHead | MemoryRecord] = dict(read_heads(request.user_id, [mid for mid, _ in fused[:head_size]]))
        read_seconds = time.perf_counter() - reading
        lent: dict[str, str] = {}
        if config.neighbours is not None and fused:
            fused, lent = self._add_neighbours(ctx, fused, heads, config.neighbours)
            missing = [mid for mid, _ in fused[:head_size] if mid not in heads]
            reading = time.perf_counter()
            heads.update(read_heads(request.user_id, missing))
            read_seconds += time.perf_counter() - reading
        if config.question_weight != 1.0:
            head = [(mid, score) for mid, score in fused[:head_size] if mid in heads]
            fused = weigh_questions(head, {mid: heads[mid].text for mid, _ in head}, config.question_weight)
        if config.speaker_weight != 1.0:
            head = [(mid, score) for mid, score in fused[:head_size] if mid in heads]
            fused = weigh_speaker(head, {mid: heads[mid].text for mid, _ in head}, asked_about(request.query),
                                  config.speaker_weight)
        if config.session_decay is not None:
            head = [(mid, score) for mid, score in fused[:head_size] if mid in heads]
            fused = spread_sessions(head, {mid: heads[mid].session_id for mid, _ in head}, config.session_decay)
        fusion_seconds = time.perf_counter() - started - read_seconds

        chosen = [(mid, score) for mid, score in fused[:depth] if mid in heads]
        rerank_scores, rerank_attrs = self._rerank(request, chosen, heads, timings) if request.rerank else ({}, {})
        if rerank_scores:
            chosen.sort(key=lambda item: -rerank_scores[item[0]])
        chosen = chosen[: request.top_k]
        if request.token_budget:
            chosen = chosen[: trim_to_token_budget([heads[mid].text for mid, _ in chosen], request.token_budget)]
        reading = time.perf_counter()
        records = {mid: head for mid, head in heads.items() if isinstance(head, MemoryRecord)}
        records.update(self.storage.get_memories(request.user_id, [mid for mid, _ in chosen if mid not in records]))
        read_seconds += time.perf_counter() - reading
        # Reading the records is its own phase: it costs the same whatever the store's size.
        timings["fusion_ms"] = round(fusion_seconds * 1000, 3)
        timings["records_ms"] = round(read_seconds * 1000, 3)
        hits = [
            Hit(
                memory=records[mid],
                score=score,
                ranks={arm: arm_ranks[mid] for arm, arm_ranks in ranks.items() if mid in arm_ranks},
            )
            for mid, score in chosen
            if mid in records
        ]
        if self.observe_timings is not None:
            self.observe_timings(timings)
        for hit, reference in zip(hits, reference_scores([h.ranks for h in hits], config.rrf_k), strict=True):
            # Our own fusion score orders the list; what goes out as rrf_score is on the reference's scale.
            fusion_score, hit.score = hit.score, reference
            hit.attributes = {
                "arms": {arm: {"rank": rank} for arm, rank in hit.ranks.items()},
                "fusion_score": fusion_score,
                **({"fade_weight": round(fade_weights[hit.memory.id], 6)} if hit.memory.id in fade_weights else {}),
                **({"context_of": lent[hit.memory.id]} if hit.memory.id in lent else {}),
                **rerank_attrs,
                **({"rerank_score": rerank_scores[hit.memory.id]} if hit.memory.id in rerank_scores else {}),
                "timings_ms": timings,
            }
        return hits

    def _add_neighbours(
        self,
        ctx: ArmContext,
        fused: list[tuple[str, float]],
        heads: Mapping[str, MemoryHead | MemoryRecord],
        config: NeighbourConfig,
    ) -> tuple[list[tuple[str, float]], dict[str, str]]:
        head = [mid for mid, _ in fused[: config.depth] if mid in heads]
        texts = {mid: heads[mid].text for mid in head}
        # Only the sessions of hits that lend: with replies_only, those that ask a question.
        lenders = [mid for mid in head if not config.replies_only or is_question(texts[mid])]
        if not lenders:
            return fused, {}
        session_of = {mid: heads[mid].session_id for mid in lenders}
        members = ctx.session_members(sorted({s for s in session_of.values() if s is not None}))
        return add_neighbours(fused, session_of, members, config, texts)

    def _rerank(
        self,
        request: SearchRequest,
        chosen: list[tuple[str, float]],
        heads: Mapping[str, MemoryHead | MemoryRecord],
        timings: dict[str, float],
    ) -> tuple[dict[str, float], dict[str, Any]]:
        """The cross-encoder's score of each of ``chosen`` (none without one), and the attributes
        every hit then carries."""
        if self.reranker is None:
            return {}, {"reranked": False, "rerank_note": "no cross-encoder configured; fused order kept"}
        if not chosen:
            return {}, {"reranked": True, "reranker": self.reranker.name}
        started = time.perf_counter()
        scores = self.reranker.score(request.query, [heads[mid].text for mid, _ in chosen])
        timings["rerank_ms"] = _ms(started)
        return (
            {mid: float(score) for (mid, _), score in zip(chosen, scores, strict=True)},
            {"reranked": True, "reranker": self.reranker.name},
        )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
