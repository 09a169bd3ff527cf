"""``MemoryFilters`` as a SQL condition, written once for every backend.

The rules (what "current", ``as_of``, ``known_at`` and ``valid_between`` mean) live here; a
``Dialect`` supplies only the spelling that differs between databases: the parameter marker and
the tests on JSON lists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cortadel_server.storage.base import MemoryFilters


@dataclass(frozen=True)
class Dialect:
    #: the parameter marker
    param: str
    #: column → condition: the column's JSON list holds the one parameter
    list_holds: Callable[[str], str]
    #: column → condition: the column's JSON list shares an element with the parameter (a list)
    list_overlaps: Callable[[str], str]
    #: column → condition: the column's value is in the parameter (a list)
    value_in: Callable[[str], str]
    #: how a list travels as a parameter
    list_param: Callable[[Sequence[str]], Any]


def where_clause(user_id: str, filters: MemoryFilters, dialect: Dialect, alias: str = "") -> tuple[str, list[Any]]:
    """The condition (always on ``user_id`` first) and its parameters, in order."""
    p, q = alias, dialect.param
    clauses = [f"{p}user_id = {q}"]
    params: list[Any] = [user_id]
    if filters.known_at is not None:
        # What we believed at known_at: recorded by then, not yet expired by then.
        clauses.append(f"{p}created_at <= {q} AND ({p}expired_at IS NULL OR {p}expired_at > {q})")
        params += [filters.known_at, filters.known_at]
    if filters.as_of is not None:
        # What was true at as_of: valid from before it (or from when recorded) and not ended.
        clauses.append(f"COALESCE({p}valid_at, {p}created_at) <= {q} AND ({p}invalid_at IS NULL OR {p}invalid_at > {q})")
        params += [filters.as_of, filters.as_of]
        if filters.known_at is None and not filters.include_superseded:
            # Retractions and corrections made later do not rewrite what was true then, but a
            # row we expired without ending its valid time (a deletion of belief) stays out.
            clauses.append(f"({p}expired_at IS NULL OR {p}invalid_at IS NOT NULL)")
    if filters.current_only:
        clauses.append(f"{p}expired_at IS NULL AND {p}invalid_at IS NULL")
    if filters.valid_between is not None:
        clauses.append(f"COALESCE({p}valid_at, {p}created_at) >= {q} AND COALESCE({p}valid_at, {p}created_at) < {q}")
        params += list(filters.valid_between)
    for column in ("session_id", "memory_type", "app_name", "project", "state"):
        value = getattr(filters, column)
        if value is not None:
            clauses.append(f"{p}{column} = {q}")
            params.append(value)
    if filters.tag is not None:
        clauses.append(dialect.list_holds(f"{p}tags"))
        params.append(filters.tag)
    if filters.categories:
        clauses.append(dialect.list_overlaps(f"{p}categories"))
        params.append(dialect.list_param(filters.categories))
    if filters.ids:
        clauses.append(dialect.value_in(f"{p}id"))
        params.append(dialect.list_param(filters.ids))
    if filters.exclude_ids:
        clauses.append(f"NOT {dialect.value_in(f'{p}id')}")
        params.append(dialect.list_param(filters.exclude_ids))
    return " AND ".join(clauses), params
