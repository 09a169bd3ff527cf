"""`cortadel backup` taken while writes go on, `cortadel restore` into a new file, and a server on it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
from support.write_burst import WriteBurst

from cortadel_server.testing import ServerProcess, running_server

#: four writers, each its own user
USERS = [f"burst-{n}" for n in range(4)]


def cortadel(*args: str, data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cortadel_server", *args, "--data", str(data)],
        check=False, capture_output=True, text=True, timeout=120,
    )


def test_a_backup_during_a_write_burst_holds_every_write_acknowledged_before_it(tmp_path: Path) -> None:
    live = tmp_path / "live.db"
    backup = tmp_path / "backups" / "cortadel-backup.db"
    backup.parent.mkdir()
    with running_server(data=live) as server, WriteBurst(server.base_url, USERS) as burst:
        burst.wait_for(100, timeout=120)
        backup_started = time.monotonic()
        made = cortadel("backup", str(backup), data=live)
        written_during = burst.count()
        burst.wait_for(written_during + 20, timeout=120)  # writes went on; some more after the copy
    assert made.returncode == 0, made.stderr
    assert burst.refused == []
    before = [(a.user_id, a.memory_id) for a in burst.acknowledged if a.answered_at < backup_started]
    assert len(before) >= 100
    assert sorted(backup.parent.iterdir()) == [backup]  # no partial file, no WAL beside the copy

    restored = tmp_path / "restored" / "cortadel.db"
    done = cortadel("restore", str(backup), data=restored)
    assert done.returncode == 0, done.stderr
    assert f'"file": "{restored}"' in done.stdout

    restarted = ServerProcess(restored)
    restarted.start()
    try:
        with httpx.Client(base_url=restarted.base_url, timeout=30) as api:
            missing = [(u, m) for u, m in before if api.get(f"/api/v1/memories/{m}", params={"user_id": u}).status_code != 200]
            total = sum(api.get("/api/v1/memories", params={"user_id": user, "size": 1}).json()["total"] for user in USERS)
    finally:
        restarted.stop()
    assert missing == []
    # One snapshot, taken during the backup: nothing answered after it ended (but the few writes
    # then in flight, one per writer) is in it, while the server kept writing past it.
    assert len(before) <= total <= written_during + len(USERS) < len(burst.acknowledged)
    assert f'"memories": {total}' in done.stdout


def test_restore_refuses_a_database_a_running_server_holds(tmp_path: Path) -> None:
    live = tmp_path / "live.db"
    backup = tmp_path / "backup.db"
    with running_server(data=live) as server:
        added = httpx.post(f"{server.base_url}/api/v1/memories", json={"user_id": "ann", "text": "I live in Berlin."}, timeout=30)
        assert added.status_code == 200
        assert cortadel("backup", str(backup), data=live).returncode == 0
        refused = cortadel("restore", str(backup), "--force", data=live)
        assert refused.returncode == 2
        assert refused.stderr == (
            f"cortadel: {live} is open in another process (a running `cortadel serve`?): stop it first, "
            "or restore into a new file (--data NEW.db) and start the server on that\n"
        )
        # the running server was left alone
        listed = httpx.get(f"{server.base_url}/api/v1/memories", params={"user_id": "ann"}, timeout=30).json()
        assert [item["content"] for item in listed["items"]] == [added.json()["content"]]
    unforced = cortadel("restore", str(backup), data=live)
    assert unforced.returncode == 2
    assert unforced.stderr == f"cortadel: cortadel restore: {live} exists; pass --force to replace it with {backup}\n"
    forced = cortadel("restore", str(backup), "--force", data=live)
    assert forced.returncode == 0, forced.stderr
    assert '"memories": 1' in forced.stdout


def test_backup_and_restore_say_what_is_wrong(tmp_path: Path) -> None:
    not_a_database = tmp_path / "notes.txt"
    not_a_database.write_text("hello\n", encoding="utf-8")
    bad = cortadel("restore", str(not_a_database), data=tmp_path / "new.db")
    assert bad.returncode == 2
    assert bad.stderr.startswith(f"cortadel: {not_a_database} is not a readable Cortadel database: ")
    assert not (tmp_path / "new.db").exists()

    nothing = cortadel("backup", str(tmp_path / "b.db"), data=tmp_path / "absent.db")
    assert (nothing.returncode, nothing.stderr) == (2, f"cortadel: no database at {tmp_path / 'absent.db'} to back up\n")

    env = {**os.environ, "CORTADEL_DATABASE_URL": "postgresql://cortadel@db:5432/cortadel"}
    postgres = subprocess.run([sys.executable, "-m", "cortadel_server", "backup", str(tmp_path / "b.db")],
                              check=False, capture_output=True, text=True, timeout=60, env=env)
    assert postgres.returncode == 2
    assert postgres.stderr == (
        "cortadel: cortadel backup: works on the SQLite file; with PostgreSQL (CORTADEL_DATABASE_URL) use "
        "pg_dump and pg_restore (docs/deploy.md)\n"
    )
