"""Run a script under the published ``cortadel`` or under ours, and read its JSON output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def run_script(script: str, *args: str, published: Path | None = None, timeout: float = 120) -> Any:
    """``published`` is the folder the published package was installed into; without it the
    script imports the ``cortadel`` installed in this interpreter (ours)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CORTADEL_BASE_URL", "CORTADEL_API_KEY")}
    if published is not None:
        env["PYTHONPATH"] = str(published)
    done = subprocess.run(
        [sys.executable, str(HERE / script), *args],
        check=False,  # a failure is reported below with the script's stderr
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        raise AssertionError(f"{script} failed ({done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout)
