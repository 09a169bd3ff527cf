"""The server's import graph: data flows one way, and no package imports itself in a circle.

Every `import` counts, also those inside functions (a deferred import hides a cycle, it does not
remove it); only imports under `if TYPE_CHECKING:` are left out, as they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "cortadel_server"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(node)
        for branch in ast.walk(tree)
        if isinstance(branch, ast.If) and "TYPE_CHECKING" in ast.unparse(branch.test)
        for stmt in branch.body
        for node in ast.walk(stmt)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in found if name.startswith("cortadel_server")}


def graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for p in ROOT.rglob("*.py")}
    return {name: {i for i in imports_of(path) if i in modules and i != name} for name, path in modules.items()}


GRAPH = graph()


def package_of(module: str) -> str:
    return module.rsplit(".", 1)[0]


def test_the_graph_was_read() -> None:
    assert "cortadel_server.language.timeexpr" in GRAPH["cortadel_server.retrieval.arms"]
    assert "cortadel_server.pipeline.extract" in GRAPH["cortadel_server.pipeline.rules"]


def test_retrieval_never_imports_the_pipeline() -> None:
    arrows = sorted((m, i) for m, deps in GRAPH.items() if m.startswith("cortadel_server.retrieval") for i in deps
                    if i.startswith("cortadel_server.pipeline"))
    assert arrows == []


@pytest.mark.parametrize("package", sorted({package_of(m) for m in GRAPH if m.count(".") >= 2}))
def test_no_cycle_inside_a_package(package: str) -> None:
    # The package's own __init__ only re-exports its modules; it is not part of their graph.
    members = {m for m in GRAPH if package_of(m) == package}
    edges = {m: GRAPH[m] & members for m in members}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        for nxt in sorted(edges[node]):
            if nxt in path:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif len(path) < len(members):
                visit(nxt, [*path, nxt])

    for start in sorted(members):
        visit(start, [start])
    assert cycles == []
