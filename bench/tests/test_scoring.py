"""Hand-computed values for the rank metrics in bench.scoring."""

from __future__ import annotations

import math

import pytest

from bench.scoring import hit_at_k, mean_metrics, ndcg_at_k, question_metrics, recall_at_k, reciprocal_rank
from bench.stats import latency_summary, percentile

# Five results; gold turns D1:3 (at rank 2) and D2:5 (at rank 4, inside a merged memory).
RANKED = [{"D1:1"}, {"D1:3"}, {"D3:9"}, {"D2:4", "D2:5"}, {"D1:3"}]
GOLD = {"D1:3", "D2:5"}


@pytest.mark.parametrize(("k", "expected"), [(1, 0.0), (2, 0.5), (3, 0.5), (4, 1.0), (10, 1.0)])
def test_recall_counts_gold_units_covered_in_top_k(k: int, expected: float) -> None:
    assert recall_at_k(RANKED, GOLD, k) == expected


@pytest.mark.parametrize(("k", "expected"), [(1, 0.0), (2, 1.0), (5, 1.0)])
def test_hit_is_one_once_any_gold_unit_appears(k: int, expected: float) -> None:
    assert hit_at_k(RANKED, GOLD, k) == expected


def test_reciprocal_rank_uses_first_covering_position() -> None:
    assert reciprocal_rank(RANKED, GOLD) == 0.5
    assert reciprocal_rank([{"a"}, {"b"}, {"c"}], {"c"}) == pytest.approx(1 / 3)


def test_reciprocal_rank_is_zero_when_nothing_matches() -> None:
    assert reciprocal_rank(RANKED, {"D9:9"}) == 0.0
    assert reciprocal_rank([], {"D9:9"}) == 0.0


def test_ndcg_credits_each_gold_unit_once() -> None:
    # gains at ranks 2 and 4; the repeat of D1:3 at rank 5 earns nothing.
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(RANKED, GOLD, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(RANKED, GOLD, 10) == pytest.approx(0.6509209298)


def test_ndcg_is_one_for_a_perfect_ranking_and_zero_for_a_miss() -> None:
    assert ndcg_at_k([{"x"}, {"y"}, {"z"}], {"x", "y"}, 10) == pytest.approx(1.0)
    assert ndcg_at_k([{"z"}], {"x"}, 10) == 0.0


def test_ndcg_ideal_is_capped_at_k() -> None:
    # 3 gold units, k = 2: ideal has two gains; one gain at rank 1 gives 1 / (1 + 1/log2(3)).
    assert ndcg_at_k([{"a"}, {"q"}], {"a", "b", "c"}, 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_a_result_covering_two_gold_units_counts_both_for_recall_but_one_gain_for_ndcg() -> None:
    ranked = [{"a", "b"}]
    assert recall_at_k(ranked, {"a", "b"}, 1) == 1.0
    assert ndcg_at_k(ranked, {"a", "b"}, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_question_metrics_and_mean() -> None:
    row = question_metrics(RANKED, GOLD)
    assert row == {
        "recall@1": 0.0, "hit@1": 0.0,
        "recall@5": 1.0, "hit@5": 1.0,
        "recall@10": 1.0, "hit@10": 1.0,
        "mrr": 0.5,
        "ndcg@10": pytest.approx(0.6509209298),
    }
    other = question_metrics([{"D1:3"}], {"D1:3"})
    mean = mean_metrics([row, other])
    assert mean["n"] == 2
    assert mean["mrr"] == 0.75
    assert mean["recall@1"] == 0.5
    assert mean["ndcg@10"] == pytest.approx((0.6509209298 + 1.0) / 2, abs=1e-4)
    assert mean_metrics([]) == {"n": 0}


def test_percentile_interpolates_between_ranks() -> None:
    values = [10.0, 20.0, 30.0, 40.0]
    assert percentile(values, 50) == 25.0
    assert percentile(values, 95) == pytest.approx(38.5)
    assert percentile([7.0], 95) == 7.0
    assert math.isnan(percentile([], 50))


def test_latency_summary_reports_milliseconds() -> None:
    summary = latency_summary([0.001, 0.002, 0.003])
    assert summary == {"n": 3, "p50_ms": 2.0, "p95_ms": 2.9, "p99_ms": 2.98, "mean_ms": 2.0}
