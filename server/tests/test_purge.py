"""Deletion really deletes: once a delete is acknowledged, a deleted memory's text is in no file of
the data directory (database, WAL, shared memory) and was never in the server log.

The marker rides in every place text can go: content, tags, metadata, a session id, an entity name,
another memory's context (the turn after it in a session) and another memory's history (the fact it
superseded).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import httpx
import pytest

from cortadel_server.storage.base import MemoryFilters
from cortadel_server.storage.migrations import MIGRATIONS
from cortadel_server.storage.sqlite import SqliteStorage, user_key
from cortadel_server.testing import ServerProcess

MARKERS = ("zorblax", "quentavious")  # folded: the full-text index keeps lower-cased tokens


def occurrences(path: Path) -> dict[str, int]:
    """Each marker's count in the file, case-folded, as UTF-8 and as UTF-16."""
    data = path.read_bytes().lower()
    return {
        f"{marker}/{encoding}": data.count(marker.encode(encoding))
        for marker in MARKERS
        for encoding in ("utf-8", "utf-16-le")
        if data.count(marker.encode(encoding))
    }


def leftovers(folder: Path) -> dict[str, dict[str, int]]:
    return {p.name: found for p in sorted(folder.iterdir()) if p.is_file() and (found := occurrences(p))}


@pytest.fixture()
def purge_server(tmp_path: Path) -> Iterator[ServerProcess]:
    data = tmp_path / "data"
    data.mkdir()
    server = ServerProcess(data / "cortadel.db", env={"CORTADEL_LOG_LEVEL": "info"}, log=tmp_path / "server.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_deleted_text_leaves_every_file_and_the_log(purge_server: ServerProcess, tmp_path: Path) -> None:
    user = "purge-user"
    with httpx.Client(base_url=purge_server.base_url, timeout=30) as api:

        def add(text: str, **fields: object) -> dict[str, object]:
            response = api.post("/api/v1/memories", json={"user_id": user, "text": text, **fields})
            assert response.status_code == 200, response.text
            return response.json()

        # A retraction that matches nothing: the pipeline's no-op (it used to log the text at INFO).
        assert add("Forget Zorblaxian Quentavious.")["event"] == "ERROR"
        berlin = add("I live in Berlin.")
        moved = add("I moved to Zorblaxia last month.", tags=["zorblaxian-tag"], metadata={"contact": "Zorblaxian Quentavious"})
        assert (moved["event"], moved["content"]) == ("SUPERSEDE", "User moved to Zorblaxia last month.")
        met = add("I met Zorblaxian Quentavious in Lisbon.", session_id="trip-notes")
        tea = add("I like green tea.", session_id="trip-notes")
        alone = add("Quentavious lent me a bicycle.", session_id="zorblaxian-session")
        ids = [moved["id"], met["id"], alone["id"]]

        # Let enrichment link the entities, so the entity tables hold the name too.
        deadline = time.monotonic() + 30
        while api.get(f"/api/v1/memories/{met['id']}", params={"user_id": user}).json()["extraction_status"] != "done":
            assert time.monotonic() < deadline, "enrichment did not finish"
            time.sleep(0.1)
        def supersede_event() -> dict[str, object]:
            history = api.get(f"/api/v1/memories/{berlin['id']}/history", params={"user_id": user}).json()
            [event] = [e for e in history["events"] if e["event"] == "SUPERSEDE"]
            return event["detail"]

        assert supersede_event() == {"superseded_by": moved["id"], "statement": "User moved to Zorblaxia last month."}
        assert leftovers(Path(purge_server.data).parent)  # the marker is on disk before the delete

        response = api.request("DELETE", "/api/v1/memories", json={"user_id": user, "memory_ids": ids})
        assert (response.status_code, response.json()) == (200, {"message": "Deleted 3 memories"})

        # Acknowledged: already gone from the files, while the server still runs.
        assert leftovers(Path(purge_server.data).parent) == {}

        assert supersede_event() == {"superseded_by": moved["id"]}  # the event stays, the quote goes
        kept = api.get("/api/v1/memories", params={"user_id": user, "include_superseded": "true"}).json()
        assert sorted(item["content"] for item in kept["items"]) == ["User likes green tea.", "User lives in Berlin."]
        assert api.get(f"/api/v1/memories/{tea['id']}", params={"user_id": user}).json()["session_id"] == "trip-notes"
        search = api.post("/api/v1/memories/search", json={"user_id": user, "query": "Zorblaxian Quentavious Lisbon"}).json()
        assert [hit["content"] for hit in search["results"]] == ["User likes green tea."]  # the one current fact left

    purge_server.stop()  # a clean stop: nothing written back on the way out either
    assert leftovers(Path(purge_server.data).parent) == {}


def test_memory_text_is_never_logged_at_info(purge_server: ServerProcess, tmp_path: Path) -> None:
    user = "log-user"
    with httpx.Client(base_url=purge_server.base_url, timeout=30) as api:
        for text in ("Forget Zorblaxian Quentavious.", "I met Zorblaxian Quentavious in Lisbon."):
            assert api.post("/api/v1/memories", json={"user_id": user, "text": text}).status_code == 200
        found = api.post("/api/v1/memories/search", json={"user_id": user, "query": "Who is Zorblaxian?"}).json()
        assert [hit["content"] for hit in found["results"]] == ["User met Zorblaxian Quentavious in Lisbon."]
        ids = [hit["id"] for hit in found["results"]]
        assert api.request("DELETE", "/api/v1/memories", json={"user_id": user, "memory_ids": ids}).status_code == 200
    purge_server.stop()
    log = (tmp_path / "server.log").read_text(encoding="utf-8")
    assert "INFO cortadel.pipeline: no-op: a retraction matched no current fact" in log  # said, without the text
    assert [m for m in MARKERS if m in log.lower()] == []


def test_a_database_from_before_the_purge_is_switched_over_and_purged(tmp_path: Path) -> None:
    """A file written by an older version (no auto-vacuum, full-text indexes without secure-delete)."""
    db = tmp_path / "old.db"
    conn = apsw.Connection(str(db))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    for step in MIGRATIONS[:3]:
        conn.execute(step.sql)
        conn.execute("INSERT INTO schema_migrations VALUES (?, datetime('now'))", (step.name,))
    for i, (text, session) in enumerate([
        ("I met Zorblaxian Quentavious in Lisbon.", "zorblaxian-session"), ("I like green tea.", None), ("I live in Porto.", None),
    ]):
        conn.execute(
            "INSERT INTO memories(id, user_id, user_key, text, fingerprint, session_id, created_at, embedding) "
            "VALUES (?, 'u', ?, ?, '', ?, ?, zeroblob(1024))",
            (f"m{i}", user_key("u"), text, session, float(i)),
        )
    conn.execute("INSERT INTO session_docs(user_id, session_id, user_key, text) "
                 "VALUES ('u', 'zorblaxian-session', ?, 'I met Zorblaxian Quentavious in Lisbon.')", (user_key("u"),))
    conn.close()
    assert leftovers(tmp_path) != {}

    store = SqliteStorage(db)
    try:
        assert store.delete_memories("u", ["m0"]) == 1
        assert [r.text for r in store.list_memories("u", MemoryFilters(), offset=0, limit=5)[0]] == [
            "I live in Porto.", "I like green tea."]
        assert leftovers(tmp_path) == {}
    finally:
        store.close()
    assert leftovers(tmp_path) == {}
    conn = apsw.Connection(str(db))
    assert list(conn.execute("PRAGMA auto_vacuum")) == [(2,)]  # incremental, after a one-off VACUUM
    conn.close()
