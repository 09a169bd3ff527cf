"""Soak (long budget only): thousands of mixed requests from concurrent clients, never a 5xx.

The server's resident memory is read from /proc before and after; the tally reports both figures.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from attack import budget
from cortadel_server.testing import running_server

CLIENTS = 4
WORDS = ["tea", "coffee", "Lisbon", "Berlin", "nurse", "pilot", "garden", "violin", "marathon", "Tuesday", "release", "deploy"]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS line")


def _client(base_url: str, requests: int, seed: int, deadline: float, statuses: Counter[int], lock: threading.Lock) -> None:
    rng = random.Random(seed)
    user = f"soak-{seed}"
    ids: list[str] = []
    with httpx.Client(base_url=base_url, timeout=60) as http:
        for _ in range(requests):
            if time.monotonic() > deadline:
                return
            phrase = " ".join(rng.sample(WORDS, 3))
            op = rng.choice(["add", "add", "search", "search", "list", "get", "history", "delete", "conversation",
                             "health"])
            if op == "add":
                response = http.post("/api/v1/memories", json={
                    "user_id": user, "text": f"I like {phrase} {uuid.uuid4().hex[:6]}.", "infer": rng.random() < 0.5})
                if response.status_code == 200 and response.json()["id"]:
                    ids.append(response.json()["id"])
            elif op == "conversation":
                response = http.post("/api/v1/memories/from-conversation", json={
                    "user_id": user, "messages": [{"role": "user", "content": f"My favourite is {phrase}."}]})
            elif op == "search":
                response = http.post("/api/v1/memories/search", json={"user_id": user, "query": phrase, "top_k": 5})
            elif op == "list":
                response = http.get("/api/v1/memories", params={"user_id": user, "page": rng.randint(1, 3), "size": 20})
            elif op in ("get", "history"):
                memory_id = rng.choice(ids) if ids else str(uuid.uuid4())
                suffix = "/history" if op == "history" else ""
                response = http.get(f"/api/v1/memories/{memory_id}{suffix}", params={"user_id": user})
            elif op == "delete":
                memory_id = ids.pop(rng.randrange(len(ids))) if ids else str(uuid.uuid4())
                response = http.request("DELETE", "/api/v1/memories", json={"user_id": user, "memory_ids": [memory_id]})
            else:
                response = http.get("/api/health")
            with lock:
                statuses[response.status_code] += 1


@pytest.mark.skipif(budget.current().soak_requests == 0, reason="long budget only (make test-attack)")
def test_soak_mixed_requests_never_5xx(tally: Counter[str]) -> None:
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    with running_server() as server:
        before = rss_mib(server.pid)
        deadline = time.monotonic() + budget.current().seconds
        started = time.monotonic()
        with ThreadPoolExecutor(CLIENTS) as pool:
            for future in [pool.submit(_client, server.base_url, budget.current().soak_requests // CLIENTS, seed,
                                       deadline, statuses, lock) for seed in range(CLIENTS)]:
                future.result()
        elapsed = time.monotonic() - started
        after = rss_mib(server.pid)
    total = sum(statuses.values())
    tally["soak: requests"] += total
    tally[f"soak: seconds {elapsed:.0f}, RSS MiB before {before:.0f} after {after:.0f}"] += 1
    for status, count in statuses.items():
        tally[f"soak: status {status}"] += count
    assert not [s for s in statuses if s >= 500], statuses
    assert set(statuses) <= {200, 404}, statuses
