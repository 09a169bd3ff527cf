"""Checks every front door (REST and MCP) applies to what a caller sends, before anything is stored.

    parse_instant("2026-05-01T09:00:00Z", "timestamp")   # -> 1777626000.0
    check_json_value({"a": ["\\ud800"]})                 # -> "a lone UTF-16 surrogate (\\ud800) at a.0; …"

Everything here fails as ``ValidationFailed`` (or returns a message the caller turns into one), so a
bad value is a 400 naming the field — never a 500 later, when the value is read back.
"""

from __future__ import annotations

import math
import uuid
from datetime import UTC, datetime
from typing import Any

from cortadel_server.errors import NotFound, ValidationFailed
from cortadel_server.storage.base import MEMORY_TYPES, MemoryFilters

#: The instants we accept, as Unix seconds: 1900-01-01 to 2999-12-31 (UTC). Statement times and
#: point-in-time queries outside that window are mistakes, and relative dates ("in ten years")
#: resolved against them must stay inside what datetime can represent.
EARLIEST_INSTANT = datetime(1900, 1, 1, tzinfo=UTC).timestamp()
LATEST_INSTANT = datetime(3000, 1, 1, tzinfo=UTC).timestamp()
_INSTANT_RANGE = "between 1900-01-01 and 2999-12-31"

#: How deeply free-form JSON (metadata) may nest: far beyond real use, far below recursion limits.
MAX_JSON_DEPTH = 32


def parse_instant(value: str | float | None, field: str) -> float | None:
    """ISO 8601 (naive = UTC) or Unix seconds → Unix seconds, inside the accepted window."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):  # a bool is an int to Python, never an instant to a caller
        raise ValidationFailed({field: ["Not an ISO 8601 date-time or Unix seconds"]})
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        seconds = _parse_text_instant(value.strip(), field)
    if not math.isfinite(seconds) or not EARLIEST_INSTANT <= seconds < LATEST_INSTANT:
        raise ValidationFailed({field: [f"Must be an instant {_INSTANT_RANGE} (ISO 8601 or Unix seconds)"]})
    return seconds


def _parse_text_instant(text: str, field: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValidationFailed({field: ["Not an ISO 8601 date-time or Unix seconds"]}) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def parse_memory_type(value: str | None, field: str = "memory_type") -> str | None:
    """One of ``MEMORY_TYPES``, or None when absent."""
    if value is None or value == "":
        return None
    if value not in MEMORY_TYPES:
        raise ValidationFailed({field: [f"Must be one of {', '.join(MEMORY_TYPES)}"]})
    return value


def search_filters(
    *,
    session_id: str | None = None,
    memory_type: str | None = None,
    project: str | None = None,
    tag: str | None = None,
    include_superseded: bool | None = None,
    as_of: str | float | None = None,
    known_at: str | float | None = None,
) -> MemoryFilters:
    """The filters of a search, built the same way for a REST body and an MCP tool call."""
    return MemoryFilters(
        session_id=session_id or None,
        memory_type=parse_memory_type(memory_type),
        project=project or None,
        tag=tag or None,
        include_superseded=bool(include_superseded),
        as_of=parse_instant(as_of, "as_of"),
        known_at=parse_instant(known_at, "known_at"),
    )


def storable(value: Any) -> Any:
    """A pydantic "before" validator for every field of a request (REST body or MCP arguments)."""
    problem = check_json_value(value)
    if problem:
        raise ValueError(problem)
    return value


def parse_memory_id(memory_id: str) -> str:
    """A memory id is a UUID; anything else names no memory (404, like an unknown one)."""
    try:
        uuid.UUID(memory_id)
    except ValueError:
        raise NotFound(f"Memory {memory_id} not found") from None
    return memory_id


def check_json_value(value: Any, path: str = "", depth: int = 0) -> str | None:
    """Why ``value`` cannot be stored and read back as JSON text, or None when it can.

    Refused: strings holding a lone UTF-16 surrogate (valid in a JSON escape, not encodable as
    UTF-8, so every later read of the row would fail) and nesting deeper than ``MAX_JSON_DEPTH``.
    """
    if isinstance(value, str):
        return _surrogate_problem(value, path)
    if depth >= MAX_JSON_DEPTH and isinstance(value, dict | list):
        return f"nested deeper than {MAX_JSON_DEPTH} levels at {path}"
    if isinstance(value, dict):
        for key, item in value.items():
            name = str(key).encode("utf-8", "backslashreplace").decode("utf-8")  # a bad key stays printable
            where = f"{path}.{name}" if path else name
            problem = (_surrogate_problem(key, where) if isinstance(key, str) else None) or check_json_value(item, where, depth + 1)
            if problem:
                return problem
    elif isinstance(value, list):
        for i, item in enumerate(value):
            problem = check_json_value(item, f"{path}.{i}" if path else str(i), depth + 1)
            if problem:
                return problem
    return None


def _surrogate_problem(text: str, path: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        where = f" at {path}" if path else ""
        return f"a lone UTF-16 surrogate (\\u{code:04x}){where}; send valid Unicode"
    return None
