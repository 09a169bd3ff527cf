"""Errors raised by the benchmark harnesses.

    BenchError
    ├── ServerStartError   the server under test did not come up
    ├── ApiError           the server answered a request with a non-2xx status
    └── DatasetError       the benchmark data file is missing or malformed
"""

from __future__ import annotations


class BenchError(Exception):
    """Base class of every error the harnesses raise on purpose."""


class ServerStartError(BenchError):
    """The Cortadel server subprocess exited or did not answer /api/health in time."""


class ApiError(BenchError):
    """A REST call returned an error status; carries the status and the response body."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path} -> {status}: {body[:500]}")
        self.method = method
        self.path = path
        self.status = status
        self.body = body


class DatasetError(BenchError):
    """The LoCoMo-format file could not be read."""
