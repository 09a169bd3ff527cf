"""The MCP tools over stdio: `cortadel mcp` spawned by the official client's stdio connector."""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path

import anyio
import httpx
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from cortadel_server.testing import running_server

TOOL_NAMES = ["add_memories", "add_conversation", "search_memory", "get_skill", "add_media", "reconcile_memories",
              "reconcile_status", "list_merge_suggestions"]


def stdio_server(data: Path, *args: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "cortadel_server", "mcp", "--user", "alice", "--data", str(data), *args],
        env={"CORTADEL_LOG_LEVEL": "warning", **{k: v for k, v in os.environ.items() if k.startswith("PYTHON")}},
    )


async def stdio_session(data: Path) -> dict[str, object]:
    async with Client(stdio_server(data, "--client", "claude", "--project", "apollo"), mode="legacy") as client:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        added = await client.call_tool("add_memories", {"memories": ["The build server is called hal-9."]})
        found = await client.call_tool("search_memory", {"query": "build server"})
        refused = await client.call_tool("search_memory", {"detail": "everything"})
        browsed = await client.call_tool("search_memory", {})
    return {"tools": tools, "added": added, "found": found, "refused": refused, "browsed": browsed}


def test_stdio_serves_the_tools_against_the_local_data(tmp_path: Path) -> None:
    data = tmp_path / "cortadel.db"
    session = anyio.run(stdio_session, data)

    assert session["tools"] == TOOL_NAMES
    [added] = session["added"].structured_content["results"]
    assert (added["event"], added["memory"]) == ("ADD", "The build server is called hal-9.")
    assert session["added"].content[0].text == f"ADD {added['id']}: " + '"The build server is called hal-9."'
    [hit] = session["found"].structured_content["results"]
    assert (hit["id"], hit["app_name"], hit["project"]) == (added["id"], "claude", "apollo")
    assert session["refused"].is_error
    assert session["refused"].content[0].text == (
        "Invalid arguments for search_memory: detail: Input should be 'full' or 'headline'"
    )
    assert [r["id"] for r in session["browsed"].structured_content["results"]] == [added["id"]]

    # the same file, served over HTTP afterwards, holds what the stdio session wrote
    with running_server(data=data) as server:
        stored = httpx.get(f"{server.base_url}/api/v1/memories/{added['id']}", params={"user_id": "alice"}).json()
    assert (stored["text"], stored["app_name"], stored["project"]) == ("The build server is called hal-9.", "claude", "apollo")


async def stdio_add_media(data: Path) -> CallToolResult:
    markdown = "# Team\n\nDana leads the design team.\n\n- Short\n\nThe office moved to Porto in May."
    async with Client(stdio_server(data, "--client", "claude", "--project", "apollo"), mode="legacy") as client:
        return await client.call_tool("add_media", {"name": "team.md", "data": base64.b64encode(markdown.encode()).decode()})


def test_add_media_over_stdio_stores_the_document_facts(tmp_path: Path) -> None:
    data = tmp_path / "cortadel.db"
    result = anyio.run(stdio_add_media, data)

    [summary] = result.content
    assert isinstance(summary, TextContent)
    assert not result.is_error, summary.text
    media = result.structured_content
    assert media is not None
    assert (media["name"], media["media_type"], media["kind"], media["pages"], media["passages"]) == (
        "team.md", "text/markdown", "document", None, 2)
    first, second = media["results"]
    assert [(r["event"], r["memory"], r["page"], r["offset"]) for r in media["results"]] == [
        ("ADD", "Dana leads the design team.", None, 8), ("ADD", "The office moved to Porto in May.", None, 46)]
    assert summary.text == (
        f'Stored document "team.md" (text/markdown) as {media["media_id"]}:\n'
        f'ADD {first["id"]}: "Dana leads the design team." (offset 8)\n'
        f'ADD {second["id"]}: "The office moved to Porto in May." (offset 46)')

    # what the stdio session stored, read back over HTTP from the same file
    with running_server(data=data) as server:
        listed = httpx.get(f"{server.base_url}/api/v1/memories", params={"user_id": "alice"}).json()
        stored = [httpx.get(f"{server.base_url}/api/v1/memories/{fact['id']}", params={"user_id": "alice"}).json()
                  for fact in (first, second)]
    assert listed["total"] == 2
    assert [(m["text"], m["app_name"], m["project"], m["metadata_"]) for m in stored] == [
        (fact["memory"], "claude", "apollo", {"media": {"id": media["media_id"], "name": "team.md", "type": "text/markdown",
                                                        "kind": "document", "page": None, "offset": fact["offset"]}})
        for fact in (first, second)]
