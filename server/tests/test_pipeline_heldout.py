"""The held-out conversations: written before the rules were tuned, frozen, and only measured.

`pipeline_heldout.json` must never change (the checksum below pins it) and no rule may be tuned on
it; `pipeline_labeled.json` is the development part. The rules extractor must reach the issue's bar
on it: precision, recall and event accuracy each at least 0.90.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path

import pytest

from cortadel_server.config import Settings
from cortadel_server.pipeline.labeled import replay, score
from cortadel_server.pipeline.rules import RulesExtractor
from cortadel_server.providers import build_embedder

HELDOUT = Path(__file__).parent / "data" / "pipeline_heldout.json"
FROZEN_SHA256 = "d6fc00a77b3304b9f397ad4c9919ef22fff5263aa9ecf5e78593ef53f4dc0d54"
CASES = json.loads(HELDOUT.read_text())["conversations"]


def test_the_heldout_file_is_frozen() -> None:
    assert hashlib.sha256(HELDOUT.read_bytes()).hexdigest() == FROZEN_SHA256


def test_the_heldout_part_is_large_and_covers_every_verb() -> None:
    assert len(CASES) >= 120
    events = {e["event"] for case in CASES for e in case["expect"]}
    assert events == {"ADD", "SKIP_DUPLICATE", "TOUCH", "SUPERSEDE", "INVALIDATE", "RESOLVE", "DELETE_ENTITY"}
    assert sum(1 for case in CASES if not case["expect"]) >= 8


def test_the_rules_extractor_reaches_the_bar_on_the_heldout_part(capsys: pytest.CaptureFixture[str]) -> None:
    said_at = datetime.fromisoformat(json.loads(HELDOUT.read_text())["said_at"])
    extractor, embedder = RulesExtractor(), build_embedder(Settings.from_env({}))
    result = score((replay(case, extractor, said_at, embedder), case["expect"]) for case in CASES)
    with capsys.disabled():
        print(f"\nheld-out part: {len(CASES)} conversations, {result.expected} facts; precision {result.precision:.3f} "
              f"recall {result.recall:.3f} event accuracy {result.event_accuracy:.3f}")
    assert result.expected == 174
    assert result.precision >= 0.90 and result.recall >= 0.90 and result.event_accuracy >= 0.90
