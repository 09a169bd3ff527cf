"""The write decision: what one candidate does to the user's current facts.

    decide(candidate, [Neighbour("m1", "User lives in Berlin.", 0.82)])
    # Decision(Event.SUPERSEDE, targets=("m1",)) for "User lives in Paris now."

Pure and deterministic. The rules, in order:

* a retraction invalidates the fact it names (or does nothing when nothing matches);
* a resolution closes the open item it names (or is stored like any statement);
* forgetting an entity deletes every fact that mentions it;
* a statement that says the same thing as a current fact is a duplicate (`TOUCH` when the
  speaker re-confirms it: "yes, I still live in Paris"), never when the polarity differs
  (the negation guard: "likes coffee" vs "no longer likes coffee"). Said in other words, it is a
  duplicate when the embedder finds the two close (the neighbour's `score`) and nothing that tells
  facts apart differs: the person it is about ("sister" vs "brother"), the polarity ("likes" vs
  "dislikes"), numbers and weekdays, names; and it does not say it adds ("also", "too");
* a statement that names what it replaces (a correction "…, not Lisbon", a switch "from Vim to
  Emacs", `Candidate.target`) supersedes the current fact about the same person that mentions it;
* a statement that gives a new value to the same slot supersedes the old fact: the same subject
  living, working, being called, being aged, liking something; the same sentence with another
  number or weekday; the same sentence negated; a cessation ("stopped running", "quit coffee",
  "gave up the piano") of what a current fact says is done;
* anything else is new. When it came close to a current fact without matching it, the decision
  says so (`uncertain`): it is stored, never dropped, with the doubt recorded.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from cortadel_server.language.entities import mentions_entity
from cortadel_server.language.timeexpr import find_times
from cortadel_server.pipeline.model import Candidate, Decision, Event, Intent, Neighbour
from cortadel_server.pipeline.rewrite import expand_contractions
from cortadel_server.text_caches import holds_text

__all__ = ["CurrentShapes", "FactShape", "decide", "needs_full_text", "normalize", "shape", "slot_query"]

DUPLICATE_SIMILARITY = 0.8
# Embedding similarity (cosine) above which two statements that agree on everything that tells
# facts apart are the same fact; without a name or number to check, the bar is higher.
SEMANTIC_DUPLICATE = 0.82
SEMANTIC_DUPLICATE_UNANCHORED = 0.9
UNCERTAIN_SIMILARITY = 0.75
AMBIGUOUS_SIMILARITY = 0.5
TARGET_COVERAGE = 0.6

FILLERS = re.compile(
    r"\b(?:now|currently|still|really|actually|also|just|any ?more|nowadays|these days|at the moment|"
    r"right now|again|indeed|definitely|truly|as of now|at present|presently)\b"
)
NEGATION = re.compile(
    r"\b(?:(?:does|do|did|is|are|was|were|has|have|had|can|will|would) not|cannot|not|never|no longer|"
    r"no more|stopped|quit|used to|gave up|given up|(?<!-)left(?!-))\b"
)
STOPWORDS = frozenset(
    ["a", "an", "the", "to", "in", "at", "on", "of", "for", "with", "and", "or", "is", "are", "am", "was", "were", "be", "been", "being", "has", "have", "had", "do", "does", "did", "will", "would", "can", "could", "should", "shall", "may", "might", "must", "that", "this", "these", "those", "it", "its", "their", "there", "user", "assistant", "by", "from", "as", "into", "than", "then", "so", "very", "every", "each"]
)
# Stems of numbers, clock times and parts of the week: the values a routine is stated with.
TYPED_VALUE = re.compile(r"^(?:\d+(?:[.,:]\d+)?(?:am|pm|k|km|kg|h|m|%)?|(?:mon|tues|wednes|thurs|fri|satur|sun)day|weekend|weekday|morn|even|night)$")
IRREGULAR = {"went": "go", "goes": "go", "has": "have", "is": "be", "was": "be", "ran": "run", "met": "meet",
             "ate": "eat", "drank": "drink", "flew": "fly", "bought": "buy", "lived": "live", "wife's": "wife",
             "going": "go", "gone": "go", "doing": "do", "done": "do"}
# Words a target may be phrased with, and the words facts use for the same thing.
TARGET_SYNONYMS = {
    "address": ("address", "liv", "home"), "home": ("home", "liv", "address"),
    "job": ("job", "work", "employ"), "employer": ("employer", "work", "employ"),
    "company": ("company", "work", "employ"), "city": ("city", "liv", "home"),
}

_SLOT_FRAMES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (key, re.compile(pattern))
    for key, pattern in (
        ("residence", (r"^(?P<s>.+?) (?:lives?|is living|has lived|has been living|resides?|is based|moved|has moved|"
                       r"move|relocated|has relocated|settled|is staying|stays?) (?:back )?(?:in|to|at|into|near) (?P<v>.+)$")),
        ("employer", (r"^(?P<s>.+?) (?:(?:works?|is working|has been working|is employed|started working|got a (?:new )?job|"
                      r"has a (?:new )?job|took a (?:new )?job|started a (?:new )?job) (?:at|for|by|with)|joined) (?P<v>.+)$")),
        ("origin", r"^(?P<s>.+?) (?:is|comes?) (?:originally )?from (?P<v>.+)$"),
        ("occupation", r"^(?P<s>.+?) works? as (?:an? )?(?P<v>.+)$"),
        ("name", r"^(?P<s>.+?) (?:is called|goes by|is named|name is) (?P<v>.+)$"),
        ("age", r"^(?P<s>.+?) (?:is|am|turned) (?P<v>\d+)(?: years? old)?$"),
        ("partner", r"^(?P<s>.+?) (?:is married to|is engaged to|is dating|is in a relationship with) (?P<v>.+)$"),
        ("attribute", r"^(?P<s>[a-z]+)'s (?P<k>(?:[a-z]+ ){0,3}?[a-z]+) (?:is|are|was|were) (?P<v>.+)$"),
        ("affinity", (r"^(?P<s>.+?) (?P<verb>likes?|loves?|enjoys?|adores?|hates?|dislikes?|detests?|prefers?|"
                      r"is a fan of|is into|can not stand|(?:drink|eat|smok|play|us)(?:es|s|e|ing)?) (?P<v>.+)$")),
    )
)
# Per frame of _SLOT_FRAMES, words one of which every match holds (a part of its verb): a frame none
# of them is in cannot match and is not tried (a frame's failed match cost about 2 µs).
_FRAME_CLUES = {
    key: re.compile("|".join(map(re.escape, words)))
    for key, words in (
        ("residence", ("liv", "resid", "based", "mov", "relocated", "settled", "stay")),
        ("employer", ("work", "employed", "job", "joined")), ("origin", ("from",)), ("occupation", ("work",)),
        ("name", ("called", "goes by", "named", "name is")), ("age", tuple("0123456789")),
        ("partner", ("married to", "engaged to", "dating", "relationship")), ("attribute", ("'s ",)),
        ("affinity", ("lik", "lov", "enjoy", "ador", "hat", "dislik", "detest", "prefer", "fan of", "into", "can not stand",
                      "drink", "eat", "smok", "play", "us")),
    )
}
_AS_USER = {"i": "user", "me": "user", "myself": "user", "my": "user's", "mine": "user's"}
_FIRST_PERSON = re.compile(r"\b(?:i|me|myself|my|mine)\b")
SPEAKERS = frozenset({"user", "user's", "assistant", "assistant's"})
_CHANGE = re.compile(r"\b(?:now|nowadays|these days|any ?more|switched|instead|no longer)\b")
_ADDITIVE = re.compile(r"\b(?:also|too|as well|another|additionally)\b")
_COPULAS = frozenset(["is", "are", "am", "was", "were", "has", "have", "had", "be", "been", "being"])
_SKIP_BEFORE_VERB = frozenset(["only", "always", "usually", "often", "mostly", "mainly", "generally", "typically"])
_DISLIKE = re.compile(r"^(?:hates?|dislikes?|detests?|can not stand)$")
_ATTRIBUTE_NOISE = re.compile(r"\b(?:current|new|old|present|latest|favorite|favourite)\b ?")
# People a fact can be about other than its speaker: "User's sister lives in Porto" is not about User.
PEOPLE = frozenset(
    ["wife", "husband", "partner", "spouse", "girlfriend", "boyfriend", "fiance", "fiancee", "mom", "mother", "dad",
     "father", "parent", "parents", "son", "daughter", "kid", "kids", "child", "children", "brother", "sister",
     "sibling", "grandma", "grandmother", "grandpa", "grandfather", "aunt", "uncle", "cousin", "niece", "nephew",
     "friend", "boss", "manager", "colleague", "coworker", "roommate", "flatmate", "neighbour", "neighbor",
     "landlord", "doctor", "dentist", "therapist", "coach", "teacher", "ex"]
)
_SPELLINGS = {"mum": "mom", "mummy": "mom", "mommy": "mom", "neighbour": "neighbor"}
# "User's sister lives …", "User's son Leo …", "User's daughter's name": the person is the head of
# the phrase, not a modifier ("User's dentist appointment" is about User).
_OWNED = re.compile(r"\b(?:[Uu]ser|[Aa]ssistant)'s ([A-Za-z]+)(?=(?:'s\b|$|[^\w'\s]|\s+(?:[A-Z]|\w+(?:s|ed)\b|(?:is|are|was|were|has|had|have|does|did|will|can|and|not|also|still|just|now)\b)))")
_ANCHOR = re.compile(r"(?<!^)(?<![.!?] )\b(?:[A-Z][\w'-]*|\w*\d[\w:.]*)")
_CLOSED = re.compile(r"\b(?:resolved|fixed|closed|done|finished|completed|solved|merged|shipped)\b")


@dataclass(frozen=True)
class FactShape:
    """What decide() compares: normalized text, content stems, polarity, typed values, slot."""

    normal: str
    stems: frozenset[str]
    negative: bool
    values: frozenset[str]
    subject: str
    slot: str | None
    slot_value: frozenset[str]
    verb: str  # the stem of the main verb after the subject ("drive"), "" for a copula
    changed: bool  # says the old state is over: "now", "these days", "switched to", "instead"
    additive: bool  # "also", "too", "as well": says it is another fact
    text: str = field(compare=False, repr=False)  # as written: what the properties below read

    # Read only by a few rules, for the few neighbours that reach them (a paraphrase, a target, a
    # stop): made on first use, they were a fifth of making a shape, which a batch does per fact.
    @functools.cached_property
    def people(self) -> frozenset[str]:
        """Whom besides the speaker it is about: "sister" in "User's sister …"."""
        owned = (_SPELLINGS.get(p.lower(), p.lower()) for p in _OWNED.findall(self._expanded))
        return frozenset(p for p in owned if p in PEOPLE)

    @functools.cached_property
    def anchors(self) -> frozenset[str]:
        """Names and numbers, lower case: what two paraphrases must share."""
        return frozenset(a.lower().rstrip(".:") for a in _ANCHOR.findall(self._expanded) if a not in ("User", "Assistant", "I"))

    @functools.cached_property
    def words(self) -> frozenset[str]:
        """Every word, lower case."""
        return frozenset(re.findall(r"[\w'.:-]+", self.normal)) | frozenset(w.rstrip(".:") for w in self.normal.split())

    @functools.cached_property
    def _expanded(self) -> str:
        return expand_contractions(self.text).strip()


# Punctuation; "." and ":" unless between digits ("3.5", "1:30"); "'" unless before "s". Every
# branch starts with the character it removes, so sre skips to the next candidate character: half
# the time of the same pattern with its lookbehind first.
_PUNCTUATION = re.compile(r"[^\w\s'$€%.:-]|[.:](?:(?<!\d[.:])|(?!\d))|'(?!s\b)")


def normalize(text: str) -> str:
    """Case, punctuation, whitespace and fillers ("now", "currently", "still") folded away."""
    return _folded(expand_contractions(text))


def _folded(expanded: str) -> str:
    """``normalize`` of a text whose contractions are expanded already."""
    text = expanded.lower().replace("’", "'")
    text = _PUNCTUATION.sub(" ", text)
    text = FILLERS.sub(" ", text)
    text = _FIRST_PERSON.sub(lambda m: _AS_USER[m.group(0)], text)  # verbatim "I ..." texts compare too
    return " ".join(text.split())


@holds_text
@functools.lru_cache(maxsize=16384)
def _stem(word: str) -> str:
    word = IRREGULAR.get(word, word).removesuffix("'s")
    for suffix, replacement in (("ies", "y"), ("ing", ""), ("ed", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            word = word[: -len(suffix)] + replacement
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def _stems(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in re.findall(r"[\w$€%.:]+", text) if w not in STOPWORDS and w.strip(".:"))


_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@holds_text
@functools.lru_cache(maxsize=8192)
def shape(text: str) -> FactShape:
    """The comparison shape of one fact text (cached: neighbours come back again and again)."""
    expanded = expand_contractions(text)  # once for both the normal form and the anchors
    normal = _folded(expanded)
    timeless = normal
    dates = set()
    for span in find_times(normal, _EPOCH):
        timeless = timeless.replace(span.text.lower(), " ")
        if any(ch.isdigit() for ch in span.text):
            dates.add(" ".join(span.text.lower().split()))  # "on 4 may" and "on 5 may" are two values
    unnegated, negations = NEGATION.subn(" ", timeless)
    negative = negations > 0
    plain = " ".join(unnegated.split())
    stems = _stems(plain)
    values = frozenset(w for w in stems if TYPED_VALUE.match(w)) | dates
    subject, slot, slot_value, dislike = _slot(plain)
    lowered = text.lower()
    additive = bool(_ADDITIVE.search(lowered))
    changed = bool(_CHANGE.search(lowered)) and not additive
    return FactShape(normal, stems, negative != dislike, values, subject, slot, slot_value, _main_verb(plain), changed,
                     additive, text)


def _main_verb(plain: str) -> str:
    words = plain.split()
    rest = words[2:] if words and words[0].endswith("'s") else words[1:]
    while rest and rest[0] in _SKIP_BEFORE_VERB:
        rest = rest[1:]
    return "" if not rest or rest[0] in _COPULAS else _stem(rest[0])


def _slot(plain: str) -> tuple[str, str | None, frozenset[str], bool]:
    """(subject, slot key, slot value stems, whether the verb itself is negative like "hates")."""
    for key, pattern in _SLOT_FRAMES:
        m = _FRAME_CLUES[key].search(plain) and pattern.match(plain)
        if not m:
            continue
        subject = m["s"].strip()
        value = _stems(m["v"])
        if key == "attribute":
            return subject, "attribute:" + _ATTRIBUTE_NOISE.sub("", m["k"]).strip(), value, False
        if key == "affinity":  # what is liked is part of the slot; the value is the polarity
            dislike = bool(_DISLIKE.match(m["verb"]))
            liked = (w for w in value if not TYPED_VALUE.match(w))
            return subject, "affinity:" + " ".join(sorted(liked)), frozenset(), dislike
        return subject, key, value, False
    first = plain.split(" ", 1)[0] if plain else ""
    return first, None, frozenset(), False


# Words the facts filling a slot are written with, to look them up by full-text search.
_SLOT_WORDS = {
    "residence": "lives live living moved relocated based resides address home city",
    "employer": "works work working joined employed job company employer",
    "occupation": "works job role occupation profession",
    "name": "name called named goes",
    "age": "years old age",
    "partner": "married engaged dating partner wife husband",
}


def slot_query(text: str) -> str | None:
    """Extra full-text query words that find the facts a new value of this fact's slot replaces
    ("User moved to Paris" → words of every way of saying where someone lives), or None."""
    fact = shape(text)
    words = _SLOT_WORDS.get(fact.slot or "")
    return f"{fact.subject} {words}" if words else None  # likes and attributes: the fact's own words


def _similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """How alike two facts' stems are (Jaccard)."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def decide(candidate: Candidate, neighbours: Sequence[Neighbour]) -> Decision:
    """The event for `candidate` given the user's current facts most like it."""
    ordered = sorted(neighbours, key=lambda n: -n.score)
    if candidate.intent is Intent.FORGET_ENTITY:
        target = candidate.target or ""
        hits = tuple(n.id for n in ordered if target and mentions_entity(n.text, target))
        if hits:
            return Decision(Event.DELETE_ENTITY, hits, f"facts mentioning {target}")
        return Decision(Event.NOOP, (), f"no fact mentions {target}")
    if candidate.intent is Intent.RETRACT:
        hit = _find_target(candidate.target or "", ordered)
        if hit is not None:
            return Decision(Event.INVALIDATE, (hit.id,), "retracted")
        return Decision(Event.NOOP, (), "nothing matches the retraction")
    if candidate.intent is Intent.RESOLVE:
        open_items = [n for n in ordered if not _CLOSED.search(normalize(n.text))]
        hit = _find_target(candidate.target or "", open_items)
        if hit is not None:
            return Decision(Event.RESOLVE, (hit.id,), "open item closed")
    return _remember(candidate, ordered)


