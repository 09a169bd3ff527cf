"""Fusion of ranked lists: plain functions, each testable alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cortadel_server.storage.base import ScoredId

#: The constant of reciprocal rank fusion (Cormack et al.): damps the head of each list.
RRF_K = 60

#: The least a candidate contributes in score fusion, so every fused score stays above zero.
FOUND_FLOOR = 1e-6


def dense_ranks(found: Sequence[ScoredId]) -> dict[str, int]:
    """1-based ranks of a best-first list in which equal scores share a rank (1, 1, 2, 3, 3, 4…).

    An arm that scores a group alike (every member of one session) thus gives the group one rank.
    """
    ranks: dict[str, int] = {}
    rank = 0
    previous: float | None = None
    for item in found:
        if item.score != previous:
            rank += 1
            previous = item.score
        ranks.setdefault(item.id, rank)
    return ranks


def fuse_ranks(
    ranks: Mapping[str, Mapping[str, int]],
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion of per-arm ranks: each id scores sum(weight / (k + rank)).

    Ties keep the order in which ids were first seen, arm by arm.
    """
    scores: dict[str, float] = {}
    for arm, arm_ranks in ranks.items():
        weight = 1.0 if weights is None else weights.get(arm, 1.0)
        if weight <= 0:
            continue
        for memory_id, rank in arm_ranks.items():
            scores[memory_id] = scores.get(memory_id, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[str]],
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
) -> list[tuple[str, float]]:
    """Fuse ranked id lists (best first) into one, scoring each id by sum(weight / (k + rank)).

    Ranks are 1-based. Ties keep the order in which ids were first seen, arm by arm.
    """
    ranks = {arm: {mid: rank for rank, mid in reversed(list(enumerate(ids, start=1)))} for arm, ids in rankings.items()}
    return fuse_ranks(ranks, weights, k)


def score_fusion(
    found: Mapping[str, Sequence[ScoredId]],
    weights: Mapping[str, float] | None = None,
) -> list[tuple[str, float]]:
    """Score-aware fusion: each arm's scores scaled to [0, 1], then a weighted sum.

    Scaling divides by the arm's best score (from a floor of 0, or of the lowest score when some
    are negative), so an arm's last candidate still counts when its score is positive. Unlike RRF
    it keeps how far apart an arm's candidates are: a clear BM25 winner stays ahead of a crowd of
    near-equal cosine neighbours. An arm whose scores are all equal gives each 1.0.
    """
    scores: dict[str, float] = {}
    for arm, items in found.items():
        weight = 1.0 if weights is None else weights.get(arm, 1.0)
        if weight <= 0 or not items:
            continue
        values = [item.score for item in items]
        low, high = min(min(values), 0.0), max(values)
        spread = high - low
        for item in items:
            # Found by the arm counts for something: never exactly 0 (scores go out as rrf_score > 0).
            normalised = max((item.score - low) / spread, FOUND_FLOOR) if spread > 0 else 1.0
            scores[item.id] = scores.get(item.id, 0.0) + weight * normalised
    return sorted(scores.items(), key=lambda item: -item[1])


def reference_scores(ranks: Sequence[Mapping[str, int]], k: int = RRF_K) -> list[float]:
    """The ``rrf_score`` of each hit of a returned list (best first), on the scale of the reference
    server's plain reciprocal rank fusion: sum(1 / (k + rank)) over the arms that found the hit,
    never more than the score of the hit above it, so a ``minScore`` threshold set for the
    reference keeps a prefix of our order. A hit no arm ranked (a neighbour lent context) scores
    as if one arm had ranked it at its position.

        reference_scores([{"text": 1, "vector": 1}, {"text": 2}])  # [2/61, 1/62]
    """
    scores: list[float] = []
    for position, arm_ranks in enumerate(ranks, start=1):
        own = sum(1.0 / (k + rank) for rank in arm_ranks.values()) if arm_ranks else 1.0 / (k + position)
        scores.append(min(own, scores[-1]) if scores else own)
    return scores


def trim_to_token_budget(texts: Sequence[str], budget: int) -> int:
    """How many of the leading texts fit in ``budget`` tokens (about four characters a token).

    Order is never changed: the lowest-ranked texts are the ones left out.
    """
    used = 0
    for count, text in enumerate(texts):
        used += estimate_tokens(text)
        if used > budget:
            return count
    return len(texts)


def estimate_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)
