"""The fenced code blocks of a Markdown page, what each is for, and how shown output is compared.

A block is runnable by its language (``bash``/``sh``/``console``, ``python``, ``ts``/``js``). An
HTML comment on the line before its fence, ``<!-- docs-test: skip (why) -->``, keeps it from running;
its reason is reported. A block of another language (``text``, ``json`` or none) that follows a
runnable block with only blank lines between is that block's shown output. A shell block whose
first line starts with ``$ `` is a transcript: each ``$`` command (with its ``\\`` continuation
lines) is followed by its output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

SHELL = frozenset({"bash", "sh", "console", "shell"})
PYTHON = frozenset({"python", "py"})
TYPESCRIPT = frozenset({"ts", "typescript", "js", "javascript"})
RUNNABLE = SHELL | PYTHON | TYPESCRIPT

_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)\s*$")
_SKIP = re.compile(r"^\s*<!-- docs-test: skip \((?P<why>[^)]+)\) -->\s*$")


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    skip: str | None = None  # why it does not run here
    output: str | None = None  # the shown output right after it
    output_lang: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line}"


@dataclass
class Step:
    """One command of a shell block, with the output shown for it (None: none shown)."""

    command: str
    output: str | None = None


@dataclass
class Transcript:
    steps: list[Step] = field(default_factory=list)
    is_transcript: bool = False  # ``$`` lines: every output shown is the command's stdout and stderr


def blocks(page: Path) -> list[Block]:
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    closed_at = -10  # line index where the previous block closed
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent = len(opening["indent"])
        start = i
        i += 1
        body: list[str] = []
        while not (lines[i].strip() == "```" and len(lines[i]) - len(lines[i].lstrip()) <= indent):
            body.append(lines[i][indent:])
            i += 1
        text = "\n".join(body) + "\n"
        lang = opening["lang"].lower()
        previous = lines[start - 1] if start > 0 else ""
        skip = _SKIP.match(previous)
        follows = found and all(not line.strip() for line in lines[closed_at + 1 : start])
        if lang not in RUNNABLE and follows and found[-1].lang in RUNNABLE and found[-1].output is None:
            found[-1].output, found[-1].output_lang = text, lang
        else:
            found.append(Block(page, start + 1, lang, text, skip["why"] if skip else None))
        closed_at = i
        i += 1
    return found


def transcript(block: Block) -> Transcript:
    """A shell block as steps: a ``$`` transcript split per command, else one step (output shown after it)."""
    lines = block.text.splitlines()
    if not lines or not lines[0].startswith("$ "):
        return Transcript([Step(block.text, block.output)])
    steps: list[Step] = []
    continued = False
    for line in lines:
        if line.startswith("$ ") or continued:
            command = line[2:] if line.startswith("$ ") and not continued else line
            if continued:
                steps[-1].command += "\n" + command
            else:
                steps.append(Step(command, ""))
            continued = line.endswith("\\")
        elif line.strip():
            steps[-1].output = (steps[-1].output or "") + line + "\n"
    return Transcript(steps, is_transcript=True)


# -- comparing shown output with real output -------------------------------------------------------

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# An id shortened in the docs: "6f0c…", "30d7f991-…".
_SHORT_ID = re.compile(r"\b[0-9a-f]{4,8}(?:-[0-9a-f]{0,4})*…")
_ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?)?")
_UNIX_TIME = re.compile(r"(?<![\d.])1\d{9}(?:\.\d+)?(?![\d.])")
_KEY = re.compile(r"ck_[A-Za-z0-9_-]+\.[0-9a-f…]+")


def mask(text: str) -> str:
    """Ids, keys and times vary from run to run; they compare as placeholders."""
    for pattern, placeholder in ((_UUID, "<id>"), (_KEY, "<key>"), (_SHORT_ID, "<id>"),
                                 (_ISO_TIME, "<time>"), (_UNIX_TIME, "<time>")):
        text = pattern.sub(placeholder, text)
    return text


def matches(shown: str, real: str) -> bool:
    """Every shown line matches its real line; "…" in a shown line stands for any text."""
    shown_lines = [line.rstrip() for line in mask(shown).splitlines() if line.strip()]
    real_lines = [line.rstrip() for line in mask(real).splitlines() if line.strip()]
    if len(shown_lines) != len(real_lines):
        return False
    for want, got in zip(shown_lines, real_lines, strict=True):
        pattern = ".*".join(re.escape(part) for part in want.split("…"))
        if not re.fullmatch(pattern, got):
            return False
    return True
