"""Entities of one user that are one thing under several names.

    findings = find_entity_duplicates(profiles, embed)     # Finding(kind="merge_entities") ...
    findings = find_role_aliases(user_facts, profiles)      # Finding(kind="alias") ...

Rules decide what may be the same; the embedder weighs how alike the facts around two names are.
Each rule has a confidence; two names that appear in one fact are two things, whatever the rules say.

    rule                   example                                     confidence
    alias table/initialism "NYC" / "New York City", "IBM" / "International Business Machines"   0.97
    organisation suffix    "Acme" / "Acme Corp"                        0.93
    misspelling            "Jonathon Reyes" / "Jonathan Reyes"         0.85, 0.93 with alike facts
    first name only        "Dana" / "Dana Lee" (one Dana known)        0.80, 0.86 with alike facts
    role                   "User's manager is Dana." + facts about "User's manager"   0.95

Not the same: a place with a region ("Paris, Texas" / "Paris"), names that differ by a short
word ("Dana Lee" / "Dan Lee": a shorter name is a name of its own, not a typo), a first name two
known people share.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from cortadel_server.curation.suggestions import ALIAS, MERGE_ENTITIES, Finding
from cortadel_server.language.entities import ORG_SUFFIX, EntityKind, entity_key, same_entity

#: how alike the facts of two names must be (cosine of their mean embeddings) to raise a guess
ALIKE_FACTS = 0.75
ROLE_CONFIDENCE = 0.95
PERSON, PLACE, ORG, THING = (k.value for k in (EntityKind.PERSON, EntityKind.PLACE, EntityKind.ORG, EntityKind.THING))
#: a misspelt word is at least this long: below it, one letter more or less makes another name
MISSPELLING_MIN_LENGTH = 5

ROLES = ("manager", "boss", "wife", "husband", "partner", "girlfriend", "boyfriend", "mentor", "doctor",
         "dentist", "therapist", "landlord", "roommate", "coach", "teacher", "lawyer", "accountant")
_ROLE = "|".join(ROLES)
_NAME = r"(?P<name>[A-Z][a-zA-Z'-]+(?: [A-Z][a-zA-Z'-]+)*)"
ROLE_FRAMES = (
    re.compile(rf"\bUser's (?P<role>{_ROLE}) (?:is|was) (?:called |named )?{_NAME}"),
    re.compile(rf"\bUser's (?P<role>{_ROLE}),? {_NAME}\b"),
    re.compile(rf"{_NAME} is User's (?P<role>{_ROLE})\b"),
)


@dataclass(frozen=True)
class EntityProfile:
    """One entity and what is known around it: its names and the texts of the facts naming it."""

    canonical: str
    kind: str
    aliases: tuple[str, ...]
    memory_ids: tuple[str, ...]
    facts: tuple[str, ...]


Embed = Callable[[Sequence[str]], np.ndarray]


def find_entity_duplicates(profiles: Sequence[EntityProfile], embed: Embed | None) -> list[Finding]:
    """Pairs of the user's entities that look like one, each with the rule that says so; ``profiles``
    in the order the entities were first seen."""
    live = [p for p in profiles if p.aliases]
    context = _context_vectors(live, embed)
    firsts: dict[str, set[str]] = {}
    for p in live:
        words = p.canonical.split()
        if len(words) > 1 and _personish(p.kind):
            firsts.setdefault(words[0], set()).add(p.canonical)
    names = {p.canonical: _Names.of(p) for p in live}
    findings = []
    for i, a in enumerate(live):
        for b in live[i + 1:]:
            if not _compatible(a.kind, b.kind) or names[a.canonical].facts & names[b.canonical].facts:
                continue  # named together in one fact: two things
            found = _rule(a, b, partial(_cosine, context.get(a.canonical), context.get(b.canonical)), firsts,
                          names[a.canonical].same_as(names[b.canonical]))
            if found is None:
                continue
            rule, confidence, alike = found
            # The name more facts use stays; on a tie, the one seen first (a is listed before b).
            source, target = (a, b) if len(a.memory_ids) < len(b.memory_ids) else (b, a)
            findings.append(Finding(
                MERGE_ENTITIES, {"source": source.canonical, "target": target.canonical}, confidence,
                [{"rule": rule, "names": [source.canonical, target.canonical],
                  "facts_alike": None if alike is None else round(alike, 3),
                  "memory_ids": sorted({*source.memory_ids, *target.memory_ids})[:10]}],
            ))
    return findings


@dataclass(frozen=True)
class _Names:
    """An entity's names read once, so that comparing every pair of entities stays cheap."""

    aliases: tuple[str, ...]
    keys: frozenset[str]
    facts: frozenset[str]
    #: short names that may be an initialism, and how many words a name they abbreviate has at least
    short: tuple[str, ...]
    longest: int

    @classmethod
    def of(cls, profile: EntityProfile) -> _Names:
        written = tuple(_written(a) for a in profile.aliases)
        return cls(written, frozenset(entity_key(w) for w in written), frozenset(profile.memory_ids),
                   tuple(w for w in written if w.isupper() and w.isalpha() and len(w) >= 3),
                   max((len(w.split()) for w in written), default=0))

    def same_as(self, other: _Names) -> bool:
        """``same_entity`` over every pair of names, asked only where it can hold: an equal folded
        name, or an initialism of a name with as many words."""
        if self.keys & other.keys:
            return True
        return any(same_entity(s, long) for a, b in ((self, other), (other, self)) if b.longest >= 2
                   for s in a.short if len(s) <= b.longest + 2 for long in b.aliases)


