"""`cortadel import --format mem0|zep|mastra|messages`: files in each tool's documented shape, run
through the write pipeline (rules) into a real SQLite store, read back with `cortadel export`."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest


def cortadel(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cortadel_server", *args], check=False, capture_output=True, text=True, timeout=300)


def imported(tmp_path: Path, fmt: str, source: Path, *extra: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The import's report and the store's memories afterwards (export lines), oldest first."""
    data = tmp_path / "store.db"
    result = cortadel("import", "--format", fmt, str(source), "--data", str(data), *extra)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "export.jsonl"
    exported = cortadel("export", "-o", str(out), "--data", str(data))
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    return json.loads(result.stdout), [line for line in lines if line["type"] == "memory"]


def at(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


def current(memories: list[dict[str, Any]], user: str) -> list[str]:
    return [m["text"] for m in memories if m["user_id"] == user and m["expired_at"] is None and m["invalid_at"] is None]


def test_mem0_get_all_with_history_comes_back_as_versions(tmp_path: Path) -> None:
    export = {
        "results": [
            {"id": "m-1", "memory": "Lives in Paris", "hash": "h1", "metadata": {"topic": "home"},
             "created_at": "2026-01-10T09:00:00-08:00", "updated_at": "2026-03-01T10:00:00-08:00", "user_id": "alice"},
            {"id": "m-2", "memory": "Is allergic to peanuts", "hash": "h2", "metadata": None,
             "created_at": "2026-02-02T12:00:00-08:00", "updated_at": None, "user_id": "alice", "agent_id": "health-bot"},
            {"id": "m-3", "memory": "Plays cricket on Sundays", "hash": "h3", "metadata": None,
             "created_at": "2026-02-03T12:00:00+00:00", "updated_at": None, "user_id": "bob"},
        ],
        "history": [
            {"id": "e-1", "memory_id": "m-1", "old_memory": None, "new_memory": "Lives in Berlin", "event": "ADD",
             "created_at": "2026-01-10T09:00:00-08:00", "updated_at": None, "is_deleted": False, "actor_id": None, "role": "user"},
            {"id": "e-2", "memory_id": "m-1", "old_memory": "Lives in Berlin", "new_memory": "Lives in Paris", "event": "UPDATE",
             "created_at": "2026-03-01T10:00:00-08:00", "updated_at": "2026-03-01T10:00:00-08:00", "is_deleted": False, "actor_id": None, "role": "user"},
        ],
    }
    source = tmp_path / "mem0.json"
    source.write_text(json.dumps(export), encoding="utf-8")
    report, memories = imported(tmp_path, "mem0", source)
    assert report == {"format": "mem0", "read": 3, "skipped": 0, "users": 2, "events": {"ADD": 3, "SUPERSEDE": 1}}
    assert current(memories, "alice") == ["Is allergic to peanuts", "Lives in Paris"]
    assert current(memories, "bob") == ["Plays cricket on Sundays"]
    berlin = next(m for m in memories if m["text"] == "Lives in Berlin")
    paris = next(m for m in memories if m["text"] == "Lives in Paris")
    # mem0's UPDATE is a new version of its memory: the old wording leaves the record, valid time carries on
    assert (berlin["state"], berlin["superseded_by"], berlin["invalid_at"]) == ("superseded", paris["id"], None)
    assert berlin["valid_at"] == paris["valid_at"] == at("2026-01-10T09:00:00-08:00")
    assert berlin["expired_at"] is not None
    assert paris["metadata"] == berlin["metadata"] == {"topic": "home", "mem0": {"id": "m-1", "hash": "h1"}}
    peanuts = next(m for m in memories if m["text"] == "Is allergic to peanuts")
    assert (peanuts["app_name"], peanuts["valid_at"]) == ("health-bot", at("2026-02-02T12:00:00-08:00"))


def test_a_real_mem0_export_comes_back_in_the_order_mem0_recorded_it(tmp_path: Path) -> None:
    # written by real mem0 OSS 2.2.1 (bench/mem0_export.py): history() stamps an UPDATE's created_at
    # with the memory's creation time; when the update happened is its updated_at
    report, memories = imported(tmp_path, "mem0", Path(__file__).parent / "data" / "mem0_real_export.json")
    # the deleted cat is in history() only: get_all() no longer lists it
    assert report == {"format": "mem0", "read": 4, "skipped": 0, "users": 2, "events": {"ADD": 4, "SUPERSEDE": 2}}
    assert current(memories, "alice") == ["Is allergic to peanuts", "Lives in Paris"]
    assert current(memories, "bob") == ["Plays cricket on Sundays", "Drinks soy milk"]
    # replayed as mem0 recorded it: alice moved after she told of the peanuts
    alice = sorted((m for m in memories if m["user_id"] == "alice"), key=lambda m: m["created_at"])
    assert [m["text"] for m in alice] == ["Lives in Berlin", "Is allergic to peanuts", "Lives in Paris"]
    by_text = {m["text"]: m for m in memories}
    berlin, paris, oat, soy = (by_text[t] for t in ("Lives in Berlin", "Lives in Paris", "Drinks oat milk", "Drinks soy milk"))
    assert (berlin["state"], berlin["superseded_by"], oat["state"], oat["superseded_by"]) == ("superseded", paris["id"], "superseded", soy["id"])
    assert berlin["valid_at"] == paris["valid_at"] == at("2026-11-30T22:38:49.654813+00:00")
    assert oat["valid_at"] == soy["valid_at"] == at("2026-11-30T22:38:54.097788+00:00")
    assert paris["metadata"] == {"topic": "home", "mem0": {"id": "2934122e-fe16-4db4-8973-2a1c8f92d551", "hash": "54494628a455d3798d43cbac183097ed"}}
    peanuts, cricket = by_text["Is allergic to peanuts"], by_text["Plays cricket on Sundays"]
    assert (peanuts["app_name"], peanuts["valid_at"]) == ("health-bot", at("2026-11-30T22:38:50.762290+00:00"))
    assert (cricket["session_id"], cricket["valid_at"]) == ("season-2026", at("2026-11-30T22:38:52.992188+00:00"))
    assert "Has a cat named Miso" not in by_text


def test_graphiti_and_zep_episodes_are_distilled(tmp_path: Path) -> None:
    episodes = [
        {"uuid": "ep-1", "name": "chat 1", "group_id": "alice", "labels": [], "source": "message",
         "source_description": "support chat", "content": "alice: I live in Berlin.\nassistant: Noted!",
         "valid_at": "2026-01-10T09:00:00Z", "created_at": "2026-01-10T09:00:05Z", "entity_edges": []},
        {"uuid": "ep-2", "name": "chat 2", "group_id": "alice", "labels": [], "source": "message",
         "source_description": "support chat", "content": "alice: I live in Paris now.",
         "valid_at": "2026-03-01T18:30:00Z", "created_at": "2026-03-01T18:30:02Z", "entity_edges": []},
        {"uuid": "ep-3", "name": "crm", "group_id": "alice", "labels": [], "source": "json",
         "source_description": "crm record", "content": "{\"plan\": \"pro\"}", "created_at": "2026-03-02T00:00:00Z"},
        # Zep's own episodes: one message each, with its role type and session
        {"uuid": "ep-4", "content": "I prefer tea over coffee.", "source": "message", "role": "Bob", "role_type": "user",
         "session_id": "sess-9", "created_at": "2026-02-01T08:00:00Z", "processed": True, "user_id": "bob"},
    ]
    source = tmp_path / "episodes.json"
    source.write_text(json.dumps({"episodes": episodes}), encoding="utf-8")
    report, memories = imported(tmp_path, "zep", source)
    assert report == {"format": "zep", "read": 4, "skipped": 1, "users": 2, "events": {"ADD": 2, "SUPERSEDE": 1}}
    assert current(memories, "alice") == ["User lives in Paris now."]
    berlin = next(m for m in memories if m["text"] == "User lives in Berlin.")
    assert (berlin["valid_at"], berlin["invalid_at"]) == (at("2026-01-10T09:00:00+00:00"), at("2026-03-01T18:30:00+00:00"))
    [tea] = [m for m in memories if m["user_id"] == "bob"]
    assert (tea["text"], tea["session_id"], tea["source_turn_uuids"]) == ("User prefers tea over coffee.", "sess-9", ["ep-4"])


def mastra_store(path: Path, messages: list[tuple[str, str, str, str, str, str]]) -> None:
    """A LibSQL file laid out as @mastra/libsql creates it (TABLE_SCHEMAS of @mastra/core 1.x)."""
    with sqlite3.connect(path) as db:
        db.execute('CREATE TABLE mastra_threads (id TEXT NOT NULL PRIMARY KEY, "resourceId" TEXT NOT NULL, title TEXT NOT NULL, '
                   'metadata TEXT, "createdAt" TIMESTAMP NOT NULL, "updatedAt" TIMESTAMP NOT NULL)')
        db.execute('CREATE TABLE mastra_messages (id TEXT NOT NULL PRIMARY KEY, thread_id TEXT NOT NULL, content TEXT NOT NULL, '
                   'role TEXT NOT NULL, type TEXT NOT NULL, "createdAt" TIMESTAMP NOT NULL, "resourceId" TEXT)')
        db.execute("INSERT INTO mastra_threads VALUES ('thread-1', 'carol', 'Moving', NULL, '2026-01-10T09:00:00.000Z', '2026-01-10T09:00:00.000Z')")
        db.executemany("INSERT INTO mastra_messages VALUES (?, ?, ?, ?, ?, ?, ?)", [
            (mid, "thread-1", json.dumps(content), role, "v2", created, "carol") for mid, role, content, created in [
                (m[0], m[1], {"format": 2, "parts": [{"type": "text", "text": m[2]}] if m[2] else [], "content": m[2]}, m[3])
                for m in messages
            ]
        ])


def test_a_mastra_libsql_store_is_read_thread_by_thread(tmp_path: Path) -> None:
    source = tmp_path / "mastra.db"
    mastra_store(source, [
        ("msg-1", "user", "My daughter Lena starts school in September.", "2026-01-10T09:00:00.000Z", "", ""),
        ("msg-2", "assistant", "That is exciting!", "2026-01-10T09:00:01.000Z", "", ""),
        ("msg-3", "system", "You are a helpful assistant.", "2026-01-10T09:00:02.000Z", "", ""),
        ("msg-4", "user", "", "2026-01-10T09:00:03.000Z", "", ""),
    ])
    report, memories = imported(tmp_path, "mastra", source)
    assert report == {"format": "mastra", "read": 4, "skipped": 2, "users": 1, "events": {"ADD": 1}}
    [lena] = memories
    assert (lena["user_id"], lena["session_id"], lena["source_turn_uuids"]) == ("carol", "thread-1", ["msg-1"])
    assert lena["text"].startswith("User's daughter Lena starts school in September")


def test_plain_messages_run_through_the_pipeline(tmp_path: Path) -> None:
    source = tmp_path / "messages.jsonl"
    source.write_text("\n".join(json.dumps(m) for m in [
        {"user_id": "dan", "role": "user", "content": "I live in Berlin.", "session_id": "s1", "timestamp": "2026-01-10T09:00:00Z", "uuid": "t1"},
        {"user_id": "dan", "role": "assistant", "content": "Nice city!", "session_id": "s1"},
        {"role": "user", "content": "I live in Paris now.", "timestamp": 1772389800},
    ]) + "\n", encoding="utf-8")
    report, memories = imported(tmp_path, "messages", source, "--user", "dan")
    assert report == {"format": "messages", "read": 3, "skipped": 0, "users": 1, "events": {"ADD": 1, "SUPERSEDE": 1}}
    assert current(memories, "dan") == ["User lives in Paris now."]
    berlin = memories[0]
    assert (berlin["text"], berlin["session_id"], berlin["source_turn_uuids"]) == ("User lives in Berlin.", "s1", ["t1"])
    assert berlin["invalid_at"] == 1772389800.0


@pytest.mark.parametrize(
    ("fmt", "content", "message"),
    [
        ("messages", '{"role": "user", "content": "I live in Rome."}\n',
         "cortadel: messages.jsonl line 1: names no user; pass --user to file it under one\n"),
        ("messages", '{"role": "user"}\n', 'cortadel: messages.jsonl line 1: expected an object with a string "role" and "content"\n'),
        ("messages", '{"user_id": "u", "role": "user", "content": "Hi", "timestamp": "yesterday"}\n',
         "cortadel: messages.jsonl line 1: Not an ISO 8601 date-time or Unix seconds\n"),
        ("mem0", "[{\"memory\": \"x\"}]", 'cortadel: messages.jsonl: results[0]: expected a memory with a string "id" and "memory"\n'),
        ("zep", "{\"nodes\": []}", 'cortadel: messages.jsonl: expected a list of episodes or {"episodes": [...]}\n'),
        ("mastra", "not json", "cortadel: messages.jsonl: not JSON (line 1: Expecting value)\n"),
    ],
)
def test_a_bad_foreign_file_is_refused_with_where_and_why(fmt: str, content: str, message: str, tmp_path: Path) -> None:
    source = tmp_path / "messages.jsonl"
    source.write_text(content, encoding="utf-8")
    result = cortadel("import", "--format", fmt, str(source), "--data", str(tmp_path / "store.db"))
    assert (result.returncode, result.stderr) == (2, message)
