"""The SQL audit (Citus readiness, issue #14): every statement the PostgreSQL backend sent during
this test session that reads or writes a user's data names the user (a ``user_id`` predicate per
user table it touches), so on Citus each one routes to the shard of one user.

The statements come from PostgreSQL's own log (``log_statement = all``, turned on by conftest for
the PostgreSQL run, testing_postgres.record_statements), not from a hook in the backend: it holds
every statement of every server process the suite started, replicas and CLI commands included,
whatever code path sent it, and the product carries no test-only code. conftest runs this module
last, so it audits the whole session; run alone it has nothing to read and skips.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from cortadel_server.storage.overview import TRANSFER_USERS, USER_STATES
from cortadel_server.storage.postgres import PostgresStorage
from cortadel_server.testing_postgres import LOG_LINE_PREFIX, record_statements, scratch_database

#: the backend's application_name (storage/postgres.py): statements of tests' own psql calls are not audited
APPLICATION = "cortadel"
#: tables with a user_id that are not distributed by it: the job queue every replica claims from
#: stays one table on the Citus coordinator (docs/scaling.md)
SHARED_TABLES = {"jobs"}
#: statements that read or write every user's rows on purpose (maintenance; on Citus they fan out
#: to every shard), each by its whole text
CROSS_USER = {
    "SELECT count(*) FROM memories WHERE embedding IS NULL": "the health check's count of rows still to embed",
    "SELECT count(*) FROM memories": "the memory count of the health check and metrics",
    "SELECT count(*) FROM memories WHERE rowid > $1": "reindex progress",
    "SELECT user_id, id, text FROM memories WHERE rowid > $1 ORDER BY rowid LIMIT $2": "reindex: the next rows",
    "SELECT user_id, id, text FROM memories WHERE embedding IS NULL ORDER BY rowid LIMIT $1": "rows still to embed",
    "UPDATE user_versions SET version = version + 1": "a finished reindex outdates every user's cache",
    USER_STATES: "the dashboard's user list",
    TRANSFER_USERS: "export and migrate of every user: the list of users to walk",
}

_RECORD = re.compile(r"^" + re.escape(LOG_LINE_PREFIX).replace("%d", r"(?P<db>[^|]*)").replace("%a", r"(?P<app>[^>]*)"))
_STATEMENT = re.compile(r"^LOG:  (?:statement|execute [^:]+): (?P<sql>.*)", re.DOTALL)
_TOUCHES = re.compile(r"\b(?:FROM|JOIN|UPDATE|INTO)\s+(\w+)", re.IGNORECASE)
_NAMES_USER = re.compile(
    r"\b(?:\w+\.)?user_id\s*=\s*(?:\$\d+|ANY\(\$\d+|\w+\.user_id)"  # a bound user, or a join on it
    r"|\bINSERT\s+INTO\s+\w+\s*\([^)]*\buser_id\b",  # a row written with its user
    re.IGNORECASE,
)
_DATA = re.compile(r"^\s*(?:SELECT|INSERT|UPDATE|DELETE|WITH|COPY|MERGE)\b", re.IGNORECASE)


def statements(log: Path, application: str = APPLICATION) -> Iterator[str]:
    """The text of every statement ``application`` sent, from a log written with LOG_LINE_PREFIX
    (a record's further lines start with a tab)."""
    record: list[str] = []
    for line in [*log.read_text(encoding="utf-8", errors="replace").splitlines(), "<<end|>> "]:
        if line.startswith("\t") and record:
            record.append(line[1:])
            continue
        if record:
            found = _STATEMENT.match("\n".join(record))
            if found:
                yield found["sql"]
        head = _RECORD.match(line)
        record = [line[head.end():]] if head and head["app"] == application else []


def user_tables() -> set[str]:
    """Every table with a user_id column in a freshly migrated database, but the shared ones."""
    url = scratch_database("audit")
    PostgresStorage(url, max_connections=1).close()
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'user_id' AND table_schema = 'public'"
        ).fetchall()
    return {name for (name,) in rows} - SHARED_TABLES


def unrouted(sql: str, tables: set[str]) -> bool:
    """Whether ``sql`` touches a user table more often than it names a user: one predicate (or
    written user_id column) per reference, so a subquery or join that forgets it is caught too."""
    if not _DATA.match(sql) or " ".join(sql.split()) in CROSS_USER:
        return False
    references = sum(1 for table in _TOUCHES.findall(sql) if table.lower() in tables)
    return references > len(_NAMES_USER.findall(sql))


