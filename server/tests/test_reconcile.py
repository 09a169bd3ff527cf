"""Reconciliation over REST against a real server: runs, suggestions, approve / reject / undo,
merges by hand, auth, a server killed mid-run, and an LLM judge (the scripted model server).

Undo is checked on the real SQLite file: every row of the user (memories with both time axes,
entities, aliases, links) before applying and after undoing is the same.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import httpx
import numpy as np
import pytest
from conftest import AUTH_SECRET
from support.held_judge import FACTS  # facts whose entities the rules find: a role, a misspelt name, a near name
from support.scripted_openai import Reply, ScriptedOpenAI

from cortadel_server.config import Settings
from cortadel_server.providers import build_embedder
from cortadel_server.storage.base import MemoryRecord, ReconcileRun
from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.testing import ServerProcess, running_server

DONE = ("completed", "failed", "cancelled")


def add_facts(api: httpx.Client, user: str, texts: list[str]) -> list[str]:
    ids = []
    for text in texts:
        response = api.post("/api/v1/memories", json={"user_id": user, "text": text})
        assert response.status_code == 200, response.text
        ids.append(response.json()["id"])
    return ids


def wait_enriched(db: Path, user: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while _rows(db, "SELECT count(*) FROM memories WHERE user_id = ? AND extraction_status = 'pending'", user) != [(0,)]:
        assert time.monotonic() < deadline, "enrichment did not finish"
        time.sleep(0.1)


def wait_run(api: httpx.Client, user: str, run_id: str, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = api.get("/api/v1/reconcile/status", params={"user_id": user, "run_id": run_id}).json()
        if body["status"] in DONE:
            return body
        assert time.monotonic() < deadline, f"run still {body['status']}"
        time.sleep(0.1)


def _rows(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(sql, params))
    finally:
        conn.close()


def dump(db: Path, user: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the user that reconciliation may touch, as stored (but for the version of the
    last write that changed a memory: an undo is a write, which other processes' caches must see)."""
    columns = [name for (name,) in _rows(db, "SELECT name FROM pragma_table_info('memories') WHERE name != ?", "changed_version")]
    return {
        "memories": _rows(db, f"SELECT {', '.join(columns)} FROM memories WHERE user_id = ? ORDER BY rowid", user),
        "entities": _rows(db, "SELECT * FROM entities WHERE user_id = ? ORDER BY id", user),
        "aliases": _rows(db, "SELECT a.* FROM entity_aliases a JOIN entities e ON e.id = a.entity_id "
                             "WHERE e.user_id = ? ORDER BY a.entity_id, a.alias", user),
        "links": _rows(db, "SELECT me.* FROM memory_entities me JOIN entities e ON e.id = me.entity_id "
                           "WHERE e.user_id = ? ORDER BY me.entity_id, me.memory_id", user),
    }


def suggestions(api: httpx.Client, user: str, status: str) -> list[dict[str, Any]]:
    response = api.get("/api/v1/reconcile/suggestions", params={"user_id": user, "status": status})
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


@pytest.fixture(scope="module")
def recon() -> Iterator[ServerProcess]:
    with running_server() as server:
        yield server


@pytest.fixture()
def api(recon: ServerProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=recon.base_url, timeout=30) as client:
        yield client


