"""PostgreSQL's search snapshot (``PostgresStorage.search_snapshot``): a search's reads run in one
read-only REPEATABLE READ transaction, so every arm sees the same state of the user — a write that
another replica commits while the search runs is not seen by it, and is seen by the next search —
and the user's version is read once. Inside a write the search sees that write's own rows; a
statement that fails inside a snapshot leaves the next search unharmed."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from cortadel_server.errors import StorageError
from cortadel_server.storage.base import MemoryFilters, MemoryRecord
from cortadel_server.storage.postgres import PostgresStorage
from cortadel_server.testing_postgres import scratch_database

T0 = 1_790_000_000.0
USER = "ann"
EAST = np.array([1, 0, 0, 0], dtype=np.float32)


def insert(store: PostgresStorage, memory_id: str, text: str, at: float, session: str | None = "s1") -> None:
    record = MemoryRecord(id=memory_id, user_id=USER, text=text, created_at=T0 + at, fingerprint=memory_id, session_id=session)
    store.insert_memory(record, EAST)


@pytest.fixture()
def stores() -> Iterator[tuple[PostgresStorage, PostgresStorage, PostgresStorage]]:
    """A writes; B searches with its full-text arm ranked in process, C in SQL (its threshold)."""
    url = scratch_database("snapshot")
    opened = (PostgresStorage(url, max_connections=2), PostgresStorage(url, max_connections=2, text_in_process_from=0),
              PostgresStorage(url, max_connections=2, query_timeout=0.5))
    yield opened
    for store in opened:
        store.close()


def reads(store: PostgresStorage) -> tuple[list[str], list[tuple[str, float]], list[str], list[str], int]:
    """What the arms and the head read: vector hits, full-text hits with scores, sessions matched,
    the records found, and the user's version."""
    vector = [hit.id for hit in store.vector_search(USER, EAST, MemoryFilters(), 10)]
    text = [(hit.id, hit.score) for hit in store.text_search(USER, "bread", MemoryFilters(), 10)]
    sessions = [hit.id for hit in store.session_search(USER, "rye", 10)]
    records = sorted(store.get_memories(USER, ["m0", "m1", "m2"]))
    return vector, text, sessions, records, store.user_version(USER)


@pytest.mark.parametrize("searcher", [1, 2], ids=["full text in process", "full text in SQL"])
def test_a_search_reads_one_snapshot_and_the_next_sees_the_other_replicas_commit(
    stores: tuple[PostgresStorage, PostgresStorage, PostgresStorage], searcher: int,
) -> None:
    a, store = stores[0], stores[searcher]
    insert(a, "m0", "Ann bakes bread.", 0)
    insert(a, "m1", "Tom paints fences.", 1, session=None)
    with store.search_snapshot(USER):
        before = reads(store)
        insert(a, "m2", "Ann bakes rye bread on Sundays.", 2, session="s2")  # committed meanwhile
        assert reads(store) == before  # the same snapshot: not yet
    assert before[0] == ["m0", "m1"] and [memory_id for memory_id, _ in before[1]] == ["m0"] and before[1][0][1] > 0
    assert before[2:] == ([], ["m0", "m1"], 2)  # no session holds "rye" yet; version 2 after two adds
    with store.search_snapshot(USER):
        after = reads(store)
    assert after[0] == ["m0", "m1", "m2"]
    assert [memory_id for memory_id, _ in after[1]] == ["m0", "m2"]  # the shorter row first (BM25)
    assert after[2:] == (["s2"], ["m0", "m1", "m2"], 3)


def test_inside_a_write_a_search_sees_the_writes_own_rows(
    stores: tuple[PostgresStorage, PostgresStorage, PostgresStorage],
) -> None:
    a, b, _ = stores
    insert(a, "m0", "Ann bakes bread.", 0)
    with b.write(USER):
        insert(b, "m1", "Ann bakes rye bread on Sundays.", 1)
        with b.search_snapshot(USER):
            assert [hit.id for hit in b.text_search(USER, "rye bread", MemoryFilters(), 10)] == ["m1", "m0"]
            assert b.user_version(USER) == 2
    assert a.user_version(USER) == 2


def test_a_statement_that_fails_inside_a_snapshot_leaves_the_next_search_unharmed(
    stores: tuple[PostgresStorage, PostgresStorage, PostgresStorage],
) -> None:
    a, _, c = stores
    insert(a, "m0", "Ann bakes bread.", 0)
    with pytest.raises(StorageError, match=r"^query interrupted after 0.5 s$"), c.search_snapshot(USER):
        c.text_search(USER, "bread", MemoryFilters(), 10)
        c._rows(USER, "SELECT pg_sleep(2) FROM memories WHERE user_id = %s", (USER,))  # past the statement timeout
    insert(a, "m1", "Ann bakes rye bread on Sundays.", 1)
    for _ in range(3):  # every pooled connection (two) is back, outside any transaction
        with c.search_snapshot(USER):
            assert [hit.id for hit in c.text_search(USER, "rye bread", MemoryFilters(), 10)] == ["m1", "m0"]
            assert c.user_version(USER) == 2
