"""Issue #12 item 10: concurrent contradicting facts keep both time axes consistent.

Twenty clients say where the user lives at once. Valid time used to be stamped before the write lock
was taken, so a write that waited for the lock superseded a fact stamped after it: rows ended before
they began and an `as_of` query found several homes. Now "now" is read under the lock, and a
statement dated before the current fact is stored as a past version between its neighbours.
"""

from __future__ import annotations

import random
import threading
from datetime import UTC, datetime
from typing import Any

import httpx

CITIES = ["Berlin", "Paris", "Oslo", "Rome", "Lisbon", "Vienna", "Prague", "Madrid", "Dublin", "Warsaw",
          "Athens", "Zurich", "Lyon", "Porto", "Milan", "Munich", "Bergen", "Ghent", "Turin", "Krakow"]
BASE = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
DAY = 86_400


def add_all_at_once(api: httpx.Client, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    start = threading.Barrier(len(bodies))
    results: list[dict[str, Any] | None] = [None] * len(bodies)

    def add(i: int) -> None:
        start.wait()
        response = api.post("/api/v1/memories", json=bodies[i])
        assert response.status_code == 200, response.text
        results[i] = response.json()

    threads = [threading.Thread(target=add, args=(i,)) for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(r is not None for r in results)
    return [r for r in results if r is not None]


def versions(api: httpx.Client, user: str) -> list[dict[str, Any]]:
    response = api.get("/api/v1/memories", params={"user_id": user, "include_superseded": "true", "size": 100})
    assert response.status_code == 200, response.text
    return response.json()["items"]


def homes_as_of(api: httpx.Client, user: str, instant: str) -> list[str]:
    response = api.get("/api/v1/memories", params={"user_id": user, "as_of": instant, "size": 100})
    assert response.status_code == 200, response.text
    return sorted(item["content"] for item in response.json()["items"])


def seconds(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def check_one_home_at_every_instant(api: httpx.Client, user: str, rows: list[dict[str, Any]]) -> None:
    assert len(rows) == 20
    assert sorted(r["content"] for r in rows) == sorted(f"User lives in {c}." for c in CITIES)
    current = [r for r in rows if r["is_current"]]
    assert len(current) == 1
    assert current[0]["invalid_at"] is None and current[0]["state"] == "active"
    backwards = [r for r in rows if r["invalid_at"] is not None and seconds(r["invalid_at"]) < seconds(r["valid_at"])]
    assert backwards == []
    for row in rows:  # at each version's start and just before it, exactly one home was true
        for instant in (seconds(row["valid_at"]), seconds(row["valid_at"]) - 0.0005):
            at = datetime.fromtimestamp(instant, UTC).isoformat()
            homes = homes_as_of(api, user, at)
            assert len(homes) <= 1, (at, homes)
    assert homes_as_of(api, user, datetime.fromtimestamp(seconds(current[0]["valid_at"]) + 1, UTC).isoformat()) == [current[0]["content"]]


def test_twenty_concurrent_moves_leave_one_home_and_no_backward_interval(api: httpx.Client, user: str) -> None:
    results = add_all_at_once(api, [{"user_id": user, "text": f"I live in {city}."} for city in CITIES])
    assert sorted(r["event"] for r in results) == ["ADD"] + ["SUPERSEDE"] * 19
    rows = versions(api, user)
    check_one_home_at_every_instant(api, user, rows)
    # The serial order of the writes is the order of their valid times: each supersedes the one before.
    chain = sorted(rows, key=lambda r: seconds(r["valid_at"]))
    assert [r["invalid_at"] for r in chain[:-1]] == [r["valid_at"] for r in chain[1:]]


def test_dated_statements_arriving_out_of_order_form_one_timeline(api: httpx.Client, user: str) -> None:
    days = list(range(20))
    random.Random(12).shuffle(days)
    bodies = [{"user_id": user, "text": f"I live in {city}.", "timestamp": BASE + day * DAY} for city, day in zip(CITIES, days)]
    add_all_at_once(api, bodies)
    rows = versions(api, user)
    check_one_home_at_every_instant(api, user, rows)
    # Whatever the arrival order, the latest statement is current and each day names its own city.
    latest = next(b for b in bodies if b["timestamp"] == BASE + 19 * DAY)
    assert [r["content"] for r in rows if r["is_current"]] == [latest["text"].replace("I live", "User lives")]
    for body in bodies:
        noon = datetime.fromtimestamp(body["timestamp"] + DAY / 2, UTC).isoformat()
        assert homes_as_of(api, user, noon) == [body["text"].replace("I live", "User lives")]
