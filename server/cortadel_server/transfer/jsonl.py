"""The export file: JSON Lines, one stored row per line, written so the same store always gives the
same bytes (keys sorted, no spaces, no timestamps of the export itself).

    {"embedding_dim":384,"embedding_model":"wordllama/l2_supercat","format":"cortadel-export","type":"header","version":1}
    {"type":"memory","user_id":"alice","id":"…",…,"context":"…","embedding":"<base64 float32>"}
    {"type":"event",…}  {"type":"entity",…}  {"type":"session",…}  {"type":"job",…}
    {"type":"reconcile_run",…}  {"type":"suggestion",…,"undo":{…}}  {"type":"recall","memory_id":"…","at":…}
    {"counts":{"memories":2,…},"type":"user","user_id":"alice"}      closes alice's block
    {"counts":{…},"type":"end","users":1}                            the file is complete

A user's rows come together, memories first, and end with the ``user`` line that counts them; an
importer commits a user at that line, and a file cut short is refused at its last user.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from cortadel_server.errors import TransferError
from cortadel_server.storage.base import (
    TRANSFER_KINDS,
    HistoryEntry,
    MemoryRecord,
    ReconcileRun,
    StoredEntity,
    StoredJob,
    StoredMemory,
    Suggestion,
)

FORMAT = "cortadel-export"
VERSION = 1
#: the kind of row each record line holds, as ``TRANSFER_KINDS`` counts them (aliases and mentions ride on entities)
LINE_KINDS = {
    "memory": "memories", "event": "events", "entity": "entities", "session": "sessions", "job": "jobs",
    "reconcile_run": "reconcile_runs", "suggestion": "suggestions", "recall": "recalls",
}


# Records become lines through vars(), not dataclasses.asdict: its deep copy was most of an export's time.
def encode(line: dict[str, Any]) -> str:
    return json.dumps(line, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def header(model: str | None, dim: int | None) -> dict[str, Any]:
    return {"type": "header", "format": FORMAT, "version": VERSION, "embedding_model": model, "embedding_dim": dim}


def memory_line(stored: StoredMemory) -> dict[str, Any]:
    embedding = None if stored.embedding is None else base64.b64encode(stored.embedding).decode("ascii")
    return {"type": "memory", **vars(stored.record), "context": stored.context, "embedding": embedding}


def event_line(user_id: str, event: HistoryEntry) -> dict[str, Any]:
    return {"type": "event", "user_id": user_id, **vars(event)}


def entity_line(user_id: str, entity: StoredEntity) -> dict[str, Any]:
    return {
        "type": "entity", "user_id": user_id, "canonical": entity.canonical, "kind": entity.kind,
        "aliases": list(entity.aliases), "memories": list(entity.memory_ids),
    }


def session_line(user_id: str, session_id: str, document: str) -> dict[str, Any]:
    return {"type": "session", "user_id": user_id, "session_id": session_id, "document": document}


def job_line(user_id: str, job: StoredJob) -> dict[str, Any]:
    return {"type": "job", "user_id": user_id, **vars(job)}


def reconcile_run_line(run: ReconcileRun) -> dict[str, Any]:
    return {"type": "reconcile_run", **vars(run)}


def suggestion_line(suggestion: Suggestion) -> dict[str, Any]:
    """A suggestion with its undo state, so an applied one imported can still be undone."""
    return {"type": "suggestion", **vars(suggestion)}


def recall_line(user_id: str, memory_id: str, at: float) -> dict[str, Any]:
    return {"type": "recall", "user_id": user_id, "memory_id": memory_id, "at": at}


def user_line(user_id: str, counts: dict[str, int]) -> dict[str, Any]:
    return {"type": "user", "user_id": user_id, "counts": counts}


def end_line(users: int, counts: dict[str, int]) -> dict[str, Any]:
    return {"type": "end", "users": users, "counts": counts}


# -- reading ---------------------------------------------------------------------------------------
def parse(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is refused."""
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TransferError(f"line {number}: not JSON ({exc.msg})") from None
        if not isinstance(line, dict) or not isinstance(line.get("type"), str):
            raise TransferError(f"line {number}: expected an object with a \"type\"")
        yield number, line


def check_header(number: int, line: dict[str, Any]) -> tuple[str | None, int | None]:
    """The embedding model and dimension the header names."""
    if line.get("type") != "header" or line.get("format") != FORMAT:
        raise TransferError(f"line {number}: not a Cortadel export (the first line is no {FORMAT} header)")
    if line.get("version") != VERSION:
        raise TransferError(f"line {number}: export format version {line.get('version')!r}; this server reads {VERSION}")
    return line.get("embedding_model"), line.get("embedding_dim")


#: MemoryRecord fields by the JSON type a line must give them (a database would store a wrong one as is)
_NUMBERS = frozenset({"created_at", "valid_at", "invalid_at", "expired_at", "updated_at"})
_LISTS = frozenset({"categories", "tags", "source_turn_uuids"})
_REQUIRED_TEXT = frozenset({"id", "user_id", "text", "fingerprint"})


def _checked(name: str, value: Any) -> Any:
    if name in _NUMBERS:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise ValueError(f"{name}: expected a number, not {value!r}")
    elif name in _LISTS:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{name}: expected a list of strings")
    elif name == "metadata":
        if not isinstance(value, dict):
            raise ValueError("metadata: expected an object")
    elif not isinstance(value, str) and (name in _REQUIRED_TEXT or value is not None):
        raise ValueError(f"{name}: expected a string, not {value!r}")
    return value


def stored_memory(line: dict[str, Any]) -> StoredMemory:
    fields = {k: _checked(k, v) for k, v in line.items() if k not in ("type", "context", "embedding")}
    embedding = line.get("embedding")
    return StoredMemory(
        MemoryRecord(**fields), str(line.get("context", "")), None if embedding is None else base64.b64decode(embedding)
    )


def history_entry(line: dict[str, Any]) -> HistoryEntry:
    return HistoryEntry(line["memory_id"], line["event"], float(line["at"]), dict(line["detail"]))


def stored_entity(line: dict[str, Any]) -> StoredEntity:
    return StoredEntity(line["canonical"], line["kind"], tuple(line["aliases"]), tuple(line["memories"]))


Record = TypeVar("Record", StoredJob, ReconcileRun, Suggestion)


def record(cls: type[Record], line: dict[str, Any]) -> Record:
    """The record of a line that holds every field of ``cls`` by name (a missing one is a KeyError)."""
    return cls(**{f.name: line[f.name] for f in dataclasses.fields(cls)})


def recall(line: dict[str, Any]) -> tuple[str, float]:
    memory_id = line["memory_id"]
    if not isinstance(memory_id, str):
        raise TypeError(f"memory_id: expected a string, not {memory_id!r}")
    return memory_id, float(line["at"])


def zero_counts() -> dict[str, int]:
    return dict.fromkeys(TRANSFER_KINDS, 0)
