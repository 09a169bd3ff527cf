"""docs/retrieval.md describes the recipes the code runs: its table is compared with RECIPES."""

from __future__ import annotations

import re
from pathlib import Path

from cortadel_server.retrieval.search import HYBRID, RECIPES, Fusion, SearchConfig

DOC = Path(__file__).resolve().parents[2] / "docs" / "retrieval.md"


def describe(config: SearchConfig) -> tuple[str, str]:
    """(arms, fusion) as the docs table writes them."""
    if len(config.arms) == 1:
        return config.arms[0].arm.value, "—"
    parts = [", ".join(f"{a.arm.value} {a.weight:.1f}" if a.weight == round(a.weight, 1) else f"{a.arm.value} {a.weight:g}"
                       for a in config.arms)]
    if config.question_weight != 1.0:
        parts.append(f"questions weighted {config.question_weight:g}")
    if config.speaker_weight != 1.0:
        parts.append(f"the asked-about speaker weighted {config.speaker_weight:g}")
    if config.neighbours is not None:
        kind = "replies to questions" if config.neighbours.replies_only else "neighbour context"
        parts.append(f"{kind} (depth {config.neighbours.depth}, share {config.neighbours.share:g})")
    if config.session_decay is not None:
        parts.append(f"session spread {config.session_decay:g}")
    return "; ".join(parts), "score-aware" if config.fusion is Fusion.SCORE else "weighted RRF"


def documented() -> dict[str, tuple[str, str]]:
    section = DOC.read_text(encoding="utf-8").split("## Recipes", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z]+)`[^|]* \| (.+?) \| (.+?) \|$", section, re.MULTILINE)
    return {mode: (arms, fusion) for mode, arms, fusion in rows if mode != "mode"}


def test_the_recipe_table_matches_the_code() -> None:
    assert documented() == {mode: describe(config) for mode, config in RECIPES.items()}


def test_the_default_and_the_arm_settings_are_the_documented_ones() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "| `hybrid` (default) |" in text and RECIPES["hybrid"] is HYBRID
    [text_arm] = [a for a in HYBRID.arms if a.arm.value == "text"]
    [session_arm] = [a for a in HYBRID.arms if a.arm.value == "session"]
    assert f"context at {text_arm.context_weight:g}" in text
    assert f"expands\nthe {session_arm.sessions} best sessions" in text
