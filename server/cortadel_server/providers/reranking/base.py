"""The reranker interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Reranker(Protocol):
    """Scores how well each document answers a query.

        scores = reranker.score("where does Ann work?", ["Ann works at Acme", "Bob likes tea"])
        # one float per document, in the documents' order; higher is more relevant
    """

    name: str  # "onnx" | "http"
    model: str

    def score(self, query: str, documents: Sequence[str]) -> list[float]: ...
