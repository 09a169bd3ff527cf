"""Zep and Graphiti episodes, as a JSON list (or ``{"episodes": [...]}``):

    Graphiti (EpisodicNode.model_dump()):
      {"uuid": "…", "name": "…", "group_id": "alice", "source": "message", "source_description": "chat",
       "content": "alice: I moved to Porto.\\nassistant: Congratulations!", "valid_at": "…", "created_at": "…"}
    Zep (graph.episode.get_by_user_id(...).episodes):
      {"uuid": "…", "content": "I moved to Porto.", "source": "message", "role_type": "user",
       "session_id": "…", "created_at": "…", "user_id": "alice"}

A message episode is a conversation (Graphiti's "speaker: text" lines, or one Zep turn with its
``role_type``); a text episode is a statement; JSON episodes hold data, not statements, and are
skipped. The user is ``user_id``, else Graphiti's ``group_id``; the time is ``valid_at``, else ``created_at``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cortadel_server.errors import TransferError
from cortadel_server.pipeline.writer import ConversationTurn, TextInput
from cortadel_server.transfer.importers import ForeignImport, Write, as_conversations, instant, load_json, owner_of

ASSISTANTS = {"assistant", "ai", "bot", "system", "agent"}


def read(path: Path, report: ForeignImport, default_user: str | None) -> Iterator[Write]:
    data = load_json(path)
    episodes = data.get("episodes") if isinstance(data, dict) else data
    if not isinstance(episodes, list):
        raise TransferError(f"{path.name}: expected a list of episodes or {{\"episodes\": [...]}}")
    parsed = []
    for n, episode in enumerate(episodes):
        where = f"{path.name}: episodes[{n}]"
        if not isinstance(episode, dict) or not isinstance(episode.get("content"), str):
            raise TransferError(f"{where}: expected an episode with a string \"content\"")
        report.read += 1
        user_id = owner_of(episode.get("user_id") or episode.get("group_id"), default_user, where)
        at = instant(episode.get("valid_at") or episode.get("created_at"), where)
        parsed.append((user_id, at or 0.0, n, episode, at))
    for user_id, _, _, episode, at in sorted(parsed, key=lambda p: (p[0], p[1], p[2])):
        source = str(episode.get("source") or "message").lower()
        if source == "text":
            yield Write(user_id, TextInput(episode["content"], source="import", session_id=episode.get("session_id"), at=at))
        elif source == "message":
            yield from as_conversations(
                (user_id, episode.get("session_id"), turn) for turn in _turns(episode, at)
            )
        else:
            report.skipped += 1


def _turns(episode: dict[str, Any], at: float | None) -> list[ConversationTurn]:
    role_type = episode.get("role_type")
    if isinstance(role_type, str):  # Zep: one message per episode
        return [ConversationTurn(_role(role_type), episode["content"], episode.get("uuid"), at)]
    turns = []
    for line in episode["content"].splitlines():
        speaker, colon, said = line.partition(":")
        if colon and said.strip() and len(speaker) <= 64:
            turns.append(ConversationTurn(_role(speaker), said.strip(), None, at))
        elif line.strip():
            turns.append(ConversationTurn("user", line.strip(), None, at))
    return turns


def _role(speaker: str) -> str:
    return "assistant" if speaker.strip().lower() in ASSISTANTS else "user"
