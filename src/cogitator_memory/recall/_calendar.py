"""Local calendar arithmetic behind time resolution.

Periods of a day or longer are held as local dates ``(first, end)`` (end exclusive) and become
UTC instants only at the end, through the local midnight of each date, so a day across a DST
change lasts 23 or 25 hours (23.5 or 24.5 on Lord Howe Island). Shorter periods are local wall
times turned into UTC the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Literal, TypeAlias

Days: TypeAlias = tuple[date, date]
"""A run of local days: the first one and the one after the last."""

Pick: TypeAlias = Literal["nearest", "past", "future", "last", "next"]

ONE_DAY = timedelta(days=1)


def to_utc_wall(local: datetime, zone: tzinfo) -> datetime:
    """The UTC instant of the naive local wall time ``local`` in ``zone``.

    A wall time skipped by a DST change is read with the offset before the change, which lands
    it as far past the change as it was past the skipped hour's start (02:30 becomes 03:30);
    a wall time that happens twice is its first occurrence.
    """
    return local.replace(tzinfo=zone).astimezone(UTC)


def wall_span(local_start: datetime, step: timedelta, zone: tzinfo) -> tuple[datetime, datetime]:
    """``[local_start, local_start + step)`` in wall time, as UTC instants.

    When a DST change makes the wall-time span empty (the hour skipped in spring), the span
    is ``step`` of real time from its start instead.
    """
    start = to_utc_wall(local_start, zone)
    end = to_utc_wall(local_start + step, zone)
    if end <= start:
        end = start + step
    return start, end


def days_to_utc(days: Days, zone: tzinfo) -> tuple[datetime, datetime]:
    """The UTC instants of the local midnights that open ``days[0]`` and ``days[1]``."""
    first, end = days
    return (
        to_utc_wall(datetime.combine(first, time()), zone),
        to_utc_wall(datetime.combine(end, time()), zone),
    )


def add_months(first: date, months: int) -> date:
    """The first day of the month ``months`` after the month of ``first``."""
    index = first.year * 12 + first.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def shift_months(day: date, months: int) -> date:
    """``day`` moved by whole months, kept in its month's length (Jan 31 + 1 month = Feb 28/29)."""
    first = add_months(day, months)
    return first.replace(day=min(day.day, days_in_month(first.year, first.month)))


def days_in_month(year: int, month: int) -> int:
    """How many days the month has."""
    return (add_months(date(year, month, 1), 1) - date(year, month, 1)).days


def day_range(day: date) -> Days:
    """One day."""
    return day, day + ONE_DAY


def week_range(day: date) -> Days:
    """The week holding ``day``: Monday to the Monday after (ISO 8601 weeks)."""
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=7)


def weekend_range(day: date) -> Days:
    """Saturday and Sunday of the week holding ``day``."""
    saturday = week_range(day)[0] + timedelta(days=5)
    return saturday, saturday + timedelta(days=2)


def month_range(year: int, month: int) -> Days:
    """One calendar month."""
    first = date(year, month, 1)
    return first, add_months(first, 1)


def quarter_range(year: int, quarter: int) -> Days:
    """One calendar quarter (1 to 4)."""
    first = date(year, 3 * quarter - 2, 1)
    return first, add_months(first, 3)


def year_range(year: int) -> Days:
    """One calendar year."""
    return date(year, 1, 1), date(year + 1, 1, 1)


def decade_range(first_year: int) -> Days:
    """Ten years from ``first_year`` (a year ending in 0)."""
    return date(first_year, 1, 1), date(first_year + 10, 1, 1)


def century_range(first_year: int) -> Days:
    """A hundred years from ``first_year`` (1800 for the 19th century and the 1800s)."""
    return date(first_year, 1, 1), date(first_year + 100, 1, 1)


#: The month each season starts in (meteorological seasons, three months each).
SEASON_STARTS: dict[str, dict[str, int]] = {
    "north": {"spring": 3, "summer": 6, "autumn": 9, "winter": 12},
    "south": {"spring": 9, "summer": 12, "autumn": 3, "winter": 6},
}


def season_range(start_month: int, year: int) -> Days:
    """The season starting in ``start_month`` that belongs to ``year``.

    A season that crosses New Year belongs to the year that holds two of its three months:
    the northern winter of 2024 runs from December 2023 to February 2024.
    """
    first = date(year - 1, 12, 1) if start_month == 12 else date(year, start_month, 1)
    return first, add_months(first, 3)


def distance(days: Days, today: date) -> int:
    """Whole days between ``today`` and the nearest day of ``days``; 0 when it holds today."""
    first, end = days
    if today < first:
        return (first - today).days
    if today >= end:
        return (today - end).days + 1
    return 0


def choose(candidates: Iterable[Days], today: date, pick: Pick) -> Days | None:
    """One occurrence of a recurring period, chosen against the session's local date.

    ``nearest``: the one closest to today (holding today counts as closest); a tie goes to the
    earlier one. ``past``: the latest that has started by today. ``future``: the earliest that
    has not ended before today. ``last``: the latest that ended before today. ``next``: the
    earliest that starts after today.
    """
    ordered = sorted(candidates)
    if pick == "nearest":
        return min(ordered, key=lambda c: distance(c, today), default=None)
    if pick == "past":
        started = [c for c in ordered if c[0] <= today]
        return started[-1] if started else None
    if pick == "future":
        return next((c for c in ordered if c[1] > today), None)
    if pick == "last":
        ended = [c for c in ordered if c[1] <= today]
        return ended[-1] if ended else None
    return next((c for c in ordered if c[0] > today), None)


PartName: TypeAlias = Literal["early", "mid", "late"]


def part_of(days: Days, precision: str, part: PartName) -> Days | None:
    """The early, middle or late part of a period, or ``None`` for a period that has none.

    A month splits at the 11th and the 21st; a year into January-April, May-August and
    September-December; a season or quarter by its months; a week into Monday-Tuesday,
    Wednesday-Thursday and Friday-Sunday; a decade into years 0-3, 4-6 and 7-9; a century at
    years 33 and 66.
    """
    first, end = days
    cuts: list[date]
    if precision == "month":
        cuts = [first.replace(day=11), first.replace(day=21)]
    elif precision == "year":
        cuts = [first.replace(month=5), first.replace(month=9)]
    elif precision in ("season", "quarter"):
        cuts = [add_months(first, 1), add_months(first, 2)]
    elif precision == "week":
        cuts = [first + timedelta(days=2), first + timedelta(days=4)]
    elif precision == "decade":
        cuts = [first.replace(year=first.year + 4), first.replace(year=first.year + 7)]
    elif precision == "century":
        cuts = [first.replace(year=first.year + 33), first.replace(year=first.year + 66)]
    else:
        return None
    bounds = [first, *cuts, end]
    index = {"early": 0, "mid": 1, "late": 2}[part]
    return bounds[index], bounds[index + 1]


__all__ = [
    "SEASON_STARTS",
    "Days",
    "Pick",
    "add_months",
    "century_range",
    "choose",
    "day_range",
    "days_in_month",
    "days_to_utc",
    "decade_range",
    "distance",
    "month_range",
    "part_of",
    "quarter_range",
    "season_range",
    "shift_months",
    "to_utc_wall",
    "wall_span",
    "week_range",
    "weekend_range",
    "year_range",
]
