"""Entity mentions, their kinds, and when two names are one entity."""

from __future__ import annotations

import random

import pytest

from cortadel_server.language.entities import (
    AliasIndex,
    EntityKind,
    EntityMention,
    canonical_entity,
    entity_key,
    find_entities,
    link_entity,
    mentions_entity,
    same_entity,
)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("User moved to NYC with Bob.", [("NYC", "place", "new york city"), ("Bob", "person", "bob")]),
        ("Bob is User's manager.", [("Bob", "person", "bob")]),
        ("User works at Google in New York City.", [("Google", "org", "google"), ("New York City", "place", "new york city")]),
        ("User is working on the Atlas project.", [("Atlas", "project", "atlas")]),
        ("User's wife Maria works for Deutsche Bank.", [("Maria", "person", "maria"), ("Deutsche Bank", "org", "deutsche bank")]),
        ("User visited the Eiffel Tower in Paris.", [("Eiffel Tower", "thing", "eiffel tower"), ("Paris", "place", "paris")]),
        ("User's dentist is Dr. Okafor.", [("Dr. Okafor", "person", "dr okafor")]),
        ("User only ships to production on Tuesdays in May.", []),
        ("Remember the Alamo Labs offer.", [("Alamo Labs", "org", "alamo labs")]),
    ],
)
def test_mentions_have_a_kind_and_a_folded_key(text: str, found: list[tuple[str, str, str]]) -> None:
    assert [(m.name, m.kind.value, m.key) for m in find_entities(text)] == found


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("NYC", "New York City", True),
        ("SF", "san francisco", True),
        ("the Netherlands", "Holland", True),
        ("IBM", "International Business Machines", True),
        ("U.S.", "United States", True),
        ("New York.", "new york", True),
        ("NY", "New York City", False),
        ("Bob", "Bobby", False),
        ("AB", "Anna Berg", False),  # two letters are too weak for an initialism
        ("ibm", "International Business Machines", False),  # an initialism is written in capitals
    ],
)
def test_same_entity(a: str, b: str, same: bool) -> None:
    assert same_entity(a, b) is same
    assert same_entity(b, a) is same


def test_link_and_mentions() -> None:
    known = [EntityMention("New York City", EntityKind.PLACE, entity_key("New York City"))]
    assert link_entity(EntityMention("NYC", EntityKind.PLACE, "new york city"), known) == known[0]
    assert link_entity(EntityMention("NYC", EntityKind.PERSON, "new york city"), known) is None
    assert mentions_entity("User plays tennis with Bob.", "bob")
    assert mentions_entity("User flew to NYC.", "New York City")
    assert not mentions_entity("User likes Bobby's bakery.", "Bob")


def test_canonical_entity_reuses_what_the_user_already_has() -> None:
    known = {"ibm": "ibm", "new york city": "new york city", "nyc": "new york city"}
    assert canonical_entity("International Business Machines", known) == "ibm"
    assert canonical_entity("NYC", known) == "new york city"
    assert canonical_entity("New York City", known) == "new york city"
    assert canonical_entity("Lisbon", known) == "lisbon"


def test_canonical_entity_finds_the_first_alias_any_rule_matches() -> None:
    """No alias is the name itself: the rules of ``same_entity`` pick the alias, and of two that
    match, the user's first in order (as ``Storage.entity_names`` reads them)."""
    known = {"lisbon": "lisbon", "international business machines": "ibm", "the ibm": "ibm-2", "i.b.m": "ibm-3"}
    assert canonical_entity("I.B.M.", known) == "ibm"  # capitals, the initialism of the first alias's words
    known = {"acme": "acme", "nato": "nato", "north atlantic treaty organization": "nato-2"}
    assert canonical_entity("North Atlantic Treaty Org", known) == "nato"  # words, whose initialism the alias is in capitals
    assert canonical_entity("The Acme!", known) == "acme"  # the same folded key
    assert canonical_entity("Lyon", known) == "lyon"  # none: its own key


#: stored aliases (lower case) whose keys, initialisms and capitals collide in every way ``same_entity`` allows
_ALIASES = ["international business machines", "the ibm", "i.b.m", "ibm", "new york city", "nyc", "the new york city",
            "acme", "the acme", "north atlantic treaty organization", "nato", "big old bank", "bob", "émile", "zoë"]
#: names looked up: some are aliases, most match one only by a rule
_NAMES = ["IBM", "I.B.M.", "The IBM", "International Business Machines", "NYC", "New York City", "The Acme!", "ACME",
          "NATO", "North Atlantic Treaty Org", "BOB", "Big Old Bank", "Émile", "Zoë", "Lyon"]
#: canonical names in an order where case and accents count: "Bob" < "alice" < "zoë" < "Émile"
_CANONICALS = ["Bob", "alice", "ibm", "nato", "zoë", "Émile", "new york city", "acme", "b", "Zed"]


def _rows(rng: random.Random) -> list[tuple[str, str]]:
    """Stored (alias, canonical) pairs in ``Storage.entity_aliases`` order; an alias may belong to several entities."""
    pairs = {(rng.choice(_ALIASES), rng.choice(_CANONICALS)) for _ in range(rng.randint(0, 8))}
    return sorted(pairs, key=lambda pair: (pair[1], pair[0]))


def test_alias_index_answers_what_canonical_entity_answers_over_the_aliases_read_again() -> None:
    """Seeded cases where the order decides: a name two aliases match, an alias of several
    entities, and a fact's own earlier mentions (``after``), which come behind the stored aliases.
    Rows added in place give the answers of an index built from every row, read again in order."""
    rng = random.Random(7)
    decided_by_order = 0
    for _ in range(3_000):
        rows = _rows(rng)
        index = AliasIndex(rows)
        after = {rng.choice(_ALIASES): rng.choice(_CANONICALS) for _ in range(rng.randint(0, 2))}
        known = dict(rows)
        for alias, canonical in after.items():
            known.setdefault(alias, canonical)  # what the enrichment worker's copy held
        for name in rng.sample(_NAMES, 5):
            expected = canonical_entity(name, known)
            assert index.canonical(name, after) == expected, (rows, after, name)
            decided_by_order += expected != canonical_entity(name, dict(reversed(known.items())))
        added = _rows(rng)
        for alias, canonical in added:
            index.add(alias, canonical)
        read_again = sorted(set(rows) | set(added), key=lambda pair: (pair[1], pair[0]))
        assert index.names == dict(read_again)
        for name in rng.sample(_NAMES, 5):
            assert index.canonical(name) == canonical_entity(name, dict(read_again)), (read_again, name)
    assert decided_by_order > 200, decided_by_order  # the cases test the order, not only the rules (301)
