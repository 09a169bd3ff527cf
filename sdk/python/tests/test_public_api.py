"""The public surface: what ``cortadel`` exports, and that it is a superset of the published
``cortadel`` 1.2.0 facade, so code written against that package runs against ours unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from environments import run_script

import cortadel

REQUIRED = "<required>"


def test_all_is_sorted_and_complete() -> None:
    public = {name for name in vars(cortadel) if not name.startswith("_")}
    assert cortadel.__all__ == sorted(cortadel.__all__)
    assert set(cortadel.__all__) - {"__version__"} == public


def test_package_is_typed() -> None:
    assert (Path(cortadel.__file__).parent / "py.typed").is_file()


def test_error_tree() -> None:
    for name in ("ValidationError", "AuthenticationError", "PermissionDeniedError", "NotFoundError", "ServerError", "TransportError"):
        assert issubclass(getattr(cortadel, name), cortadel.CortadelError)
    assert issubclass(cortadel.RequestTimeoutError, cortadel.TransportError)
    err = cortadel.PermissionDeniedError(403, "forbidden", "not yours")
    assert (err.status, err.code, err.message, str(err)) == (403, "forbidden", "not yours", "not yours")


@pytest.fixture(scope="module")
def facades(published_cortadel: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    return run_script("facade_dump.py", published=published_cortadel), run_script("facade_dump.py")


def test_every_published_name_is_exported(facades: tuple[dict[str, Any], dict[str, Any]]) -> None:
    published, ours = facades
    assert len(published) >= 18
    assert sorted(set(published) - set(ours)) == []


def test_option_and_result_fields_match_in_order_and_default(facades: tuple[dict[str, Any], dict[str, Any]]) -> None:
    published, ours = facades
    dataclasses = [name for name, d in published.items() if d["kind"] == "dataclass"]
    assert len(dataclasses) == 14
    for name in dataclasses:
        theirs, mine = published[name]["fields"], ours[name]["fields"]
        assert mine[: len(theirs)] == theirs, name
        assert all(default != REQUIRED for _, default in mine[len(theirs):]), f"{name}: extra fields need defaults"


def test_values_match(facades: tuple[dict[str, Any], dict[str, Any]]) -> None:
    published, ours = facades
    assert ours["DEFAULT_LIST_SIZE"] == published["DEFAULT_LIST_SIZE"] == {"kind": "value", "repr": "20"}


def test_methods_accept_the_same_calls(facades: tuple[dict[str, Any], dict[str, Any]]) -> None:
    published, ours = facades
    classes = [name for name, d in published.items() if d["kind"] == "class"]
    assert sorted(classes) == ["CortadelClient", "CortadelError", "SyncCortadelClient"]
    for cls in classes:
        assert ours[cls]["bases"][-2:] == published[cls]["bases"][-2:]
        for method, theirs in published[cls]["methods"].items():
            mine = ours[cls]["methods"].get(method)
            assert mine is not None, f"{cls}.{method} missing"
            assert mine["async"] == theirs["async"], f"{cls}.{method}"
            _assert_accepts(f"{cls}.{method}", theirs["params"], mine["params"])


def _assert_accepts(where: str, theirs: list[list[str]], mine: list[list[str]]) -> None:
    """Every call valid against ``theirs`` is valid against ``mine`` with the same meaning."""
    assert [p[:2] for p in mine[: len(theirs)]] == [p[:2] for p in theirs], where
    for (name, _, their_default), (_, _, my_default) in zip(theirs, mine):
        assert their_default in (REQUIRED, my_default), f"{where}({name}): {their_default} != {my_default}"
    assert all(p[1] == "KEYWORD_ONLY" and p[2] != REQUIRED for p in mine[len(theirs):]), f"{where}: new params"
