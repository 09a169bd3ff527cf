"""Endpoints for operators, outside the REST contract: liveness, readiness and Prometheus metrics.

``/livez`` answers while the process serves requests; ``/readyz`` only when the database answers
and the embedder embeds (an orchestrator sends no traffic before). Both are open, like
``/api/health``. ``/metrics`` is open on an open server; with an auth secret or an admin key it
takes the admin credential (``Authorization: Bearer $CORTADEL_ADMIN_KEY``), as a user key never
passes: it describes every user's traffic.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST

from cortadel_server.api.deps import AdminOnly, Service

router = APIRouter(tags=["Operations"], include_in_schema=False)


@router.get("/livez", operation_id="Probes_Live")
async def live() -> JSONResponse:
    return JSONResponse({"status": "alive"})


@router.get("/readyz", operation_id="Probes_Ready")
async def ready(service: Service) -> JSONResponse:
    h = await service.workers.health(service.health)  # the health pool: never queued behind writes
    checks = {name: {"ok": check.ok, "error": check.error} for name, check in (("database", h.database), ("embeddings", h.embeddings))}
    ok = h.database.ok and h.embeddings.ok
    return JSONResponse({"status": "ready" if ok else "not_ready", "checks": checks}, status_code=200 if ok else 503)


@router.get("/metrics", operation_id="Metrics_Scrape", dependencies=[AdminOnly])
async def metrics(service: Service) -> Response:
    body = await service.workers.health(service.metrics.exposition)  # it counts jobs in the database
    return Response(body, media_type=CONTENT_TYPE_LATEST)
