"""A finding of reconciliation as a suggestion, and applying or undoing one.

Kinds of suggestion and what applying one does:

    merge_entities  {"source", "target"}: the source entity's names and links move to the target
    alias           {"target", "alias", "memory_ids"}: a role ("user's manager") becomes a name of
                    the target, linked to the facts that mention the role
    supersede       {"stale", "by"}: the older fact leaves the current set, superseded by the newer

Applying records, on the suggestion, exactly what changed (``undo``); undoing puts that back, on
both time axes for a fact. Both run inside one ``Storage.write`` of the user, with the suggestion's
new status, so a crash never leaves one half applied.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
import uuid
from dataclasses import dataclass
from typing import Any

from cortadel_server.curation.merges import add_names, entity, merge_entities, unmerge
from cortadel_server.errors import Conflict
from cortadel_server.storage.base import SUPERSEDED, Storage, Suggestion

MERGE_ENTITIES = "merge_entities"
ALIAS = "alias"
SUPERSEDE = "supersede"
KINDS = (MERGE_ENTITIES, ALIAS, SUPERSEDE)

PENDING = "pending"
APPROVED = "approved"
REJECTED = "rejected"
STATUSES = (PENDING, APPROVED, REJECTED)

#: who decided: the run itself (confidence above the setting), a person, or a person undoing
BY_AUTO = "auto"
BY_HAND = "hand"

#: the memory fields a supersede changes, restored as they were by its undo
FACT_FIELDS = ("state", "superseded_by", "expired_at", "invalid_at", "updated_at")


@dataclass(frozen=True)
class Finding:
    """What a detector found, before it is stored as a suggestion."""

    kind: str
    subject: dict[str, Any]
    confidence: float
    evidence: list[dict[str, Any]]

    @property
    def key(self) -> str:
        """The same finding found again has the same key, so a later run does not suggest it twice
        (a merge of the same two entities in either direction included)."""
        if self.kind == MERGE_ENTITIES:
            parts = [self.kind, *sorted((self.subject["source"], self.subject["target"]))]
        else:
            parts = [self.kind, *(f"{k}={self.subject[k]}" for k in sorted(self.subject) if k != "memory_ids")]
        return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def suggestion_of(user_id: str, finding: Finding, run_id: str | None, now: float) -> Suggestion:
    return Suggestion(
        id=str(uuid.uuid4()), user_id=user_id, kind=finding.kind, key=finding.key,
        confidence=round(finding.confidence, 4), subject=finding.subject, evidence=finding.evidence,
        created_at=now, run_id=run_id,
    )


def apply(storage: Storage, suggestion: Suggestion, decided_by: str, now: float | None = None) -> Suggestion:
    """Apply a pending suggestion and mark it approved, in one transaction; the stored result."""
    at = time.time() if now is None else now
    with storage.write(suggestion.user_id):
        if suggestion.status != PENDING:
            raise Conflict(f"Suggestion {suggestion.id} is {suggestion.status}, not pending")
        undo = _APPLY[suggestion.kind](storage, suggestion, at)
        done = dataclasses.replace(suggestion, status=APPROVED, decided_at=at, decided_by=decided_by, undo=undo, undone_at=None)
        storage.save_suggestion(done)
    return done


def reject(storage: Storage, suggestion: Suggestion, now: float | None = None) -> Suggestion:
    if suggestion.status != PENDING:
        raise Conflict(f"Suggestion {suggestion.id} is {suggestion.status}, not pending")
    done = dataclasses.replace(suggestion, status=REJECTED, decided_at=time.time() if now is None else now, decided_by=BY_HAND)
    storage.save_suggestion(done)
    return done


def undo(storage: Storage, suggestion: Suggestion, now: float | None = None) -> Suggestion:
    """Reverse an applied suggestion; it ends rejected, so no later run suggests it again."""
    at = time.time() if now is None else now
    with storage.write(suggestion.user_id):
        if suggestion.status != APPROVED or suggestion.undo is None:
            raise Conflict(f"Suggestion {suggestion.id} is {suggestion.status}: only an applied one can be undone")
        _UNDO[suggestion.kind](storage, suggestion)
        done = dataclasses.replace(suggestion, status=REJECTED, decided_by=BY_HAND, decided_at=at, undone_at=at)
        storage.save_suggestion(done)
    return done


def _apply_merge(storage: Storage, suggestion: Suggestion, now: float) -> dict[str, Any]:
    return merge_entities(storage, suggestion.user_id, suggestion.subject["source"], suggestion.subject["target"])


def _apply_alias(storage: Storage, suggestion: Suggestion, now: float) -> dict[str, Any]:
    into = entity(storage, suggestion.user_id, suggestion.subject["target"])
    current = storage.get_memories(suggestion.user_id, suggestion.subject["memory_ids"])
    return add_names(storage, suggestion.user_id, into, [suggestion.subject["alias"]], sorted(current))


def _unmerge(storage: Storage, suggestion: Suggestion) -> None:
    assert suggestion.undo is not None
    unmerge(storage, suggestion.user_id, suggestion.undo)


def _apply_supersede(storage: Storage, suggestion: Suggestion, now: float) -> dict[str, Any]:
    user = suggestion.user_id
    stale = storage.get_memory(user, suggestion.subject["stale"])
    by = storage.get_memory(user, suggestion.subject["by"])
    if stale is None or by is None or not stale.is_current or not by.is_current:
        raise Conflict("The facts of this suggestion changed since it was made: both must still be current")
    before = {name: getattr(stale, name) for name in FACT_FIELDS}
    began = by.valid_at if by.valid_at is not None else by.created_at
    start = stale.valid_at if stale.valid_at is not None else stale.created_at
    storage.update_memory(
        user, stale.id, state=SUPERSEDED, superseded_by=by.id, expired_at=now, invalid_at=max(began, start), updated_at=now,
    )
    return {"memory_id": stale.id, "before": before}


def _unsupersede(storage: Storage, suggestion: Suggestion) -> None:
    assert suggestion.undo is not None
    record = suggestion.undo
    fact = storage.get_memory(suggestion.user_id, record["memory_id"])
    if fact is None:
        raise Conflict("The fact of this suggestion was deleted since it was applied")
    storage.update_memory(suggestion.user_id, record["memory_id"], **record["before"])


_APPLY = {MERGE_ENTITIES: _apply_merge, ALIAS: _apply_alias, SUPERSEDE: _apply_supersede}
_UNDO = {MERGE_ENTITIES: _unmerge, ALIAS: _unmerge, SUPERSEDE: _unsupersede}