def test_a_run_applies_what_is_sure_and_leaves_the_rest_for_review(recon: ServerProcess, api: httpx.Client, user: str) -> None:
    ids = add_facts(api, user, FACTS)
    wait_enriched(recon.data, user)
    assert api.get("/api/v1/reconcile/status", params={"user_id": user}).json() == {"status": "idle", "run": None}

    before = time.time()
    started = api.post("/api/v1/reconcile/runs", json={"user_id": user})
    assert started.status_code == 202, started.text
    run = started.json()
    assert (run["status"], run["types"], run["limit"], run["user_id"]) == ("queued", ["entities", "facts"], 500, user)
    assert before <= run["created_at"] <= time.time()

    done = wait_run(api, user, run["id"])
    assert done["status"] == "completed"
    assert (done["run"]["suggested"], done["run"]["auto_approved"], done["run"]["error"]) == (3, 2, None)
    assert run["created_at"] <= done["run"]["started_at"] <= done["run"]["finished_at"] <= time.time()

    approved = sorted(suggestions(api, user, "approved"), key=lambda s: s["subject"]["target"])
    assert [(s["kind"], s["subject"], s["confidence"], s["decided_by"], s["run_id"]) for s in approved] == [
        ("alias", {"target": "dana lee", "alias": "user's manager", "memory_ids": [ids[1]]}, 0.95, "auto", run["id"]),
        ("alias", {"target": "jonathan reyes", "alias": "user's dentist", "memory_ids": []}, 0.95, "auto", run["id"]),
    ]
    [pending] = suggestions(api, user, "pending")
    assert (pending["kind"], pending["subject"], pending["confidence"]) == (
        "merge_entities", {"source": "jonathon reyes", "target": "jonathan reyes"}, 0.85)
    assert pending["evidence"][0]["rule"] == "misspelling"
    assert sorted(pending["evidence"][0]["memory_ids"]) == sorted([ids[3], ids[4]])
    # "Dan Lee" is not "Dana Lee": nothing suggests it
    assert not any("dan lee" in str(s["subject"]) for s in [*approved, pending])
    # the role is now a name of Dana Lee, linked to the fact that only said "User's manager"
    links = _rows(recon.data, "SELECT me.memory_id FROM memory_entities me JOIN entities e ON e.id = me.entity_id "
                              "WHERE e.user_id = ? AND e.canonical = 'dana lee' ORDER BY me.memory_id", user)
    assert [m for (m,) in links] == sorted([ids[0], ids[1]])

    # a second run finds nothing new: what was suggested once is not suggested again
    again = api.post("/api/v1/reconcile/runs", json={"user_id": user, "types": ["entities"], "limit": 50}).json()
    assert again["id"] != run["id"]
    assert wait_run(api, user, again["id"])["run"]["suggested"] == 0


def test_approve_then_undo_restores_every_row(recon: ServerProcess, api: httpx.Client, user: str) -> None:
    add_facts(api, user, FACTS[3:])
    wait_enriched(recon.data, user)
    run = api.post("/api/v1/reconcile/runs", json={"user_id": user}).json()
    wait_run(api, user, run["id"])
    [pending] = suggestions(api, user, "pending")
    before = dump(recon.data, user)

    approved = api.post(f"/api/v1/reconcile/suggestions/{pending['id']}/approve", json={"user_id": user})
    assert approved.status_code == 200, approved.text
    assert (approved.json()["status"], approved.json()["decided_by"]) == ("approved", "hand")
    merged = dict(_rows(recon.data, "SELECT e.canonical, count(a.alias) FROM entities e LEFT JOIN entity_aliases a "
                                    "ON a.entity_id = e.id WHERE e.user_id = ? GROUP BY e.id", user))
    assert merged == {"jonathan reyes": 3, "jonathon reyes": 0}  # its name and the role moved over
    assert dump(recon.data, user) != before

    twice = api.post(f"/api/v1/reconcile/suggestions/{pending['id']}/approve", json={"user_id": user})
    assert twice.status_code == 409
    assert twice.json()["code"] == "conflict"
    assert twice.json()["message"] == f"Suggestion {pending['id']} is approved, not pending"

    undone = api.post(f"/api/v1/reconcile/suggestions/{pending['id']}/undo", json={"user_id": user})
    assert undone.status_code == 200, undone.text
    assert (undone.json()["status"], undone.json()["decided_by"]) == ("rejected", "hand")
    assert undone.json()["undone_at"] >= undone.json()["created_at"]
    assert dump(recon.data, user) == before


