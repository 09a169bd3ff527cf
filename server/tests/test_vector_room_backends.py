"""Both backends grow a user's cached vector matrix ahead of the writes that fill it: once a write
leaves the matrix seven eighths full, a thread of the backend's own (SQLite's loader, PostgreSQL's
room maker) makes a quarter more room, and the writes after it fill that room in place, the
answers those of a store that reads the user afresh. Unit tests of the mechanism are in
test_vector_room.py."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.catch_up import T0, USER, record, sentence, unit, write_the_first_rows

from cortadel_server.storage.base import MemoryFilters
from cortadel_server.storage.postgres import PostgresStorage
from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.storage.vector_cache import UserVectors
from cortadel_server.testing_postgres import scratch_database


def open_store(kind: str, where: str) -> SqliteStorage | PostgresStorage:
    return SqliteStorage(where) if kind == "sqlite" else PostgresStorage(where, max_connections=2)


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    return request.param, str(tmp_path / "room.db") if request.param == "sqlite" else scratch_database("room")


@pytest.fixture()
def store(where: tuple[str, str]) -> Iterator[SqliteStorage | PostgresStorage]:
    opened = open_store(*where)
    yield opened
    opened.close()


def cached(store: SqliteStorage | PostgresStorage) -> UserVectors:
    entry = store._vectors.get(USER)
    assert entry is not None
    return entry


def test_the_backend_makes_room_off_the_writes_and_they_fill_it_in_place(
    where: tuple[str, str], store: SqliteStorage | PostgresStorage,
) -> None:
    rng = random.Random(11)
    write_the_first_rows(store, rng)  # 151 rows
    probes = [unit(rng) for _ in range(4)]
    store.vector_search(USER, probes[0], MemoryFilters(), 10)  # the user's vectors are read and cached
    entry = cached(store)
    assert (entry.n, len(entry.rowids)) == (151, 188)  # a whole read leaves a quarter more

    growths = []
    for i in range(150):  # to 301 rows
        capacity, matrix = len(entry.rowids), entry.matrix
        store.insert_memory(record(f"n{i}", sentence(rng), None, T0 + 1_000 + i), unit(rng))
        deadline = time.monotonic() + 10
        while entry.room_asked and time.monotonic() < deadline:  # the backend's thread at work
            time.sleep(0.01)
        if len(entry.rowids) != capacity:
            growths.append((entry.n, capacity, len(entry.rowids)))
        else:
            assert entry.matrix is matrix  # filled in place
    # Grown at seven eighths (165 of 188, 206 of 235, 257 of 293), by the thread, before a write needed it.
    assert growths == [(165, 188, 235), (206, 235, 293), (257, 293, 366)]
    assert cached(store) is entry and entry.n == 301

    fresh = open_store(*where)
    try:
        for probe in probes:
            found = store.vector_search(USER, probe, MemoryFilters(), 25)
            assert found == fresh.vector_search(USER, probe, MemoryFilters(), 25)
            assert len(found) == 25
    finally:
        fresh.close()