def _rule(a: EntityProfile, b: EntityProfile, alike: Callable[[], float | None], firsts: dict[str, set[str]],
          same: bool) -> tuple[str, float, float | None] | None:
    """The rule that says two entities are one, its confidence, and how alike their facts are
    (measured only for the rules it raises)."""
    if same:
        return "alias table or initialism", 0.97, None
    if PLACE in (a.kind, b.kind):
        return None  # "paris texas" is not "paris": a place with more words is a more specific place
    if _orgish(a.kind) and _orgish(b.kind) and _bare_org(a.canonical) == _bare_org(b.canonical):
        return "organisation suffix", 0.93, None
    # One-word personal names a letter apart are as often two names (Marian, Marion) as one misspelt.
    one_word_people = " " not in a.canonical and " " not in b.canonical and PERSON in (a.kind, b.kind)
    if not one_word_people and _misspelt(a.canonical, b.canonical):
        similar = alike()
        return "misspelling", 0.93 if _alike(similar) else 0.85, similar
    short, long = sorted((a.canonical, b.canonical), key=len)
    if _personish(a.kind) and _personish(b.kind) and " " not in short and long.split()[0] == short \
            and len(firsts.get(short, ())) == 1:
        similar = alike()
        return "first name only", 0.86 if _alike(similar) else 0.8, similar
    return None


def _alike(similarity: float | None) -> bool:
    return similarity is not None and similarity >= ALIKE_FACTS


def find_role_aliases(facts: Sequence[tuple[str, str]], profiles: Sequence[EntityProfile]) -> list[Finding]:
    """A role the user's facts name a person by ("User's manager is Dana."), as an alias of that
    person, linked to the facts that mention only the role. ``facts`` are (memory id, text) of
    current facts."""
    by_name = {alias: p for p in profiles if p.aliases for alias in p.aliases}
    named: dict[str, dict[str, list[str]]] = {}  # role -> person canonical -> fact ids saying so
    for memory_id, text in facts:
        for frame in ROLE_FRAMES:
            for m in frame.finditer(text):
                person = by_name.get(m["name"].lower()) or by_name.get(entity_key(m["name"]))
                if person is not None:
                    named.setdefault(m["role"], {}).setdefault(person.canonical, []).append(memory_id)
    findings = []
    for role, people in named.items():
        if len(people) > 1:
            continue  # two people in one role: which one a mention means is unclear (a stale fact, likely)
        saying = {memory_id for ids in people.values() for memory_id in ids}
        mention = re.compile(rf"\bUser's {role}\b")
        about = sorted(memory_id for memory_id, text in facts if mention.search(text) and memory_id not in saying)
        alias = f"user's {role}"
        for canonical, ids in people.items():
            if alias in next(p for p in profiles if p.canonical == canonical).aliases:
                continue
            findings.append(Finding(
                ALIAS, {"target": canonical, "alias": alias, "memory_ids": about}, ROLE_CONFIDENCE,
                [{"rule": "role named", "role": role, "memory_ids": sorted(set(ids))[:10], "mentions": about[:10]}],
            ))
    return findings


def _written(alias: str) -> str:
    """Aliases are stored folded; a short one may be an initialism written in capitals."""
    return alias.upper() if alias.isalpha() and len(alias) <= 6 and " " not in alias else alias


def _compatible(a: str, b: str) -> bool:
    return a == b or THING in (a, b)


def _personish(kind: str) -> bool:
    return kind in (PERSON, THING)


def _orgish(kind: str) -> bool:
    return kind in (ORG, THING)


def _bare_org(name: str) -> str:
    return ORG_SUFFIX.sub("", name).strip(" ,.")


def _misspelt(a: str, b: str) -> bool:
    """Same words but one, and that one a letter off (swapped, replaced, missing) in a long word."""
    wa, wb = a.split(), b.split()
    if len(wa) != len(wb):
        return False
    differing = [(x, y) for x, y in zip(wa, wb, strict=True) if x != y]
    if len(differing) != 1:
        return False
    x, y = differing[0]
    if abs(len(x) - len(y)) > 1 or min(len(x), len(y)) < MISSPELLING_MIN_LENGTH or x.startswith(y) or y.startswith(x):
        return False
    return _edit_distance(x, y) == 1


def _edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def _context_vectors(profiles: Sequence[EntityProfile], embed: Embed | None) -> dict[str, np.ndarray]:
    """Each entity's facts with its own names masked out, embedded and averaged: what is said around it."""
    if embed is None:
        return {}
    texts: list[str] = []
    owners: list[str] = []
    for p in profiles:
        for fact in p.facts[:5]:
            masked = fact
            for alias in sorted(p.aliases, key=len, reverse=True):
                masked = re.sub(rf"\b{re.escape(alias)}\b", "someone", masked, flags=re.IGNORECASE)
            texts.append(masked)
            owners.append(p.canonical)
    if not texts:
        return {}
    vectors = np.asarray(embed(texts), dtype=np.float32)
    grouped: dict[str, list[np.ndarray]] = {}
    for owner, vector in zip(owners, vectors, strict=True):
        grouped.setdefault(owner, []).append(vector)
    return {owner: np.mean(vs, axis=0) for owner, vs in grouped.items()}


def _cosine(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None:
        return None
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norm if norm else None
