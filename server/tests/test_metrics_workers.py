"""GET /metrics and the System page's recent errors of `cortadel serve --workers 2`: whichever
worker answers, it answers for the whole server; and the cache counters of either backend.

Which worker served a connection is read from /proc (cortadel_server.testing.connection_owners).
"""

from __future__ import annotations

import os
import re
import signal
import struct
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.multiprocess import MultiProcessCollector
from support.scripted_openai import RecordedRequest, Reply, ScriptedOpenAI, hashed_embeddings
from test_dashboard import visible
from test_metrics import Samples, request_counts, scrape, series
from test_serve_workers import searches_on_their_own_connections

from cortadel_server.testing import ServerProcess, connection_owners, database_for, running_server, worker_pids
from cortadel_server.worker_metrics import SharedFilesCollector

Answer = TypeVar("Answer")


@pytest.fixture(scope="module")
def workers(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A server of its own: the counts below are every request it ever served."""
    server = ServerProcess(tmp_path_factory.mktemp("workers") / "cortadel.db", env={"CORTADEL_WORKERS": "2"},
                           database_url=database_for(backend))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def on_their_own_connections(
    server: ServerProcess, count: int, call: Callable[[httpx.Client, int], Answer]
) -> tuple[list[Answer], set[int]]:
    """``call`` ``count`` times at once, each over a connection of its own held open until all
    answered: the answers, and the workers that served them."""
    clients = [httpx.Client(base_url=server.base_url, timeout=30) for _ in range(count)]
    try:
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(call, clients, range(count)))
        return answers, set(connection_owners(server.port, worker_pids(server.pid)).values())
    finally:
        for client in clients:
            client.close()


def scrapes(server: ServerProcess, count: int) -> tuple[list[Samples], set[int]]:
    return on_their_own_connections(server, count, lambda client, _: scrape(client))


def test_every_scrape_counts_the_searches_of_both_workers(workers: ServerProcess) -> None:
    pids = worker_pids(workers.pid)
    found, searched_on = searches_on_their_own_connections(workers, "nobody", "anything", 40)
    assert found == [[]] * 40 and searched_on == set(pids)

    samples, scraped_on = scrapes(workers, 20)
    assert scraped_on == set(pids)
    assert [request_counts(s)[("Memories_Search", "200")] for s in samples] == [40] * 20
    for s in samples:
        assert series(s, "cortadel_search_phase_duration_seconds_count", "phase") == {
            "embed": 40, "text": 40, "vector": 40, "session": 40, "fusion": 40, "records": 40}
        # what only a live process knows: once per worker
        assert {dict(labels)["pid"] for (name, labels) in s if name == "process_cpu_seconds_total"} == {str(p) for p in pids}
        assert all(0 < value < 4 * 1024**3 for value in series(s, "process_resident_memory_bytes", "pid").values())
        # what is read from the database: once
        assert [value for (name, _), value in s.items() if name == "cortadel_jobs_pending"] == [0]


def test_a_killed_workers_counts_stay_in_every_scrape(workers: ServerProcess) -> None:
    with httpx.Client(base_url=workers.base_url, timeout=30) as client:
        before = request_counts(scrape(client)).get(("Probes_Live", "200"), 0)
    pids = worker_pids(workers.pid)
    lives, served_by = on_their_own_connections(workers, 40, lambda client, _: client.get("/livez").status_code)
    assert lives == [200] * 40 and served_by == set(pids)

    os.kill(pids[0], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while len(now := worker_pids(workers.pid)) != 2 or pids[0] in now:
        assert time.monotonic() < deadline, f"no replacement for worker {pids[0]}: {now}"
        time.sleep(0.2)
    while True:  # the other worker answers every scrape until the replacement has loaded
        samples, scraped_on = scrapes(workers, 20)
        assert [request_counts(s)[("Probes_Live", "200")] for s in samples] == [before + 40] * 20
        if scraped_on == set(now):
            break
        assert time.monotonic() < deadline, f"the replacement {now} never answered"
    samples, scraped_on = scrapes(workers, 20)
    assert scraped_on == set(now)
    for s in samples:
        assert request_counts(s)[("Probes_Live", "200")] == before + 40
        assert set(series(s, "process_cpu_seconds_total", "pid")) == {str(p) for p in now}


def test_a_scrape_while_a_worker_starts_leaves_out_its_file_not_yet_sized(tmp_path: Path) -> None:
    """A starting worker makes its metrics file, then sizes it: a scrape in between met an empty
    file, on which prometheus_client's reader fails, and answered 500 (the test above, now and
    then). Our collector leaves the empty file out and sums the others."""
    written = MmapedDict(str(tmp_path / "counter_111.db"))
    written.write_value(mmap_key("cortadel_probe", "cortadel_probe_total", [], [], "a probe"), 3.0, 0.0)
    written.close()
    (tmp_path / "counter_222.db").touch()  # the starting worker's, not sized yet
    with pytest.raises(struct.error):  # why: the library's own collector
        generate_latest(registry_with(lambda registry: MultiProcessCollector(registry, path=str(tmp_path))))
    exposed = generate_latest(registry_with(lambda registry: SharedFilesCollector(registry, tmp_path))).decode()
    assert "cortadel_probe_total 3.0" in exposed.splitlines()


def registry_with(collector: Callable[[CollectorRegistry], object]) -> CollectorRegistry:
    registry = CollectorRegistry()
    collector(registry)
    return registry


def test_the_system_page_of_either_worker_lists_the_errors_of_both(tmp_path: Path) -> None:
    failing = threading.Event()

    def embed(request: RecordedRequest) -> Reply:
        if failing.is_set():
            return Reply.error(400, "the embedding model is overloaded")  # a 400 is not retried
        return hashed_embeddings(request)

    with ScriptedOpenAI() as embedder:
        embedder.handle("/v1/embeddings", embed)
        server = ServerProcess(tmp_path / "cortadel.db", env={
            "CORTADEL_WORKERS": "2", "CORTADEL_EMBEDDER": "openai", "CORTADEL_EMBEDDER_URL": embedder.v1_url,
            "CORTADEL_EMBEDDER_MODEL": "scripted"})
        server.start()
        try:
            pids = worker_pids(server.pid)
            failing.set()
            refused, searched_on = on_their_own_connections(server, 10, lambda client, n: client.post(
                "/api/v1/memories/search", json={"user_id": "ann", "query": "anything"},
                headers={"x-request-id": f"search-{n}"}).status_code)
            assert refused == [503] * 10 and searched_on == set(pids)
            # 20 connections: with 8, both workers served some in almost every run, but not in all
            pages, shown_by = on_their_own_connections(server, 20, lambda client, _: client.get("/ui/system").text)
            assert shown_by == set(pids)
            with httpx.Client(base_url=server.base_url, timeout=30) as client:
                samples = scrape(client)
        finally:
            server.stop()
    for page in pages:
        shown = re.findall(r"Memories_Search 503 (search-\d+)", visible(page))
        assert sorted(shown) == sorted(f"search-{n}" for n in range(10))
    # each search's embedder call, and each page's health check
    assert series(samples, "cortadel_provider_errors_total", "provider") == {"embedder": 30, "reranker": 0, "llm": 0}
    assert request_counts(samples)[("Memories_Search", "503")] == 10


def cache_counts(samples: Samples) -> dict[tuple[str, str, str], float]:
    """The cache counters: (metric, cache, outcome or kind) → count."""
    return {
        (name, dict(labels)["cache"], dict(labels).get("outcome") or dict(labels)["kind"]): value
        for (name, labels), value in samples.items()
        if name in ("cortadel_cache_reads_total", "cortadel_cache_rows_read_total")
    }


def test_a_search_that_loads_a_users_vectors_counts_the_load_and_its_rows(backend: str) -> None:
    with running_server(database_url=database_for(backend)) as server:
        with httpx.Client(base_url=server.base_url, timeout=30) as api:
            for text in ("I live in Lisbon.", "I play the cello.", "My cat is called Miso."):
                assert api.post("/api/v1/memories", json={"user_id": "ann", "text": text, "infer": False}).json()["event"] == "ADD"
        server.restart()  # a process whose caches hold nothing
        with httpx.Client(base_url=server.base_url, timeout=30) as api:
            before = cache_counts(scrape(api))
            assert before[("cortadel_cache_reads_total", "vectors", "reloads")] == 0
            assert set(before.values()) == {0}
            search = {"user_id": "ann", "query": "Which instrument do I play?"}
            assert api.post("/api/v1/memories/search", json=search).json()["results"][0]["content"] == "I play the cello."
            loaded = cache_counts(scrape(api))
            assert api.post("/api/v1/memories/search", json=search).status_code == 200  # the cached vectors: no read
            again = cache_counts(scrape(api))
    moved = {key: value - before[key] for key, value in loaded.items() if value != before[key]}
    assert {key: value for key, value in moved.items() if key[1] == "vectors"} == {
        ("cortadel_cache_reads_total", "vectors", "reloads"): 1,
        ("cortadel_cache_rows_read_total", "vectors", "rows"): 3,
    }
    assert again == loaded
