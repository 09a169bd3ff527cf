"""BenchClient against a real server on loopback: what every harness reads from it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from cortadel_server.testing import ServerProcess, running_server

from bench.client import BenchClient, server_phase_seconds
from bench.errors import ApiError


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    with running_server() as srv:
        yield srv


def test_adds_searches_and_reads_come_back_decoded(server: ServerProcess) -> None:
    async def session() -> None:
        async with BenchClient(server.base_url, max_connections=2) as api:
            before = time.time()
            created = await api.add("ana", "Ana keeps her bike in the blue shed — ünïcode too.", metadata={"k": "é"})
            assert (created["event"], created["content"], created["metadata"]) == (
                "ADD", "Ana keeps her bike in the blue shed — ünïcode too.", '{"k": "\\u00e9"}')
            await api.add("ana", "The spare key is under the red pot.", session_id="s1")
            batch = await api.add_batch("ana", [{"text": "Ana waters the fern on Mondays.", "infer": False}])
            assert [m["event"] for m in batch["memories"]] == ["ADD"]

            hits, seconds = await api.search("ana", "where is the bike", top_k=2)
            assert hits[0]["id"] == created["id"]
            assert 0 < seconds < 10
            phases = server_phase_seconds(hits)
            assert phases is not None and 0 < phases < seconds

            detail = await api.get("ana", created["id"])
            assert (detail["id"], detail["metadata_"]) == (created["id"], {"k": "é"})
            assert before - 1 <= detail["created_at"] <= time.time() + 1
            listed = [m["content"] async for m in api.list_all("ana", size=2)]
            assert sorted(listed) == sorted(["Ana keeps her bike in the blue shed — ünïcode too.",
                                             "The spare key is under the red pot.", "Ana waters the fern on Mondays."])
            assert (await api.health())["status"] == "ok"

            with pytest.raises(ApiError) as refused:
                await api.get("ana", "no-such-id")
            assert refused.value.status == 404
            assert '"code":"not_found"' in refused.value.body
            assert api.transport_retries == 0

    asyncio.run(session())
