"""Dependencies shared by the routes, as ``Annotated`` aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from cortadel_server.errors import Forbidden, Unauthorized
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


def is_admin(request: Request) -> bool:
    """Whether the request carries the admin credential (checked by the auth middleware)."""
    return bool(request.scope.get("state", {}).get("admin"))


def require_admin(request: Request) -> None:
    """Operations on every user need the admin credential; a user key never passes. A server with
    neither an auth secret nor an admin key is open, these operations included."""
    if is_admin(request):
        return
    settings = get_service(request).settings
    if key_user(request) is not None:
        if settings.admin_key is None:
            raise Forbidden("Admin operations are disabled: CORTADEL_ADMIN_KEY is not set")
        raise Forbidden("This operation needs the admin credential; a user API key never passes")
    if settings.auth_secret is None and settings.admin_key is None:
        return
    raise Unauthorized("Missing or invalid admin key")


def authorize_user_or_admin(request: Request, user_id: str) -> str:
    """An operation on one user: that user's key or the admin credential. Without an auth secret
    there are no user keys, so it is as open as ``require_admin`` allows."""
    if key_user(request) is None:
        require_admin(request)
        return user_id
    return authorize(request, user_id)


AdminOnly = Depends(require_admin)

