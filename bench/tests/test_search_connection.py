"""SearchConnection against a real server on loopback: the answers BenchClient gets, on one
kept-alive connection, and every refusal raised."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from cortadel_server.testing import ServerProcess, running_server

from bench.client import BenchClient, SearchConnection
from bench.errors import ApiError, BenchError
from bench.perf.measure import search_throughput

USER = "ana"
TEXTS = ("Ana keeps her bike in the blue shed.", "The spare key is under the red pot.", "Ana waters the fern on Mondays — ünïcode.")
QUERIES = ("where is the bike", "spare key", "fern", "ünïcode", "nothing like any of them", "shed 🚲")


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with running_server() as srv:
        async def fill() -> None:
            async with BenchClient(srv.base_url) as api:
                await api.add_batch(USER, [{"text": text, "infer": False} for text in TEXTS])
        asyncio.run(fill())
        yield srv


def without_timings(hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**hit, "attributes": {k: v for k, v in hit["attributes"].items() if k != "timings_ms"}} for hit in hits]


def test_searches_get_what_bench_client_gets_on_one_connection(server: ServerProcess) -> None:
    async def session() -> None:
        async with BenchClient(server.base_url) as api, await SearchConnection.open(server.base_url) as connection:
            for _ in range(10):  # 60 searches, one connection: a connection the server closed would raise
                for query in QUERIES:
                    expected, _ = await api.search(USER, query, top_k=2, mode="deep")
                    hits, seconds = await connection.search(USER, query, top_k=2, mode="deep")
                    assert without_timings(hits) == without_timings(expected)
                    assert len(hits) == 2
                    assert 0 < seconds < 10
            hits, _ = await connection.search(USER, "where is the bike")
            assert [hit["content"] for hit in hits][:1] == ["Ana keeps her bike in the blue shed."]
            assert len(hits) == 3

    asyncio.run(session())


def test_a_refusal_raises_and_the_connection_goes_on(server: ServerProcess) -> None:
    async def session() -> None:
        async with await SearchConnection.open(server.base_url) as connection:
            with pytest.raises(ApiError) as refused:
                await connection.search(USER, "")
            assert (refused.value.method, refused.value.path, refused.value.status) == ("POST", "/api/v1/memories/search", 400)
            assert '"errors":{"query":["String should have at least 1 character"]}' in refused.value.body
            with pytest.raises(ApiError) as unknown:
                await connection.search(USER, "bike", mode="fuzzy")
            assert unknown.value.status == 400
            hits, _ = await connection.search(USER, "bike")
            assert len(hits) == 3

    asyncio.run(session())


def test_throughput_counts_searches_and_stops_at_a_wrong_count_of_hits(server: ServerProcess) -> None:
    async def session() -> None:
        connections = [await SearchConnection.open(server.base_url) for _ in range(3)]
        try:
            rate = await search_throughput(connections, [USER], QUERIES, clients=3, seconds=0.5, hits=3)
            assert (rate["clients"], rate["senders"]) == (3, 3)
            assert rate["searches"] == rate["latency"]["n"] > 0
            with pytest.raises(BenchError, match=r"found 3 memories, not 10"):
                await search_throughput(connections, [USER], QUERIES, clients=3, seconds=0.5, hits=10)
        finally:
            for connection in connections:
                await connection.close()

    asyncio.run(session())


def test_only_plain_http_urls() -> None:
    with pytest.raises(ValueError, match="plain HTTP to a host and port"):
        asyncio.run(SearchConnection.open("https://127.0.0.1:1"))
