"""The providers package's surface: factories, registries, and the error for a missing library."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cortadel_server import providers
from cortadel_server.config import Settings
from cortadel_server.errors import ConfigError, MissingDependency, ProviderError
from cortadel_server.providers._imports import require
from cortadel_server.providers.embedding import OnnxEmbedder
from cortadel_server.providers.reranking import OnnxReranker


def test_public_names_are_exported() -> None:
    assert all(hasattr(providers, name) for name in providers.__all__)
    assert list(providers.EMBEDDERS) == ["wordllama", "onnx", "openai"]
    assert list(providers.RERANKERS) == ["onnx", "http"]


def test_a_missing_library_names_the_package_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(MissingDependency, match=r"the thing needs the Python package 'no-such-pkg': pip install no-such-pkg"):
        require("no_such_module_for_cortadel", "no-such-pkg", "the thing")

    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # makes `import onnxruntime` fail
    with pytest.raises(MissingDependency, match="the onnx embedder needs the Python package 'onnxruntime'"):
        OnnxEmbedder(tmp_path)
    with pytest.raises(MissingDependency, match="the onnx reranker needs the Python package 'onnxruntime'"):
        OnnxReranker(tmp_path)
    assert issubclass(MissingDependency, ProviderError)


def test_unknown_provider_names_are_config_errors() -> None:
    # Settings.from_env rejects these earlier; a hand-built Settings reaches the factories.
    with pytest.raises(ConfigError, match="CORTADEL_EMBEDDER='bert': must be one of wordllama, onnx, openai"):
        providers.build_embedder(Settings(embedder="bert"))
    with pytest.raises(ConfigError, match="CORTADEL_RERANKER='colbert': must be none or one of onnx, http"):
        providers.build_reranker(Settings(reranker="colbert"))
