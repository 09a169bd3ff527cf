"""The MiniLM test model folder: assembled from the pinned packages, verified, and repaired when damaged."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.minilm import NAME, ONNX_SHA256, TOKENIZER_FILES, minilm_dir, sha256_of


def test_assembles_a_verified_model_folder_in_the_cache_and_repairs_a_damaged_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assemble = minilm_dir.__wrapped__  # the uncached function: each call looks at the folder again

    folder = assemble()
    assert folder == tmp_path / "cortadel" / "test-models" / ONNX_SHA256[:16] / NAME
    assert sorted(p.name for p in folder.iterdir()) == sorted(["model.onnx", *TOKENIZER_FILES])
    assert sha256_of(folder / "model.onnx") == ONNX_SHA256
    assert (folder / "model.onnx").stat().st_size == 22_928_619
    assert '"do_lower_case": true' in (folder / "tokenizer_config.json").read_text(encoding="utf-8")

    (folder / "model.onnx").write_bytes(b"truncated download")
    assert assemble() == folder
    assert sha256_of(folder / "model.onnx") == ONNX_SHA256
    assert list(folder.parent.iterdir()) == [folder]  # no staging folder left behind
