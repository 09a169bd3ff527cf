"""The scale benchmark samples users over the whole store and counts each user's first search as cold."""

from __future__ import annotations

from bench.perf.scale import Timings, spread_users


def test_sampled_users_spread_over_the_whole_store() -> None:
    assert spread_users(1000, 4) == ["user-0000", "user-0250", "user-0500", "user-0750"]
    assert spread_users(3, 50) == ["user-0000", "user-0001", "user-0002"]


def test_each_users_first_search_is_cold_and_the_rest_warm() -> None:
    timings = Timings()
    hit = [{"id": "m1", "attributes": {"timings_ms": {"embed": 2.0, "vector": 3.0}}}]
    for user, seconds in [("a", 0.050), ("b", 0.040), ("a", 0.010), ("a", 0.012), ("b", 0.011)]:
        timings.add(user, hit, seconds)
    timings.add("b", [], 0.009)
    summary = timings.summary()
    assert summary["http_cold"]["n"] == 2
    assert summary["http_cold"]["p50_ms"] == 45.0
    assert summary["http_warm"]["n"] == 4
    assert summary["http_warm"]["p50_ms"] == 10.5
    assert summary["server_phases_warm"] == {"n": 3, "p50_ms": 5.0, "p95_ms": 5.0, "p99_ms": 5.0, "mean_ms": 5.0}
    assert summary["phase_p50_ms_warm"] == {"embed": 2.0, "vector": 3.0}
    assert summary["searches_without_results"] == 1
