"""The tools' arguments: one pydantic model per tool, which is also the tool's published input schema.

Names follow what MCP clients already send (``topK`` and ``includeFaded`` are camelCase, the rest
snake_case). Unknown arguments are refused, so a misspelt filter is an error the model can read
and correct rather than a silently ignored one. ``null`` means absent everywhere.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cortadel_server.api.schemas import ConversationMessageItem
from cortadel_server.inputs import storable
from cortadel_server.storage.base import MemoryType

Instant = str | float
Statement = Annotated[str, Field(min_length=1, max_length=50000)]


class Arguments(BaseModel):
    # enum values arrive as their plain strings, as REST bodies do
    model_config = ConfigDict(extra="forbid", use_enum_values=True)

    # The same rule as REST bodies: nothing that could not be read back from stored JSON.
    _storable = field_validator("*", mode="before")(storable)

    @classmethod
    def input_schema(cls) -> dict[str, Any]:
        """The JSON schema a client sees: references inlined (some clients do not follow ``$ref``), no titles."""
        schema = cls.model_json_schema(by_alias=True)
        plain: dict[str, Any] = _plain(schema, schema.pop("$defs", {}))
        return plain


def _plain(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_plain(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _plain(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    return {
        key: {name: _plain(sub, defs) for name, sub in value.items()} if key == "properties" else _plain(value, defs)
        for key, value in node.items()
        if key != "title"
    }


class AddMemoriesArgs(Arguments):
    memories: list[Statement] = Field(
        min_length=1,
        max_length=100,
        description="Statements to remember, one fact each, in the user's words "
        '(e.g. "I moved to Lisbon", "Forget my old phone number", "The login bug is resolved").',
    )
    project: str | None = Field(None, description="Project the memories belong to (default: the connection's project).")
    tags: list[str] | None = Field(None, description="Tags to store with every memory.")
    memory_type: MemoryType | None = Field(
        None, description="semantic (facts, the default), episodic (events) or procedural (how to do something)."
    )


class AddConversationArgs(Arguments):
    messages: list[ConversationMessageItem] = Field(
        min_length=1, max_length=500, description="The conversation, oldest first: {role, content, uuid?}."
    )
    is_agent_memory: bool | None = Field(
        None, description="Extract what the assistant said (its own decisions and learnings) instead of the user's facts."
    )
    tags: list[str] | None = Field(None, description="Tags to store with every extracted fact.")
    project: str | None = Field(None, description="Project the facts belong to (default: the connection's project).")
    session_id: str | None = Field(None, description="Session the conversation belongs to.")
    transcript_path: str | None = Field(None, description="Where the full transcript lives, kept with every fact.")


class SearchMemoryArgs(Arguments):
    query: str | None = Field(
        None, min_length=1, max_length=5000,
        description="What to look for, in natural language. Omit to browse the newest memories.",
    )
    top_k: int = Field(10, alias="topK", ge=1, le=50, description="How many results a search returns.")
    limit: int = Field(10, ge=1, le=100, description="Browse only (no query): how many memories to return.")
    offset: int = Field(0, ge=0, le=10000, description="Browse only (no query): how many of the newest to skip.")
    detail: Literal["full", "headline"] = Field(
        "full", description='"headline" returns only id, gist and score per memory; "full" (default) the whole content.'
    )
    ids: list[str] | None = Field(
        None, max_length=100, description="Look these memory ids up directly (query, topK and paging are ignored)."
    )
    project: str | None = Field(None, description="Only memories of this project (default: the connection's project).")
    tag: str | None = Field(None, description="Only memories with this tag.")
    session_id: str | None = Field(None, description="Only memories stored under this session.")
    memory_type: MemoryType | None = Field(None, description="Only memories of this type.")
    token_budget: int | None = Field(
        None, ge=0, le=200000, description="Drop the lowest-ranked results beyond roughly this many tokens (0: no limit)."
    )
    include_faded: bool | None = Field(
        None, alias="includeFaded",
        description="Also return memories that faded because nothing recalled or touched them for long "
        "(only when the server fades memories; default false).",
    )
    as_of: Instant | None = Field(
        None, description="Valid time: only facts that were true at this instant (ISO 8601 or Unix seconds)."
    )
    known_at: Instant | None = Field(
        None, description="Record time: only facts Cortadel held at this instant (ISO 8601 or Unix seconds)."
    )
    include_superseded: bool | None = Field(
        None, description="Also return memories that were replaced, retracted or resolved."
    )


class GetSkillArgs(Arguments):
    task: str = Field(min_length=1, max_length=5000, description="The task to find a known procedure for.")
