"""SQLite writes a session document once per write transaction (each write re-indexes the whole
document), and the document still follows every insert, search, rollback and delete."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cortadel_server.storage.base import MemoryRecord
from cortadel_server.storage.sqlite import SqliteStorage

TEXTS = ["We planned a hiking trip.", "The Alps in August.", "I will book the night train."]


def _memory(i: int, text: str, session: str) -> MemoryRecord:
    return MemoryRecord(id=f"m{i}", user_id="u", text=text, created_at=1e9 + i, fingerprint=f"f{i}", session_id=session)


def _doc(store: SqliteStorage, session: str) -> str | None:
    rows = store._rows("SELECT text FROM session_docs WHERE user_id = 'u' AND session_id = ?", (session,))
    return rows[0][0] if rows else None


def test_a_batch_writes_its_session_document_once_and_in_order(tmp_path: Path) -> None:
    store = SqliteStorage(tmp_path / "s.db")
    vector = np.ones(4, dtype=np.float32) / 2
    try:
        store.insert_memory(_memory(0, "Packing list: boots.", "trip"), vector)
        with store.write():
            for i, text in enumerate(TEXTS, start=1):
                store.insert_memory(_memory(i, text, "trip"), vector)
            assert _doc(store, "trip") == "Packing list: boots."  # not yet: written once, before commit
            # A search inside the write sees the write's own memories.
            assert [s.id for s in store.session_search("u", "night train", 5)] == ["trip"]
            assert _doc(store, "trip") == "\n".join(["Packing list: boots.", *TEXTS])
            store.insert_memory(_memory(4, "Bring a rain jacket.", "trip"), vector)
        assert _doc(store, "trip") == "\n".join(["Packing list: boots.", *TEXTS, "Bring a rain jacket."])
        assert store._rows("SELECT id, context FROM memories WHERE id IN ('m2', 'm4') ORDER BY id") == [
            ("m2", "We planned a hiking trip."), ("m4", "I will book the night train.")]

        with pytest.raises(RuntimeError), store.write():
            store.insert_memory(_memory(5, "Never stored.", "trip"), vector)
            store.insert_memory(_memory(6, "Nor this.", "other"), vector)
            raise RuntimeError("boom")
        assert _doc(store, "trip") == "\n".join(["Packing list: boots.", *TEXTS, "Bring a rain jacket."])
        assert _doc(store, "other") is None
        assert store.session_search("u", "never stored", 5) == []

        with store.write():
            store.insert_memory(_memory(7, "Trains leave at nine.", "trip"), vector)
            assert store.delete_memories("u", ["m2"]) == 1  # rebuilt from the members, the new one included
        assert _doc(store, "trip") == "\n".join(
            ["Packing list: boots.", TEXTS[0], TEXTS[2], "Bring a rain jacket.", "Trains leave at nine."])
        assert store.session_search("u", "Alps", 5) == []
    finally:
        store.close()


def test_a_memory_after_a_delete_in_the_same_write_takes_the_remaining_last_text_as_context(tmp_path: Path) -> None:
    """The context of an insert comes from the texts the transaction appended; a delete in between
    rebuilds the session, so the deleted text is never anyone's context."""
    store = SqliteStorage(tmp_path / "s.db")
    vector = np.ones(4, dtype=np.float32) / 2
    try:
        store.insert_memory(_memory(0, "Packing list: boots.", "trip"), vector)
        with store.write():
            store.insert_memory(_memory(1, TEXTS[0], "trip"), vector)
            store.insert_memory(_memory(2, TEXTS[1], "trip"), vector)
            assert store.delete_memories("u", ["m2"]) == 1
            store.insert_memory(_memory(3, TEXTS[2], "trip"), vector)
        assert store._rows("SELECT id, context FROM memories ORDER BY id") == [
            ("m0", ""), ("m1", "Packing list: boots."), ("m3", TEXTS[0])]
        assert _doc(store, "trip") == "\n".join(["Packing list: boots.", TEXTS[0], TEXTS[2]])
    finally:
        store.close()
