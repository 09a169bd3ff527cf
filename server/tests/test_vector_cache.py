"""The per-user vector cache answers exactly what the database file answers.

A warm server (its cache filled by searches between the writes) and the same data file after a
restart (cache rebuilt from the rows) must give identical results for every filter combination.
Filtered vector search masks the cache by rowid, so a wrong rowid in the cache shows up here.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from cortadel_server.testing import ServerProcess

USER = "cache-user"
# (text, extra fields of POST /api/v1/memories): sessions, types, apps, projects, tags and valid times vary.
CORPUS: list[tuple[str, dict[str, Any]]] = [
    ("I prefer green tea over coffee.", {}),
    ("I moved to Lisbon last month.", {"session_id": "s1"}),
    ("To release the app: run the tests, then tag the commit.", {"memory_type": "procedural", "app": "a1", "project": "p1", "tags": ["t1"]}),
    ("I live in Berlin.", {"timestamp": "2025-01-10T09:00:00Z", "app": "a2", "session_id": "s2"}),
    ("I visited Porto with Ana in May 2025.", {"memory_type": "episodic", "project": "p1", "session_id": "s1", "tags": ["t1"]}),
    ("My manager is Bob.", {"app": "a1", "tags": ["t2"], "session_id": "s2"}),
    ("I live in Paris now.", {"timestamp": "2026-05-20T18:30:00Z", "app": "a1", "project": "p1", "session_id": "s1"}),
    ("To deploy: build the image, then restart the pods.", {"memory_type": "procedural", "session_id": "s2", "tags": ["t1"]}),
    ("Rex is the name of the office dog.", {"infer": False, "app": "a2", "project": "p2"}),
]
QUERY = "Lisbon"
AS_OF = "2025-06-01T00:00:00Z"


def search(client: httpx.Client, **filters: Any) -> list[tuple[str, str, float]]:
    body = {"user_id": USER, "query": QUERY, "mode": "vector", "top_k": 50, **filters}
    response = client.post("/api/v1/memories/search", json=body)
    assert response.status_code == 200, response.text
    return [(r["id"], r["content"], round(r["rrf_score"], 6)) for r in response.json()["results"]]


def listing(client: httpx.Client, **params: Any) -> list[str]:
    response = client.get("/api/v1/memories", params={"user_id": USER, "search_query": QUERY, "size": 100, **params})
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


def search_filters(known_at: float) -> Iterator[dict[str, Any]]:
    """Every combination of the search filters, None meaning unset."""
    dimensions = {
        "session_id": [None, "s1", "s2"],
        "memory_type": [None, "semantic", "episodic", "procedural"],
        "project": [None, "p1"],
        "tag": [None, "t1"],
        "time": [None, ("as_of", AS_OF), ("known_at", known_at)],
    }
    for values in itertools.product(*dimensions.values()):
        combo = dict(zip(dimensions, values, strict=True))
        time_filter = combo.pop("time")
        if time_filter:
            combo[time_filter[0]] = time_filter[1]
        yield {k: v for k, v in combo.items() if v is not None}


def list_filters(known_at: float) -> Iterator[dict[str, Any]]:
    """Every combination of the listing filters the search endpoint lacks (app, include_superseded)."""
    dimensions = {
        "app_id": [None, "a1", "a2"],
        "include_superseded": [None, "true"],
        "memory_type": [None, "semantic", "procedural"],
        "time": [None, ("as_of", AS_OF), ("known_at", str(known_at))],
    }
    for values in itertools.product(*dimensions.values()):
        combo = dict(zip(dimensions, values, strict=True))
        time_filter = combo.pop("time")
        if time_filter:
            combo[time_filter[0]] = time_filter[1]
        yield {k: v for k, v in combo.items() if v is not None}


def answers(client: httpx.Client, known_at: float) -> dict[str, Any]:
    return {
        **{f"search {sorted(f.items())}": search(client, **f) for f in search_filters(known_at)},
        **{f"list {sorted(f.items())}": listing(client, **f) for f in list_filters(known_at)},
    }


def test_the_issue_reproducer_finds_the_episodic_memory_added_with_a_session(api: httpx.Client, user: str) -> None:
    for body in ({"text": "I prefer green tea over coffee."}, {"text": "I moved to Lisbon last month.", "session_id": "s1"}):
        assert api.post("/api/v1/memories", json={"user_id": user, **body}).json()["event"] == "ADD"
    response = api.post(
        "/api/v1/memories/search", json={"user_id": user, "query": "Lisbon", "mode": "vector", "memory_type": "episodic"}
    )
    assert [(r["content"], r["memory_type"]) for r in response.json()["results"]] == [
        ("User moved to Lisbon last month.", "episodic")
    ]


@pytest.fixture()
def data_file(tmp_path: Path) -> Path:
    return tmp_path / "cortadel.db"


def test_filtered_vector_search_is_the_same_warm_and_after_a_restart(data_file: Path) -> None:
    server = ServerProcess(data_file)
    server.start()
    try:
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            known_at = 0.0
            for text, fields in CORPUS:
                search(client)  # keeps the cache warm, so every write goes through it
                response = client.post("/api/v1/memories", json={"user_id": USER, "text": text, **fields})
                assert response.status_code == 200, response.text
                if text == "I live in Berlin.":
                    time.sleep(0.05)
                    known_at = time.time()  # record time between Berlin and everything after it
                    time.sleep(0.05)
            warm = answers(client, known_at)
        server.restart()
        with httpx.Client(base_url=server.base_url, timeout=30) as client:
            cold = answers(client, known_at)
    finally:
        server.stop()
    assert len(warm) == 144 + 54
    assert sum(1 for results in warm.values() if results) >= 90  # 97 of them find something
    differing = {key: (warm[key], cold[key]) for key in warm if warm[key] != cold[key]}
    assert differing == {}
