"""Operations on a user as a whole (an extension of the contract): erasing one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request

from cortadel_server.api import schemas
from cortadel_server.api.deps import Service, authorize_user_or_admin
from cortadel_server.api.errors import error_responses

router = APIRouter(prefix="/api/v1/users", tags=["Users"])

# 404: a user id no route can carry (a raw newline in the path) matches no route
ERRORS = error_responses(400, 401, 403, 404, 500)

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
