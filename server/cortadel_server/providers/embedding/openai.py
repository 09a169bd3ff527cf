"""Any OpenAI-compatible ``POST {url}/embeddings``: OpenAI, Ollama (``/v1``), LM Studio, vLLM, TEI, LiteLLM.

    embedder = OpenAIEmbedder("http://localhost:11434/v1", model="nomic-embed-text")
    embedder.dim   # learnt from one probe request at construction

With ``dim`` > 0 the request carries ``dimensions`` and longer answers are cut to ``dim`` (the
Matryoshka way), so servers that ignore the parameter still fit the dimension guard.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cortadel_server.config import Settings
from cortadel_server.errors import ProviderError
from cortadel_server.providers._http import DEFAULT_RETRY, JsonApi, RetryPolicy
from cortadel_server.providers.embedding.base import embed_with

BATCH_SIZE = 128  # inputs per request; OpenAI allows 2048, local servers like smaller ones
TIMEOUT = 60.0


class OpenAIEmbedder:
    provider = "openai"

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        dim: int = 0,
        timeout: float = TIMEOUT,
        policy: RetryPolicy = DEFAULT_RETRY,
    ) -> None:
        self._api = JsonApi(url, api_key=api_key, timeout=timeout, label="openai embedder", policy=policy)
        self.model = model or ""
        self._asked_dim = dim
        # One request now: a wrong URL, key or model fails at start, and the dimension is known.
        try:
            probe = self._request(["dimension probe"])
        except ProviderError:
            self.close()
            raise
        self.dim = dim or probe.shape[1]

    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIEmbedder:
        if not settings.embedder_url:
            raise ProviderError("openai embedder: CORTADEL_EMBEDDER_URL is required")
        return cls(settings.embedder_url, model=settings.embedder_model, api_key=settings.embedder_api_key, dim=settings.embedder_dim)

    def close(self) -> None:
        self._api.close()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return embed_with(self._request, texts, self.dim)

    def _request(self, texts: list[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for start in range(0, len(texts), BATCH_SIZE):
            chunk = texts[start : start + BATCH_SIZE]
            body: dict[str, Any] = {"input": chunk}
            if self.model:
                body["model"] = self.model
            if self._asked_dim:
                body["dimensions"] = self._asked_dim
            rows.extend(self._vectors(self._api.post("/embeddings", body), len(chunk)))
        matrix = np.asarray(rows, dtype=np.float32)
        if self._asked_dim and matrix.shape[1] < self._asked_dim:
            raise ProviderError(f"openai embedder: asked for {self._asked_dim} dimensions, {self._api.base_url} returned {matrix.shape[1]}")
        return matrix

    def _vectors(self, reply: Any, expected: int) -> list[list[float]]:
        try:
            data = sorted(reply["data"], key=lambda item: item["index"])
            vectors = [item["embedding"] for item in data]
        except (KeyError, TypeError) as exc:
            raise ProviderError(f"openai embedder: unexpected reply from {self._api.base_url}/embeddings: {str(reply)[:200]}") from exc
        if len(vectors) != expected or len({len(v) for v in vectors}) != 1:
            lengths = sorted({len(v) for v in vectors})
            raise ProviderError(f"openai embedder: sent {expected} texts, got {len(vectors)} vectors of lengths {lengths}")
        return vectors
