"""Wires the ASGI application: middleware, routers, error handlers. No logic lives here."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from fastapi import FastAPI

from cortadel_server import __version__
from cortadel_server.api import errors
from cortadel_server.api.middleware import (
    AuthMiddleware,
    BodyLimitMiddleware,
    InternalErrorMiddleware,
    RequestIdMiddleware,
)
from cortadel_server.api.routes import debug, health, memories
from cortadel_server.config import Settings

KIB = 1024
MIB = 1024 * KIB

#: The largest body the contract allows per operation. from-conversation may carry 500 messages of
#: 50,000 characters each; JSON escaping can take up to 6 bytes per character.
FROM_CONVERSATION_LIMIT = 500 * (50_000 * 6 + 2 * KIB) + 64 * KIB
ADD_LIMIT = 50_000 * 6 + 1 * MIB


def body_limit(method: str, path: str) -> int:
    if path.endswith("/from-conversation"):
        return FROM_CONVERSATION_LIMIT
    if path.startswith("/mcp"):
        return FROM_CONVERSATION_LIMIT
    if method == "POST" and path.rstrip("/") == "/api/v1/memories":
        return ADD_LIMIT
    if method == "DELETE":
        return 4 * MIB
    return 256 * KIB


Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]


def create_app(settings: Settings, lifespan: Lifespan | None = None) -> FastAPI:
    """The REST application. The caller puts a MemoryService in ``app.state.service``."""
    app = FastAPI(
        title="Cortadel",
        version=__version__,
        description="Self-hosted long-term memory for AI agents: the Cortadel REST contract.",
        lifespan=lifespan,
    )
    errors.install(app)
    app.include_router(health.router)
    app.include_router(memories.router)
    app.include_router(debug.router)
    # Outermost last: request ids first, then size limits, then auth, then the 500 catcher.
    app.add_middleware(InternalErrorMiddleware)
    app.add_middleware(AuthMiddleware, secret=settings.auth_secret)
    app.add_middleware(BodyLimitMiddleware, limit_for=body_limit)
    app.add_middleware(RequestIdMiddleware)
    return app
