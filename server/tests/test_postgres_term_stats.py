"""The PostgreSQL full-text arm's term statistics (``term_stats``, pg_migrations 0004): after every
kind of write they equal a count made from the rows themselves, so the ranking never drifts."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from cortadel_server.storage.base import MemoryFilters, MemoryRecord
from cortadel_server.storage.postgres import PostgresStorage
from cortadel_server.testing_postgres import scratch_database

T0 = 1_790_000_000.0
#: term_stats as the rows give it: per user and table, each lexeme's row count and ('') the row count
RECOUNT = """
    SELECT user_id, doc_table, lexeme, count(*) FROM (
        SELECT user_id, 'memories' AS doc_table, search FROM memories
        UNION ALL SELECT user_id, 'session_docs', search FROM session_docs) d,
        unnest(array_prepend('', tsvector_to_array(search))) lexeme
    GROUP BY 1, 2, 3"""


@pytest.fixture()
def url() -> str:
    return scratch_database("terms")


@pytest.fixture()
def store(url: str) -> Iterator[PostgresStorage]:
    opened = PostgresStorage(url, max_connections=2)
    yield opened
    opened.close()


def stats(url: str) -> dict[tuple[str, str, str], int]:
    with psycopg.connect(url) as conn:
        kept = conn.execute("SELECT user_id, doc_table, lexeme, df FROM term_stats WHERE df <> 0").fetchall()
        counted = conn.execute(RECOUNT).fetchall()
    assert sorted(kept) == sorted(counted)
    return {(u, t, lexeme): df for u, t, lexeme, df in kept}


def add(store: PostgresStorage, memory_id: str, text: str, user: str = "u1", session: str | None = None) -> None:
    record = MemoryRecord(id=memory_id, user_id=user, text=text, created_at=T0 + len(memory_id), fingerprint=f"fp-{memory_id}",
                          session_id=session)
    store.insert_memory(record, np.ones(4, dtype=np.float32) / 2)


def test_term_counts_follow_inserts_edits_deletes_and_erasure(store: PostgresStorage, url: str) -> None:
    add(store, "m1", "Ana loves green tea.", session="s1")
    add(store, "m2", "Bob loves black coffee.", session="s1")  # its context is m1's text
    add(store, "m3", "Ana loves hiking.", user="u2")
    counted = stats(url)
    assert counted[("u1", "memories", "")] == 2 and counted[("u2", "memories", "")] == 1
    assert counted[("u1", "memories", "love")] == 2 and counted[("u2", "memories", "love")] == 1
    assert counted[("u1", "memories", "tea")] == 2  # m1's text and m2's context
    assert counted[("u1", "session_docs", "coffe")] == 1

    store.update_memory("u1", "m1", text="Ana loves oolong tea.")
    counted = stats(url)
    assert ("u1", "memories", "green") not in counted and counted[("u1", "memories", "oolong")] == 2
    store.update_memory("u1", "m2", extraction_status="done")  # no text change: the counts stay
    assert stats(url) == counted

    assert store.delete_memories("u1", ["m2"]) == 1
    counted = stats(url)
    assert counted[("u1", "memories", "")] == 1 and ("u1", "memories", "coffe") not in counted
    assert counted[("u1", "memories", "tea")] == 1

    store.delete_user("u1")
    assert {key[0] for key in stats(url)} == {"u2"}
    assert [hit.id for hit in store.text_search("u2", "hiking", MemoryFilters(), 5)] == ["m3"]


def test_the_migration_counts_rows_written_before_it(url: str) -> None:
    """A database migrated before term_stats existed is counted in full by the migration step."""
    first = PostgresStorage(url, max_connections=2)
    add(first, "m1", "Caroline teaches chess in Oslo.", session="s1")
    add(first, "m2", "Caroline quit chess.", session="s1")
    first.close()
    with psycopg.connect(url, autocommit=True) as conn:  # as if migrated up to 0003 only
        conn.execute("DROP TABLE term_stats; DROP FUNCTION count_terms() CASCADE")
        conn.execute("DELETE FROM schema_migrations WHERE name = '0004_term_stats'")
    again = PostgresStorage(url, max_connections=2)
    try:
        counted = stats(url)
        assert counted[("u1", "memories", "chess")] == 2 and counted[("u1", "session_docs", "")] == 1
        assert [hit.id for hit in again.text_search("u1", "Oslo chess", MemoryFilters(), 5)] == ["m1", "m2"]
    finally:
        again.close()
