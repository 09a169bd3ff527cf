"""Named entities in fact text, and when two names mean the same entity.

    find_entities("User moved to NYC with Bob.")
    # [EntityMention("NYC", PLACE, "new york city"), EntityMention("Bob", PERSON, "bob")]
    same_entity("NYC", "New York City")   # True (alias table)
    same_entity("IBM", "International Business Machines")   # True (initialism)

Deterministic and cheap: capitalised spans, a few context cues for the kind, and an alias table.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from cortadel_server.text_caches import holds_text

__all__ = [
    "AliasIndex",
    "EntityKind",
    "EntityMention",
    "canonical_entity",
    "entity_key",
    "find_entities",
    "link_entity",
    "mentions_entity",
    "same_entity",
]


class EntityKind(str, enum.Enum):
    PERSON = "person"
    PLACE = "place"
    ORG = "org"
    PROJECT = "project"
    THING = "thing"


@dataclass(frozen=True)
class EntityMention:
    """A named thing a fact mentions; `key` is the folded identity used to link aliases."""

    name: str
    kind: EntityKind
    key: str


ALIASES = {
    "nyc": "new york city", "ny": "new york", "sf": "san francisco", "la": "los angeles",
    "uk": "united kingdom", "us": "united states", "usa": "united states",
    "united states of america": "united states", "dc": "washington dc", "nola": "new orleans",
    "philly": "philadelphia", "vegas": "las vegas", "the netherlands": "netherlands",
    "holland": "netherlands", "uae": "united arab emirates", "eu": "european union",
    "msft": "microsoft", "aws": "amazon web services", "gcp": "google cloud",
}
PLACES = {
    "berlin", "paris", "london", "tokyo", "rome", "madrid", "lisbon", "amsterdam", "vienna",
    "munich", "hamburg", "zurich", "new york", "new york city", "san francisco", "los angeles",
    "seattle", "boston", "chicago", "austin", "toronto", "vancouver", "sydney", "melbourne",
    "dublin", "barcelona", "prague", "warsaw", "copenhagen", "stockholm", "oslo", "helsinki",
    "singapore", "hong kong", "beijing", "shanghai", "seoul", "mumbai", "delhi", "bangalore",
    "washington dc", "las vegas", "new orleans", "philadelphia", "kyoto", "osaka", "milan",
    "germany", "france", "spain", "italy", "portugal", "japan", "china", "india", "canada",
    "mexico", "brazil", "australia", "united kingdom", "united states", "netherlands",
    "switzerland", "austria", "ireland", "poland", "sweden", "norway", "denmark", "finland",
    "united arab emirates", "europe", "asia", "africa", "california", "texas", "bavaria",
}
ORGS = {
    "google", "microsoft", "apple", "amazon", "meta", "facebook", "netflix", "stripe", "openai",
    "anthropic", "ibm", "intel", "nvidia", "sap", "siemens", "spotify", "shopify", "github",
    "gitlab", "atlassian", "salesforce", "oracle", "uber", "airbnb", "tesla", "mozilla",
    "amazon web services", "google cloud", "european union", "deutsche bank", "bmw",
}
# "Bob's ..." or "Bob is User's ...": a name that owns or relates to something is a person.
_OWNER = re.compile(r"^(?:'s\b|\s+(?:is|was)\s+(?:User|Assistant)'s\b)")
TITLE = re.compile(r"^(?:Dr|Mr|Mrs|Ms|Prof)\.\s")
ORG_SUFFIX = re.compile(r"\b(?:inc|corp|corporation|ltd|llc|gmbh|ag|labs|university|bank|group|company|co)\.?$", re.IGNORECASE)
NOT_NAMES = {
    "user", "assistant", "i", "the", "a", "an", "my", "our", "this", "that", "these", "those",
    "it", "he", "she", "they", "we", "you", "his", "her", "their", "monday", "tuesday",
    "wednesday", "thursday", "friday", "saturday", "sunday", "mondays", "tuesdays",
    "wednesdays", "thursdays", "fridays", "saturdays", "sundays", "january", "february", "march",
    "april", "may", "june", "july", "august", "september", "october", "november", "december",
    "english", "german", "french", "spanish", "italian", "japanese", "chinese", "christmas",
    "easter", "ok", "also", "and", "but", "yes", "no",
}
PERSON_CUES = re.compile(
    r"\b(?:manager|boss|wife|husband|partner|friend|brother|sister|son|daughter|mom|mum|dad|"
    r"mother|father|colleague|coworker|co-worker|teammate|cousin|uncle|aunt|girlfriend|"
    r"boyfriend|fianc[eé]e?|named|called|with|met|told|asked|dog|cat)\s*$",
    re.IGNORECASE,
)
PLACE_CUES = re.compile(r"\b(?:in|to|from|near|visited|visit|visiting|trip to|flight to)\s*$", re.IGNORECASE)
ORG_CUES = re.compile(r"\b(?:works? at|works? for|working at|working for|joined|employed (?:at|by)|job at)\s*$", re.IGNORECASE)
PROJECT_CUES = re.compile(r"\b(?:project|repo|repository|codebase|service|app)\s*$", re.IGNORECASE)
PROJECT_AFTER = re.compile(r"^\s+(?:project|repo|repository|codebase|service|app)\b", re.IGNORECASE)

# A capitalised word (Berlin, McDonald, O'Neil, K8s) or an all-caps initialism (NYC, IBM).
_NAME_WORD = r"(?:[A-Z][a-zA-Z0-9]*(?:['’-][A-Za-z]+)*|[A-Z]{2,}[0-9]*)"
_NAME_SPAN = re.compile(rf"(?:(?:Dr|Mr|Mrs|Ms|Prof)\.\s+)?{_NAME_WORD}(?:\s+(?:of\s+|de\s+|van\s+|von\s+|&\s+)?{_NAME_WORD})*")
_PUNCT = re.compile(r"[^\w\s&]")
_SPACES = re.compile(r"\s+")


def entity_key(name: str) -> str:
    """The folded identity of a name: case, punctuation, a leading "the" and known aliases."""
    folded = _SPACES.sub(" ", _PUNCT.sub("", name.replace("’", "'").casefold())).strip()
    folded = folded.removesuffix("'s").removesuffix(" s")
    if folded.startswith("the ") and folded not in ALIASES:
        folded = folded[4:]
    return ALIASES.get(folded, folded)


def _initialism(name: str) -> str:
    words = [w for w in entity_key(name).split() if w not in ("of", "and", "the", "&", "de")]
    return "".join(w[0] for w in words) if len(words) > 1 else ""


def _capitals(name: str) -> str:
    """The name as an initialism may be written, lower-cased ("I.B.M." → "ibm"), or "" when it is
    not one: three letters at least, all capitals."""
    bare = name.replace(".", "").strip()
    return bare.lower() if len(bare) >= 3 and bare.isupper() and bare.isalpha() else ""


def same_entity(a: str, b: str) -> bool:
    """True when two names denote the same entity on strong evidence.

    Strong evidence is an identical folded key (which includes the alias table) or an initialism of
    at least three letters written in capitals ("IBM" for "International Business Machines").
    """
    key_a, key_b = entity_key(a), entity_key(b)
    if key_a == key_b:
        return True
    for short, long in ((a, b), (b, a)):
        capitals = _capitals(short)
        if capitals and _initialism(long) == capitals:
            return True
    return False


def _evidence(name: str) -> frozenset[str]:
    """What ``same_entity`` compares of a name, as tags two names share exactly when it holds for
    them: its folded key ("k"), the initialism of its words ("i", matched by capitals) and, written
    in capitals, the initialism it is ("c", matched by words)."""
    tags = {f"k:{entity_key(name)}"}
    if initialism := _initialism(name):
        tags.add(f"i:{initialism}")
    if capitals := _capitals(name):
        tags.add(f"c:{capitals}")
    return frozenset(tags)


@holds_text
@functools.lru_cache(maxsize=65_536)
def _alias_evidence(alias: str) -> frozenset[str]:
    """``_evidence`` of a stored alias and of how it may be written: a short one in capitals
    ("ibm" for "IBM"). Cached: every new name of a user is compared with each of their aliases."""
    written = alias.upper() if alias.isalpha() and len(alias) <= 6 else alias
    return _evidence(alias) | _evidence(written)


def link_entity(mention: EntityMention, known: Iterable[EntityMention]) -> EntityMention | None:
    """The known entity this mention refers to, if any (same kind or an unknown kind)."""
    for other in known:
        compatible = mention.kind == other.kind or EntityKind.THING in (mention.kind, other.kind)
        if compatible and same_entity(mention.name, other.name):
            return other
    return None


def _kind(name: str, key: str, before: str, after: str) -> EntityKind:
    if PROJECT_CUES.search(before) or PROJECT_AFTER.match(after):
        return EntityKind.PROJECT
    if key in PLACES:
        return EntityKind.PLACE
    if key in ORGS or ORG_SUFFIX.search(name) or ORG_CUES.search(before):
        return EntityKind.ORG
    if TITLE.match(name) or PERSON_CUES.search(before) or _OWNER.match(after):
        return EntityKind.PERSON
    if PLACE_CUES.search(before):
        return EntityKind.PLACE
    return EntityKind.THING


def _bare(word: str) -> str:
    return word.casefold().replace("’", "'").removesuffix("'s")


def find_entities(text: str) -> list[EntityMention]:
    """Entities mentioned in one fact, in reading order, one mention per folded key."""
    mentions: dict[str, EntityMention] = {}
    for m in _NAME_SPAN.finditer(text):
        name = m.group(0)
        words = name.split()
        while words and _bare(words[0]) in NOT_NAMES:
            words.pop(0)
        while words and _bare(words[-1]) in NOT_NAMES:
            words.pop()
        if not words:
            continue
        name = " ".join(words).removesuffix("'s").removesuffix("’s")
        start = m.start() + m.group(0).index(words[0])
        after = text[start + len(name):]
        if start == 0 and len(words) == 1 and name.lower() not in PLACES | ORGS and not name.isupper() and not _OWNER.match(after):
            continue  # a capital at the start of a sentence is usually grammar, not a name
        key = entity_key(name)
        if key in mentions:
            continue
        kind = _kind(name, key, text[:start], after)
        mentions[key] = EntityMention(name=name, kind=kind, key=key)
    return list(mentions.values())


def mentions_entity(text: str, target: str, mentions: Sequence[EntityMention] | None = None) -> bool:
    """Whether `text` mentions the entity named `target` (by alias, initialism or plain word)."""
    found = find_entities(text) if mentions is None else mentions
    if any(same_entity(m.name, target) for m in found):
        return True
    key = entity_key(target)
    return bool(key) and re.search(rf"\b{re.escape(key)}\b", entity_key(text)) is not None


def canonical_entity(name: str, known: Mapping[str, str]) -> str:
    """The canonical name of an existing entity of the user that `name` denotes, else its own key.

    `known` maps every alias (lower case) to its canonical name, as ``Storage.entity_names`` gives.
    """
    exact, wanted = _looked_up_by(name)
    for alias in exact:
        if alias in known:
            return known[alias]
    # The first alias ``same_entity`` matches, as written or (a short one) in capitals: one that
    # shares a tag with the name. Comparing the name with each alias took 15 ms at 5,000 aliases,
    # for every name the user had not mentioned before.
    for evidence, canonical in zip(map(_alias_evidence, known), known.values(), strict=True):
        if not wanted.isdisjoint(evidence):
            return canonical
    return exact[0]


def _looked_up_by(name: str) -> tuple[tuple[str, str], frozenset[str]]:
    """The aliases that are `name` itself (its key first, then as written) and the tags of an
    alias's evidence that make it the same entity: its key, or an initialism either way."""
    key, initialism, capitals = entity_key(name), _initialism(name), _capitals(name)
    tags = {f"k:{key}", *([f"c:{initialism}"] if initialism else []), *([f"i:{capitals}"] if capitals else [])}
    return (key, name.lower()), frozenset(tags)


