"""The served application: REST and MCP on one port over one MemoryService, plus the job worker."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from cortadel_server.api.app import create_app
from cortadel_server.config import Settings
from cortadel_server.mcp.http import mount_mcp
from cortadel_server.service import MemoryService


def build_app(settings: Settings, service: MemoryService | None = None) -> FastAPI:
    service = service or MemoryService.open(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.start_background()
        try:
            async with mcp.running():
                # What startup made (modules, the app's routes and models, the service) is kept for
                # good: out of the collector's generations, no full collection walks it again
                # (3 % of a search's instructions, docs/performance.md).
                gc.freeze()
                yield
        finally:
            service.close()

    app = create_app(settings, lifespan=lifespan)
    app.state.service = service
    mcp = mount_mcp(app, service)
    return app
