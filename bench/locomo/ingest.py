"""Load one LoCoMo conversation into a fresh Cortadel user, and learn which turns each memory stands for.

    turns = await ingest_turns(api, "conv-26-turns", conversation)
    facts = await ingest_facts(api, "conv-26-facts", conversation)
    turns.units["<memory id>"]  # {"D1:3"}; a memory that dedup merged maps to every turn it absorbed

Turns mode adds every turn with ``infer: false``, metadata ``{dia_id, session, session_date,
speaker, sample_id}``, and the Cortadel extensions ``session_id`` (the LoCoMo session, which the
server's session arm groups by) and ``timestamp`` (the session date); the memory id in the add
response ties the memory to its turn. Contract mode (``extensions=False``) sends what the published
SDKs send: ``{user_id, text, infer: false, metadata}`` with metadata ``{sample_id, dia_id, speaker}``,
nothing that names the session or its date, so the server has to infer the episodes. Both add the
turns one at a time in conversation order, as a client writing a conversation as it happens does.
Facts mode sends each session to from-conversation with ``uuid = dia_id`` and ``timestamp`` = the
session date on every message and ``session_id`` = the session, then
reads the stored memories back (list, then get for any memory the list left without sources) and
takes each fact's turns from ``source_turn_uuids``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench.client import BenchClient
from bench.locomo.dataset import Conversation, Turn


@dataclass
class Ingested:
    """What one ingestion stored: memory id -> turn ids, the events seen, and how it went."""

    user_id: str
    units: dict[str, set[str]] = field(default_factory=dict)
    events: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    notes: Counter[str] = field(default_factory=Counter)

    @property
    def memories(self) -> int:
        return len(self.units)

    def summary(self) -> dict[str, Any]:
        return {
            "memories": self.memories,
            "events": dict(self.events),
            "seconds": round(self.seconds, 2),
            "notes": dict(self.notes),
        }


def turn_metadata(conversation: Conversation, turn: Turn, *, extensions: bool = True) -> dict[str, Any]:
    where = {"session": turn.session, "session_date": turn.session_date} if extensions else {}
    return {"sample_id": conversation.sample_id, "dia_id": turn.dia_id, **where, "speaker": turn.speaker}


async def ingest_turns(api: BenchClient, user_id: str, conversation: Conversation, *, extensions: bool = True) -> Ingested:
    result = Ingested(user_id)
    started = time.perf_counter()
    for turn in conversation.turns:
        metadata = turn_metadata(conversation, turn, extensions=extensions)
        if extensions:
            created = await api.add(user_id, turn.text, infer=False, metadata=metadata, session_id=turn.session_id, timestamp=turn.said_at)
        else:
            created = await api.add(user_id, turn.text, infer=False, metadata=metadata)
        result.events[created.get("event") or "?"] += 1
        if created.get("id"):
            result.units.setdefault(created["id"], set()).add(turn.dia_id)
    result.seconds = time.perf_counter() - started
    await _check_turn_metadata(api, result)
    current = {item["id"] async for item in api.list_all(user_id)}
    if hidden := len(set(result.units) - current):
        result.notes["turn_memories_no_longer_current"] = hidden
    return result


async def _check_turn_metadata(api: BenchClient, result: Ingested, sample: int = 20) -> None:
    """Read a few memories back and count whether metadata_.dia_id survived the round trip."""
    for memory_id in list(result.units)[:sample]:
        detail = await api.get(result.user_id, memory_id)
        dia_id = _as_object(detail.get("metadata_")).get("dia_id")
        result.notes["metadata_dia_id_ok" if dia_id in result.units[memory_id] else "metadata_dia_id_missing"] += 1


def session_messages(session: tuple[Turn, ...]) -> list[dict[str, str]]:
    """One session as chat messages: every turn as a ``user`` message "Speaker: text" with uuid = dia_id
    and the session date as ``timestamp`` (a Cortadel extension).

    Both LoCoMo speakers are people talking about themselves, so neither is an assistant whose
    words the extractor should skip; the speaker's name stays in the text so facts can name them.
    """
    return [{"role": "user", "content": turn.text, "uuid": turn.dia_id, **({"timestamp": turn.said_at} if turn.said_at else {})} for turn in session]


async def ingest_facts(api: BenchClient, user_id: str, conversation: Conversation) -> Ingested:
    result = Ingested(user_id)
    started = time.perf_counter()
    for session in conversation.sessions:
        reply = await api.add_conversation(user_id, session_messages(session), session_id=session[0].session_id)
        if reply.get("no_facts_extracted"):
            result.notes["sessions_without_facts"] += 1
        for item in reply.get("results") or []:
            result.events[item.get("event") or "?"] += 1
    result.seconds = time.perf_counter() - started

    known = {turn.dia_id for turn in conversation.turns}
    async for item in api.list_all(user_id):
        sources = source_turns(item)
        where = "list"
        if sources is None:
            sources = source_turns(await api.get(user_id, item["id"]))
            where = "get"
        if sources is None:
            result.notes["facts_without_source_turn_uuids"] += 1
            result.units[item["id"]] = set()
            continue
        result.notes[f"source_turn_uuids_from_{where}"] += 1
        turns = {s for s in sources if s in known}
        if len(turns) < len(sources):
            result.notes["unknown_source_turn_uuids"] += len(sources) - len(turns)
        result.units[item["id"]] = turns
    return result


def _as_object(value: Any) -> dict[str, Any]:
    """metadata_ is an object on the wire; tolerate a JSON string too."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def source_turns(record: dict[str, Any]) -> list[str] | None:
    """A memory's ``source_turn_uuids`` from the record itself, its ``metadata_`` or its ``attributes``."""
    for container in (record, _as_object(record.get("metadata_")), _as_object(record.get("attributes"))):
        value = container.get("source_turn_uuids")
        if isinstance(value, str):
            value = json.loads(value) if value.startswith("[") else [v for v in value.split(",") if v]
        if isinstance(value, list):
            return [str(v) for v in value]
    return None
