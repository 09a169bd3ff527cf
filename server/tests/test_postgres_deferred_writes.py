"""PostgreSQL's writes in few round trips (storage/postgres.py ``_Open``): statements whose result
nothing waits for (a memory's insert, its history event, its session document) go with the
transaction's next round trip, its COMMIT at the latest. They stay one transaction with the rest:
a deferred statement that fails fails the write, which leaves no row and no trace in the caches;
and a writer holds its user's turn from the moment ``write(user)`` is entered, before any
statement of its own (the writer reads its clock there)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from cortadel_server.errors import StorageError
from cortadel_server.storage.base import MemoryFilters, MemoryRecord
from cortadel_server.storage.postgres import PostgresStorage
from cortadel_server.storage.sessions import SEPARATOR
from cortadel_server.testing_postgres import scratch_database

T0 = 1_790_000_000.0
USER = "ann"
EAST = np.array([1, 0, 0, 0], dtype=np.float32)
NORTH = np.array([0, 1, 0, 0], dtype=np.float32)


def record(memory_id: str, text: str, at: float, session: str | None = "s1") -> MemoryRecord:
    return MemoryRecord(id=memory_id, user_id=USER, text=text, created_at=T0 + at, fingerprint=memory_id, session_id=session)


@pytest.fixture()
def stores() -> Iterator[tuple[PostgresStorage, PostgresStorage]]:
    """Two handles on one database, as two server processes; full text ranked in process."""
    url = scratch_database("deferred")
    opened = (PostgresStorage(url, max_connections=2, text_in_process_from=0),
              PostgresStorage(url, max_connections=2, text_in_process_from=0))
    yield opened
    for store in opened:
        store.close()


def state(store: PostgresStorage) -> tuple[object, ...]:
    """What the store answers for the user: both arms (from the caches), the rows, history, sessions."""
    return (
        [(hit.id, hit.score) for hit in store.vector_search(USER, NORTH, MemoryFilters(), 10)],
        [(hit.id, hit.score) for hit in store.text_search(USER, "sourdough bread", MemoryFilters(), 10)],
        sorted(store.get_memories(USER, ["m0", "m1", "m2"])),
        store.history(USER, "m0"), store.history(USER, "m2"),
        [hit.id for hit in store.session_search(USER, "sourdough", 10)],
        store.user_version(USER),
    )


def test_a_deferred_statement_that_fails_fails_the_whole_write(stores: tuple[PostgresStorage, PostgresStorage]) -> None:
    store, other = stores
    store.insert_memory(record("m0", "Ann bakes bread.", 0), EAST)
    store.record_event(USER, "m0", "ADD", T0, {"source": "add"})
    store.insert_memory(record("m1", "Tom paints fences.", 1), EAST)
    before = state(store)  # the caches hold the user now
    with pytest.raises(StorageError, match="duplicate key"), store.write(USER):
        store.insert_memory(record("m2", "Ann bakes sourdough bread.", 2), NORTH)
        store.record_event(USER, "m2", "ADD", T0 + 2, {"source": "add"})
        store.record_event(USER, "m0", "TOUCH", T0 + 2, {"source": "add"})
        # the same id again: refused by the primary key when the COMMIT's round trip sends it
        store.insert_memory(record("m0", "Ann bakes sourdough bread.", 3), NORTH)
    assert state(store) == before
    assert state(other) == before  # the rows: nothing of the write was committed
    # and the handle writes on
    store.insert_memory(record("m2", "Ann bakes sourdough bread.", 2), NORTH)
    after = state(store)
    assert after[0][0][0] == "m2" and after[1][0][0] == "m2" and after[5] == ["s1"]
    assert after == state(other)


def test_what_a_write_deferred_is_read_back_inside_it(stores: tuple[PostgresStorage, PostgresStorage]) -> None:
    store, _ = stores
    store.insert_memory(record("m0", "Ann bakes bread.", 0), EAST)
    with store.write(USER):
        store.insert_memory(record("m2", "Ann bakes sourdough bread.", 2), NORTH)
        store.record_event(USER, "m2", "ADD", T0 + 2, {"source": "add"})
        assert [hit.id for hit in store.vector_search(USER, NORTH, MemoryFilters(), 1)] == ["m2"]
        assert [hit.id for hit in store.text_search(USER, "sourdough", MemoryFilters(), 10)] == ["m2"]
        assert [entry.event for entry in store.history(USER, "m2")] == ["ADD"]
        assert [hit.id for hit in store.session_search(USER, "sourdough", 10)] == ["s1"]


def test_the_turn_is_held_from_the_start_of_the_write(stores: tuple[PostgresStorage, PostgresStorage]) -> None:
    """The second writer waits for the first from the moment the first entered ``write(user)``,
    though the first sent no statement of its own before it let go."""
    first, second = stores
    entered, done = threading.Event(), threading.Event()
    waited: list[float] = []

    def take_turn_second() -> None:
        entered.wait(10)
        started = time.monotonic()
        with second.write(USER):
            waited.append(time.monotonic() - started)
        done.set()

    thread = threading.Thread(target=take_turn_second)
    thread.start()
    with first.write(USER):
        entered.set()
        assert not done.wait(0.4)  # still waiting for the turn
    thread.join(10)
    assert len(waited) == 1 and waited[0] >= 0.3


def test_a_writes_memories_join_their_session_documents_once_at_its_end(stores: tuple[PostgresStorage, PostgresStorage]) -> None:
    """One statement a session document and write: each append re-indexed the whole document."""
    store, other = stores
    store.insert_memory(record("m0", "Ann bakes bread.", 0), EAST)
    with store.write(USER):
        for n, (text, session) in enumerate((("Ann bakes rye.", "s1"), ("Tom paints fences.", "s2"), ("Ann bakes spelt.", "s1")), 1):
            store.insert_memory(record(f"m{n}", text, n, session), EAST)
        tx = store._open_tx()
        assert tx is not None and tx.pending and not any(b"session_docs" in sql for sql, _, _ in tx.pending)
        assert [hit.id for hit in store.session_search(USER, "spelt", 10)] == ["s1"]  # the write's own, sent first
        store.insert_memory(record("m4", "Ann bakes barley.", 4), EAST)
    assert other.dump_sessions(USER) == [
        ("s1", SEPARATOR.join(["Ann bakes bread.", "Ann bakes rye.", "Ann bakes spelt.", "Ann bakes barley."])),
        ("s2", "Tom paints fences."),
    ]
