"""Run a real Cortadel server as a subprocess on a free loopback port, for test suites.

    with running_server(env={"CORTADEL_AUTH_SECRET": "s3cret"}) as server:
        httpx.get(f"{server.base_url}/api/health")
        key = server.mint_key("alice")

Used by this package's tests, the Python SDK's tests and the benchmark harness.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from cortadel_server.auth import mint_key


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerProcess:
    """A `cortadel serve` child process bound to 127.0.0.1."""

    def __init__(self, data: Path, env: Mapping[str, str] | None = None, port: int | None = None) -> None:
        self.data = data
        self.env = {**os.environ, "CORTADEL_LOG_LEVEL": "warning", **(env or {})}
        self.port = port or free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cortadel_server", "serve", "--host", "127.0.0.1",
             "--port", str(self.port), "--data", str(self.data)],
            env=self.env,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"cortadel serve exited with code {self.process.returncode} before it was ready")
            try:
                if httpx.get(f"{self.base_url}/api/health", timeout=2).status_code in (200, 503):
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("cortadel serve did not become ready in time")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def mint_key(self, user_id: str) -> str:
        secret = self.env.get("CORTADEL_AUTH_SECRET")
        if not secret:
            raise RuntimeError("this server runs without CORTADEL_AUTH_SECRET")
        return mint_key(secret, user_id)


@contextmanager
def running_server(env: Mapping[str, str] | None = None, data: Path | None = None) -> Iterator[ServerProcess]:
    with tempfile.TemporaryDirectory(prefix="cortadel-test-") as tmp:
        server = ServerProcess(data or Path(tmp) / "cortadel.db", env)
        server.start()
        try:
            yield server
        finally:
            server.stop()
