"""The words of time expressions: names, numbers, units and the pattern pieces built from them."""

from __future__ import annotations

import re

from ._calendar import Pick
from ._pieces import Context, Precision

MONTHS: dict[str, int] = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sept", "sep"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH_ALT = "|".join(sorted(MONTHS, key=len, reverse=True))


def month_pattern(group: str) -> str:
    """A month name or its abbreviation (with an optional dot after an abbreviation)."""
    return rf"(?P<{group}>{_MONTH_ALT})(?![a-z])(?:(?<=jan|feb|mar|apr|jun|jul|aug|sep|ept|oct|nov|dec)\.)?"


WEEKDAYS: dict[str, int] = {"mon": 0, "tue": 1, "wed": 2, "thu": 3, "fri": 4, "sat": 5, "sun": 6}
_WEEKDAY_FULL = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_WEEKDAY_ABBR = "tues|thurs|thur|weds|mon|tue|wed|thu|fri|sat|sun"
WEEKDAY_WORDS = frozenset(_WEEKDAY_FULL.split("|") + _WEEKDAY_ABBR.split("|"))


def weekday_pattern(group: str) -> str:
    """A weekday name or its abbreviation (with an optional dot after an abbreviation)."""
    return (
        rf"(?P<{group}>{_WEEKDAY_FULL}|{_WEEKDAY_ABBR})(?![a-z])"
        r"(?:(?<=mon|tue|wed|thu|fri|sat|sun|ues|urs|hur|eds)\.)?"
    )


_UNITS_ORD = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth"]
ORDINAL_WORDS: dict[str, int] = {
    **{w: i for i, w in enumerate(_UNITS_ORD, start=1)},
    **{
        w: i
        for i, w in enumerate(
            [
                "tenth",
                "eleventh",
                "twelfth",
                "thirteenth",
                "fourteenth",
                "fifteenth",
                "sixteenth",
                "seventeenth",
                "eighteenth",
                "nineteenth",
                "twentieth",
            ],
            start=10,
        )
    },
    **{f"twenty{w}": 20 + i for i, w in enumerate(_UNITS_ORD, start=1)},
    "thirtieth": 30,
    "thirtyfirst": 31,
}
ORDINAL_ALT = "|".join(
    sorted(
        (re.sub(r"^(twenty|thirty)(?=.)(?!ieth)", r"\1[- ]?", w) for w in ORDINAL_WORDS),
        key=len,
        reverse=True,
    )
)


def day_number_pattern(group: str) -> str:
    """A day of the month: ``3``, ``3rd``, ``third``, ``twenty-first``."""
    return rf"(?:(?P<{group}>\d{{1,2}})(?!\d)(?:st|nd|rd|th)?|(?P<{group}w>{ORDINAL_ALT}))(?![a-z])"


def ordinal_value(text: str) -> int:
    return ORDINAL_WORDS[re.sub(r"[- ]", "", text.lower())]


def day_number(m: re.Match[str], group: str) -> int:
    digits = m.group(group)
    return int(digits) if digits else ordinal_value(m.group(group + "w"))


COUNT_WORDS: dict[str, int] = {
    w: i
    for i, w in enumerate(
        [
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty",
        ],
        start=1,
    )
} | {"a": 1, "an": 1, "thirty": 30, "forty": 40, "fifty": 50, "hundred": 100}
#: Counts that name a range of units: "a few days ago" is two to four days ago.
COUNT_RANGES: dict[str, tuple[int, int]] = {"few": (2, 4), "several": (3, 7), "couple": (2, 2)}
COUNT = (
    r"(?P<n>\d{1,4}(?!\d)|a\s+couple\s+of|a\s+couple|couple\s+of|a\s+few|few|several|"
    + "|".join(sorted(COUNT_WORDS, key=len, reverse=True))
    + r")(?![a-z])"
)


def count_of(text: str) -> tuple[int, int]:
    """The range of units a count names (``(3, 3)`` for "three")."""
    words = text.lower().split()
    if words[0].isdigit():
        return int(words[0]), int(words[0])
    key = words[1] if words[0] == "a" and len(words) > 1 else words[0]
    if key in COUNT_RANGES:
        return COUNT_RANGES[key]
    return COUNT_WORDS[key], COUNT_WORDS[key]


UNITS: dict[str, str] = {
    "second": "second",
    "sec": "second",
    "minute": "minute",
    "min": "minute",
    "hour": "hour",
    "hr": "hour",
    "day": "day",
    "week": "week",
    "wk": "week",
    "fortnight": "fortnight",
    "month": "month",
    "year": "year",
    "yr": "year",
    "decade": "decade",
}
UNIT = r"(?P<u>" + "|".join(sorted(UNITS, key=len, reverse=True)) + r")s?(?![a-z])"


def unit_of(text: str) -> str:
    return UNITS[text.lower()]


UNIT_PRECISION: dict[str, Precision] = {
    "second": "second",
    "minute": "minute",
    "hour": "hour",
    "day": "day",
    "week": "week",
    "fortnight": "week",
    "month": "month",
    "year": "year",
    "decade": "decade",
}


MODIFIER = r"(?P<mod>this\s+past|this\s+coming|last|next|this|coming|past|previous)"
_PICK_OF_MODIFIER: dict[str, Pick] = {
    "this past": "last",
    "last": "last",
    "past": "last",
    "previous": "last",
    "this coming": "next",
    "next": "next",
    "coming": "next",
}


def modifier_of(m: re.Match[str]) -> str | None:
    mod = m.groupdict().get("mod")
    return re.sub(r"\s+", " ", mod.lower()) if mod else None


def pick_of(mod: str | None, ctx: Context) -> Pick:
    """How to choose an occurrence: ``last``/``next`` for those words, else the caller's preference."""
    if mod is None or mod == "this":
        return ctx.prefer
    return _PICK_OF_MODIFIER[mod]


YEAR = r"(?P<y>\d{4})(?!\d)"


def two_digit_year(yy: int, ctx: Context) -> int:
    """The year ending in ``yy`` that is at most ten years after the session's year."""
    limit = ctx.today.year + 10
    year = limit - (limit - yy) % 100
    return year


HOUR_WORDS = {w: i for w, i in COUNT_WORDS.items() if 1 <= i <= 12 and w not in ("a", "an")}
HOUR_PATTERN = r"(?P<h>\d{1,2}(?!\d)|(?:" + "|".join(sorted(HOUR_WORDS, key=len, reverse=True)) + r")(?![a-z]))"
