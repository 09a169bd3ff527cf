"""The figures in docs/dashboard.md: how fast the memories page renders for users with many memories.

    cd server && ../.venv/bin/python -m browser_tests.render_time

Seeds one user with 10,000 and one with 100,000 memories, written straight through the storage
layer (adding them one by one through the API would take most of an hour; the pages read the same
rows either way), then measures, on a real server: the first contentful paint of the memories page
in chromium (p50 of 20 loads), and over HTTP the first page, the deepest page and a text filter
(the API's ``search_query`` listing: the 1,000 most relevant, then the rest) on its first and deepest page.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import numpy as np
from playwright.sync_api import sync_playwright

from browser_tests.conftest import CHROMIUM, CHROMIUM_ARGS
from cortadel_server.storage.base import MemoryRecord
from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.testing import ServerProcess
from cortadel_server.text import fingerprint

USERS = {"ten-thousand": 10_000, "hundred-thousand": 100_000}
LOADS = 20
#: ms from the start of navigation to the first paint of content (waits for the entry: headless paints late)
FIRST_PAINT = """new Promise(resolve => new PerformanceObserver(list => {
  const paint = list.getEntries().find(e => e.name === 'first-contentful-paint');
  if (paint) resolve(paint.startTime);
}).observe({type: 'paint', buffered: true}))"""
WORDS = ["coffee", "bike", "Lisbon", "cello", "garden", "tea", "Berlin", "sister", "deadline", "project", "holiday", "dentist", "piano", "train"]


def seed(path: Path, dim: int) -> None:
    storage = SqliteStorage(path)
    rng = np.random.default_rng(7)
    start = time.time() - 400 * 86400
    try:
        for user, count in USERS.items():
            for chunk in range(0, count, 5_000):
                with storage.write(user):
                    for i in range(chunk, min(chunk + 5_000, count)):
                        text = f"Fact {i}: user mentioned {WORDS[i % len(WORDS)]} and {WORDS[(i * 7) % len(WORDS)]}."
                        vector = rng.standard_normal(dim).astype(np.float32)
                        at = start + i * (400 * 86400 / count)
                        storage.insert_memory(MemoryRecord(
                            id=str(uuid.uuid4()), user_id=user, text=text, created_at=at, fingerprint=fingerprint(text),
                            valid_at=at, updated_at=at, project="p" if i % 3 else None,
                        ), vector / np.linalg.norm(vector))
    finally:
        storage.close()


def p50_ms(samples: list[float]) -> float:
    return round(statistics.median(samples), 1)


def http_p50(client: httpx.Client, url: str) -> float:
    samples = []
    for _ in range(LOADS):
        started = time.perf_counter()
        assert client.get(url).status_code == 200
        samples.append((time.perf_counter() - started) * 1000)
    return p50_ms(samples)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="cortadel-render-") as tmp:
        server = ServerProcess(Path(tmp) / "cortadel.db")
        server.start()  # creates the schema and the vector index for the configured embedder
        with httpx.Client(base_url=server.base_url, timeout=120) as client:
            dim = client.get("/api/health").json()["checks"]["embeddings"]["dim"]
        server.stop()
        seeded = time.perf_counter()
        seed(server.data, dim)
        print(f"seeded {sum(USERS.values())} memories in {time.perf_counter() - seeded:.0f} s")
        server.start()
        try:
            with httpx.Client(base_url=server.base_url, timeout=120) as client, sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page()
                for user, count in USERS.items():
                    first = f"/ui/memories?user_id={user}"
                    paints = []
                    for _ in range(LOADS):
                        page.goto(server.base_url + first)
                        paints.append(page.evaluate(FIRST_PAINT))
                    deepest = f"{first}&size=25&page={min(count // 25, 4000)}"
                    print(f"{user} ({count}): first contentful paint p50 {p50_ms(paints)} ms (chromium); HTTP p50: "
                          f"page 1 {http_p50(client, first)} ms, page {min(count // 25, 4000)} {http_p50(client, deepest)} ms, "
                          f"project filter {http_p50(client, first + '&project=p')} ms, "
                          f"text filter {http_p50(client, first + '&q=cello+Lisbon')} ms, "
                          f"text filter page {min(count // 25, 4000)} {http_p50(client, deepest + '&q=cello+Lisbon')} ms")
                browser.close()
        finally:
            server.stop()


if __name__ == "__main__":
    main()
