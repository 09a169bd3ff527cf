"""Run mem0's open-source library on LoCoMo turns, in its own process, and print ranked turn ids as JSON.

    PYTHONPATH=bench/.work/mem0:. .venv/bin/python -m bench.locomo.mem0_runner \
        --data DATA --samples conv-26 --embedder onnx --embedder-model DIR --out answers.json

mem0ai lives in its own ``pip install --target`` folder so its pins never touch the server's venv.
Setup: ``Memory`` with a local on-disk Qdrant collection and mem0's SQLite history; every turn is
added with ``infer=False`` (stored verbatim, no LLM call) and metadata ``dia_id``; each question is
a ``search`` with ``top_k=10`` and ``threshold=0`` (mem0's default threshold of 0.1 would drop
low-scoring hits and shorten the list). The embedder is the Cortadel server's own embedder class,
so mem0 and Cortadel compare on identical vectors. mem0 needs an LLM config even with
``infer=False``; a placeholder OpenAI config is given and never called (no network is reachable).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.locomo.dataset import load
from bench.locomo.ingest import turn_metadata


class _Mem0Embedder:
    """mem0's embedder interface (``embed(text, memory_action)`` -> list of floats) over a Cortadel embedder."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        return self._embedder.embed([text])[0].tolist()


def _cortadel_embedder(name: str, model: str | None) -> Any:
    from cortadel_server.config import Settings
    from cortadel_server.providers import build_embedder

    return build_embedder(Settings(embedder=name, embedder_model=model))


def _memory(folder: Path, dim: int) -> Any:
    from mem0 import Memory

    config = {
        "vector_store": {"provider": "qdrant", "config": {"path": str(folder / "qdrant"), "embedding_model_dims": dim, "on_disk": True, "collection_name": "locomo"}},
        "embedder": {"provider": "openai", "config": {"api_key": "unused-offline", "embedding_dims": dim}},
        "llm": {"provider": "openai", "config": {"api_key": "unused-offline"}},
        "history_db_path": str(folder / "history.db"),
    }
    return Memory.from_config(config)


def run(args: argparse.Namespace) -> dict[str, Any]:
    embedder = _cortadel_embedder(args.embedder, args.embedder_model)
    conversations = [c for c in load(Path(args.data)) if c.sample_id in set(args.samples)]
    with tempfile.TemporaryDirectory(prefix="bench-mem0-") as tmp:
        memory = _memory(Path(tmp), embedder.dim)
        memory.embedding_model = _Mem0Embedder(embedder)
        questions: list[dict[str, Any]] = []
        seconds: list[float] = []
        added = 0
        started = time.perf_counter()
        for conv in conversations:
            user = f"{conv.sample_id}-turns"
            for turn in conv.turns:
                memory.add([{"role": "user", "content": turn.text}], user_id=user, infer=False, metadata=turn_metadata(conv, turn))
                added += 1
        ingest_seconds = time.perf_counter() - started
        for conv in conversations:
            user = f"{conv.sample_id}-turns"
            for index, question in enumerate(conv.questions):
                t0 = time.perf_counter()
                hits = memory.search(question.question, filters={"user_id": user}, top_k=10, threshold=0.0)["results"]
                seconds.append(time.perf_counter() - t0)
                ranked = [[(hit.get("metadata") or {}).get("dia_id")] for hit in hits]
                questions.append({"sample_id": conv.sample_id, "index": index, "ranked": [[t for t in r if t] for r in ranked]})
        memory.vector_store.client.close()
    return {"memories": added, "ingest_seconds": ingest_seconds, "questions": questions, "seconds": seconds}


def main() -> None:
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--samples", nargs="+", required=True)
    parser.add_argument("--embedder", required=True)
    parser.add_argument("--embedder-model")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="bench-mem0-home-"))
    Path(args.out).write_text(json.dumps(run(args)))


if __name__ == "__main__":
    main()
