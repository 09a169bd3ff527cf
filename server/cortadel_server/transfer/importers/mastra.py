"""A Mastra memory store: the LibSQL (SQLite) file its ``@mastra/libsql`` storage keeps, read from
its ``mastra_messages`` table (id, thread_id, content, role, type, createdAt, resourceId), or its
messages as JSON (a list, or ``{"messages": [...]}``, as ``memory.recall()`` gives them:
``{"id", "role", "createdAt", "threadId", "resourceId", "content": {"format": 2, "parts": [...]}}``).

A thread becomes a session of its resource (the user); user and assistant text parts become
conversation turns; system, tool and signal messages carry nothing to remember and are skipped.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cortadel_server.errors import TransferError
from cortadel_server.pipeline.writer import ConversationTurn
from cortadel_server.transfer.importers import ForeignImport, Write, as_conversations, instant, load_json, owner_of

SQLITE_MAGIC = b"SQLite format 3\x00"


def read(path: Path, report: ForeignImport, default_user: str | None) -> Iterator[Write]:
    return as_conversations(_turns(_messages(path), path, report, default_user))


def _messages(path: Path) -> list[dict[str, Any]]:
    with path.open("rb") as stream:
        is_sqlite = stream.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    if not is_sqlite:
        data = load_json(path)
        messages = data.get("messages") if isinstance(data, dict) else data
        if not isinstance(messages, list):
            raise TransferError(f"{path.name}: expected a Mastra LibSQL file, a list of messages or {{\"messages\": [...]}}")
        return messages
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            rows = db.execute(
                'SELECT id, thread_id, content, role, "createdAt", "resourceId" FROM mastra_messages ORDER BY thread_id, "createdAt", id'
            ).fetchall()
    except sqlite3.Error as exc:
        raise TransferError(f"{path.name}: not a Mastra store ({exc})") from None
    return [{"id": i, "threadId": t, "content": c, "role": r, "createdAt": at, "resourceId": u} for i, t, c, r, at, u in rows]


def _turns(
    messages: list[dict[str, Any]], path: Path, report: ForeignImport, default_user: str | None
) -> Iterator[tuple[str, str | None, ConversationTurn]]:
    for n, message in enumerate(messages):
        where = f"{path.name}: message {message.get('id', n) if isinstance(message, dict) else n}"
        if not isinstance(message, dict):
            raise TransferError(f"{where}: not a message object")
        report.read += 1
        text = _text(message.get("content"))
        if message.get("role") not in ("user", "assistant") or not text:
            report.skipped += 1
            continue
        user_id = owner_of(message.get("resourceId"), default_user, where)
        at = instant(message.get("createdAt"), where)
        yield user_id, message.get("threadId") or message.get("thread_id"), ConversationTurn(message["role"], text, message.get("id"), at)


def _text(content: Any) -> str:
    """The text of a message's content: a plain string, a stored JSON string, Mastra's format 2
    ``{"parts": [...]}`` or a list of parts (format 1); only text parts count."""
    if isinstance(content, str):
        stripped = content.strip()
        if not stripped.startswith(("{", "[")):
            return stripped
        try:
            content = json.loads(stripped)
        except json.JSONDecodeError:
            return stripped
    if isinstance(content, dict):
        parts = content.get("parts")
        if isinstance(parts, list) and parts:
            return _text(parts)
        return content["content"].strip() if isinstance(content.get("content"), str) else ""
    if isinstance(content, list):
        texts = [p["text"].strip() for p in content if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)]
        return "\n".join(t for t in texts if t)
    return ""
