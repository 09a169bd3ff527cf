"""Plain JSON Lines of chat messages, one message a line, distilled by the write pipeline:

    {"user_id": "alice", "role": "user", "content": "I moved to Porto.", "session_id": "s1",
     "timestamp": "2026-03-01T18:30:00Z", "uuid": "turn-17"}

Only ``role`` and ``content`` are required (``user_id`` or ``--user``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from cortadel_server.errors import TransferError
from cortadel_server.pipeline.writer import ConversationTurn
from cortadel_server.transfer.importers import ForeignImport, Write, as_conversations, instant, owner_of


def read(path: Path, report: ForeignImport, default_user: str | None) -> Iterator[Write]:
    return as_conversations(_turns(path, report, default_user))


def _turns(path: Path, report: ForeignImport, default_user: str | None) -> Iterator[tuple[str, str | None, ConversationTurn]]:
    with path.open(encoding="utf-8") as stream:
        for number, text in enumerate(stream, start=1):
            if not text.strip():
                continue
            where = f"{path.name} line {number}"
            try:
                line = json.loads(text)
            except json.JSONDecodeError as exc:
                raise TransferError(f"{where}: not JSON ({exc.msg})") from None
            if not isinstance(line, dict) or not isinstance(line.get("role"), str) or not isinstance(line.get("content"), str):
                raise TransferError(f"{where}: expected an object with a string \"role\" and \"content\"")
            report.read += 1
            if not line["content"].strip():
                report.skipped += 1
                continue
            turn = ConversationTurn(line["role"], line["content"], line.get("uuid"), instant(line.get("timestamp"), where))
            yield owner_of(line.get("user_id"), default_user, where), line.get("session_id"), turn
