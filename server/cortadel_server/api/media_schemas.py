"""Wire schemas of media (an extension): the REST body and the answer the add_media tool shares."""

from __future__ import annotations

from pydantic import Field

from cortadel_server.api import render
from cortadel_server.api.schemas import Request, Response, UserId
from cortadel_server.media.captions import CAPTION_CHARS
from cortadel_server.media.ingest import MEDIA_TYPES, MediaOutcome

NAME_CHARS = 500


class AddMediaRequest(Request):
    user_id: UserId
    name: str = Field(min_length=1, max_length=NAME_CHARS, description="The file's name; its extension gives the type when `media_type` is absent.")
    media_type: str | None = Field(None, description=f"One of {', '.join(MEDIA_TYPES)}.")
    text: str | None = Field(None, min_length=1, description="A text document (plain, Markdown or HTML) as a string; or send `data`.")
    data: str | None = Field(None, min_length=1, description="The file's bytes, base64-encoded (a PDF, an image, any document); or send `text`.")
    caption: str | None = Field(None, min_length=1, max_length=CAPTION_CHARS, description="What an image shows; without one the configured vision model writes it.")
    app: str | None = Field(None, description="Name of the application writing the memories.")
    project: str | None = Field(None, description="Project the memories belong to.")
    tags: list[str] | None = Field(None, description="Tags stored with every memory.")
    session_id: str | None = Field(None, description="Session the memories belong to.")


class MediaFact(Response):
    id: str | None
    memory: str | None
    event: str | None
    error: str | None
    page: int | None = Field(description="The PDF page (from 1) of the passage it came from; null for other media.")
    offset: int = Field(description="Characters from the start of the page's (or document's) text to the passage.")


class MediaResponse(Response):
    media_id: str = Field(description="Id of the upload: every memory from it has it in metadata.media.id.")
    name: str
    media_type: str
    kind: str = Field(description="document | image")
    pages: int | None
    passages: int = Field(description="Passages the document was read into (1 for an image: its caption).")
    caption: str | None
    captioned_by: str | None = Field(description='"caller", or the vision model that wrote the caption.')
    results: list[MediaFact]


def media_response(outcome: MediaOutcome) -> MediaResponse:
    return MediaResponse(
        media_id=outcome.media_id, name=outcome.name, media_type=outcome.media_type, kind=outcome.kind,
        pages=outcome.pages, passages=len(outcome.passages), caption=outcome.caption, captioned_by=outcome.captioned_by,
        results=[
            MediaFact(**render.ingest_item(o), page=p.passage.page, offset=p.passage.offset)
            for p in outcome.passages for o in p.outcomes
        ],
    )
