"""The admin's overview of every user (the dashboard's Users page), written once for every backend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cortadel_server.storage.base import UserSummary

#: per user and state: how many memories, and the latest write to any of them (one scan, no parameters)
USER_STATES = (
    "SELECT user_id, state, count(*), max(COALESCE(updated_at, created_at)) FROM memories GROUP BY user_id, state"
)

#: the tables that hold a user's rows (memory_entities and entity_aliases are reached through entities)
USER_TABLES = (
    "memories", "memory_events", "entities", "session_docs", "jobs", "reconcile_runs", "reconcile_suggestions", "memory_recalls",
)
#: every user any table holds a row of, in order: what an export of all users walks (one statement for both backends)
TRANSFER_USERS = " UNION ".join(f"SELECT user_id FROM {table}" for table in USER_TABLES) + " ORDER BY 1"


def summarise_users(rows: Sequence[Sequence[Any]], limit: int) -> list[UserSummary]:
    """``USER_STATES`` rows as summaries, most recently active first."""
    states: dict[str, dict[str, int]] = {}
    latest: dict[str, float] = {}
    for user_id, state, count, last in rows:
        states.setdefault(user_id, {})[state] = int(count)
        latest[user_id] = max(latest.get(user_id, 0.0), float(last))
    ordered = sorted(latest, key=lambda user: (-latest[user], user))
    return [UserSummary(user, states[user], latest[user]) for user in ordered[:limit]]
