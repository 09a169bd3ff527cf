"""What the tools hand back: a compact text for the model and structured content for programs.

Timestamps in structured content are ISO 8601 strings (UTC), like the REST search results.

Stored text is data, not instructions: in the text a model reads, every memory (and every other
string that came from a caller) is a quoted JSON string literal, so none can forge structure — a
newline in a memory is ``\n`` inside its quotes, not an extra result line or a fake heading.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cortadel_server.api import render
from cortadel_server.pipeline.writer import WriteOutcome
from cortadel_server.retrieval.search import Hit
from cortadel_server.storage.base import MemoryRecord

#: how much of a memory a headline shows when the memory has no gist
HEADLINE_CHARS = 120


#: Line and paragraph separators that some clients break lines at although JSON leaves them bare.
_BREAKS = str.maketrans({"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def quoted(text: str) -> str:
    """``text`` as one quoted line: a JSON string literal, line separators escaped too."""
    return json.dumps(text, ensure_ascii=False).translate(_BREAKS)


@dataclass(frozen=True)
class ToolResult:
    text: str
    data: dict[str, Any]


# -- writes --------------------------------------------------------------------------------------
def outcome_line(item: dict[str, Any]) -> str:
    if item["event"] == "ERROR":
        return f"ERROR: {quoted(item['error'] or '')}"
    return f"{item['event']} {item['id']}: {quoted(item['memory'] or '')}"


def write_outcomes(outcomes: Sequence[WriteOutcome]) -> ToolResult:
    items = [render.ingest_item(o) for o in outcomes]
    return ToolResult("\n".join(outcome_line(i) for i in items), {"results": items})


def conversation_outcomes(outcomes: Sequence[WriteOutcome]) -> ToolResult:
    if not outcomes:
        return ToolResult("No facts worth remembering were found in the conversation.", {"no_facts_extracted": True})
    return write_outcomes(outcomes)


# -- reads ---------------------------------------------------------------------------------------
def headline(m: MemoryRecord) -> str:
    if m.gist:
        return m.gist
    return m.text if len(m.text) <= HEADLINE_CHARS else m.text[: HEADLINE_CHARS - 1].rstrip() + "…"


def memory_data(m: MemoryRecord, score: float | None, detail: str) -> dict[str, Any]:
    if detail == "headline":
        return {"id": m.id, "gist": headline(m), "score": score}
    return {
        "id": m.id,
        "content": m.text,
        "gist": m.gist,
        "score": score,
        "memory_type": m.memory_type,
        "app_name": m.app_name,
        "project": m.project,
        "tags": m.tags,
        "categories": m.categories,
        "state": m.state,
        "is_current": m.is_current,
        "created_at": render.iso(m.created_at),
        "valid_at": render.iso(m.valid_at),
        "invalid_at": render.iso(m.invalid_at),
        "superseded_by": m.superseded_by,
    }


def memory_line(position: int, m: MemoryRecord, score: float | None, detail: str) -> str:
    notes = [] if score is None else [f"score {score:.4f}"]
    if detail == "headline":
        return f"{position}. [{m.id}] {quoted(headline(m))}" + (f" ({notes[0]})" if notes else "")
    notes.append(m.memory_type)
    if m.app_name:
        notes.append(f"app {quoted(m.app_name)}")
    if m.project:
        notes.append(f"project {quoted(m.project)}")
    if m.tags:
        notes.append("tags " + ", ".join(map(quoted, m.tags)))
    if not m.is_current:
        notes.append(m.state)
    notes.append((render.iso(m.created_at) or "")[:10])
    return f"{position}. [{m.id}] {quoted(m.text)} ({'; '.join(notes)})"


def memory_list(
    found: Sequence[tuple[MemoryRecord, float | None]],
    *,
    mode: str,
    detail: str,
    heading: str,
    empty: str,
    extra: dict[str, Any] | None = None,
) -> ToolResult:
    lines = ([heading] + [memory_line(i, m, s, detail) for i, (m, s) in enumerate(found, start=1)]) if found else [empty]
    data = {"mode": mode, "results": [memory_data(m, s, detail) for m, s in found], **(extra or {})}
    return ToolResult("\n".join(lines), data)


def search_results(query: str, hits: Sequence[Hit], detail: str) -> ToolResult:
    n = len(hits)
    return memory_list(
        [(h.memory, h.score) for h in hits],
        mode="search",
        detail=detail,
        heading=f'{n} {"memory" if n == 1 else "memories"} for {quoted(query)}, best first:',
        empty=f"No memories match {quoted(query)}.",
        extra={"query": query, "total": n},
    )


def browse_results(records: Sequence[MemoryRecord], total: int, offset: int, detail: str) -> ToolResult:
    shown = f"{offset + 1}–{offset + len(records)}"
    return memory_list(
        [(m, None) for m in records],
        mode="browse",
        detail=detail,
        heading=f"Memories {shown} of {total}, newest first:",
        empty=f"No memories{' beyond offset ' + str(offset) if offset else ''} ({total} in total).",
        extra={"total": total, "offset": offset},
    )


def lookup_results(records: Sequence[MemoryRecord], missing: Sequence[str], detail: str) -> ToolResult:
    result = memory_list(
        [(m, None) for m in records],
        mode="lookup",
        detail=detail,
        heading=f"{len(records)} of {len(records) + len(missing)} requested memories:",
        empty="None of the requested memories exist.",
        extra={"total": len(records), "missing_ids": list(missing)},
    )
    if not missing:
        return result
    return ToolResult(result.text + "\nNot found: " + ", ".join(map(quoted, missing)), result.data)


# -- skills --------------------------------------------------------------------------------------
_LIST_MARKER = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+")
_STEP_BREAK = re.compile(r"\s*;\s*|(?<=[.!?])\s+|,?\s+\bthen\b\s+|,?\s+\band then\b\s+", re.IGNORECASE)
_HEADER = re.compile(r"^(?P<head>[^:]{1,120}):\s+(?P<body>.+)$", re.DOTALL)


def steps_of(text: str) -> list[str]:
    """Split a procedure into steps: its lines when it is a list, else its clauses.

    "To release: run the tests, then tag the commit; push the tag" →
    ["run the tests", "tag the commit", "push the tag"]
    """
    lines = [_LIST_MARKER.sub("", line).strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1:
        header = _HEADER.match(lines[0])
        if lines[0].endswith(":"):
            lines = lines[1:]
        elif header:
            lines[0] = header["body"]
        return lines
    body = text.strip()
    header = _HEADER.match(body)
    if header:
        body = header["body"]
    parts = [p.strip(" ,.") for p in _STEP_BREAK.split(body)]
    parts = [p for p in parts if p]
    if len(parts) == 1 and header and "," in body:
        parts = [p.strip(" .") for p in re.split(r",\s*(?:and\s+)?", body) if p.strip(" .")]
    return parts


def skills(task: str, hits: Sequence[Hit]) -> ToolResult:
    if not hits:
        return ToolResult(
            f"No procedural memory matches {quoted(task)}. Work it out, and if it worked, store the steps with "
            'add_memories(memory_type="procedural").',
            {"task": task, "skills": []},
        )
    steps = [steps_of(h.memory.text) for h in hits]
    found = [
        {"id": h.memory.id, "content": h.memory.text, "score": h.score, "steps": s}
        for h, s in zip(hits, steps, strict=True)
    ]
    blocks = [f'{len(found)} known {"procedure" if len(found) == 1 else "procedures"} for {quoted(task)}, best first:']
    for i, (hit, hit_steps) in enumerate(zip(hits, steps, strict=True), start=1):
        numbered = "\n".join(f"   {n}. {quoted(step)}" for n, step in enumerate(hit_steps, start=1))
        blocks.append(f"{i}. [{hit.memory.id}] {quoted(hit.memory.text)} (score {hit.score:.4f})\n{numbered}")
    return ToolResult("\n".join(blocks), {"task": task, "skills": found})
