"""Admin operations: the admin credential (never a user key) and a reindex that survives a kill.

A reindex keeps the old embeddings until each batch's new ones commit with its progress, so a
``kill -9`` in the middle leaves every memory searchable; the next start finishes the job in the
background, and health counts the memories without an embedding meanwhile.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import httpx
import numpy as np
import pytest

from cortadel_server.config import Settings
from cortadel_server.service import MemoryService
from cortadel_server.storage.base import MemoryRecord
from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.testing import ServerProcess

SECRET = "admin-test-secret"
ADMIN = "the-admin-credential"
REINDEX = "/api/v1/debug/reindex-vectors"


def error(status: int, code: str, message: str) -> dict[str, object]:
    return {"status": status, "code": code, "message": message, "detail": None}


@pytest.fixture()
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path / "cortadel.db", env=request.param)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("served", [{"CORTADEL_AUTH_SECRET": SECRET, "CORTADEL_ADMIN_KEY": ADMIN}], indirect=True)
def test_reindex_takes_the_admin_credential_and_no_user_key(served: ServerProcess) -> None:
    alice = served.mint_key("alice")
    with httpx.Client(base_url=served.base_url, timeout=60) as api:
        assert api.post("/api/v1/memories", json={"text": "I live in Berlin."},
                        headers={"Authorization": f"Bearer {alice}"}).status_code == 200
        as_user = api.post(REINDEX, headers={"Authorization": f"Bearer {alice}"})
        assert (as_user.status_code, as_user.json()) == (
            403, error(403, "forbidden", "This operation needs the admin credential; a user API key never passes"))
        anonymous = api.post(REINDEX)
        assert (anonymous.status_code, anonymous.json()) == (401, error(401, "unauthorized", "Missing API key"))
        as_admin = api.post(REINDEX, headers={"Authorization": f"Bearer {ADMIN}"})
        assert (as_admin.status_code, as_admin.json()) == (200, {
            "message": "Re-embedded 1 memories with wordllama/l2_supercat", "reindexed": 1,
            "model": "wordllama/l2_supercat", "dim": 256,
        })
        # The admin credential is accepted on admin operations only: it is no user key.
        as_admin_elsewhere = api.get("/api/v1/memories", params={"user_id": "alice"}, headers={"Authorization": f"Bearer {ADMIN}"})
        assert (as_admin_elsewhere.status_code, as_admin_elsewhere.json()) == (401, error(401, "unauthorized", "Invalid API key"))


@pytest.mark.parametrize("served", [{"CORTADEL_AUTH_SECRET": SECRET}], indirect=True)
def test_without_an_admin_key_admin_operations_are_refused(served: ServerProcess) -> None:
    refused = httpx.post(f"{served.base_url}{REINDEX}", headers={"Authorization": f"Bearer {served.mint_key('alice')}"}, timeout=30)
    assert (refused.status_code, refused.json()) == (
        403, error(403, "forbidden", "Admin operations are disabled: CORTADEL_ADMIN_KEY is not set"))


@pytest.mark.parametrize("served", [{"CORTADEL_ADMIN_KEY": ADMIN}], indirect=True)
def test_with_auth_off_an_admin_key_still_guards_admin_operations(served: ServerProcess) -> None:
    with httpx.Client(base_url=served.base_url, timeout=30) as api:
        for headers in ({}, {"Authorization": "Bearer not-the-admin-key"}):
            refused = api.post(REINDEX, headers=headers)
            assert (refused.status_code, refused.json()) == (401, error(401, "unauthorized", "Missing or invalid admin key"))
        assert api.post(REINDEX, headers={"Authorization": f"Bearer {ADMIN}"}).json()["reindexed"] == 0
        assert api.get("/api/v1/memories", params={"user_id": "alice"}).status_code == 200  # the rest stays open


def fill(db: Path, count: int) -> None:
    """Memories written straight into the file (much faster than thousands of requests), each
    with a deliberately wrong embedding so a reindex has real work to do."""
    storage = SqliteStorage(db)
    rng = np.random.default_rng(7)
    try:
        with storage.write():
            for i in range(count):
                vector = rng.normal(size=256).astype(np.float32)
                storage.insert_memory(
                    MemoryRecord(id=f"m{i:05d}", user_id=f"user{i % 20}", text=f"I visited city number {i} with friend {i % 13}.",
                                 created_at=1_790_000_000 + i),
                    vector / np.linalg.norm(vector),
                )
    finally:
        storage.close()


def embedding_state(db: Path) -> tuple[int, int, dict[str, str]]:
    """(memories without an embedding, memories, meta) read straight from the file."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        missing = next(conn.execute("SELECT count(*) FROM memories WHERE embedding IS NULL"))[0]
        total = next(conn.execute("SELECT count(*) FROM memories"))[0]
        return missing, total, dict(conn.execute("SELECT key, value FROM meta"))
    finally:
        conn.close()