def prepared_store(db: Path, user: str) -> dict[str, str]:
    """Two current facts where the later one replaces the earlier: as an import or an older
    version of the server may have left them (written past the pipeline, through the storage)."""
    embedder = build_embedder(Settings())
    store = SqliteStorage(db)
    facts = {"berlin": ("User lives in Berlin.", 1_700_000_000.0), "lisbon": ("User moved to Lisbon.", 1_720_000_000.0),
             "dog": ("User has a dog named Rex.", 1_710_000_000.0)}
    ids = {key: str(uuid.uuid4()) for key in facts}
    for key, (text, at) in facts.items():
        vector = np.asarray(embedder.embed([text])[0])
        store.insert_memory(MemoryRecord(id=ids[key], user_id=user, text=text, created_at=at, valid_at=at), vector)
    store.close()
    return ids


def test_a_stale_fact_is_superseded_and_its_undo_restores_both_time_axes(tmp_path: Path) -> None:
    db = tmp_path / "cortadel.db"
    ids = prepared_store(db, "erin")
    with running_server(data=db) as server, httpx.Client(base_url=server.base_url, timeout=30) as api:
        before = dump(db, "erin")
        run = api.post("/api/v1/reconcile/runs", json={"user_id": "erin", "types": ["facts"]}).json()
        started = time.time()
        assert wait_run(api, "erin", run["id"])["run"]["auto_approved"] == 1
        [applied] = suggestions(api, "erin", "approved")
        assert (applied["kind"], applied["subject"], applied["confidence"]) == (
            "supersede", {"stale": ids["berlin"], "by": ids["lisbon"]}, 0.93)
        assert applied["evidence"][0]["rule"] == "new residence"

        old = api.get(f"/api/v1/memories/{ids['berlin']}", params={"user_id": "erin"}).json()
        assert (old["state"], old["is_current"], old["superseded_by"]) == ("superseded", False, ids["lisbon"])
        current = api.get("/api/v1/memories", params={"user_id": "erin"}).json()
        assert sorted(m["id"] for m in current["items"]) == sorted([ids["lisbon"], ids["dog"]])
        # valid time: Berlin held until Lisbon began; record time: believed until the run
        [(invalid_at, expired_at)] = _rows(db, "SELECT invalid_at, expired_at FROM memories WHERE id = ?", ids["berlin"])
        assert invalid_at == 1_720_000_000.0
        assert started - 60 <= expired_at <= time.time()

        undone = api.post(f"/api/v1/reconcile/suggestions/{applied['id']}/undo", json={"user_id": "erin"})
        assert undone.status_code == 200, undone.text
        assert dump(db, "erin") == before
        again = api.post(f"/api/v1/reconcile/suggestions/{applied['id']}/undo", json={"user_id": "erin"})
        assert (again.status_code, again.json()["message"]) == (
            409, f"Suggestion {applied['id']} is rejected: only an applied one can be undone")


def test_merge_by_hand_is_listed_approved_and_undone_like_any(recon: ServerProcess, api: httpx.Client, user: str) -> None:
    add_facts(api, user, ["User met Dan Lee at the conference.", "User's manager is Dana Lee."])
    wait_enriched(recon.data, user)
    before = dump(recon.data, user)
    merged = api.post("/api/v1/reconcile/merges", json={"user_id": user, "source": "dan lee", "target": "dana lee"})
    assert merged.status_code == 200, merged.text
    body = merged.json()
    assert (body["kind"], body["status"], body["decided_by"], body["confidence"], body["subject"]) == (
        "merge_entities", "approved", "hand", 1.0, {"source": "dan lee", "target": "dana lee"})
    assert [s["id"] for s in suggestions(api, user, "approved")] == [body["id"]]
    gone = api.post("/api/v1/reconcile/merges", json={"user_id": user, "source": "dan lee", "target": "dana lee"})
    assert (gone.status_code, gone.json()["message"]) == (409, "'dan lee' is already merged into 'dana lee'")
    back = api.post("/api/v1/reconcile/merges", json={"user_id": user, "source": "dana lee", "target": "dan lee"})
    assert (back.status_code, back.json()["message"]) == (409, "'dan lee' is already merged into 'dana lee'")
    assert api.post(f"/api/v1/reconcile/suggestions/{body['id']}/undo", json={"user_id": user}).status_code == 200
    assert dump(recon.data, user) == before
    # merged again after the undo: the same record is applied once more
    again = api.post("/api/v1/reconcile/merges", json={"user_id": user, "source": "dan lee", "target": "dana lee"})
    assert (again.status_code, again.json()["id"], again.json()["status"]) == (200, body["id"], "approved")


