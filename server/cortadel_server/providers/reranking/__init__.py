"""Rerankers: cross-encoder scores for (query, document) pairs.

``RERANKERS`` maps each ``CORTADEL_RERANKER`` value except "none" to its factory.
"""

from __future__ import annotations

from collections.abc import Callable

from cortadel_server.config import Settings
from cortadel_server.providers.reranking.base import Reranker
from cortadel_server.providers.reranking.http import HttpReranker
from cortadel_server.providers.reranking.onnx import OnnxReranker

RERANKERS: dict[str, Callable[[Settings], Reranker]] = {
    "onnx": OnnxReranker.from_settings,
    "http": HttpReranker.from_settings,
}

__all__ = ["RERANKERS", "HttpReranker", "OnnxReranker", "Reranker"]
