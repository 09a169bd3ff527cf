"""SQLite's search snapshot (``SqliteStorage.search_snapshot``): a search's arms read one snapshot,
and the user's version and the full-text totals are read once for as long as no other connection
commits — a commit by another process (here: another handle on the same file) is seen by the next
search, with BM25 scores computed on the new totals, exactly as FTS5 computes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cortadel_server.storage.base import MemoryFilters, MemoryRecord
from cortadel_server.storage.sqlite import SqliteStorage

T0 = 1_790_000_000.0


def _insert(store: SqliteStorage, memory_id: str, text: str, at: float) -> None:
    vector = np.asarray([1, 0, 0, 0], dtype=np.float32)
    store.insert_memory(MemoryRecord(id=memory_id, user_id="ann", text=text, created_at=T0 + at, fingerprint=memory_id), vector)


def _ranked(store: SqliteStorage, query: str) -> list[tuple[str, float]]:
    return [(s.id, s.score) for s in store.text_search("ann", query, MemoryFilters(), 10)]


def _fts5(store: SqliteStorage, query: str) -> list[tuple[str, float]]:
    return [(s.id, s.score) for s in store._fts5_text_search("ann", query, MemoryFilters(), 10, context_weight=0.3)]


def test_a_search_reads_one_snapshot_and_the_next_sees_another_process_commit(tmp_path: Path) -> None:
    store = SqliteStorage(tmp_path / "snap.db", index_after_searches=1)
    other = SqliteStorage(tmp_path / "snap.db")  # another process on the same file
    try:
        for i, text in enumerate(["Ann bakes bread.", "Ann bakes rye bread on Sundays.", "Tom paints fences."]):
            _insert(store, f"m{i}", text, i)
        store._term_index("ann")  # the in-process index ranks, with the totals read through FTS5
        with store.search_snapshot("ann"):
            before = _ranked(store, "bakes bread")
            version = store.user_version("ann")
        assert [memory_id for memory_id, _ in before] == ["m0", "m1"]
        assert before == _fts5(store, "bakes bread")

        with store.search_snapshot("ann"):
            assert store._search_terms("ann") is not None  # the index answers, not FTS5
            _insert(other, "m3", "Ann bakes bread for Tom.", 3)  # committed in between
            assert store.user_version("ann") == version  # the snapshot's, read once
            assert _ranked(store, "bakes bread") == before  # the same snapshot: not yet
            vector_hits = store.vector_search("ann", np.asarray([1, 0, 0, 0], dtype=np.float32), MemoryFilters(), 10)
            assert sorted(s.id for s in vector_hits) == ["m0", "m1", "m2"]

        store._term_index("ann")  # loaded again at the new version, as the loader thread would
        with store.search_snapshot("ann"):
            assert store.user_version("ann") == other.user_version("ann") == version + 1
            assert store._search_terms("ann") is not None
            after = _ranked(store, "bakes bread")
            vector_hits = store.vector_search("ann", np.asarray([1, 0, 0, 0], dtype=np.float32), MemoryFilters(), 10)
        assert sorted(s.id for s in vector_hits) == ["m0", "m1", "m2", "m3"]
        assert [memory_id for memory_id, _ in after] == ["m0", "m3", "m1"]
        # Four rows and more tokens in the table: every score moved, to what FTS5 gives now.
        assert after == _fts5(store, "bakes bread")
        assert dict(after)["m0"] != dict(before)["m0"]
    finally:
        other.close()
        store.close()


def test_a_search_inside_a_write_sees_the_write_and_the_snapshot_ends_with_the_block(tmp_path: Path) -> None:
    store = SqliteStorage(tmp_path / "snap.db")
    try:
        _insert(store, "m0", "Ann bakes bread.", 0)
        with store.write("ann"):
            _insert(store, "m1", "Ann bakes bread on Sundays.", 1)
            with store.search_snapshot("ann"):  # the write's own view, its rows included
                assert [memory_id for memory_id, _ in _ranked(store, "Sundays")] == ["m1"]
        with store.search_snapshot("ann"):
            pass
        assert store._conn().getautocommit()  # no read transaction left open on the connection
        assert store.user_version("ann") == 2
    finally:
        store.close()
