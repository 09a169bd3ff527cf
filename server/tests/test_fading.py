"""Fading over HTTP: memories nobody recalls or touches sink and then hide; a recall or a touch
brings them back; nothing is deleted; a server without fading answers as if it did not exist.

The memories' ages come from the server's own clock setting (CORTADEL_CLOCK_OFFSET_DAYS): servers
started in the past write into the same file a server of today then searches.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from cortadel_server.testing import ServerProcess, database_for

USER = "fading-user"
HALF_LIFE = {"CORTADEL_FADE_HALF_LIFE_DAYS": "7"}


def add(base: str, text: str, *, infer: bool = False) -> dict[str, Any]:
    response = httpx.post(f"{base}/api/v1/memories", json={"user_id": USER, "text": text, "infer": infer}, timeout=60)
    assert response.status_code == 200, response.text
    return dict(response.json())


def search(base: str, query: str, **extra: Any) -> list[dict[str, Any]]:
    response = httpx.post(f"{base}/api/v1/memories/search", json={"user_id": USER, "query": query, **extra}, timeout=60)
    assert response.status_code == 200, response.text
    return list(response.json()["results"])


@contextmanager
def serving(data: Path, url: str | None, env: dict[str, str]) -> Iterator[str]:
    """A server on the test's store (``data`` or ``url``) with ``env``; its base URL."""
    server = ServerProcess(data, env, database_url=url)
    server.start()
    try:
        yield server.base_url
    finally:
        server.stop()


def days_ago(days: int) -> dict[str, str]:
    """A fading server whose clock runs ``days`` behind: what it writes is that old today."""
    return {**HALF_LIFE, "CORTADEL_CLOCK_OFFSET_DAYS": str(-days)}


def search_memory_text(base: str, arguments: dict[str, Any]) -> str:
    async def run() -> str:
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            Client(streamable_http_client(f"{base}/mcp/claude/{USER}", http_client=http), mode="legacy") as client,
        ):
            result = await client.call_tool("search_memory", arguments)
            assert not result.is_error, result.content[0].text
            return str(result.content[0].text)

    return anyio.run(run)


def test_unseen_memories_fade_and_a_recall_or_a_touch_brings_them_back(tmp_path: Path, backend: str) -> None:
    data = tmp_path / "cortadel.db"
    url = database_for(backend)  # one database for every server of the test (None: the SQLite file)
    with serving(data, url, days_ago(60)) as old:
        fern, printer = (add(old, t)["id"] for t in ["The office plant is a fern.", "The office printer is on floor two."])
        paris = add(old, "I live in Paris.", infer=True)
        assert (paris["event"], paris["content"]) == ("ADD", "User lives in Paris.")
    with serving(data, url, days_ago(7)) as week_old:
        lamp = add(week_old, "The office lamp is blue.")["id"]

    with serving(data, url, HALF_LIFE) as base:
        dog = add(base, "The office dog is called Rex.")["id"]

        # 60 days unseen weigh 0.5 ** (60 / 7) = 0.0026 < 0.1: hidden. 7 days weigh one half.
        results = search(base, "office")
        assert [r["id"] for r in results] == [dog, lamp]
        weights = {r["id"]: r["attributes"]["fade_weight"] for r in results}
        assert weights[dog] > 0.9999
        assert abs(weights[lamp] - 0.5) < 0.001

        # Asked for, the faded come back, weighed down, after the fresh ones: nothing was deleted.
        every = search(base, "office", include_faded=True, top_k=10)
        assert {r["id"] for r in every} == {dog, lamp, fern, printer, paris["id"]}
        assert [r["id"] for r in every][:2] == [dog, lamp]
        faded_weight = 0.5 ** (60 / 7)
        for memory_id in (fern, printer, paris["id"]):
            weight = next(r["attributes"]["fade_weight"] for r in every if r["id"] == memory_id)
            assert abs(weight - faded_weight) < 0.0001


def test_a_recall_and_a_touch_each_refresh_one_memory(tmp_path: Path, backend: str) -> None:
    data = tmp_path / "cortadel.db"
    url = database_for(backend)  # one database for every server of the test (None: the SQLite file)
    with serving(data, url, days_ago(60)) as old:
        fern, printer = (add(old, t)["id"] for t in ["The office plant is a fern.", "The office printer is on floor two."])
        paris = add(old, "I live in Paris.", infer=True)["id"]

    with serving(data, url, HALF_LIFE) as base:
        assert search(base, "office") == []
        # Recalled: one search that asks for the faded returns the printer, which counts as seen now.
        (recalled,) = search(base, "printer on floor two", include_faded=True, top_k=1)
        assert recalled["id"] == printer
        deadline = time.monotonic() + 10  # recalls are written in the background, within a second
        while [r["id"] for r in search(base, "office")] != [printer]:
            assert time.monotonic() < deadline, "the recall was never recorded"
            time.sleep(0.2)
        assert search(base, "office")[0]["attributes"]["fade_weight"] > 0.9999

        # Touched: a statement that re-confirms the fact moves its last sighting to now.
        touched = add(base, "I still live in Paris.", infer=True)
        assert (touched["event"], touched["id"]) == ("TOUCH", paris)
        assert {r["id"] for r in search(base, "Paris office")} == {printer, paris}

        # MCP: includeFaded is the same switch.
        assert fern not in search_memory_text(base, {"query": "fern plant", "topK": 5})
        assert f"[{fern}]" in search_memory_text(base, {"query": "fern plant", "topK": 5, "includeFaded": True})

    # Without fading (the default) every memory is found and include_faded changes nothing.
    with serving(data, url, {}) as plain:
        default = search(plain, "office", top_k=10)
        assert {r["id"] for r in default} == {fern, printer, paris}
        assert all("fade_weight" not in r["attributes"] for r in default)
        asked = search(plain, "office", top_k=10, include_faded=True)
        assert [(r["id"], r["rrf_score"]) for r in asked] == [(r["id"], r["rrf_score"]) for r in default]
