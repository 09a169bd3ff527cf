"""A local cross-encoder exported to ONNX: each (query, document) pair in, one relevance logit out.

    reranker = OnnxReranker("/models/ms-marco-MiniLM-L6-v2")   # model.onnx + tokenizer.json
    reranker.score("where does Ann work?", ["Ann works at Acme", "Bob likes tea"])  # [0.98, 0.01]

Scores are ``sigmoid(logit)`` in (0, 1), as TEI reports them. A two-class head (not relevant,
relevant) scores ``sigmoid(relevant - not relevant)``, its softmax probability of "relevant".
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from cortadel_server.config import Settings
from cortadel_server.errors import ProviderError
from cortadel_server.providers._onnx import OnnxModel

MAX_TOKENS = 512
BATCH_SIZE = 16


def _relevance(logits: np.ndarray) -> np.ndarray:
    if logits.ndim == 2 and logits.shape[1] == 2:
        logits = logits[:, 1] - logits[:, 0]
    elif logits.ndim == 2 and logits.shape[1] == 1:
        logits = logits[:, 0]
    elif logits.ndim != 1:
        raise ProviderError(f"onnx reranker: the model's output has shape {logits.shape}, expected (pairs,), (pairs, 1) or (pairs, 2)")
    return 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))


class OnnxReranker:
    name = "onnx"

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self._onnx = OnnxModel.load(directory, max_tokens=MAX_TOKENS, purpose="the onnx reranker")
        self.model = self._onnx.directory.name

    @classmethod
    def from_settings(cls, settings: Settings) -> OnnxReranker:
        if not settings.reranker_model:
            raise ProviderError("onnx reranker: CORTADEL_RERANKER_MODEL must name the model directory")
        return cls(settings.reranker_model)

    def score(self, query: str, documents: Sequence[str]) -> list[float]:
        if not documents:
            return []
        encodings = self._onnx.tokenizer.encode_batch([(query, document) for document in documents])
        scores = np.empty(len(documents), dtype=np.float64)
        for rows, logits, _mask in self._onnx.batches(encodings, BATCH_SIZE):
            scores[rows] = _relevance(logits)
        return scores.tolist()
