"""Lazy imports of the optional libraries behind the local providers."""

from __future__ import annotations

import importlib
from types import ModuleType

from cortadel_server.errors import MissingDependency


def require(module: str, package: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependency` telling which ``package`` to install.

        ort = require("onnxruntime", "onnxruntime", "the onnx embedder")
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependency(f"{purpose} needs the Python package {package!r}: pip install {package}") from exc
