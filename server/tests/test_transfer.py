"""`cortadel export`, `cortadel import` and `cortadel migrate`, run as the commands they are, on
stores a real server wrote (SQLite files and databases on the test session's PostgreSQL)."""

from __future__ import annotations

import base64
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from cortadel_server.storage.base import HistoryEntry, MemoryRecord, StoredMemory
from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.testing import running_server
from cortadel_server.testing_postgres import scratch_database

BERLIN_SAID = "2026-01-10T09:00:00+00:00"
PARIS_SAID = "2026-03-01T18:30:00+00:00"


@dataclass(frozen=True)
class Store:
    """A store as the commands name it: a SQLite file or a PostgreSQL URL."""

    location: str

    @property
    def env(self) -> dict[str, str]:
        if self.location.startswith("postgresql://"):
            return {"CORTADEL_DATABASE_URL": self.location}
        return {"CORTADEL_DATA": self.location}


def new_store(backend: str, tmp_path: Path, name: str) -> Store:
    return Store(scratch_database(name) if backend == "postgres" else str(tmp_path / f"{name}.db"))


def cortadel(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("CORTADEL_DATA", "CORTADEL_DATABASE_URL")}
    return subprocess.run(
        [sys.executable, "-m", "cortadel_server", *args], env={**clean, **(env or {})},
        check=False, capture_output=True, text=True, timeout=300,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def export(store: Store, path: Path, *extra: str) -> bytes:
    ok(cortadel("export", "-o", str(path), *extra, env=store.env))
    return path.read_bytes()


def lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


def write(api: httpx.Client, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


#: the server that writes the stores records recalls only with fading on (curation/fading.py)
FADING = {"CORTADEL_FADE_HALF_LIFE_DAYS": "30"}


def populate(base_url: str) -> dict[str, Any]:
    """What the export must carry: a supersede on both time axes, a session, source turns,
    metadata, entities, a deleted memory (its quotes leave history), a second user, and a third
    with a reconcile run, a merge applied by hand (its undo state) and a recall."""
    with httpx.Client(base_url=base_url, timeout=60) as api:
        conversation = "/api/v1/memories/from-conversation"
        [berlin] = write(api, conversation, {"user_id": "alice", "messages": [
            {"role": "user", "content": "I live in Berlin.", "timestamp": BERLIN_SAID, "uuid": "turn-1"}]})["results"]
        [paris] = write(api, conversation, {"user_id": "alice", "messages": [
            {"role": "user", "content": "I live in Paris now.", "timestamp": PARIS_SAID, "uuid": "turn-2"}]})["results"]
        assert (berlin["event"], paris["event"]) == ("ADD", "SUPERSEDE")
        maria = write(api, "/api/v1/memories", {
            "user_id": "alice", "text": "My wife Maria works for Deutsche Bank.", "infer": False, "session_id": "s-1",
            "metadata": {"source": "chat", "z": 1, "a": [1.5, "ü"]}, "tags": ["family"], "project": "home", "app": "notes",
        })
        atlas = write(api, "/api/v1/memories", {
            "user_id": "alice", "text": "I am working on the Atlas project.", "infer": False, "session_id": "s-1"})
        gone = write(api, "/api/v1/memories", {"user_id": "alice", "text": "My locker code is 4471.", "infer": False})
        response = api.request("DELETE", "/api/v1/memories", json={"user_id": "alice", "memory_ids": [gone["id"]]})
        assert response.status_code == 200, response.text
        bob = write(api, "/api/v1/memories", {"user_id": "bob ✓", "text": "Bob's dentist is Dr. Okafor.", "infer": False})
        carol = curate(api)
        # Enrichment runs as jobs after the answers: let them finish, so the stores compared are at rest.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            history = api.get(f"/api/v1/memories/{atlas['id']}/history", params={"user_id": "alice"}).json()
            if any(e["event"] == "ENRICH" for e in history["events"]):
                break
            time.sleep(0.1)
    return {"berlin": berlin["id"], "paris": paris["id"], "maria": maria["id"], "atlas": atlas["id"], "bob": bob["id"], **carol}


def curate(api: httpx.Client) -> dict[str, Any]:
    """Carol's curation rows, made through the API: a finished run, a merge by hand, a recall."""
    dan, dana = (write(api, "/api/v1/memories", {"user_id": "carol", "text": text})["id"]
                 for text in ("User met Dan Lee at the conference.", "User's manager is Dana Lee."))
    deadline = time.monotonic() + 30
    while any(api.get(f"/api/v1/memories/{m}", params={"user_id": "carol"}).json()["extraction_status"] == "pending"
              for m in (dan, dana)):
        assert time.monotonic() < deadline, "enrichment did not finish"
        time.sleep(0.1)
    started = api.post("/api/v1/reconcile/runs", json={"user_id": "carol", "types": ["facts"]})
    assert started.status_code == 202, started.text
    while (status := api.get("/api/v1/reconcile/status", params={"user_id": "carol"}).json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, "the reconcile run did not finish"
        time.sleep(0.1)
    assert status["status"] == "completed", status
    merge = write(api, "/api/v1/reconcile/merges", {"user_id": "carol", "source": "dan lee", "target": "dana lee"})
    assert (merge["status"], merge["decided_by"]) == ("approved", "hand")
    found = write(api, "/api/v1/memories/search", {"user_id": "carol", "query": "Who is the manager, Dana Lee?", "top_k": 1})
    assert [hit["id"] for hit in found["results"]] == [dana]  # recorded as a recall when the server stops
    return {"dan": dan, "dana": dana, "run": status["run"], "merge": merge, "searched_at": time.time()}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def written(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Store, dict[str, Any]]]:
    """A store a real server wrote (and has stopped writing), per backend, with the ids it made."""
    folder = tmp_path_factory.mktemp(f"written-{request.param}")
    store = new_store(request.param, folder, "written")
    data = Path(store.location) if request.param == "sqlite" else folder / "unused.db"
    with running_server(FADING, data=data, database_url=store.env.get("CORTADEL_DATABASE_URL")) as server:
        ids = populate(server.base_url)
    yield store, ids


def test_export_carries_every_row_with_both_time_axes(written: tuple[Store, dict[str, Any]], tmp_path: Path) -> None:
    store, ids = written
    exported = lines(export(store, tmp_path / "out.jsonl"))
    header, end = exported[0], exported[-1]
    assert header == {"type": "header", "format": "cortadel-export", "version": 1,
                      "embedding_model": "wordllama/l2_supercat", "embedding_dim": header["embedding_dim"]}
    assert header["embedding_dim"] > 0
    memories = {line["id"]: line for line in exported if line["type"] == "memory"}
    assert set(memories) == {ids[k] for k in ("berlin", "paris", "maria", "atlas", "bob", "dan", "dana")}  # the deleted one is gone
    berlin, paris = memories[ids["berlin"]], memories[ids["paris"]]
    assert (berlin["text"], berlin["state"], berlin["superseded_by"]) == ("User lives in Berlin.", "superseded", ids["paris"])
    assert berlin["valid_at"] == time_of(BERLIN_SAID)
    assert berlin["invalid_at"] == paris["valid_at"] == time_of(PARIS_SAID)
    assert berlin["expired_at"] is not None and berlin["created_at"] <= berlin["expired_at"] <= paris["created_at"] + 1
    assert abs(paris["created_at"] - time.time()) < 600
    assert (berlin["source_turn_uuids"], paris["source_turn_uuids"]) == (["turn-1"], ["turn-2"])
    maria = memories[ids["maria"]]
    assert (maria["metadata"], maria["tags"], maria["project"], maria["app_name"], maria["session_id"]) == (
        {"source": "chat", "z": 1, "a": [1.5, "ü"]}, ["family"], "home", "notes", "s-1")
    assert memories[ids["atlas"]]["context"] == "My wife Maria works for Deutsche Bank."
    vector = np.frombuffer(base64.b64decode(maria["embedding"]), dtype=np.float32)
    assert vector.shape == (header["embedding_dim"],) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-3

    events = [(line["memory_id"], line["event"]) for line in exported if line["type"] == "event"]
    assert [e for e in events if e[0] == ids["berlin"] and e[1] != "ENRICH"] == [(ids["berlin"], "ADD"), (ids["berlin"], "SUPERSEDE")]
    supersede = next(line for line in exported if line["type"] == "event" and line["event"] == "SUPERSEDE")
    assert supersede["detail"]["superseded_by"] == ids["paris"]
    # The deleted text left history too. Looked for by a word: its number can turn up by chance in
    # the digits of a timestamp, an id or an embedding's base64.
    assert not [line for line in exported if "locker" in json.dumps(line).lower()]
    entities = [line for line in exported if line["type"] == "entity" and line["user_id"] == "alice"]
    assert entities == [  # in the order first seen; verbatim adds (infer false) link none
        {"type": "entity", "user_id": "alice", "canonical": "berlin", "kind": "place", "aliases": ["berlin"], "memories": [ids["berlin"]]},
        {"type": "entity", "user_id": "alice", "canonical": "paris", "kind": "place", "aliases": ["paris"], "memories": [ids["paris"]]},
    ]
    sessions = [line for line in exported if line["type"] == "session"]
    assert {"type": "session", "user_id": "alice", "session_id": "s-1",
            "document": "My wife Maria works for Deutsche Bank.\nI am working on the Atlas project."} in sessions

    # Curation rows, as the API showed them, with the undo state of the applied merge.
    [run] = [line for line in exported if line["type"] == "reconcile_run"]
    assert run == {"type": "reconcile_run", **ids["run"]}
    assert (run["user_id"], run["status"], run["types"], run["suggested"]) == ("carol", "completed", ["facts"], 0)
    [merge] = [line for line in exported if line["type"] == "suggestion"]
    assert {k: v for k, v in merge.items() if k not in ("type", "key", "undo")} == ids["merge"]
    assert (merge["kind"], merge["subject"], merge["undone_at"]) == ("merge_entities", {"source": "dan lee", "target": "dana lee"}, None)
    assert merge["undo"] == {"target": "dana lee", "added_aliases": ["dan lee"], "added_links": [ids["dan"]], "source": {
        "canonical": "dan lee", "kind": "person", "aliases": ["dan lee"], "memory_ids": [ids["dan"]]}}
    [recall] = [line for line in exported if line["type"] == "recall"]
    assert (recall["user_id"], recall["memory_id"]) == ("carol", ids["dana"])
    assert ids["merge"]["created_at"] <= recall["at"] <= ids["searched_at"] + 5

    closing = {line["user_id"]: line["counts"] for line in exported if line["type"] == "user"}
    assert list(closing) == ["alice", "bob ✓", "carol"]
    assert closing["alice"]["memories"] == 4 and closing["bob ✓"]["memories"] == 1
    assert (closing["alice"]["entities"], closing["alice"]["mentions"]) == (2, 2)
    assert (closing["carol"]["reconcile_runs"], closing["carol"]["suggestions"], closing["carol"]["recalls"]) == (1, 1, 1)
    assert sum(c["reconcile_runs"] + c["suggestions"] + c["recalls"] for c in closing.values()) == 3
    assert sum(c["sessions"] for c in closing.values()) == len(sessions)
    assert end == {"type": "end", "users": 3, "counts": {k: sum(c[k] for c in closing.values()) for k in closing["alice"]}}
    assert end["counts"]["events"] == sum(1 for line in exported if line["type"] == "event")

    only_bob = lines(export(store, tmp_path / "bob.jsonl", "--user", "bob ✓"))
    assert [line["type"] for line in only_bob][:2] == ["header", "memory"]
    assert [line["type"] for line in only_bob][-2:] == ["user", "end"]
    assert {line["user_id"] for line in only_bob[1:-1]} == {"bob ✓"}


def time_of(iso: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(iso).timestamp()


@pytest.mark.parametrize("target_backend", ["sqlite", "postgres"])
def test_export_import_export_is_byte_identical(
    written: tuple[Store, dict[str, Any]], target_backend: str, tmp_path: Path
) -> None:
    store, ids = written
    first = export(store, tmp_path / "first.jsonl")
    target = new_store(target_backend, tmp_path, "target")
    report = json.loads(ok(cortadel("import", str(tmp_path / "first.jsonl"), env=target.env)))
    assert report["users"] == 3 and report["resumed"] == []
    assert report["counts"] == lines(first)[-1]["counts"]
    assert export(target, tmp_path / "second.jsonl") == first

    # The imported store serves: full text, vectors and history answer as in the original.
    data = Path(target.location) if target_backend == "sqlite" else tmp_path / "unused.db"
    with running_server(data=data, database_url=target.env.get("CORTADEL_DATABASE_URL")) as server, \
            httpx.Client(base_url=server.base_url, timeout=30) as api:
        found = write(api, "/api/v1/memories/search", {"user_id": "alice", "query": "Where does she live, Paris?", "top_k": 1})
        assert [hit["id"] for hit in found["results"]] == [ids["paris"]]
        history = api.get(f"/api/v1/memories/{ids['berlin']}/history", params={"user_id": "alice"}).json()
        assert [e["event"] for e in history["events"] if e["event"] != "ENRICH"] == ["ADD", "SUPERSEDE"]
        again = write(api, "/api/v1/memories", {"user_id": "alice", "text": "I am working on the Atlas project.", "infer": False})
        assert (again["event"], again["id"]) == ("SKIP_DUPLICATE", ids["atlas"])
        # The imported merge is applied, and its undo state undoes it: the merge can then be made again.
        merge = ids["merge"]
        twice = api.post("/api/v1/reconcile/merges", json={"user_id": "carol", "source": "dan lee", "target": "dana lee"})
        assert (twice.status_code, twice.json()["message"]) == (409, "'dan lee' is already merged into 'dana lee'")
        undone = api.post(f"/api/v1/reconcile/suggestions/{merge['id']}/undo", json={"user_id": "carol"})
        assert undone.status_code == 200, undone.text
        assert (undone.json()["status"], undone.json()["decided_by"]) == ("rejected", "hand")
        assert merge["decided_at"] <= undone.json()["undone_at"] <= time.time()
        remade = api.post("/api/v1/reconcile/merges", json={"user_id": "carol", "source": "dan lee", "target": "dana lee"})
        assert (remade.status_code, remade.json()["id"], remade.json()["status"]) == (200, merge["id"], "approved")


def test_import_refuses_a_user_the_target_already_holds(written: tuple[Store, dict[str, Any]], tmp_path: Path) -> None:
    store, _ = written
    first = export(store, tmp_path / "first.jsonl")
    target = new_store("sqlite", tmp_path, "target")
    ok(cortadel("import", str(tmp_path / "first.jsonl"), env=target.env))
    again = cortadel("import", str(tmp_path / "first.jsonl"), env=target.env)
    assert again.returncode == 2
    assert again.stderr.startswith("cortadel: user 'alice' already has data in the target (4 memories, ")
    assert "cortadel delete-user alice" in again.stderr
    assert export(target, tmp_path / "after.jsonl") == first  # nothing doubled


def test_a_file_cut_short_imports_the_users_before_and_rolls_back_the_rest(
    written: tuple[Store, dict[str, Any]], tmp_path: Path
) -> None:
    store, _ = written
    full = export(store, tmp_path / "full.jsonl").decode("utf-8").splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(full[:-2]), encoding="utf-8")  # carol's closing line and the end line are missing
    target = new_store("sqlite", tmp_path, "target")
    result = cortadel("import", str(cut), env=target.env)
    assert result.returncode == 2
    assert result.stderr == (
        "cortadel: the export ends without its end line (cut short?): user 'carol' was not imported; "
        "2 users before it were, and running the same import again goes on from there\n"
    )
    imported = SqliteStorage(Path(target.location))
    try:
        assert imported.transfer_users() == ["alice", "bob ✓"]
        assert imported.user_row_counts("carol") == dict.fromkeys(imported.user_row_counts("carol"), 0)
    finally:
        imported.close()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "cortadel: the export is empty: no header line\n"),
        ("not json\n", "cortadel: line 1: not JSON (Expecting value)\n"),
        ('{"type":"header","format":"mem0"}\n', "cortadel: line 1: not a Cortadel export (the first line is no cortadel-export header)\n"),
        ('{"type":"header","format":"cortadel-export","version":9}\n',
         "cortadel: line 1: export format version 9; this server reads 1\n"),
        (('{"type":"header","format":"cortadel-export","version":1,"embedding_model":null,"embedding_dim":null}\n'
         '{"type":"memory","user_id":"u"}\n{"type":"user","user_id":"u","counts":{}}\n'),
         ("cortadel: line 2: a malformed memory line (TypeError: MemoryRecord.__init__() missing 3 required positional "
         "arguments: 'id', 'text', and 'created_at')\n")),
        (('{"type":"header","format":"cortadel-export","version":1,"embedding_model":null,"embedding_dim":null}\n'
         '{"type":"gossip","user_id":"u"}\n'), "cortadel: line 2: unknown line type 'gossip'\n"),
        (('{"type":"header","format":"cortadel-export","version":1,"embedding_model":null,"embedding_dim":null}\n'
         '{"type":"memory","user_id":"u","id":"m1","text":"Hi","fingerprint":"f","created_at":"yesterday"}\n'),
         "cortadel: line 2: a malformed memory line (ValueError: created_at: expected a number, not 'yesterday')\n"),
    ],
)
def test_a_bad_file_is_refused_with_the_line_and_the_reason(content: str, message: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content, encoding="utf-8")
    result = cortadel("import", str(bad), env={"CORTADEL_DATA": str(tmp_path / "target.db")})
    assert (result.returncode, result.stderr) == (2, message)


