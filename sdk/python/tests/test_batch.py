"""``add_batch`` of both clients against a real Cortadel server."""

from __future__ import annotations

import json
import uuid
from typing import Any

from sdk_support import Connect

from cortadel import (
    AddOptions,
    BatchConversation,
    BatchMemory,
    BatchResult,
    ChatMessage,
    ConversationOptions,
    ConversationResult,
    MemoryCreated,
)


def test_a_batch_answers_per_item_in_order(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    result = client.add_batch(
        [
            BatchMemory("Erin takes the 7:40 train.", AddOptions(infer=False, app="sdk-batch", metadata={"n": 1})),
            "Erin's locker is number 12.",
            BatchMemory("Erin takes the 7:40 train.", AddOptions(infer=False)),
            BatchMemory("x", AddOptions(memory_type="weird")),
        ],
        [BatchConversation([ChatMessage("user", "I keep my passport in the top drawer.", uuid="turn-1")],
                           ConversationOptions(tags=["travel"]))],
    )
    assert isinstance(result, BatchResult)
    train, locker, again, bad = result.memories
    assert all(isinstance(m, MemoryCreated) for m in result.memories)
    assert (train.event, train.content, train.app_name, train.state) == ("ADD", "Erin takes the 7:40 train.", "sdk-batch", "active")
    assert json.loads(train.metadata or "null") == {"n": 1}
    assert uuid.UUID(train.id)
    assert (locker.event, locker.content) == ("ADD", "Erin's locker is number 12.")
    assert (again.event, again.id) == ("SKIP_DUPLICATE", train.id)
    assert (bad.event, bad.id, bad.error) == (
        "ERROR", "", "Invalid item: memory_type: Must be one of episodic, semantic, procedural")
    [conversation] = result.conversations
    assert isinstance(conversation, ConversationResult)
    assert [(r.event, r.memory) for r in conversation.results or []] == [
        ("ADD", "User keeps their passport in the top drawer.")]
    fact = client.get((conversation.results or [])[0].id or "")
    assert fact is not None and (fact.tags, fact.source_turn_uuids) == (["travel"], ["turn-1"])
    assert client.list().total == 3


def test_a_batch_of_conversations_only(server: Any, connect: Connect, user: str) -> None:
    client = connect(server.base_url, user)
    result = client.add_batch(conversations=[BatchConversation([ChatMessage("user", "thanks")])])
    assert result.memories == []
    assert [(c.results, c.no_facts_extracted) for c in result.conversations] == [(None, True)]


def test_a_key_bound_client_batches_for_its_user(auth_server: Any, connect: Connect) -> None:
    user = f"sdk-{uuid.uuid4().hex[:10]}"
    client = connect(auth_server.base_url, None, api_key=auth_server.mint_key(user))
    result = client.add_batch(["Frank waters the plants on Mondays."])
    assert [(m.event, m.content) for m in result.memories] == [("ADD", "Frank waters the plants on Mondays.")]
