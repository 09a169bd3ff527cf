"""The reconciliation tools with the official MCP client, over Streamable HTTP and over stdio."""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import apsw
import httpx
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from cortadel_server.testing import ServerProcess

FACTS = ["User's manager is Dana Lee.", "User's manager wants the report on Friday.",
         "Jonathan Reyes is User's dentist.", "Jonathon Reyes moved the appointment to Monday."]


async def session(client: Client, enriched: Callable[[], bool]) -> dict[str, Any]:
    """Store the facts, start a run, follow it to its end, list what it suggested."""
    calls: dict[str, Any] = {"idle": await client.call_tool("reconcile_status", {})}
    await client.call_tool("add_memories", {"memories": FACTS})
    for _ in range(300):  # enrichment links the entities in the background
        if await anyio.to_thread.run_sync(enriched):
            break
        await anyio.sleep(0.1)
    calls["started"] = await client.call_tool("reconcile_memories", {"types": ["entities"], "limit": 100})
    for _ in range(300):
        calls["status"] = await client.call_tool("reconcile_status", {"run_id": calls["started"].structured_content["run_id"]})
        if calls["status"].structured_content["status"] == "completed":
            break
        await anyio.sleep(0.1)
    calls["pending"] = await client.call_tool("list_merge_suggestions", {})
    calls["approved"] = await client.call_tool("list_merge_suggestions", {"status": "approved"})
    calls["refused"] = await client.call_tool("list_merge_suggestions", {"status": "maybe"})
    calls["bad_type"] = await client.call_tool("reconcile_memories", {"types": ["people"]})
    return calls


def check(calls: dict[str, Any]) -> None:
    assert calls["idle"].content[0].text == "No reconciliation run yet: idle."
    assert calls["idle"].structured_content == {"status": "idle", "run_id": None}
    run_id = calls["started"].structured_content["run_id"]
    assert calls["started"].content[0].text == f"Reconciliation run {run_id} is queued."
    status = calls["status"].structured_content
    assert (status["status"], status["suggested"], status["auto_approved"], status["error"]) == ("completed", 3, 2, None)
    assert calls["status"].content[0].text == f"Run {run_id}: completed; 3 suggestions, 2 applied at once."
    [pending] = calls["pending"].structured_content["suggestions"]
    assert (pending["kind"], pending["subject"], pending["confidence"]) == (
        "merge_entities", {"source": "jonathon reyes", "target": "jonathan reyes"}, 0.85)
    assert calls["pending"].content[0].text == (
        f'pending {pending["id"]}: merge_entities {{"source": "jonathon reyes", "target": "jonathan reyes"}} (0.85)')
    approved = calls["approved"].structured_content
    assert (approved["total"], sorted(s["subject"]["alias"] for s in approved["suggestions"])) == (
        2, ["user's dentist", "user's manager"])
    assert calls["refused"].is_error
    assert calls["refused"].content[0].text.startswith("Invalid arguments for list_merge_suggestions: status:")
    assert calls["bad_type"].is_error


def test_the_tools_over_http(server: ServerProcess) -> None:
    user = f"mcp-{uuid.uuid4().hex[:10]}"

    async def over_http() -> dict[str, Any]:
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            Client(streamable_http_client(f"{server.base_url}/mcp/claude/{user}", http_client=http), mode="legacy") as client,
        ):
            return await session(client, enriched)

    def enriched() -> bool:
        items = httpx.get(f"{server.base_url}/api/v1/memories", params={"user_id": user}).json()["items"]
        return len(items) == len(FACTS) and all(m["extraction_status"] == "done" for m in items)

    check(anyio.run(over_http))
    # the same suggestions through REST
    listed = httpx.get(f"{server.base_url}/api/v1/reconcile/suggestions", params={"user_id": user}).json()
    assert listed["total"] == 3


def test_the_tools_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cortadel_server", "mcp", "--user", "alice", "--data", str(tmp_path / "cortadel.db")],
        env={"CORTADEL_LOG_LEVEL": "warning", **{k: v for k, v in os.environ.items() if k.startswith("PYTHON")}},
    )

    def enriched() -> bool:
        conn = apsw.Connection(str(tmp_path / "cortadel.db"), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return list(conn.execute("SELECT count(*), sum(extraction_status = 'done') FROM memories")) == [(4, 4)]
        finally:
            conn.close()

    async def over_stdio() -> dict[str, Any]:
        async with Client(params, mode="legacy") as client:
            return await session(client, enriched)

    started = time.time()
    check(anyio.run(over_stdio))
    assert time.time() - started < 120
