"""Cheap labels for a fact: its memory type, its categories and a short gist.

    taxonomy = Taxonomy.from_setting(settings.categories)   # None → the built-in one
    taxonomy.categorize("User only ships to production on Tuesdays.")   # ("work", "schedule")
    memory_type("User only ships to production on Tuesdays.")   # MemoryType.PROCEDURAL
    gist("User ...")   # at most 100 characters
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from cortadel_server.language.caseless import Caseless
from cortadel_server.language.timeexpr import TimeSpan, find_time
from cortadel_server.storage.base import MemoryType
from cortadel_server.text_caches import holds_text

__all__ = ["DEFAULT_CATEGORIES", "GIST_LIMIT", "Taxonomy", "gist", "memory_type"]

GIST_LIMIT = 100

# Category → words that signal it; each also matches its plain inflections (likes, liked, liking).
DEFAULT_CATEGORIES: Mapping[str, tuple[str, ...]] = {
    "personal": ("name", "born", "birthday", "age", "years old", "live", "lives", "moved", "home",
                 "address", "hometown", "grew up", "married", "hobby", "hobbies"),
    "preferences": ("like", "love", "enjoy", "prefer", "favorite", "favourite", "hate", "dislike",
                    "can't stand", "fan of", "rather", "always use", "never use"),
    "work": ("work", "job", "career", "company", "employer", "manager", "boss", "colleague",
             "coworker", "team", "office", "project", "client", "customer", "meeting", "deploy", "deployment",
             "ship", "shipping", "release", "production", "sprint", "standup", "salary", "promotion", "bug",
             "ticket", "repo", "code", "coding", "engineer", "developer", "interview", "hired"),
    "health": ("health", "allergy", "allergic", "allergies", "doctor", "dentist", "hospital", "medication", "medicine", "diet", "vegetarian",
               "vegan", "gluten", "sick", "ill", "injury", "injured", "exercise", "gym", "run", "running", "sleep",
               "therapy", "pregnant", "blood", "diabetes", "diabetic", "asthma", "weight", "fitness", "yoga"),
    "travel": ("travel", "travelled", "trip", "flight", "fly", "flew", "visit", "vacation", "holiday", "hotel",
               "went to", "airport", "abroad", "passport", "tour"),
    "relationships": ("wife", "husband", "partner", "friend", "brother", "sister", "son",
                      "daughter", "mother", "father", "mom", "mum", "dad", "parent", "kid",
                      "child", "children", "family", "girlfriend", "boyfriend", "cousin", "dating", "married"),
    "food": ("food", "eat", "ate", "drink", "coffee", "tea", "cook", "restaurant", "dinner",
             "lunch", "breakfast", "pizza", "sushi", "wine", "beer", "meal", "vegetarian", "vegan",
             "spicy", "recipe", "chocolate"),
    "finance": ("money", "budget", "bank", "salary", "invest", "investment", "stock", "loan", "mortgage", "rent",
                "tax", "savings", "debt", "price", "paid", "pay", "cost", "$", "€", "euro", "dollar"),
    "schedule": ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                 "weekend", "morning", "evening", "daily", "weekly", "every", "appointment",
                 "deadline", "calendar", "schedule", "o'clock", "tomorrow", "tonight"),
    "tech": ("python", "javascript", "typescript", "rust", "golang", "java", "linux", "macos",
             "windows", "docker", "kubernetes", "database", "postgres", "sqlite", "api", "server",
             "laptop", "editor", "vim", "emacs", "vscode", "git", "npm", "pnpm", "tabs", "spaces",
             "framework", "library", "cloud", "aws", "code", "coding", "program", "programming", "software", "app"),
    "goals": ("goal", "plan", "planning", "want to", "wants to", "hope", "dream", "aim", "learn", "training for",
              "marathon", "resolution", "someday", "would like to", "trying to", "saving for"),
}


_INFLECTION = r"(?:s|es|ed|d|ing|er|ers)?\b"


def _stem_source(stems: tuple[str, ...]) -> str:
    parts = [re.escape(stem) + (_INFLECTION if stem[-1].isalnum() else "") for stem in stems]
    return r"(?<![\w$€])(?:" + "|".join(sorted(parts, key=len, reverse=True)) + r")"


@dataclass(frozen=True)
class Taxonomy:
    """An ordered set of category names, each with a keyword pattern that ignores case."""

    patterns: Mapping[str, Caseless]

    @classmethod
    def from_setting(cls, raw: str | None) -> Taxonomy:
        """The built-in taxonomy, or the comma-separated names a deployment configured.

        A configured name that is also a built-in category keeps the built-in keywords;
        any other name is matched by its own words.
        """
        if not raw or not raw.strip():
            names = list(DEFAULT_CATEGORIES)
        else:
            names = list(dict.fromkeys(n.strip().lower() for n in raw.split(",") if n.strip()))
        return cls({name: Caseless(_stem_source(DEFAULT_CATEGORIES.get(name, _own_stems(name)))) for name in names})

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.patterns)

    def categorize(self, text: str) -> tuple[str, ...]:
        """Every category whose keywords occur in `text`, in taxonomy order."""
        return tuple(name for name, pattern in self.patterns.items() if pattern.found_in(text))

    def keep(self, names: list[str] | tuple[str, ...]) -> tuple[str, ...]:
        """Only the given names that belong to this taxonomy (for labels an LLM proposed)."""
        wanted = {n.strip().lower() for n in names}
        return tuple(name for name in self.patterns if name in wanted)


def _own_stems(name: str) -> tuple[str, ...]:
    words = [w for w in re.split(r"[\s_/-]+", name) if w]
    return tuple(w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words) or (name,)


_PROCEDURAL = Caseless(
    r"\b(?:always|never|only|whenever|every time|before|after|make sure|prefers to|wants to always|"
    r"wants to never|rule|workflow|process|steps?|how to|instead of|by default)\b"
)
_ACTION_VERB = Caseless(
    r"\b(?:ship|deploy|release|use|run|commit|push|merge|review|test|write|format|answer|reply|"
    r"respond|call|name|indent|build|install|back up|book|pay|format|send|check|lint|document)(?:s|es|ed|ing)?\b"
)
_PAST_EVENT = re.compile(
    r"\b(?:went|visited|met|moved|bought|sold|started|finished|graduated|married|got|had|did|saw|"
    r"ran|flew|traveled|travelled|attended|won|lost|broke|adopted|joined|left|quit|was|were|"
    r"\w+ed)\b",
    re.IGNORECASE,
)


def memory_type(text: str, said_at: datetime | None = None) -> MemoryType:
    """Procedural for rules and routines of doing things, episodic for dated or past events,
    semantic for everything else (stable facts and preferences)."""
    if _PROCEDURAL.found_in(text) and _ACTION_VERB.found_in(text):
        return MemoryType.PROCEDURAL
    if said_at is not None:
        span = first_time(text, said_at)
        if span is not None and not span.text.lower().startswith("since"):
            return MemoryType.EPISODIC
    subject_verb = re.match(r"^\S+(?:\s+(?:\w+ly|also|just|finally|recently|already))*\s+(\w+)", text)
    if subject_verb and _PAST_EVENT.fullmatch(subject_verb.group(1)) and subject_verb.group(1).lower() not in ("used",):
        return MemoryType.EPISODIC
    return MemoryType.SEMANTIC


@holds_text
@functools.lru_cache(maxsize=1024)
def first_time(text: str, said_at: datetime) -> TimeSpan | None:
    """`find_time`, remembered: a candidate's valid time and its memory type ask the same question."""
    return find_time(text, said_at)


def gist(text: str) -> str:
    """A headline of at most 100 characters: the text, shortened at a word boundary if needed."""
    flat = " ".join(text.split()).rstrip(".")
    if len(flat) <= GIST_LIMIT:
        return flat
    cut = flat[: GIST_LIMIT - 1]
    if " " in cut[GIST_LIMIT // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"
