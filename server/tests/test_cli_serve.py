"""`cortadel serve` from the command line: where it listens, and what it says about a wrong --data."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx


def serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "cortadel_server", "serve", "--host", "127.0.0.1", *args],
                            env={**os.environ, "CORTADEL_LOG_LEVEL": "info"}, stderr=subprocess.PIPE, text=True)


def test_port_zero_serves_on_the_port_it_writes_to_the_port_file(tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    child = serve("--port", "0", "--port-file", str(port_file), "--data", str(tmp_path / "cortadel.db"))
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        text = port_file.read_text(encoding="utf-8")
        assert text.endswith("\n") and text.strip().isdigit()
        port = int(text)
        assert 1024 <= port <= 65535
        health = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=10)
        assert (health.status_code, health.json()["status"]) == (200, "ok")
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith("port")] == ["port"]  # no partial file left
    finally:
        child.terminate()
        _, stderr = child.communicate(timeout=30)
    assert f"serving on http://127.0.0.1:{port} (data: {tmp_path / 'cortadel.db'})" in stderr


def test_a_directory_as_data_is_refused_with_the_setting_named(tmp_path: Path) -> None:
    child = serve("--port", "0", "--data", str(tmp_path))
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 2
    assert stderr.strip().splitlines()[-1] == (
        f"cortadel: CORTADEL_DATA (--data): {tmp_path} is a directory; it wants the database file's path, e.g. {tmp_path / 'cortadel.db'}"
    )