def test_bad_requests_get_clear_4xx(api: httpx.Client, user: str) -> None:
    bad_type = api.post("/api/v1/reconcile/runs", json={"user_id": user, "types": ["people"]})
    assert bad_type.status_code == 400
    assert bad_type.json()["errors"] == {"types": ["Unknown type 'people': expected any of entities, facts"]}
    bad_limit = api.post("/api/v1/reconcile/runs", json={"user_id": user, "limit": 0})
    assert (bad_limit.status_code, list(bad_limit.json()["errors"])) == (400, ["limit"])
    bad_status = api.get("/api/v1/reconcile/suggestions", params={"user_id": user, "status": "maybe"})
    assert bad_status.json()["errors"] == {"status": ["Must be one of pending, approved, rejected"]}
    missing = api.post("/api/v1/reconcile/suggestions/nope/approve", json={"user_id": user})
    assert (missing.status_code, missing.json()["code"], missing.json()["message"]) == (404, "not_found", "Suggestion nope not found")
    no_run = api.get("/api/v1/reconcile/status", params={"user_id": user, "run_id": "nope"})
    assert (no_run.status_code, no_run.json()["message"]) == (404, "Reconciliation run nope not found")
    unknown = api.post("/api/v1/reconcile/merges", json={"user_id": user, "source": "zed", "target": "ann"})
    assert (unknown.status_code, unknown.json()["message"]) == (409, "Entity 'zed' no longer exists (merged or deleted since)")
    extra = api.post("/api/v1/reconcile/runs", json={"user_id": user, "everything": True})
    assert (extra.status_code, list(extra.json()["errors"])) == (400, ["everything"])


def test_a_user_key_sees_and_decides_only_its_own_suggestions() -> None:
    with running_server(env={"CORTADEL_AUTH_SECRET": AUTH_SECRET}) as server:
        alice = {"Authorization": f"Bearer {server.mint_key('alice')}"}
        bob = {"Authorization": f"Bearer {server.mint_key('bob')}"}
        with httpx.Client(base_url=server.base_url, timeout=30) as api:
            for text in FACTS[3:]:
                assert api.post("/api/v1/memories", json={"user_id": "bob", "text": text}, headers=bob).status_code == 200
            wait_enriched(server.data, "bob")
            run = api.post("/api/v1/reconcile/runs", json={"user_id": "bob"}, headers=bob).json()
            deadline = time.monotonic() + 60
            while api.get("/api/v1/reconcile/status", headers=bob).json()["status"] not in DONE:
                assert time.monotonic() < deadline
                time.sleep(0.1)
            [pending] = api.get("/api/v1/reconcile/suggestions", params={"status": "pending"}, headers=bob).json()["items"]

            peek = api.get("/api/v1/reconcile/suggestions", params={"user_id": "bob"}, headers=alice)
            assert (peek.status_code, peek.json()["message"]) == (403, "API key is not valid for user 'bob'")
            assert api.get("/api/v1/reconcile/status", params={"user_id": "bob", "run_id": run["id"]}, headers=alice).status_code == 403
            steal = api.post(f"/api/v1/reconcile/suggestions/{pending['id']}/approve", json={"user_id": "bob"}, headers=alice)
            assert steal.status_code == 403
            # alice's own namespace does not hold bob's suggestion
            mine = api.post(f"/api/v1/reconcile/suggestions/{pending['id']}/approve", json={"user_id": "alice"}, headers=alice)
            assert mine.status_code == 404
            assert api.get("/api/v1/reconcile/suggestions", headers=alice).json()["total"] == 0
            anonymous = api.get("/api/v1/reconcile/suggestions", params={"user_id": "bob"})
            assert anonymous.status_code == 401


