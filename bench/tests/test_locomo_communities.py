"""The community bonus of bench.locomo.communities: which results it counts, and how it reorders them."""

from __future__ import annotations

from bench.locomo.communities import reorder, shared_communities

COMMUNITIES = [
    {"entities": ["caroline", "lgbtq"], "memory_ids": ["m1", "m2"]},
    {"entities": ["melanie", "pottery"], "memory_ids": ["m2", "m3"]},
    {"entities": ["berlin"], "memory_ids": ["m4"]},
]
RESULTS = [{"id": "m4"}, {"id": "m9"}, {"id": "m3"}, {"id": "m2"}]


def test_a_memory_counts_once_per_community_that_holds_an_entity_the_question_names() -> None:
    shared = shared_communities("When did Caroline go to pottery with Melanie?", COMMUNITIES)
    assert dict(shared) == {"m1": 1, "m2": 2, "m3": 1}


def test_a_question_naming_no_entity_of_any_community_shares_none() -> None:
    assert shared_communities("what did she paint last year?", COMMUNITIES) == {}


def test_bonus_zero_keeps_the_search_order() -> None:
    assert [r["id"] for r in reorder(RESULTS, {"m2": 2, "m3": 1}, 0.0)] == ["m4", "m9", "m3", "m2"]


def test_a_bonus_lifts_results_by_how_many_communities_they_share() -> None:
    # 1/60 = 0.0167 (m4), 1/62 + 0.01 = 0.0261 (m3), 1/63 + 0.02 = 0.0359 (m2)
    assert [r["id"] for r in reorder(RESULTS, {"m2": 2, "m3": 1}, 0.01)] == ["m2", "m3", "m4", "m9"]
    # 1/60 = 0.01667 against 1/63 + 0.001 = 0.01687 for m2 alone: a small bonus only overtakes near neighbours
    assert [r["id"] for r in reorder(RESULTS, {"m2": 1}, 0.001)] == ["m2", "m4", "m9", "m3"]
