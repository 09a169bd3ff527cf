"""The compose files, run as a user runs them: `compose.yaml` (Cortadel on its SQLite volume, behind
a key) and `compose.postgres.yaml` (Cortadel on PostgreSQL with pgvector), up, used, stopped and
started again, and the pg_dump / pg_restore backup docs/deploy.md documents.

Run by `make test-container` with podman-compose (pinned, installed by prepare-podman.sh). No image
can be pulled here: the Cortadel image is the one conftest.py builds, tagged as the compose file names
it, and where no `pgvector/pgvector:pg16` image is present a stand-in is built from
deploy/tests/pgvector (PostgreSQL 16 + pgvector 0.6 from the pgserver wheel, started the way the
official image is).
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from containers import REPO, build, first_health, free_port, podman

COMPOSE = os.environ.get("CORTADEL_PODMAN_COMPOSE", "podman-compose")
PGVECTOR_IMAGE = "docker.io/pgvector/pgvector:pg16"


def pgserver_version() -> str:
    pins = (REPO / "requirements.lock").read_text().splitlines()
    return next(line.split("==", 1)[1] for line in pins if line.startswith("pgserver=="))


class Compose:
    """One compose project: a file, a unique project name, the variables it reads."""

    def __init__(self, file: str, env: dict[str, str]) -> None:
        self.file = str(REPO / file)
        self.project = f"cdt{uuid.uuid4().hex[:8]}"
        self.env = {**os.environ, **env}

    def __call__(self, *args: str, timeout: float = 300) -> str:
        done = subprocess.run(
            [COMPOSE, "--project-name", self.project, "--file", self.file, *args],
            capture_output=True, text=True, timeout=timeout, env=self.env, cwd=REPO, check=False,
        )
        assert done.returncode == 0, f"{COMPOSE} {' '.join(args)}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
        return done.stdout.strip()

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"

    def down(self) -> None:
        subprocess.run(
            [COMPOSE, "--project-name", self.project, "--file", self.file, "down", "--volumes", "--timeout", "30"],
            capture_output=True, timeout=300, env=self.env, cwd=REPO, check=False,
        )


@pytest.fixture()
def tagged(image: str) -> str:
    """The built image under the name the compose files give it, so `up --no-build` runs it."""
    podman("tag", image, "localhost/cortadel:latest")
    return "localhost/cortadel:latest"


@pytest.fixture()
def pgvector_image() -> str:
    if subprocess.run(["podman", "image", "exists", PGVECTOR_IMAGE], check=False).returncode != 0:
        build(PGVECTOR_IMAGE, Path(__file__).parent / "pgvector", f"PGSERVER_VERSION={pgserver_version()}")
    return PGVECTOR_IMAGE


@pytest.fixture()
def sqlite_project(tagged: str) -> Iterator[tuple[Compose, str]]:
    port = free_port()
    project = Compose("compose.yaml", {"CORTADEL_PUBLISH_PORT": str(port), "CORTADEL_AUTH_SECRET": uuid.uuid4().hex})
    try:
        yield project, f"http://127.0.0.1:{port}"
    finally:
        project.down()


@pytest.fixture()
def postgres_project(tagged: str, pgvector_image: str) -> Iterator[tuple[Compose, str]]:
    port = free_port()
    project = Compose("compose.postgres.yaml", {"CORTADEL_PUBLISH_PORT": str(port), "POSTGRES_PASSWORD": uuid.uuid4().hex})
    try:
        yield project, f"http://127.0.0.1:{port}"
    finally:
        project.down()


def healthy(base_url: str, timeout: float = 180) -> dict[str, object]:
    """The first 200 health answer: a server on PostgreSQL may restart (its restart policy) until the database is up."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = first_health(base_url, deadline)
            if answer.status_code == 200:
                body: dict[str, object] = answer.json()
                return body
        except (httpx.TransportError, httpx.RemoteProtocolError):
            pass
        assert time.monotonic() < deadline, f"no healthy answer from {base_url}"
        time.sleep(0.5)


def test_compose_yaml_serves_behind_a_key_and_keeps_data_over_a_restart(sqlite_project: tuple[Compose, str]) -> None:
    compose, base_url = sqlite_project
    compose("up", "--detach", "--no-build")
    health = healthy(base_url)
    assert health["status"] == "ok"
    assert health["checks"]["memgraph"]["url"] == "sqlite://"  # type: ignore[index]

    key = compose("exec", "-T", "cortadel", "cortadel", "mint-key", "ann").splitlines()[-1]
    statement = {"user_id": "ann", "text": "I only ship to production on Tuesdays."}
    refused = httpx.post(f"{base_url}/api/v1/memories", json=statement, timeout=30)
    assert refused.status_code == 401
    auth = {"Authorization": f"Bearer {key}"}
    added = httpx.post(f"{base_url}/api/v1/memories", json=statement, headers=auth, timeout=30)
    assert added.status_code == 200, added.text
    assert added.json()["event"] == "ADD"

    compose("stop", "--timeout", "30")  # SIGTERM; the compose file grants 30 s
    compose("start")
    healthy(base_url)
    found = httpx.post(f"{base_url}/api/v1/memories/search", json={"user_id": "ann", "query": "When can we release?"}, headers=auth, timeout=30)
    assert [hit["id"] for hit in found.json()["results"]] == [added.json()["id"]]


def test_compose_postgres_yaml_serves_from_postgres_and_restores_a_pg_dump(postgres_project: tuple[Compose, str]) -> None:
    compose, base_url = postgres_project
    compose("up", "--detach", "--no-build")
    health = healthy(base_url)
    assert health["checks"]["memgraph"]["url"] == "postgres://"  # type: ignore[index]

    kept = httpx.post(f"{base_url}/api/v1/memories", json={"user_id": "ann", "text": "My sister Lena lives in Porto."}, timeout=30)
    assert kept.json()["event"] == "ADD"

    # docs/deploy.md: pg_dump in the db container, the Cortadel service stopped, pg_restore --clean.
    dump = subprocess.run(
        ["podman", "exec", compose.container("db"), "pg_dump", "-U", "cortadel", "--format=custom", "cortadel"],
        capture_output=True, timeout=120, check=True,
    ).stdout
    assert dump.startswith(b"PGDMP")
    later = httpx.post(f"{base_url}/api/v1/memories", json={"user_id": "ann", "text": "I am allergic to peanuts."}, timeout=30)
    assert later.json()["event"] == "ADD"

    compose("stop", "cortadel")
    # podman-compose's `exec -T` does not pass standard input on (docker compose's does): podman exec -i.
    subprocess.run(
        ["podman", "exec", "-i", compose.container("db"), "pg_restore", "-U", "cortadel", "-d", "cortadel", "--clean", "--if-exists"],
        input=dump, capture_output=True, timeout=120, check=True,
    )
    compose("start", "cortadel")
    healthy(base_url)
    listed = httpx.get(f"{base_url}/api/v1/memories", params={"user_id": "ann"}, timeout=30).json()
    assert [memory["content"] for memory in listed["items"]] == [kept.json()["content"]]
    assert kept.json()["content"] == "User's sister Lena lives in Porto."
