"""Erasing a user: ``DELETE /api/v1/users/{userId}`` and ``cortadel delete-user`` leave no row of the
user in any table (every table of the file is looked at, so a new one cannot be missed), no trace
of their text in any file, and everyone else untouched; the answer is a receipt of what was erased.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import apsw
import httpx
import pytest

from cortadel_server.storage.sqlite import user_key
from cortadel_server.testing import ServerProcess

SECRET = "delete-user-secret"
ADMIN = "admin-credential-for-tests"
VICTIM = "erase/me"  # a slash, to show the path takes any user id
BYSTANDER = "keep-me"
MARKERS = ("zorblax", "quentavious")


def rows_mentioning(db: Path, needles: list[str]) -> dict[str, int]:
    """Per table of the file (virtual tables through their shadow tables), the rows where any cell
    holds any needle (case-folded, text or bytes)."""
    folded = [n.lower().encode("utf-8") for n in needles]
    found: dict[str, int] = {}
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        tables = [name for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'")
                  if not sql.upper().startswith("CREATE VIRTUAL TABLE")]
        assert {"memories", "memory_events", "entities", "jobs", "session_docs", "memories_fts_data"} <= set(tables)
        for table in tables:
            hits = 0
            for row in conn.execute(f'SELECT * FROM "{table}"'):
                cells = [c.encode("utf-8") if isinstance(c, str) else c for c in row if isinstance(c, str | bytes)]
                hits += any(n in cell.lower() for cell in cells for n in folded)
            if hits:
                found[table] = hits
    finally:
        conn.close()
    return found


def file_leftovers(folder: Path) -> dict[str, list[str]]:
    return {
        p.name: hits for p in sorted(folder.iterdir())
        if p.is_file() and (hits := [m for m in MARKERS if m.encode() in p.read_bytes().lower()])
    }


@pytest.fixture()
def erase_server(tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(tmp_path / "cortadel.db", env={"CORTADEL_AUTH_SECRET": SECRET, "CORTADEL_ADMIN_KEY": ADMIN})
    server.start()
    try:
        yield server
    finally:
        server.stop()


def fill(api: httpx.Client, user: str, key: str | None, texts: list[tuple[str, dict[str, object]]]) -> list[str]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    ids = []
    for text, fields in texts:
        response = api.post("/api/v1/memories", json={"user_id": user, "text": text, **fields}, headers=headers)
        assert response.status_code == 200, response.text
        ids.append(response.json()["id"])
    deadline = time.monotonic() + 30
    for memory_id in ids:  # wait for enrichment: entities and their aliases are written then
        while api.get(f"/api/v1/memories/{memory_id}", params={"user_id": user},
                      headers=headers).json()["extraction_status"] != "done":
            assert time.monotonic() < deadline, "enrichment did not finish"
            time.sleep(0.1)
    return ids


VICTIM_TEXTS: list[tuple[str, dict[str, object]]] = [
    ("I live in Berlin.", {}),
    ("I moved to Zorblaxia last month.", {"tags": ["zorblaxian-tag"], "metadata": {"friend": "Quentavious"}}),
    ("I met Zorblaxian Quentavious in Lisbon.", {"session_id": "zorblaxian-trip"}),
    ("Quentavious lent me a bicycle.", {"session_id": "zorblaxian-trip"}),
]
BYSTANDER_TEXTS: list[tuple[str, dict[str, object]]] = [
    ("I live in Madrid.", {}),
    ("I met Alice Harrington in Porto.", {"session_id": "porto-trip"}),
]


def test_delete_user_erases_every_row_and_every_trace(erase_server: ServerProcess) -> None:
    db = Path(erase_server.data)
    victim_key, bystander_key = erase_server.mint_key(VICTIM), erase_server.mint_key(BYSTANDER)
    path = f"/api/v1/users/{quote(VICTIM, safe='')}"
    with httpx.Client(base_url=erase_server.base_url, timeout=30) as api:
        victim_ids = fill(api, VICTIM, victim_key, VICTIM_TEXTS)
        bystander_ids = fill(api, BYSTANDER, bystander_key, BYSTANDER_TEXTS)
        victim = [VICTIM, user_key(VICTIM), *victim_ids, *MARKERS]
        bystander = [BYSTANDER, user_key(BYSTANDER), *bystander_ids]
        before = rows_mentioning(db, victim)
        # Two session documents: the explicit trip, and the episode the first two statements were inferred into.
        assert before["memories"] == 4 and before["entities"] >= 2 and before["session_docs"] == 2
        bystander_before = rows_mentioning(db, bystander)

        refused = api.delete(path, headers={"Authorization": f"Bearer {bystander_key}"})
        assert (refused.status_code, refused.json()) == (403, {
            "status": 403, "code": "forbidden", "message": f"API key is not valid for user {VICTIM!r}", "detail": None,
        })
        assert api.delete(path).json() == {"status": 401, "code": "unauthorized", "message": "Missing API key", "detail": None}

        erased = api.delete(path, headers={"Authorization": f"Bearer {victim_key}"})
        assert erased.status_code == 200, erased.text
        receipt = erased.json()
        assert (receipt["user_id"], receipt["message"]) == (VICTIM, "Erased user 'erase/me': 4 memories")
        # The receipt counts what the file held of the user, table by table.
        assert {t: receipt["erased"][t] for t in ("memories", "entities", "session_docs")} == {
            t: before[t] for t in ("memories", "entities", "session_docs")
        }
        assert receipt["erased"]["memory_events"] == before["memory_events"] >= 5  # 4 ADD/SUPERSEDE, ENRICH each
        assert receipt["erased"]["user_versions"] == 1
        assert rows_mentioning(db, victim) == {}
        assert file_leftovers(db.parent) == {}

        # Everyone else is untouched. The erasure merges the session index's segments (the purge in
        # storage/sqlite.py), so the bystander's terms there sit in fewer rows, but are all there.
        bystander_after = rows_mentioning(db, bystander)
        assert bystander_after.pop("session_docs_fts_data") >= 1 and bystander_before.pop("session_docs_fts_data") >= 1
        assert bystander_after == bystander_before
        found = api.post("/api/v1/memories/search", json={"user_id": BYSTANDER, "query": "Porto"},
                         headers={"Authorization": f"Bearer {bystander_key}"})
        assert [h["content"] for h in found.json()["results"]][:1] == ["User met Alice Harrington in Porto."]
        listed = api.get("/api/v1/memories", params={"user_id": BYSTANDER}, headers={"Authorization": f"Bearer {bystander_key}"})
        assert sorted(m["content"] for m in listed.json()["items"]) == ["User lives in Madrid.", "User met Alice Harrington in Porto."]

        # The erased user can start over (and is not served stale cached vectors).
        [again] = fill(api, VICTIM, victim_key, [("I collect stamps.", {})])
        found = api.post("/api/v1/memories/search", json={"user_id": VICTIM, "query": "hobbies"},
                         headers={"Authorization": f"Bearer {victim_key}"}).json()
        assert [(h["id"], h["content"]) for h in found["results"]] == [(again, "User collects stamps.")]

    erase_server.stop()
    assert file_leftovers(db.parent) == {}


def test_admin_credential_erases_any_user_and_nothing_is_idempotent(erase_server: ServerProcess) -> None:
    with httpx.Client(base_url=erase_server.base_url, timeout=30) as plain:
        fill(plain, BYSTANDER, erase_server.mint_key(BYSTANDER), [("I live in Madrid.", {})])
    with httpx.Client(base_url=erase_server.base_url, timeout=30, headers={"Authorization": f"Bearer {ADMIN}"}) as api:
        first = api.delete(f"/api/v1/users/{BYSTANDER}")
        assert first.status_code == 200, first.text
        assert (first.json()["erased"]["memories"], first.json()["erased"]["user_versions"]) == (1, 1)
        second = api.delete(f"/api/v1/users/{BYSTANDER}")
        assert second.json() == {
            "message": "Erased user 'keep-me': 0 memories", "user_id": BYSTANDER,
            "erased": {"memory_entities": 0, "entity_aliases": 0, "entities": 0, "memory_events": 0, "memory_recalls": 0,
                       "jobs": 0, "reconcile_suggestions": 0, "reconcile_runs": 0, "session_docs": 0, "memories": 0, "user_versions": 0},
        }
        # The admin credential is no user key: it reads no one's memories.
        denied = api.get("/api/v1/memories", params={"user_id": BYSTANDER})
        assert (denied.status_code, denied.json()["message"]) == (401, "Invalid API key")


def test_cli_delete_user_prints_the_receipt(tmp_path: Path) -> None:
    db = tmp_path / "cortadel.db"
    server = ServerProcess(db)
    server.start()
    try:
        with httpx.Client(base_url=server.base_url, timeout=30) as api:
            fill(api, VICTIM, None, VICTIM_TEXTS[2:])
    finally:
        server.stop()
    result = subprocess.run(
        [sys.executable, "-m", "cortadel_server", "delete-user", VICTIM, "--data", str(db)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    receipt = json.loads(result.stdout)
    assert (receipt["user_id"], receipt["erased"]["memories"], receipt["erased"]["session_docs"]) == (VICTIM, 2, 1)
    assert rows_mentioning(db, [VICTIM, user_key(VICTIM), *MARKERS]) == {}
    assert file_leftovers(tmp_path) == {}