def test_killed_mid_run_the_run_starts_over_and_nothing_is_half_applied(tmp_path: Path) -> None:
    """The run waits on the LLM judge for its uncertain finding; the server is killed there. At the
    next start the run resumes from the queue: the alias applied before the kill is not applied
    twice, and the judged merge is applied once."""
    verdict = Reply.chat({"same": True, "confidence": 0.97})
    with ScriptedOpenAI() as llm:
        llm.enqueue("/v1/chat/completions", Reply.hung())
        env = {"CORTADEL_LLM_URL": llm.v1_url, "CORTADEL_LLM_MODEL": "judge", "CORTADEL_LLM_TIMEOUT": "120"}
        server = ServerProcess(tmp_path / "cortadel.db", env)
        server.start()
        try:
            with httpx.Client(base_url=server.base_url, timeout=30) as api:
                add_facts(api, "kim", FACTS)
                wait_enriched(server.data, "kim")
                run = api.post("/api/v1/reconcile/runs", json={"user_id": "kim"}).json()
                deadline = time.monotonic() + 30
                while not llm.requests:
                    assert time.monotonic() < deadline, "the judge was never asked"
                    time.sleep(0.05)
                # one run at a time: asking again returns the running one
                same = api.post("/api/v1/reconcile/runs", json={"user_id": "kim"}).json()
                assert (same["id"], same["status"]) == (run["id"], "running")
                counted = api.get("/api/v1/reconcile/status", params={"user_id": "kim"}).json()["run"]
                assert (counted["suggested"], counted["auto_approved"]) == (2, 2)
            server.process.kill()  # type: ignore[union-attr]
            server.process.wait()  # type: ignore[union-attr]
            assert _rows(server.data, "SELECT status FROM reconcile_runs WHERE id = ?", run["id"]) == [("running",)]

            llm.handle("/v1/chat/completions", lambda request: verdict)
            server.start()
            with httpx.Client(base_url=server.base_url, timeout=30) as api:
                done = wait_run(api, "kim", run["id"])
                assert (done["status"], done["run"]["suggested"], done["run"]["auto_approved"]) == ("completed", 3, 3)
                approved = suggestions(api, "kim", "approved")
                assert sorted(s["kind"] for s in approved) == ["alias", "alias", "merge_entities"]
                [merge] = [s for s in approved if s["kind"] == "merge_entities"]
                assert merge["confidence"] == 0.97
                assert merge["evidence"][-1] == {"rule": "llm verdict", "same": True, "confidence": 0.97, "model": "judge"}
            assert _rows(server.data, "SELECT count(*) FROM jobs WHERE user_id = 'kim' AND kind = 'reconcile'") == [(0,)]
            aliases = _rows(server.data, "SELECT e.canonical, a.alias FROM entity_aliases a JOIN entities e ON e.id = a.entity_id "
                                         "WHERE e.user_id = 'kim' ORDER BY 1, 2")
            assert aliases == [("dan lee", "dan lee"), ("dana lee", "dana lee"), ("dana lee", "user's manager"),
                               ("jonathan reyes", "jonathan reyes"), ("jonathan reyes", "jonathon reyes"),
                               ("jonathan reyes", "user's dentist")]
        finally:
            server.stop()


