"""Time expressions in English text, resolved against the moment they were said.

    span = find_time("I moved to Paris last month.", said_at)
    span.point   # said_at minus one month: when the statement places the event
    span.start, span.end   # the calendar window it names (the whole previous month)

The text itself is never changed. The write pipeline uses `point` as a fact's `valid_at` when it
lies in the past; retrieval uses `start`/`end` to understand queries such as "in May 2023".
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["TimeSpan", "find_time", "find_times"]


@dataclass(frozen=True)
class TimeSpan:
    """A resolved expression: `text` as written, the window [start, end) and its anchor `point`."""

    text: str
    start: datetime
    end: datetime
    point: datetime


MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS["sept"] = 9
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
    "several": 3,
}
UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = r"(?P<weekday>" + "|".join(WEEKDAYS) + r")"
_COUNT = r"(?P<count>\d+|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"


def _day_floor(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int, like: datetime) -> datetime:
    return like.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)


def _add_months(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months
    year, month = divmod(index, 12)
    day = min(moment.day, calendar.monthrange(year, month + 1)[1])
    return moment.replace(year=year, month=month + 1, day=day)


def _month_span(year: int, month: int, like: datetime) -> tuple[datetime, datetime]:
    start = _month_start(year, month, like)
    return start, _add_months(start, 1)


def _year_span(year: int, like: datetime) -> tuple[datetime, datetime]:
    start = like.replace(year=year, month=1, day=1, hour=0, minute=0, second=0, microsecond=0)
    return start, start.replace(year=year + 1)


def _shift(ref: datetime, unit: str, amount: int) -> datetime:
    if unit == "month":
        return _add_months(ref, amount)
    if unit == "year":
        return _add_months(ref, 12 * amount)
    return ref + timedelta(days=UNITS[unit] * amount)


def _unit_window(point: datetime, unit: str) -> tuple[datetime, datetime]:
    """The calendar day/week/month/year that contains `point`."""
    if unit == "day":
        start = _day_floor(point)
        return start, start + timedelta(days=1)
    if unit == "week":
        start = _day_floor(point) - timedelta(days=point.weekday())
        return start, start + timedelta(days=7)
    if unit == "month":
        return _month_span(point.year, point.month, point)
    return _year_span(point.year, point)


def _count(raw: str) -> int:
    raw = raw.lower()
    return int(raw) if raw.isdigit() else NUMBER_WORDS[raw]


# Each rule: a compiled pattern and a resolver from (match, reference) to (start, end, point).
def _ago(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, datetime]:
    unit = m["unit"].lower()
    point = _shift(ref, unit, -_count(m["count"]))
    return (*_unit_window(point, unit), point)


def _in_ahead(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, datetime]:
    unit = m["unit"].lower()
    point = _shift(ref, unit, _count(m["count"]))
    return (*_unit_window(point, unit), point)


def _relative_unit(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, datetime]:
    step = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1}[m["which"].lower()]
    unit = m["unit"].lower()
    point = _shift(ref, unit, step)
    return (*_unit_window(point, unit), point)


def _named_day(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, datetime]:
    offset = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}[m["name"].lower()]
    point = ref + timedelta(days=offset)
    return (*_unit_window(point, "day"), point)


def _part_of_today(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, datetime]:
    start, end = _unit_window(ref, "day")
    return start, end, ref


def _weekday(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, datetime]:
    target = WEEKDAYS[m["weekday"].lower()]
    if m["which"].lower() == "last":
        back = (ref.weekday() - target) % 7 or 7
        point = ref - timedelta(days=back)
    else:
        ahead = (target - ref.weekday()) % 7 or 7
        point = ref + timedelta(days=ahead)
    return (*_unit_window(point, "day"), point)


def _day_month_year(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, datetime]:
    year = int(m["year"]) if m["year"] else ref.year
    month, day = MONTHS[m["month"].lower()], int(m["day"])
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        raise ValueError("no such day")
    start = _day_floor(ref).replace(year=year, month=month, day=day)
    if not m["year"] and start > ref:
        start = start.replace(year=year - 1)
    return start, start + timedelta(days=1), start


def _iso_date(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, datetime]:
    start = _day_floor(ref).replace(year=int(m["year"]), month=int(m["m"]), day=int(m["d"]))
    return start, start + timedelta(days=1), start


def _month_year(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, datetime]:
    month = MONTHS[m["month"].lower()]
    if m["year"]:
        year = int(m["year"])
    else:  # "in May" means the most recent May that has begun
        year = ref.year if month <= ref.month else ref.year - 1
    start, end = _month_span(year, month, ref)
    return start, end, start


def _since(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, datetime]:
    start, _ = _year_span(int(m["year"]), ref)
    return start, ref, start


def _year(m: re.Match[str], ref: datetime) -> tuple[datetime, datetime, datetime]:
    start, end = _year_span(int(m["year"]), ref)
    return start, end, start


_Resolver = Callable[[re.Match[str], datetime], tuple[datetime, datetime, datetime]]
_RULES: tuple[tuple[re.Pattern[str], _Resolver], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), resolver)
    for pattern, resolver in (
        (rf"\b{_COUNT}\s+{_UNIT}\s+ago\b", _ago),
        (rf"\bin\s+{_COUNT}\s+{_UNIT}\b", _in_ahead),
        (rf"\b(?P<which>last|past|previous|this|next)\s+{_UNIT}\b", _relative_unit),
        (r"\b(?P<name>yesterday|today|tonight|tomorrow)\b", _named_day),
        (r"\bthis\s+(?:morning|afternoon|evening)\b", _part_of_today),
        (rf"\b(?P<which>last|next|this\s+coming)\s+{_WEEKDAY}\b", _weekday),
        (rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", _day_month_year),
        (rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b(?!:)", _day_month_year),
        (r"\b(?P<year>(?:19|20)\d\d)-(?P<m>[01]\d)-(?P<d>[0-3]\d)\b", _iso_date),
        (rf"(?:\b(?P<prep>in|during|since|from|by|until)\s+)?\b{_MONTH}(?:\s+(?:of\s+)?{_YEAR})?\b", _month_year),
        (rf"\bsince\s+{_YEAR}\b", _since),
        (rf"\b(?:in|during|of|from)\s+{_YEAR}\b", _year),
    )
)
# The rules without IGNORECASE, run over the lower-cased text when it is ASCII (most text): every
# letter of the rules is lower-case ASCII and every resolver lower-cases what it reads, so the
# matches and spans are the same, found about twice as fast; the expression's text is cut from the
# text as written (lower() keeps ASCII positions).
_LOWER_RULES = tuple((re.compile(pattern.pattern), resolver) for pattern, resolver in _RULES)


def _any_of(words: Iterable[str]) -> str:
    return "|".join(map(re.escape, sorted(words)))


# Clues, by name: words one of which a text holds wherever a rule of _LOWER_RULES matches in it. A
# rule whose clues are not all in the text cannot match and is not run: most text names no time,
# and each rule's scan cost about 3 µs. A clue's words are one alternation, one scan in C (testing
# them one by one cost 10 µs a text), made once for all the rules that need it.
_CLUES: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern) for name, pattern in {
        "ago": "ago",
        "unit": _any_of(UNITS),
        "named day": _any_of(("yesterday", "today", "tonight", "tomorrow")),
        "this": "this",
        "weekday": _any_of(WEEKDAYS),
        "digit": "[0-9]",
        "dash": "-",
        # a word that starts and ends as a month's name does ("may", "sept"; not "married" or
        # "decided"): the lookbehind after the first three letters keeps sre's fast scan for them
        "month": "(?:" + _any_of({name[:3] for name in MONTHS}) + r")(?<!\w...)"
                 + "(?:" + _any_of({name[3:] for name in MONTHS} - {""}) + r")?\b",
        "since": "since",
    }.items()
}
#: per rule of _LOWER_RULES, the clues it needs
_RULE_CLUES: tuple[tuple[str, ...], ...] = (
    ("ago",), ("unit",), ("unit",), ("named day",), ("this",), ("weekday",),
    ("digit", "month"), ("digit", "month"), ("dash",), ("month",), ("since",), ("digit",),
)


def find_times(text: str, reference: datetime) -> list[TimeSpan]:
    """Every time expression in `text`, resolved against `reference`, in reading order.

    Expressions do not overlap: where two rules match the same words the earlier rule wins
    ("3 days ago" is one expression, not also "3 days").
    """
    ascii_only = text.isascii()
    scanned, rules = (text.lower(), _LOWER_RULES) if ascii_only else (text, _RULES)
    # IGNORECASE matches more than lower() finds outside ASCII ("K", the Kelvin sign): there, every rule runs
    clued = {name for name, clue in _CLUES.items() if clue.search(scanned)} if ascii_only else None
    taken: list[tuple[int, int]] = []
    found: list[tuple[int, TimeSpan]] = []
    for (pattern, resolver), needs in zip(rules, _RULE_CLUES, strict=True):
        if clued is not None and not clued.issuperset(needs):
            continue
        for m in pattern.finditer(scanned):
            lo, hi = m.span()
            if any(lo < b and a < hi for a, b in taken) or not m.group(0).strip():
                continue
            if resolver is _month_year and not (m["year"] or m["prep"]):
                continue  # a bare "may" or "march" is more often a word than a month
            try:
                start, end, point = resolver(m, reference)
            except ValueError:
                continue
            taken.append((lo, hi))
            found.append((lo, TimeSpan(text[lo:hi].strip(), start, end, point)))
    return [span for _, span in sorted(found, key=lambda item: item[0])]


def find_time(text: str, reference: datetime) -> TimeSpan | None:
    """The first time expression in `text`, or None."""
    spans = find_times(text, reference)
    return spans[0] if spans else None
