"""Where a benchmark result came from: the commit of the code that produced it."""

from __future__ import annotations

import subprocess

from bench.server import REPO_ROOT


def git_commit() -> str:
    """Short hash of HEAD, with "+dirty" when the server or bench code has uncommitted changes."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "server", "bench"], cwd=REPO_ROOT, capture_output=True, text=True).stdout
    changed = [line for line in dirty.splitlines() if "bench/reports" not in line and "bench/.work" not in line]
    return (head or "unknown") + ("+dirty" if changed else "")
