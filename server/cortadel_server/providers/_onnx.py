"""What the ONNX embedder and the ONNX cross-encoder share: a CPU session and a tokenizer from one directory.

A model directory holds ``model.onnx`` and the Hugging Face ``tokenizer.json`` that goes with it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cortadel_server.errors import ProviderError
from cortadel_server.providers._imports import require


def cpu_threads() -> int:
    """Threads for one inference: every core, up to four (with spinning off, idle workers hand cores back at once)."""
    return max(1, min(4, os.cpu_count() or 1))


@dataclass(frozen=True)
class OnnxModel:
    """An onnxruntime session plus its tokenizer, with padding and truncation under our control."""

    directory: Path
    session: Any
    tokenizer: Any
    inputs: dict[str, type[np.signedinteger[Any]]]  # the token inputs the graph takes, with their integer type
    pad_id: int

    @classmethod
    def load(cls, directory: str | os.PathLike[str], *, max_tokens: int, purpose: str) -> OnnxModel:
        ort = require("onnxruntime", "onnxruntime", purpose)
        tokenizers = require("tokenizers", "tokenizers", purpose)
        folder = Path(directory).expanduser().resolve()
        for name in ("model.onnx", "tokenizer.json"):
            if not (folder / name).is_file():
                raise ProviderError(f"{purpose}: {folder / name} not found (the model directory needs model.onnx and tokenizer.json)")

        options = ort.SessionOptions()
        options.intra_op_num_threads = cpu_threads()
        options.inter_op_num_threads = 1
        # Idle worker threads would otherwise spin on the cores the HTTP server needs.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            session = ort.InferenceSession(str(folder / "model.onnx"), sess_options=options, providers=["CPUExecutionProvider"])
            tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # onnxruntime raises its own untyped errors for a bad file
            raise ProviderError(f"{purpose}: cannot load the model in {folder}: {exc}") from exc

        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_tokens)
        pad_token = tokenizer.token_to_id("[PAD]")
        if pad_token is None:
            pad_token = tokenizer.token_to_id("<pad>")
        return cls(
            directory=folder,
            session=session,
            tokenizer=tokenizer,
            inputs={i.name: np.int32 if i.type == "tensor(int32)" else np.int64 for i in session.get_inputs()},
            pad_id=0 if pad_token is None else pad_token,
        )

    def batches(self, encodings: list[Any], batch_size: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Run ``encodings`` in batches of similar length; yields (row indices, first output, attention mask)."""
        order = np.argsort([len(e.ids) for e in encodings], kind="stable")
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            output, mask = self.run([encodings[i] for i in rows])
            yield rows, output, mask

    def run(self, encodings: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Pad ``encodings`` to their longest member, run the model; returns (first output, attention mask)."""
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        types = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            n = len(encoding.ids)
            ids[row, :n] = encoding.ids
            mask[row, :n] = 1
            types[row, :n] = encoding.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        try:
            output = self.session.run(None, {k: v.astype(self.inputs[k], copy=False) for k, v in feed.items() if k in self.inputs})[0]
        except Exception as exc:
            raise ProviderError(f"ONNX model in {self.directory} failed: {exc}") from exc
        return np.asarray(output, dtype=np.float32), mask
