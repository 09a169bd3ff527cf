"""The PostgreSQL full-text arm's term statistics (``term_stats``, pg_migrations 0004 and 0006): after
every kind of write they equal a count made from the rows themselves, so the ranking never drifts."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from cortadel_server.storage.base import MemoryFilters, MemoryRecord
from cortadel_server.storage.pg_migrations import MIGRATIONS
from cortadel_server.storage.postgres import PostgresStorage
from cortadel_server.testing_postgres import scratch_database

T0 = 1_790_000_000.0
#: term_stats as the rows give it: per user and table, each lexeme's row count and ('') the row count
#: with the rows' tokens (each position of a search vector one)
RECOUNT = """
    SELECT user_id, doc_table, lexeme, count(*),
           coalesce(sum((SELECT count(*) FROM unnest(search) u, unnest(u.positions))) FILTER (WHERE lexeme = ''), 0)
    FROM (
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
    """Each lexeme's row count, after checking every count and token total against the rows."""
    with psycopg.connect(url) as conn:
        kept = conn.execute("SELECT user_id, doc_table, lexeme, df, tokens FROM term_stats WHERE df <> 0").fetchall()
        counted = conn.execute(RECOUNT).fetchall()
    assert sorted(kept) == sorted(counted)
    return {(u, t, lexeme): df for u, t, lexeme, df, _ in kept}


def tokens(url: str, user: str, table: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT tokens FROM term_stats WHERE user_id = %s AND doc_table = %s AND lexeme = ''", (user, table)
        ).fetchone()
    assert row is not None
    return int(row[0])


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
    # m1: 4 tokens; m2: 4 of its own and m1's 4 as context; the session document: 8
    assert (tokens(url, "u1", "memories"), tokens(url, "u1", "session_docs")) == (12, 8)

    store.update_memory("u1", "m1", text="Ana loves oolong tea, hot.")
    counted = stats(url)
    assert ("u1", "memories", "green") not in counted and counted[("u1", "memories", "oolong")] == 2
    assert (tokens(url, "u1", "memories"), tokens(url, "u1", "session_docs")) == (14, 9)
    store.update_memory("u1", "m2", extraction_status="done")  # no text change: the counts stay
    assert stats(url) == counted

    assert store.delete_memories("u1", ["m2"]) == 1
    counted = stats(url)
    assert counted[("u1", "memories", "")] == 1 and ("u1", "memories", "coffe") not in counted
    assert counted[("u1", "memories", "tea")] == 1

    store.delete_user("u1")
    assert {key[0] for key in stats(url)} == {"u2"}
    assert [hit.id for hit in store.text_search("u2", "hiking", MemoryFilters(), 5)] == ["m3"]


@pytest.mark.parametrize("written_after", ["0003_memory_recalls", "0005_citus_keys"])
def test_the_migrations_count_rows_written_before_them(url: str, written_after: str) -> None:
    """Rows written before term_stats existed (0004), or before its token totals and today's tokens
    (0006), are counted in full, and searched, once the server migrates the database."""
    names = [step.name for step in MIGRATIONS]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        conn.execute("CREATE TABLE schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL)")
        for step in MIGRATIONS[: names.index(written_after) + 1]:
            conn.execute(step.sql.encode())
            conn.execute("INSERT INTO schema_migrations(name, applied_at) VALUES (%s, now())", (step.name,))
        for key, text, context in [("m1", "Caroline teaches chess in Oslo.", ""), ("m2", "Caroline quit chess.", "x")]:
            conn.execute(
                "INSERT INTO memories(id, user_id, text, fingerprint, created_at, session_id, context) "
                "VALUES (%s, 'u1', %s, %s, %s, 's1', %s)",
                (key, text, f"fp-{key}", T0 + len(key), context),
            )
        conn.execute("INSERT INTO session_docs(user_id, session_id, text) VALUES ('u1', 's1', 'Café self-care')")
    store = PostgresStorage(url, max_connections=2)
    try:
        counted = stats(url)
        assert counted[("u1", "memories", "chess")] == 2 and counted[("u1", "session_docs", "")] == 1
        assert (tokens(url, "u1", "memories"), tokens(url, "u1", "session_docs")) == (9, 3)
        assert [hit.id for hit in store.text_search("u1", "Oslo chess", MemoryFilters(), 5)] == ["m1", "m2"]
        assert [hit.id for hit in store.session_search("u1", "cafe", 5)] == ["s1"]
    finally:
        store.close()
