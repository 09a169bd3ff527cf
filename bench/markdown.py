"""Markdown output shared by the reports: tables, and a generated section inside a hand-written doc."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from bench.provenance import busy_note


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured table; floats print with three decimals."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:.3f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def replace_section(doc: Path, name: str, body: str, *, new_doc_intro: str) -> None:
    """Put ``body`` between ``<!-- bench:NAME:start -->`` and ``<!-- bench:NAME:end -->`` in ``doc``.

    The rest of the doc is left as written. A doc without the markers gets the section appended;
    a missing doc is created from ``new_doc_intro`` plus the section.
    """
    start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
    section = f"{start}\n{body.strip()}\n{end}"
    text = doc.read_text() if doc.exists() else new_doc_intro.rstrip() + "\n"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text)
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)


def replace_run_section(doc: Path, name: str, heading: str, measured: str, load: Sequence[float], results: str) -> None:
    """``replace_section`` with one run's section of the performance doc: its heading, how and when
    it was measured, the machine's load around it (``busy_note``) and its results."""
    replace_section(doc, name, "\n\n".join([heading, measured, busy_note(*load), results]), new_doc_intro="# Performance\n")
