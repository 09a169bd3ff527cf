"""Health: open to everyone, never returns memory content."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from cortadel_server.api import schemas
from cortadel_server.api.deps import Service
from cortadel_server.api.render import iso

router = APIRouter(tags=["Health"])


@router.get(
    "/api/health",
    operation_id="Health_Check",
    summary="Check the database, the embedder and the vector index.",
    response_model=schemas.HealthResponse,
    responses={503: {"model": schemas.HealthResponse, "description": "Service Unavailable"}},
)
async def health(service: Service) -> JSONResponse:
    h = await service.workers.health(service.health)  # its own workers: never queued behind writes
    body = schemas.HealthResponse(
        status="ok" if h.ok else "degraded",
        checked_at=iso(h.checked_at),
        version=service.version,
        checks=schemas.HealthChecks(
            memgraph=schemas.MemgraphCheck(
                ok=h.database.ok, url=h.database.fields.get("url"), user=None,
                latency_ms=h.database.latency_ms, error=h.database.error,
            ),
            embeddings=schemas.EmbeddingCheck(ok=h.embeddings.ok, latency_ms=h.embeddings.latency_ms,
                                              error=h.embeddings.error, **h.embeddings.fields),
            indexes=schemas.IndexesCheck(ok=h.indexes.ok, error=h.indexes.error, model=h.indexes.fields.get("model"),
                                         provider_dim=h.indexes.fields.get("provider_dim"),
                                         vector_indexes=h.indexes.fields.get("vector_indexes"),
                                         mismatches=h.indexes.fields.get("mismatches")),
        ),
    )
    return JSONResponse(body.model_dump(), status_code=200 if h.ok else 503)
