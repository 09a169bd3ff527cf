"""Rewrite a first-person statement into a third-person fact about its speaker.

    third_person("I only ship to production on Tuesdays.", "User")
    # "User only ships to production on Tuesdays."
    third_person("I don't like coffee anymore.", "User")
    # "User does not like coffee anymore."
    second_to_third("You work at Google, right?", "User")   # for an assistant's question
    # "User works at Google, right?"

Everything else in the sentence (names, numbers, dates) is left exactly as written.
"""

from __future__ import annotations

import re

from cortadel_server.language.caseless import Caseless

__all__ = ["conjugate", "expand_contractions", "second_to_third", "third_person"]

_CONTRACTIONS = (
    (r"\b(I|you|we|they)'m\b", r"\1 am"),
    (r"\b(I|you|we|they)'ve\b", r"\1 have"),
    (r"\b(I|you|we|they)'ll\b", r"\1 will"),
    (r"\b(I|you|we|they)'d\b", r"\1 would"),
    (r"\b(you|we|they)'re\b", r"\1 are"),
    (r"\b(that|it|this|there|here|what|who|where|how|he|she)'s\b", r"\1 is"),
    (r"\blet's\b", "let us"),
    (r"\bcan't\b", "cannot"),
    (r"\bwon't\b", "will not"),
    (r"\bain't\b", "is not"),
    (r"\b(do|does|did|is|are|was|were|have|has|had|should|would|could|must|need)n't\b", r"\1 not"),
    # Chat spellings without the apostrophe; only those that are never an English word of their own.
    (r"\bim\b", "I am"),
    (r"\bive\b", "I have"),
    (r"\b(do|does|did|is|are|was|were|have|has|had|should|would|could)nt\b", r"\1 not"),
    (r"\bcant\b", "cannot"),
)
_CONTRACTION_RULES = tuple((re.compile(p, re.IGNORECASE), r) for p, r in _CONTRACTIONS)
# Every rule at once, to skip them all for a text none of them matches (a possessive "Ana's" too,
# which ran all fifteen); without an apostrophe, only the spellings without one can match. That
# check cost 6.5 µs a text of the bench's corpus, and 3.0 µs so.
_MAY_CONTRACT = Caseless("|".join(pattern for pattern, _ in _CONTRACTIONS).lower())
_MAY_CONTRACT_BARE = Caseless("|".join(pattern for pattern, _ in _CONTRACTIONS if "'" not in pattern).lower())

ADVERBS = frozenset(
    ["only", "always", "never", "usually", "really", "also", "still", "just", "often", "sometimes", "mostly", "now", "currently", "rarely", "generally", "typically", "actually", "mainly", "definitely", "absolutely", "primarily", "recently", "finally", "already", "even", "normally", "seldom", "occasionally", "frequently", "regularly", "basically", "honestly", "literally", "totally", "constantly"]
)
MODALS = frozenset(["can", "could", "will", "would", "should", "may", "might", "must", "shall", "cannot"])
IRREGULAR_PAST = frozenset(
    ["was", "were", "had", "did", "went", "got", "made", "took", "came", "saw", "met", "bought", "left", "began", "became", "ate", "drank", "drove", "flew", "found", "gave", "knew", "lost", "paid", "ran", "said", "sold", "sent", "spent", "told", "thought", "wrote", "broke", "built", "caught", "chose", "fell", "felt", "fought", "forgot", "grew", "heard", "held", "hurt", "kept", "led", "lent", "meant", "quit", "rode", "rang", "rose", "sang", "sat", "shot", "shut", "slept", "spoke", "stood", "stole", "swam", "taught", "threw", "understood", "woke", "won", "wore", "brought", "sought", "sold", "dealt"]
)
_IRREGULAR_PRESENT = {"be": "is", "am": "is", "are": "is", "were": "was", "have": "has", "do": "does", "go": "goes"}
_SPACES = re.compile(r"(\s+)")
_WORDY = re.compile(r"^([\"'(\[]*)([A-Za-z]+(?:['-][A-Za-z]+)*)([.,!?;:)\]\"']*)$")
_GROUP_WORK = Caseless(
    r"\b(?:ship|deploy|release|code|repo|team|sprint|customer|client|production|office|company|"
    r"standup|meeting|product|project|stack|service|build|ci)\w*\b"
)
_OBJECT_FORMS = {"me": "{s}", "myself": "{s}", "my": "{s}'s", "mine": "{s}'s", "our": "{s}'s", "ours": "{s}'s", "us": "{s}"}
#: Once the subject has been named in the sentence, these read better as pronouns
#: ("User keeps their bonsai", not "User keeps User's bonsai").
_ANAPHORA = {"my": "their", "our": "their", "mine": "theirs", "ours": "theirs", "myself": "themselves"}


