"""The guide's first example runs, against a real server, and prints what the guide says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from sdk_support import REPO

GUIDE = REPO / "docs" / "sdk-python.md"


def test_the_guides_first_example_runs(server: Any, tmp_path: Path) -> None:
    example = re.search(r"```python\n(.*?)```", GUIDE.read_text(), re.DOTALL)
    assert example is not None
    script = tmp_path / "example.py"
    script.write_text(example.group(1))
    env = {**os.environ, "CORTADEL_BASE_URL": server.base_url}
    env.pop("CORTADEL_API_KEY", None)
    done = subprocess.run([sys.executable, str(script)], check=False, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "ADD",
        "Alice is allergic to peanuts.",
        "Alice is allergic to peanuts.",
        "ADD",
        "Deleted 1 memory",
        "None",
    ]
