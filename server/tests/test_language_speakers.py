"""Speaker labels of transcript lines and the person a question asks about (language/speakers.py)."""

from __future__ import annotations

import pytest

from cortadel_server.language.speakers import asked_about, said_by, speaker_of, without_speaker


@pytest.mark.parametrize(
    ("text", "speaker", "words"),
    [
        ("Caroline: I went to the support group.", "Caroline", "I went to the support group."),
        ("  Dr. Seuss: One fish, two fish.", "Dr. Seuss", "One fish, two fish."),
        ("Mary Ann: Hi!", "Mary Ann", "Hi!"),
        ("User prefers tea: green, no sugar.", None, "User prefers tea: green, no sugar."),
        ("caroline: lower case is not a label", None, "caroline: lower case is not a label"),
        ("Note:no space after the colon", None, "Note:no space after the colon"),
    ],
)
def test_the_speaker_label_and_the_words_after_it(text: str, speaker: str | None, words: str) -> None:
    assert speaker_of(text) == speaker
    assert without_speaker(text) == words


@pytest.mark.parametrize(
    ("query", "person"),
    [
        ("What did Caroline research?", "Caroline"),
        ("Would Melanie's kids like the beach?", "Melanie"),
        ("How do Jon and Gina both like to destress?", "Jon"),
        ("In what year did John join the army?", "John"),
        ("According to Maria, what helps?", "Maria"),
        ("what did the user buy?", None),
        ("Where did I park?", None),
    ],
)
def test_the_person_a_question_asks_about(query: str, person: str | None) -> None:
    assert asked_about(query) == person


def test_said_by_matches_the_label_or_its_first_name() -> None:
    assert said_by("Caroline: I paint.", "Caroline")
    assert said_by("Mary Ann: Hi!", "Mary")
    assert not said_by("Melanie: Thanks, Caroline!", "Caroline")
    assert not said_by("Caroline loves painting.", "Caroline")
