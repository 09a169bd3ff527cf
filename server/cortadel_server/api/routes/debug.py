"""Operational endpoints. They act on every user, so they take the admin credential."""

from __future__ import annotations

from fastapi import APIRouter

from cortadel_server.api import schemas
from cortadel_server.api.deps import AdminOnly, Service
from cortadel_server.api.errors import error_responses

router = APIRouter(prefix="/api/v1/debug", tags=["Debug"])


@router.post(
    "/reindex-vectors",
    operation_id="Debug_ReindexVectors",
    summary="Re-embed every memory with the configured embedder (after a model change). Needs the admin credential; resumable.",
    response_model=schemas.ReindexResponse,
    responses=error_responses(401, 403),
    dependencies=[AdminOnly],
)
def reindex_vectors(service: Service) -> schemas.ReindexResponse:
    count = service.reindex()
    return schemas.ReindexResponse(
        message=f"Re-embedded {count} memories with {service.model_label}",
        reindexed=count,
        model=service.model_label,
        dim=service.embedder.dim,
    )
