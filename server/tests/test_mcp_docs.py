"""docs/mcp.md stays true: its tool tables list exactly the published arguments, its configs parse."""

from __future__ import annotations

import json
import re
from pathlib import Path

from cortadel_server.mcp.tools import TOOLS

DOC = (Path(__file__).resolve().parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")


def documented_arguments() -> dict[str, list[str]]:
    tools = DOC.split("## Tools", 1)[1]
    sections = re.split(r"^### `(\w+)`$", tools, flags=re.MULTILINE)[1:]
    found = {}
    for name, body in zip(sections[::2], sections[1::2], strict=True):
        table = body.split("| argument |", 1)[1].split("\n\n", 1)[0]
        found[name] = re.findall(r"^\| `(\w+)` \|", table, flags=re.MULTILINE)
    return found


def test_every_tool_and_argument_is_documented_and_nothing_else() -> None:
    published = {name: list(spec.arguments.input_schema()["properties"]) for name, spec in TOOLS.items()}
    assert documented_arguments() == published


def test_every_event_the_tools_describe_is_documented() -> None:
    events = re.findall(r"^- (\w+):", TOOLS["add_memories"].description, flags=re.MULTILINE)
    assert events == re.findall(r"^\| `([A-Z_]+)` \|", DOC, flags=re.MULTILINE)


def test_every_json_example_parses() -> None:
    blocks = re.findall(r"```json\n(.*?)```", DOC, flags=re.DOTALL)
    configs = [json.loads(block) for block in blocks]
    assert len(configs) == 6
    servers = [c["mcpServers"]["cortadel"] for c in configs if "mcpServers" in c]
    assert {s.get("url", "") for s in servers} >= {"http://127.0.0.1:3001/mcp/cursor/alice"}
    stdio = [s for s in servers if s.get("command", "").endswith("/.venv/bin/cortadel")]
    assert all(s["args"][:3] == ["mcp", "--user", "alice"] for s in stdio) and len(stdio) == 2
