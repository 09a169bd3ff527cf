"""The precision floor of reconciliation on the labeled sets (tests/data/reconcile_labeled.json and
the held-out reconcile_heldout.json), with the default embedder: what a run applies without review
must be right at least 9 times in 10."""

from __future__ import annotations

import pytest

from cortadel_server.config import Settings
from cortadel_server.curation.reconcile_labeled import HELDOUT_PATH, ReconcileScore, load, score
from cortadel_server.providers import build_embedder

AUTO_APPROVE = Settings().reconcile_auto_approve
#: the floors (the set scores higher today; see docs/curation.md for the figures)
AUTO_PRECISION = 0.9
PRECISION = 0.85
RECALL = 0.8


@pytest.fixture(scope="module")
def scores() -> dict[str, ReconcileScore]:
    return score(load(), build_embedder(Settings()).embed, AUTO_APPROVE)


@pytest.mark.parametrize("kind", ["entities", "roles", "facts"])
def test_precision_and_recall_hold_their_floor(scores: dict[str, ReconcileScore], kind: str) -> None:
    result = scores[kind]
    assert result.auto_found > 0, "nothing would be applied without review: the floor would hold vacuously"
    assert result.auto_precision >= AUTO_PRECISION, result.wrong
    assert result.precision >= PRECISION, result.wrong
    assert result.recall >= RECALL, result.missed


def test_the_tricky_non_duplicates_are_never_suggested(scores: dict[str, ReconcileScore]) -> None:
    tricky = {"dana lee vs dan lee", "paris texas vs paris", "marian vs marion", "two anas", "co-mentioned",
              "first name two people", "carla vs carl"}
    assert [w for w in scores["entities"].wrong if w[0] in tricky] == []


def test_the_set_has_both_kinds_of_case() -> None:
    cases = load()
    entity_negatives = [c for c in cases["entities"] if not c["same"]]
    fact_negatives = [c for c in cases["facts"] if not c["stale"]]
    assert (len(cases["entities"]), len(entity_negatives), len(cases["facts"]), len(fact_negatives)) == (26, 15, 15, 6)


def test_what_would_be_applied_unreviewed_is_right_on_the_held_out_set_too() -> None:
    held_out = score(load(HELDOUT_PATH), build_embedder(Settings()).embed, AUTO_APPROVE)
    applied = sum(result.auto_found for result in held_out.values())
    right = sum(result.auto_right for result in held_out.values())
    assert applied >= 8 and right / applied >= AUTO_PRECISION, [r.wrong for r in held_out.values()]
