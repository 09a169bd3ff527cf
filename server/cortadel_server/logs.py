"""Logging set-up: plain lines or one JSON object a line (CORTADEL_LOG_FORMAT)."""

from __future__ import annotations

import json
import logging
import sys
from typing import IO

from cortadel_server.config import Settings


class JsonFormatter(logging.Formatter):
    def __init__(self, with_pid: bool = False) -> None:
        super().__init__()
        self.with_pid = with_pid

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if self.with_pid:
            entry["pid"] = record.process
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure_logging(settings: Settings, stream: IO[str] | None = None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    with_pid = settings.workers > 1  # which of the worker processes (or their parent) says it
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter(with_pid))
    else:
        pid = " [%(process)d]" if with_pid else ""
        handler.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s %(name)s{pid}: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
