"""Run a real Cortadel server as a subprocess on a free loopback port, for test suites.

The child binds port 0 and reports the port the system gave it (``serve --port-file``), so no
port is picked here and then lost to another process before the child binds it.

    with running_server(env={"CORTADEL_AUTH_SECRET": "s3cret"}) as server:
        httpx.get(f"{server.base_url}/api/health")
        key = server.mint_key("alice")

Used by this package's tests, the Python SDK's tests and the benchmark harness. The test suites
keep what they install or assemble between runs (the MiniLM model, the published SDK) with
:func:`cached_folder` under :func:`cache_root`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from cortadel_server.auth import mint_key

#: the storage backends a test server runs on (server/tests/conftest.py runs the suite on each)
BACKENDS = ("sqlite", "postgres")


def database_for(backend: str) -> str | None:
    """Where a test server of ``backend`` keeps its data: None for SQLite (the server's own file),
    else a new database on the process's scratch PostgreSQL (cortadel_server.testing_postgres)."""
    if backend == "sqlite":
        return None
    if backend != "postgres":
        raise ValueError(f"unknown backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    from cortadel_server.testing_postgres import scratch_database

    return scratch_database()


class ServerProcess:
    """A `cortadel serve` child process bound to 127.0.0.1, on the SQLite file ``data`` or, when
    given (see :func:`database_for`), the database at ``database_url``."""

    def __init__(
        self,
        data: Path,
        env: Mapping[str, str] | None = None,
        port: int | None = None,
        log: Path | None = None,
        database_url: str | None = None,
    ) -> None:
        self.data = data
        self.log = log  # a file the server's output is appended to (else it goes to ours)
        self.env = {**os.environ, "CORTADEL_LOG_LEVEL": "warning", **(env or {})}
        self.database_url = database_url or self.env.get("CORTADEL_DATABASE_URL")
        if self.database_url:
            self.env["CORTADEL_DATABASE_URL"] = self.database_url
        self.port = port or 0  # 0 until the first start reports the port; restarts keep it
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        if not self.port:
            raise RuntimeError("the server has no port before its first start()")
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        output = self.log.open("ab") if self.log is not None else None
        report = Path(tempfile.mkdtemp(prefix="cortadel-port-"))
        port_file = report / "port"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cortadel_server", "serve", "--host", "127.0.0.1",
             "--port", str(self.port), "--port-file", str(port_file), "--data", str(self.data)],
            env=self.env, stdout=output, stderr=subprocess.STDOUT if output else None,
        )
        if output is not None:
            output.close()  # the child holds its own descriptor
        try:
            self.port = self._wait_for_port(port_file, time.monotonic() + timeout)
        finally:
            shutil.rmtree(report, ignore_errors=True)

    def _wait_for_port(self, port_file: Path, deadline: float) -> int:
        """The port the child reports once its app has started and its socket accepts connections."""
        assert self.process is not None
        while not port_file.exists():
            if self.process.poll() is not None:
                raise RuntimeError(f"cortadel serve exited with code {self.process.returncode} before it was ready")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("cortadel serve did not become ready in time")
            time.sleep(0.05)
        return int(port_file.read_text(encoding="utf-8"))

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
def running_server(
    env: Mapping[str, str] | None = None, data: Path | None = None, database_url: str | None = None
) -> Iterator[ServerProcess]:
    with tempfile.TemporaryDirectory(prefix="cortadel-test-") as tmp:
        server = ServerProcess(data or Path(tmp) / "cortadel.db", env, database_url=database_url)
        server.start()
        try:
            yield server
        finally:
            server.stop()


def cache_root() -> Path:
    """Where test suites keep artefacts between runs: ``$XDG_CACHE_HOME/cortadel`` (``~/.cache/cortadel``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "cortadel"


def cached_folder(target: Path, fill: Callable[[Path], None]) -> Path:
    """``target``, made by ``fill(staging)`` the first time: it fills a sibling folder that is then
    renamed into place, so a concurrent or interrupted run never leaves or sees a half-filled one."""
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        fill(staging)
        try:
            staging.rename(target)
        except OSError:
            if not target.is_dir():  # not another run finishing first: a real failure
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def worker_pids(parent: int) -> list[int]:
    """The worker processes of a ``cortadel serve --workers`` whose supervisor is ``parent``
    (multiprocessing's resource tracker, also a child, left out)."""
    children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    return sorted(int(c) for c in children if "spawn_main" in Path(f"/proc/{c}/cmdline").read_text())


def connection_owners(port: int, pids: list[int]) -> dict[int, int]:
    """Client port → the pid among ``pids`` holding the server side of that established connection
    to ``port`` (a connection stays with the worker that accepted it), read from /proc."""
    inode_pid: dict[int, int] = {}
    for pid in pids:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except FileNotFoundError:  # closed meanwhile
                continue
            if target.startswith("socket:["):
                inode_pid[int(target[8:-1])] = pid
    owners: dict[int, int] = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, remote, state, inode = (fields := line.split())[1], fields[2], fields[3], int(fields[9])
        if state == "01" and int(local.split(":")[1], 16) == port and inode in inode_pid:  # 01: established
            owners[int(remote.split(":")[1], 16)] = inode_pid[inode]
    return owners
