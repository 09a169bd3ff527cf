"""WordLlama: static token embeddings averaged per text. No network, ~0.3 s to load, tens of thousands of texts a second.

The wheel ships the 256-d ``l2_supercat`` weights and their tokenizer, but WordLlama looks for the
tokenizer in a folder the wheel does not have and would then try the network. We copy the bundled
tokenizer file into our own cache folder and load with downloads switched off.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cortadel_server.config import Settings
from cortadel_server.errors import ProviderError
from cortadel_server.providers._imports import require
from cortadel_server.providers.embedding.base import embed_with

DEFAULT_MODEL = "l2_supercat"
NATIVE_DIM = 256
MAX_TOKENS = 2048  # a text's vector is an average: the first 2048 tokens say enough, and this bounds batch memory
BATCH_SIZE = 64


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/cortadel/wordllama`` (``~/.cache/...``), or a temp folder when home is not writable."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    for candidate in (base / "cortadel" / "wordllama", Path(tempfile.gettempdir()) / f"cortadel-{os.getuid()}" / "wordllama"):
        try:
            (candidate / "tokenizers").mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(candidate / "tokenizers", os.W_OK):
            return candidate
    raise ProviderError("wordllama embedder: no writable cache folder (tried ~/.cache and the temp folder)")


def _stage_tokenizer(package_dir: Path, config_name: str, target: Path) -> None:
    """Copy the wheel's tokenizer file into ``target/tokenizers`` unless an identical copy is there."""
    source = package_dir / "tokenizers" / f"{config_name}_tokenizer_config.json"
    if not source.is_file():
        return  # not bundled: WordLlama reports the missing file itself
    dest = target / "tokenizers" / source.name
    if dest.is_file() and dest.stat().st_size == source.stat().st_size:
        return
    partial = dest.with_suffix(f".{os.getpid()}.part")
    shutil.copyfile(source, partial)
    os.replace(partial, dest)  # atomic: two servers starting at once both see a whole file


def _import_wordllama() -> Any:
    """Import wordllama without letting it configure the root logger (its inference module calls basicConfig)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    module = require("wordllama", "wordllama", "the wordllama embedder")
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    return module


class WordLlamaEmbedder:
    """The default embedder.

        embedder = WordLlamaEmbedder()          # l2_supercat, 256 dimensions
        embedder = WordLlamaEmbedder(dim=128)   # Matryoshka-truncated
    """

    provider = "wordllama"

    def __init__(self, model: str = DEFAULT_MODEL, dim: int = 0) -> None:
        if dim > NATIVE_DIM:
            raise ProviderError(f"wordllama embedder: {dim} dimensions asked, the bundled weights have {NATIVE_DIM}")
        wordllama = _import_wordllama()
        folder = cache_dir()
        _stage_tokenizer(Path(wordllama.__file__).parent, model, folder)
        try:
            self._model = wordllama.WordLlama.load(model, cache_dir=folder, dim=NATIVE_DIM, disable_download=True)
        except (AttributeError, FileNotFoundError, ValueError) as exc:
            raise ProviderError(
                f"wordllama embedder: cannot load {model!r} ({exc}); only the bundled {DEFAULT_MODEL!r} works offline"
            ) from exc
        self._model.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.model = model
        self.dim = dim or NATIVE_DIM

    @classmethod
    def from_settings(cls, settings: Settings) -> WordLlamaEmbedder:
        return cls(settings.embedder_model or DEFAULT_MODEL, settings.embedder_dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return embed_with(self._average, texts, self.dim)

    def _average(self, texts: list[str]) -> np.ndarray:
        if len(texts) == 1:  # a search's query: nothing to order
            return np.asarray(self._model.embed(texts, norm=False, batch_size=BATCH_SIZE))
        # Similar lengths in one batch keep the padding small.
        order = np.argsort([len(t) for t in texts], kind="stable")
        raw: np.ndarray = self._model.embed([texts[i] for i in order], norm=False, batch_size=BATCH_SIZE)
        vectors = np.empty_like(raw)
        vectors[order] = raw
        return vectors
