"""Caseless patterns find what the same pattern with IGNORECASE finds, in any text."""

import re

import pytest

from cortadel_server.language.caseless import Caseless

FAREWELL = r"\b(?:bye|goodbye|talk (?:to you )?(?:soon|later)|(?<!to )see (?:you|ya)\b|take care)\b"
TEXTS = [
    "OK, BYE for now",
    "Talk To You Later!",
    "I want to see you soon",  # the lookbehind: not a farewell
    "See ya",
    "byebye",  # no word boundary inside
    "Take care, Zoë",  # not ASCII: searched with the flag
    "TAKE CARE, ZOË",
    "Nothing to see here",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_found_in_agrees_with_ignorecase(text: str) -> None:
    assert Caseless(FAREWELL).found_in(text) is bool(re.search(FAREWELL, text, re.IGNORECASE))


def test_found_in_answers() -> None:
    farewell = Caseless(FAREWELL)
    assert [farewell.found_in(t) for t in TEXTS] == [True, True, False, True, False, True, True, False, False]


def test_non_ascii_text_is_searched_with_the_flag() -> None:
    # IGNORECASE folds the Kelvin sign onto "k": lower() would not, so such text takes the flag.
    assert Caseless(r"\bok\b").found_in("O\u212a") is True
    assert Caseless(r"\bok\b").found_in("OK") is True
    assert Caseless(r"\bok\b").found_in("oak") is False


@pytest.mark.parametrize("pattern", [r"\b[A-Z]\w+", r"\bBye\b", r"(?P<Name>x)", "caf\u00e9"])
def test_a_pattern_not_in_lower_case_ascii_is_refused(pattern: str) -> None:
    with pytest.raises(ValueError, match="lower-case ASCII"):
        Caseless(pattern)


def test_escapes_are_not_letters() -> None:
    # \W, \S, \B, \D are escapes, not upper-case letters of the pattern
    assert Caseless(r"^\W*system\S*\s*:").found_in("  SYSTEM: reboot") is True
    assert Caseless(r"\Bye\b").found_in("YE") is False
    assert Caseless(r"\Bye\b").found_in("GOODBYE") is True
