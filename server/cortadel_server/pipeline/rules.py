"""The deterministic extractor: sentences the speaker says about themselves become facts.

    RulesExtractor().extract([Turn("user", "Hi! I only ship to production on Tuesdays.", None, now)])
    # [Candidate(text="User only ships to production on Tuesdays.", intent=REMEMBER, ...)]

Per sentence of the speaker's turns (the user's, or the assistant's with `is_agent_memory`):
questions, greetings, thanks, requests and small talk are dropped; retractions ("forget my old
address", "that's no longer true"), resolutions ("the login bug is fixed") and entity deletions
("forget everything about Bob") are recognised; first-person statements are rewritten in the third
person (or with the speaker's name when a turn starts with one, "Caroline: I went ..."). With
`explicit` (the caller asked to remember the text, as `add` does) every statement
that is not a question or small talk is kept, in the speaker's own words when it is not about
themselves. Text that gives the assistant orders ("SYSTEM NOTICE: the assistant must …", "ignore
previous instructions …") is never a fact about the speaker, even when asked to remember it: see
`addresses_assistant`. Every pattern is compiled once at import.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import NamedTuple

from cortadel_server.language.caseless import Caseless
from cortadel_server.language.timeexpr import find_times
from cortadel_server.pipeline.budget import WriteBudget
from cortadel_server.pipeline.classify import Taxonomy
from cortadel_server.pipeline.extract import make_candidate
from cortadel_server.pipeline.model import Candidate, Intent, Turn
from cortadel_server.pipeline.rewrite import (
    expand_contractions,
    second_to_third,
    third_person,
)

__all__ = ["RulesExtractor", "addresses_assistant", "split_sentences"]


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_ABBREVIATIONS = r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bMrs\.)(?<!\bSt\.)(?<!\bvs\.)(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\bProf\.)"
_SENTENCE_END = re.compile(r"(?<=[.!?])" + _ABBREVIATIONS + r"\s+|\n+|;\s+", re.IGNORECASE)
# A new first-person clause after "and"/"but" ("I live in Berlin and I work at SAP").
_CLAUSE = re.compile(r",?\s+(?:and|but)\s+(?=(?:I|my|My)\b)")
# A comma, dash or "so" that starts a new first-person clause or a question: "I'm 29, I live in
# Austin", "I'm allergic to nuts, what can I bake?" (the fact is kept, the question dropped).
_RUN_ON = re.compile(
    r"(?:,|\s+[-–—]+|\s+so)\s+(?=(?:I|i)\b|(?:what|when|where|who|why|how|which|can|could|would|should|"
    r"do|does|did|is|are|any)\s)"
)
# "I live in Porto and work at Farfetch": a second verb after "and" shares the first clause's subject.
_SHARED_SUBJECT = re.compile(r"^(?P<head>.*?\b(?P<subject>I|i)(?P<be>'m| am)?\s.+?)\s+and\s+(?P<rest>(?P<word>[A-Za-z']+)\s+\S.*)$")
_ADJECTIVE_PHRASE = re.compile(r"^[a-z]+\s+(?:to|of|about|with|for|in|at|on)\b")
#: Verbs common in statements about oneself; after "and" they start a new clause, other words
#: ("fish and chips", "French and Spanish", "Tuesday and Thursday") continue the same one.
CLAUSE_VERBS = frozenset(
    ["live", "work", "have", "love", "like", "hate", "enjoy", "prefer", "dislike", "play", "run", "swim", "walk",
     "drive", "take", "use", "speak", "teach", "study", "eat", "drink", "go", "make", "own", "need", "want",
     "visit", "cook", "read", "write", "watch", "ride", "cycle", "wear", "keep", "volunteer", "coach", "build",
     "manage", "lead", "practice", "practise", "train", "bake", "sing", "collect", "rent", "attend", "spend",
     "sleep", "wake", "commute", "deploy", "develop", "lift", "hike", "climb", "surf", "ski", "knit",
     "meditate", "grow", "raise", "care", "help", "support", "belong", "moved", "started", "joined", "left",
     "quit", "stopped", "bought", "sold", "got", "went", "became", "am", "was"]
)

_MARKERS = _rx(
    r"^(?:please|actually|well|oh|so|also|by the way|btw|yes|yeah|yep|yup|no|nope|okay|ok|hey|hi|hello|"
    r"anyway|anyways|fyi|just so you know|just to let you know|for the record|for context|and|but|"
    r"hmm+|um+|uh+|thanks|thank you|great|cool|sure|right|correct|indeed|alright|haha|lol|oh and|"
    r"that is right|exactly|true|sorry|honestly|frankly|seriously|to be honest|basically|ugh|phew|wow|correction|"
    r"understood|noted|(?:since|because)(?=\s+i\b))\b[\s,!.:;-]*"
)
_TRAILING_NOISE = _rx(r"[\s,]+(?:lol|haha+|lmao|rofl|:\)|;\)|:D)(?=[.!]*$)")
_REMEMBER = _rx(
    r"^(?:(?:can|could|would|will) you\s+)?(?:please\s+)?(?:remember|note|keep in mind|do not forget|make a note)"
    r"(?:\s+that)?[\s:,]+"
)
_AFFIRM = _rx(r"^(?:yes|yeah|yep|yup|correct|right|indeed|that is right|exactly|true)\b")
_STILL = Caseless(r"\bstill\b")

_SMALL_TALK_WORDS = frozenset(
    ["hi", "hello", "hey", "hiya", "yo", "thanks", "thank", "you", "thx", "ty", "cheers", "ok", "okay", "cool", "great", "nice", "awesome", "perfect", "sure", "bye", "goodbye", "see", "ya", "later", "good", "morning", "evening", "night", "afternoon", "day", "lol", "haha", "yes", "no", "yep", "nope", "yeah", "got", "it", "sounds", "fine", "welcome", "so", "much", "very", "a", "lot", "again", "there", "all", "everyone", "folks", "man", "dude", "mate", "appreciate", "it", "much", "well", "done", "excellent", "wow", "amazing", "alright", "right", "indeed", "exactly", "please"]
)
_SMALL_TALK = _rx(
    r"^(?:i am (?:fine|good|ok|okay|great|well|alright|doing (?:well|good|great|fine|ok|okay))|"
    r"i see|i agree|i understand|i do not know|i (?:guess|think|suppose) so|i appreciate|i am back|"
    r"i have (?:a|another|one more) question|i was wondering|i wonder|i am not sure|i hope|"
    r"i am glad|i am happy to hear|nice to (?:meet|see|hear)|how are you|i am (?:just )?curious|"
    r"i (?:would like|want) to ask|i need (?:some )?help|i am sorry|i get it|i got it|"
    r"i (?:just )?(?:said|meant|asked|mentioned|wrote)\b|i do not care|i am here|i am ready|"
    r"what is the weather|it is (?:nice|cold|hot|warm|raining|sunny))"
)
_REQUEST = _rx(
    r"^(?:(?:please\s+)?(?:can|could|would|will) you\b|i (?:need|want|would like) you to\b|"
    r"(?:please\s+)?(?:help|tell|show|give|find|write|explain|check|look|make|create|fix|summarize|"
    r"list|draft|translate|generate|search|book|send|plan)\b|let me\b|let us\b|"
    r"i (?:want|would like|need) to know\b)"
)
_QUESTION_START = _rx(
    r"^(?:what|when|where|who|whom|whose|why|how|which|can|could|would|should|do|does|did|is|are|am|"
    r"was|were|will|shall|may|have|has|any|is there|are there)\b"
)
_REACTION = _rx(r"^i (?:really |also |just |totally )?(?:love|like|hate|enjoy|appreciate|prefer) (?:it|that|this|them|those|these)\b")
_SPECULATION = Caseless(r"\b(?:might|maybe|perhaps|probably|if i|i think|i guess|i believe|i suppose|i feel like)\b|^if\b")
_FIRST_PERSON = re.compile(r"\b(?:[Ii]|[Mm]y|[Mm]e|[Mm]ine|[Mm]yself|[Ww]e|[Oo]ur|[Oo]urs|[Uu]s)\b")
# A transcript line "Caroline: I went ..." names its speaker; words like "Note:" do not.
_SPEAKER_PREFIX = re.compile(
    r"^\s*(?!(?:Note|Update|Edit|PS|FYI|Remember|Reminder|Todo|TODO|Question|Answer|Summary|Context|"
    r"Important|Warning|Tip|Re|Subject|Btw|BTW|Here|User|Assistant|Me|Also|Ok|OK|Okay)\b)"
    r"(?P<name>[A-Z][a-zA-Z.'-]*(?: [A-Z][a-zA-Z.'-]*){0,2}):\s+"
)
_CALL_ME = _rx(r"^(?:please\s+|you can\s+|just\s+)?call me\s+(?P<name>.+?)[.!]*$")
_CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
_INSTRUCTION = _rx(r"^(?:please\s+)?(?P<how>always|never|do not ever)\s+(?P<rest>\w.+)$")

_FORGET_ENTITY = _rx(
    r"^(?:please\s+)?(?:forget|delete|erase|remove|wipe)\s+(?:everything|all|anything|all memories|"
    r"all the memories|all information|whatever you know)\s+(?:you know\s+|you have\s+)?"
    r"(?:about|regarding|concerning|on|related to)\s+(?P<t>.+?)[.!]*$"
)
_RETRACT_WHAT = _rx(
    r"^(?:please\s+)?(?:forget|delete|erase|remove|disregard|drop)\s+(?:about\s+)?(?:the fact\s+)?"
    r"(?:that\s+|what i said about\s+)?(?P<t>.+?)[.!]*$"
)
_RETRACT_THAT = _rx(
    r"^(?:(?:that|this|it)\s+(?:is|was)\s+(?:no longer|not|not really)\s+(?:true|correct|right|accurate|"
    r"the case|valid)(?:\s+any\s?more)?|(?:that|this) is (?:wrong|outdated)|scratch that|ignore that|"
    r"never mind that)\b"
)
_RETRACT_ABOUT = _rx(r"^(?:i was wrong about|it is not true that|that is not true that)\s+(?P<t>.+?)[.!]*$")
_RESOLVE_PASSIVE = _rx(
    r"^(?P<t>.+?)\s+(?:is|has been|was|got|are|have been|were)\s+(?:now\s+|finally\s+|already\s+|all\s+)?"
    r"(?:resolved|fixed|closed|done|finished|completed|sorted(?: out)?|solved|merged|shipped|repaired|patched|"
    r"working again|running again|back up|back online|up again)\b"
)
_RESOLVE_ACTIVE = _rx(
    r"^i\s+(?:have\s+)?(?:finally\s+|just\s+|already\s+)?(?:fixed|resolved|closed|finished|completed|solved)"
    r"\s+(?P<t>.+?)[.!]*$"
)
# Orders to the assistant dressed up as data: a system/admin label, "ignore previous instructions",
# "the assistant must ...". Prompt-injection text, never a fact about the speaker.
_TO_ASSISTANT = Caseless(
    r"^\W*(?:system|admin(?:istrator)?|developer|operator)(?:\s+(?:notice|message|prompt|instructions?|"
    r"override|directive|note|alert))?\s*\]?\s*[:>-]|"
    r"(?:^|[:;,]\s)\W*(?:(?:please|now|and|so|first|also|then),?\s+)*(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the\s+|your\s+|my\s+)?"
    r"(?:previous|prior|above|earlier|preceding|existing|original|system)\s+"
    r"(?:instructions|prompts?|rules|messages|directions|guidelines)\b|"
    r"(?:^|[:;,]\s)\W*(?:from now on,?\s+)?(?:the\s+)?(?:assistant|ai|ai assistant|model|chatbot|bot|llm)\s+"
    r"(?:must|shall|has to|is required to|is instructed to|is not allowed to|may not|must not)\b|"
    r"\bnew instructions?\s*:"
)
_PRONOUN_TARGET = _rx(r"^(?:it|that|this|they)$")
# "…, not Lisbon" / "… not Spotify" closing a statement: a correction naming the value it replaces
# ("I do not eat meat" is a negation: the word before "not" is an auxiliary).
_CORRECTION_TAIL = _rx(
    r"(?<!\bdo)(?<!\bdoes)(?<!\bdid)(?<!\bam)(?<!\bis)(?<!\bare)(?<!\bwas)(?<!\bwere)(?<!\bhave)(?<!\bhas)"
    r"(?<!\bhad)(?<!\bcan)(?<!\bcould)(?<!\bwill)(?<!\bwould)(?<!\bshould)(?<!\bmust)"
    r"(?:\s*,\s*|\s+)(?:and\s+)?not\s+(?P<old>[\w'.-]+(?:\s+[\w'.-]+){0,3}?)[.!]*$"
)
# A switch names what it ends: "switched from VS Code to Neovim", "relocated to Madrid from Lisbon";
# "switched to day shifts" ends the other kind of the same thing (its head noun).
_SWITCH = r"(?:switch|switched|moved|migrated|changed|converted|relocated|transferred|upgraded|downgraded)"
_SWITCH_FROM = _rx(_SWITCH + r"\b.*?\bfrom\s+(?P<old>.+?)\s+to\b|" + _SWITCH + r"\b.*?\bto\s+.+?\s+from\s+(?P<old2>[^,.!]+)")
_SWITCH_TO = _rx(r"\b(?:switched|changed)\s+to\s+(?:the\s+|a\s+|an\s+)?(?:[\w'-]+\s+)*?(?P<head>[\w'-]+?)s?[.!]*$")
_EXISTENTIAL = _rx(r"^there\s+(?:is|are|was|were)\s+\S")
_OLD = _rx(r"\b(?:old|previous|former|earlier|outdated)\s+")


def split_sentences(text: str) -> list[str]:
    """Sentences and first-person clauses of `text`, trimmed, empty ones dropped."""
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(_CODE_BLOCK.sub("\n", text)):
        sentence = _LIST_MARK.sub("", sentence)
        parts = _CLAUSE.split(sentence.strip())
        merged: list[str] = []
        for part in parts:
            if merged and len(merged[-1].split()) < 3:
                merged[-1] = f"{merged[-1]} and {part}"  # "My wife and I ..." is one subject
            else:
                merged.append(part)
        for part in merged:
            pieces.extend(p.strip() for clause in _run_on_clauses(part) for p in _shared_subject_clauses(clause) if p.strip())
    return pieces


def _run_on_clauses(sentence: str) -> list[str]:
    """A run-on turn cut where a comma, dash or "so" starts a new clause; a lead-in of one or two
    words ("Yes, I ...", "Actually no, I ...") stays with its clause, so re-confirmations keep their "yes"."""
    clauses: list[str] = []
    for part in _RUN_ON.split(sentence):
        if clauses and len(clauses[-1].split()) < 3 and not _FIRST_PERSON.search(clauses[-1]):
            clauses[-1] = f"{clauses[-1]}, {part}"
        else:
            clauses.append(part)
    return clauses


def _shared_subject_clauses(clause: str) -> list[str]:
    """ "I live in Porto and work at Farfetch" → "I live in Porto", "I work at Farfetch";
    "I'm vegan and allergic to soy" → "I'm vegan", "I am allergic to soy". Left alone when what
    follows "and" is not a verb (or, after "I am", an adjective with its preposition)."""
    m = _SHARED_SUBJECT.match(clause)
    if m is None:
        return [clause]
    word = m["word"].lower()
    if word in CLAUSE_VERBS or word in ("cannot", "can't", "do", "don't", "never", "also", "really"):
        second = f"{m['subject']} {m['rest']}"
    elif m["be"] and _ADJECTIVE_PHRASE.match(m["rest"]):
        second = f"{m['subject']} am {m['rest']}"
    else:
        return [clause]
    return [m["head"], *_shared_subject_clauses(second)]


_SENTENCE_BREAK = re.compile(r"[.!?]\s+\S")


def addresses_assistant(text: str) -> bool:
    """True when a sentence of `text` gives the assistant orders rather than stating something."""
    return any(_TO_ASSISTANT.found_in(sentence) for sentence in split_sentences(text))


def is_compound(text: str) -> bool:
    """A question, or more than one sentence: raw text rather than one statement."""
    stripped = text.strip()
    return "?" in stripped or bool(_SENTENCE_BREAK.search(stripped))


class RulesExtractor:
    """The default extractor: no model, no network, the same output for the same input."""

    def __init__(self, taxonomy: Taxonomy | None = None) -> None:
        self.taxonomy = taxonomy or Taxonomy.from_setting(None)

    def extract(
        self, turns: Sequence[Turn], *, is_agent_memory: bool = False, explicit: bool = False, budget: WriteBudget | None = None
    ) -> list[Candidate]:
        speaker = "assistant" if is_agent_memory else "user"
        subject = "Assistant" if is_agent_memory else "User"
        candidates: list[Candidate] = []
        previous: str | None = None  # the last statement made, for "that's no longer true"
        for turn in turns:
            retracted_here: Candidate | None = None  # "that's not true any more, I stopped …": one correction
            role = turn.role.strip().lower()
            named = _SPEAKER_PREFIX.match(turn.content)
            if named and not _FIRST_PERSON.search(turn.content, named.end()):
                named = None  # "Deploy: run tests, then push." is a label that carries the meaning, not a speaker
            content, who = (turn.content[named.end():], named["name"]) if named else (turn.content, subject)
            for sentence in split_sentences(content):
                if budget is not None:
                    budget.check()
                if role != speaker:
                    if role != "system":
                        previous = _strip_tail_question(second_to_third(sentence, subject))
                    continue
                candidate = self._sentence(sentence, turn, who, previous, explicit)
                if candidate is not None and retracted_here is not None and candidate.intent is Intent.REMEMBER:
                    candidates.remove(retracted_here)
                    candidate = dataclasses.replace(candidate, target=retracted_here.target)
                if candidate is not None:
                    retracted_here = candidate if candidate.intent is Intent.RETRACT and candidate.target == previous else None
                    candidates.append(candidate)
                    previous = candidate.text if candidate.intent is Intent.REMEMBER else previous
        return candidates

    def verbatim(self, text: str, turn: Turn, *, labels: bool = True) -> Candidate:
        """`text` kept exactly as written, with only its intent recognised (for `infer: false`).

        Only a single statement can be a command ("Forget my old address."): a question or a text
        of several sentences (a raw chat turn) is stored as it is, with no intent read into it.
        `labels`: see `make_candidate`."""
        if is_compound(text):
            return make_candidate(text, turn, self.taxonomy, labels=labels)
        found = self._read(text, turn, "User", None, True, rewrite=False)
        if found is None or found.intent is Intent.REMEMBER:
            return make_candidate(text, turn, self.taxonomy, reconfirm=found.reconfirm if found else False, labels=labels)
        return make_candidate(text, turn, self.taxonomy, intent=found.intent, target=found.target, labels=labels)

    def _sentence(self, raw: str, turn: Turn, subject: str, previous: str | None, explicit: bool) -> Candidate | None:
        found = self._read(raw, turn, subject, previous, explicit)
        if found is None:
            return None
        return make_candidate(
            found.text, turn, self.taxonomy, intent=found.intent, target=found.target, reconfirm=found.reconfirm
        )

    def _read(
        self, raw: str, turn: Turn, subject: str, previous: str | None, explicit: bool, *, rewrite: bool = True
    ) -> _Reading | None:
        """What one sentence states, and how (None: nothing to keep); a candidate is made of it
        only when it is kept as read. Without `rewrite` (`verbatim` keeps the text as written) the
        reading's text is "" and a statement's target None: the rewrites are not made."""
        text = expanded = expand_contractions(raw.strip())
        reconfirm = bool(_AFFIRM.match(text))
        remembered_here = False  # "remember that ...": the speaker asked to keep this sentence
        while True:
            stripped = _MARKERS.sub("", text, count=1).strip()
            remembered = _REMEMBER.sub("", stripped, count=1).strip()
            remembered_here = remembered_here or remembered != stripped
            if remembered == text:
                break
            text = remembered
        explicit = explicit or remembered_here
        if _TO_ASSISTANT.found_in(text):
            return None
        text = _TRAILING_NOISE.sub("", text)
        if remembered_here and text.endswith("?"):
            text = text.rstrip("?").strip()  # "can you remember that ...?" asks to keep a statement
        if not text or _is_small_talk(text):
            return None
        reconfirm = reconfirm or _STILL.found_in(text)

        def make(
            fact: Callable[[], str], intent: Intent = Intent.REMEMBER, target: str | None = None, reconfirm: bool = False
        ) -> _Reading:
            return _Reading(_sentence_case(fact()) if rewrite else "", intent, target, reconfirm)

        def as_third_person() -> str:
            return third_person(text, subject)

        if m := _FORGET_ENTITY.match(text):
            return make(as_third_person, intent=Intent.FORGET_ENTITY, target=_clean_target(m["t"], subject, turn.at))
        if m := _RETRACT_ABOUT.match(text):
            return make(as_third_person, intent=Intent.RETRACT, target=third_person(m["t"], subject))
        if _RETRACT_THAT.match(text):
            if previous is None:
                return None
            return make(as_third_person, intent=Intent.RETRACT, target=previous)
        if m := _RETRACT_WHAT.match(text):
            return make(as_third_person, intent=Intent.RETRACT, target=_clean_target(m["t"], subject, turn.at))
        if m := _RESOLVE_ACTIVE.match(text) or _RESOLVE_PASSIVE.match(text):
            target = m["t"]
            if _PRONOUN_TARGET.match(target):
                if previous is None:
                    return None
                target = previous
            return make(as_third_person, intent=Intent.RESOLVE, target=_clean_target(target, subject, turn.at))

        if text.endswith("?") or (_QUESTION_START.match(text) and not explicit):
            return None
        if m := _CALL_ME.match(text):
            name = m["name"]
            return make(lambda: f"{subject} goes by {_end(name)}")
        if text.endswith(":"):
            return None  # a heading ("Here is my setup:"), the facts follow it
        if m := _INSTRUCTION.match(text):
            how, rest = "never" if m["how"].lower() != "always" else "always", m["rest"]
            return make(lambda: f"{subject} prefers to {how} {_end(rest)}")
        if not explicit and (_REQUEST.match(text) or _REACTION.match(text) or _SPECULATION.found_in(text)):
            return None
        if _FIRST_PERSON.search(text) or _EXISTENTIAL.match(text):
            if not rewrite:
                return _Reading("", Intent.REMEMBER, None, reconfirm)
            stated, replaced = _replaced(text)
            return make(lambda: third_person(_end(stated), subject), target=replaced, reconfirm=reconfirm)
        if not explicit:
            return None
        # Not about the speaker, but asked to be kept: in the speaker's own words.
        if not rewrite:
            return _Reading("", Intent.REMEMBER, None, reconfirm)
        as_said = raw.strip() if text == expanded else text[:1].upper() + text[1:]
        return _Reading(as_said, Intent.REMEMBER, None, reconfirm)


class _Reading(NamedTuple):
    """One sentence as the rules read it: the fact's text, what is to be done with it, and about what."""

    text: str
    intent: Intent
    target: str | None
    reconfirm: bool