class AliasIndex:
    """A user's aliases, for resolving many names in a row while they grow: ``canonical`` answers
    what ``canonical_entity`` answers over ``dict(rows)`` read again after every write, in constant
    time, and ``add`` keeps it current in place. The enrichment worker read every alias again after
    each new entity and compared each new name with all of them: at 10,000 aliases, 290 facts a
    second.

    The order of ``rows`` decides between two aliases a name matches, so it is part of the input:
    canonical name, then alias, in code point order (``Storage.entity_aliases``). An alias stands
    where its first row does; an alias of several entities names the last of them (``dict``'s rule).
    """

    def __init__(self, rows: Iterable[tuple[str, str]]) -> None:
        #: alias → canonical name, as ``dict(rows)``
        self.names: dict[str, str] = {}
        #: alias → the canonical name of its first row: where the alias stands in the order
        self._first: dict[str, str] = {}
        #: evidence tag → (canonical name, alias) of the first alias in order carrying the tag
        self._first_with: dict[str, tuple[str, str]] = {}
        #: the rows it stands for: whether the user's rows are still these tells whether it still holds
        self.rows: set[tuple[str, str]] = set()
        for alias, canonical in rows:
            self.add(alias, canonical)

    def add(self, alias: str, canonical: str) -> None:
        """The row (alias, canonical) is stored: for the first time, or again (then nothing changes)."""
        self.rows.add((alias, canonical))
        last = self.names.get(alias)
        if last is None or canonical > last:
            self.names[alias] = canonical
        first = self._first.get(alias)
        if first is not None and first <= canonical:
            return
        self._first[alias] = canonical
        place = (canonical, alias)
        for tag in _alias_evidence(alias):
            held = self._first_with.get(tag)
            if held is None or place < held:
                self._first_with[tag] = place

    def canonical(self, name: str, after: Mapping[str, str] | None = None) -> str:
        """``canonical_entity(name, known)``, ``known`` being ``dict(rows)`` followed by the aliases
        of ``after`` it lacks (a fact's earlier mentions, which resolve its later ones)."""
        after = after or {}
        exact, wanted = _looked_up_by(name)
        for alias in exact:
            if (canonical := self.names.get(alias, after.get(alias))) is not None:
                return canonical
        places = [place for tag in wanted if (place := self._first_with.get(tag)) is not None]
        if places:
            return self.names[min(places)[1]]
        for alias, canonical in after.items():  # none of the stored aliases matches: nor does one of these they hold
            if not wanted.isdisjoint(_alias_evidence(alias)):
                return canonical
        return exact[0]
