"""Where a benchmark result came from: the commit of the code that produced it, and how busy the machine was."""

from __future__ import annotations

import os
import subprocess

from bench.server import REPO_ROOT


def git_commit() -> str:
    """Short hash of HEAD, with "+dirty" when the server or bench code has uncommitted changes."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "server", "bench"], cwd=REPO_ROOT, capture_output=True, text=True, check=False).stdout
    changed = [line for line in dirty.splitlines() if "bench/reports" not in line and "bench/.work" not in line]
    return (head or "unknown") + ("+dirty" if changed else "")


def load_average() -> float:
    """The 1-minute load average: figures taken while it exceeds the core count include others' work."""
    return round(os.getloadavg()[0], 2)


def busy_note(start: float, end: float) -> str:
    """One line for a report header: the load around the run, with a warning when the machine was busy."""
    cpus = os.cpu_count() or 1
    line = f"load average {start:.1f} at start, {end:.1f} at end ({cpus} CPUs)"
    if max(start, end) > cpus:
        line += " — **the machine was busy with other work during this run; latencies and rates are inflated by it**"
    return line