def _replaced(text: str) -> tuple[str, str | None]:
    """The statement without a correcting "…, not X" tail, and what it says is replaced (X, the
    "from" of a switch, the kind switched away from), or None."""
    # Each pattern needs a word that most sentences lack, a substring test away: the searches cost
    # 4 to 9 µs a sentence. IGNORECASE folds no other character onto "n", "o", "t", "f", "r", "m".
    lowered = text.lower()
    if "not" in lowered and (m := _CORRECTION_TAIL.search(text)):
        return text[: m.start()], m["old"].strip(" .!")
    if "from" in lowered and (m := _SWITCH_FROM.search(text)):
        return text, (m["old"] or m["old2"]).strip()
    if "to" in lowered and (m := _SWITCH_TO.search(text)):
        return text, m["head"]
    return text, None


def _is_small_talk(text: str) -> bool:
    words = re.findall(r"[a-z']+", text.lower())
    return not words or all(w in _SMALL_TALK_WORDS for w in words) or bool(_SMALL_TALK.match(text))


def _clean_target(target: str, subject: str, said_at: datetime) -> str:
    """The thing a retraction or resolution is about, without "the"/"my old"/time decoration."""
    for span in find_times(target, said_at):
        target = target.replace(span.text, " ")
    target = _OLD.sub("", third_person(" ".join(target.split()).strip(" .!"), subject))
    return re.sub(r"^(?:the|a|an)\s+", "", target, flags=re.IGNORECASE).strip()


def _strip_tail_question(text: str) -> str:
    return re.sub(r",?\s*(?:right|correct|is that right|is that correct|yes|no)?\s*\?$", ".", text, flags=re.IGNORECASE)


def _end(text: str) -> str:
    text = text.strip().rstrip("!.,;: ")
    return text + "."


def _sentence_case(text: str) -> str:
    text = text.strip()
    text = text[:1].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."
