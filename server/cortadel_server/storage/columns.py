"""The ``memories`` table as every backend lays it out: one column per ``MemoryRecord`` field (the
four list and dict fields as JSON), plus the backend's own (row key, context, embedding, search)."""

from __future__ import annotations

import hashlib

JSON_COLUMNS = ("categories", "tags", "metadata", "source_turn_uuids")
MEMORY_COLUMNS = (
    "id", "user_id", "text", "fingerprint", "gist", "memory_type", "categories", "tags", "project",
    "app_name", "session_id", "metadata", "state", "source_turn_uuids", "transcript_path",
    "extraction_status", "valid_at", "invalid_at", "created_at", "expired_at", "superseded_by",
    "updated_at",
)
#: selects a MemoryRecord's fields, in MEMORY_COLUMNS order
SELECT_MEMORY = "SELECT " + ", ".join(MEMORY_COLUMNS) + " FROM memories"
#: what ``update_memory`` may set: a memory never changes owner, id or record time
UPDATABLE_COLUMNS = frozenset(MEMORY_COLUMNS) - {"id", "user_id", "created_at"}

# Keys of the meta table (one value each, shared by every user).
VECTOR_DIM = "vector_dim"  # the vector index's dimension,
VECTOR_MODEL = "vector_model"  # and the model label its vectors come from
ERASURES = "erasures"  # deletions of text committed so far: a process whose caches hold text compares
VERSION_FLOOR = "user_version_floor"  # the highest version a since erased user reached
REINDEX_MODEL = "reindex_model"  # an unfinished reindex: the model label it embeds with,
REINDEX_DIM = "reindex_dim"  # that model's dimension,
REINDEX_THROUGH = "reindex_through"  # and the highest row key re-embedded so far


def transfer_checkpoint_key(source: str, user_id: str) -> str:
    """The meta key marking that an unfinished import from ``source`` loaded ``user_id``."""
    return f"transfer:{hashlib.sha1(source.encode('utf-8')).hexdigest()[:16]}:{user_id}"
