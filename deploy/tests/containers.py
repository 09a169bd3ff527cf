"""What the container tests share: podman run from Python, a free loopback port, waiting for the
first health answer. Images are built by the session fixtures in conftest.py."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
BASE = os.environ.get("CORTADEL_CONTAINER_BASE", "localhost/cortadel-base:bookworm")
IMAGE = "localhost/cortadel:test"
#: pip inside the build trusts what the host trusts; handed over as a build secret, never stored
HOST_CA_BUNDLE = os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt"


def podman(*args: str, timeout: float = 60) -> str:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"podman {' '.join(args)}: {done.stderr[-2000:]}"
    return done.stdout.strip()


def build(tag: str, context: Path, *build_args: str) -> None:
    args = [arg for value in (f"BASE={BASE}", *build_args) for arg in ("--build-arg", value)]
    podman(
        "build", "--quiet", "--format", "docker", *args,
        "--secret", f"id=pip_cert,src={HOST_CA_BUNDLE}", "-t", tag, str(context),
        timeout=1200,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def first_health(base_url: str, deadline: float) -> httpx.Response:
    while True:
        try:
            return httpx.get(f"{base_url}/api/health", timeout=5)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
