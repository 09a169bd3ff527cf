"""The image, built from the Dockerfile and run under podman: health, a memory added and found,
SIGTERM, and the memory still there after a restart on the same volume.

Run by `make test-container` (root, podman, a local base image: deploy/tests/prepare-podman.sh);
`make test` never collects it. It prints the figures docs/deploy.md quotes.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
BASE = os.environ.get("CORTADEL_CONTAINER_BASE", "localhost/cortadel-base:bookworm")
IMAGE = "localhost/cortadel:test"
#: pip inside the build trusts what the host trusts; handed over as a build secret, never stored
HOST_CA_BUNDLE = os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt"


def podman(*args: str, timeout: float = 60) -> str:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"podman {' '.join(args)}: {done.stderr[-2000:]}"
    return done.stdout.strip()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def image() -> str:
    started = time.monotonic()
    podman(
        "build", "--quiet", "--format", "docker", "--build-arg", f"BASE={BASE}",
        "--secret", f"id=pip_cert,src={HOST_CA_BUNDLE}", "-t", IMAGE, str(REPO),
        timeout=1200,
    )
    size = int(podman("image", "inspect", IMAGE, "--format", "{{.Size}}"))
    print(f"\nimage built in {time.monotonic() - started:.1f} s, {size / 1e6:.0f} MB")
    return IMAGE


@pytest.fixture()
def volume() -> Iterator[str]:
    name = f"cortadel-test-{uuid.uuid4().hex[:8]}"
    podman("volume", "create", name)
    try:
        yield name
    finally:
        podman("volume", "rm", "--force", name)


def run(image: str, volume: str, port: int) -> str:
    name = f"cortadel-test-{uuid.uuid4().hex[:8]}"
    podman(
        "run", "--detach", "--name", name, "--network", "host", "--volume", f"{volume}:/data",
        "--env", "CORTADEL_HOST=127.0.0.1", "--env", f"CORTADEL_PORT={port}", image,
    )
    return name


def first_health(base_url: str, deadline: float) -> httpx.Response:
    while True:
        try:
            return httpx.get(f"{base_url}/api/health", timeout=5)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_the_image_serves_keeps_data_over_sigterm_and_restarts(image: str, volume: str) -> None:
    inspected = json.loads(podman("image", "inspect", image))[0]
    config = inspected["Config"]
    assert config["User"] == "cortadel"
    assert config["StopSignal"] == "SIGTERM"
    assert not [e for e in config["Env"] if "PIP_CERT" in e or "ca-certificates" in e]
    assert inspected["Healthcheck"]["Test"][:2] == ["CMD", "python3"]

    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    container = run(image, volume, port)
    try:
        health = first_health(base_url, started + 120)
        to_healthy = time.monotonic() - started
        print(f"container start to first healthy answer: {to_healthy:.2f} s")
        assert health.status_code == 200
        assert health.json()["status"] == "ok"
        assert health.json()["checks"]["embeddings"] == {
            "ok": True, "latency_ms": health.json()["checks"]["embeddings"]["latency_ms"], "error": None,
            "provider": "wordllama", "model": "l2_supercat", "dim": 256,
        }
        podman("healthcheck", "run", container)  # the image's HEALTHCHECK command passes
        assert podman("exec", container, "id", "-u") == "10001"

        added = httpx.post(f"{base_url}/api/v1/memories", json={"user_id": "ann", "text": "I only ship to production on Tuesdays."}, timeout=30)
        assert added.status_code == 200
        assert added.json()["event"] == "ADD"
        memory_id = added.json()["id"]
        found = httpx.post(f"{base_url}/api/v1/memories/search", json={"user_id": "ann", "query": "When can we release?"}, timeout=30)
        assert [hit["id"] for hit in found.json()["results"]] == [memory_id]

        stopping = time.monotonic()
        podman("stop", "--time", "30", container, timeout=60)  # SIGTERM, the image's STOPSIGNAL
        print(f"stopped on SIGTERM in {time.monotonic() - stopping:.2f} s")
        state = json.loads(podman("inspect", container))[0]["State"]
        assert state["ExitCode"] == 0  # uvicorn's clean shutdown, not a kill after the grace period
        logs = subprocess.run(["podman", "logs", container], capture_output=True, text=True, timeout=30, check=True).stderr
        assert "Finished server process" in logs or "Application shutdown complete" in logs, logs[-2000:]
    finally:
        podman("rm", "--force", container)

    again = run(image, volume, port)
    try:
        assert first_health(base_url, time.monotonic() + 120).status_code == 200
        kept = httpx.get(f"{base_url}/api/v1/memories/{memory_id}", params={"user_id": "ann"}, timeout=30)
        assert kept.status_code == 200
        assert kept.json()["text"] == added.json()["content"]
    finally:
        podman("rm", "--force", again)
