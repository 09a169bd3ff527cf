"""The PostgreSQL full-text arms read the rows of their user only, however many users share the table
(pg_migrations 0008, ``user_lexemes``): the plan PostgreSQL runs, on a store of many users with
fresh statistics. A GIN index on ``search`` alone holds every user's rows: at 1,000 users × 1,000
memories the planner AND-ed it with the user's key range and read 46,663 rows for a two-word
query of one user holding 1,000 (docs/scaling.md)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from cortadel_server.storage.postgres import PostgresStorage, ranked_statement
from cortadel_server.testing_postgres import scratch_database

USERS = 200
PER_USER = 200
SESSIONS_PER_USER = 10
VOCABULARY = [f"word{i}" for i in range(3000)]
USER = "user-0007"
# word5 is in about one row in three, word14 and word20 in about one in twenty, across all users
QUERIES = ["word14 word20", "word5", "word300"]


def sentence(rng: random.Random, words: int) -> str:
    """Words drawn with Zipf-like frequencies, as natural text has them."""
    return " ".join(VOCABULARY[int(rng.paretovariate(1.0)) % len(VOCABULARY)] for _ in range(words))


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    url = scratch_database("textplan")
    PostgresStorage(url, max_connections=1).close()  # migrated
    rng = random.Random(7)
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.cursor().copy("COPY memories(id, user_id, text, fingerprint, created_at) FROM STDIN") as copy:
            for u in range(USERS):
                for m in range(PER_USER):
                    copy.write_row((f"m{m}", f"user-{u:04d}", sentence(rng, 10), f"fp{m}", 1.79e9 + m))
        with conn.cursor().copy("COPY session_docs(user_id, session_id, text) FROM STDIN") as copy:
            for u in range(USERS):
                for s in range(SESSIONS_PER_USER):
                    copy.write_row((f"user-{u:04d}", f"s{s}", sentence(rng, 60)))
        conn.execute("VACUUM ANALYZE memories")
        conn.execute("VACUUM ANALYZE session_docs")
    yield url


def nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The plan's nodes, at any depth."""
    yield node
    for child in node.get("Plans", []):
        yield from nodes(child)


def scans(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The plan's index scans, at any depth."""
    return (n for n in nodes(node) if "Index Name" in n)


def executed_plan(url: str, statement: tuple[str, list[Any]]) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        row = conn.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + statement[0], statement[1]).fetchone()
    assert row is not None
    return dict(row[0][0]["Plan"])


def matching_rows(url: str, table: str, query: str, *, everyone: bool) -> int:
    """Rows of ``table`` holding a word of ``query``: the user's, or every user's."""
    sql = f"SELECT count(*) FROM {table} WHERE search @@ to_tsquery('cortadel', %s)"
    params = [" | ".join(query.split())]
    if not everyone:
        sql += " AND user_id = %s"
        params.append(USER)
    with psycopg.connect(url) as conn:
        row = conn.execute(sql, params).fetchone()
    assert row is not None
    return int(row[0])


@pytest.mark.parametrize("query", QUERIES)
def test_memory_text_search_reads_only_the_users_rows(url: str, query: str) -> None:
    statement = ranked_statement("memories", "id", USER, query, "d.user_id = %s", [USER], 10, [0.0, 0.0, 0.5, 1.0])
    assert statement is not None
    plan = executed_plan(url, statement)
    mine = matching_rows(url, "memories", query, everyone=False)
    if query != "word300":  # the test means something only if other users hold the words too
        assert matching_rows(url, "memories", query, everyone=True) > 10 * PER_USER
    used = list(scans(plan))
    assert used, plan
    for scan in used:
        # an index scan of the user's key range may give all their rows; a text index, only the matches
        limit = mine if scan["Index Name"] == "memories_user_lexemes" else PER_USER
        assert scan["Actual Rows"] <= limit, (scan["Index Name"], scan["Actual Rows"], limit)
    assert any(scan["Index Name"] == "memories_user_lexemes" for scan in used) or mine == 0
    # each word's document frequency is one key lookup, not a filter over every lexeme of the user
    stats = [n for n in nodes(plan) if n.get("Relation Name") == "term_stats"]
    assert stats, plan
    for lookup in stats:
        assert lookup["Actual Rows"] <= 1 and lookup.get("Rows Removed by Filter", 0) == 0, lookup


@pytest.mark.parametrize("query", QUERIES)
def test_session_search_reads_only_the_users_documents(url: str, query: str) -> None:
    """Found by the user alone, without keyed lexemes (pg_migrations 0011): an index scan of their
    documents, never a scan of the table."""
    statement = ranked_statement("session_docs", "session_id", USER, query, "d.user_id = %s", [USER], 10, [1.0, 0.0, 0.0, 0.0])
    assert statement is not None
    plan = executed_plan(url, statement)
    read = [n for n in nodes(plan) if n.get("Relation Name") == "session_docs"]
    assert read and all("Index Name" in n for n in read), read
    for scan in read:
        assert scan["Actual Rows"] + scan.get("Rows Removed by Filter", 0) <= SESSIONS_PER_USER, (scan["Index Name"], scan["Actual Rows"])


def test_a_prepared_statement_reads_the_query_once_not_at_every_row(url: str) -> None:
    """The pool's connections prepare a statement run often (psycopg), and PostgreSQL then may plan
    it once for any parameters: to_tsquery(%s) in a row filter was evaluated at every row (146 ms
    for 6,933 rows of a sentence at 10,000 memories, against 25 ms planned for the values)."""
    query = "Ines is learning beekeeping with a coach and practises word5 on Wednesdays"
    statement = ranked_statement("memories", "id", USER, query, "d.user_id = %s", [USER], 8, [0.0, 0.0, 0.3, 1.0])
    assert statement is not None
    text, params = statement
    parts = text.split("%s")
    numbered = parts[0] + "".join(f"${i}{part}" for i, part in enumerate(parts[1:], 1))  # PREPARE's placeholders
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET plan_cache_mode = force_generic_plan")
        conn.execute(sql.SQL("PREPARE ranked AS {}").format(sql.SQL(numbered)))
        row = conn.execute(sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE ranked ({})").format(
            sql.SQL(", ").join(map(sql.Literal, params)))).fetchone()
        assert row is not None
        found = conn.execute("SELECT count(*) FROM memories WHERE user_id = %s AND search @@ to_tsquery('cortadel', %s)",
                             [USER, " | ".join(params[1])]).fetchone()  # params[1]: the query's words
    plan = row[0][0]["Plan"]
    assert found is not None and found[0] > 20  # rows enough for a per-row cost to matter
    row_filters = [n.get("Filter", "") + n.get("Recheck Cond", "") for n in nodes(plan) if n.get("Actual Loops", 0) > 0
                   and n["Node Type"] in ("Bitmap Heap Scan", "Index Scan", "Seq Scan") and n.get("Relation Name") == "memories"]
    assert row_filters, plan
    for condition in row_filters:
        assert "to_tsquery" not in condition and "to_tsvector" not in condition, condition
