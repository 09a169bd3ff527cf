"""Start a Cortadel server under test as a subprocess on a free loopback port with a fresh data file.

    with start_server(ServerConfig("wordllama", {"CORTADEL_EMBEDDER": "wordllama"}), workdir) as server:
        server.base_url, server.rss_bytes(), server.disk_bytes()

The harness needs the process id (for VmRSS) and the data folder (for bytes on disk), so it runs
`python -m cortadel_server serve` itself rather than going through the test helper.

A run takes minutes while server/ may be edited meanwhile, so a harness first copies the server
package (`snapshot_server`) and every server of that run imports the copy: all its figures come
from one version of the code, identified by the copy's content hash.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from cortadel_server.testing import database_for, worker_pids

from bench.errors import ServerStartError

REPO_ROOT = Path(__file__).resolve().parent.parent
SERVER_SRC = REPO_ROOT / "server"
MINILM_DIR = Path(os.environ.get("CORTADEL_BENCH_MINILM", REPO_ROOT.parent / "shared" / "models" / "all-MiniLM-L6-v2-int8"))


@dataclass(frozen=True)
class ServerConfig:
    """A named server configuration: the CORTADEL_* variables that differ from the defaults."""

    name: str
    env: Mapping[str, str] = field(default_factory=dict)
    #: folder holding the ``cortadel_server`` package the server runs
    source: Path = SERVER_SRC
    #: storage backend: "sqlite" (a file in the data folder) or "postgres" (a fresh database on a
    #: PostgreSQL this process starts, cortadel_server.testing_postgres)
    backend: str = "sqlite"
    #: an existing database to serve (a store filled beforehand) instead of a fresh one of ``backend``
    database_url: str | None = None
    #: server processes on the one port (``serve --workers``); 1 serves from the started process itself
    workers: int = 1

    def from_source(self, source: Path) -> ServerConfig:
        return dataclasses.replace(self, source=source)


WORDLLAMA = ServerConfig("wordllama", {"CORTADEL_EMBEDDER": "wordllama"})
MINILM = ServerConfig("minilm-onnx", {"CORTADEL_EMBEDDER": "onnx", "CORTADEL_EMBEDDER_MODEL": str(MINILM_DIR)})


@dataclass
class RunningServer:
    config: ServerConfig
    base_url: str
    process: subprocess.Popen[bytes]
    data_dir: Path
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def worker_pids(self) -> list[int]:
        """The worker processes of a server started with more than one worker."""
        return worker_pids(self.pid)

    def proc_status(self) -> dict[str, int]:
        """VmRSS and VmHWM (peak) of the server process, in bytes, from /proc/<pid>/status."""
        wanted = {"VmRSS", "VmHWM"}
        values: dict[str, int] = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in wanted:
                values[key] = int(rest.split()[0]) * 1024
        return values

    def rss_bytes(self) -> int:
        return self.proc_status()["VmRSS"]

    def disk_bytes(self) -> int:
        """Bytes of every file in the data folder (database, WAL, shared memory, sidecars)."""
        return sum(p.stat().st_size for p in self.data_dir.rglob("*") if p.is_file())

    def log_tail(self, lines: int = 30) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL if the server has not exited within ``timeout`` seconds."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so that every ``start_server`` block stops its server on the way out."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


@contextmanager
def work_folder(prefix: str) -> Iterator[Path]:
    """A temporary folder of one run under bench/.work (servers' data, snapshots), deleted afterwards."""
    workdir = REPO_ROOT / "bench" / ".work"
    workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=workdir, prefix=f"{prefix}-") as tmp:
        yield Path(tmp)


def snapshot_server(dest: Path) -> tuple[Path, str]:
    """Copy server/cortadel_server under ``dest``; returns (folder to put on PYTHONPATH, sha256 of the copy, 12 hex)."""
    target = (dest / "server-src").resolve()
    shutil.copytree(SERVER_SRC / "cortadel_server", target / "cortadel_server", ignore=shutil.ignore_patterns("__pycache__"))
    digest = hashlib.sha256()
    for path in sorted((target / "cortadel_server").rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(target)).encode() + b"\0" + path.read_bytes())
    return target, digest.hexdigest()[:12]


def python_path(*folders: Path) -> str:
    """PYTHONPATH with ``folders`` first, so subprocesses import this checkout's server (installed or not)."""
    return os.pathsep.join([*map(str, folders), *filter(None, [os.environ.get("PYTHONPATH")])])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def start_server(config: ServerConfig, workdir: Path, *, timeout: float = 120.0, keep_data: bool = False) -> Iterator[RunningServer]:
    """Run one server with a fresh data folder under ``workdir``; stop it (and drop its data) on exit."""
    data_dir = workdir / f"{config.name}-{os.getpid()}-{time.monotonic_ns()}"
    data_dir.mkdir(parents=True)
    port = free_port()
    log_path = data_dir.with_suffix(".log")
    env = {**os.environ, "CORTADEL_LOG_LEVEL": "warning", **config.env, "PYTHONPATH": python_path(config.source)}
    database = config.database_url or database_for(config.backend)
    if database:
        env["CORTADEL_DATABASE_URL"] = database
    cmd = [sys.executable, "-m", "cortadel_server", "serve", "--host", "127.0.0.1", "--port", str(port), "--data", str(data_dir / "cortadel.db"),
           "--port-file", str(data_dir / "port")]
    if config.workers != 1:  # only then: a snapshot of older server code (an A/B's base) has no --workers
        cmd += ["--workers", str(config.workers)]
    with log_path.open("wb") as log:
        process = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=REPO_ROOT)
    server = RunningServer(config, f"http://127.0.0.1:{port}", process, data_dir, log_path)
    try:
        _wait_ready(server, timeout)
        yield server
    finally:
        server.stop()
        if not keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)


def _wait_ready(server: RunningServer, timeout: float) -> None:
    """Wait for the port file (written once every worker serves), then for an answer on /api/health."""
    deadline = time.monotonic() + timeout
    while True:
        if server.process.poll() is not None:
            raise ServerStartError(f"{server.config.name}: server exited with {server.process.returncode}:\n{server.log_tail()}")
        try:
            if (server.data_dir / "port").exists() and httpx.get(f"{server.base_url}/api/health", timeout=2.0).status_code in (200, 503):
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            server.stop()
            raise ServerStartError(f"{server.config.name}: no answer on /api/health within {timeout:.0f} s:\n{server.log_tail()}")
        time.sleep(0.2)
