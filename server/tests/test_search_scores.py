"""rrf_score on the wire is on the reference server's scale: plain reciprocal rank fusion (k = 60)
of the arms that found a hit, never above the hit before it; our own fusion score is in attributes."""

from __future__ import annotations

import itertools

import httpx
import pytest
from test_api_memories import add, search

from cortadel_server.retrieval.fusion import reference_scores


def rrf_of(result: dict) -> float:
    return sum(1 / (60 + arm["rank"]) for arm in result["attributes"]["arms"].values())


def test_hybrid_rrf_score_is_reciprocal_rank_fusion_of_the_hit_ranks(api: httpx.Client, user: str) -> None:
    kayak = add(api, user, "The red kayak is stored in the boathouse by the lake.", session_id="lake")["id"]
    add(api, user, "We paddled the kayak for an hour.", session_id="trip")
    add(api, user, "The boathouse roof leaks when it rains.", session_id="house")
    results = search(api, user, "red kayak boathouse")["results"]
    assert results[0]["id"] == kayak
    assert results[0]["attributes"]["arms"]["text"] == {"rank": 1}
    scores = [r["rrf_score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] == pytest.approx(rrf_of(results[0]), abs=1e-12)
    # Three arms at most, each 1/(60 + rank): the reference's magnitude, not a score-fusion sum.
    assert 1 / 61 < scores[0] <= 3 / 61
    for above, result in itertools.pairwise(results):
        assert result["rrf_score"] == pytest.approx(min(rrf_of(result), above["rrf_score"]), abs=1e-12)
    fusion = [r["attributes"]["fusion_score"] for r in results]
    assert fusion == sorted(fusion, reverse=True)
    assert fusion[0] > 1.0  # BM25 1.0 + the vector and session arms' weighted shares


def test_text_mode_scores_are_one_over_sixty_plus_rank(api: httpx.Client, user: str) -> None:
    add(api, user, "Granite granite granite countertops.", session_id="a")
    add(api, user, "Granite countertops in the kitchen of the old farmhouse by the river.", session_id="b")
    results = search(api, user, "granite", mode="text")["results"]
    assert [r["text_rank"] for r in results] == [1, 2]
    assert [r["rrf_score"] for r in results] == pytest.approx([1 / 61, 1 / 62], abs=1e-12)


def test_a_hit_never_scores_above_the_one_before_it() -> None:
    # The second hit was lifted above the first by our own fusion though its ranks are better:
    # capped, so a threshold keeps a prefix of the returned order.
    assert reference_scores([{"session": 3}, {"text": 1, "vector": 1}, {}]) == pytest.approx([1 / 63, 1 / 63, 1 / 63])
    assert reference_scores([{"text": 1, "vector": 2}, {"text": 2}, {}]) == pytest.approx([1 / 61 + 1 / 62, 1 / 62, 1 / 63])
