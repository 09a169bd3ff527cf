"""REST and MCP are two front doors over one core: the same arguments store and return the same facts.

Each tool is checked against its REST twin in both directions: written through one door, read through
the other, and the same write through each door gives the same stored fact (message timestamps too).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from cortadel_server.testing import ServerProcess

pytestmark = pytest.mark.anyio


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


def new_user() -> str:
    return f"doors-{uuid.uuid4().hex[:10]}"


@asynccontextmanager
async def mcp(server: ServerProcess, user: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(streamable_http_client(f"{server.base_url}/mcp/claude/{user}", http_client=http)) as client,
    ):
        yield client


async def tool(client: Client, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content[0].text
    assert result.structured_content is not None
    return result.structured_content


def rest(server: ServerProcess, method: str, path: str, **kwargs: Any) -> Any:
    response = httpx.request(method, f"{server.base_url}/api/v1/memories{path}", timeout=60, **kwargs)
    assert response.status_code == 200, response.text
    return response.json()


def stored(server: ServerProcess, user: str, memory_id: str) -> dict[str, Any]:
    """The fields a write decides, read back over REST."""
    record = rest(server, "GET", f"/{memory_id}", params={"user_id": user})
    return {k: record[k] for k in ("text", "memory_type", "categories", "tags", "project", "valid_at", "is_current", "app_name")}


STATEMENTS = ["I moved to Lisbon in March.", "My manager is Dana.", "To deploy: run the tests, then push the tag."]


async def test_add_memories_and_rest_add_store_the_same_facts(server: ServerProcess) -> None:
    via_rest, via_mcp = new_user(), new_user()
    rest_ids = [
        rest(server, "POST", "", json={"user_id": via_rest, "text": text, "app": "claude", "tags": ["t"], "project": "p"})["id"]
        for text in STATEMENTS
    ]
    async with mcp(server, via_mcp) as client:
        results = (await tool(client, "add_memories", {"memories": STATEMENTS, "tags": ["t"], "project": "p"}))["results"]
    assert [r["event"] for r in results] == ["ADD", "ADD", "ADD"]
    from_rest = [stored(server, via_rest, i) for i in rest_ids]
    from_mcp = [stored(server, via_mcp, r["id"]) for r in results]
    for a, b in zip(from_rest, from_mcp, strict=True):
        a.pop("valid_at"), b.pop("valid_at")  # each stamped when it was written
        assert a == b
    assert [r["memory"] for r in results] == [f["text"] for f in from_rest]


async def test_add_conversation_and_from_conversation_keep_message_timestamps(server: ServerProcess) -> None:
    messages = [
        {"role": "user", "content": "I started learning the cello last month.", "uuid": "m1", "timestamp": "2024-05-20T10:00:00Z"},
        {"role": "assistant", "content": "Nice!", "uuid": "m2", "timestamp": "2024-05-20T10:00:05Z"},
        {"role": "user", "content": "I live in Porto.", "uuid": "m3", "timestamp": 1716199210},
    ]
    via_rest, via_mcp = new_user(), new_user()
    rest_items = rest(server, "POST", "/from-conversation", json={"user_id": via_rest, "messages": messages, "session_id": "s1"})["results"]
    async with mcp(server, via_mcp) as client:
        mcp_items = (await tool(client, "add_conversation", {"messages": messages, "session_id": "s1"}))["results"]
    assert [(i["event"], i["memory"]) for i in rest_items] == [(i["event"], i["memory"]) for i in mcp_items]
    assert [i["memory"] for i in mcp_items] == ["User started learning the cello last month.", "User lives in Porto."]
    for a, b in zip(rest_items, mcp_items, strict=True):
        left, right = stored(server, via_rest, a["id"]), stored(server, via_mcp, b["id"])
        left.pop("app_name"), right.pop("app_name")  # MCP records the client name as the app
        assert left == right
    # "last month" resolved against the message's own time, not the time of the request
    assert stored(server, via_mcp, mcp_items[0]["id"])["valid_at"].startswith("2024-04")
    assert stored(server, via_mcp, mcp_items[1]["id"])["valid_at"].startswith("2024-05-20T10:00:10")


async def test_search_memory_and_rest_search_return_the_same_hits_with_the_same_filters(server: ServerProcess) -> None:
    user = new_user()
    async with mcp(server, user) as client:
        await tool(client, "add_memories", {"memories": ["I drink green tea every morning.", "My sister drinks black tea."], "tags": ["tea"]})
        await tool(client, "add_memories", {"memories": ["I hate iced tea."], "project": "home"})
        added = await tool(client, "add_conversation", {"messages": [{"role": "user", "content": "I ordered oolong tea today."}], "session_id": "s9"})
        episodic = added["results"][0]["id"]
        cases: list[tuple[dict[str, Any], dict[str, Any]]] = [
            ({"query": "tea", "topK": 5}, {"query": "tea", "top_k": 5}),
            ({"query": "tea", "tag": "tea"}, {"query": "tea", "tag": "tea"}),
            ({"query": "tea", "project": "home"}, {"query": "tea", "project": "home"}),
            ({"query": "tea", "session_id": "s9"}, {"query": "tea", "session_id": "s9"}),
            ({"query": "tea", "memory_type": "episodic"}, {"query": "tea", "memory_type": "episodic"}),
            ({"query": "tea", "include_superseded": True}, {"query": "tea", "include_superseded": True}),
            ({"query": "tea", "as_of": "2999-01-01T00:00:00Z"}, {"query": "tea", "as_of": "2999-01-01T00:00:00Z"}),
            ({"query": "tea", "known_at": 0.0 + 2e9}, {"query": "tea", "known_at": 2e9}),
        ]
        for mcp_args, rest_args in cases:
            through_mcp = await tool(client, "search_memory", mcp_args)
            through_rest = rest(server, "POST", "/search", json={"user_id": user, **rest_args})
            assert [r["id"] for r in through_mcp["results"]] == [r["id"] for r in through_rest["results"]], mcp_args
            assert [r["score"] for r in through_mcp["results"]] == [r["rrf_score"] for r in through_rest["results"]]
        only_session = await tool(client, "search_memory", {"query": "tea", "session_id": "s9"})
        assert [r["id"] for r in only_session["results"]] == [episodic]


async def test_browsing_and_listing_page_alike(server: ServerProcess) -> None:
    user = new_user()
    for i in range(7):
        rest(server, "POST", "", json={"user_id": user, "text": f"Reminder number {i} is about the garden.", "infer": False,
                                       "timestamp": 1_800_000_000 + i})
    listing = rest(server, "GET", "", params={"user_id": user, "page": 2, "size": 3})
    async with mcp(server, user) as client:
        browsed = await tool(client, "search_memory", {"limit": 3, "offset": 3})
    assert [r["id"] for r in browsed["results"]] == [i["id"] for i in listing["items"]]
    assert browsed["total"] == listing["total"] == 7
    assert [r["content"] for r in browsed["results"]] == [f"Reminder number {i} is about the garden." for i in (3, 2, 1)]


async def test_a_listing_with_a_query_pages_through_every_memory(server: ServerProcess) -> None:
    user = new_user()
    texts = [f"Note {i}: {'tea' if i % 3 == 0 else 'coffee'} with {'cake' if i % 2 else 'bread'}." for i in range(230)]
    written = rest(server, "POST", "/batch", json={"user_id": user, "memories": [{"text": t, "infer": False} for t in texts]})
    assert [m["event"] for m in written["memories"]] == ["ADD"] * 230
    seen: list[str] = []
    page = 1
    while True:
        listing = rest(server, "GET", "", params={"user_id": user, "search_query": "tea bread", "page": page, "size": 100})
        assert listing["total"] == 230 and listing["pages"] == 3
        if not listing["items"]:
            break
        seen += [i["content"] for i in listing["items"]]
        page += 1
    assert page == 4 and sorted(seen) == sorted(texts)
    assert seen[0] in {t for t in texts if "tea" in t and "bread" in t}


async def test_get_skill_finds_what_a_procedural_rest_search_finds(server: ServerProcess) -> None:
    user = new_user()
    rest(server, "POST", "", json={"user_id": user, "text": "To release: run the tests, then tag the commit.", "memory_type": "procedural"})
    rest(server, "POST", "", json={"user_id": user, "text": "I released version 2 yesterday.", "memory_type": "episodic"})
    async with mcp(server, user) as client:
        skills = (await tool(client, "get_skill", {"task": "release"}))["skills"]
    through_rest = rest(server, "POST", "/search", json={"user_id": user, "query": "release", "memory_type": "procedural", "top_k": 3})
    assert [s["id"] for s in skills] == [r["id"] for r in through_rest["results"]]
    assert [s["content"] for s in skills] == ["To release: run the tests, then tag the commit."]


async def test_memories_written_over_rest_are_read_over_mcp_and_back(server: ServerProcess) -> None:
    user = new_user()
    written = rest(server, "POST", "", json={"user_id": user, "text": "My dentist is Dr. Okafor."})
    async with mcp(server, user) as client:
        looked_up = await tool(client, "search_memory", {"ids": [written["id"]]})
        added = await tool(client, "add_memories", {"memories": ["My barber is Sam."]})
    assert [r["content"] for r in looked_up["results"]] == [written["content"]] == ["User's dentist is Dr. Okafor."]
    assert rest(server, "GET", f"/{added['results'][0]['id']}", params={"user_id": user})["text"] == added["results"][0]["memory"]
