"""The tools over stdio, for one user, against the local data: ``cortadel mcp --user alice``.

The SDK's transport diverts the process's stdout to stderr while it runs, so nothing but protocol
messages reaches the client; the service is opened inside it for that reason.
"""

from __future__ import annotations

import anyio
import anyio.to_thread
from mcp.server.stdio import stdio_server

from cortadel_server.config import Settings
from cortadel_server.mcp.caller import Caller
from cortadel_server.mcp.server import build_server
from cortadel_server.service import MemoryService


def run_stdio(settings: Settings, *, user_id: str, client_name: str = "stdio", project: str | None = None) -> None:
    """Serve the tools on stdin/stdout until the client closes the connection."""
    anyio.run(serve_stdio, settings, Caller(user_id=user_id, client_name=client_name, project=project))


async def serve_stdio(settings: Settings, caller: Caller) -> None:
    async with stdio_server() as (read_stream, write_stream):
        service = await anyio.to_thread.run_sync(MemoryService.open, settings)
        service.start_background()
        try:
            server = build_server(service, lambda ctx: caller)
            await server.run(read_stream, write_stream, server.create_initialization_options())
        finally:
            service.close()
