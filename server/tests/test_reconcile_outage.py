"""The SQLite file locked by another process under a reconciliation run that is running: the run is
not reported failed for it; its job runs again once the file is free, and stores each suggestion once.

A real server on a SQLite file of the test's own, whose LLM judge is a scripted OpenAI-compatible
server (tests/support). The judge's first verdict is held; meanwhile the test opens a connection of
its own to the file and takes the write lock (``BEGIN IMMEDIATE``). Let go, the run's next write
(storing the judged suggestion) waits CORTADEL_QUERY_TIMEOUT for the lock and fails, "database is
locked" (a StorageError): the job has attempts left, so the handler raises it to the job worker
(curation/reconcile.py, ``run_job``), whose record of the failure meets the lock as well. Only
then does the log show the failure, and the test lets the file go. The worker queues the job it
left unsettled again (pipeline/enrich.py, ``_requeue_unsettled``) and the run starts over,
storing only what it had not stored: the same suggestions as a run without the lock
(test_reconcile.py, the run killed while waiting on the judge). A handler that reported the
run failed at once logs the failure first and saves it with the first write after the lock is
gone: the run would end "failed" for good, as it did before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import apsw
import httpx
from support.held_judge import REQUEUED, USER, WORKER_ERROR, HeldJudge, held_run, wait_until
from support.scripted_openai import ScriptedOpenAI

from cortadel_server.testing import ServerProcess

#: seconds a write of the server waits for the lock before it fails (CORTADEL_QUERY_TIMEOUT, the
#: busy timeout of its SQLite connections; default 10): the test stays short
QUERY_TIMEOUT = 1.0
#: what a write met by the lock fails with (storage/sqlite.py, ``_translate``)
LOCKED = "StorageError: database error: database is locked"


def rows(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return list(conn.execute(sql, params))
    finally:
        conn.close()


@contextmanager
def write_locked(db: Path) -> Iterator[apsw.Connection]:
    """Another process's write transaction open on ``db`` while the block runs (WAL: the server's
    reads go on, its writes wait for the lock); rolled back and closed however the block ends."""
    conn = apsw.Connection(str(db))
    try:
        conn.set_busy_timeout(10_000)  # a write of the server's may be committing right now
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        finally:
            conn.execute("ROLLBACK")
    finally:
        conn.close()


def test_a_run_the_locked_file_failed_under_runs_again_and_completes_with_each_suggestion_once(tmp_path: Path) -> None:
    judge = HeldJudge()
    db, log = tmp_path / "cortadel.db", tmp_path / "server.log"

    def logged() -> str:
        return log.read_text(errors="replace")

    with ScriptedOpenAI() as llm:
        llm.handle("/v1/chat/completions", judge)
        env = {
            "CORTADEL_LLM_URL": llm.v1_url, "CORTADEL_LLM_MODEL": "judge", "CORTADEL_LLM_TIMEOUT": "60",
            "CORTADEL_QUERY_TIMEOUT": f"{QUERY_TIMEOUT:g}",
            "CORTADEL_LOG_LEVEL": "info",  # for the run's "starting it over"
        }
        server = ServerProcess(db, env, log=log)
        server.start()
        try:
            pid = server.pid
            with httpx.Client(base_url=server.base_url, timeout=30) as api:
                ids, run = held_run(api, judge)

                # The run waits on its verdict: both roles applied already, its job claimed once.
                run_row = "SELECT status, suggested, auto_approved, error FROM reconcile_runs WHERE id = ?"
                assert rows(db, run_row, run["id"]) == [("running", 2, 2, None)]
                [(job_id, job_status, attempts, claimer)] = rows(
                    db, "SELECT id, status, attempts, claimed_by FROM jobs WHERE kind = 'reconcile'")
                assert (job_status, attempts) == ("running", 1)

                with write_locked(db):
                    judge.let_go[0].set()
                    # The verdict is stored into the lock: the run's write fails after QUERY_TIMEOUT,
                    # and so does the worker's record of it. The lock stays until the log shows it.
                    wait_until(lambda: "database is locked" in logged(), "the run's write to meet the lock")
                assert LOCKED in logged()

                # The file is free: the same process runs the job again, the requeue recorded on it;
                # the run was neither reported failed nor finished meanwhile.
                job = "SELECT id, status, attempts, claimed_by, last_error FROM jobs WHERE kind = 'reconcile'"
                wait_until(lambda: judge.asked[1].is_set() or rows(db, run_row, run["id"])[0][0] != "running",
                           "the job to run again, or the run to end")
                assert rows(db, run_row, run["id"]) == [("running", 2, 2, None)], "the run ended, not run again"
                assert judge.asked[1].is_set()
                assert rows(db, job) == [(job_id, "running", 2, claimer, REQUEUED)]
                # the failure the log showed was the worker's, its record of the job's failure locked out too
                assert WORKER_ERROR in logged() and f"reconcile: run {run['id']} failed" not in logged()
                assert logged().count(f"reconcile: run {run['id']} was interrupted; starting it over") == 1
                judge.let_go[1].set()

                def finished() -> dict[str, Any] | None:
                    body: dict[str, Any] = api.get(
                        "/api/v1/reconcile/status", params={"user_id": USER, "run_id": run["id"]}).json()
                    return body if body["status"] != "running" else None

                done = wait_until(finished, "the run's end")
                ended = done["run"]
                assert (done["status"], ended["id"], ended["status"], ended["suggested"], ended["auto_approved"],
                        ended["error"]) == ("completed", run["id"], "completed", 3, 3, None)
                assert run["created_at"] <= ended["started_at"] <= ended["finished_at"]
                latest = api.get("/api/v1/reconcile/status", params={"user_id": USER}).json()
                assert latest == done

                # What a run without the lock stores (test_reconcile.py): the two roles and the judged
                # merge, all applied, each once and by this run.
                def listed(status: str) -> list[dict[str, Any]]:
                    response = api.get("/api/v1/reconcile/suggestions", params={"user_id": USER, "status": status})
                    assert response.status_code == 200, response.text
                    return sorted(response.json()["items"], key=lambda s: (s["kind"], s["subject"]["target"]))

                approved = listed("approved")
                assert [(s["kind"], s["subject"], s["confidence"], s["decided_by"], s["run_id"]) for s in approved] == [
                    ("alias", {"target": "dana lee", "alias": "user's manager", "memory_ids": [ids[1]]},
                     0.95, "auto", run["id"]),
                    ("alias", {"target": "jonathan reyes", "alias": "user's dentist", "memory_ids": []},
                     0.95, "auto", run["id"]),
                    ("merge_entities", {"source": "jonathon reyes", "target": "jonathan reyes"},
                     0.97, "auto", run["id"]),
                ]
                merge = approved[2]
                assert merge["evidence"][0]["rule"] == "misspelling"
                assert sorted(merge["evidence"][0]["memory_ids"]) == sorted([ids[3], ids[4]])
                assert merge["evidence"][1:] == [
                    {"rule": "llm verdict", "same": True, "confidence": 0.97, "model": "judge"}]
                assert listed("pending") == listed("rejected") == []
                assert rows(db, "SELECT count(*), count(DISTINCT key) FROM reconcile_suggestions WHERE user_id = ?",
                            USER) == [(3, 3)]
                assert rows(db, "SELECT e.canonical, a.alias FROM entity_aliases a JOIN entities e "
                                "ON e.id = a.entity_id WHERE e.user_id = ? ORDER BY 1, 2", USER) == [
                    ("dan lee", "dan lee"), ("dana lee", "dana lee"), ("dana lee", "user's manager"),
                    ("jonathan reyes", "jonathan reyes"), ("jonathan reyes", "jonathon reyes"),
                    ("jonathan reyes", "user's dentist"),
                ]
                assert rows(db, "SELECT id, status, error FROM reconcile_runs WHERE user_id = ?", USER) == [
                    (run["id"], "completed", None)]

                # The judge was asked the one uncertain question twice: once per attempt (the roles
                # are sure enough to go without it), the second time after the first was lost.
                asked = llm.requests_to("/v1/chat/completions")
                assert len(asked) == 2 and asked[0].body == asked[1].body
                assert "Jonathon Reyes" in asked[0].body["messages"][0]["content"]

                # Nothing is left in the queue: the job ended with the run.
                wait_until(lambda: not rows(db, "SELECT id FROM jobs"), "the job's end")
                assert rows(db, "SELECT kind, status, attempts FROM jobs") == []
            assert server.process is not None and server.process.poll() is None and server.pid == pid
        finally:
            judge.release_all()
            server.stop()