def expand_contractions(text: str) -> str:
    """"I'm" → "I am", "don't" → "do not", ... (straight and curly apostrophes)."""
    text = text.replace("’", "'")
    if not (_MAY_CONTRACT if "'" in text else _MAY_CONTRACT_BARE).found_in(text):
        return text
    for pattern, replacement in _CONTRACTION_RULES:
        text = pattern.sub(replacement, text)
    return text


def conjugate(verb: str) -> str:
    """The third-person singular present of a base-form verb ("ship" → "ships")."""
    lower = verb.lower()
    if lower in _IRREGULAR_PRESENT:
        third = _IRREGULAR_PRESENT[lower]
    elif re.search(r"(?:s|sh|ch|x|z|o)$", lower):
        third = lower + "es"
    elif re.search(r"[^aeiou]y$", lower):
        third = lower[:-1] + "ies"
    else:
        third = lower + "s"
    if verb.isupper() and len(verb) > 1:
        return third.upper()
    return third.capitalize() if verb[:1].isupper() else third


def third_person(sentence: str, subject: str) -> str:
    """Replace the speaker's "I/me/my/we/our" with `subject` and make the verbs agree.

    "we" becomes "<subject> and their team" in work talk, "... and their family" otherwise.
    """
    chunks, words = _split(expand_contractions(sentence))
    named = False
    for i, word in enumerate(words):
        lower = word.lower()
        if word in ("I", "i"):
            words[i] = subject
            _agree(words, i)
            named = True
        elif lower == "we":
            words[i] = f"{subject} and their {'team' if _GROUP_WORK.found_in(sentence) else 'family'}"
            named = True
        elif named and lower in _ANAPHORA:
            words[i] = _ANAPHORA[lower]
        elif lower in _OBJECT_FORMS:
            words[i] = _OBJECT_FORMS[lower].format(s=subject)
            named = True
    return _join(chunks, words)


def second_to_third(sentence: str, subject: str) -> str:
    """Replace "you/your" (the listener) with `subject`, for statements made *to* the speaker."""
    chunks, words = _split(expand_contractions(sentence))
    named = False
    for i, word in enumerate(words):
        lower = word.lower()
        if lower in ("you", "yourself"):
            words[i] = "themselves" if named and lower == "yourself" else subject
            if lower == "you":
                _agree(words, i)
            named = True
        elif lower in ("your", "yours"):
            words[i] = ("their" if lower == "your" else "theirs") if named else f"{subject}'s"
            named = True
    return _join(chunks, words)


def _split(text: str) -> tuple[list[tuple[str, str, str] | str], list[str]]:
    """The text as whitespace-separated chunks, and the plain words among them.

    A chunk that is a word with some punctuation around it ("(my", "Tuesdays.") becomes
    (prefix, word, suffix); anything else ("9:30", "jane@example.com", "+49") stays a string and
    is never touched.
    """
    chunks: list[tuple[str, str, str] | str] = []
    words: list[str] = []
    for chunk in _SPACES.split(text):
        m = _WORDY.match(chunk)
        if m:
            chunks.append((m[1], m[2], m[3]))
            words.append(m[2])
        else:
            chunks.append(chunk)
    return chunks, words


def _join(chunks: list[tuple[str, str, str] | str], words: list[str]) -> str:
    replaced = iter(words)
    text = "".join(chunk if isinstance(chunk, str) else chunk[0] + next(replaced) + chunk[2] for chunk in chunks)
    return text[:1].upper() + text[1:]


def _is_base_verb(word: str) -> bool:
    lower = word.lower()
    if lower in MODALS or lower in IRREGULAR_PAST or lower in ADVERBS or lower == "not":
        return lower == "were"
    return word.isalpha() and not lower.endswith("ed")


def _agree(words: list[str], subject_at: int) -> None:
    """Conjugate the verb after the subject at `subject_at`, skipping adverbs, in place.

    A compound subject ("my wife and I go") keeps its plural verb.
    """
    if subject_at > 0 and words[subject_at - 1].lower() in ("and", "or"):
        return
    i = subject_at + 1
    while i < len(words):
        lower = words[i].lower()
        if lower == "no" and i + 1 < len(words) and words[i + 1].lower() == "longer":
            i += 2
        elif lower in ADVERBS or (lower.endswith("ly") and lower not in ("fly", "reply", "apply", "rely")):
            i += 1
        else:
            break
    if i < len(words) and _is_base_verb(words[i]):
        words[i] = conjugate(words[i])
