"""Who said a transcript line, and whom a question asks about.

    speaker_of("Caroline: I went to the support group.")   # "Caroline"
    without_speaker("Caroline: I went to the support group.")   # "I went to the support group."
    asked_about("What did Caroline research?")   # "Caroline"
    asked_about("Would Melanie's kids like it?")   # "Melanie"

A transcript stores each line as "Speaker: words"; a question about a person is usually answered
by what that person said, not by the other side's lines that address them by name.
"""

from __future__ import annotations

import re

#: a transcript's "Speaker: " before the words (one or two capitalised words)
SPEAKER_LABEL = re.compile(r"^([A-Z][\w.'-]*(?: [A-Z][\w.'-]*)?): ")

_CAPITALISED = re.compile(r"\b([A-Z][a-z][\w-]*)(?:['’]s?)?")

#: capitalised words that start a question or a clause rather than name someone
_NOT_NAMES = frozenset({
    "what", "when", "where", "who", "whom", "whose", "why", "how", "which", "did", "does", "do", "is", "are",
    "was", "were", "has", "have", "had", "would", "could", "can", "will", "should", "shall", "may", "might",
    "in", "on", "at", "after", "before", "during", "since", "according", "if", "considering", "based", "given",
    "the", "a", "an", "and", "or", "but", "for", "from", "to", "of", "with", "about", "by", "as", "tell", "list",
    "name", "describe", "please", "between", "besides", "apart", "other", "both", "all", "any", "some", "not",
})


def speaker_of(text: str) -> str | None:
    """The speaker label a transcript line starts with, or None."""
    match = SPEAKER_LABEL.match(text.lstrip())
    return match.group(1) if match else None


def without_speaker(text: str) -> str:
    """The words of a transcript line, its "Speaker: " label left out."""
    return SPEAKER_LABEL.sub("", text.lstrip(), count=1)


def asked_about(query: str) -> str | None:
    """The first name a question mentions (its possessive dropped), or None when it names no one."""
    for match in _CAPITALISED.finditer(query):
        if match.group(1).lower() not in _NOT_NAMES:
            return match.group(1)
    return None


def said_by(text: str, person: str) -> bool:
    """Whether a transcript line is ``person``'s own (its label is the name, or starts with it)."""
    speaker = speaker_of(text)
    return speaker is not None and (speaker == person or speaker.split(" ", 1)[0] == person)
