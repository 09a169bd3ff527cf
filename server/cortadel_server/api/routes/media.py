"""Media (an extension of the contract): a document or an image, remembered as facts.

A document (plain text, Markdown, HTML, PDF) is read into passages, each run through the write
pipeline like a statement; an image is remembered by its caption. Every memory keeps its origin in
``metadata.media`` (upload id, name, type, page and offset). Limits: CORTADEL_MAX_MEDIA_BYTES
(413), the types listed (415); an image without a caption on a server with no vision model is a
400 that names the settings to set.
"""

from __future__ import annotations

from functools import partial

from fastapi import APIRouter, Request

from cortadel_server.api.deps import Authorized, Service
from cortadel_server.api.errors import error_responses
from cortadel_server.api.media_schemas import AddMediaRequest, MediaResponse, media_response
from cortadel_server.media.ingest import Upload, payload
from cortadel_server.pipeline.budget import WriteBudget

router = APIRouter(prefix="/api/v1/media", tags=["Media"])


@router.post(
    "",
    operation_id="Media_Add",
    summary="Remember a document or an image (extension).",
    description=(
        "A document (text/plain, text/markdown, text/html as `text` or base64 `data`; application/pdf as base64 "
        "`data`) is split into passages, each run through the write pipeline; an image (image/png, image/jpeg, "
        "image/gif, image/webp as base64 `data`) is stored with its caption: the caller's, or one the configured "
        "vision model writes. Each result says which page and offset its passage came from."
    ),
    response_model=MediaResponse,
    responses=error_responses(400, 401, 403, 413, 415, 500),
)
async def add_media(body: Authorized[AddMediaRequest], request: Request, service: Service) -> MediaResponse:
    upload = Upload(
        body.user_id, body.name, payload(body.text, body.data), media_type=body.media_type, caption=body.caption,
        app_name=body.app, project=body.project, tags=tuple(body.tags or ()), session_id=body.session_id,
    )
    budget = WriteBudget()
    outcome = await service.workers.write(partial(service.media.add, upload, budget), budget, request.receive)
    return media_response(outcome)
