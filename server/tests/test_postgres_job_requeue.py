"""PostgreSQL crashed (``pg_ctl stop -m immediate``) under a background job that is running: the
job worker (pipeline/enrich.py) loses no job, runs it again, and its effect is stored once.

The job is a reconciliation run (curation/reconcile.py) of a real server on a PostgreSQL of the
test's own, whose LLM judge is a scripted OpenAI-compatible server. The judge's first verdict is
held until the database is down, so the run ends while PostgreSQL is gone: neither the run's end
nor the job's can be recorded, and the job row stays 'running', claimed by this very process.
When the database is back the same process takes its liveness lock again, so the row does not
look orphaned: only the worker's requeue of the jobs it left unsettled (``_requeue_unsettled``)
queues it again. Without it the job would stay 'running' until the server restarts.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from support.held_judge import FACTS, REQUEUED, USER, WORKER_ERROR, HeldJudge, add, all_done, held_run, wait_until
from support.scripted_openai import ScriptedOpenAI

from cortadel_server.testing import ServerProcess
from cortadel_server.testing_postgres import own_postgres_server, scratch_database, stopped


def rows(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.fixture()
def database() -> Iterator[tuple[Any, str]]:
    with own_postgres_server() as pg:
        yield pg, scratch_database("requeue", server=pg)


def test_a_job_running_when_postgres_crashes_runs_again_once_and_the_worker_serves_on(
    database: tuple[Any, str], tmp_path: Path
) -> None:
    pg, url = database
    judge = HeldJudge()
    log = tmp_path / "server.log"
    with ScriptedOpenAI() as llm:
        llm.handle("/v1/chat/completions", judge)
        env = {
            "CORTADEL_LLM_URL": llm.v1_url, "CORTADEL_LLM_MODEL": "judge", "CORTADEL_LLM_TIMEOUT": "60",
            # each query met by the outage fails after 1 s (not the default 10): the test stays short
            "CORTADEL_QUERY_TIMEOUT": "1",
        }
        server = ServerProcess(tmp_path / "unused.db", env, log=log, database_url=url)
        server.start()
        try:
            pid = server.pid
            with httpx.Client(base_url=server.base_url, timeout=30) as api:
                ids, run = held_run(api, judge)

                # The run waits on its verdict: both roles applied already, its job claimed once.
                [(status, suggested, auto_approved)] = rows(
                    url, "SELECT status, suggested, auto_approved FROM reconcile_runs WHERE id = %s", run["id"])
                assert (status, suggested, auto_approved) == ("running", 2, 2)
                [(job_id, job_status, attempts, claimer)] = rows(
                    url, "SELECT id, status, attempts, claimed_by FROM jobs WHERE kind = 'reconcile'")
                assert (job_status, attempts) == ("running", 1)

                with stopped(pg):
                    judge.let_go[0].set()
                    # The run ends into the outage; so does the record of its failure (a StorageError
                    # out of run_once): from here only the requeue can free the job. PostgreSQL stays
                    # down until then, or the failure's own record could free it.
                    wait_until(lambda: WORKER_ERROR in log.read_text(errors="replace"), "the worker to meet the outage")

                # Back up: the same process claims the job again, the worker's requeue recorded on it.
                job = "SELECT id, status, attempts, claimed_by, last_error FROM jobs WHERE kind = 'reconcile'"
                assert judge.asked[1].wait(15), f"the job was not run again: {rows(url, job)}"
                assert rows(url, job) == [(job_id, "running", 2, claimer, REQUEUED)]
                judge.let_go[1].set()

                def finished() -> dict[str, Any] | None:
                    body: dict[str, Any] = api.get("/api/v1/reconcile/status", params={"user_id": USER}).json()
                    return body if body["status"] != "running" else None

                done = wait_until(finished, "the run's end")
                assert (done["run"]["id"], done["status"], done["run"]["suggested"], done["run"]["auto_approved"],
                        done["run"]["error"]) == (run["id"], "completed", 3, 3, None)

                # The run's effect is stored once: each suggestion once, the judged merge applied once.
                applied = rows(url, "SELECT kind, subject, status, decided_by, run_id, evidence FROM reconcile_suggestions "
                                    "WHERE user_id = %s ORDER BY kind, subject->>'target'", USER)
                assert [row[:5] for row in applied] == [
                    ("alias", {"target": "dana lee", "alias": "user's manager", "memory_ids": [ids[1]]},
                     "approved", "auto", run["id"]),
                    ("alias", {"target": "jonathan reyes", "alias": "user's dentist", "memory_ids": []},
                     "approved", "auto", run["id"]),
                    ("merge_entities", {"source": "jonathon reyes", "target": "jonathan reyes"}, "approved", "auto", run["id"]),
                ]
                verdicts = [e for e in applied[2][5] if e["rule"] == "llm verdict"]
                assert verdicts == [{"rule": "llm verdict", "same": True, "confidence": 0.97, "model": "judge"}]
                assert rows(url, "SELECT e.canonical, a.alias FROM entity_aliases a JOIN entities e ON e.id = a.entity_id "
                                 "WHERE e.user_id = %s ORDER BY 1, 2", USER) == [
                    ("dan lee", "dan lee"), ("dana lee", "dana lee"), ("dana lee", "user's manager"),
                    ("jonathan reyes", "jonathan reyes"), ("jonathan reyes", "jonathon reyes"),
                    ("jonathan reyes", "user's dentist"),
                ]
                # The judge was asked the same question twice: once per attempt, no more.
                asked = llm.requests_to("/v1/chat/completions")
                assert len(asked) == 2 and asked[0].body == asked[1].body
                assert "Jonathon Reyes" in asked[0].body["messages"][0]["content"]

                # The worker lives on in the same process: a new fact is enriched, and no job is left.
                add(api, "Priya Shah is User's accountant.")
                wait_until(lambda: all_done(api, len(FACTS) + 1), "the new fact's enrichment")
                # its job ends in a commit of its own, after the enrichment's
                wait_until(lambda: rows(url, "SELECT kind, status, attempts FROM jobs") == [], "the enrichment job's end")
            assert server.process is not None and server.process.poll() is None and server.pid == pid
        finally:
            judge.release_all()
            server.stop()

