"""PostgreSQL restarted under a running server: a crash-like stop (``pg_ctl stop -m immediate``)
in the middle of a burst of writes, on a PostgreSQL of the test's own.

Every write the server acknowledged is stored afterwards, every other one got the contract's 503
body, and the same server process answers writes again without being restarted.

A write refused while its COMMIT was in flight may be stored all the same (the database died before
it answered, so the outcome is unknown to the server): the test allows exactly that, no more.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from support.write_burst import WriteBurst

from cortadel_server.testing import ServerProcess
from cortadel_server.testing_postgres import own_postgres_server, scratch_database, stopped

USER = "burst"
CLIENTS = 4
#: what a write that met the outage is told (storage/postgres.py, _translate)
OUTAGE = re.compile(
    r"database unavailable: .+|no database connection free or reachable within 3 s|query interrupted after 3 s"
)


@pytest.fixture()
def database() -> Iterator[tuple[Any, str]]:
    with own_postgres_server() as pg:
        yield pg, scratch_database("outage", server=pg)


def stored(url: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        return dict(conn.execute("SELECT id, text FROM memories WHERE user_id = %s", (USER,)).fetchall())


def liveness_locks(url: str) -> int:
    """Server processes holding their liveness lock (storage/postgres.py, _ALIVE_LOCK)."""
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = 3 AND granted").fetchone()
        return int(row[0]) if row else 0


def test_a_postgres_restart_mid_burst_loses_no_acknowledged_write_and_heals(
    database: tuple[Any, str], tmp_path: Path
) -> None:
    pg, url = database
    server = ServerProcess(tmp_path / "unused.db", env={"CORTADEL_QUERY_TIMEOUT": "3"}, database_url=url)
    server.start()
    try:
        pid = server.pid
        with WriteBurst(server.base_url, [USER] * CLIENTS) as burst:
            burst.wait_for(40, timeout=60)
            with stopped(pg):
                # Down until a write has met the outage: a fixed second could fall between the
                # statements of every write in flight, and then none met it.
                deadline = time.monotonic() + 15
                while not burst.refused:
                    assert time.monotonic() < deadline, "no write met the outage"
                    time.sleep(0.05)
            back = time.monotonic()
            burst.wait_for(burst.count() + 40, timeout=60)  # the same process writes again
        after = [a for a in burst.acknowledged if a.answered_at > back]
        assert len(after) >= 40
        assert server.process is not None and server.process.poll() is None and server.pid == pid

        # Every refusal is the contract's 503, naming the outage.
        for _, response in burst.refused:
            assert response.status_code == 503
            body = response.json()
            assert set(body) == {"status", "code", "message", "detail"}
            assert (body["status"], body["code"], body["detail"]) == (503, "unavailable", None)
            assert OUTAGE.fullmatch(body["message"]), body["message"]

        # Acknowledged means stored. A refused write may be stored too, when the database died
        # while it committed (the server cannot know the outcome); sending it again is a duplicate.
        kept = stored(url)
        acknowledged = {a.memory_id: a.text for a in burst.acknowledged}
        assert {memory_id: kept.get(memory_id) for memory_id in acknowledged} == acknowledged
        assert set(kept.values()) - set(acknowledged.values()) <= {text for text, _ in burst.refused}

        with httpx.Client(base_url=server.base_url, timeout=30) as http:
            health = http.get("/api/health")
            assert health.status_code == 200 and health.json()["checks"]["memgraph"]["ok"] is True
            found = http.post("/api/v1/memories/search", json={"user_id": USER, "query": "code word w2n1", "top_k": 1})
            assert found.status_code == 200
            assert found.json()["results"][0]["content"] == "Writer 2 note 1: the code word is w2n1."
        # The job runner took its liveness lock again (it polls every second).
        deadline = time.monotonic() + 10
        while liveness_locks(url) != 1:
            assert time.monotonic() < deadline, "the liveness lock was not taken again"
            time.sleep(0.2)
    finally:
        server.stop()
