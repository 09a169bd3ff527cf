"""The MCP tools over Streamable HTTP, driven by the official MCP Python client against a real server.

Stored values are cross-checked through the REST API.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

from cortadel_server.testing import ServerProcess

pytestmark = pytest.mark.anyio

TOOL_NAMES = ["add_memories", "add_conversation", "search_memory", "get_skill", "add_media", "reconcile_memories",
              "reconcile_status", "list_merge_suggestions"]


@pytest.fixture()
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture()
def user() -> str:
    return f"mcp-{uuid.uuid4().hex[:10]}"


@asynccontextmanager
async def connect(url: str, headers: dict[str, str] | None = None, mode: str = "legacy") -> AsyncIterator[Client]:
    """An MCP client session; ``legacy`` is the initialize handshake today's desktop clients use."""
    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return result


def text_of(result: CallToolResult) -> str:
    return result.content[0].text


def rest_get(server: ServerProcess, user: str, memory_id: str, **headers: str) -> dict[str, Any]:
    response = httpx.get(f"{server.base_url}/api/v1/memories/{memory_id}", params={"user_id": user}, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def rest_list(server: ServerProcess, user: str) -> dict[str, Any]:
    response = httpx.get(f"{server.base_url}/api/v1/memories", params={"user_id": user})
    assert response.status_code == 200, response.text
    return response.json()


def rest_search(server: ServerProcess, user: str, query: str, **extra: Any) -> dict[str, Any]:
    response = httpx.post(f"{server.base_url}/api/v1/memories/search", json={"user_id": user, "query": query, **extra})
    assert response.status_code == 200, response.text
    return response.json()


# -- protocol ------------------------------------------------------------------------------------
async def test_initialize_advertises_tools_only(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        assert client.server_info is not None and client.server_info.name == "cortadel"
        capabilities = client.server_capabilities
        assert capabilities.tools is not None
        assert capabilities.resources is None
        assert capabilities.prompts is None
        assert "search_memory" in (client.instructions or "")


async def test_list_tools_names_and_input_schemas(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(tools) == TOOL_NAMES
    schemas = {name: tool.input_schema for name, tool in tools.items()}
    assert {name: (sorted(s["properties"]), s.get("required", [])) for name, s in schemas.items()} == {
        "add_memories": (["memories", "memory_type", "project", "tags"], ["memories"]),
        "add_conversation": (
            ["is_agent_memory", "messages", "project", "session_id", "tags", "transcript_path"],
            ["messages"],
        ),
        "search_memory": (
            sorted(["query", "topK", "limit", "offset", "detail", "ids", "project", "tag", "session_id", "memory_type",
                    "token_budget", "includeFaded", "as_of", "known_at", "include_superseded"]),
            [],
        ),
        "get_skill": (["task"], ["task"]),
        "add_media": (["caption", "data", "media_type", "name", "project", "tags", "text"], ["name"]),
        "reconcile_memories": (["limit", "types"], []),
        "reconcile_status": (["run_id"], []),
        "list_merge_suggestions": (["status"], []),
    }
    assert all(s["additionalProperties"] is False for s in schemas.values())
    search = schemas["search_memory"]["properties"]
    assert (search["topK"]["minimum"], search["topK"]["maximum"], search["topK"]["default"]) == (1, 50, 10)
    assert search["detail"]["enum"] == ["full", "headline"]
    assert search["memory_type"]["anyOf"][0]["enum"] == ["episodic", "semantic", "procedural"]
    messages = schemas["add_conversation"]["properties"]["messages"]
    assert (messages["minItems"], messages["maxItems"]) == (1, 500)
    assert messages["items"]["required"] == ["role", "content"]
    assert sorted(messages["items"]["properties"]) == ["content", "role", "timestamp", "uuid"]
    assert schemas["add_memories"]["properties"]["memories"]["items"] == {"type": "string", "minLength": 1, "maxLength": 50000}
    assert tools["search_memory"].annotations.read_only_hint is True
    assert tools["add_memories"].annotations.read_only_hint is False
    for event in ("ADD", "SKIP_DUPLICATE", "TOUCH", "SUPERSEDE", "INVALIDATE", "RESOLVE", "DELETE_ENTITY", "ERROR"):
        assert event in tools["add_memories"].description


async def test_the_2026_protocol_reaches_the_same_tools(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}", mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        added = await call(client, "add_memories", {"memories": ["Protocol probe: the kettle is blue."]})
        found = await call(client, "search_memory", {"query": "kettle"})
    assert found.structured_content["results"][0]["id"] == added.structured_content["results"][0]["id"]


# -- add_memories --------------------------------------------------------------------------------
async def test_add_memories_stores_each_item_under_the_client_name(server: ServerProcess, user: str) -> None:
    before = time.time()
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        result = await call(client, "add_memories", {
            "memories": ["I prefer green tea over coffee.", "Rex is the name of the office dog."],
            "tags": ["pets", "drinks"],
            "memory_type": "semantic",
        })
    items = result.structured_content["results"]
    assert [(i["event"], i["error"]) for i in items] == [("ADD", None), ("ADD", None)]
    assert text_of(result) == "\n".join(f"ADD {i['id']}: {json.dumps(i['memory'])}" for i in items)
    tea, rex = (rest_get(server, user, i["id"]) for i in items)
    # through the write pipeline: a first-person statement is stored as a fact about the user
    assert tea["text"] == items[0]["memory"] == "User prefers green tea over coffee."
    assert rex["text"] == items[1]["memory"] == "Rex is the name of the office dog."
    assert (rex["app_name"], rex["tags"], rex["memory_type"], rex["project"]) == ("claude", ["pets", "drinks"], "semantic", None)
    assert before - 1 <= rex["created_at"] <= time.time() + 1


async def test_add_memories_twice_reports_skip_duplicate_with_the_same_id(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        first = await call(client, "add_memories", {"memories": ["The office wifi password is on the fridge."]})
        second = await call(client, "add_memories", {"memories": ["The office wifi password is on the fridge."]})
    [added], [again] = first.structured_content["results"], second.structured_content["results"]
    assert (added["event"], again["event"]) == ("ADD", "SKIP_DUPLICATE")
    assert again["id"] == added["id"]
    assert rest_list(server, user)["total"] == 1


async def test_add_memories_is_intent_aware(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        [berlin] = (await call(client, "add_memories", {"memories": ["I live in Berlin."]})).structured_content["results"]
        [forget] = (await call(client, "add_memories", {"memories": ["Forget that I live in Berlin."]})).structured_content["results"]
        [bug] = (await call(client, "add_memories", {"memories": ["The login bug is still open."]})).structured_content["results"]
        [fixed] = (await call(client, "add_memories", {"memories": ["The login bug is resolved."]})).structured_content["results"]
        current = await call(client, "search_memory", {"query": "Berlin"})
        history = await call(client, "search_memory", {"query": "Berlin", "include_superseded": True})
    assert (berlin["event"], forget["event"], bug["event"], fixed["event"]) == ("ADD", "INVALIDATE", "ADD", "RESOLVE")
    assert forget["id"] == berlin["id"]
    assert fixed["id"] != bug["id"]
    retracted = rest_get(server, user, berlin["id"])
    assert (retracted["state"], retracted["is_current"]) == ("invalidated", False)
    assert rest_get(server, user, bug["id"])["state"] == "resolved"
    assert berlin["id"] not in [r["id"] for r in current.structured_content["results"]]
    [old] = [r for r in history.structured_content["results"] if r["id"] == berlin["id"]]
    assert (old["state"], old["is_current"]) == ("invalidated", False)
    assert old["invalid_at"] is not None


# -- add_conversation ----------------------------------------------------------------------------
async def test_add_conversation_stores_each_fact_with_its_provenance(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/cursor/{user}", headers={"Project": "ward"}) as client:
        result = await call(client, "add_conversation", {
            "messages": [
                {"role": "user", "content": "I live in Berlin and I work as a nurse.", "uuid": "turn-1"},
                {"role": "assistant", "content": "Thanks for telling me!", "uuid": None},
            ],
            "session_id": "session-9",
            "transcript_path": "/transcripts/session-9.jsonl",
            "tags": ["intake"],
            "is_agent_memory": None,
        })
    items = result.structured_content["results"]
    assert [i["event"] for i in items] == ["ADD", "ADD"]
    assert text_of(result) == "\n".join(f"ADD {i['id']}: {json.dumps(i['memory'])}" for i in items)
    stored = [rest_get(server, user, i["id"]) for i in items]
    assert [s["text"] for s in stored] == [i["memory"] for i in items]
    assert "Berlin" in stored[0]["text"] and "nurse" in stored[1]["text"]
    for fact in stored:
        assert fact["source_turn_uuids"] == ["turn-1"]
        assert (fact["app_name"], fact["project"], fact["tags"]) == ("cursor", "ward", ["intake"])
        assert (fact["session_id"], fact["transcript_path"]) == ("session-9", "/transcripts/session-9.jsonl")


async def test_add_conversation_without_facts_says_so(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        result = await call(client, "add_conversation", {"messages": [{"role": "user", "content": "hi"}]})
    assert result.structured_content == {"no_facts_extracted": True}
    assert text_of(result) == "No facts worth remembering were found in the conversation."
    assert rest_list(server, user)["total"] == 0


# -- search_memory -------------------------------------------------------------------------------
async def seed(client: Client, *memories: str, **extra: Any) -> list[str]:
    result = await call(client, "add_memories", {"memories": list(memories), **extra})
    return [item["id"] for item in result.structured_content["results"]]


async def test_search_memory_finds_a_memory_with_full_content(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        tea, _ = await seed(client, "Ana prefers green tea over coffee.", "The garage door code is 4711.", tags=["home"])
        result = await call(client, "search_memory", {"query": "green tea", "topK": 1})
    data = result.structured_content
    assert (data["mode"], data["query"], data["total"]) == ("search", "green tea", 1)
    [hit] = data["results"]
    assert hit["id"] == tea
    assert hit["content"] == "Ana prefers green tea over coffee."
    assert hit["app_name"] == "claude"
    assert hit["tags"] == ["home"]
    assert hit["is_current"] is True and hit["state"] == "active"
    assert hit["score"] > 0
    assert text_of(result).splitlines()[0] == '1 memory for "green tea", best first:'
    [rest_hit] = rest_search(server, user, "green tea", top_k=1)["results"]
    assert (rest_hit["id"], rest_hit["rrf_score"], rest_hit["content"]) == (hit["id"], hit["score"], hit["content"])
    assert text_of(result).splitlines()[1].startswith(f'1. [{tea}] "Ana prefers green tea over coffee." (score ')


async def test_search_memory_headline_detail_returns_id_gist_and_score(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        [rex] = await seed(client, "My dog is called Rex.")
        result = await call(client, "search_memory", {"query": "dog", "detail": "headline"})
    [hit] = result.structured_content["results"]
    assert set(hit) == {"id", "gist", "score"}
    assert hit["id"] == rex
    assert hit["gist"] == rest_get(server, user, rex)["gist"]
    assert text_of(result).splitlines()[1] == f"1. [{rex}] {json.dumps(hit['gist'])} (score {hit['score']:.4f})"


async def test_search_memory_without_query_browses_newest_first(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        ids = [
            (await seed(client, text))[0]
            for text in ("Oldest note about sailing.", "Middle note about baking.", "Newest note about chess.")
        ]
        first_page = await call(client, "search_memory", {"limit": 2})
        second_page = await call(client, "search_memory", {"limit": 2, "offset": 2})
    assert first_page.structured_content["mode"] == "browse"
    assert [r["id"] for r in first_page.structured_content["results"]] == [ids[2], ids[1]]
    assert [r["id"] for r in second_page.structured_content["results"]] == [ids[0]]
    assert first_page.structured_content["total"] == 3
    assert all(r["score"] is None for r in first_page.structured_content["results"])
    assert text_of(second_page).splitlines()[0] == "Memories 3–3 of 3, newest first:"


async def test_search_memory_ids_looks_up_directly_and_lists_unknown_ids(server: ServerProcess, user: str) -> None:
    unknown = str(uuid.uuid4())
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        _, bake = await seed(client, "Ana sails on Sundays.", "Ana bakes bread on Fridays.")
        result = await call(client, "search_memory", {"ids": [bake, unknown, "not-a-uuid"], "query": "ignored"})
    data = result.structured_content
    assert data["mode"] == "lookup"
    assert [r["content"] for r in data["results"]] == ["Ana bakes bread on Fridays."]
    assert data["missing_ids"] == [unknown, "not-a-uuid"]
    assert text_of(result).endswith(f'Not found: "{unknown}", "not-a-uuid"')


async def test_search_memory_filters_by_tag_and_memory_type(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        [work] = await seed(client, "Standup is at nine every weekday.", tags=["work"])
        await seed(client, "Standup paddle boarding is my hobby.", tags=["hobby"])
        [event] = await seed(client, "Yesterday's standup ran long.", memory_type="episodic")
        by_tag = await call(client, "search_memory", {"query": "standup", "tag": "work"})
        by_type = await call(client, "search_memory", {"query": "standup", "memory_type": "episodic"})
    assert [r["id"] for r in by_tag.structured_content["results"]] == [work]
    assert [r["id"] for r in by_type.structured_content["results"]] == [event]


async def test_search_memory_point_in_time(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        [tram] = await seed(client, "I commute by tram.")
        now = time.time() + 1
        known_before = await call(client, "search_memory", {"query": "tram", "known_at": "2020-01-01T00:00:00Z"})
        true_before = await call(client, "search_memory", {"query": "tram", "as_of": 1577836800})
        known_now = await call(client, "search_memory", {"query": "tram", "known_at": now, "include_superseded": True})
    assert known_before.structured_content["results"] == []
    assert text_of(known_before) == 'No memories match "tram".'
    assert true_before.structured_content["results"] == []
    assert [r["id"] for r in known_now.structured_content["results"]] == [tram]


async def test_search_memory_token_budget_trims_results(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        await seed(client, "Notes on compilers: " + "parsing lexing " * 60, "Notes on compilers: register allocation.")
        unlimited = await call(client, "search_memory", {"query": "compilers notes"})
        trimmed = await call(client, "search_memory", {"query": "compilers notes", "token_budget": 40})
    assert len(unlimited.structured_content["results"]) == 2
    assert len(trimmed.structured_content["results"]) < 2


# -- get_skill -----------------------------------------------------------------------------------
async def test_get_skill_returns_matching_procedures_as_steps(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        [release] = await seed(
            client, "To release the app: run the tests, then tag the commit, then push the tag to origin.",
            memory_type="procedural",
        )
        await seed(client, "The release party is on Friday.")
        result = await call(client, "get_skill", {"task": "release the app"})
        nothing = await call(client, "get_skill", {"task": "bake sourdough"})
    [skill] = result.structured_content["skills"]
    assert skill["id"] == release
    assert skill["steps"] == ["run the tests", "tag the commit", "push the tag to origin"]
    assert text_of(result).splitlines()[2:] == ['   1. "run the tests"', '   2. "tag the commit"', '   3. "push the tag to origin"']
    # the only procedure is about releasing; a search ranks it for any task, so it is returned with its score
    assert [s["id"] for s in nothing.structured_content["skills"]] == [release]


async def test_get_skill_without_procedures_says_so(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        await seed(client, "I like procedures to be written down.")
        result = await call(client, "get_skill", {"task": "write down a procedure"})
    assert result.structured_content == {"task": "write down a procedure", "skills": []}
    assert text_of(result).startswith('No procedural memory matches "write down a procedure".')


# -- errors --------------------------------------------------------------------------------------
async def test_bad_arguments_are_tool_errors_naming_the_argument(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        missing = await client.call_tool("add_memories", {})
        too_many = await client.call_tool("search_memory", {"query": "x", "topK": 99, "top_k": 3})
        bad_type = await client.call_tool("add_memories", {"memories": ["x"], "memory_type": "factual"})
        bad_instant = await client.call_tool("search_memory", {"query": "x", "as_of": "last tuesday"})
        unknown = await client.call_tool("forget_everything", {})
        still_alive = await call(client, "search_memory", {})
    assert all(r.is_error for r in (missing, too_many, bad_type, bad_instant, unknown))
    assert text_of(missing) == "Invalid arguments for add_memories: memories: Field required"
    assert text_of(too_many) == (
        "Invalid arguments for search_memory: topK: Input should be less than or equal to 50; top_k: unknown argument"
    )
    assert text_of(bad_type).startswith("Invalid arguments for add_memories: memory_type: Input should be 'episodic'")
    assert text_of(bad_instant) == "Invalid arguments for search_memory: as_of: Not an ISO 8601 date-time or Unix seconds"
    assert text_of(unknown) == (
        "Unknown tool 'forget_everything'; the tools are add_memories, add_conversation, search_memory, get_skill, "
        "add_media, reconcile_memories, reconcile_status, list_merge_suggestions."
    )
    assert still_alive.structured_content["mode"] == "browse"


async def test_array_arguments_sent_as_json_text_are_accepted(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as client:
        result = await call(client, "add_memories", {"memories": '["I keep spare keys with Ana."]', "tags": '["keys"]'})
    [item] = result.structured_content["results"]
    assert rest_get(server, user, item["id"])["tags"] == ["keys"]


# -- clients and projects ------------------------------------------------------------------------
async def test_two_clients_share_the_user_memory_with_their_own_app_names(server: ServerProcess, user: str) -> None:
    async with connect(f"{server.base_url}/mcp/claude/{user}") as claude, \
            connect(f"{server.base_url}/mcp/cursor/{user}") as cursor:
        [from_claude] = await seed(claude, "The staging database lives on host db-stage-2.")
        [from_cursor] = await seed(cursor, "The production database lives on host db-prod-7.")
        seen_by_claude = await call(claude, "search_memory", {"query": "database host"})
        seen_by_cursor = await call(cursor, "search_memory", {"query": "database host"})
    for seen in (seen_by_claude, seen_by_cursor):
        apps = {r["id"]: r["app_name"] for r in seen.structured_content["results"]}
        assert apps == {from_claude: "claude", from_cursor: "cursor"}
    assert rest_get(server, user, from_cursor)["app_name"] == "cursor"


async def test_concurrent_sessions_of_two_users_stay_apart(server: ServerProcess, user: str) -> None:
    other = f"{user}-other"

    async def write(owner: str, client_name: str) -> None:
        async with connect(f"{server.base_url}/mcp/{client_name}/{owner}") as client:
            for n in range(4):
                await call(client, "add_memories", {"memories": [f"Locker {n} belongs to {owner}."]})

    async with anyio.create_task_group() as tg:
        tg.start_soon(write, user, "claude")
        tg.start_soon(write, other, "cursor")
    for owner, app in ((user, "claude"), (other, "cursor")):
        items = rest_list(server, owner)["items"]
        assert sorted(i["content"] for i in items) == [f"Locker {n} belongs to {owner}." for n in range(4)]
        assert {i["app_name"] for i in items} == {app}


async def test_project_header_scopes_writes_and_reads(server: ServerProcess, user: str) -> None:
    url = f"{server.base_url}/mcp/claude/{user}"
    async with connect(url, headers={"Project": "apollo"}) as apollo, connect(url) as unscoped:
        [in_apollo] = await seed(apollo, "The apollo launch checklist has twelve items.")
        [elsewhere] = await seed(unscoped, "The gemini launch checklist has nine items.")
        [explicit] = await seed(apollo, "The mercury launch checklist has three items.", project="mercury")
        scoped = await call(apollo, "search_memory", {"query": "launch checklist"})
        scoped_browse = await call(apollo, "search_memory", {})
        scoped_lookup = await call(apollo, "search_memory", {"ids": [in_apollo, elsewhere]})
        everything = await call(unscoped, "search_memory", {"query": "launch checklist"})
        other_project = await call(unscoped, "search_memory", {"query": "launch checklist", "project": "mercury"})
    assert rest_get(server, user, in_apollo)["project"] == "apollo"
    assert rest_get(server, user, elsewhere)["project"] is None
    assert rest_get(server, user, explicit)["project"] == "mercury"
    assert [r["id"] for r in scoped.structured_content["results"]] == [in_apollo]
    assert [r["id"] for r in scoped_browse.structured_content["results"]] == [in_apollo]
    assert scoped_lookup.structured_content["missing_ids"] == [elsewhere]
    assert {r["id"] for r in everything.structured_content["results"]} == {in_apollo, elsewhere, explicit}
    assert [r["id"] for r in other_project.structured_content["results"]] == [explicit]


# -- authentication ------------------------------------------------------------------------------
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


async def test_auth_accepts_the_key_in_each_of_the_three_places(auth_server: ServerProcess, user: str) -> None:
    key = auth_server.mint_key(user)
    url = f"{auth_server.base_url}/mcp/claude/{user}"
    async with connect(url, headers={"Authorization": f"Bearer {key}"}) as client:
        [via_bearer] = await seed(client, "Key in the bearer header.")
    async with connect(url, headers={"API_KEY": key}) as client:
        [via_header] = await seed(client, "Key in the API_KEY header.")
    async with connect(f"{url}?api_key={key}") as client:
        [via_query] = await seed(client, "Key in the query string.")
        listed = await call(client, "search_memory", {})
    assert {r["id"] for r in listed.structured_content["results"]} == {via_bearer, via_header, via_query}
    stored = rest_get(auth_server, user, via_query, Authorization=f"Bearer {key}")
    assert (stored["text"], stored["app_name"]) == ("Key in the query string.", "claude")


def test_auth_refuses_a_missing_or_wrong_key_with_401(auth_server: ServerProcess, user: str) -> None:
    url = f"{auth_server.base_url}/mcp/claude/{user}"
    missing = httpx.post(url, json=INITIALIZE, headers=MCP_HEADERS)
    wrong = httpx.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": "Bearer ck_bm9ib2R5.0000"})
    for response, message in ((missing, "Missing API key"), (wrong, "Invalid API key")):
        assert response.status_code == 401
        assert response.json() == {"status": 401, "code": "unauthorized", "message": message, "detail": None}


def test_auth_refuses_another_users_path_with_403(auth_server: ServerProcess, user: str) -> None:
    key = auth_server.mint_key(user)
    response = httpx.post(
        f"{auth_server.base_url}/mcp/claude/someone-else", json=INITIALIZE,
        headers={**MCP_HEADERS, "Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 403
    assert response.json() == {
        "status": 403, "code": "forbidden", "message": "API key is not valid for user 'someone-else'", "detail": None,
    }


async def test_a_refused_mcp_client_fails_to_connect(auth_server: ServerProcess, user: str) -> None:
    with pytest.raises(BaseExceptionGroup) as refused:
        async with connect(f"{auth_server.base_url}/mcp/claude/{user}"):
            pass
    assert refused.group_contains(MCPError, match="Server returned an error response", depth=2)


def test_open_server_needs_no_key(server: ServerProcess, user: str) -> None:
    response = httpx.post(f"{server.base_url}/mcp/claude/{user}", json=INITIALIZE, headers=MCP_HEADERS)
    assert response.status_code == 200
    assert response.headers["mcp-session-id"]