TABLES = {"memories", "entities", "memory_entities", "user_versions"}


@pytest.mark.parametrize(("sql", "flagged"), [
    ("SELECT id FROM memories WHERE user_id = $1 AND id = $2", False),
    ("SELECT id FROM memories WHERE id = $1", True),
    ("UPDATE memories SET context = $1 WHERE rowid = $2", True),
    ("DELETE FROM memories WHERE user_id = $1 AND id = ANY($2::text[])", False),
    ("INSERT INTO memories(id, user_id, text) VALUES ($1, $2, $3)", False),
    ("INSERT INTO user_versions(user_id, version) VALUES ($1, 1) ON CONFLICT(user_id) DO UPDATE SET version = 2", False),
    ("SELECT m.id FROM memory_entities me JOIN memories m ON m.id = me.memory_id WHERE me.user_id = $1", True),
    ("SELECT m.id FROM memory_entities me JOIN memories m ON m.user_id = me.user_id AND m.id = me.memory_id WHERE me.user_id = $1",
     False),
    ("WITH n AS (SELECT count(*) FROM memories) SELECT id FROM memories d WHERE d.user_id = $1", True),
    ("SELECT value FROM meta WHERE key = $1", False),
    ("CREATE INDEX memories_user ON memories(user_id)", False),
    ("SELECT count(*) FROM memories WHERE embedding IS NULL", False),  # allowed: CROSS_USER
    ("SELECT count(*) FROM memories WHERE state = $1", True),  # not a CROSS_USER statement, only like one
])
def test_the_audit_flags_a_statement_that_names_no_user(sql: str, flagged: bool) -> None:
    assert unrouted(sql, TABLES) is flagged


def test_statements_are_read_whole_from_the_log(tmp_path: Path) -> None:
    log = tmp_path / "postgresql.log"
    log.write_text(
        "2026-11-30 21:18:36.438 UTC [7410] LOG:  starting PostgreSQL 16.2\n"
        "<<cortadel_1|cortadel>> LOG:  statement: BEGIN\n"
        "<<cortadel_1|cortadel>> LOG:  execute <unnamed>: \n\tSELECT id\n\tFROM memories WHERE user_id = $1\n"
        "<<cortadel_1|cortadel>> DETAIL:  parameters: $1 = 'u1'\n"
        "<<postgres|psql>> LOG:  statement: CREATE DATABASE x\n"
        "<<cortadel_1|cortadel>> LOG:  execute _pg3_0: SELECT 1\n",
        encoding="utf-8",
    )
    assert list(statements(log)) == ["BEGIN", "\nSELECT id\nFROM memories WHERE user_id = $1", "SELECT 1"]


def test_the_audit_reads_a_statement_without_its_user_from_the_real_log() -> None:
    """End to end on PostgreSQL's own log, under another application name than the server's (so
    the session's audit below never sees it)."""
    log = record_statements()
    url = scratch_database("probe")
    PostgresStorage(url, max_connections=1).close()
    with psycopg.connect(url, application_name="audit-probe") as conn:
        conn.execute("SELECT id FROM memories WHERE id = %s", ("m1",))
        conn.execute("SELECT id FROM memories WHERE user_id = %s AND id = %s", ("u1", "m1"))
    sent = [sql for sql in statements(log, "audit-probe") if "memories" in sql]
    assert sent == ["SELECT id FROM memories WHERE id = $1", "SELECT id FROM memories WHERE user_id = $1 AND id = $2"]
    assert [unrouted(sql, user_tables()) for sql in sent] == [True, False]


def test_every_statement_on_user_data_names_its_user(request: pytest.FixtureRequest) -> None:
    if request.config.getoption("--backend") == "sqlite":
        pytest.skip("the server tests ran on SQLite only")
    tables = user_tables()
    sent = set(statements(record_statements()))
    on_user_data = {sql for sql in sent if _DATA.match(sql) and any(t.lower() in tables for t in _TOUCHES.findall(sql))}
    if len(on_user_data) < 20:
        pytest.skip(f"only {len(on_user_data)} statements on user data in this session: run it with the server tests")
    offenders = sorted({" ".join(sql.split()) for sql in on_user_data if unrouted(sql, tables)})
    assert offenders == [], f"{len(offenders)} of {len(on_user_data)} statements on user data name no user"
