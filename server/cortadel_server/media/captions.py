"""The caption of an image, written by an OpenAI-compatible vision model (CORTADEL_VISION_MODEL,
served at CORTADEL_LLM_URL). The image goes inline as a data URL, so the model needs no access to us."""

from __future__ import annotations

import base64
from typing import Any

from cortadel_server.config import Settings
from cortadel_server.providers.llm.openai import OpenAIChatClient

IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")

#: a caption holds at most this many characters (a memory's text is kept short and searchable)
CAPTION_CHARS = 2000

PROMPT = (
    "Describe this image for a long-term memory of its owner: one or two plain sentences saying what "
    "it shows, with any readable text, names, numbers and dates in it. Answer as JSON {\"caption\": \"...\"}."
)
SCHEMA = {
    "type": "object",
    "properties": {"caption": {"type": "string"}},
    "required": ["caption"],
    "additionalProperties": False,
}


def _caption(data: Any) -> str:
    caption = data.get("caption") if isinstance(data, dict) else None
    if not isinstance(caption, str) or not caption.strip():
        raise ValueError("caption must be a non-empty string")
    return " ".join(caption.split())[:CAPTION_CHARS]


class Captioner:
    def __init__(self, client: OpenAIChatClient) -> None:
        self.client = client

    @classmethod
    def from_settings(cls, settings: Settings) -> Captioner | None:
        """The configured vision model, or None when there is none."""
        if not (settings.vision_model and settings.llm_url):
            return None
        return cls(OpenAIChatClient(settings.llm_url, model=settings.vision_model, api_key=settings.llm_api_key,
                                    timeout=settings.llm_timeout))

    @property
    def model(self) -> str:
        return self.client.model

    def caption(self, media_type: str, data: bytes) -> str:
        url = f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"
        message = {"role": "user", "content": [{"type": "text", "text": PROMPT}, {"type": "image_url", "image_url": {"url": url}}]}
        return str(self.client.complete_json([message], SCHEMA, "caption", validate=_caption).data)

    def close(self) -> None:
        self.client.close()
