"""Operational endpoints."""

from __future__ import annotations

from fastapi import APIRouter

from cortadel_server.api import schemas
from cortadel_server.api.deps import Service

router = APIRouter(prefix="/api/v1/debug", tags=["Debug"])


@router.post(
    "/reindex-vectors",
    operation_id="Debug_ReindexVectors",
    summary="Re-embed every memory with the configured embedder (after a model change).",
    response_model=schemas.ReindexResponse,
)
def reindex_vectors(service: Service) -> schemas.ReindexResponse:
    count = service.reindex()
    return schemas.ReindexResponse(
        message=f"Re-embedded {count} memories with {service.model_label}",
        reindexed=count,
        model=service.model_label,
        dim=service.embedder.dim,
    )