def needs_full_text(candidate: Candidate, current: CurrentShapes) -> bool:
    """Whether `candidate`'s full-text neighbours can change what decide() gives it, given the
    shapes of all the user's current facts (`current`).

    They cannot for a statement (no target) that no current fact bears on (`CurrentShapes.bears_on`):
    then only `_paraphrase` and the doubt look at a neighbour, by its score, and a full-text hit
    the vector arm did not also find scores 0. decide() on the vector arm's neighbours alone (and
    the current fact of the candidate's fingerprint, scored 1, either way) gives the same event,
    targets, reason and doubt. A batch decides most of its new facts so. Only `ambiguous` may
    differ: a judge reads it, and with a judge every fact is decided on all its neighbours."""
    return candidate.intent is not Intent.REMEMBER or bool(candidate.target) or current.bears_on(shape(candidate.text))


class CurrentShapes:
    """The shapes of a user's current facts, keyed by what `_remember`'s rules compare.

        current = CurrentShapes()
        current.add("m1", "User lives in Berlin.")
        current.bears_on(shape("User lives in Paris."))   # True: the same subject's residence
        current.holds("m1", "User lives in Berlin.")      # True
        current.remove("m1")

    `bears_on` over-approximates those rules: False only when no fact held can be the same fact as
    the new one (the same slot, stems alike by DUPLICATE_SIMILARITY, which the same normal form
    is) or be replaced by it (the same slot, the same verb said changed, the speaker's same sentence
    with other values; a negation always counts). Likeness by the embedder is not here."""

    def __init__(self) -> None:
        #: per fact: its text, subject, stems and the hashes of its keys. Keys and postings are
        #: held by hash, for room (with the whole shape a fact took 6 KB): a collision only sends a
        #: new fact to its lookups.
        self._facts: dict[str, tuple[str, str, frozenset[str], tuple[int, ...]]] = {}
        self._keys: Counter[int] = Counter()
        #: per hash of (subject, stem): the facts of that subject whose stems hold it
        self._postings: dict[int, set[str]] = {}

    def __len__(self) -> int:
        return len(self._facts)

    def ids(self) -> list[str]:
        return list(self._facts)

    def holds(self, memory_id: str, text: str) -> bool:
        """Whether the fact is held with this text."""
        held = self._facts.get(memory_id)
        return held is not None and held[0] == text

    def add(self, memory_id: str, text: str) -> None:
        """Hold the fact (in place of what it held for that id with another text)."""
        if self.holds(memory_id, text):
            return
        self.remove(memory_id)
        fact = shape(text)
        keys = tuple(hash(key) for key in _keys(fact))
        self._facts[memory_id] = (text, fact.subject, fact.stems, keys)
        self._keys.update(keys)
        for stem in fact.stems:
            self._postings.setdefault(hash((fact.subject, stem)), set()).add(memory_id)

    def remove(self, memory_id: str) -> None:
        held = self._facts.pop(memory_id, None)
        if held is None:
            return
        _, subject, stems, keys = held
        for key in keys:
            left = self._keys[key] - 1
            if left:
                self._keys[key] = left
            else:
                del self._keys[key]
        for stem in stems:
            posting = hash((subject, stem))
            ids = self._postings[posting]
            ids.discard(memory_id)
            if not ids:
                del self._postings[posting]

    def bears_on(self, new: FactShape) -> bool:
        if new.negative or not new.stems:
            return True  # "stopped", "negated": left to the rules
        if any(hash(key) in self._keys for key in _keys(new, wanted=True)):
            return True
        # A fact alike by its stems holds one of any `_probes` of the new stems: the rarest are probed.
        postings = sorted((self._postings.get(hash((new.subject, stem)), set()) for stem in new.stems), key=len)
        probed: set[str] = set().union(*postings[: _probes(len(new.stems))])
        return any(_similarity(new.stems, self._facts[i][2]) >= DUPLICATE_SIMILARITY for i in probed)


