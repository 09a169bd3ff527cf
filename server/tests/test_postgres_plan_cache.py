"""Reads of one user that stay cheap when the statistics are stale. psycopg prepares a statement at
its fifth run, and PostgreSQL then keeps the generic plan it made with that moment's statistics
until the table is analysed again: a full-text lookup first run while its user looked small went
on walking every row of the user once they had thousands (4.5 ms a lookup at 2,000 rows, half of a
batch's time; docs/scaling.md), and the read of an app's last memory, at every add, sorted them
all. Autovacuum is off here, as it is between two of its runs."""

from __future__ import annotations

from collections.abc import Iterable

import psycopg

from cortadel_server.storage.filters import MemoryFilters
from cortadel_server.storage.postgres import PostgresStorage
from cortadel_server.testing_postgres import scratch_database

USER = "grower"


def _write(url: str, rows: Iterable[tuple[str, str, str]]) -> None:
    """Store (memory id, user, text) rows, and move the user's version on as a write of the backend does."""
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.cursor().copy("COPY memories(id, user_id, text, fingerprint, created_at) FROM STDIN") as copy:
            for n, (memory_id, user, text) in enumerate(rows):
                copy.write_row((memory_id, user, text, memory_id, 1.79e9 + n))
        conn.execute(
            "INSERT INTO user_versions(user_id, version) VALUES (%s, 1) "
            "ON CONFLICT(user_id) DO UPDATE SET version = user_versions.version + 1",
            (USER,),
        )


def _memory_rows_read(store: PostgresStorage) -> int:
    """The rows of ``memories`` and entries of its indexes the open transaction read so far."""
    ((read,),) = store._rows(
        USER,
        "SELECT pg_stat_get_xact_tuples_returned('memories'::regclass) + pg_stat_get_xact_tuples_fetched('memories'::regclass) "
        "+ (SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid)) FROM pg_index WHERE indrelid = 'memories'::regclass)",
    )
    return int(read)


def _store_of_small_users(others_app: str | None = None) -> str:
    """A store of many small users (writing through ``others_app``), analysed: to the planner, any
    one user holds a row or two."""
    url = scratch_database("plancache")
    PostgresStorage(url, max_connections=1).close()  # migrated
    _write(url, [*((f"h{m}", USER, f"the heron {m} waded in the shallows") for m in range(5)),
                 *((f"o{u}", f"other-{u}", f"an owl {u} hooted") for u in range(300))])
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE memories SET (autovacuum_enabled = false)")
        conn.execute("UPDATE memories SET app_name = %s WHERE user_id <> %s", (others_app, USER))
        conn.execute("ANALYZE memories")
    return url


def test_a_lookup_first_run_while_its_user_looked_small_reads_only_its_matches_once_they_have_thousands() -> None:
    url = _store_of_small_users()
    store = PostgresStorage(url, max_connections=1)
    try:
        for _ in range(10):  # prepared at the fifth run, a generic plan from the sixth on
            assert store.text_search(USER, "zebra", MemoryFilters(), 10) == []
        _write(url, [*((f"m{m}", USER, f"a common sentence number {m} about the weather") for m in range(2500)),
                     ("zebra", USER, "the zebra grazed at noon")])
        # ranked in process from 2,000 rows: this first lookup loads the user's rows
        assert [hit.id for hit in store.text_search(USER, "zebra", MemoryFilters(), 10)] == ["zebra"]
        with store.search_snapshot(USER):
            before = _memory_rows_read(store)
            found = store.text_search(USER, "zebra grazed", MemoryFilters(), 10)
            read = _memory_rows_read(store) - before
    finally:
        store.close()
    assert [hit.id for hit in found] == ["zebra"]
    # With the plan made for a small user: 2,506 (every row of the user, through the user's index).
    assert read <= 10, f"the lookup read {read} rows and index entries of memories for one match"


def test_an_apps_last_memory_is_read_from_the_index_in_order_whatever_the_statistics_say() -> None:
    url = _store_of_small_users(others_app="notes")  # few rows without an app, to the planner
    _write(url, [(f"m{m}", USER, f"a common sentence number {m} about the weather") for m in range(2500)])
    store = PostgresStorage(url, max_connections=1)
    try:
        with store.search_snapshot(USER):
            before = _memory_rows_read(store)
            last = store.last_written(USER, None)
            read = _memory_rows_read(store) - before
    finally:
        store.close()
    assert last is not None and last.id == "m2499"  # created last
    # Sorting every row of the user the index gave: 2,505.
    assert read <= 2, f"reading the last memory read {read} rows and index entries of memories"
