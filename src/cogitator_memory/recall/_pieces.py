"""The pieces a time expression is read into, and how a date and a time become an interval.

A :class:`DayRef` is a local date (perhaps with a part of the day), a :class:`ClockRef` a time of
day still looking for its date, and a :class:`Span` a finished interval. :func:`finish` joins a
date and a time into a :class:`Span`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Literal, TypeAlias

from ._calendar import Days, day_range, days_to_utc, to_utc_wall, wall_span

Precision: TypeAlias = Literal[
    "instant",
    "second",
    "minute",
    "hour",
    "part_of_day",
    "day",
    "weekend",
    "week",
    "month",
    "quarter",
    "season",
    "year",
    "decade",
    "century",
]

#: Every precision, finest first.
PRECISIONS: tuple[Precision, ...] = (
    "instant",
    "second",
    "minute",
    "hour",
    "part_of_day",
    "day",
    "weekend",
    "week",
    "month",
    "quarter",
    "season",
    "year",
    "decade",
    "century",
)


@dataclass(frozen=True, slots=True)
class Context:
    """What a parse resolves against: the session's moment, zone and the reading choices."""

    zone: tzinfo
    session: datetime  # aware, UTC
    local: datetime  # naive wall time of the session in ``zone``
    prefer: Literal["nearest", "past", "future"]
    day_first: bool
    hemisphere: Literal["north", "south"]

    @property
    def today(self) -> date:
        return self.local.date()


@dataclass(frozen=True, slots=True)
class Span:
    """A finished interval; ``days`` keeps its local dates when it is made of whole days."""

    start: datetime
    end: datetime
    precision: Precision
    days: Days | None = None


@dataclass(frozen=True, slots=True)
class DayRef:
    """A local date, with the part of the day it names, if any."""

    day: date
    pod: str | None = None


ClockMode: TypeAlias = Literal["fixed", "written", "oclock", "bare"]


@dataclass(frozen=True, slots=True)
class ClockRef:
    """A time of day. ``mode`` says how sure its hour is: ``fixed`` (am/pm or a 24-hour
    reading), ``written`` (h:mm, taken as written unless a part of the day says otherwise),
    ``oclock`` (read in daytime) and ``bare`` (an hour that needs a part of the day)."""

    hour: int
    minute: int = 0
    second: int = 0
    microsecond: int = 0
    precision: Precision = "hour"
    mode: ClockMode = "fixed"
    pod: str | None = None
    zone: tzinfo | None = None


Piece: TypeAlias = Span | DayRef | ClockRef


@dataclass(slots=True)
class State:
    """A parse in progress: the context and whether words that need a cue may stand alone.

    ``strict`` is a whole expression handed to ``resolve_time``; ``cue`` is set when the word
    before the match (``in``, ``since``...) or the construction around it makes a bare month,
    year or season read as a time.
    """

    ctx: Context
    strict: bool
    cue: bool


def span_of_days(days: Days, precision: Precision, ctx: Context) -> Span:
    start, end = days_to_utc(days, ctx.zone)
    return Span(start, end, precision, days)


#: Parts of the day as hours from the day's midnight (past 24 is the next day).
PARTS_OF_DAY: dict[str, tuple[int, int]] = {
    "morning": (5, 12),
    "afternoon": (12, 17),
    "evening": (17, 21),
    "night": (17, 29),
}

STEPS: dict[str, timedelta] = {
    "hour": timedelta(hours=1),
    "minute": timedelta(minutes=1),
    "second": timedelta(seconds=1),
    "instant": timedelta(microseconds=1),
}


def _clock_hour(clock: ClockRef, pod: str | None) -> int | None:
    hour = clock.hour
    window = PARTS_OF_DAY.get(pod) if pod else None
    if clock.mode == "fixed":
        if window and not window[0] <= hour < window[1] and window[0] <= hour + 24 < window[1]:
            return hour + 24
        return hour
    if window:
        for candidate in (hour % 12, hour % 12 + 12, hour % 12 + 24):
            if window[0] <= candidate < window[1]:
                return candidate
        return hour % 12 + (0 if pod == "morning" else 12)
    if clock.mode == "written":
        return hour
    if clock.mode == "oclock":
        return hour % 12 + 12 if 1 <= hour <= 6 else hour
    return None


def finish(day: DayRef | None, clock: ClockRef | None, ctx: Context) -> Span | None:
    """The interval of a date, a date and a part of the day, or a time of day on a date.

    A time of day without a date is on the session's local date.
    """
    when = day.day if day else ctx.today
    pod = clock.pod if clock and clock.pod else (day.pod if day else None)
    if clock is None:
        if pod is None:
            return span_of_days(day_range(when), "day", ctx)
        first, last = PARTS_OF_DAY[pod]
        midnight = datetime.combine(when, time())
        start = to_utc_wall(midnight + timedelta(hours=first), ctx.zone)
        end = to_utc_wall(midnight + timedelta(hours=last), ctx.zone)
        return Span(start, end, "part_of_day")
    hour = _clock_hour(clock, pod)
    if hour is None:
        return None
    local = datetime.combine(when, time()) + timedelta(
        hours=hour, minutes=clock.minute, seconds=clock.second, microseconds=clock.microsecond
    )
    start, end = wall_span(local, STEPS[clock.precision], clock.zone or ctx.zone)
    return Span(start, end, clock.precision)
