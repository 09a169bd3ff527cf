"""mem0 OSS on the perf corpus, in its own process: per-add and per-search seconds as JSON.

    PYTHONPATH=bench/.work/mem0:.:server .venv/bin/python -m bench.perf.mem0_runner \
        --user side --memories 2000 --queries 200 --out mem0.json

The setup of the LoCoMo comparison (``bench.locomo.mem0_runner``): ``Memory`` over a local on-disk
Qdrant collection and mem0's SQLite history, the Cortadel server's own embedder (wordllama), every
memory added with ``infer=False`` (stored verbatim, no LLM call), every search ``top_k=10``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from bench.locomo.mem0_runner import _cortadel_embedder, _Mem0Embedder, _memory
from bench.perf.corpus import queries, sentences


def main() -> None:
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--user", required=True)
    parser.add_argument("--memories", type=int, required=True)
    parser.add_argument("--queries", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="bench-mem0-home-"))
    embedder = _cortadel_embedder("wordllama", None)
    stream = sentences(args.user)
    texts = [next(stream) for _ in range(args.memories)]
    adds: list[float] = []
    searches: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-mem0-") as tmp:
        memory = _memory(Path(tmp), embedder.dim)
        memory.embedding_model = _Mem0Embedder(embedder)
        for text in texts:
            started = time.perf_counter()
            memory.add([{"role": "user", "content": text}], user_id=args.user, infer=False)
            adds.append(time.perf_counter() - started)
        for query in queries(n=args.queries):
            started = time.perf_counter()
            memory.search(query, filters={"user_id": args.user}, top_k=10, threshold=0.0)
            searches.append(time.perf_counter() - started)
        memory.vector_store.client.close()
    Path(args.out).write_text(json.dumps({"add_seconds": adds, "search_seconds": searches}))


if __name__ == "__main__":
    main()
