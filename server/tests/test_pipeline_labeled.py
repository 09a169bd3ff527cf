"""The labeled conversation set (the development part), run through the rules extractor and decide().

Each conversation starts from its own `known` facts; an in-memory list of current facts stands in
for storage and receives each decision in order, the way the writer applies them, each offered to
decide() with its similarity from the default (bundled) embedder. Every expected
fact, event, target, memory type, valid time and turn uuid must come out exactly.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cortadel_server.config import Settings
from cortadel_server.pipeline.labeled import replay, score
from cortadel_server.pipeline.model import Turn
from cortadel_server.pipeline.rules import RulesExtractor
from cortadel_server.providers import build_embedder

DATA = json.loads((Path(__file__).parent / "data" / "pipeline_labeled.json").read_text())
SAID_AT = datetime.fromisoformat(DATA["said_at"])
EXTRACTOR = RulesExtractor()
EMBEDDER = build_embedder(Settings.from_env({}))
CASES = DATA["conversations"]


def run(case: dict[str, Any]) -> list[dict[str, Any]]:
    return replay(case, EXTRACTOR, SAID_AT, EMBEDDER)


def comparable(produced: dict[str, Any], expected: dict[str, Any]) -> dict[str, Any]:
    """The produced fact reduced to the keys the label states (targets default to none)."""
    keys = {"event", "memory", "targets", *expected}
    return {k: produced[k] for k in keys}


def expected_of(label: dict[str, Any]) -> dict[str, Any]:
    return {"targets": [], **label}


def test_the_set_is_large_and_covers_every_verb() -> None:
    assert len(CASES) >= 80
    events = {e["event"] for case in CASES for e in case["expect"]}
    assert events == {"ADD", "SKIP_DUPLICATE", "TOUCH", "SUPERSEDE", "INVALIDATE", "RESOLVE", "DELETE_ENTITY"}
    assert sum(1 for case in CASES if not case["expect"]) >= 8  # conversations that must yield nothing


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_conversation(case: dict[str, Any]) -> None:
    produced = run(case)
    labels = [expected_of(e) for e in case["expect"]]
    assert [comparable(p, e) for p, e in zip(produced, labels, strict=False)] == labels[: len(produced)]
    assert len(produced) == len(labels), [p["memory"] for p in produced]


def test_precision_recall_and_event_accuracy_are_perfect(capsys: pytest.CaptureFixture[str]) -> None:
    result = score((run(case), case["expect"]) for case in CASES)
    precision, recall, accuracy = result.precision, result.recall, result.event_accuracy
    with capsys.disabled():
        print(f"\nlabeled set: {len(CASES)} conversations, {result.expected} facts; "
              f"precision {precision:.2f} recall {recall:.2f} event accuracy {accuracy:.2f}")
    assert (precision, recall, accuracy) == (1.0, 1.0, 1.0)


def test_valid_time_follows_the_message_time_when_no_expression_is_given() -> None:
    later = SAID_AT + timedelta(days=3)
    [candidate] = EXTRACTOR.extract([Turn("user", "I live in Lisbon.", None, later)])
    assert candidate.valid_at == later and candidate.said_at == later


def test_score_matches_by_text_and_checks_the_event_of_each_match() -> None:
    expected = [{"memory": "User lives in Paris.", "event": "SUPERSEDE"}, {"memory": "User likes tea.", "event": "ADD"}]
    produced = [{"memory": "User lives in Paris.", "event": "ADD"}, {"memory": "User said hi.", "event": "ADD"}]
    result = score([(produced, expected), ([], [])])
    assert (result.conversations, result.produced, result.expected, result.matched, result.events_right) == (2, 2, 2, 1, 0)
    assert (result.precision, result.recall, result.event_accuracy) == (0.5, 0.5, 0.0)
    assert (score([]).precision, score([]).recall, score([]).event_accuracy) == (1.0, 1.0, 1.0)
