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


@pytest.mark.parametrize("pattern", [r"\b[A-Z]\w+", r"\bBye\b", r"(?P<Name>x)"])
def test_a_pattern_not_in_lower_case_is_refused(pattern: str) -> None:
    with pytest.raises(ValueError, match="written in lower case"):
        Caseless(pattern)


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        ("caf\u00e9", "CAF\u00c9 au lait", True),
        ("caf\u00e9", "CAFE au lait", False),
        (r"(?<![\w$\u20ac])pay\b", "PAY in \u20ac", True),
        (r"(?<![\w$\u20ac])pay\b", "\u20acPAY", False),
        # IGNORECASE folds these onto ASCII letters: the pattern always takes the flag
        ("o\u212a", "OK", True),
        ("o\u212a", "ok", True),
        ("\u017fki", "SKI", True),
        ("\u0131n", "IN", True),
    ],
)
def test_non_ascii_patterns_agree_with_ignorecase(pattern: str, text: str, found: bool) -> None:
    assert Caseless(pattern).found_in(text) is found
    assert bool(re.search(pattern, text, re.IGNORECASE)) is found


def test_escapes_are_not_letters() -> None:
    # \W, \S, \B, \D are escapes, not upper-case letters of the pattern
    assert Caseless(r"^\W*system\S*\s*:").found_in("  SYSTEM: reboot") is True
    assert Caseless(r"\Bye\b").found_in("YE") is False
    assert Caseless(r"\Bye\b").found_in("GOODBYE") is True


def test_characters_written_as_escapes_are_read_as_characters() -> None:
    # "\u212a" is the Kelvin sign, which IGNORECASE folds onto "k": the pattern takes the flag.
    assert Caseless(r"o\u212a").found_in("OK") is True
    assert Caseless(r"o\N{KELVIN SIGN}").found_in("ok") is True
    # "\x41" is "A": an upper-case letter, refused like one written out.
    with pytest.raises(ValueError, match="written in lower case"):
        Caseless(r"\x41b")
    # an escaped backslash, then the letters "u212a": no Kelvin sign there
    assert Caseless(r"\\u212a").found_in("\\U212A") is True
    assert Caseless(r"\\u212a").found_in("\\u212k") is False