@functools.lru_cache(maxsize=64)
def _probes(stems: int) -> int:
    """Of how many of a new fact's `stems` a fact whose `_similarity` to it reaches
    DUPLICATE_SIMILARITY holds at least one: it shares at least the least k with k / stems at the
    bar (its ratio has a denominator of at least `stems`, so it is no higher), and misses the rest."""
    shared = next(k for k in range(stems + 1) if k / stems >= DUPLICATE_SIMILARITY)
    return stems - shared + 1


def _keys(fact: FactShape, *, wanted: bool = False) -> list[tuple[object, ...]]:
    """The keys `CurrentShapes` holds `fact` under; with `wanted`, those a new fact of this shape
    asks for (a changed verb and the speaker's values count only when the new fact has them)."""
    keys: list[tuple[object, ...]] = []  # the same normal form is the same stems: found below
    if fact.slot is not None:
        keys.append(("slot", fact.subject, fact.slot))
    if fact.verb and (fact.changed or not wanted):
        keys.append(("verb", fact.subject, fact.verb))
    if not wanted or (fact.subject in SPEAKERS and fact.values):
        keys.append(("valueless", fact.subject, fact.stems - fact.values))
    return keys


def _remember(candidate: Candidate, neighbours: Sequence[Neighbour]) -> Decision:
    new = shape(candidate.text)
    olds = [(n, shape(n.text)) for n in neighbours]
    best_ambiguous = 0.0
    event = Event.TOUCH if candidate.reconfirm else Event.SKIP_DUPLICATE
    for n, old in olds:
        if new.normal == old.normal:
            return Decision(event, (n.id,), "same fact")
    if candidate.target:
        # Said to replace something: that comes before any likeness ("engaged to Chris", not "dating Chris").
        replaced = _find_target(candidate.target, [n for n, old in olds if old.people == new.people])
        if replaced is not None:
            return Decision(Event.SUPERSEDE, (replaced.id,), f"replaces {candidate.target}")
    for n, old in olds:
        agree = new.negative == old.negative and new.values == old.values and new.subject == old.subject
        same_slot = new.slot is not None and new.slot == old.slot
        if agree and (new.slot_value == old.slot_value if same_slot else _similarity(new.stems, old.stems) >= DUPLICATE_SIMILARITY):
            return Decision(event, (n.id,), "same fact")
    for n, old in olds:
        if _paraphrase(new, old, n.score):
            return Decision(event, (n.id,), f"same fact in other words (similarity {n.score:.2f})")
    for n, old in olds:
        reason = _replaces(new, old)
        if reason:
            return Decision(Event.SUPERSEDE, (n.id,), reason)
        if new.negative == old.negative:
            best_ambiguous = max(best_ambiguous, _similarity(new.stems, old.stems))
    close = [n for n in neighbours if UNCERTAIN_SIMILARITY <= n.score < 1.0]
    if candidate.target:
        uncertain = f"said to replace {candidate.target!r}, which no current fact names"
    elif close:
        uncertain = f"close to a current fact {close[0].id} (similarity {close[0].score:.2f}) without matching it"
    else:
        uncertain = ""
    return Decision(Event.ADD, (), "new fact", ambiguous=best_ambiguous >= AMBIGUOUS_SIMILARITY, uncertain=uncertain)