# -- migrate -----------------------------------------------------------------------------------------
def test_migrate_sqlite_to_postgres_to_sqlite_keeps_the_export_identical(
    written: tuple[Store, dict[str, Any]], tmp_path: Path
) -> None:
    store, _ = written
    first = export(store, tmp_path / "first.jsonl")
    middle = new_store("postgres", tmp_path, "middle")
    last = new_store("sqlite", tmp_path, "last")
    there = json.loads(ok(cortadel("migrate", "--from", store.location, "--to", middle.location)))
    assert (there["users"], there["memories"], there["resumed"]) == (3, 7, [])
    back = json.loads(ok(cortadel("migrate", "--from", middle.location, "--to", last.location)))
    assert back["copied"] == there["copied"] == lines(first)[-1]["counts"]
    assert export(middle, tmp_path / "middle.jsonl") == first
    assert export(last, tmp_path / "last.jsonl") == first


USERS, PER_USER, DIM = 150, 40, 8


def synthetic_store(path: Path) -> None:
    """Many users written straight through the storage interface (the migration's speed is what matters)."""
    store = SqliteStorage(path)
    rng = np.random.default_rng(7)
    try:
        store.ensure_vector_index(DIM, "test/dim8")
        for u in range(USERS):
            user = f"user-{u:03d}"
            rows = [
                StoredMemory(
                    MemoryRecord(id=f"{user}-m{i}", user_id=user, text=f"Fact {i} of {user}.", created_at=1_790_000_000.0 + i,
                                 fingerprint=f"fp-{i}"),
                    "", rng.standard_normal(DIM).astype(np.float32).tobytes(),
                )
                for i in range(PER_USER)
            ]
            with store.write(user):
                store.load_memories(user, rows)
                store.load_history(user, [HistoryEntry(r.record.id, "ADD", r.record.created_at, {"source": "add"}) for r in rows])
    finally:
        store.close()


