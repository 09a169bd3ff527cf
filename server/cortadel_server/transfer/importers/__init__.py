"""Importers from the formats people leave other memory tools with. Each reads its file into
``Write`` items (a user and a text or a conversation); ``import_foreign`` runs them through the
write pipeline in batches, so they are deduplicated, superseded and indexed like any other write.

    mem0      get_all() results, with history() events (mem0.py)
    zep       Zep / Graphiti episodes (zep.py)
    mastra    a Mastra memory store: its LibSQL file, or its messages as JSON (mastra.py)
    messages  plain JSON Lines of chat messages (messages.py)
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cortadel_server.errors import TransferError, ValidationFailed
from cortadel_server.inputs import parse_instant
from cortadel_server.pipeline.writer import ConversationInput, ConversationTurn, TextInput
from cortadel_server.transfer import FOREIGN_FORMATS

if TYPE_CHECKING:
    from cortadel_server.service import MemoryService

#: inputs written per pipeline batch (one transaction, one embedder call)
BATCH = 64
#: messages per conversation handed to the pipeline
TURNS = 20


@dataclass(frozen=True)
class Write:
    user_id: str
    input: TextInput | ConversationInput
    #: the source's id of a fact with versions: a later text of the same chain revises the memory
    #: the earlier one became (a new version superseding it), as the source tool recorded an update
    chain: str | None = None


@dataclass
class ForeignImport:
    format: str
    #: items read from the file (memories, episodes or messages)
    read: int = 0
    #: items with nothing to remember (empty, tool calls, JSON episodes)
    skipped: int = 0
    users: set[str] = field(default_factory=set)
    #: the pipeline's outcomes by event (ADD, SUPERSEDE, SKIP_DUPLICATE, …)
    events: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, Any]:
        return {"format": self.format, "read": self.read, "skipped": self.skipped, "users": len(self.users),
                "events": dict(sorted(self.events.items()))}


def import_foreign(
    service: MemoryService, fmt: str, path: Path, *, user_id: str | None = None, progress: Callable[[int], object] | None = None
) -> ForeignImport:
    """Read ``path`` as ``fmt`` and write it for its users (``user_id`` for items that name none)."""
    from cortadel_server.transfer.importers import mastra, mem0, messages, zep

    readers: dict[str, Callable[[Path, ForeignImport, str | None], Iterator[Write]]] = {
        "mem0": mem0.read, "zep": zep.read, "mastra": mastra.read, "messages": messages.read,
    }
    if fmt not in readers:
        raise TransferError(f"unknown import format {fmt!r}; expected one of {', '.join(FOREIGN_FORMATS)}")
    report = ForeignImport(fmt)
    run_writes(service, readers[fmt](path, report, user_id), report, progress)
    return report


def run_writes(service: MemoryService, writes: Iterable[Write], report: ForeignImport, progress: Callable[[int], object] | None) -> None:
    """Write in batches of one user's consecutive items, in file order (a later statement may supersede an earlier one)."""
    batch: list[Write] = []
    #: chain → the memory its latest version became
    chains: dict[str, str] = {}

    def flush() -> None:
        if not batch:
            return
        results = service.add_batch(batch[0].user_id, [w.input for w in batch])
        for write, outcomes in zip(batch, results, strict=True):
            report.events.update(o.event for o in outcomes)
            if write.chain is not None and outcomes and outcomes[0].id is not None:
                chains[write.chain] = outcomes[0].id
        if progress is not None:
            progress(len(batch))
        batch.clear()

    for write in writes:
        report.users.add(write.user_id)
        if batch and (write.user_id != batch[0].user_id or len(batch) >= BATCH or write.chain in {w.chain for w in batch if w.chain}):
            flush()
        if write.chain in chains and isinstance(write.input, TextInput):
            revised = service.revise(write.user_id, chains[write.chain], write.input.text, source="import")
            chains[write.chain] = revised.id
            report.events["SUPERSEDE"] += 1
            continue
        batch.append(write)
    flush()


# -- helpers the readers share ---------------------------------------------------------------------
def load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise TransferError(f"{path.name}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise TransferError(f"{path.name}: not JSON (line {exc.lineno}: {exc.msg})") from None


def instant(value: Any, where: str) -> float | None:
    try:
        return parse_instant(value, where)
    except ValidationFailed as exc:
        raise TransferError(f"{where}: {exc.errors[where][0]}") from None


def owner_of(item_user: Any, default: str | None, where: str) -> str:
    user = item_user if isinstance(item_user, str) and item_user else default
    if user is None:
        raise TransferError(f"{where}: names no user; pass --user to file it under one")
    return user


def as_conversations(turns: Iterable[tuple[str, str | None, ConversationTurn]]) -> Iterator[Write]:
    """(user, session, turn) in order → conversations: consecutive turns of one user and session,
    cut every ``TURNS`` turns, as from-conversation takes them."""
    held: list[ConversationTurn] = []
    key: tuple[str, str | None] = ("", None)
    for user_id, session_id, turn in turns:
        if held and ((user_id, session_id) != key or len(held) >= TURNS):
            yield Write(key[0], ConversationInput(held, session_id=key[1]))
            held = []
        key = (user_id, session_id)
        held.append(turn)
    if held:
        yield Write(key[0], ConversationInput(held, session_id=key[1]))
