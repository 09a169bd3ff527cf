"""The columns of the reconciliation tables and their mapping to records, shared by both backends.

A backend passes its own JSON encoder (SQLite stores text, PostgreSQL jsonb) and decoder.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from cortadel_server.storage.base import ReconcileRun, Suggestion

#: record field -> column (``limit`` is a reserved word in SQL)
RUN_COLUMNS = {f.name: ("lim" if f.name == "limit" else f.name) for f in dataclasses.fields(ReconcileRun)}
RUN_JSON = frozenset({"types"})
SUGGESTION_COLUMNS = {f.name: f.name for f in dataclasses.fields(Suggestion)}
SUGGESTION_JSON = frozenset({"subject", "evidence", "undo"})

Record = TypeVar("Record", ReconcileRun, Suggestion)


def row_values(record: ReconcileRun | Suggestion, columns: dict[str, str], json_fields: frozenset[str],
               encode: Callable[[Any], Any]) -> dict[str, Any]:
    """Column -> value for an insert, JSON fields encoded (None stays NULL)."""
    return {
        column: encode(getattr(record, name)) if name in json_fields and getattr(record, name) is not None
        else getattr(record, name)
        for name, column in columns.items()
    }


def owned_rows(user_id: str, records: Sequence[ReconcileRun | Suggestion], columns: dict[str, str],
               json_fields: frozenset[str], encode: Callable[[Any], Any]) -> list[dict[str, Any]]:
    """``row_values`` of each record an import loads for ``user_id``; one of another user is refused."""
    for record in records:
        if record.user_id != user_id:
            raise ValueError(f"{type(record).__name__} {record.id} belongs to {record.user_id!r}, not {user_id!r}")
    return [row_values(record, columns, json_fields, encode) for record in records]


def from_row(cls: type[Record], row: Sequence[Any], columns: dict[str, str], json_fields: frozenset[str],
             decode: Callable[[Any], Any]) -> Record:
    values = dict(zip(columns, row, strict=True))
    for name in json_fields:
        if values[name] is not None:
            values[name] = decode(values[name])
    return cls(**values)