def test_a_cancelled_run_stops_before_its_next_suggestion(tmp_path: Path) -> None:
    with ScriptedOpenAI() as llm:
        llm.enqueue("/v1/chat/completions", Reply.hung())
        env = {"CORTADEL_LLM_URL": llm.v1_url, "CORTADEL_LLM_MODEL": "judge", "CORTADEL_LLM_TIMEOUT": "2"}
        with running_server(env=env, data=tmp_path / "cortadel.db") as server, \
                httpx.Client(base_url=server.base_url, timeout=30) as api:
            add_facts(api, "liu", FACTS)
            wait_enriched(server.data, "liu")
            run = api.post("/api/v1/reconcile/runs", json={"user_id": "liu"}).json()
            deadline = time.monotonic() + 30
            while not llm.requests:  # the run waits on the judge for its uncertain merge
                assert time.monotonic() < deadline, "the judge was never asked"
                time.sleep(0.05)
            cancelled = api.post(f"/api/v1/reconcile/runs/{run['id']}/cancel", json={"user_id": "liu"})
            assert (cancelled.status_code, cancelled.json()["status"]) == (200, "cancelled")
            done = wait_run(api, "liu", run["id"])
            assert (done["status"], done["run"]["suggested"], done["run"]["auto_approved"]) == ("cancelled", 2, 2)
            assert suggestions(api, "liu", "pending") == []  # the judged merge was never stored
            again = api.post(f"/api/v1/reconcile/runs/{run['id']}/cancel", json={"user_id": "liu"})
            assert (again.status_code, again.json()["message"]) == (
                409, f"Run {run['id']} is cancelled: only a queued or running run can be cancelled")


def test_a_run_whose_job_gave_up_is_reported_failed_by_the_next_start(tmp_path: Path) -> None:
    """A run left "running" by a job that gave up (the database failed under its last attempt
    before the run's end could be saved) would be returned by every start, as the run in progress,
    and never end. The next start reports it failed and queues a new run, which completes."""
    db = tmp_path / "cortadel.db"
    store = SqliteStorage(db)
    try:  # the state a job that gave up leaves: its run running, its job failed for good
        stale = ReconcileRun(str(uuid.uuid4()), "ola", "running", ["entities", "facts"], 500, 1_790_000_000.0, started_at=1_790_000_001.0)
        store.save_reconcile_run(stale)
        store.enqueue_job("reconcile", "ola", None, {"run_id": stale.id})
        [job] = store.claim_jobs(time.time() + 1, 1)
        store.fail_job(job.id, "StorageError: database error: database is locked", None)
    finally:
        store.close()
    with running_server(data=db) as server, httpx.Client(base_url=server.base_url, timeout=30) as api:
        add_facts(api, "ola", FACTS)
        wait_enriched(server.data, "ola")
        started = api.post("/api/v1/reconcile/runs", json={"user_id": "ola"})
        assert started.status_code == 202, started.text
        run = started.json()
        assert run["id"] != stale.id and run["status"] in ("queued", "running")
        old = api.get("/api/v1/reconcile/status", params={"user_id": "ola", "run_id": stale.id}).json()
        assert (old["status"], old["run"]["error"]) == (
            "failed", "its job ended without finishing it (the database failed under every attempt)")
        assert time.time() - 30 < old["run"]["finished_at"] <= time.time()
        done = wait_run(api, "ola", run["id"])
        assert (done["status"], done["run"]["suggested"], done["run"]["auto_approved"]) == ("completed", 3, 2)
        again = api.post("/api/v1/reconcile/runs", json={"user_id": "ola"}).json()  # nothing stale now: a new run
        assert again["id"] not in (stale.id, run["id"])


def test_scheduled_runs_reconcile_users_who_wrote(tmp_path: Path) -> None:
    with running_server(env={"CORTADEL_RECONCILE_EVERY": "1"}, data=tmp_path / "cortadel.db") as server, \
            httpx.Client(base_url=server.base_url, timeout=30) as api:
        add_facts(api, "sam", FACTS[3:])
        deadline = time.monotonic() + 30
        while (status := api.get("/api/v1/reconcile/status", params={"user_id": "sam"}).json())["status"] != "completed":
            assert time.monotonic() < deadline, status
            time.sleep(0.2)
        assert status["run"]["types"] == ["entities", "facts"]
        assert api.get("/api/v1/reconcile/status", params={"user_id": "nobody"}).json()["status"] == "idle"
