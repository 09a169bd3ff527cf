"""Entity merges and role aliases, applied through ``Storage.put_entities`` and undone exactly.

    undo = merge_entities(storage, user_id, source="dana", target="dana lee")
    unmerge(storage, user_id, undo)      # both entities as they were, ids and order included

A merge moves the source's aliases and memory links onto the target and leaves the source's row
empty (so enrichment now resolves its names to the target). An alias adds names and links to one
entity. The undo record lists only what the operation added, so links enrichment made to the
target since then survive an undo.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cortadel_server.errors import Conflict
from cortadel_server.storage.base import Storage, StoredEntity


def entity(storage: Storage, user_id: str, canonical: str) -> StoredEntity:
    """The user's entity by canonical name; Conflict when it is gone or merged away (empty)."""
    found = next((e for e in storage.dump_entities(user_id) if e.canonical == canonical), None)
    if found is None or not found.aliases:
        raise Conflict(f"Entity {canonical!r} no longer exists (merged or deleted since)")
    return found


def merge_entities(storage: Storage, user_id: str, source: str, target: str) -> dict[str, Any]:
    """Fold ``source`` into ``target``; returns the undo record. Runs in the caller's write()."""
    if source == target:
        raise Conflict("An entity cannot be merged into itself")
    old, into = entity(storage, user_id, source), entity(storage, user_id, target)
    return add_names(storage, user_id, into, old.aliases, old.memory_ids, emptied=old)


def add_names(storage: Storage, user_id: str, into: StoredEntity, aliases: Sequence[str], memory_ids: Sequence[str],
              emptied: StoredEntity | None = None) -> dict[str, Any]:
    """Give ``into`` more aliases and links (and empty ``emptied``); returns the undo record."""
    added_aliases = sorted(set(aliases) - set(into.aliases))
    added_links = sorted(set(memory_ids) - set(into.memory_ids))
    put = [StoredEntity(into.canonical, into.kind, tuple(sorted({*into.aliases, *added_aliases})),
                        tuple(sorted({*into.memory_ids, *added_links})))]
    if emptied is not None:
        put.insert(0, StoredEntity(emptied.canonical, emptied.kind, (), ()))
    storage.put_entities(user_id, put)
    return {
        "target": into.canonical, "added_aliases": added_aliases, "added_links": added_links,
        "source": None if emptied is None else {
            "canonical": emptied.canonical, "kind": emptied.kind,
            "aliases": list(emptied.aliases), "memory_ids": list(emptied.memory_ids),
        },
    }


def unmerge(storage: Storage, user_id: str, undo: dict[str, Any]) -> None:
    """Reverse what ``add_names`` recorded. Runs in the caller's write()."""
    target = next((e for e in storage.dump_entities(user_id) if e.canonical == undo["target"]), None)
    put: list[StoredEntity] = []
    if target is not None:
        put.append(StoredEntity(
            target.canonical, target.kind,
            tuple(a for a in target.aliases if a not in set(undo["added_aliases"])),
            tuple(m for m in target.memory_ids if m not in set(undo["added_links"])),
        ))
    source = undo.get("source")
    if source is not None:  # its links, less those to memories deleted since
        alive = storage.get_memories(user_id, source["memory_ids"])
        put.append(StoredEntity(source["canonical"], source["kind"], tuple(source["aliases"]),
                                tuple(m for m in source["memory_ids"] if m in alive)))
    storage.put_entities(user_id, put)
