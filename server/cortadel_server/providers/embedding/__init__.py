"""Embedders: text in, unit vectors out. ``EMBEDDERS`` maps each ``CORTADEL_EMBEDDER`` value to its factory."""

from __future__ import annotations

from collections.abc import Callable

from cortadel_server.config import Settings
from cortadel_server.providers.embedding.base import Embedder
from cortadel_server.providers.embedding.onnx import OnnxEmbedder
from cortadel_server.providers.embedding.openai import OpenAIEmbedder
from cortadel_server.providers.embedding.wordllama import WordLlamaEmbedder

EMBEDDERS: dict[str, Callable[[Settings], Embedder]] = {
    "wordllama": WordLlamaEmbedder.from_settings,
    "onnx": OnnxEmbedder.from_settings,
    "openai": OpenAIEmbedder.from_settings,
}

__all__ = ["EMBEDDERS", "Embedder", "OnnxEmbedder", "OpenAIEmbedder", "WordLlamaEmbedder"]
