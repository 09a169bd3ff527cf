"""Dependencies shared by the routes, as ``Annotated`` aliases."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import Depends, Request

from cortadel_server.errors import Forbidden, ValidationFailed
from cortadel_server.service import MemoryService


def get_service(request: Request) -> MemoryService:
    return request.app.state.service


Service = Annotated[MemoryService, Depends(get_service)]


def key_user(request: Request) -> str | None:
    """The user the request's API key is bound to (None when auth is off)."""
    return request.scope.get("state", {}).get("key_user")


def authorize(request: Request, user_id: str) -> str:
    """Allow the request to act for ``user_id`` only when its key is bound to that user."""
    bound = key_user(request)
    if bound is not None and bound != user_id:
        raise Forbidden(f"API key is not valid for user {user_id!r}")
    return user_id


def parse_instant(value: str | float | None, field: str) -> float | None:
    """ISO 8601 (naive = UTC) or Unix seconds → Unix seconds."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float):
        return float(value)
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValidationFailed({field: ["Not an ISO 8601 date-time or Unix seconds"]}) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
