"""One system on the perf corpus in its own process, no HTTP: per-add and per-search seconds as JSON.

    PYTHONPATH=bench/.work/mem0:.:server .venv/bin/python -m bench.perf.in_process \
        --system mem0 --user side --memories 2000 --queries 200 --out mem0.json
    PYTHONPATH=.:server .venv/bin/python -m bench.perf.in_process --system cortadel ...

Both systems take the same sentences one add at a time, then answer the same questions (top 10),
timed by the same loop around a library call. mem0: the setup of the LoCoMo comparison
(``bench.locomo.mem0_runner``) — ``Memory`` over a local on-disk Qdrant collection and mem0's SQLite
history, the Cortadel server's own embedder (wordllama), ``infer=False`` (stored verbatim, no LLM
call). Cortadel: ``MemoryService`` on a fresh SQLite file with the same embedder, ``infer=False``,
the default hybrid recipe — what the server runs behind its HTTP front door.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bench.perf.corpus import queries, sentences

Add = Callable[[str], object]
Search = Callable[[str], object]


def timed(add: Add, search: Search, texts: Sequence[str], questions: Sequence[str]) -> dict[str, list[float]]:
    """Seconds of each add, then of each search, one call at a time."""
    adds: list[float] = []
    for text in texts:
        started = time.perf_counter()
        add(text)
        adds.append(time.perf_counter() - started)
    searches: list[float] = []
    for question in questions:
        started = time.perf_counter()
        search(question)
        searches.append(time.perf_counter() - started)
    return {"add_seconds": adds, "search_seconds": searches}


@contextmanager
def mem0(user: str, folder: Path) -> Iterator[tuple[Add, Search]]:
    from bench.locomo.mem0_runner import _cortadel_embedder, _Mem0Embedder, _memory

    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("MEM0_DIR", str(folder / "home"))
    embedder = _cortadel_embedder("wordllama", None)
    memory = _memory(folder, embedder.dim)
    memory.embedding_model = _Mem0Embedder(embedder)
    try:
        yield (lambda text: memory.add([{"role": "user", "content": text}], user_id=user, infer=False),
               lambda query: memory.search(query, filters={"user_id": user}, top_k=10, threshold=0.0))
    finally:
        memory.vector_store.client.close()


@contextmanager
def cortadel(user: str, folder: Path) -> Iterator[tuple[Add, Search]]:
    from cortadel_server.config import Settings
    from cortadel_server.retrieval.request import SearchRequest
    from cortadel_server.service import MemoryService

    service = MemoryService.open(Settings(embedder="wordllama", data=str(folder / "cortadel.db")))
    try:
        yield (lambda text: service.add(user, text, infer=False),
               lambda query: service.search(SearchRequest(user, query, top_k=10)))
    finally:
        service.close()


SYSTEMS = {"mem0": mem0, "cortadel": cortadel}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--system", choices=sorted(SYSTEMS), required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--memories", type=int, required=True)
    parser.add_argument("--queries", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    stream = sentences(args.user)
    texts = [next(stream) for _ in range(args.memories)]
    with tempfile.TemporaryDirectory(prefix=f"bench-{args.system}-") as tmp, SYSTEMS[args.system](args.user, Path(tmp)) as (add, search):
        answer = timed(add, search, texts, queries(n=args.queries))
    Path(args.out).write_text(json.dumps(answer))


if __name__ == "__main__":
    main()
