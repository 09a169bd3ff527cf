"""Fusion of ranked lists: plain functions, each testable alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: The constant of reciprocal rank fusion (Cormack et al.): damps the head of each list.
RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[str]],
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
) -> list[tuple[str, float]]:
    """Fuse ranked id lists (best first) into one, scoring each id by sum(weight / (k + rank)).

    Ranks are 1-based. Ties keep the order in which ids were first seen, arm by arm.
    """
    scores: dict[str, float] = {}
    for arm, ids in rankings.items():
        weight = 1.0 if weights is None else weights.get(arm, 1.0)
        if weight <= 0:
            continue
        for rank, memory_id in enumerate(ids, start=1):
            scores[memory_id] = scores.get(memory_id, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


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
