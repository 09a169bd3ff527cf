"""Export: a store (or some of its users) as the lines of an export file (transfer/jsonl.py).

Embeddings are exported (float32, base64) so an import needs no embedder and no time to re-embed:
100,000 memories load in seconds instead of the minutes re-embedding takes, and the vectors are the
very ones the store searched with. The header names the model they came from; a target with another
model refuses them, and a server started with another embedder meets the usual dimension guard and
`cortadel reindex`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from cortadel_server.errors import TransferError
from cortadel_server.storage.base import Storage
from cortadel_server.transfer import jsonl

#: rows read per statement: big enough to amortise a round trip, small enough to keep memory flat
BATCH = 1000

Progress = Callable[[int], object]


def export_lines(
    storage: Storage, users: Sequence[str] | None = None, progress: Progress | None = None
) -> Iterator[dict[str, Any]]:
    """The export of ``users`` (default: every user), line by line; ``progress(n)`` after each
    ``n`` memories."""
    info = storage.index_info()
    if info.reindex_target is not None:
        raise TransferError(
            f"export: a reindex to {info.reindex_target} is unfinished ({info.reindex_remaining} memories left); "
            "run `cortadel reindex` to finish it first, so every exported vector comes from one model"
        )
    yield jsonl.header(info.model, info.dim)
    totals = jsonl.zero_counts()
    chosen = storage.transfer_users() if users is None else list(users)
    for user_id in chosen:
        counts = jsonl.zero_counts()
        yield from _user_lines(storage, user_id, counts, progress)
        yield jsonl.user_line(user_id, counts)
        for kind, n in counts.items():
            totals[kind] += n
    yield jsonl.end_line(len(chosen), totals)


def _user_lines(storage: Storage, user_id: str, counts: dict[str, int], progress: Progress | None) -> Iterator[dict[str, Any]]:
    after = 0
    while batch := storage.dump_memories(user_id, after, BATCH):
        for stored in batch:
            yield jsonl.memory_line(stored)
        counts["memories"] += len(batch)
        after = batch[-1].row_key
        if progress is not None:
            progress(len(batch))
    after = 0
    while events := storage.dump_history(user_id, after, BATCH):
        for _, event in events:
            yield jsonl.event_line(user_id, event)
        counts["events"] += len(events)
        after = events[-1][0]
    for entity in storage.dump_entities(user_id):
        yield jsonl.entity_line(user_id, entity)
        counts["entities"] += 1
        counts["aliases"] += len(entity.aliases)
        counts["mentions"] += len(entity.memory_ids)
    for session_id, document in storage.dump_sessions(user_id):
        yield jsonl.session_line(user_id, session_id, document)
        counts["sessions"] += 1
    for job in storage.dump_jobs(user_id):
        yield jsonl.job_line(user_id, job)
        counts["jobs"] += 1
    for run in storage.dump_reconcile_runs(user_id):
        yield jsonl.reconcile_run_line(run)
        counts["reconcile_runs"] += 1
    for suggestion in storage.dump_suggestions(user_id):
        yield jsonl.suggestion_line(suggestion)
        counts["suggestions"] += 1
    for memory_id, at in storage.dump_recalls(user_id):
        yield jsonl.recall_line(user_id, memory_id, at)
        counts["recalls"] += 1


def write_export(lines: Iterator[dict[str, Any]], out: TextIO) -> None:
    out.writelines(jsonl.encode(line) for line in lines)


def export_to_file(storage: Storage, path: Path, users: Sequence[str] | None = None, progress: Progress | None = None) -> None:
    """Write the export to ``path`` through a sibling ``.partial`` file renamed at the end, so a
    file at ``path`` is always a complete export."""
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as out:
            write_export(export_lines(storage, users, progress), out)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
