"""Twenty statements of where a user lives, sent at once, and the checks that their versions form
one timeline: one home at every instant, no interval ending before it began (issue #12 item 10;
test_bitemporal_concurrency.py, and across replicas test_postgres_server.py)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import httpx

CITIES = ["Berlin", "Paris", "Oslo", "Rome", "Lisbon", "Vienna", "Prague", "Madrid", "Dublin", "Warsaw",
          "Athens", "Zurich", "Lyon", "Porto", "Milan", "Munich", "Bergen", "Ghent", "Turin", "Krakow"]
BASE = datetime(2025, 1, 1, tzinfo=UTC).timestamp()
DAY = 86_400


def add_all_at_once(clients: httpx.Client | Sequence[httpx.Client], bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every body added at the same moment, each on its own thread; body i through client i modulo
    their number (several: one per server of a store)."""
    clients = [clients] if isinstance(clients, httpx.Client) else list(clients)
    start = threading.Barrier(len(bodies))
    results: list[dict[str, Any] | None] = [None] * len(bodies)

    def add(i: int) -> None:
        start.wait()
        response = clients[i % len(clients)].post("/api/v1/memories", json=bodies[i])
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
