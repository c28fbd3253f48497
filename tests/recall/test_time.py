"""resolve_time: exact intervals for each kind of expression, across zones and DST changes.

Rows give the expected start and end as local wall times in the row's zone ("2024-03-11 15:00");
``at`` turns them into UTC instants the way a reader would, so each row states what the
expression means on the local calendar. DST rows give UTC instants directly.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.recall import PRECISIONS, TimeInterval, resolve_time, zone_hemisphere

WEDNESDAY = "2024-03-13 15:30"  # the session of most rows: Wednesday 13 March 2024, 15:30


def at(zone: str, local: str) -> datetime:
    """The UTC instant of a local wall time (``YYYY-MM-DD`` or ``YYYY-MM-DD HH:MM[:SS[.ffffff]]``)."""
    value = datetime.fromisoformat(local)
    return value.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def check(
    expression: str,
    start: str,
    end: str,
    precision: str,
    *,
    zone: str = "UTC",
    session: str = WEDNESDAY,
    **options: object,
) -> None:
    got = resolve_time(expression, at(zone, session), zone, **options)  # type: ignore[arg-type]
    assert got == TimeInterval(at(zone, start), at(zone, end), precision), f"{expression!r}: {got}"  # type: ignore[arg-type]


# -- absolute dates ------------------------------------------------------------------------------

ABSOLUTE = [
    ("2024-03-03", "2024-03-03", "2024-03-04", "day"),
    ("2024-3-3", "2024-03-03", "2024-03-04", "day"),
    ("2024-03-03T10:15", "2024-03-03 10:15", "2024-03-03 10:16", "minute"),
    ("2024-03-03 10:15", "2024-03-03 10:15", "2024-03-03 10:16", "minute"),
    ("2024-03-03T10:15:30", "2024-03-03 10:15:30", "2024-03-03 10:15:31", "second"),
    ("2024-03-03T10:15:30.25", "2024-03-03 10:15:30.250000", "2024-03-03 10:15:30.250001", "instant"),
    ("2024-03-03T10:15:30Z", "2024-03-03 10:15:30", "2024-03-03 10:15:31", "second"),
    ("2024-03", "2024-03-01", "2024-04-01", "month"),
    ("2024-W10", "2024-03-04", "2024-03-11", "week"),
    ("2020-W53", "2020-12-28", "2021-01-04", "week"),
    ("March 3rd 2024", "2024-03-03", "2024-03-04", "day"),
    ("March 3, 2024", "2024-03-03", "2024-03-04", "day"),
    ("Sunday, March 3rd, 2024", "2024-03-03", "2024-03-04", "day"),
    ("3 March 2024", "2024-03-03", "2024-03-04", "day"),
    ("the 3rd of March, 2024", "2024-03-03", "2024-03-04", "day"),
    ("Sept. 3, 2024", "2024-09-03", "2024-09-04", "day"),
    ("3rd Sep 2021", "2021-09-03", "2021-09-04", "day"),
    ("the twenty-first of June 2022", "2022-06-21", "2022-06-22", "day"),
    ("03/04/2024", "2024-04-03", "2024-04-04", "day"),  # day first by default
    ("25/12/2023", "2023-12-25", "2023-12-26", "day"),
    ("12/25/2023", "2023-12-25", "2023-12-26", "day"),  # 25 cannot be a month
    ("03.04.2024", "2024-04-03", "2024-04-04", "day"),
    ("2024/03/04", "2024-03-04", "2024-03-05", "day"),
    ("3-4-24", "2024-04-03", "2024-04-04", "day"),
    ("1/2/35", "1935-02-01", "1935-02-02", "day"),  # two-digit years: at most ten years ahead
    ("1/2/34", "2034-02-01", "2034-02-02", "day"),
    ("March 2023", "2023-03-01", "2023-04-01", "month"),
    ("March of 2023", "2023-03-01", "2023-04-01", "month"),
    ("Feb 2024", "2024-02-01", "2024-03-01", "month"),
    ("2019", "2019-01-01", "2020-01-01", "year"),
    ("the year 2000", "2000-01-01", "2001-01-01", "year"),
    ("Q3 2024", "2024-07-01", "2024-10-01", "quarter"),
    ("2024-Q2", "2024-04-01", "2024-07-01", "quarter"),
    ("the first quarter of 2023", "2023-01-01", "2023-04-01", "quarter"),
    ("Christmas 2022", "2022-12-25", "2022-12-26", "day"),
    ("March 26–27, 2023", "2023-03-26", "2023-03-28", "day"),  # a run of days, both ends included
    ("6-8 May 2024", "2024-05-06", "2024-05-09", "day"),
    ("Valentine's Day 2025", "2025-02-14", "2025-02-15", "day"),
]


@pytest.mark.parametrize(("expression", "start", "end", "precision"), ABSOLUTE)
def test_absolute_dates(expression: str, start: str, end: str, precision: str) -> None:
    check(expression, start, end, precision)


# -- dates without a year, weekdays and other recurring days: the nearest by default -------------

RECURRING = [
    ("3 March", "2024-03-03", "2024-03-04", "day"),
    ("March 3rd", "2024-03-03", "2024-03-04", "day"),
    ("Mar 3", "2024-03-03", "2024-03-04", "day"),
    ("March the 3rd", "2024-03-03", "2024-03-04", "day"),
    ("March third", "2024-03-03", "2024-03-04", "day"),
    ("3 May", "2024-05-03", "2024-05-04", "day"),  # 51 days ahead beats 316 back
    ("December 25", "2023-12-25", "2023-12-26", "day"),  # 79 days back beats 287 ahead
    ("3/4", "2024-04-03", "2024-04-04", "day"),
    ("April 6-7", "2024-04-06", "2024-04-08", "day"),
    ("March", "2024-03-01", "2024-04-01", "month"),  # holds the session
    ("in May", "2024-05-01", "2024-06-01", "month"),
    ("October", "2023-10-01", "2023-11-01", "month"),  # ended 134 days ago, the next starts in 202
    ("last March", "2023-03-01", "2023-04-01", "month"),  # the last one that has ended
    ("last February", "2024-02-01", "2024-03-01", "month"),
    ("next March", "2025-03-01", "2025-04-01", "month"),
    ("this March", "2024-03-01", "2024-04-01", "month"),
    ("this October", "2024-10-01", "2024-11-01", "month"),
    ("the 15th", "2024-03-15", "2024-03-16", "day"),
    ("the 1st", "2024-03-01", "2024-03-02", "day"),
    ("on the 31st", "2024-03-31", "2024-04-01", "day"),
    ("the third", "2024-03-03", "2024-03-04", "day"),
    ("Christmas", "2023-12-25", "2023-12-26", "day"),
    ("last Christmas", "2023-12-25", "2023-12-26", "day"),
    ("next Christmas", "2024-12-25", "2024-12-26", "day"),
    ("Christmas Eve", "2023-12-24", "2023-12-25", "day"),
    ("New Year's Eve", "2023-12-31", "2024-01-01", "day"),
    ("New Year's Day", "2024-01-01", "2024-01-02", "day"),
    ("Halloween", "2023-10-31", "2023-11-01", "day"),
    ("Valentine's Day", "2024-02-14", "2024-02-15", "day"),
    # weekdays from Wednesday 13 March: the nearest of the three days either side
    ("on Monday", "2024-03-11", "2024-03-12", "day"),
    ("Friday", "2024-03-15", "2024-03-16", "day"),
    ("Saturday", "2024-03-16", "2024-03-17", "day"),
    ("Sunday", "2024-03-10", "2024-03-11", "day"),
    ("Wednesday", "2024-03-13", "2024-03-14", "day"),
    ("Thu", "2024-03-14", "2024-03-15", "day"),
    ("last Tuesday", "2024-03-12", "2024-03-13", "day"),  # the latest before today
    ("last Wednesday", "2024-03-06", "2024-03-07", "day"),
    ("last tues.", "2024-03-12", "2024-03-13", "day"),
    ("next Friday", "2024-03-15", "2024-03-16", "day"),  # the first after today
    ("next Wednesday", "2024-03-20", "2024-03-21", "day"),
    ("this Friday", "2024-03-15", "2024-03-16", "day"),  # in this Monday-to-Sunday week
    ("this Monday", "2024-03-11", "2024-03-12", "day"),
    ("this coming Monday", "2024-03-18", "2024-03-19", "day"),
    ("this past Friday", "2024-03-08", "2024-03-09", "day"),
    ("Monday next week", "2024-03-18", "2024-03-19", "day"),
    ("Friday of last week", "2024-03-08", "2024-03-09", "day"),
    ("Tuesday before last", "2024-03-05", "2024-03-06", "day"),
    ("Friday after next", "2024-03-22", "2024-03-23", "day"),
    ("the weekend", "2024-03-09", "2024-03-11", "weekend"),  # 3 days either way: the earlier
    ("weekend", "2024-03-09", "2024-03-11", "weekend"),
    ("this weekend", "2024-03-16", "2024-03-18", "weekend"),
    ("last weekend", "2024-03-09", "2024-03-11", "weekend"),
    ("next weekend", "2024-03-16", "2024-03-18", "weekend"),
    ("the weekend before last", "2024-03-02", "2024-03-04", "weekend"),
    ("over the weekend", "2024-03-09", "2024-03-11", "weekend"),
]


@pytest.mark.parametrize(("expression", "start", "end", "precision"), RECURRING)
def test_recurring_days_and_months(expression: str, start: str, end: str, precision: str) -> None:
    check(expression, start, end, precision)


# -- relative to the session --------------------------------------------------------------------

RELATIVE = [
    ("yesterday", "2024-03-12", "2024-03-13", "day"),
    ("today", "2024-03-13", "2024-03-14", "day"),
    ("tomorrow", "2024-03-14", "2024-03-15", "day"),
    ("the day before yesterday", "2024-03-11", "2024-03-12", "day"),
    ("day after tomorrow", "2024-03-15", "2024-03-16", "day"),
    ("last week", "2024-03-04", "2024-03-11", "week"),
    ("this week", "2024-03-11", "2024-03-18", "week"),
    ("next week", "2024-03-18", "2024-03-25", "week"),
    ("the week before last", "2024-02-26", "2024-03-04", "week"),
    ("the week after next", "2024-03-25", "2024-04-01", "week"),
    ("last month", "2024-02-01", "2024-03-01", "month"),
    ("this month", "2024-03-01", "2024-04-01", "month"),
    ("next month", "2024-04-01", "2024-05-01", "month"),
    ("last year", "2023-01-01", "2024-01-01", "year"),
    ("this year", "2024-01-01", "2025-01-01", "year"),
    ("next year", "2025-01-01", "2026-01-01", "year"),
    ("last quarter", "2023-10-01", "2024-01-01", "quarter"),
    ("this quarter", "2024-01-01", "2024-04-01", "quarter"),
    ("last decade", "2010-01-01", "2020-01-01", "decade"),
    ("this century", "2000-01-01", "2100-01-01", "century"),
    ("3 days ago", "2024-03-10", "2024-03-11", "day"),
    ("a day ago", "2024-03-12", "2024-03-13", "day"),
    ("two days ago", "2024-03-11", "2024-03-12", "day"),
    ("a couple of days ago", "2024-03-11", "2024-03-12", "day"),
    ("a few days ago", "2024-03-09", "2024-03-12", "day"),  # two to four days back
    ("several days ago", "2024-03-06", "2024-03-11", "day"),  # three to seven days back
    ("2 weeks ago", "2024-02-26", "2024-03-04", "week"),  # the week holding 28 February
    ("a fortnight ago", "2024-02-26", "2024-03-04", "week"),
    ("3 months ago", "2023-12-01", "2024-01-01", "month"),
    ("2 years ago", "2022-01-01", "2023-01-01", "year"),
    ("a decade ago", "2010-01-01", "2020-01-01", "decade"),
    ("3 hours ago", "2024-03-13 12:00", "2024-03-13 13:00", "hour"),
    ("5 minutes ago", "2024-03-13 15:25", "2024-03-13 15:26", "minute"),
    ("30 seconds ago", "2024-03-13 15:29:30", "2024-03-13 15:29:31", "second"),
    ("half a year ago", "2023-09-01", "2023-10-01", "month"),  # six months back
    ("a year and a half ago", "2022-09-01", "2022-10-01", "month"),  # eighteen months back
    ("two and a half years ago", "2021-09-01", "2021-10-01", "month"),
    ("3 and a half weeks ago", "2024-02-18", "2024-02-19", "day"),  # 24 days back
    ("half a day ago", "2024-03-13 03:00", "2024-03-13 04:00", "hour"),
    ("half an hour ago", "2024-03-13 15:00", "2024-03-13 15:01", "minute"),
    ("in half an hour", "2024-03-13 16:00", "2024-03-13 16:01", "minute"),
    ("in half a year", "2024-09-01", "2024-10-01", "month"),
    ("three years now", "2021-01-01", "2022-01-01", "year"),  # "for three years now": began then
    ("2 weeks now", "2024-02-26", "2024-03-04", "week"),
    ("ten days back", "2024-03-03", "2024-03-04", "day"),
    ("in 4 days", "2024-03-17", "2024-03-18", "day"),
    ("in a week", "2024-03-18", "2024-03-25", "week"),
    ("in 2 months", "2024-05-01", "2024-06-01", "month"),
    ("in 2 hours", "2024-03-13 17:00", "2024-03-13 18:00", "hour"),
    ("in a few hours", "2024-03-13 17:00", "2024-03-13 20:00", "hour"),
    ("3 days from now", "2024-03-16", "2024-03-17", "day"),
    ("the past 3 days", "2024-03-10 15:30", "2024-03-13 15:30", "day"),
    ("the last 2 weeks", "2024-02-28 15:30", "2024-03-13 15:30", "week"),
    ("the past week", "2024-03-06 15:30", "2024-03-13 15:30", "week"),
    ("past month", "2024-02-13 15:30", "2024-03-13 15:30", "month"),
    ("the last hour", "2024-03-13 14:30", "2024-03-13 15:30", "hour"),
    ("the next 3 days", "2024-03-13 15:30", "2024-03-16 15:30", "day"),
    ("now", "2024-03-13 15:30", "2024-03-13 15:30:00.000001", "instant"),
    ("right now", "2024-03-13 15:30", "2024-03-13 15:30:00.000001", "instant"),
    ("earlier today", "2024-03-13", "2024-03-13 15:30", "day"),
    ("later today", "2024-03-13 15:30", "2024-03-14", "day"),
    ("earlier this week", "2024-03-11", "2024-03-13 15:30", "week"),
    ("later this month", "2024-03-13 15:30", "2024-04-01", "month"),
]


@pytest.mark.parametrize(("expression", "start", "end", "precision"), RELATIVE)
def test_relative_to_the_session(expression: str, start: str, end: str, precision: str) -> None:
    check(expression, start, end, precision)


# -- seasons, parts of periods, decades ----------------------------------------------------------

PERIODS = [
    ("last summer", "2023-06-01", "2023-09-01", "season"),
    ("this summer", "2024-06-01", "2024-09-01", "season"),
    ("next summer", "2024-06-01", "2024-09-01", "season"),
    ("summer", "2024-06-01", "2024-09-01", "season"),  # 80 days ahead beats 194 back
    ("summer 2019", "2019-06-01", "2019-09-01", "season"),
    ("the summer of 2019", "2019-06-01", "2019-09-01", "season"),
    ("winter", "2023-12-01", "2024-03-01", "season"),  # ended 13 days ago
    ("last winter", "2023-12-01", "2024-03-01", "season"),
    ("next winter", "2024-12-01", "2025-03-01", "season"),
    ("winter 2024", "2023-12-01", "2024-03-01", "season"),  # the year holding two of its months
    ("autumn 2023", "2023-09-01", "2023-12-01", "season"),
    ("fall 2023", "2023-09-01", "2023-12-01", "season"),
    ("spring", "2024-03-01", "2024-06-01", "season"),
    ("last spring", "2023-03-01", "2023-06-01", "season"),
    ("early March", "2024-03-01", "2024-03-11", "month"),
    ("mid-March", "2024-03-11", "2024-03-21", "month"),
    ("mid March", "2024-03-11", "2024-03-21", "month"),
    ("late March", "2024-03-21", "2024-04-01", "month"),
    ("early March 2023", "2023-03-01", "2023-03-11", "month"),
    ("late February 2024", "2024-02-21", "2024-03-01", "month"),
    ("the end of March", "2024-03-21", "2024-04-01", "month"),
    ("the end of the month", "2024-03-21", "2024-04-01", "month"),
    ("the beginning of 2024", "2024-01-01", "2024-05-01", "year"),
    ("mid-2020", "2020-05-01", "2020-09-01", "year"),
    ("late 2023", "2023-09-01", "2024-01-01", "year"),
    ("late last year", "2023-09-01", "2024-01-01", "year"),
    ("early next week", "2024-03-18", "2024-03-20", "week"),
    ("the middle of the week", "2024-03-13", "2024-03-15", "week"),
    ("late this week", "2024-03-15", "2024-03-18", "week"),
    ("early summer", "2024-06-01", "2024-07-01", "season"),
    ("late summer 2019", "2019-08-01", "2019-09-01", "season"),
    ("the 90s", "1990-01-01", "2000-01-01", "decade"),
    ("the '90s", "1990-01-01", "2000-01-01", "decade"),
    ("90s", "1990-01-01", "2000-01-01", "decade"),
    ("the 1990s", "1990-01-01", "2000-01-01", "decade"),
    ("the nineties", "1990-01-01", "2000-01-01", "decade"),
    ("the 2000s", "2000-01-01", "2010-01-01", "decade"),
    ("the twenties", "2020-01-01", "2030-01-01", "decade"),  # the latest that has begun
    ("the 30s", "1930-01-01", "1940-01-01", "decade"),
    ("the early 90s", "1990-01-01", "1994-01-01", "decade"),
    ("the late 1980s", "1987-01-01", "1990-01-01", "decade"),
    ("the mid-2000s", "2004-01-01", "2007-01-01", "decade"),
    ("the 1800s", "1800-01-01", "1900-01-01", "century"),
    ("the 19th century", "1800-01-01", "1900-01-01", "century"),
    ("the twenty-first century", "2000-01-01", "2100-01-01", "century"),
]


@pytest.mark.parametrize(("expression", "start", "end", "precision"), PERIODS)
def test_seasons_parts_and_decades(expression: str, start: str, end: str, precision: str) -> None:
    check(expression, start, end, precision)


# -- times of day --------------------------------------------------------------------------------

TIMES_OF_DAY = [
    ("at 3pm", "2024-03-13 15:00", "2024-03-13 16:00", "hour"),
    ("3pm", "2024-03-13 15:00", "2024-03-13 16:00", "hour"),
    ("3 PM", "2024-03-13 15:00", "2024-03-13 16:00", "hour"),
    ("3 p.m.", "2024-03-13 15:00", "2024-03-13 16:00", "hour"),
    ("3:30pm", "2024-03-13 15:30", "2024-03-13 15:31", "minute"),
    ("15:30", "2024-03-13 15:30", "2024-03-13 15:31", "minute"),
    ("15:30:45", "2024-03-13 15:30:45", "2024-03-13 15:30:46", "second"),
    ("7:30", "2024-03-13 07:30", "2024-03-13 07:31", "minute"),  # h:mm as written
    ("at noon", "2024-03-13 12:00", "2024-03-13 13:00", "hour"),
    ("midnight", "2024-03-14 00:00", "2024-03-14 01:00", "hour"),  # the end of the day
    ("12am", "2024-03-13 00:00", "2024-03-13 01:00", "hour"),
    ("12pm", "2024-03-13 12:00", "2024-03-13 13:00", "hour"),
    ("nine pm", "2024-03-13 21:00", "2024-03-13 22:00", "hour"),
    ("9 o'clock", "2024-03-13 09:00", "2024-03-13 10:00", "hour"),  # o'clock reads in daytime
    ("3 o'clock", "2024-03-13 15:00", "2024-03-13 16:00", "hour"),
    ("9 in the evening", "2024-03-13 21:00", "2024-03-13 22:00", "hour"),
    ("11 at night", "2024-03-13 23:00", "2024-03-14 00:00", "hour"),
    ("7:30 in the evening", "2024-03-13 19:30", "2024-03-13 19:31", "minute"),
    ("this morning", "2024-03-13 05:00", "2024-03-13 12:00", "part_of_day"),
    ("this afternoon", "2024-03-13 12:00", "2024-03-13 17:00", "part_of_day"),
    ("this evening", "2024-03-13 17:00", "2024-03-13 21:00", "part_of_day"),
    ("tonight", "2024-03-13 17:00", "2024-03-14 05:00", "part_of_day"),
    ("last night", "2024-03-12 17:00", "2024-03-13 05:00", "part_of_day"),
    ("yesterday morning", "2024-03-12 05:00", "2024-03-12 12:00", "part_of_day"),
    ("tomorrow night", "2024-03-14 17:00", "2024-03-15 05:00", "part_of_day"),
    ("Monday evening", "2024-03-11 17:00", "2024-03-11 21:00", "part_of_day"),
    ("Monday in the morning", "2024-03-11 05:00", "2024-03-11 12:00", "part_of_day"),
    ("last Friday evening", "2024-03-08 17:00", "2024-03-08 21:00", "part_of_day"),
    ("at 7 tonight", "2024-03-13 19:00", "2024-03-13 20:00", "hour"),
    ("tonight at 2am", "2024-03-14 02:00", "2024-03-14 03:00", "hour"),
    ("at 2 tonight", "2024-03-14 02:00", "2024-03-14 03:00", "hour"),
    ("last night at 11", "2024-03-12 23:00", "2024-03-13 00:00", "hour"),
    ("Monday at 3pm", "2024-03-11 15:00", "2024-03-11 16:00", "hour"),
    ("3pm yesterday", "2024-03-12 15:00", "2024-03-12 16:00", "hour"),
    ("tomorrow at noon", "2024-03-14 12:00", "2024-03-14 13:00", "hour"),
    ("tomorrow morning at 9", "2024-03-14 09:00", "2024-03-14 10:00", "hour"),
    ("at 9 tomorrow morning", "2024-03-14 09:00", "2024-03-14 10:00", "hour"),
    ("March 3 at 5pm", "2024-03-03 17:00", "2024-03-03 18:00", "hour"),
    ("3 March 2024, 17:45", "2024-03-03 17:45", "2024-03-03 17:46", "minute"),
    ("3:30pm on Friday", "2024-03-15 15:30", "2024-03-15 15:31", "minute"),
]


@pytest.mark.parametrize(("expression", "start", "end", "precision"), TIMES_OF_DAY)
def test_times_of_day(expression: str, start: str, end: str, precision: str) -> None:
    check(expression, start, end, precision)


# -- ranges and the words around an expression ---------------------------------------------------

RANGES = [
    ("since yesterday", "2024-03-12", "2024-03-13 15:30", "day"),
    ("since last week", "2024-03-04", "2024-03-13 15:30", "week"),
    ("since 2019", "2019-01-01", "2024-03-13 15:30", "year"),
    ("since early 2020", "2020-01-01", "2024-03-13 15:30", "year"),
    ("until Friday", "2024-03-13 15:30", "2024-03-16", "day"),
    ("till tomorrow", "2024-03-13 15:30", "2024-03-15", "day"),
    ("until 5pm", "2024-03-13 15:30", "2024-03-13 17:00", "hour"),  # a time ends where it starts
    ("from Monday to Friday", "2024-03-11", "2024-03-16", "day"),
    ("from Friday to Monday", "2024-03-15", "2024-03-19", "day"),  # the end read after the start
    ("between 2019 and 2021", "2019-01-01", "2022-01-01", "year"),
    ("2019-2021", "2019-01-01", "2022-01-01", "year"),
    ("March to May", "2024-03-01", "2024-06-01", "month"),
    ("from 3pm to 5pm", "2024-03-13 15:00", "2024-03-13 17:00", "hour"),
    ("3pm-5pm", "2024-03-13 15:00", "2024-03-13 17:00", "hour"),
    ("from 2024-03-01 to 2024-03-05", "2024-03-01", "2024-03-06", "day"),
    ("from March 2023 to last week", "2023-03-01", "2024-03-11", "month"),  # the coarser precision
    ("in March", "2024-03-01", "2024-04-01", "month"),
    ("around 3pm", "2024-03-13 15:00", "2024-03-13 16:00", "hour"),
    ("back in 2019", "2019-01-01", "2020-01-01", "year"),
    ("sometime last week", "2024-03-04", "2024-03-11", "week"),
    ("as of March 2024", "2024-03-01", "2024-04-01", "month"),
    ("during the summer of 2019", "2019-06-01", "2019-09-01", "season"),
    ("by Friday", "2024-03-15", "2024-03-16", "day"),
    ("yesterday.", "2024-03-12", "2024-03-13", "day"),
    ("(last week)", "2024-03-04", "2024-03-11", "week"),
    ("“tomorrow”", "2024-03-14", "2024-03-15", "day"),
    ("  LAST   WEEK  ", "2024-03-04", "2024-03-11", "week"),
    ("Yesterday", "2024-03-12", "2024-03-13", "day"),
]


@pytest.mark.parametrize(("expression", "start", "end", "precision"), RANGES)
def test_ranges_and_surrounding_words(expression: str, start: str, end: str, precision: str) -> None:
    check(expression, start, end, precision)


# -- reading choices -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "prefer", "start", "end", "precision"),
    [
        ("Monday", "past", "2024-03-11", "2024-03-12", "day"),
        ("Monday", "future", "2024-03-18", "2024-03-19", "day"),
        ("Wednesday", "past", "2024-03-13", "2024-03-14", "day"),  # today counts both ways
        ("Wednesday", "future", "2024-03-13", "2024-03-14", "day"),
        ("Friday", "past", "2024-03-08", "2024-03-09", "day"),
        ("May", "past", "2023-05-01", "2023-06-01", "month"),
        ("October", "future", "2024-10-01", "2024-11-01", "month"),
        ("3 May", "past", "2023-05-03", "2023-05-04", "day"),
        ("December 25", "future", "2024-12-25", "2024-12-26", "day"),
        ("the weekend", "future", "2024-03-16", "2024-03-18", "weekend"),
        ("the 20th", "past", "2024-02-20", "2024-02-21", "day"),
        ("summer", "past", "2023-06-01", "2023-09-01", "season"),
        ("last Monday", "future", "2024-03-11", "2024-03-12", "day"),  # last/next ignore the preference
    ],
)
def test_prefer_past_or_future(expression: str, prefer: str, start: str, end: str, precision: str) -> None:
    check(expression, start, end, precision, prefer=prefer)


def test_day_first_false_reads_month_first() -> None:
    check("03/04/2024", "2024-03-04", "2024-03-05", "day", day_first=False)
    check("3/4", "2024-03-04", "2024-03-05", "day", day_first=False)
    check("25/12/2023", "2023-12-25", "2023-12-26", "day", day_first=False)  # unambiguous either way
    check("03.04.2024", "2024-04-03", "2024-04-04", "day", day_first=False)  # dots are always day first


# -- time zones ------------------------------------------------------------------------------------

SESSION_UTC = utc("2024-03-13 15:30")


@pytest.mark.parametrize(
    ("zone", "expression", "start", "end"),
    [
        # the same instant is a different local day and hour in each zone
        ("UTC", "today", "2024-03-13 00:00", "2024-03-14 00:00"),
        ("America/New_York", "today", "2024-03-13 04:00", "2024-03-14 04:00"),  # EDT since 10 March
        ("Europe/Berlin", "today", "2024-03-12 23:00", "2024-03-13 23:00"),
        ("Asia/Kolkata", "today", "2024-03-12 18:30", "2024-03-13 18:30"),
        ("Pacific/Auckland", "today", "2024-03-13 11:00", "2024-03-14 11:00"),  # already the 14th
        ("Australia/Lord_Howe", "today", "2024-03-13 13:00", "2024-03-14 13:00"),  # +11 in summer
        ("Pacific/Auckland", "yesterday", "2024-03-12 11:00", "2024-03-13 11:00"),
        ("Asia/Kolkata", "at 3pm", "2024-03-13 09:30", "2024-03-13 10:30"),
        ("Australia/Lord_Howe", "at 3pm", "2024-03-14 04:00", "2024-03-14 05:00"),  # 3pm on the 14th
        ("America/New_York", "this week", "2024-03-11 04:00", "2024-03-18 04:00"),
        ("Pacific/Auckland", "last week", "2024-03-03 11:00", "2024-03-10 11:00"),
        ("Asia/Kolkata", "this month", "2024-02-29 18:30", "2024-03-31 18:30"),
        ("Europe/Berlin", "2024", "2023-12-31 23:00", "2024-12-31 23:00"),
        ("America/New_York", "2024-03-03T10:00+02:00", "2024-03-03 08:00", "2024-03-03 08:01"),  # its own offset
        ("Asia/Kolkata", "2024-03-03T10:00Z", "2024-03-03 10:00", "2024-03-03 10:01"),
    ],
)
def test_time_zones(zone: str, expression: str, start: str, end: str) -> None:
    got = resolve_time(expression, SESSION_UTC, zone)
    assert got is not None
    assert (got.start, got.end) == (utc(start), utc(end))
    assert got.start.tzinfo is UTC and got.end.tzinfo is UTC


def test_a_tzinfo_object_and_a_fixed_offset_work_as_zones() -> None:
    by_name = resolve_time("tomorrow", SESSION_UTC, "Asia/Kolkata")
    assert resolve_time("tomorrow", SESSION_UTC, ZoneInfo("Asia/Kolkata")) == by_name
    fixed = resolve_time("tomorrow", SESSION_UTC, timezone(timedelta(hours=5, minutes=30)))
    assert fixed == by_name
    assert by_name is not None and by_name.start == utc("2024-03-13 18:30")


def test_naive_session_is_utc() -> None:
    assert resolve_time("today", datetime(2024, 3, 13, 23, 30), "UTC") == resolve_time("today", SESSION_UTC, "UTC")


# -- DST changes -----------------------------------------------------------------------------------

DST = [
    # spring forward: the local day lasts 23 hours; fall back: 25
    ("America/New_York", "2024-03-10 12:00", "today", "2024-03-10 05:00", "2024-03-11 04:00", 23),
    ("America/New_York", "2024-11-03 12:00", "today", "2024-11-03 04:00", "2024-11-04 05:00", 25),
    ("Europe/Berlin", "2024-03-31 12:00", "today", "2024-03-30 23:00", "2024-03-31 22:00", 23),
    ("Europe/Berlin", "2024-10-27 12:00", "today", "2024-10-26 22:00", "2024-10-27 23:00", 25),
    ("Pacific/Auckland", "2024-09-29 12:00", "today", "2024-09-28 12:00", "2024-09-29 11:00", 23),
    ("Pacific/Auckland", "2024-04-07 12:00", "today", "2024-04-06 11:00", "2024-04-07 12:00", 25),
    # Lord Howe Island moves its clocks by half an hour
    ("Australia/Lord_Howe", "2024-10-06 12:00", "today", "2024-10-05 13:30", "2024-10-06 13:00", 23.5),
    ("Australia/Lord_Howe", "2024-04-07 12:00", "today", "2024-04-06 13:00", "2024-04-07 13:30", 24.5),
    ("Australia/Lord_Howe", "2024-10-07 12:00", "yesterday", "2024-10-05 13:30", "2024-10-06 13:00", 23.5),
    # a week across the change is 7 days less (or more) one hour
    ("Europe/Berlin", "2024-03-27 12:00", "this week", "2024-03-24 23:00", "2024-03-31 22:00", 167),
    ("America/New_York", "2024-11-06 12:00", "this week", "2024-11-04 05:00", "2024-11-11 05:00", 168),
    ("America/New_York", "2024-11-06 12:00", "last week", "2024-10-28 04:00", "2024-11-04 05:00", 169),
    ("Europe/Berlin", "2024-04-10 12:00", "last month", "2024-02-29 23:00", "2024-03-31 22:00", 743),
    # a part of the day across the change
    ("America/New_York", "2024-11-02 12:00", "tonight", "2024-11-02 21:00", "2024-11-03 10:00", 13),
    ("Europe/Berlin", "2024-03-31 12:00", "this morning", "2024-03-31 03:00", "2024-03-31 10:00", 7),
    # an hour that happens twice is both; an hour skipped keeps its length from its new start
    ("America/New_York", "2024-11-03 12:00", "at 1am", "2024-11-03 05:00", "2024-11-03 07:00", 2),
    ("America/New_York", "2024-03-10 12:00", "at 2am", "2024-03-10 07:00", "2024-03-10 08:00", 1),
    ("Australia/Lord_Howe", "2024-10-06 12:00", "at 2am", "2024-10-05 15:30", "2024-10-05 16:00", 0.5),
    ("America/New_York", "2024-03-10 04:30", "3 hours ago", "2024-03-10 05:00", "2024-03-10 06:00", 1),
]


@pytest.mark.parametrize(("zone", "session", "expression", "start", "end", "hours"), DST)
def test_dst_changes(zone: str, session: str, expression: str, start: str, end: str, hours: float) -> None:
    got = resolve_time(expression, at(zone, session), zone)
    assert got is not None
    assert (got.start, got.end) == (utc(start), utc(end))
    assert got.duration == timedelta(hours=hours)


def test_rolling_window_steps_in_wall_time_across_dst() -> None:
    zone = "America/New_York"
    got = resolve_time("the past 2 days", at(zone, "2024-03-11 12:00"), zone)
    assert got == TimeInterval(utc("2024-03-09 17:00"), utc("2024-03-11 16:00"), "day")  # noon EST to noon EDT
    assert got.duration == timedelta(hours=47)


# -- month ends, leap years, year boundaries -------------------------------------------------------

CALENDAR_EDGES = [
    ("2024-01-31 12:00", "next month", "2024-02-01", "2024-03-01", "month"),
    ("2024-01-31 12:00", "in a month", "2024-02-01", "2024-03-01", "month"),
    ("2024-03-31 12:00", "the past month", "2024-02-29 12:00", "2024-03-31 12:00", "month"),
    ("2024-03-31 12:00", "a month ago", "2024-02-01", "2024-03-01", "month"),
    ("2024-02-29 12:00", "a year ago", "2023-01-01", "2024-01-01", "year"),
    ("2024-02-29 12:00", "the past year", "2023-02-28 12:00", "2024-02-29 12:00", "year"),
    ("2024-02-29 12:00", "tomorrow", "2024-03-01", "2024-03-02", "day"),
    ("2023-02-28 12:00", "tomorrow", "2023-03-01", "2023-03-02", "day"),
    ("2025-03-13 12:00", "February 29", "2024-02-29", "2024-03-01", "day"),  # the nearest leap day
    ("2024-03-13 12:00", "29 Feb", "2024-02-29", "2024-03-01", "day"),
    ("2024-03-13 12:00", "late February", "2024-02-21", "2024-03-01", "month"),
    ("2023-03-13 12:00", "late February", "2023-02-21", "2023-03-01", "month"),
    ("2024-03-13 12:00", "on the 30th", "2024-03-30", "2024-03-31", "day"),
    ("2024-03-02 12:00", "on the 30th", "2024-03-30", "2024-03-31", "day"),  # February has none
    ("2025-01-01 12:00", "last week", "2024-12-23", "2024-12-30", "week"),
    ("2024-12-30 12:00", "next week", "2025-01-06", "2025-01-13", "week"),
    ("2024-12-30 12:00", "this week", "2024-12-30", "2025-01-06", "week"),
    ("2024-12-15 12:00", "next month", "2025-01-01", "2025-02-01", "month"),
    ("2025-01-15 12:00", "last month", "2024-12-01", "2025-01-01", "month"),
    ("2025-01-01 00:00", "yesterday", "2024-12-31", "2025-01-01", "day"),
    ("2025-01-02 12:00", "last quarter", "2024-10-01", "2025-01-01", "quarter"),
    ("2024-12-15 12:00", "this winter", "2024-12-01", "2025-03-01", "season"),
    ("2024-12-15 12:00", "January", "2025-01-01", "2025-02-01", "month"),
    ("2025-01-10 12:00", "December", "2024-12-01", "2025-01-01", "month"),
    ("2025-01-10 12:00", "Christmas", "2024-12-25", "2024-12-26", "day"),
    ("2024-12-28 12:00", "New Year's Day", "2025-01-01", "2025-01-02", "day"),
    ("2024-03-13 12:00", "2024-02-29", "2024-02-29", "2024-03-01", "day"),
]


@pytest.mark.parametrize(("session", "expression", "start", "end", "precision"), CALENDAR_EDGES)
def test_month_ends_leap_years_and_year_boundaries(
    session: str, expression: str, start: str, end: str, precision: str
) -> None:
    check(expression, start, end, precision, session=session)


def test_the_local_new_year_comes_first_east_of_utc() -> None:
    session = utc("2024-12-31 23:30")  # 00:30 on 1 January in Berlin
    assert resolve_time("this year", session, "Europe/Berlin") == TimeInterval(
        at("Europe/Berlin", "2025-01-01"), at("Europe/Berlin", "2026-01-01"), "year"
    )
    assert resolve_time("this year", session, "UTC") == TimeInterval(utc("2024-01-01"), utc("2025-01-01"), "year")
    auckland = resolve_time("yesterday", utc("2024-12-31 12:00"), "Pacific/Auckland")
    assert auckland == TimeInterval(utc("2024-12-30 11:00"), utc("2024-12-31 11:00"), "day")


# -- hemispheres -------------------------------------------------------------------------------------


def test_seasons_follow_the_zone_hemisphere() -> None:
    july = utc("2024-07-01 00:00")
    north = resolve_time("last summer", july, "Europe/Berlin")
    assert north == TimeInterval(at("Europe/Berlin", "2023-06-01"), at("Europe/Berlin", "2023-09-01"), "season")
    south = resolve_time("last summer", july, "Pacific/Auckland")
    assert south == TimeInterval(at("Pacific/Auckland", "2023-12-01"), at("Pacific/Auckland", "2024-03-01"), "season")
    assert resolve_time("winter", july, "Australia/Lord_Howe") == TimeInterval(
        at("Australia/Lord_Howe", "2024-06-01"), at("Australia/Lord_Howe", "2024-09-01"), "season"
    )
    forced = resolve_time("last summer", july, "Pacific/Auckland", hemisphere="north")
    assert forced == TimeInterval(at("Pacific/Auckland", "2023-06-01"), at("Pacific/Auckland", "2023-09-01"), "season")
    assert resolve_time("summer 2024", july, "UTC", hemisphere="south") == TimeInterval(
        utc("2023-12-01"), utc("2024-03-01"), "season"
    )


@pytest.mark.parametrize(
    ("zone", "hemisphere"),
    [
        ("Pacific/Auckland", "south"),
        ("Australia/Lord_Howe", "south"),
        ("America/Argentina/Buenos_Aires", "south"),
        ("Europe/Berlin", "north"),
        ("America/New_York", "north"),
        ("Asia/Kolkata", "north"),
        ("UTC", "north"),
    ],
)
def test_zone_hemisphere(zone: str, hemisphere: str) -> None:
    assert zone_hemisphere(zone) == hemisphere
    assert zone_hemisphere(ZoneInfo(zone)) == hemisphere


# -- not a time, and bad arguments -----------------------------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "",
        "   ",
        "hello",
        "the meeting",
        "next",
        "last time",
        "February 30",
        "29 February 2023",
        "2023-02-29",
        "31/04/2024",
        "April 7-6",
        "February 28-30 2023",
        "2024-13",
        "2024-W54",
        "25:00",
        "13pm",
        "at 3",  # a bare hour needs a part of the day
        "3 cats",
        "Monday the meeting",
        "since tomorrow",  # since needs a start before the session
        "until yesterday",
        "next to the station",
        "10000 years ago",
        "9999-12-31T23:59+14:00 to tomorrow",
    ],
)
def test_text_that_is_not_a_time_gives_none(expression: str) -> None:
    assert resolve_time(expression, SESSION_UTC, "UTC") is None


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: resolve_time(3, SESSION_UTC), "expression"),  # type: ignore[arg-type]
        (lambda: resolve_time(None, SESSION_UTC), "expression"),  # type: ignore[arg-type]
        (lambda: resolve_time("today", "2024-03-13"), "session_at"),  # type: ignore[arg-type]
        (lambda: resolve_time("today", date(2024, 3, 13)), "session_at"),  # type: ignore[arg-type]
        (lambda: resolve_time("today", datetime(9999, 12, 31, 23, tzinfo=UTC), "Pacific/Auckland"), "session_at"),
        (lambda: resolve_time("today", SESSION_UTC, "Mars/Olympus_Mons"), "time_zone"),
        (lambda: resolve_time("today", SESSION_UTC, ""), "time_zone"),
        (lambda: resolve_time("today", SESSION_UTC, "../../etc/passwd"), "time_zone"),
        (lambda: resolve_time("today", SESSION_UTC, 5), "time_zone"),  # type: ignore[arg-type]
        (lambda: resolve_time("today", SESSION_UTC, prefer="soon"), "prefer"),  # type: ignore[arg-type]
        (lambda: resolve_time("today", SESSION_UTC, day_first="yes"), "day_first"),  # type: ignore[arg-type]
        (lambda: resolve_time("today", SESSION_UTC, hemisphere="east"), "hemisphere"),  # type: ignore[arg-type]
    ],
)
def test_bad_arguments_raise_invalid_argument_naming_it(call: object, argument: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        call()  # type: ignore[operator]
    assert caught.value.argument == argument


# -- the interval ----------------------------------------------------------------------------------


def test_interval_helpers() -> None:
    march = resolve_time("March 2024", SESSION_UTC, "UTC")
    assert march is not None
    assert march.duration == timedelta(days=31)
    assert march.contains(utc("2024-03-31 23:59:59"))
    assert not march.contains(utc("2024-04-01 00:00"))  # the end is not in it
    assert march.contains(datetime(2024, 3, 1))  # naive is UTC
    april = resolve_time("April 2024", SESSION_UTC, "UTC")
    spring = resolve_time("spring 2024", SESSION_UTC, "UTC")
    assert april is not None and spring is not None
    assert not march.overlaps(april) and not april.overlaps(march)
    assert march.overlaps(spring) and spring.overlaps(april)


def test_precisions_are_ordered_finest_first() -> None:
    assert PRECISIONS[0] == "instant" and PRECISIONS[-1] == "century"
    assert PRECISIONS.index("day") < PRECISIONS.index("week") < PRECISIONS.index("month") < PRECISIONS.index("year")
