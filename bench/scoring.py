"""Rank metrics over result lists whose items may each cover several gold units.

A ranked list is a sequence of sets: position r holds the units (LoCoMo turn ids, or session ids)
that the r-th search result stands for. A raw turn covers one turn; a distilled fact covers every
turn it was extracted from; a memory that deduplication merged covers all turns that mapped to it.

    recall_at_k(ranked, gold, k)  = |gold ∩ (R1 ∪ … ∪ Rk)| / |gold|
    hit_at_k(ranked, gold, k)     = 1 if any of R1 … Rk meets gold, else 0
    reciprocal_rank(ranked, gold) = 1 / r for the first r whose Rr meets gold, else 0
    ndcg_at_k(ranked, gold, k)    = DCG / IDCG with binary gains: position r gains 1 when it covers
                                    a gold unit that no earlier position covered (a unit is
                                    credited once), discounted by log2(r + 1);
                                    IDCG = Σ_{i=1..min(|gold|, k)} 1 / log2(i + 1)

Every function takes a non-empty gold set.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet

Ranked = Sequence[AbstractSet[str]]


def _covered(ranked: Ranked, k: int) -> set[str]:
    covered: set[str] = set()
    for units in ranked[:k]:
        covered |= units
    return covered


def recall_at_k(ranked: Ranked, gold: AbstractSet[str], k: int) -> float:
    """Share of gold units covered by the top k results."""
    return len(_covered(ranked, k) & gold) / len(gold)


def hit_at_k(ranked: Ranked, gold: AbstractSet[str], k: int) -> float:
    """1.0 when any of the top k results covers a gold unit."""
    return 1.0 if _covered(ranked, k) & gold else 0.0


def reciprocal_rank(ranked: Ranked, gold: AbstractSet[str]) -> float:
    """1 / rank of the first result that covers a gold unit; 0.0 when none does."""
    for rank, units in enumerate(ranked, start=1):
        if units & gold:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Ranked, gold: AbstractSet[str], k: int) -> float:
    """Binary-gain nDCG@k where each gold unit earns credit only at its first covering position."""
    credited: set[str] = set()
    dcg = 0.0
    for rank, units in enumerate(ranked[:k], start=1):
        new = (units & gold) - credited
        if new:
            credited |= new
            dcg += 1.0 / math.log2(rank + 1)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def question_metrics(ranked: Ranked, gold: AbstractSet[str], ks: Iterable[int] = (1, 5, 10)) -> dict[str, float]:
    """All metrics for one question: recall@k and hit@k per k, MRR (as ``mrr``) and ``ndcg@10``."""
    metrics: dict[str, float] = {}
    for k in ks:
        metrics[f"recall@{k}"] = recall_at_k(ranked, gold, k)
        metrics[f"hit@{k}"] = hit_at_k(ranked, gold, k)
    metrics["mrr"] = reciprocal_rank(ranked, gold)
    metrics["ndcg@10"] = ndcg_at_k(ranked, gold, 10)
    return metrics


def mean_metrics(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Per-key mean over question rows (each row from :func:`question_metrics`), plus ``n``."""
    if not rows:
        return {"n": 0}
    keys = rows[0].keys()
    means = {key: round(sum(row[key] for row in rows) / len(rows), 4) for key in keys}
    return {"n": len(rows), **means}
