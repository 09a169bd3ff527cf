"""A listing with a search query: the most relevant first, then every other memory newest first,
each exactly once on consistent pages (in process, on a real SQLite file, with a small ranked head)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cortadel_server.config import Settings
from cortadel_server.retrieval.search import SearchRequest
from cortadel_server.service import MemoryService
from cortadel_server.storage.base import MemoryFilters


@pytest.fixture()
def service(tmp_path: Path) -> Iterator[MemoryService]:
    svc = MemoryService.open(Settings(data=str(tmp_path / "c.db")))
    try:
        yield svc
    finally:
        svc.close()


def test_pages_cover_every_memory_once_with_the_ranked_head_first(service: MemoryService) -> None:
    texts = [f"Entry {i}: {'kayak trip' if i % 5 == 0 else 'grocery list'} number {i}." for i in range(60)]
    for i, text in enumerate(texts):
        service.add("u", text, infer=False, at=1_800_000_000 + i)
    everything = MemoryFilters()
    seen: list[str] = []
    for page in range(9):
        records, total = service.list_memories("u", everything, offset=page * 7, limit=7, search_query="kayak trip", ranked_depth=10)
        assert total == 60
        seen += [r.text for r in records]
    assert len(seen) == 60 and sorted(seen) == sorted(texts)
    head = [h.memory.text for h in service.search(SearchRequest("u", "kayak trip", top_k=10, filters=everything))]
    assert seen[:10] == head
    assert all("kayak" in t for t in seen[:10] if texts.index(t) % 5 == 0) and sum("kayak" in t for t in seen[:10]) == 10
    tail = seen[10:]
    assert tail == [t for t in reversed(texts) if t not in head]  # newest first
