"""Produce server/tests/data/mem0_real_export.json with real mem0 OSS (not run by the test suite).

    .venv/bin/pip install --target /tmp/mem0-oss -r bench/requirements-mem0.txt
    PYTHONPATH=/tmp/mem0-oss .venv/bin/python bench/mem0_export.py server/tests/data/mem0_real_export.json

mem0 OSS has no export call of its own: its export is ``Memory.get_all()`` per user plus
``Memory.history()`` of each memory, which is the shape ``cortadel import --format mem0`` reads
(``{"results": [...], "history": [...]}``). Setup as in ``bench.locomo.mem0_runner``: a local
on-disk Qdrant collection, mem0's SQLite history, ``infer=False`` (stored verbatim, no LLM call),
telemetry off. Vectors play no part in an export, so a small hashed bag-of-words embedder stands in
for a model. Two users; alice's home is updated once and her cat deleted, bob's milk updated once.
The deleted memory's history is exported too: get_all() no longer lists it, so it must not come back.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DIMS = 16


class HashedEmbedder:
    """mem0's embedder interface (``embed(text, memory_action)``): words hashed into DIMS buckets."""

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        vector = [0.0] * DIMS
        for word in text.lower().split():
            vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIMS] += 1.0
        return vector


def memory_store(folder: Path) -> Any:
    from mem0 import Memory

    memory = Memory.from_config({
        "vector_store": {"provider": "qdrant", "config": {"path": str(folder / "qdrant"), "embedding_model_dims": DIMS, "on_disk": True, "collection_name": "export"}},
        # mem0 wants an LLM and embedder config even with infer=False; neither is called
        "embedder": {"provider": "openai", "config": {"api_key": "unused-offline", "embedding_dims": DIMS}},
        "llm": {"provider": "openai", "config": {"api_key": "unused-offline"}},
        "history_db_path": str(folder / "history.db"),
    })
    memory.embedding_model = HashedEmbedder()
    return memory


def added(memory: Any, text: str, **scope: Any) -> str:
    [result] = memory.add([{"role": "user", "content": text}], infer=False, **scope)["results"]
    time.sleep(1.1)  # whole seconds apart, so every event of the file has its own time
    return str(result["id"])


def export(memory: Any) -> dict[str, Any]:
    home = added(memory, "Lives in Berlin", user_id="alice", metadata={"topic": "home"})
    added(memory, "Is allergic to peanuts", user_id="alice", agent_id="health-bot")
    cat = added(memory, "Has a cat named Miso", user_id="alice")
    added(memory, "Plays cricket on Sundays", user_id="bob", run_id="season-2026")
    milk = added(memory, "Drinks oat milk", user_id="bob")
    memory.update(home, text="Lives in Paris")
    time.sleep(1.1)
    memory.update(milk, text="Drinks soy milk")
    time.sleep(1.1)
    memory.delete(cat)
    results = [m for user in ("alice", "bob") for m in memory.get_all(filters={"user_id": user})["results"]]
    history = [event for memory_id in [*(m["id"] for m in results), cat] for event in memory.history(memory_id)]
    return {"results": results, "history": history}


def main() -> None:
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    os.environ.setdefault("MEM0_DIR", tempfile.mkdtemp(prefix="mem0-export-home-"))
    with tempfile.TemporaryDirectory(prefix="mem0-export-") as tmp:
        memory = memory_store(Path(tmp))
        data = export(memory)
        memory.vector_store.client.close()
    Path(sys.argv[1]).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
