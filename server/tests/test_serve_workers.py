"""`cortadel serve --workers N`: worker processes on one port are one server.

Which worker served a connection is read from /proc: the worker whose file descriptors hold the
server side of that TCP connection.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from cortadel_server.storage.sqlite import SqliteStorage
from cortadel_server.testing import ServerProcess, connection_owners, database_for, worker_pids


@pytest.fixture(scope="module")
def workers(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("workers")
    server = ServerProcess(folder / "cortadel.db", env={"CORTADEL_WORKERS": "2"}, database_url=database_for(backend))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def searches_on_their_own_connections(server: ServerProcess, user: str, query: str, count: int) -> tuple[list[list[str]], set[int]]:
    """``count`` searches at once, each over a connection of its own held open until all answered:
    the contents each found, and the workers that served them."""
    clients = [httpx.Client(base_url=server.base_url, timeout=30) for _ in range(count)]
    try:
        def search(client: httpx.Client) -> list[str]:
            response = client.post("/api/v1/memories/search", json={"user_id": user, "query": query, "top_k": 3})
            assert response.status_code == 200
            return [r["content"] for r in response.json()["results"]]

        with ThreadPoolExecutor(8) as pool:
            found = list(pool.map(search, clients))
        owners = connection_owners(server.port, worker_pids(server.pid))
        return found, set(owners.values())
    finally:
        for client in clients:
            client.close()


def test_two_worker_processes_serve_the_one_port(workers: ServerProcess) -> None:
    pids = worker_pids(workers.pid)
    assert len(pids) == 2 and workers.pid not in pids
    found, served_by = searches_on_their_own_connections(workers, "nobody", "anything", 40)
    assert found == [[]] * 40
    assert served_by == set(pids)


def test_a_worker_answers_without_waiting_for_the_clients_delayed_ack(workers: ServerProcess, user: str) -> None:
    # Nagle's algorithm left on holds a response's last segment until the client acknowledges the
    # one before, which a client delays by 40 ms: then no answer on a kept-alive connection comes sooner.
    with httpx.Client(base_url=workers.base_url, timeout=30) as client:
        seconds = []
        for _ in range(20):
            started = time.perf_counter()
            response = client.post("/api/v1/memories/search", json={"user_id": user, "query": "anything"})
            seconds.append(time.perf_counter() - started)
            assert response.status_code == 200 and response.json()["results"] == []
    assert min(seconds) < 0.03


def test_identical_concurrent_adds_through_the_port_leave_one_row(workers: ServerProcess, user: str) -> None:
    body = {"user_id": user, "text": "My locker code is 4471."}

    def add(_: int) -> tuple[int, str]:
        response = httpx.post(f"{workers.base_url}/api/v1/memories", json=body, timeout=60)  # a connection each
        return response.status_code, response.json()["event"]

    with ThreadPoolExecutor(20) as pool:
        outcomes = list(pool.map(add, range(20)))
    assert sorted(outcomes) == [(200, "ADD")] + [(200, "SKIP_DUPLICATE")] * 19
    listed = httpx.get(f"{workers.base_url}/api/v1/memories", params={"user_id": user}, timeout=30).json()
    assert listed["total"] == 1
    assert listed["items"][0]["content"] == "User's locker code is 4471."


def test_a_write_through_one_worker_is_found_by_the_next_searches_on_both(workers: ServerProcess, user: str) -> None:
    first = httpx.post(f"{workers.base_url}/api/v1/memories", timeout=30,
                       json={"user_id": user, "text": "My sister Mara lives in Reykjavik.", "infer": False})
    assert first.status_code == 200 and first.json()["event"] == "ADD"
    # Both workers search the user first, so each holds the user's vectors and terms before the write.
    warm, served_by = searches_on_their_own_connections(workers, user, "Where does Mara live?", 40)
    assert warm == [["My sister Mara lives in Reykjavik."]] * 40 and len(served_by) == 2

    added = httpx.post(f"{workers.base_url}/api/v1/memories", timeout=30,
                       json={"user_id": user, "text": "The wifi password at the cabin is pinecone42.", "infer": False})
    assert added.status_code == 200 and added.json()["event"] == "ADD"
    found, served_by = searches_on_their_own_connections(workers, user, "cabin wifi password", 40)
    assert [hits[0] for hits in found] == ["The wifi password at the cabin is pinecone42."] * 40
    assert served_by == set(worker_pids(workers.pid))


def kill_a_worker(server: ServerProcess) -> list[int]:
    """SIGKILL one worker; once its replacement serves, the workers' pids."""
    before = worker_pids(server.pid)
    os.kill(before[0], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while True:
        now = worker_pids(server.pid)
        if len(now) == 2 and before[0] not in now:
            break
        health = httpx.get(f"{server.base_url}/api/health", timeout=30)  # the other worker answers meanwhile
        assert health.status_code == 200 and health.json()["status"] == "ok"
        assert time.monotonic() < deadline, f"no replacement for worker {before[0]}: {now}"
        time.sleep(0.2)
    assert before[1] in now
    while (served_by := searches_on_their_own_connections(server, "nobody", "anything", 40)[1]) != set(now):
        assert served_by == {before[1]}  # the replacement is still loading: the other one serves everything
        assert time.monotonic() < deadline, f"the replacement {now} never served"
    return now


def test_a_killed_worker_is_replaced_and_the_port_keeps_answering(workers: ServerProcess) -> None:
    before = worker_pids(workers.pid)
    after = kill_a_worker(workers)
    assert len(set(before) & set(after)) == 1


def test_a_job_whose_claimer_is_killed_is_run_by_a_worker(workers: ServerProcess, backend: str, user: str) -> None:
    if backend != "sqlite":
        pytest.skip("PostgreSQL's replicas take over a dead claimer's jobs (test_storage_contract.py)")
    added = httpx.post(f"{workers.base_url}/api/v1/memories", timeout=30,
                       json={"user_id": user, "text": "I moved to Leeds.", "infer": False}).json()
    store = SqliteStorage(workers.data)
    try:
        deadline = time.monotonic() + 30
        while store.pending_jobs():  # whatever the add queued, the workers run first
            assert time.monotonic() < deadline, "the workers never ran the add's jobs"
            time.sleep(0.1)
        enriched = [h.detail["entities"] for h in store.history(user, added["id"]) if h.event == "ENRICH"]
        # Another process enqueues an enrichment of the memory and claims it in the same transaction,
        # so no worker sees it queued; then it hangs, holding the job.
        claimer = subprocess.Popen([sys.executable, "-c", (
            "import sys, time\n"
            "from pathlib import Path\n"
            "from cortadel_server.storage.sqlite import SqliteStorage\n"
            f"store = SqliteStorage(Path({str(workers.data)!r}))\n"
            "with store.write():\n"
            f"    store.enqueue_job('enrich', {user!r}, {added['id']!r}, {{}})\n"
            "    job = store.claim_job(time.time() + 1)\n"
            "print(job.id, flush=True)\n"
            "time.sleep(600)\n"
        )], stdout=subprocess.PIPE, text=True)
        try:
            assert claimer.stdout is not None
            job_id = int(claimer.stdout.readline())
            claimer.stdout.close()
            [(held_by,)] = store._rows("SELECT claimed_by FROM jobs WHERE id = ?", (job_id,))
            # A worker that starts (here, a killed one's replacement) and the workers polling the
            # queue every second leave a live claimer its job.
            kill_a_worker(workers)
            time.sleep(1.5)
            assert store._rows("SELECT status, attempts, claimed_by FROM jobs WHERE id = ?", (job_id,)) == [
                ("running", 1, held_by)
            ]
        finally:
            claimer.kill()
            claimer.wait()
        deadline = time.monotonic() + 30
        while store._rows("SELECT 1 FROM jobs WHERE id = ?", (job_id,)):
            assert time.monotonic() < deadline, "no worker took over the killed process's job"
            time.sleep(0.1)
        enrichments = [h.detail["entities"] for h in store.history(user, added["id"]) if h.event == "ENRICH"]
        assert enrichments == [*enriched, ["leeds"]]  # the taken-over job ran, once
    finally:
        store.close()


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def mcp_post(client: httpx.Client, path: str, message: dict[str, object], session: str | None) -> httpx.Response:
    return client.post(path, json=message, headers={**MCP_HEADERS, **({"mcp-session-id": session} if session else {})})


def tool_result(response: httpx.Response) -> Any:
    """The structured result of a tool call answered as one server-sent event."""
    assert response.status_code == 200, response.text
    [data] = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    return json.loads(data)["result"]["structuredContent"]


def test_an_mcp_session_over_http_works_whichever_worker_takes_each_request(workers: ServerProcess, user: str) -> None:
    path = f"/mcp/claude/{user}"
    with httpx.Client(base_url=workers.base_url, timeout=30) as client:
        opened = mcp_post(client, path, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}, None)
        assert opened.status_code == 200
        session = opened.headers.get("mcp-session-id")  # none: no worker keeps a session the other cannot see
        assert mcp_post(client, path, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session).status_code == 202
        added = mcp_post(client, path, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "add_memories", "arguments": {"memories": ["I keep the spare key under the blue pot."]}}}, session)
        assert [r["event"] for r in tool_result(added)["results"]] == ["ADD"]

    clients = [httpx.Client(base_url=workers.base_url, timeout=30) for _ in range(40)]
    try:
        def search(n: int) -> list[str]:
            response = mcp_post(clients[n], path, {"jsonrpc": "2.0", "id": 3 + n, "method": "tools/call", "params": {
                "name": "search_memory", "arguments": {"query": "spare key"}}}, session)
            return [r["content"] for r in tool_result(response)["results"]]

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(search, range(len(clients))))  # each on a connection of its own
        served_by = set(connection_owners(workers.port, worker_pids(workers.pid)).values())
    finally:
        for c in clients:
            c.close()
    assert len(served_by) == 2
    assert answers == [["User keeps the spare key under the blue pot."]] * 40


