"""*Extra.* Reconciliation: runs that find duplicate entities and stale facts, and the suggestions
they make (approve, reject, undo), as results and as calls both clients run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from . import _wire
from ._operations import Call, Scope

RECONCILE = "/api/v1/reconcile"


@dataclass(frozen=True, slots=True)
class ReconcileRun:
    """*Extra.* One reconciliation run: ``status`` is queued, running, completed, failed or cancelled."""

    id: str
    status: str
    types: list[str] = field(default_factory=list)
    limit: int = 0
    created_at: float | None = None
    started_at: float | None = None
    finished_at: float | None = None
    error: str | None = None
    suggested: int = 0
    """Findings this run stored as suggestions."""
    auto_approved: int = 0
    """Of those, applied at once (sure enough for the server's auto-approve setting)."""


@dataclass(frozen=True, slots=True)
class ReconcileStatus:
    """*Extra.* The user's latest run (or the one asked for); ``status`` is ``idle`` when there is none."""

    status: str
    run: ReconcileRun | None = None


@dataclass(frozen=True, slots=True)
class MergeSuggestion:
    """*Extra.* A finding: ``kind`` merge_entities, alias or supersede; ``status`` pending,
    approved or rejected; ``subject`` what it acts on, ``evidence`` why."""

    id: str
    kind: str
    status: str
    confidence: float
    subject: dict[str, Any] = field(default_factory=dict)
    evidence: list[dict[str, Any]] = field(default_factory=list)
    run_id: str | None = None
    created_at: float | None = None
    decided_at: float | None = None
    decided_by: str | None = None
    """``auto`` (applied by a run) or ``hand``."""
    undone_at: float | None = None


@dataclass(frozen=True, slots=True)
class MergeSuggestionList:
    """*Extra.* One page of suggestions, newest first, and how many there are in all."""

    items: list[MergeSuggestion] = field(default_factory=list)
    total: int = 0


def _run(d: _wire.Json) -> ReconcileRun:
    return ReconcileRun(
        id=d.get("id") or "", status=d.get("status") or "", types=list(d.get("types") or []), limit=d.get("limit") or 0,
        created_at=d.get("created_at"), started_at=d.get("started_at"), finished_at=d.get("finished_at"),
        error=d.get("error"), suggested=d.get("suggested") or 0, auto_approved=d.get("auto_approved") or 0,
    )


def _status(d: _wire.Json) -> ReconcileStatus:
    run = d.get("run")
    return ReconcileStatus(status=d.get("status") or "", run=_run(run) if run else None)


def _suggestion(d: _wire.Json) -> MergeSuggestion:
    return MergeSuggestion(
        id=d.get("id") or "", kind=d.get("kind") or "", status=d.get("status") or "",
        confidence=float(d.get("confidence") or 0.0), subject=dict(d.get("subject") or {}),
        evidence=list(d.get("evidence") or []), run_id=d.get("run_id"), created_at=d.get("created_at"),
        decided_at=d.get("decided_at"), decided_by=d.get("decided_by"), undone_at=d.get("undone_at"),
    )


def _suggestion_list(d: _wire.Json) -> MergeSuggestionList:
    return MergeSuggestionList(items=[_suggestion(s) for s in d.get("items") or []], total=d.get("total") or 0)


def start(scope: Scope, limit: int | None, types: Sequence[str] | None) -> Call[ReconcileRun]:
    body = _wire.without_nulls({"user_id": scope.user_id, "limit": limit, "types": None if types is None else list(types)})
    return Call("POST", f"{RECONCILE}/runs", _run, body=body)


def status(scope: Scope, run_id: str | None) -> Call[ReconcileStatus]:
    params = _wire.without_nulls({"user_id": scope.user_id, "run_id": run_id})
    return Call("GET", f"{RECONCILE}/status", _status, params=params, idempotent=True)


def cancel(scope: Scope, run_id: str) -> Call[ReconcileRun]:
    body = _wire.without_nulls({"user_id": scope.user_id})
    return Call("POST", f"{RECONCILE}/runs/{quote(run_id, safe='')}/cancel", _run, body=body)


def suggestions(scope: Scope, status: str | None, offset: int, limit: int) -> Call[MergeSuggestionList]:
    params = _wire.without_nulls({"user_id": scope.user_id, "status": status, "offset": str(offset), "limit": str(limit)})
    return Call("GET", f"{RECONCILE}/suggestions", _suggestion_list, params=params, idempotent=True)


def decide(scope: Scope, suggestion_id: str, action: str) -> Call[MergeSuggestion]:
    """``action``: approve, reject or undo."""
    body = _wire.without_nulls({"user_id": scope.user_id})
    return Call("POST", f"{RECONCILE}/suggestions/{quote(suggestion_id, safe='')}/{action}", _suggestion, body=body)


def merge(scope: Scope, source: str, target: str) -> Call[MergeSuggestion]:
    body = _wire.without_nulls({"user_id": scope.user_id, "source": source, "target": target})
    return Call("POST", f"{RECONCILE}/merges", _suggestion, body=body)
