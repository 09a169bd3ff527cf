"""The pipeline package exports exactly its documented, sorted public names."""

from __future__ import annotations

from cortadel_server import pipeline


def test_all_is_sorted_and_complete() -> None:
    assert pipeline.__all__ == sorted(pipeline.__all__)
    public = {name for name in vars(pipeline) if not name.startswith("_")}  # `decide` the function shadows its module
    modules = {"classify", "enrich", "entities", "extract", "llm", "model", "rewrite", "rules", "timeexpr", "writer"}
    assert public - modules == set(pipeline.__all__)