def test_an_interrupted_migration_resumes_where_it_stopped(tmp_path: Path) -> None:
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    synthetic_store(source)
    run = subprocess.Popen(
        [sys.executable, "-m", "cortadel_server", "migrate", "--from", str(source), "--to", str(target)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    copied = 0
    deadline = time.monotonic() + 60
    while copied < 20 and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.01)
        copied = users_in(target)
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert run.returncode == -signal.SIGKILL, "the migration finished before it could be interrupted"
    copied = users_in(target)
    assert 20 <= copied < USERS

    resumed = json.loads(ok(cortadel("migrate", "--from", str(source), "--to", str(target))))
    assert (resumed["users"], resumed["memories"]) == (USERS, USERS * PER_USER)
    # Every user copied before the kill is skipped (a user's rows and mark commit together).
    assert len(resumed["resumed"]) == copied and resumed["resumed"] == sorted(resumed["resumed"])
    assert resumed["copied"]["memories"] == (USERS - len(resumed["resumed"])) * PER_USER
    assert export(Store(str(target)), tmp_path / "t.jsonl") == export(Store(str(source)), tmp_path / "s.jsonl")
    with sqlite3.connect(target) as db:  # the marks went once the run completed
        assert db.execute("SELECT count(*) FROM meta WHERE key LIKE 'transfer:%'").fetchone() == (0,)


def users_in(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as db:
            return int(db.execute("SELECT count(DISTINCT user_id) FROM memories").fetchone()[0])
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0


# -- pg_dump -----------------------------------------------------------------------------------------
def test_pg_dump_of_a_postgres_store_restores_every_row_into_a_new_database(
    written: tuple[Store, dict[str, Any]], tmp_path: Path
) -> None:
    store, _ = written
    if not store.location.startswith("postgresql://"):
        pytest.skip("pg_dump is for the PostgreSQL store; SQLite has `cortadel backup` (tests/test_backup.py)")
    from pgserver.postgres_server import POSTGRES_BIN_PATH

    dump = tmp_path / "cortadel.dump"
    ran = subprocess.run([str(POSTGRES_BIN_PATH / "pg_dump"), "--format=custom", "--file", str(dump), "--dbname", store.location],
                         capture_output=True, text=True, check=False, timeout=120)
    assert ran.returncode == 0, ran.stderr
    restored = Store(scratch_database("restored"))
    ran = subprocess.run([str(POSTGRES_BIN_PATH / "pg_restore"), "--no-owner", "--exit-on-error", "--dbname", restored.location, str(dump)],
                         capture_output=True, text=True, check=False, timeout=120)
    assert ran.returncode == 0, ran.stderr
    original = export(store, tmp_path / "original.jsonl")
    assert export(restored, tmp_path / "restored.jsonl") == original
    assert lines(original)[-1]["counts"]["memories"] == 7
