"""`cortadel serve` on PostgreSQL: a bad database stops it at start with one line, and several
server processes on one database behave as one server (stateless replicas)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.timeline import CITIES, add_all_at_once, check_one_home_at_every_instant, seconds, versions

from cortadel_server.storage.postgres import PostgresStorage
from cortadel_server.testing import ServerProcess
from cortadel_server.testing_postgres import postgres_server, scratch_database


def start_failure(database_url: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cortadel_server", "serve", "--port", "0", "--data", str(tmp_path / "unused.db")],
        env={**os.environ, "CORTADEL_DATABASE_URL": database_url}, capture_output=True, text=True, timeout=60, check=False,
    )


def test_an_unreachable_database_stops_the_server_with_one_line(tmp_path: Path) -> None:
    done = start_failure("postgresql://cortadel:secret@127.0.0.1:1/memories", tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(
        "cortadel: CORTADEL_DATABASE_URL: cannot connect to postgresql://cortadel@127.0.0.1:1/memories: "
    )
    assert "Connection refused" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "secret" not in done.stderr  # the password is never shown


def test_a_database_without_pgvector_stops_the_server_with_one_line(tmp_path: Path) -> None:
    # A role that may not create the (untrusted) vector extension, owning a database without it.
    server = postgres_server()
    server.psql("DO $$ BEGIN CREATE ROLE plain LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    name = scratch_database("novector").split("@/", 1)[1].split("?", 1)[0]
    server.psql(f"ALTER DATABASE {name} OWNER TO plain")
    url = server.get_uri(name).replace("postgresql://postgres:", "postgresql://plain:")
    done = start_failure(url, tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        "cortadel: CORTADEL_DATABASE_URL: the database has no usable pgvector extension (permission denied to "
        'create extension "vector"); install pgvector on the server, or run CREATE EXTENSION vector as a superuser\n'
    )


def test_a_database_that_does_not_store_utf8_stops_the_server_with_one_line(tmp_path: Path) -> None:
    # What initdb makes on a machine without a locale (a bare container): psycopg would hand text back as bytes.
    server = postgres_server()
    name = f"ascii_{os.getpid()}"
    server.psql(f"DROP DATABASE IF EXISTS {name}")
    server.psql(f"CREATE DATABASE {name} ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0")
    done = start_failure(server.get_uri(name), tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        "cortadel: CORTADEL_DATABASE_URL: the database's encoding is SQL_ASCII, not UTF8; create it with "
        "ENCODING 'UTF8' (initdb --encoding=UTF8, or CREATE DATABASE … ENCODING 'UTF8' TEMPLATE template0)\n"
    )


def test_an_unknown_scheme_is_refused_at_start(tmp_path: Path) -> None:
    done = start_failure("mysql://db/memories", tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        "cortadel: CORTADEL_DATABASE_URL: unsupported scheme in 'mysql' (expected sqlite:///path or postgresql://…)\n"
    )


FACTS = [  # (fact, a query that finds it)
    ("My sister Mara lives in Reykjavik.", "Where does Mara live?"),
    ("The wifi password at the cabin is pinecone42.", "cabin wifi password"),
    ("I am allergic to hazelnuts.", "hazelnuts allergy"),
    ("Our team standup is at 9:15 every weekday.", "when is standup"),
    ("My bike is a green Bianchi from 2019.", "green Bianchi bike"),
]


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[ServerProcess]]:
    url = scratch_database("replicas")
    folder = tmp_path_factory.mktemp("replicas")
    servers = [ServerProcess(folder / f"unused-{i}.db", database_url=url) for i in range(3)]
    try:
        for server in servers:
            server.start()
        yield servers
    finally:
        for server in servers:
            server.stop()


def test_a_write_through_one_replica_is_found_through_the_other_at_once(replicas: list[ServerProcess]) -> None:
    a, b = (httpx.Client(base_url=s.base_url, timeout=30) for s in replicas[:2])
    with a, b:
        for text, query in FACTS:
            added = a.post("/api/v1/memories", json={"user_id": "shared", "text": text, "infer": False})
            assert added.status_code == 200 and added.json()["event"] == "ADD"
            found = b.post("/api/v1/memories/search", json={"user_id": "shared", "query": query, "top_k": 1})
            assert found.status_code == 200
            assert [r["id"] for r in found.json()["results"]] == [added.json()["id"]]
            assert found.json()["results"][0]["content"] == text
        listed = b.get("/api/v1/memories", params={"user_id": "shared"})
        assert listed.json()["total"] == 5


@pytest.fixture()
def clients(replicas: list[ServerProcess]) -> Iterator[list[httpx.Client]]:
    """A client of each replica."""
    opened = [httpx.Client(base_url=s.base_url, timeout=60) for s in replicas]
    yield opened
    for client in opened:
        client.close()


def test_twenty_identical_concurrent_adds_over_three_replicas_leave_one_row(
    replicas: list[ServerProcess], clients: list[httpx.Client],
) -> None:
    outcomes = add_all_at_once(clients, [{"user_id": "racer", "text": "My locker code is 4471."}] * 20)
    assert sorted(r["event"] for r in outcomes) == ["ADD"] + ["SKIP_DUPLICATE"] * 19
    assert len({r["id"] for r in outcomes}) == 1  # every answer names the one row
    for server in replicas:
        listed = httpx.get(f"{server.base_url}/api/v1/memories", params={"user_id": "racer"}, timeout=30).json()
        assert listed["total"] == 1
        assert listed["items"][0]["content"] == "User's locker code is 4471."


def test_twenty_concurrent_moves_over_three_replicas_leave_one_home_and_one_chain(clients: list[httpx.Client]) -> None:
    results = add_all_at_once(clients, [{"user_id": "mover", "text": f"I live in {city}."} for city in CITIES])
    assert sorted(r["event"] for r in results) == ["ADD"] + ["SUPERSEDE"] * 19
    for client in clients:  # every replica reads the one timeline
        rows = versions(client, "mover")
        check_one_home_at_every_instant(client, "mover", rows)
        # The writes took the user's turn one after another: each version ends where the next begins.
        chain = sorted(rows, key=lambda r: seconds(r["valid_at"]))
        assert [r["invalid_at"] for r in chain[:-1]] == [r["valid_at"] for r in chain[1:]]


CLAIM_AND_HANG = """
import sys, time
from cortadel_server.storage.postgres import PostgresStorage
store = PostgresStorage(sys.argv[1])
store.enqueue_job("enrich", sys.argv[2], sys.argv[3], {})
job = store.claim_job(time.time() + 1)
print(job.id if job is not None else "", flush=True)
time.sleep(600)
"""


def test_a_job_of_a_replica_killed_mid_job_is_run_by_another_once(replicas: list[ServerProcess], clients: list[httpx.Client]) -> None:
    added = clients[0].post("/api/v1/memories", json={"user_id": "claims", "text": "I moved to Leeds.", "infer": False}).json()
    url = replicas[0].database_url
    assert url is not None
    storage = PostgresStorage(url)
    try:
        # A fourth server process claims an enrichment of the memory and hangs holding it: mid-job.
        while True:
            claimer = subprocess.Popen([sys.executable, "-c", CLAIM_AND_HANG, url, "claims", added["id"]],
                                       stdout=subprocess.PIPE, text=True)
            assert claimer.stdout is not None
            job_id = claimer.stdout.readline().strip()
            if job_id:
                break
            claimer.kill()  # a replica's worker took the job between the enqueue and the claim: again
            claimer.communicate()
        time.sleep(2.5)  # the replicas look for work every second: none takes a live claimer's job
        assert storage.job_groups()[0].status == "running"
        assert [h.event for h in storage.history("claims", added["id"])] == ["ADD"]
        claimer.kill()
        claimer.communicate()
        deadline = time.monotonic() + 30
        while storage.pending_jobs():
            assert time.monotonic() < deadline, "no replica took over the killed process's job"
            time.sleep(0.1)
        enriched = [h.detail for h in storage.history("claims", added["id"]) if h.event == "ENRICH"]
        assert enriched == [{"entities": ["leeds"], "categories": ["personal"]}]  # run once, by one replica
    finally:
        storage.close()


def vector_hits(client: httpx.Client, user_id: str, query: str) -> list[tuple[str, str]]:
    """(id, content) of a search by the vector arm alone."""
    found = client.post("/api/v1/memories/search", json={"user_id": user_id, "query": query, "top_k": 3, "mode": "vector"})
    assert found.status_code == 200
    return [(r["id"], r["content"]) for r in found.json()["results"]]


def test_a_replica_searching_vectors_in_process_sees_the_other_replicas_writes(replicas: list[ServerProcess]) -> None:
    # B caches the user's vectors at its first search; every later write goes through A, so B
    # finds them only if it notices the user's version moved and reloads.
    a, b = (httpx.Client(base_url=s.base_url, timeout=30) for s in replicas[:2])
    with a, b:
        ids = []
        for text, _ in FACTS[:3]:
            added = a.post("/api/v1/memories", json={"user_id": "vectors", "text": text, "infer": False})
            assert added.status_code == 200 and added.json()["event"] == "ADD"
            ids.append(added.json()["id"])
            assert vector_hits(b, "vectors", text)[0] == (ids[-1], text)
        assert {i for i, _ in vector_hits(b, "vectors", FACTS[0][0])} == set(ids)

        deleted = a.request("DELETE", "/api/v1/memories", json={"user_id": "vectors", "memory_ids": [ids[1]]})
        assert deleted.status_code == 200 and deleted.json()["message"] == "Deleted 1 memory"
        assert {i for i, _ in vector_hits(b, "vectors", FACTS[1][0])} == {ids[0], ids[2]}

        # A replica that wrote itself keeps its cache current too (write-through), then sees A's write.
        own = b.post("/api/v1/memories", json={"user_id": "vectors", "text": FACTS[3][0], "infer": False}).json()["id"]
        assert vector_hits(b, "vectors", FACTS[3][0])[0] == (own, FACTS[3][0])
        last = a.post("/api/v1/memories", json={"user_id": "vectors", "text": FACTS[4][0], "infer": False}).json()["id"]
        assert vector_hits(b, "vectors", FACTS[4][0])[0] == (last, FACTS[4][0])
        assert vector_hits(a, "vectors", FACTS[3][0])[0] == (own, FACTS[3][0])
