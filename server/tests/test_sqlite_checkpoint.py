"""SQLite's checkpoints: the WAL is copied back into the database by the loader thread, off the
commit that crosses ``CHECKPOINT_PAGES`` (``SqliteStorage._wal_grew``), and a commit checkpoints
itself only past ``CHECKPOINT_INLINE_PAGES``: the WAL starts over only when a write begins after a
whole copy, and writes one after another never leave the loader that moment."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import apsw
from support.catch_up import USER, record, sentence, unit

from cortadel_server.storage.base import MemoryFilters
from cortadel_server.storage.sqlite import CHECKPOINT_INLINE_PAGES, CHECKPOINT_PAGES, SqliteStorage

#: a WAL frame: its header and one page
FRAME = 24 + 4096


def wal_pages(path: Path) -> int:
    """The frames the WAL file has room for: how far it ever grew since it was last truncated."""
    wal = Path(f"{path}-wal")
    return (wal.stat().st_size - 32) // FRAME if wal.exists() else 0


def test_writes_one_after_another_keep_the_wal_bounded_and_lose_no_row(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.db"
    store = SqliteStorage(path)
    rng = random.Random(5)
    grown = []
    try:
        for i in range(900):
            store.insert_memory(record(f"m{i}", sentence(rng), f"s{i // 40}", 1_790_000_000.0 + i), unit(rng))
            grown.append(wal_pages(path))
        store._term_loader.submit(lambda: None).result()
    finally:
        store.close()
    # The writes filled the WAL past the loader's mark many times over ...
    assert grown[-1] > CHECKPOINT_PAGES
    # ... and it stopped growing a write past the commit's own mark: it started over there, for
    # the last 100 writes and more. (Where a cycle ends, a write sooner or later, depends on when
    # the loader's copy finished: the length the file settles at may move by a write.)
    per_write = max(b - a for a, b in itertools.pairwise(grown))
    assert CHECKPOINT_INLINE_PAGES <= max(grown) <= CHECKPOINT_INLINE_PAGES + per_write
    reached = next(i for i, pages in enumerate(grown) if pages >= CHECKPOINT_INLINE_PAGES)
    assert reached < len(grown) - 100
    fresh = SqliteStorage(path)
    try:
        assert fresh._rows("PRAGMA integrity_check") == [("ok",)]
        assert fresh.list_memories(USER, MemoryFilters(), offset=0, limit=1)[1] == 900
    finally:
        fresh.close()
    # Closing the last connection copied the rest and removed the WAL; the file alone holds every row.
    assert not Path(f"{path}-wal").exists()
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    assert conn.execute("SELECT count(*) FROM memories").fetchall() == [(900,)]
    conn.close()


def test_a_checkpoint_that_cannot_be_asked_for_fails_no_commit(tmp_path: Path) -> None:
    """The hook runs after SQLite committed: whatever it raised, SQLite reported as the commit's
    error, for a write that had taken place. With the loader gone (as while the store closes), the
    writes past the mark still succeed, every one of them, and so do those that fill a user's
    vector matrix (the room made ahead of them is asked of the loader too)."""
    path = tmp_path / "checkpoint.db"
    store = SqliteStorage(path)
    rng = random.Random(6)
    try:
        for i in range(10):
            store.insert_memory(record(f"m{i}", sentence(rng), f"s{i // 40}", 1_790_000_000.0 + i), unit(rng))
        assert len(store.vector_search(USER, unit(rng), MemoryFilters(), 20)) == 10  # the user's vectors cached
        store._term_loader.shutdown()
        for i in range(10, 120):
            store.insert_memory(record(f"m{i}", sentence(rng), f"s{i // 40}", 1_790_000_000.0 + i), unit(rng))
        assert wal_pages(path) > CHECKPOINT_PAGES  # past the mark: the loader was asked for, and could not be
        assert store.list_memories(USER, MemoryFilters(), offset=0, limit=1)[1] == 120
        assert len(store.vector_search(USER, unit(rng), MemoryFilters(), 200)) == 120  # grown by the writes
    finally:
        store.close()
