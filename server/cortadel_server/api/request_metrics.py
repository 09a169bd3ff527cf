"""Times every HTTP request into the server's metrics, under its operation and response status.

The operation is the matched route's ``operation_id`` (``Memories_Search``), the route's name for
the routes outside the contract (``mcp``, ``openapi``), or ``unmatched``: a bounded set of labels,
whatever paths clients send.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cortadel_server.metrics import current_request_id


def endpoints(routes: Sequence[BaseRoute]) -> Iterator[BaseRoute]:
    """The routes that answer requests, those of included routers too (FastAPI wraps each
    included router in one route that holds it as ``original_router``)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from endpoints(included.routes)
        else:
            yield route


def operation_of(routes: Sequence[BaseRoute], scope: Scope) -> str:
    """The operation the request was routed to (the router leaves the route in the scope); for a
    request refused before routing (401, 413), the route it would have reached."""
    routed = scope.get("route")
    if isinstance(routed, BaseRoute):
        return _name(routed)
    for route in endpoints(routes):
        match, _ = route.matches(scope)
        if match is Match.FULL:
            return _name(route)
    return "unmatched"


def _name(route: BaseRoute) -> str:
    if isinstance(route, APIRoute) and route.operation_id:
        return route.operation_id
    return str(getattr(route, "name", None) or "unnamed")


class RequestMetricsMiddleware:
    """Outside every other layer but the request id, so refusals (401, 413) and 500s count too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        # the request id for what runs inside (metrics' error ring names the request a provider failed)
        id_token = current_request_id.set(scope.get("state", {}).get("request_id"))
        status = 500  # what the client gets if nothing was sent (the 500 catcher answers first)

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        finally:
            application = scope["app"]  # set by Starlette before its middleware stack runs
            service = getattr(application.state, "service", None)  # none in an app built only for its spec
            if service is not None:
                service.metrics.observe_request(
                    operation_of(application.router.routes, scope), status, time.perf_counter() - started
                )
            current_request_id.reset(id_token)
