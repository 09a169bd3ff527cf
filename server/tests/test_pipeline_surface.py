"""The pipeline package exports exactly its documented, sorted public names."""

from __future__ import annotations

import types

from cortadel_server import pipeline


def test_all_is_sorted_and_complete() -> None:
    assert pipeline.__all__ == sorted(pipeline.__all__)
    # Submodules become attributes as they are imported (by other tests too); they are not the surface.
    # `decide` the function shadows its module.
    public = {name for name, value in vars(pipeline).items() if not name.startswith("_") and not isinstance(value, types.ModuleType)}
    assert public == set(pipeline.__all__)
