"""Operations on a user as a whole (an extension of the contract): erasing one."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request

from cortadel_server.api import schemas
from cortadel_server.api.deps import Service, authorize_user_or_admin

router = APIRouter(prefix="/api/v1/users", tags=["Users"])

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": schemas.ValidationProblemDetails, "description": "Bad Request"},
    401: {"model": schemas.ErrorResponse, "description": "Unauthorized"},
    403: {"model": schemas.ErrorResponse, "description": "Forbidden"},
    # a user id no route can carry (a raw newline in the path) matches no route
    404: {"model": schemas.ErrorResponse, "description": "Not Found"},
    500: {"model": schemas.ErrorResponse, "description": "Internal Server Error"},
}

UserIdPath = Annotated[str, Path(alias="userId", min_length=1, description="The user to erase.")]


@router.delete(
    "/{userId:path}",
    operation_id="Users_Delete",
    summary="Erase everything of one user (memories, history, entities, session documents, jobs) and return a receipt.",
    response_model=schemas.DeleteUserResponse,
    responses=ERRORS,
)
def delete_user(user_id: UserIdPath, request: Request, service: Service) -> schemas.DeleteUserResponse:
    authorize_user_or_admin(request, user_id)
    erased = service.delete_user(user_id)
    return schemas.DeleteUserResponse(
        message=f"Erased user {user_id!r}: {erased['memories']} memories", user_id=user_id, erased=erased
    )
