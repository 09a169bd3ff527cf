"""What a search asks for: the query, how many, which recipe, filters and per-request switches."""

from __future__ import annotations

from dataclasses import dataclass, field

from cortadel_server.storage.base import MemoryFilters


@dataclass(frozen=True)
class SearchRequest:
    user_id: str
    query: str
    top_k: int = 10
    mode: str = "hybrid"
    filters: MemoryFilters = field(default_factory=MemoryFilters)
    rerank: bool = False
    token_budget: int | None = None
    #: True adds the session arm to the recipe, False takes it out, None keeps the recipe's choice
    include_session_arm: bool | None = None
    #: with fading on (curation/fading.py), also return the memories it hides
    include_faded: bool = False