def test_sigterm_stops_every_worker_and_the_server_exits_0(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    parent = subprocess.Popen(
        [sys.executable, "-m", "cortadel_server", "serve", "--host", "127.0.0.1", "--port", "0",
         "--port-file", str(port_file), "--data", str(tmp_path / "cortadel.db"), "--workers", "2"],
        env={**os.environ, "CORTADEL_LOG_LEVEL": "info"}, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert parent.poll() is None and time.monotonic() < deadline, "the server never reported its port"
            time.sleep(0.05)
        port = int(port_file.read_text())
        pids = worker_pids(parent.pid)
        assert len(pids) == 2
        health = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=10)
        assert (health.status_code, health.json()["status"]) == (200, "ok")
        parent.send_signal(signal.SIGTERM)
        _, stderr = parent.communicate(timeout=30)
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
    assert parent.returncode == 0
    assert not [pid for pid in pids if Path(f"/proc/{pid}").exists()]
    assert f"serving on http://127.0.0.1:{port} (data: {tmp_path / 'cortadel.db'}, 2 worker processes)" in stderr
    for pid in pids:  # each worker shut down on its own, its app's shutdown included
        assert f"[{pid}]: Application shutdown complete." in stderr


def test_a_worker_count_out_of_range_is_refused_before_anything_starts(tmp_path: Path) -> None:
    for args, env, line in (
        (["--workers", "0"], {}, "cortadel serve: error: argument --workers: must be between 1 and 64"),
        ([], {"CORTADEL_WORKERS": "65"}, "cortadel: CORTADEL_WORKERS='65': must be between 1 and 64"),
    ):
        refused = subprocess.run(
            [sys.executable, "-m", "cortadel_server", "serve", "--port", "0", "--data", str(tmp_path / "cortadel.db"), *args],
            env={**os.environ, **env}, capture_output=True, text=True, timeout=60, check=False,
        )
        assert (refused.returncode, refused.stderr.strip().splitlines()[-1]) == (2, line)
    assert not (tmp_path / "cortadel.db").exists()


@pytest.mark.parametrize("shared", [False, True], ids=["plain", "reuseport"])
def test_a_port_in_use_is_refused_with_one_line(tmp_path: Path, shared: bool) -> None:
    """Also a port whose listener allows sharing (another server's workers): the workers' own
    SO_REUSEPORT must not let them join it."""
    with socket.socket() as taken:
        if shared:
            taken.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        refused = subprocess.run(
            [sys.executable, "-m", "cortadel_server", "serve", "--host", "127.0.0.1", "--port", str(port),
             "--data", str(tmp_path / "cortadel.db"), "--workers", "2"],
            capture_output=True, text=True, timeout=120, check=False,
        )
    assert (refused.returncode, refused.stderr.strip().splitlines()[-1]) == (
        2, f"cortadel: CORTADEL_HOST/CORTADEL_PORT: cannot listen on 127.0.0.1:{port}: Address already in use"
    )
