"""The embedder interface and the one post-processing step every embedder ends with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from cortadel_server.errors import ProviderError


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit vectors.

        vectors = embedder.embed(["I love coffee", "The train leaves at noon"])
        vectors.shape == (2, embedder.dim); vectors.dtype == numpy.float32

    Rows are L2-normalised, so a dot product is the cosine similarity. A blank text gets the zero
    vector (without asking the model).
    """

    provider: str
    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def embed_with(raw: Callable[[list[str]], np.ndarray], texts: Sequence[str], dim: int) -> np.ndarray:
    """Embed ``texts`` through ``raw`` (a model's unnormalised output), give blank texts zero rows, then :func:`finish`."""
    wanted = [i for i, text in enumerate(texts) if text.strip()]
    if wanted and len(wanted) == len(texts):  # none blank (a search's query): no zero rows to leave
        return finish(raw(list(texts)), dim)
    vectors = np.zeros((len(texts), dim), dtype=np.float32)
    if wanted:
        vectors[wanted] = finish(raw([texts[i] for i in wanted]), dim)
    return vectors


def finish(vectors: np.ndarray, dim: int = 0) -> np.ndarray:
    """Cut ``vectors`` to ``dim`` columns when ``dim`` > 0, then L2-normalise each row as float32.

    Cutting before normalising is how Matryoshka-trained models (WordLlama, OpenAI's text-embedding-3)
    are meant to be shortened.
    """
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2:
        raise ProviderError(f"embedder returned an array of shape {matrix.shape}, expected (texts, dim)")
    if dim:
        if matrix.shape[1] < dim:
            raise ProviderError(f"embedder returned {matrix.shape[1]}-d vectors, fewer than the {dim} asked for")
        matrix = matrix[:, :dim]
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.ascontiguousarray(np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0))
