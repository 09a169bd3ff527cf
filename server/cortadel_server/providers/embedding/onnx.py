"""A local sentence-transformer exported to ONNX: mean pooling over the attention mask, then L2.

    embedder = OnnxEmbedder("/models/all-MiniLM-L6-v2-int8")   # model.onnx + tokenizer.json
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from cortadel_server.config import Settings
from cortadel_server.errors import ProviderError
from cortadel_server.providers._onnx import OnnxModel
from cortadel_server.providers.embedding.base import embed_with

MAX_TOKENS = 256
BATCH_SIZE = 32


class OnnxEmbedder:
    provider = "onnx"

    def __init__(self, directory: str | os.PathLike[str], dim: int = 0) -> None:
        self._onnx = OnnxModel.load(directory, max_tokens=MAX_TOKENS, purpose="the onnx embedder")
        self.model = self._onnx.directory.name  # the folder name, e.g. all-MiniLM-L6-v2-int8
        probe = self._pool(["dimension probe"])
        if dim > probe.shape[1]:
            raise ProviderError(f"onnx embedder: {dim} dimensions asked, {self.model} yields {probe.shape[1]}")
        self.dim = dim or probe.shape[1]

    @classmethod
    def from_settings(cls, settings: Settings) -> OnnxEmbedder:
        if not settings.embedder_model:
            raise ProviderError("onnx embedder: CORTADEL_EMBEDDER_MODEL must name the model directory")
        return cls(settings.embedder_model, settings.embedder_dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return embed_with(self._pool, texts, self.dim)

    def _pool(self, texts: list[str]) -> np.ndarray:
        encodings = self._onnx.tokenizer.encode_batch(texts)
        pooled: np.ndarray | None = None
        for rows, output, mask in self._onnx.batches(encodings, BATCH_SIZE):
            if output.ndim == 3:  # token states (batch, tokens, hidden): average the real tokens
                weights = mask[:, :, None].astype(np.float32)
                output = (output * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            if pooled is None:
                pooled = np.empty((len(texts), output.shape[1]), dtype=np.float32)
            pooled[rows] = output
        assert pooled is not None
        return pooled
