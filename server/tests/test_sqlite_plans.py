"""The SQLite backend's hot lookups use the index made for them (a plan that scans the user's rows
costs milliseconds per add at 10,000 memories)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import numpy as np

from cortadel_server.storage.base import MemoryRecord
from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.text import fingerprint


def plans_of(store: SqliteStorage, call: Any) -> list[str]:
    """The query plan of every statement ``call`` runs on this thread's connection."""
    conn = store._conn()
    seen: list[tuple[str, Any]] = []

    def trace(cursor: Any, sql: str, bindings: Any) -> bool:
        seen.append((sql, bindings))
        return True

    conn.exec_trace = trace
    try:
        call()
    finally:
        conn.exec_trace = None
    return [detail for sql, bindings in seen for *_, detail in conn.execute("EXPLAIN QUERY PLAN " + sql, bindings or ())]


def test_find_by_fingerprint_uses_the_fingerprint_index(tmp_path: Path) -> None:
    store = SqliteStorage(tmp_path / "c.db")
    try:
        store.ensure_vector_index(4, "test/four")
        with store.write():
            for i in range(50):
                text = f"note {i}"
                store.insert_memory(
                    MemoryRecord(id=str(uuid.uuid4()), user_id="u", text=text, created_at=1e9 + i, fingerprint=fingerprint(text)),
                    np.full(4, 0.5, dtype=np.float32),
                )
        plans = plans_of(store, lambda: store.find_by_fingerprint("u", fingerprint("note 7")))
        assert any("USING INDEX memories_user_fingerprint" in p for p in plans), plans
        assert store.find_by_fingerprint("u", fingerprint("Note 7.")).text == "note 7"  # type: ignore[union-attr]
    finally:
        store.close()
