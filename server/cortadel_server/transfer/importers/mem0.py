"""mem0: what ``Memory.get_all()`` returns, optionally with the ``Memory.history()`` of each memory:

    {"results": [{"id": "…", "memory": "Likes to play cricket", "hash": "…", "metadata": {…},
                  "created_at": "2026-01-10T09:00:00-08:00", "updated_at": null, "user_id": "alice",
                  "agent_id": "…", "run_id": "…"}, …],
     "history": [{"memory_id": "…", "old_memory": null, "new_memory": "Likes cricket", "event": "ADD",
                  "created_at": "…", "is_deleted": 0}, …]}

(a bare list of memories is read too). mem0's texts are facts already, so they are written verbatim
(``infer: false``) at the time mem0 recorded them, oldest first, and deduplicated by the pipeline.
mem0's history() gives every event of a memory the memory's creation as ``created_at``; when an
UPDATE or DELETE happened is its ``updated_at``, so that orders the versions and dates the writes.
mem0's UPDATE events come back as versions: each later text revises the memory the earlier one
became (mem0 does not say whether an update corrected the wording or the world changed, so it is
kept as a correction: the old wording stays in the record history, valid time carries on). A memory
whose history ends in DELETE is skipped (get_all() no longer lists a deleted memory, so this only
happens when results were read before the delete). mem0's id, hash and metadata ride in the metadata.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cortadel_server.errors import TransferError
from cortadel_server.pipeline.writer import TextInput
from cortadel_server.transfer.importers import ForeignImport, Write, instant, load_json, owner_of


def read(path: Path, report: ForeignImport, default_user: str | None) -> Iterator[Write]:
    data = load_json(path)
    memories = data.get("results") if isinstance(data, dict) else data
    history = data.get("history", []) if isinstance(data, dict) else []
    if not isinstance(memories, list) or not isinstance(history, list):
        raise TransferError(f"{path.name}: expected get_all()'s {{\"results\": [...]}} (with an optional \"history\" list) or a list of memories")
    events: dict[str, list[dict[str, Any]]] = {}
    for n, event in enumerate(history):
        if not isinstance(event, dict) or not isinstance(event.get("memory_id"), str):
            raise TransferError(f"{path.name}: history[{n}] is not a history() event with a memory_id")
        events.setdefault(event["memory_id"], []).append(event)
    writes: list[tuple[str, float, int, TextInput, str]] = []
    for n, memory in enumerate(memories):
        where = f"{path.name}: results[{n}]"
        if not isinstance(memory, dict) or not isinstance(memory.get("memory"), str) or not isinstance(memory.get("id"), str):
            raise TransferError(f"{where}: expected a memory with a string \"id\" and \"memory\"")
        report.read += 1
        user_id = owner_of(memory.get("user_id"), default_user, where)
        versions = _versions(memory, events.get(memory["id"], []), where)
        if not versions:
            report.skipped += 1
            continue
        metadata = {**(memory.get("metadata") or {}), "mem0": {"id": memory["id"], "hash": memory.get("hash")}}
        for at, text in versions:
            item = TextInput(text, infer=False, app_name=memory.get("agent_id"), metadata=metadata,
                             session_id=memory.get("run_id"), source="import", at=at)
            writes.append((user_id, at, len(writes), item, memory["id"]))
    for user_id, _, _, item, chain in sorted(writes, key=lambda w: (w[0], w[1], w[2])):
        yield Write(user_id, item, chain)


def _versions(memory: dict[str, Any], events: list[dict[str, Any]], where: str) -> list[tuple[float, str]]:
    """(time, text) of each version, oldest first; none when mem0 deleted the memory."""
    created = instant(memory.get("created_at"), f"{where}.created_at") or 0.0
    if not events:
        updated = instant(memory.get("updated_at"), f"{where}.updated_at")
        return [(updated or created, memory["memory"])]
    # mem0 stamps every event's created_at with the memory's creation; when the event happened is its updated_at
    timed = [(instant(e.get("updated_at") or e.get("created_at"), f"{where} history") or created, e) for e in events]
    ordered = sorted(timed, key=lambda pair: pair[0])
    last = ordered[-1][1]
    if last.get("event") == "DELETE" or last.get("is_deleted"):
        return []
    return [
        (moment, e["new_memory"])
        for moment, e in ordered
        if e.get("event") in ("ADD", "UPDATE") and isinstance(e.get("new_memory"), str) and e["new_memory"].strip()
    ]