def _paraphrase(new: FactShape, old: FactShape, similarity: float) -> bool:
    """The same fact in other words: close in meaning, and equal in everything that tells two facts
    apart (whom it is about, polarity, numbers, names), and not said as an addition."""
    if similarity < SEMANTIC_DUPLICATE or new.additive:
        return False
    if new.negative != old.negative or new.values != old.values or new.people != old.people:
        return False
    if new.slot is not None and old.slot is not None and (new.slot != old.slot or new.slot_value != old.slot_value):
        return False  # "is from Lyon" is not "lives in Lyon"
    if not new.anchors <= old.words or not old.anchors <= new.words:
        return False
    return similarity >= SEMANTIC_DUPLICATE_UNANCHORED or bool(new.anchors | old.anchors)


def _replaces(new: FactShape, old: FactShape) -> str:
    """Why `new` supersedes `old`, or "" when it does not."""
    if new.subject != old.subject:
        return ""
    if new.slot is not None and new.slot == old.slot:
        if new.negative != old.negative and new.slot_value == old.slot_value:
            return f"{new.slot} negated"
        if not new.negative and not old.negative and new.slot_value != old.slot_value:
            return f"new {new.slot}"
    if new.stems == old.stems and new.negative != old.negative:
        return "negated"
    # "User stopped going to the gym" after "User goes to the gym every morning": what stopped is
    # all in the old fact, for the same person.
    stopped = new.stems - new.values
    if new.negative and not old.negative and new.people == old.people and stopped and stopped <= old.stems:
        return "stopped"
    # "User drives a Tesla now" after "User drives a BMW": the same doing, said to have changed.
    if new.changed and new.verb and new.verb == old.verb and new.negative == old.negative and new.stems != old.stems:
        return f"{new.verb} changed"
    # Another number or weekday in the same sentence, but only for the speaker's own routines and
    # counts: in other notes a number is often a name ("note 3", "room 4"), and those are two facts.
    same_but_values = new.stems - new.values == old.stems - old.values
    if new.subject in SPEAKERS and new.negative == old.negative and new.values and old.values and new.values != old.values and same_but_values:
        return "new value"
    return ""


def _target_coverage(target: FactShape, fact: FactShape) -> float:
    if not target.stems:
        return 0.0
    hits = sum(1 for t in target.stems if any(s in fact.stems for s in TARGET_SYNONYMS.get(t, (t,))))
    return hits / len(target.stems)


def _find_target(target: str, neighbours: Sequence[Neighbour]) -> Neighbour | None:
    """The current fact a retraction or resolution names: the best-covered one, if covered enough."""
    wanted = shape(target)
    best: tuple[float, Neighbour] | None = None
    for n in neighbours:
        coverage = _target_coverage(wanted, shape(n.text))
        if coverage >= TARGET_COVERAGE and (best is None or coverage > best[0]):
            best = (coverage, n)
    return best[1] if best else None
