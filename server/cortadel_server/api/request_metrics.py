"""The operation an HTTP request is counted under in the server's metrics (``RequestMiddleware``
in api/middleware.py times every request under its operation and response status).

The operation is the matched route's ``operation_id`` (``Memories_Search``), the route's name for
the routes outside the contract (``mcp``, ``openapi``), or ``unmatched``: a bounded set of labels,
whatever paths clients send.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match
from starlette.types import Scope


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
