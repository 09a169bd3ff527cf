"""Clients the attack suite drives: an MCP session over Streamable HTTP and key headers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def mcp_session(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """A real MCP client session, with the initialize handshake today's desktop clients use."""
    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        yield client


def bearer(key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"} if key else {}
