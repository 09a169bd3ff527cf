"""Wires the ASGI application: middleware, routers, error handlers. No logic lives here."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from fastapi import FastAPI

from cortadel_server import __version__, dashboard
from cortadel_server.api import errors
from cortadel_server.api.middleware import AccessMiddleware, RequestMiddleware
from cortadel_server.api.routes import communities, debug, health, media, memories, operations, reconcile, users
from cortadel_server.config import Settings

KIB = 1024
MIB = 1024 * KIB

#: One add: a 50,000-character statement (up to 6 bytes a character once JSON-escaped) and metadata.
ADD_LIMIT = 50_000 * 6 + 1 * MIB
#: A bulk delete: thousands of ids.
DELETE_LIMIT = 1 * MIB
#: Everything else (search, list) carries a query of at most 5,000 characters and a few filters.
DEFAULT_LIMIT = 256 * KIB


def body_limits(settings: Settings) -> Callable[[str, str], int]:
    """The largest body each operation takes. Conversations (REST and MCP) and batches are bounded
    by a setting: the contract's per-message limits multiply to ~150 MB, far past any real conversation."""

    def limit_for(method: str, path: str) -> int:
        if path.endswith("/from-conversation") or path.startswith("/mcp"):
            return settings.max_conversation_bytes
        if method == "POST" and path.rstrip("/") == "/api/v1/memories":
            return ADD_LIMIT
        if method == "POST" and path.rstrip("/") == "/api/v1/memories/batch":
            return settings.max_batch_bytes
        if method == "POST" and path.rstrip("/") == "/api/v1/media":  # base64 takes 4 bytes for 3, plus the other fields
            return settings.max_media_bytes * 4 // 3 + MIB
        if method == "DELETE":
            return DELETE_LIMIT
        return DEFAULT_LIMIT

    return limit_for


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
    app.include_router(users.router)
    app.include_router(operations.router)
    app.include_router(media.router)
    app.include_router(communities.router)
    app.include_router(reconcile.router)
    app.include_router(dashboard.router)  # the web pages, at / and /ui/ (dashboard/)
    # Added innermost first. A request meets: its request id, its timing into the metrics and the
    # 500 catcher (so a failure in any later layer still answers the contract's body), then the key
    # check (headers only), the body limit and the key's user filled in as the default user_id.
    app.add_middleware(AccessMiddleware, secret=settings.auth_secret, admin_key=settings.admin_key, limit_for=body_limits(settings))
    app.add_middleware(RequestMiddleware)
    return app
