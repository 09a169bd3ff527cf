"""The image, built from the Dockerfile and run under podman: health, a memory added and found,
SIGTERM, and the memory still there after a restart on the same volume.

Run by `make test-container` (root, podman, a local base image: deploy/tests/prepare-podman.sh);
`make test` never collects it. It prints the figures docs/deploy.md quotes.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from containers import first_health, free_port, podman


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
