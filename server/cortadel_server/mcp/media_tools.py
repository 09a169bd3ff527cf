"""The ``add_media`` tool (reference name): a document or an image, remembered as facts.

A handler in the shape of ``cortadel_server.mcp.tools``: (service, caller, validated arguments).
It takes what ``POST /api/v1/media`` takes and answers the same data.
"""

from __future__ import annotations

from pydantic import Field

from cortadel_server.api.media_schemas import NAME_CHARS, media_response
from cortadel_server.mcp.arguments import Arguments
from cortadel_server.mcp.caller import Caller
from cortadel_server.mcp.views import ToolResult, outcome_line, quoted
from cortadel_server.media.captions import CAPTION_CHARS
from cortadel_server.media.ingest import MEDIA_TYPES, Upload, payload
from cortadel_server.service import MemoryService

ADD_MEDIA = f"""Remember a document or an image the user shares: a document (plain text, Markdown, \
HTML or PDF) is split into passages and each one is stored as facts, with the page and offset it came \
from; an image is stored with its caption.

Pass a text document as `text`, or any file (PDF, image) base64-encoded as `data`, with its `name` \
(its extension gives the type, or set media_type: {", ".join(MEDIA_TYPES)}). For an image, give a \
`caption` saying what it shows, unless the server has a vision model to write one (it says so if not). \
Returns one line per stored fact: <EVENT> <id>: "<memory>" (page, offset)."""


class AddMediaArgs(Arguments):
    name: str = Field(min_length=1, max_length=NAME_CHARS, description="The file's name, e.g. notes.md or scan.pdf.")
    media_type: str | None = Field(None, description=f"One of {', '.join(MEDIA_TYPES)} (default: from the name).")
    text: str | None = Field(None, min_length=1, description="A text document (plain, Markdown or HTML); or send data.")
    data: str | None = Field(None, min_length=1, description="The file's bytes, base64-encoded; or send text.")
    caption: str | None = Field(None, min_length=1, max_length=CAPTION_CHARS, description="What an image shows.")
    project: str | None = Field(None, description="Project the memories belong to (default: the connection's project).")
    tags: list[str] | None = Field(None, description="Tags to store with every memory.")


def add_media(service: MemoryService, caller: Caller, args: AddMediaArgs) -> ToolResult:
    upload = Upload(
        caller.user_id, args.name, payload(args.text, args.data), media_type=args.media_type, caption=args.caption,
        app_name=caller.client_name, project=caller.project_or_scope(args.project), tags=tuple(args.tags or ()),
        source="mcp",
    )
    response = media_response(service.media.add(upload))
    pages = f", {response.pages} pages" if response.pages is not None else ""
    head = f"Stored {response.kind} {quoted(response.name)} ({response.media_type}{pages}) as {response.media_id}:"
    lines = [
        outcome_line(fact.model_dump()) + (f" (page {fact.page}, offset {fact.offset})" if fact.page else f" (offset {fact.offset})")
        for fact in response.results
    ]
    return ToolResult("\n".join([head, *lines]), response.model_dump())
