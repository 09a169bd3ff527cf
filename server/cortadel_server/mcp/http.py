"""Streamable HTTP at ``/mcp/{clientName}/{userId}``, on the REST server's port.

    mcp_http = mount_mcp(app, service)
    async with mcp_http.running():   # inside the application's lifespan
        ...

The API key was already checked by ``AccessMiddleware`` (401 when missing or bad); here the path's
user must be the key's user (403 otherwise, with the REST error body). The resolved ``Caller`` —
path user, path client name and the optional ``Project`` header — rides in the request scope,
where the one MCP server instance reads it back for every tool call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from cortadel_server.api.deps import authorize
from cortadel_server.api.middleware import error_body, send_json
from cortadel_server.errors import Forbidden
from cortadel_server.mcp.caller import Caller
from cortadel_server.mcp.server import build_server
from cortadel_server.service import MemoryService

PATH = "/mcp/{client_name}/{user_id}"
CALLER_KEY = "cortadel.mcp.caller"


class McpHttp:
    """The MCP endpoint: an ASGI app that authorizes the path, then hands the request to the MCP transport."""

    def __init__(self, service: MemoryService) -> None:
        self.sessions = StreamableHTTPSessionManager(
            build_server(service, caller_of_request),
            # the same bound as a REST from-conversation body
            max_request_body_size=service.settings.max_conversation_bytes,
            max_sessions=service.settings.mcp_max_sessions,
            session_idle_timeout=service.settings.mcp_session_idle_timeout,
            # A session lives in one process; the worker processes of `serve --workers` share one port, so
            # a session's next request may reach another: there every request stands alone (docs/deploy.md).
            stateless=service.settings.workers > 1,
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.sessions.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        params = scope["path_params"]
        project = Headers(scope=scope).get("project", "").strip() or None
        caller = Caller(user_id=params["user_id"], client_name=params["client_name"], project=project)
        try:
            authorize(Request(scope), caller.user_id)
        except Forbidden as exc:
            request_id = scope.get("state", {}).get("request_id")
            await send_json(send, exc.status, error_body(exc.status, exc.code, exc.message), request_id)
            return
        await self.sessions.handle_request({**scope, CALLER_KEY: caller}, receive, send)


def caller_of_request(ctx: ServerRequestContext[Any, Any]) -> Caller:
    request = ctx.request
    assert isinstance(request, Request), "an HTTP tool call carries its Starlette request"
    caller: Caller = request.scope[CALLER_KEY]
    return caller


def mount_mcp(app: FastAPI, service: MemoryService) -> McpHttp:
    """Route ``/mcp/{clientName}/{userId}`` to the MCP endpoint. Run ``.running()`` inside the app's lifespan."""
    endpoint = McpHttp(service)
    app.router.add_route(PATH, endpoint, name="mcp", include_in_schema=False)  # type: ignore[arg-type]  # an ASGI app, not a function
    return endpoint
