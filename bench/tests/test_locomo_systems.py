"""The systems of a LoCoMo run: on both backends every system keeps a label of its own, so the
report's rows say which backend they ran on."""

from __future__ import annotations

from pathlib import Path

from bench.locomo.systems import server_plans


def test_every_system_of_a_two_backend_run_is_named_apart() -> None:
    plans = server_plans(None, Path("/src"), backend="both")
    labels = [plan.label(variant) for plan in plans for variant in plan.variants]
    assert labels == [
        "bm25", "vector · wordllama", "hybrid · wordllama", "vector · minilm-onnx", "hybrid · minilm-onnx",
        "bm25 · postgres", "vector · wordllama · postgres", "hybrid · wordllama · postgres",
        "vector · minilm-onnx · postgres", "hybrid · minilm-onnx · postgres",
    ]
