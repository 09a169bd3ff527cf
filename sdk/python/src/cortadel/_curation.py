"""*Extra.* Media (a document or an image remembered as facts) and communities (a user's entities
grouped by the facts that tie them together), as results and as calls both clients run."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field

from . import _wire
from ._operations import Call, Scope


@dataclass(frozen=True, slots=True)
class MediaFact:
    """*Extra.* One fact written from a document passage (or an image's caption): ``page`` is the
    PDF page (from 1, ``None`` for other media), ``offset`` where the passage began."""

    id: str | None
    memory: str | None
    event: str | None
    error: str | None = None
    page: int | None = None
    offset: int = 0


@dataclass(frozen=True, slots=True)
class MediaResult:
    """*Extra.* What ``add_media`` stored: ``kind`` document or image; every memory has
    ``media_id`` in ``metadata_["media"]["id"]``."""

    media_id: str
    name: str
    media_type: str
    kind: str
    pages: int | None = None
    passages: int = 0
    caption: str | None = None
    captioned_by: str | None = None
    """``caller``, or the vision model that wrote the caption."""
    results: list[MediaFact] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Community:
    """*Extra.* A group of the user's entities and the facts that mention them; ``level`` 0 (finest)
    or 1 (groups of level-0 communities, listed in ``child_ids``)."""

    id: str
    level: int
    title: str
    summary: str
    summarized_by: str
    entities: list[str] = field(default_factory=list)
    memory_ids: list[str] = field(default_factory=list)
    parent_id: str | None = None
    child_ids: list[str] = field(default_factory=list)


def _media(d: _wire.Json) -> MediaResult:
    return MediaResult(
        media_id=d.get("media_id") or "", name=d.get("name") or "", media_type=d.get("media_type") or "",
        kind=d.get("kind") or "", pages=d.get("pages"), passages=d.get("passages") or 0, caption=d.get("caption"),
        captioned_by=d.get("captioned_by"),
        results=[MediaFact(id=r.get("id"), memory=r.get("memory"), event=r.get("event"), error=r.get("error"),
                           page=r.get("page"), offset=r.get("offset") or 0) for r in d.get("results") or []],
    )


def _communities(d: _wire.Json) -> list[Community]:
    return [
        Community(id=c.get("id") or "", level=c.get("level") or 0, title=c.get("title") or "",
                  summary=c.get("summary") or "", summarized_by=c.get("summarized_by") or "",
                  entities=list(c.get("entities") or []), memory_ids=list(c.get("memory_ids") or []),
                  parent_id=c.get("parent_id"), child_ids=list(c.get("child_ids") or []))
        for c in d.get("communities") or []
    ]


def add_media(
    scope: Scope, name: str, *, text: str | None, data: bytes | None, media_type: str | None, caption: str | None,
    project: str | None, tags: Sequence[str] | None, session_id: str | None,
) -> Call[MediaResult]:
    body = _wire.without_nulls({
        "user_id": scope.user_id, "name": name, "media_type": media_type, "text": text,
        "data": None if data is None else base64.b64encode(data).decode("ascii"), "caption": caption,
        "project": project, "tags": None if tags is None else list(tags), "session_id": session_id,
    })
    return Call("POST", "/api/v1/media", _media, body=body)


def communities(scope: Scope, level: int | None) -> Call[list[Community]]:
    params = _wire.without_nulls({"user_id": scope.user_id, "level": None if level is None else str(level)})
    return Call("GET", "/api/v1/communities", _communities, params=params, idempotent=True)
