"""Read a LoCoMo-format file: conversations of dated sessions, and questions with evidence turn ids.

    conversations = load(Path("/work/shared/data/locomo-dev.json"))
    conversations[0].turns[0].text      # "Caroline: Hey Mel! Good to see you! How have you been?"
    conversations[0].questions[0].gold  # frozenset({"D1:3"})

A turn's stored text is "Speaker: text"; a turn that shares a photo gets " [image: <blip
caption>]" appended, because the photo is part of what was said and questions ask about it.
A session's date ("1:56 pm on 8 May, 2023") becomes every turn's ``said_at`` (ISO 8601, UTC; the
data has no time zone), which the harness sends as the turn's ``timestamp`` so that relative dates
("yesterday") resolve against the day the conversation happened.
Evidence strings are split on ';' and whitespace and only ids of the form D<session>:<turn> that
name a turn of the conversation are kept; questions left without evidence are skipped.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bench.errors import DatasetError

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA_ID = re.compile(r"^D(\d+):(\d+)$")
_SESSION_KEY = re.compile(r"^session_(\d+)$")


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int
    speaker: str
    text: str
    session_date: str
    said_at: str | None

    @property
    def session_id(self) -> str:
        return f"S{self.session}"


@dataclass(frozen=True)
class Question:
    question: str
    category: int
    gold: frozenset[str]

    @property
    def gold_sessions(self) -> frozenset[str]:
        return frozenset(session_of(dia_id) for dia_id in self.gold)


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[tuple[Turn, ...], ...]
    questions: tuple[Question, ...]
    skipped_questions: int

    @property
    def turns(self) -> list[Turn]:
        return [turn for session in self.sessions for turn in session]


def session_of(dia_id: str) -> str:
    """"D12:4" -> "S12"."""
    match = _DIA_ID.match(dia_id)
    if not match:
        raise ValueError(f"not a dia_id: {dia_id!r}")
    return f"S{match.group(1)}"


def parse_session_date(raw: str) -> str | None:
    """"1:56 pm on 8 May, 2023" -> "2023-05-08T13:56:00Z"; None when the text has another shape."""
    try:
        return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").strftime("%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None


def parse_evidence(raw: list[str], known: set[str]) -> frozenset[str]:
    ids = (part for entry in raw for part in re.split(r"[;\s]+", str(entry)) if part)
    return frozenset(i for i in ids if _DIA_ID.match(i) and i in known)


def _turn_text(raw: dict[str, str]) -> str:
    text = f"{raw['speaker']}: {raw['text']}"
    if raw.get("blip_caption"):
        text += f" [image: {raw['blip_caption']}]"
    return text


def _conversation(sample: dict) -> Conversation:
    conv = sample["conversation"]
    numbers = sorted(int(m.group(1)) for key in conv if (m := _SESSION_KEY.match(key)))
    dates = {n: conv.get(f"session_{n}_date_time", "") for n in numbers}
    sessions = tuple(
        tuple(
            Turn(raw["dia_id"], n, raw["speaker"], _turn_text(raw), date, parse_session_date(date))
            for raw in conv[f"session_{n}"]
        )
        for n in numbers
        for date in (dates[n],)
    )
    known = {turn.dia_id for session in sessions for turn in session}
    questions = []
    skipped = 0
    for qa in sample["qa"]:
        gold = parse_evidence(qa.get("evidence", []), known)
        if gold:
            questions.append(Question(qa["question"], int(qa["category"]), gold))
        else:
            skipped += 1
    return Conversation(sample["sample_id"], (conv["speaker_a"], conv["speaker_b"]), sessions, tuple(questions), skipped)


def load(path: Path) -> list[Conversation]:
    try:
        samples = json.loads(path.read_text())
        return [_conversation(sample) for sample in samples]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DatasetError(f"{path}: not a readable LoCoMo-format file ({exc})") from exc


def dataset_meta(path: Path, conversations: list[Conversation]) -> dict[str, object]:
    """What a report says of the data it ran on: the file, its hash, and how much of it was used."""
    return {
        "data": path.name,
        "data_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "conversations": len(conversations),
        "questions": sum(len(c.questions) for c in conversations),
    }
