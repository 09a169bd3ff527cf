"""Progress lines of a benchmark run, on stderr (stdout stays free for a report a caller pipes)."""

from __future__ import annotations

import sys
import time


def log(message: str) -> None:
    """One progress line, stamped with the wall-clock time."""
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)
