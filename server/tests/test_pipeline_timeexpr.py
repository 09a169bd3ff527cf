"""Time expressions resolved against the moment they were said."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cortadel_server.language.timeexpr import find_time, find_times

REF = datetime(2026, 11, 30, 10, 30, tzinfo=UTC)  # a Monday


def d(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "expression", "start", "end", "point"),
    [
        ("I moved to Paris last month.", "last month", d(2026, 10, 1), d(2026, 11, 1), d(2026, 10, 30, 10, 30)),
        ("Yesterday I ran 10 km.", "Yesterday", d(2026, 11, 29), d(2026, 11, 30), d(2026, 11, 29, 10, 30)),
        ("We met two weeks ago.", "two weeks ago", d(2026, 11, 16), d(2026, 11, 23), d(2026, 11, 16, 10, 30)),
        ("I went to Rome in May 2023.", "in May 2023", d(2023, 5, 1), d(2023, 6, 1), d(2023, 5, 1)),
        ("She was born on 8 May 2023.", "8 May 2023", d(2023, 5, 8), d(2023, 5, 9), d(2023, 5, 8)),
        ("I got married last year.", "last year", d(2025, 1, 1), d(2026, 1, 1), d(2025, 11, 30, 10, 30)),
        ("I've been vegan since 2019.", "since 2019", d(2019, 1, 1), REF, d(2019, 1, 1)),
        ("It broke 3 days ago.", "3 days ago", d(2026, 11, 27), d(2026, 11, 28), d(2026, 11, 27, 10, 30)),
        ("Launch was on 2024-02-29.", "2024-02-29", d(2024, 2, 29), d(2024, 3, 1), d(2024, 2, 29)),
        ("We shipped it last Tuesday.", "last Tuesday", d(2026, 11, 24), d(2026, 11, 25), d(2026, 11, 24, 10, 30)),
        ("The trip is next week.", "next week", d(2026, 12, 7), d(2026, 12, 14), d(2026, 12, 7, 10, 30)),
        ("I started in March.", "in March", d(2026, 3, 1), d(2026, 4, 1), d(2026, 3, 1)),
        ("It happened in December.", "in December", d(2025, 12, 1), d(2026, 1, 1), d(2025, 12, 1)),
        ("Our anniversary is May 8th, 2021.", "May 8th, 2021", d(2021, 5, 8), d(2021, 5, 9), d(2021, 5, 8)),
        ("We moved in 2019.", "in 2019", d(2019, 1, 1), d(2020, 1, 1), d(2019, 1, 1)),
        ("A few days ago I quit.", "A few days ago", d(2026, 11, 27), d(2026, 11, 28), d(2026, 11, 27, 10, 30)),
    ],
)
def test_expressions_resolve_to_a_window_and_a_point(text: str, expression: str, start: datetime, end: datetime, point: datetime) -> None:
    span = find_time(text, REF)
    assert span is not None
    assert (span.text, span.start, span.end, span.point) == (expression, start, end, point)


@pytest.mark.parametrize(
    "text",
    ["I only ship to production on Tuesdays.", "I may go later.", "March forward!", "I have 2019 photos.", "User likes coffee."],
)
def test_words_that_only_look_like_times_are_not_times(text: str) -> None:
    assert find_times(text, REF) == []


def test_several_expressions_come_back_in_reading_order_without_overlap() -> None:
    spans = find_times("Since 2019 I lived in Berlin; 3 days ago I moved, and next week I start.", REF)
    assert [s.text for s in spans] == ["Since 2019", "3 days ago", "next week"]


def test_month_arithmetic_clamps_to_the_last_day() -> None:
    span = find_time("That was last month.", d(2026, 3, 31, 12))
    assert span is not None and span.point == d(2026, 2, 28, 12)


def test_an_impossible_day_leaves_its_month() -> None:
    [span] = find_times("on 31 February 2023", REF)
    assert (span.text, span.start, span.end) == ("February 2023", d(2023, 2, 1), d(2023, 3, 1))


@pytest.mark.parametrize(
    ("text", "expressions"),
    [
        ("(May 2023) was busy.", ["May 2023"]),
        ("mid-March 2021 we met", ["March 2021"]),
        ("On 3 Sept. we left.", ["3 Sept"]),
        ("Sept 3, 2020 it was", ["Sept 3, 2020"]),
        ("on 31st of DECEMBER", ["31st of DECEMBER"]),
        ("Doctor visit on 4 august", ["4 august"]),  # "doc" is no month's start; "aug" is
        ("We decided on 12 things in 2020.", ["in 2020"]),
        ("since 1999-05-03", ["1999-05-03"]),
        ("In 2 weeks.", ["In 2 weeks"]),
        ("x_may 2020", []),
        ("5may 2020", []),
    ],
)
def test_rules_skipped_for_want_of_their_clues_could_not_have_matched(text: str, expressions: list[str]) -> None:
    # ASCII text runs only the rules whose clue words it holds; other text runs every rule.
    assert [s.text for s in find_times(text, REF)] == expressions
    assert [s.text for s in find_times(text + " \u00b7", REF)] == expressions
