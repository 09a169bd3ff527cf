"""Hybrid retrieval: composable arms, one fusion step, an optional cross-encoder rerank.

Configuration is data (``SearchConfig`` built from ``ArmConfig``s, with named recipes); each arm
over-fetches, fusion is a plain function, and every phase is timed into the hit's attributes.
No LLM is ever called on this path.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from cortadel_server.providers.embedding.base import Embedder
from cortadel_server.providers.reranking.base import Reranker
from cortadel_server.retrieval.fusion import RRF_K, reciprocal_rank_fusion, trim_to_token_budget
from cortadel_server.storage.base import MemoryFilters, MemoryRecord, ScoredId, Storage


class Arm(str, Enum):
    TEXT = "text"
    VECTOR = "vector"


@dataclass(frozen=True)
class ArmConfig:
    arm: Arm
    weight: float = 1.0
    #: how many candidates the arm fetches before fusion (over-fetch: fusion needs depth)
    limit: int = 50


@dataclass(frozen=True)
class SearchConfig:
    arms: tuple[ArmConfig, ...]
    rrf_k: int = RRF_K
    #: how many fused candidates a cross-encoder rescores
    rerank_depth: int = 30


HYBRID = SearchConfig(arms=(ArmConfig(Arm.TEXT), ArmConfig(Arm.VECTOR)))
TEXT_ONLY = SearchConfig(arms=(ArmConfig(Arm.TEXT),))
VECTOR_ONLY = SearchConfig(arms=(ArmConfig(Arm.VECTOR),))

#: request ``mode`` → recipe
RECIPES: Mapping[str, SearchConfig] = {"hybrid": HYBRID, "text": TEXT_ONLY, "vector": VECTOR_ONLY}


@dataclass(frozen=True)
class SearchRequest:
    user_id: str
    query: str
    top_k: int = 10
    mode: str = "hybrid"
    filters: MemoryFilters = MemoryFilters()
    rerank: bool = False
    token_budget: int | None = None


@dataclass
class Hit:
    memory: MemoryRecord
    score: float
    ranks: dict[str, int]
    attributes: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ArmContext:
    storage: Storage
    request: SearchRequest
    query_vector: Callable[[], np.ndarray]


ArmFn = Callable[[ArmContext, int], list[ScoredId]]


def text_arm(ctx: ArmContext, limit: int) -> list[ScoredId]:
    """BM25 over the full-text index."""
    return ctx.storage.text_search(ctx.request.user_id, ctx.request.query, ctx.request.filters, limit)


def vector_arm(ctx: ArmContext, limit: int) -> list[ScoredId]:
    """Cosine nearest neighbours of the embedded query."""
    return ctx.storage.vector_search(ctx.request.user_id, ctx.query_vector(), ctx.request.filters, limit)


ARMS: dict[Arm, ArmFn] = {Arm.TEXT: text_arm, Arm.VECTOR: vector_arm}


class Retriever:
    """Runs a search request through the arms of its recipe, fuses, reranks and trims."""

    def __init__(self, storage: Storage, embedder: Embedder, reranker: Reranker | None = None) -> None:
        self.storage = storage
        self.embedder = embedder
        self.reranker = reranker

    def search(self, request: SearchRequest, config: SearchConfig | None = None) -> list[Hit]:
        config = config or RECIPES[request.mode]
        timings: dict[str, float] = {}
        vector_cache: list[np.ndarray] = []

        def query_vector() -> np.ndarray:
            if not vector_cache:
                started = time.perf_counter()
                vector_cache.append(self.embedder.embed([request.query])[0])
                timings["embed_ms"] = _ms(started)
            return vector_cache[0]

        ctx = ArmContext(self.storage, request, query_vector)
        rankings: dict[str, list[str]] = {}
        for arm_config in config.arms:
            started = time.perf_counter()
            found = ARMS[arm_config.arm](ctx, max(arm_config.limit, request.top_k))
            timings[f"{arm_config.arm.value}_ms"] = _ms(started)
            rankings[arm_config.arm.value] = [s.id for s in found]

        fused = reciprocal_rank_fusion(
            rankings, {a.arm.value: a.weight for a in config.arms}, k=config.rrf_k
        )
        positions = {arm: {mid: i for i, mid in enumerate(ids, start=1)} for arm, ids in rankings.items()}
        depth = max(request.top_k, config.rerank_depth if request.rerank else 0)
        head = fused[:depth]
        records = self.storage.get_memories(request.user_id, [mid for mid, _ in head])
        hits = [
            Hit(
                memory=records[mid],
                score=score,
                ranks={arm: pos[mid] for arm, pos in positions.items() if mid in pos},
            )
            for mid, score in head
            if mid in records
        ]
        rerank_attrs = self._rerank(request, hits, timings) if request.rerank else {}
        hits = hits[: request.top_k]
        if request.token_budget:
            hits = hits[: trim_to_token_budget([h.memory.text for h in hits], request.token_budget)]
        for hit in hits:
            hit.attributes = {
                "arms": {arm: {"rank": rank} for arm, rank in hit.ranks.items()},
                **rerank_attrs,
                **({"rerank_score": hit.attributes["rerank_score"]} if "rerank_score" in hit.attributes else {}),
                "timings_ms": timings,
            }
        return hits

    def _rerank(self, request: SearchRequest, hits: list[Hit], timings: dict[str, float]) -> dict[str, Any]:
        if self.reranker is None:
            return {"reranked": False, "rerank_note": "no cross-encoder configured; fused order kept"}
        if not hits:
            return {"reranked": True, "reranker": self.reranker.name}
        started = time.perf_counter()
        scores = self.reranker.score(request.query, [h.memory.text for h in hits])
        timings["rerank_ms"] = _ms(started)
        for hit, score in zip(hits, scores, strict=True):
            hit.attributes["rerank_score"] = float(score)
        hits.sort(key=lambda h: -h.attributes["rerank_score"])
        return {"reranked": True, "reranker": self.reranker.name}


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
