"""Import: the lines of an export (transfer/jsonl.py) into a store, one transaction per user.

Each user's rows are loaded as they were stored (no re-embedding, no pipeline) inside one
``write(user_id)``, which commits at the line that closes the user's block once the rows now in the
store match the counts it names; a user cut short or miscounted is rolled back whole.

Into a store that is not empty: a user the store already holds any row of is refused (the error
names them), since merging two histories of one person is no copy. Users before the refusal stay
imported. Each imported user is marked in the target under the import's source label, in the same
transaction as its rows, so running the same import again (after an interruption, or after
`cortadel delete-user` of a refused user) skips what is done and goes on; the marks are removed
once the end line is reached.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cortadel_server.errors import TransferError
from cortadel_server.storage.base import ReconcileRun, Storage, StoredJob, Suggestion
from cortadel_server.transfer import jsonl

#: rows inserted per statement batch
BATCH = 1000

_DECODERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "memory": jsonl.stored_memory,
    "event": jsonl.history_entry,
    "entity": jsonl.stored_entity,
    "session": lambda line: (line["session_id"], line["document"]),
    "job": lambda line: jsonl.record(StoredJob, line),
    "reconcile_run": lambda line: jsonl.record(ReconcileRun, line),
    "suggestion": lambda line: jsonl.record(Suggestion, line),
    "recall": jsonl.recall,
}


@dataclass
class ImportReport:
    users: int = 0
    #: users an interrupted run of the same import had already loaded
    resumed: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=jsonl.zero_counts)


def file_source(path: Path) -> str:
    """The source label of an export file: its content's hash, so a resumed import is the same file."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return f"file:{digest.hexdigest()}"


def read_file(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    with path.open(encoding="utf-8") as stream:
        yield from jsonl.parse(stream)


class _UserLoad:
    """One user's block being loaded: its open transaction, the batch in hand and the counts so far."""

    def __init__(self, storage: Storage, user_id: str, skip: bool) -> None:
        self.storage = storage
        self.user_id = user_id
        self.skip = skip
        self.counts = jsonl.zero_counts()
        self.kind: str | None = None
        self.batch: list[Any] = []

    def add(self, number: int, kind: str, line: dict[str, Any]) -> int:
        """Take one record line; returns the memories it holds (for progress)."""
        decode = _DECODERS.get(kind)
        if decode is None:
            raise TransferError(f"line {number}: unknown line type {kind!r}")
        try:
            item = decode(line)
        except (KeyError, TypeError, ValueError) as exc:
            raise TransferError(f"line {number}: a malformed {kind} line ({type(exc).__name__}: {exc})") from None
        self.counts[jsonl.LINE_KINDS[kind]] += 1
        if kind == "entity":
            self.counts["aliases"] += len(item.aliases)
            self.counts["mentions"] += len(item.memory_ids)
        if self.skip:
            return 0
        if kind != self.kind or len(self.batch) >= BATCH:
            self.flush(number)
            self.kind = kind
        self.batch.append(item)
        return 1 if kind == "memory" else 0

    def flush(self, number: int) -> None:
        if not self.batch:
            return
        loaders: dict[str, Callable[[str, Any], None]] = {
            "memory": self.storage.load_memories,
            "event": self.storage.load_history,
            "entity": self.storage.load_entities,
            "session": self.storage.load_sessions,
            "job": self.storage.load_jobs,
            "reconcile_run": self.storage.load_reconcile_runs,
            "suggestion": self.storage.load_suggestions,
            "recall": self.storage.load_recalls,
        }
        assert self.kind is not None
        try:
            loaders[self.kind](self.user_id, self.batch)
        except ValueError as exc:
            raise TransferError(f"line {number}: {exc}") from None
        self.batch = []


def import_lines(
    storage: Storage, lines: Iterable[tuple[int, dict[str, Any]]], *, source: str,
    progress: Callable[[int], object] | None = None,
) -> ImportReport:
    """Load an export's lines (``(line number, object)``, as ``jsonl.parse`` gives them)."""
    stream = iter(lines)
    first = next(stream, None)
    if first is None:
        raise TransferError("the export is empty: no header line")
    _agree_on_vectors(storage, *jsonl.check_header(*first))
    done = storage.transfer_checkpoints(source)
    report = ImportReport()
    current: _UserLoad | None = None
    with ExitStack() as open_user:
        for number, line in stream:
            kind = line["type"]
            if kind == "end":
                if current is not None:
                    raise TransferError(f"line {number}: the end line comes inside the block of user {current.user_id!r}")
                _check_end(number, line, report)
                storage.set_transfer_checkpoint(source, None)
                return report
            user_id = line.get("user_id")
            if not isinstance(user_id, str):
                raise TransferError(f"line {number}: a {kind} line without a user_id")
            if current is None:
                current = _UserLoad(storage, user_id, skip=user_id in done)
                if not current.skip:
                    open_user.enter_context(storage.write(user_id))
                    _refuse_present(storage, user_id)
            elif user_id != current.user_id:
                raise TransferError(f"line {number}: a line of user {user_id!r} inside the block of user {current.user_id!r}")
            if kind == "user":
                _close_user(number, line, current, source)
                open_user.close()  # commits the user's rows and mark
                if current.skip:
                    report.resumed.append(user_id)
                report.users += 1
                for name, n in current.counts.items():
                    report.counts[name] += n
                current = None
                continue
            loaded = current.add(number, kind, line)
            if loaded and progress is not None:
                progress(loaded)
        # raised inside the block: an open user's transaction rolls back
        raise TransferError(
            "the export ends without its end line (cut short?)"
            + (f": user {current.user_id!r} was not imported" if current is not None else "")
            + f"; {report.users} users before it were, and running the same import again goes on from there"
        )


def _agree_on_vectors(storage: Storage, model: str | None, dim: int | None) -> None:
    info = storage.index_info()
    if dim is None:
        return
    if info.dim is None:
        storage.ensure_vector_index(dim, model or "unknown")
    elif (info.dim, info.model) != (dim, model):
        raise TransferError(
            f"the export's vectors come from {model} (dimension {dim}) but the target's from {info.model} "
            f"(dimension {info.dim}); import into an empty store, or reindex one side to the other's embedder first"
        )


def _refuse_present(storage: Storage, user_id: str) -> None:
    present = {kind: n for kind, n in storage.user_row_counts(user_id).items() if n}
    if present:
        held = ", ".join(f"{n} {kind}" for kind, n in present.items())
        raise TransferError(
            f"user {user_id!r} already has data in the target ({held}); an import never merges into a user: "
            f"erase them with `cortadel delete-user {user_id}` or import into an empty store"
        )


def _close_user(number: int, line: dict[str, Any], current: _UserLoad, source: str) -> None:
    if line.get("counts") != current.counts:
        raise TransferError(
            f"line {number}: user {current.user_id!r} closes with counts {line.get('counts')} but the file holds {current.counts}"
        )
    if current.skip:
        return
    current.flush(number)
    stored = current.storage.user_row_counts(current.user_id)
    if stored != current.counts:
        raise TransferError(f"line {number}: user {current.user_id!r} loaded as {stored}, not the {current.counts} of the file")
    current.storage.set_transfer_checkpoint(source, current.user_id)


def _check_end(number: int, line: dict[str, Any], report: ImportReport) -> None:
    if line.get("users") != report.users or line.get("counts") != report.counts:
        raise TransferError(
            f"line {number}: the end line counts {line.get('users')} users and {line.get('counts')}, "
            f"but the file holds {report.users} users and {report.counts}"
        )
