"""A document or an image into memories: checked against the size and type limits, read into
passages (or a caption), and written as one batch through the write pipeline.

Every memory written keeps where it came from in its metadata, under ``media``: the upload's id,
name, type and kind, and for a document passage its page (PDF) and character offset. The bytes of
the upload are not kept; an image is remembered by its caption (and its SHA-256, to recognise it).
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cortadel_server.config import Settings
from cortadel_server.errors import PayloadTooLarge, UnsupportedMediaType, ValidationFailed
from cortadel_server.media.captions import IMAGE_TYPES, Captioner
from cortadel_server.media.documents import DOCUMENT_TYPES, Passage, read_document
from cortadel_server.pipeline.budget import WriteBudget
from cortadel_server.pipeline.writer import TextInput, WriteOutcome

MEDIA_TYPES = DOCUMENT_TYPES + IMAGE_TYPES
#: names the standard library does not map to a type
_EXTENSIONS = {".md": "text/markdown", ".markdown": "text/markdown", ".webp": "image/webp"}
#: how each image type's bytes begin
_MAGIC = {"image/png": (b"\x89PNG\r\n\x1a\n",), "image/jpeg": (b"\xff\xd8\xff",), "image/gif": (b"GIF87a", b"GIF89a"),
          "image/webp": (b"RIFF",)}

AddBatch = Callable[..., list[list[WriteOutcome]]]


@dataclass(frozen=True)
class Upload:
    user_id: str
    name: str
    data: bytes
    media_type: str | None = None
    caption: str | None = None
    app_name: str | None = None
    project: str | None = None
    tags: tuple[str, ...] = ()
    session_id: str | None = None
    source: str = "media"


@dataclass(frozen=True)
class PassageOutcome:
    passage: Passage
    outcomes: list[WriteOutcome]


@dataclass(frozen=True)
class MediaOutcome:
    media_id: str
    name: str
    media_type: str
    kind: str
    pages: int | None
    passages: list[PassageOutcome]
    caption: str | None = None
    #: "caller", or the vision model that wrote the caption
    captioned_by: str | None = None


class MediaIngest:
    def __init__(self, settings: Settings, add_batch: AddBatch, captioner: Captioner | None) -> None:
        self.max_bytes = settings.max_media_bytes
        self.add_batch = add_batch
        self.captioner = captioner

    def add(self, upload: Upload, budget: WriteBudget | None = None) -> MediaOutcome:
        if len(upload.data) > self.max_bytes:
            raise PayloadTooLarge(
                f"The upload has {len(upload.data)} bytes; at most {self.max_bytes} are taken (CORTADEL_MAX_MEDIA_BYTES)."
            )
        if not upload.data:
            raise ValidationFailed({"data": ["The upload is empty"]})
        media_type = media_type_of(upload.name, upload.media_type)
        origin = {"id": str(uuid.uuid4()), "name": upload.name, "type": media_type}
        if media_type in IMAGE_TYPES:
            return self._image(upload, media_type, origin, budget)
        document = read_document(media_type, upload.data)
        if not document.passages:
            raise ValidationFailed({"data": ["The document holds no text to remember"
                                              + (" (a scanned PDF needs OCR first)" if document.pages else "")]})
        inputs = [
            self._input(upload, p.text, {**origin, "kind": "document", "page": p.page, "offset": p.offset}, infer=True)
            for p in document.passages
        ]
        outcomes = self.add_batch(upload.user_id, inputs, budget=budget)
        return MediaOutcome(origin["id"], upload.name, media_type, "document", document.pages,
                            [PassageOutcome(p, o) for p, o in zip(document.passages, outcomes, strict=True)])

    def _image(self, upload: Upload, media_type: str, origin: dict[str, Any], budget: WriteBudget | None) -> MediaOutcome:
        if not upload.data.startswith(_MAGIC[media_type]) or (media_type == "image/webp" and upload.data[8:12] != b"WEBP"):
            raise ValidationFailed({"data": [f"The bytes are not a {media_type} image"]})
        caption, by = (upload.caption, "caller") if upload.caption else self._written_caption(media_type, upload.data)
        meta = {**origin, "kind": "image", "bytes": len(upload.data), "sha256": hashlib.sha256(upload.data).hexdigest(),
                "captioned_by": by}
        outcomes = self.add_batch(upload.user_id, [self._input(upload, caption, meta, infer=False)], budget=budget)
        return MediaOutcome(origin["id"], upload.name, media_type, "image", None,
                            [PassageOutcome(Passage(caption, None, 0), outcomes[0])], caption, by)

    def _written_caption(self, media_type: str, data: bytes) -> tuple[str, str]:
        if self.captioner is None:
            raise ValidationFailed({"caption": [
                ("An image needs a caption: send one, or configure a vision model (CORTADEL_VISION_MODEL with "
                "CORTADEL_LLM_URL) to write it")
            ]})
        return self.captioner.caption(media_type, data), self.captioner.model

    @staticmethod
    def _input(upload: Upload, text: str, origin: dict[str, Any], *, infer: bool) -> TextInput:
        return TextInput(text, infer=infer, app_name=upload.app_name, metadata={"media": origin}, project=upload.project,
                         tags=upload.tags, source=upload.source, session_id=upload.session_id)

    def close(self) -> None:
        if self.captioner is not None:
            self.captioner.close()


def media_type_of(name: str, given: str | None) -> str:
    """The upload's type: the one given (parameters dropped), else the one its name implies."""
    if given:
        media_type = given.split(";")[0].strip().lower()
    else:
        suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
        media_type = _EXTENSIONS.get(suffix) or mimetypes.guess_type(name)[0] or ""
    if media_type not in MEDIA_TYPES:
        said = f"{media_type!r}" if media_type else f"no type (none given, and none implied by the name {name!r})"
        raise UnsupportedMediaType(f"Unsupported media type {said}: send one of {', '.join(MEDIA_TYPES)}.")
    return media_type


def payload(text: str | None, data: str | None) -> bytes:
    """The upload's bytes from the wire: ``text`` as UTF-8, or ``data`` base64-decoded; exactly one."""
    if (text is None) == (data is None):
        raise ValidationFailed({"data": ["Send the document as `text` or the file as base64 `data`, exactly one of them"]})
    if text is not None:
        return text.encode("utf-8")
    try:
        return base64.b64decode(data or "", validate=True)
    except ValueError:  # binascii.Error, and the ValueError of a non-ASCII string
        raise ValidationFailed({"data": ["Not valid base64"]}) from None