def health_indexes(api: httpx.Client) -> dict[str, object]:
    return api.get("/api/health").json()["checks"]["indexes"]


def test_kill_9_during_reindex_loses_no_embedding_and_the_restart_finishes_it(tmp_path: Path) -> None:
    db = tmp_path / "cortadel.db"
    total = 6000
    server = ServerProcess(db, env={"CORTADEL_ADMIN_KEY": ADMIN})
    server.start()
    server.stop()  # the file now has its schema and vector index
    fill(db, total)
    server.start()
    with httpx.Client(base_url=server.base_url, timeout=120) as api:
        def reindex() -> None:
            with pytest.raises(httpx.RemoteProtocolError):  # killed before it answers
                httpx.post(f"{server.base_url}{REINDEX}", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=120)

        request = threading.Thread(target=reindex, daemon=True)
        request.start()
        deadline = time.monotonic() + 60
        while not 512 <= int(embedding_state(db)[2].get("reindex_through", 0)) < total:  # two batches in
            assert time.monotonic() < deadline and request.is_alive(), "the reindex did not get under way"
        assert server.process is not None
        server.process.kill()  # SIGKILL: no shutdown, no checkpoint
        server.process.wait()
    request.join(10)

    missing, count, meta = embedding_state(db)
    assert (missing, count) == (0, total)  # the old embeddings stayed where no new one was written yet
    assert meta["reindex_model"] == "wordllama/l2_supercat" and 0 < int(meta["reindex_through"]) < total

    server.start()
    try:
        with httpx.Client(base_url=server.base_url, timeout=30) as api:
            deadline = time.monotonic() + 120
            while "reindex_model" in embedding_state(db)[2]:
                assert time.monotonic() < deadline, "the restart did not finish the reindex"
                time.sleep(0.2)
            indexes = health_indexes(api)
            assert (indexes["ok"], indexes["error"]) == (True, None)
            found = api.post("/api/v1/memories/search", json={"user_id": "user7", "query": "city number 4567", "top_k": 1}).json()
            assert [(h["id"], h["content"]) for h in found["results"]] == [("m04567", "I visited city number 4567 with friend 4.")]
    finally:
        server.stop()
    missing, count, meta = embedding_state(db)
    assert (missing, count) == (0, total)
    assert {k: v for k, v in meta.items() if k.startswith(("reindex", "vector"))} == {
        "vector_dim": "256", "vector_model": "wordllama/l2_supercat",
    }


def test_health_counts_memories_without_embeddings_and_the_repair_embeds_them(tmp_path: Path) -> None:
    db = tmp_path / "cortadel.db"
    settings = Settings(data=str(db))
    MemoryService.open(settings).close()
    fill(db, 100)
    # The state an interrupted reindex of an older version left behind: rows with no embedding.
    conn = apsw.Connection(str(db))
    conn.execute("UPDATE memories SET embedding = NULL WHERE rowid % 3 = 0")
    conn.close()

    service = MemoryService.open(settings)  # no background work: nothing repairs behind our back
    try:
        indexes = service.health().indexes
        assert (indexes.ok, indexes.error, indexes.fields["missing_embeddings"], indexes.fields["reindex_remaining"]) == (
            False, "33 memories have no embedding (repaired in the background)", 33, 0)
        assert service.reindex(resume_only=True) == 33
        indexes = service.health().indexes
        assert (indexes.ok, indexes.error, indexes.fields["missing_embeddings"]) == (True, None, 0)
    finally:
        service.close()

    # Over HTTP: a server started on such a file repairs it in the background.
    conn = apsw.Connection(str(db))
    conn.execute("UPDATE memories SET embedding = NULL WHERE rowid % 10 = 0")
    conn.close()
    server = ServerProcess(db)
    server.start()
    try:
        with httpx.Client(base_url=server.base_url, timeout=30) as api:
            deadline = time.monotonic() + 60
            while (indexes := health_indexes(api))["error"]:
                # the health check names the count while the background repair works
                assert indexes["error"] in {f"{n} memories have no embedding (repaired in the background)" for n in range(1, 11)}
                assert indexes["ok"] is False and time.monotonic() < deadline
                time.sleep(0.1)
            assert (indexes["ok"], indexes["error"]) == (True, None)
    finally:
        server.stop()
    assert embedding_state(db)[:2] == (0, 100)
