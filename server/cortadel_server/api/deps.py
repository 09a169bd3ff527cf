"""Dependencies shared by the routes, as ``Annotated`` aliases.

Authorization is one of them: a route takes its body as ``Authorized[Model]`` or its user as
``QueryUser`` / ``QueryUserOrKey``, and the dependency has already checked that the request's key
may act for that user (403 otherwise) — no route has a call to remember.

Every dependency is ``async def``: FastAPI runs a plain ``def`` dependency on a worker thread, and
these do no I/O, so each would cost a thread hand-off and back per request (two on a search).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Annotated, Any, Protocol, TypeVar, cast

from fastapi import Depends, Query, Request

from cortadel_server.errors import Forbidden, Unauthorized, ValidationFailed
from cortadel_server.service import MemoryService


def get_service(request: Request) -> MemoryService:
    return cast(MemoryService, request.app.state.service)


async def _service(request: Request) -> MemoryService:
    return get_service(request)


Service = Annotated[MemoryService, Depends(_service)]


def key_user(request: Request) -> str | None:
    """The user the request's API key is bound to (None when auth is off)."""
    return cast(str | None, request.scope.get("state", {}).get("key_user"))


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


async def _admin_only(request: Request) -> None:
    require_admin(request)


AdminOnly = Depends(_admin_only)


class _ForUser(Protocol):
    user_id: str


Body = TypeVar("Body", bound=_ForUser)


def _authorized_body(model: type[Body]) -> Any:
    async def authorized_body(request: Request, body: Any) -> Body:
        authorize(request, body.user_id)
        return cast(Body, body)

    # FastAPI reads the body's type from the signature; give it the model itself.
    authorized_body.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Request),
        inspect.Parameter("body", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=model),
    ])
    return Annotated[model, Depends(authorized_body)]


if TYPE_CHECKING:
    #: to a type checker, ``Authorized[Model]`` is ``Model``
    Authorized = Annotated[Body, "authorized"]
else:

    class Authorized:
        """``Authorized[Model]``: the request body, parsed as ``Model`` and authorized for its ``user_id``."""

        def __class_getitem__(cls, model: type[Body]) -> Any:
            return _authorized_body(model)


async def _query_user(request: Request, user_id: Annotated[str, Query(min_length=1, description="User identifier.")]) -> str:
    return authorize(request, user_id)


async def _query_user_or_key(
    request: Request,
    user_id: Annotated[str | None, Query(description="User identifier (falls back to the API key's user).")] = None,
) -> str:
    user = user_id or key_user(request)
    if not user:
        raise ValidationFailed({"user_id": ["The user_id query parameter is required"]})
    return authorize(request, user)


#: the ``user_id`` query parameter, authorized
QueryUser = Annotated[str, Depends(_query_user)]
#: the ``user_id`` query parameter or else the key's user, authorized
QueryUserOrKey = Annotated[str, Depends(_query_user_or_key)]
