"""decide.needs_full_text and CurrentShapes: a batch's new facts decided on their vector neighbours
alone, when the full-text ones cannot change the decision, are decided as with them."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import numpy as np

from cortadel_server.config import Settings
from cortadel_server.pipeline.decide import CurrentShapes, decide, needs_full_text, shape
from cortadel_server.pipeline.model import Candidate, Event, Intent, Neighbour
from cortadel_server.providers import build_embedder

NOW = datetime(2026, 6, 15, tzinfo=UTC)

#: statements every rule of decide() acts on in some pair, and many it leaves alone
TEXTS = [
    "User lives in Berlin.", "User lives in Paris now.", "User moved to Lisbon last year.", "User is based in Porto.",
    "User's sister lives in Porto.", "User's brother lives in Porto.", "User's sister works as a nurse.",
    "User's sister works as a doctor now.", "User works at Google.", "User joined Stripe.", "User works as a teacher.",
    "User likes coffee.", "User really likes coffee.", "User does not like coffee.", "User hates coffee.",
    "User loves coffee.", "User likes tea.", "User likes green tea too.", "User also likes tea.",
    "User drives a BMW.", "User drives a Tesla now.", "User drinks coffee every morning.", "User stopped drinking coffee.",
    "User goes running every Monday.", "User goes running every Tuesday.", "User goes running every Monday at 7:00.",
    "User is 34.", "User is 35 years old.", "User has 2 kids.", "User has 3 kids.", "User's name is Alice.",
    "User's name is Alicia.", "User is married to Sam.", "User is married to Alex.", "User's favourite colour is blue.",
    "User's favourite colour is green.", "User is from Lyon.", "User lives in Lyon.", "User's dog is called Rex.",
    "User has a dog named Rex.", "User is employed by Google.", "Jack's note 3 about the harbour.",
    "Jack's note 4 about the harbour.", "The meeting with Ana is on Friday at 10:00.",
    "The meeting with Ana is on Friday at 11:00.", "User's flight is on 12 July.", "User's flight is on 14 July.",
    "User uses VS Code.", "User uses Vim these days.", "User plays golf.", "User also plays tennis now.",
    "User is vegetarian.", "User visited Rome.", "User visited Paris.", "User used to live in Berlin.",
    "Priya's cousin Tom moved to Osaka in 2019 and works as a baker.", "Priya's cousin Tom moved to Osaka in 2021.",
    "Every Monday Tom cooks ramen with Ana, their sister.", "Every Monday Tom cooks pho with Ana, their sister.",
    "Kenji prefers Rust over Kafka for work projects.", "Kenji prefers Rust over Redis for work projects.",
    "Lea is allergic to peanuts and avoids tacos at restaurants.", "Lea is allergic to pollen.",
    # the same stems in another order, and one more: alike by their stems alone
    "Lea avoids tacos at restaurants and is allergic to peanuts.", "Lea is allergic to peanuts and avoids tacos at all restaurants.",
    "User likes coffee.", "user LIKES coffee!!", "User currently lives in Paris.",
]

EMBEDDER = build_embedder(Settings.from_env({}))


def statement(text: str) -> Candidate:
    return Candidate(text, Intent.REMEMBER, NOW, NOW)


def test_a_fact_any_rule_acts_on_is_borne_on() -> None:
    """Every pair: when decide() gives the new text anything but an ADD against the old one alone,
    scored 0 (no likeness from the embedder), the old one's shape bears on the new one."""
    acted_on = 0
    for old, new in itertools.product(TEXTS, TEXTS):
        decision = decide(statement(new), [Neighbour("old", old, 0.0)])
        current = CurrentShapes()
        current.add("old", old)
        if decision.event is not Event.ADD:
            acted_on += 1
            assert current.bears_on(shape(new)), (old, new, decision)
    assert acted_on >= 150  # the pairs above exercise the rules (duplicates, slots, negations, values)


def test_the_vector_neighbours_alone_decide_as_with_every_current_fact() -> None:
    """Each text a new statement against all the others, scored by the embedder: when the full-text
    neighbours are not needed, decide() on the 8 nearest gives what it gives on those 8 with every
    other current fact scored 0, as a full-text hit the vector arm did not find is (event, targets,
    reason, and the doubt recorded with the fact)."""
    vectors = EMBEDDER.embed(TEXTS)
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    alone = left = 0
    events = set()
    for at, text in enumerate(TEXTS):
        others = [(f"m{i:02d}", other, max(float(vectors[i] @ vectors[at]), 0.0)) for i, other in enumerate(TEXTS) if other != text]
        current = CurrentShapes()
        for memory_id, other, _ in others:
            current.add(memory_id, other)
        if needs_full_text(statement(text), current):
            left += 1
            continue
        alone += 1
        nearest = sorted(others, key=lambda o: -o[2])[:8]
        by_vector = decide(statement(text), [Neighbour(*o) for o in nearest])
        everything = decide(statement(text), [Neighbour(i, other, score if (i, other, score) in nearest else 0.0) for i, other, score in others])
        assert (by_vector, by_vector.uncertain) == (everything, everything.uncertain), text
        events.add((by_vector.event, bool(by_vector.uncertain)))
    # Some decided so, some left to the lookups; among the first, duplicates in other words and doubts.
    assert alone >= 10 and left >= 30, (alone, left)
    assert {(Event.ADD, False), (Event.ADD, True), (Event.SKIP_DUPLICATE, False)} <= events, events


def test_what_is_left_to_the_full_text_lookups() -> None:
    current = CurrentShapes()
    current.add("berlin", "User lives in Berlin.")
    current.add("tea", "User likes tea.")
    # Another value of a slot a current fact fills, and a negation.
    assert needs_full_text(statement("User moved to Lisbon."), current)
    assert needs_full_text(statement("User does not ski."), current)
    # Not a plain statement: a retraction, a correction naming what it replaces.
    assert needs_full_text(Candidate("Forget it.", Intent.RETRACT, NOW, NOW, target="tea"), current)
    assert needs_full_text(Candidate("User likes cocoa, not tea.", Intent.REMEMBER, NOW, NOW, target="tea"), current)
    assert not needs_full_text(statement("User plays chess."), current)
    # Once Berlin is no longer current, a new residence is a plain statement.
    current.remove("berlin")
    assert not needs_full_text(statement("User moved to Lisbon."), current)
    assert len(current) == 1
    # A fact held again with another text (an edit) is held with that text only.
    current.add("tea", "User lives in Oslo.")
    assert (current.holds("tea", "User lives in Oslo."), current.holds("tea", "User likes tea.")) == (True, False)
    assert needs_full_text(statement("User moved to Lisbon."), current)
    assert not needs_full_text(statement("User likes tea."), current)
    assert current.ids() == ["tea"]
