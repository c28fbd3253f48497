"""The smallest time expressions and what each one means.

An atom is one compiled pattern and a handler that turns its match into a piece
(:mod:`._pieces`); :mod:`._parser` combines them ("Monday at 3pm", "since early 2020").
Patterns are matched case-insensitively on the original text, so the spans a finder reports
are offsets into it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from typing import TypeAlias

from ._calendar import (
    SEASON_STARTS,
    Pick,
    add_months,
    century_range,
    choose,
    day_range,
    days_in_month,
    decade_range,
    month_range,
    quarter_range,
    season_range,
    shift_months,
    to_utc_wall,
    wall_span,
    week_range,
    weekend_range,
    year_range,
)
from ._pieces import STEPS, ClockRef, Context, DayRef, Piece, Precision, Span, State, finish, span_of_days
from ._words import (
    COUNT,
    HOUR_PATTERN,
    HOUR_WORDS,
    MODIFIER,
    MONTHS,
    ORDINAL_ALT,
    UNIT,
    UNIT_PRECISION,
    WEEKDAYS,
    YEAR,
    count_of,
    day_number,
    day_number_pattern,
    modifier_of,
    month_pattern,
    ordinal_value,
    pick_of,
    two_digit_year,
    unit_of,
    weekday_pattern,
)

# -- handlers ----------------------------------------------------------------------------------

Handler: TypeAlias = Callable[[re.Match[str], State], Piece | None]


def _safe_date(year: int, month: int, day: int) -> date | None:
    if not (1 <= month <= 12 and 1 <= day <= days_in_month(year, month)):
        return None
    return date(year, month, day)


def _choose_day(month: int, day: int, st: State, pick: Pick | None = None) -> DayRef | None:
    """A day of a month without a year: the occurrence chosen by ``pick`` (the preference)."""
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    year = st.ctx.today.year
    candidates = [day_range(d) for y in range(year - 4, year + 5) if (d := _safe_date(y, month, day))]
    chosen = choose(candidates, st.ctx.today, pick or st.ctx.prefer)
    return DayRef(chosen[0]) if chosen else None


def iso_datetime(m: re.Match[str], st: State) -> Piece | None:
    zone: tzinfo | None = None
    tz = m.group("tz")
    if tz:
        if tz.lower() in ("z", "utc"):
            zone = UTC
        else:
            sign = -1 if tz[0] == "-" else 1
            digits = tz[1:].replace(":", "")
            minutes = int(digits[:2]) * 60 + (int(digits[2:4]) if len(digits) > 2 else 0)
            if minutes >= 24 * 60:
                return None
            zone = timezone(sign * timedelta(minutes=minutes))
    day = _safe_date(int(m.group("y")), int(m.group("mo")), int(m.group("d")))
    hour, minute = int(m.group("h")), int(m.group("mi"))
    if day is None or hour > 23 or minute > 59:
        return None
    second = int(m.group("s") or 0)
    fraction = m.group("f")
    precision: Precision = "instant" if fraction else ("second" if m.group("s") else "minute")
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    if second > 59:
        return None
    return finish(DayRef(day), ClockRef(hour, minute, second, micro, precision, "fixed", zone=zone), st.ctx)


def iso_date(m: re.Match[str], st: State) -> Piece | None:
    day = _safe_date(int(m.group("y")), int(m.group("mo")), int(m.group("d")))
    return DayRef(day) if day else None


def numeric_date(m: re.Match[str], st: State) -> Piece | None:
    a, b = int(m.group("a")), int(m.group("b"))
    raw_year = m.group("y")
    year = int(raw_year) if len(raw_year) == 4 else two_digit_year(int(raw_year), st.ctx)
    day_first = st.ctx.day_first or m.group("sep") == "."
    if a > 12 or (b <= 12 and day_first):
        day, month = a, b
    else:
        day, month = b, a
    found = _safe_date(year, month, day)
    return DayRef(found) if found else None


def numeric_day_month(m: re.Match[str], st: State) -> Piece | None:
    if not st.cue:
        return None
    a, b = int(m.group("a")), int(m.group("b"))
    if a > 12 or (b <= 12 and st.ctx.day_first):
        return _choose_day(b, a, st)
    return _choose_day(a, b, st)


def named_date(m: re.Match[str], st: State) -> Piece | None:
    """ "3 March", "the 3rd of March 2024", "March 3rd, 2024"."""
    month = MONTHS[m.group("mon").lower().rstrip(".")]
    day = day_number(m, "d")
    if m.group("y"):
        found = _safe_date(int(m.group("y")), month, day)
        return DayRef(found) if found else None
    return _choose_day(month, day, st)


def named_day_range(m: re.Match[str], st: State) -> Piece | None:
    """ "April 6-7", "6–8 May 2024": the days from the first to the last, both included."""
    month = MONTHS[m.group("mon").lower().rstrip(".")]
    first, last = int(m.group("d1")), int(m.group("d2"))
    if last <= first:
        return None
    if m.group("y"):
        start = _safe_date(int(m.group("y")), month, first)
    else:
        chosen = _choose_day(month, first, st)
        start = chosen.day if chosen else None
    end = _safe_date(start.year, month, last) if start else None
    if start is None or end is None:
        return None
    return span_of_days((start, end + timedelta(days=1)), "day", st.ctx)


def day_of_month(m: re.Match[str], st: State) -> Piece | None:
    """ "the 15th": the occurrence of that day of a month chosen by the preference."""
    if not st.cue or (m.group("dw") and not st.strict):
        return None
    day = day_number(m, "d")
    if not 1 <= day <= 31:
        return None
    first = st.ctx.today.replace(day=1)
    candidates = [
        day_range(found)
        for k in range(-3, 4)
        if (found := _safe_date((mo := add_months(first, k)).year, mo.month, day))
    ]
    chosen = choose(candidates, st.ctx.today, st.ctx.prefer)
    return DayRef(chosen[0]) if chosen else None


HOLIDAYS: dict[str, tuple[int, int]] = {
    "christmaseve": (12, 24),
    "christmas": (12, 25),
    "christmasday": (12, 25),
    "boxingday": (12, 26),
    "newyearseve": (12, 31),
    "newyears": (1, 1),
    "newyearsday": (1, 1),
    "halloween": (10, 31),
    "valentines": (2, 14),
    "valentinesday": (2, 14),
}


def holiday(m: re.Match[str], st: State) -> Piece | None:
    month, day = HOLIDAYS[re.sub(r"[\s'’]", "", m.group("name").lower())]
    if m.group("y"):
        return DayRef(date(int(m.group("y")), month, day))
    mod = modifier_of(m)
    if mod == "this":
        return DayRef(date(st.ctx.today.year, month, day))
    return _choose_day(month, day, st, pick_of(mod, st.ctx))


def weekday(m: re.Match[str], st: State) -> Piece | None:
    name = m.group("wd").lower().rstrip(".")
    mod = modifier_of(m)
    rel, week = m.group("rel"), m.group("wk")
    if not st.strict and len(name) <= 5 and not (mod or week):
        return None  # "sun", "sat", "wed" alone are words more often than days
    index = WEEKDAYS[name[:3]]
    today = st.ctx.today
    if week or mod == "this":
        offset = {"last": -7, "this": 0, "next": 7}[(week or "this").lower()]
        return DayRef(week_range(today)[0] + timedelta(days=offset + index))
    candidates = [day_range(today + timedelta(days=k)) for k in range(-21, 22)]
    pick = pick_of(mod, st.ctx)
    if rel:
        pick = "last" if rel.lower().startswith("before") else "next"
    chosen = choose([c for c in candidates if c[0].weekday() == index], today, pick)
    if chosen is None:
        return None
    shift = {"before": -7, "after": 7}.get(rel.lower().split()[0], 0) if rel else 0
    return DayRef(chosen[0] + timedelta(days=shift))


def relative_day(m: re.Match[str], st: State) -> Piece | None:
    word = re.sub(r"\s+", " ", m.group("w").lower())
    today = st.ctx.today
    if word.startswith("this "):
        return DayRef(today, word.split()[1])
    offsets = {
        "today": (0, None),
        "tonight": (0, "night"),
        "yesterday": (-1, None),
        "tomorrow": (1, None),
        "last night": (-1, "night"),
    }
    if word in offsets:
        offset, pod = offsets[word]
        return DayRef(today + timedelta(days=offset), pod)
    return DayRef(today + timedelta(days=-2 if word.endswith("yesterday") else 2))


def unit_span(unit: str, steps: int, st: State) -> Span:
    """The unit of time ``steps`` units from the session (negative: before it)."""
    ctx = st.ctx
    if unit == "second":
        moment = (ctx.session + timedelta(seconds=steps)).replace(microsecond=0)
        return Span(moment, moment + timedelta(seconds=1), "second")
    if unit in ("minute", "hour"):
        moved = (ctx.session + timedelta(**{unit + "s": steps})).astimezone(ctx.zone).replace(tzinfo=None)
        floor = (
            moved.replace(second=0, microsecond=0)
            if unit == "minute"
            else moved.replace(minute=0, second=0, microsecond=0)
        )
        start, end = wall_span(floor, STEPS[unit], ctx.zone)
        return Span(start, end, UNIT_PRECISION[unit])
    today = ctx.today
    if unit == "day":
        return span_of_days(day_range(today + timedelta(days=steps)), "day", ctx)
    if unit in ("week", "fortnight"):
        days = 7 if unit == "week" else 14
        return span_of_days(week_range(today + timedelta(days=days * steps)), "week", ctx)
    if unit == "month":
        first = add_months(today.replace(day=1), steps)
        return span_of_days(month_range(first.year, first.month), "month", ctx)
    if unit == "year":
        return span_of_days(year_range(today.year + steps), "year", ctx)
    return span_of_days(decade_range((today.year + 10 * steps) // 10 * 10), "decade", ctx)


def _merge(a: Span, b: Span) -> Span:
    days = (a.days[0], b.days[1]) if a.days and b.days else None
    return Span(a.start, b.end, a.precision, days)


def offset(sign: int) -> Handler:
    """ "3 days ago" (``sign`` -1), "in 3 days" (+1): the unit that many units away."""

    def handle(m: re.Match[str], st: State) -> Piece | None:
        low, high = count_of(m.group("n"))
        unit = unit_of(m.group("u"))
        if low == high and unit == "day":
            return DayRef(st.ctx.today + timedelta(days=sign * low))
        if sign < 0:
            return _merge(unit_span(unit, -high, st), unit_span(unit, -low, st))
        return _merge(unit_span(unit, low, st), unit_span(unit, high, st))

    return handle


#: A half of each unit, in a finer one: "half a year" is 6 months, "a day and a half" 36 hours.
_HALF: dict[str, tuple[str, int]] = {
    "year": ("month", 6),
    "month": ("day", 15),
    "fortnight": ("day", 7),
    "week": ("day", 3),
    "day": ("hour", 12),
    "hour": ("minute", 30),
}
#: Each unit in the finer unit of its half.
_WHOLE: dict[str, int] = {"year": 12, "month": 30, "fortnight": 14, "week": 7, "day": 24, "hour": 60}


def half_offset(sign: int) -> Handler:
    """ "half a year ago" (``sign`` -1), "two and a half years ago", "in half an hour" (+1): the
    finer unit that far away (six months, thirty months, thirty minutes)."""

    def handle(m: re.Match[str], st: State) -> Piece | None:
        unit = unit_of(m.group("u"))
        if unit not in _HALF:
            return None
        finer, half = _HALF[unit]
        count = m.groupdict().get("n")
        whole = count_of(count)[0] * _WHOLE[unit] if count else 0
        steps = sign * (whole + half)
        if finer == "day":
            return DayRef(st.ctx.today + timedelta(days=steps))
        return unit_span(finer, steps, st)

    return handle


def _shift_local(local: datetime, unit: str, steps: int) -> datetime:
    if unit in ("month", "year", "decade"):
        months = steps * {"month": 1, "year": 12, "decade": 120}[unit]
        return datetime.combine(shift_months(local.date(), months), local.time())
    days = {"day": 1, "week": 7, "fortnight": 14}[unit]
    return local + timedelta(days=days * steps)


def rolling(m: re.Match[str], st: State) -> Piece | None:
    """ "the past 3 days", "the next two weeks": from the session that long back or ahead."""
    ctx = st.ctx
    direction = (m.group("dir") or m.groupdict().get("dir2") or "").lower()
    count = m.groupdict().get("n")
    steps = count_of(count)[1] if count else 1
    unit = unit_of(m.group("u"))
    sign = 1 if direction in ("next", "coming", "following") else -1
    if unit in ("second", "minute", "hour"):
        other = ctx.session + sign * timedelta(**{unit + "s": steps})
    else:
        other = to_utc_wall(_shift_local(ctx.local, unit, sign * steps), ctx.zone)
    precision = UNIT_PRECISION[unit]
    if sign < 0:
        return Span(other, ctx.session, precision)
    return Span(ctx.session, other, precision)


def calendar_relative(m: re.Match[str], st: State) -> Piece | None:
    """ "last week", "this month", "next year", "the week before last"."""
    mod = modifier_of(m)
    rel = m.groupdict().get("rel")
    steps = {"last": -1, "this": 0, "next": 1, "previous": -1, "coming": 1, "current": 0, "this past": -1}
    step = steps[mod] if mod else (-2 if rel and rel.lower().startswith("before") else 2)
    unit = m.group("u").lower()
    today = st.ctx.today
    if unit == "quarter":
        first = add_months(date(today.year, (today.month - 1) // 3 * 3 + 1, 1), 3 * step)
        return span_of_days(quarter_range(first.year, (first.month + 2) // 3), "quarter", st.ctx)
    if unit == "century":
        return span_of_days(century_range(today.year // 100 * 100 + 100 * step), "century", st.ctx)
    return unit_span(unit, step, st)


def earlier_later(m: re.Match[str], st: State) -> Piece | None:
    """ "earlier today", "later this week": the part of the period before or after the session."""
    ctx = st.ctx
    unit = (m.group("u") or "day").lower()
    period = unit_span(unit, 0, st)
    if m.group("el").lower() == "earlier":
        return Span(period.start, ctx.session, period.precision) if period.start < ctx.session else None
    return Span(ctx.session, period.end, period.precision)


def now(m: re.Match[str], st: State) -> Piece | None:
    if not st.strict and m.group(0).lower() == "now" and not st.cue:
        return None
    return Span(st.ctx.session, st.ctx.session + timedelta(microseconds=1), "instant")


def weekend(m: re.Match[str], st: State) -> Piece | None:
    mod = modifier_of(m)
    rel = m.group("rel")
    today = st.ctx.today
    if mod == "this":
        return span_of_days(weekend_range(today), "weekend", st.ctx)
    candidates = [weekend_range(today + timedelta(days=7 * k)) for k in range(-4, 5)]
    pick = pick_of(mod, st.ctx)
    if rel:
        pick = "last" if rel.lower().startswith("before") else "next"
    chosen = choose(candidates, today, pick)
    if chosen is None:
        return None
    if rel:
        shift = timedelta(days=-7 if pick == "last" else 7)
        chosen = (chosen[0] + shift, chosen[1] + shift)
    return span_of_days(chosen, "weekend", st.ctx)


def month_year(m: re.Match[str], st: State) -> Piece | None:
    month = MONTHS[m.group("mon").lower().rstrip(".")]
    return span_of_days(month_range(int(m.group("y")), month), "month", st.ctx)


def iso_month(m: re.Match[str], st: State) -> Piece | None:
    month = int(m.group("mo"))
    if not 1 <= month <= 12:
        return None
    return span_of_days(month_range(int(m.group("y")), month), "month", st.ctx)


def iso_week(m: re.Match[str], st: State) -> Piece | None:
    try:
        monday = date.fromisocalendar(int(m.group("y")), int(m.group("w")), 1)
    except ValueError:
        return None
    return span_of_days((monday, monday + timedelta(days=7)), "week", st.ctx)


def month_alone(m: re.Match[str], st: State) -> Piece | None:
    mod = modifier_of(m)
    name = m.group("mon").lower().rstrip(".")
    if not (mod or st.cue):
        return None
    month = MONTHS[name]
    year = st.ctx.today.year
    if mod == "this":
        return span_of_days(month_range(year, month), "month", st.ctx)
    candidates = [month_range(y, month) for y in range(year - 2, year + 3)]
    chosen = choose(candidates, st.ctx.today, pick_of(mod, st.ctx))
    return span_of_days(chosen, "month", st.ctx) if chosen else None


_QUARTER_WORDS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}


def quarter(m: re.Match[str], st: State) -> Piece | None:
    groups = m.groupdict()
    number = groups.get("q")
    value = int(number) if number else _QUARTER_WORDS[groups["qw"].lower()]
    year = groups.get("y")
    if year is None and not st.cue:
        return None
    return span_of_days(quarter_range(int(year) if year else st.ctx.today.year, value), "quarter", st.ctx)


_OF_SOMETHING = re.compile(r"\s+of\s+(?!\d)", re.I)


def season(m: re.Match[str], st: State) -> Piece | None:
    mod = modifier_of(m)
    name = m.group("s").lower()
    starts = SEASON_STARTS[st.ctx.hemisphere]["autumn" if name == "fall" else name]
    if m.group("y"):
        return span_of_days(season_range(starts, int(m.group("y"))), "season", st.ctx)
    if not (mod or st.cue) or (name == "fall" and not st.strict and _OF_SOMETHING.match(m.string, m.end())):
        return None  # "the fall of Rome"
    year = st.ctx.today.year
    candidates = [season_range(starts, y) for y in range(year - 2, year + 3)]
    pick: Pick = "nearest" if mod == "this" else pick_of(mod, st.ctx)
    chosen = choose(candidates, st.ctx.today, pick)
    return span_of_days(chosen, "season", st.ctx) if chosen else None


def year(m: re.Match[str], st: State) -> Piece | None:
    value = int(m.group("y"))
    if not 1000 <= value <= 2999 or not (st.cue or m.group(0).lower().startswith("the")):
        return None
    return span_of_days(year_range(value), "year", st.ctx)


_DECADE_WORDS = {
    "noughties": 0,
    "aughts": 0,
    "twenties": 20,
    "thirties": 30,
    "forties": 40,
    "fifties": 50,
    "sixties": 60,
    "seventies": 70,
    "eighties": 80,
    "nineties": 90,
}


def _recent_decade(two_digits: int, ctx: Context) -> int:
    """The latest decade ending in ``two_digits`` that started by the session's year."""
    year = ctx.today.year
    return year - (year - two_digits) % 100


def decade(m: re.Match[str], st: State) -> Piece | None:
    text = m.group(0).lower()
    groups = m.groupdict()
    has_the = text.startswith("the")
    if groups.get("d4"):
        first = int(groups["d4"])
        if first % 100 == 0 and first < 2000:
            return span_of_days(century_range(first), "century", st.ctx)
        return span_of_days(decade_range(first), "decade", st.ctx)
    if groups.get("d2"):
        if not (st.strict or has_the or "'" in text or "’" in text):
            return None
        return span_of_days(decade_range(_recent_decade(int(groups["d2"]), st.ctx)), "decade", st.ctx)
    if not (st.strict or has_the):
        return None
    return span_of_days(decade_range(_recent_decade(_DECADE_WORDS[groups["w"]], st.ctx)), "decade", st.ctx)


def century(m: re.Match[str], st: State) -> Piece | None:
    number = int(m.group("d")) if m.group("d") else ordinal_value(m.group("dw"))
    if not 1 <= number <= 30:
        return None
    return span_of_days(century_range((number - 1) * 100), "century", st.ctx)


# -- times of day -------------------------------------------------------------------------------


def _hour_value(text: str) -> int:
    return int(text) if text.isdigit() else HOUR_WORDS[text.lower()]


def clock_ampm(m: re.Match[str], st: State) -> Piece | None:
    hour = _hour_value(m.group("h"))
    minute = int(m.group("mi") or 0)
    if not 1 <= hour <= 12 or minute > 59:
        return None
    hour = hour % 12 + (12 if m.group("ap").lower() == "p" else 0)
    precision: Precision = "second" if m.group("s") else ("minute" if m.group("mi") else "hour")
    second = int(m.group("s") or 0)
    return ClockRef(hour, minute, second, 0, precision, "fixed") if second < 60 else None


def clock_24(m: re.Match[str], st: State) -> Piece | None:
    raw = m.group("h")
    hour, minute = int(raw), int(m.group("mi"))
    second = int(m.group("s") or 0)
    if hour > 24 or minute > 59 or second > 59 or (hour == 24 and (minute or second)):
        return None
    fraction = m.group("f")
    precision: Precision = "instant" if fraction else ("second" if m.group("s") else "minute")
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    sure = hour == 0 or hour > 12 or raw.startswith("0")
    return ClockRef(hour, minute, second, micro, precision, "fixed" if sure else "written")


def clock_oclock(m: re.Match[str], st: State) -> Piece | None:
    hour = _hour_value(m.group("h"))
    return ClockRef(hour, 0, 0, 0, "hour", "oclock") if 1 <= hour <= 12 else None


def clock_word(m: re.Match[str], st: State) -> Piece | None:
    word = m.group("w").lower()
    return ClockRef(24 if word == "midnight" else 12, 0, 0, 0, "hour", "fixed")


def clock_bare(m: re.Match[str], st: State) -> Piece | None:
    hour = _hour_value(m.group("h"))
    return ClockRef(hour, 0, 0, 0, "hour", "bare") if 1 <= hour <= 12 else None


# -- the tables ----------------------------------------------------------------------------------

_FLAGS = re.I
_END = r"(?![\w])"
WEEKDAY_PREFIX = rf"(?:{weekday_pattern('pwd')}(?:\s*,)?\s+)?"
_HOLIDAY = (
    r"(?P<name>christmas\s+eve|christmas(?:\s+day)?|boxing\s+day|new\s+year['’]?s\s+eve|"
    r"new\s+year['’]?s(?:\s+day)?|halloween|valentine['’]?s(?:\s+day)?)"
)


def _c(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern + _END, _FLAGS)


#: Atoms that name a date, a span or a part of a day, tried at every position.
ATOMS: list[tuple[re.Pattern[str], Handler]] = [
    (
        _c(
            r"(?P<y>\d{4})-(?P<mo>\d{2})-(?P<d>\d{2})[t\s](?P<h>\d{2}):(?P<mi>\d{2})"
            r"(?::(?P<s>\d{2})(?:[.,](?P<f>\d{1,9}))?)?(?:\s*(?P<tz>z|utc|[+-]\d{2}(?::?\d{2})?))?"
        ),
        iso_datetime,
    ),
    (_c(r"(?P<y>\d{4})-(?P<mo>\d{1,2})-(?P<d>\d{1,2})(?!\d)"), iso_date),
    (_c(r"(?P<y>\d{4})/(?P<mo>\d{1,2})/(?P<d>\d{1,2})(?![\d/])"), iso_date),
    (_c(r"(?P<a>\d{1,2})(?P<sep>[/.\-])(?P<b>\d{1,2})(?P=sep)(?P<y>\d{4}|\d{2})(?!\d|[/.\-]\d)"), numeric_date),
    (_c(r"(?P<a>\d{1,2})/(?P<b>\d{1,2})(?![\d/])"), numeric_day_month),
    (
        _c(
            WEEKDAY_PREFIX
            + r"(?:the\s+)?"
            + day_number_pattern("d")
            + r"(?:\s+of)?\s+"
            + month_pattern("mon")
            + rf"(?:\s*(?:,\s*)?{YEAR})?"
        ),
        named_date,
    ),
    (
        _c(
            WEEKDAY_PREFIX
            + month_pattern("mon")
            + r"\s+(?:the\s+)?"
            + day_number_pattern("d")
            + rf"(?![:.]?\d)(?:\s*(?:,\s*)?{YEAR})?"
        ),
        named_date,
    ),
    (
        _c(
            month_pattern("mon")
            + r"\s+(?P<d1>\d{1,2})(?:st|nd|rd|th)?\s*[-–—]\s*(?P<d2>\d{1,2})(?:st|nd|rd|th)?(?![:.]?\d)"
            + rf"(?:\s*(?:,\s*)?{YEAR})?"
        ),
        named_day_range,
    ),
    (
        _c(
            r"(?P<d1>\d{1,2})(?:st|nd|rd|th)?\s*[-–—]\s*(?P<d2>\d{1,2})(?:st|nd|rd|th)?(?:\s+of)?\s+"
            + month_pattern("mon")
            + rf"(?:\s*(?:,\s*)?{YEAR})?"
        ),
        named_day_range,
    ),
    (_c(r"(?:the\s+)?(?:(?P<d>\d{1,2})(?:st|nd|rd|th)|(?P<dw>" + ORDINAL_ALT + "))"), day_of_month),
    (_c(rf"(?:{MODIFIER}\s+)?{_HOLIDAY}(?:\s*(?:,\s*)?{YEAR})?"), holiday),
    (
        _c(
            rf"(?:{MODIFIER}\s+)?{weekday_pattern('wd')}"
            r"(?:\s+(?P<rel>before\s+last|after\s+next)|\s+(?:of\s+)?(?P<wk>last|this|next)\s+week)?"
        ),
        weekday,
    ),
    (
        _c(
            r"(?P<w>today|tomorrow|yesterday|tonight|last\s+night|(?:the\s+)?day\s+before\s+yesterday|"
            r"(?:the\s+)?day\s+after\s+tomorrow|this\s+(?:morning|afternoon|evening))"
        ),
        relative_day,
    ),
    (_c(r"(?:a\s+)?half\s+(?:a|an)\s+(?P<u>year|month|week|day|hour)\s+(?:ago|back)"), half_offset(-1)),
    (_c(rf"{COUNT}\s+{UNIT}\s+and\s+a\s+half\s+(?:ago|back)"), half_offset(-1)),
    (_c(rf"{COUNT}\s+and\s+a\s+half\s+{UNIT}\s+(?:ago|back)"), half_offset(-1)),
    (_c(r"in\s+(?:a\s+)?half\s+(?:a|an)\s+(?P<u>year|month|week|day|hour)"), half_offset(1)),
    (_c(rf"{COUNT}\s+{UNIT}\s+(?:ago|back)"), offset(-1)),
    # "I've been running for three years now": it began that long before the session
    (_c(rf"{COUNT}\s+{UNIT}\s+now"), offset(-1)),
    (_c(rf"in\s+{COUNT}\s+{UNIT}"), offset(1)),
    (_c(rf"{COUNT}\s+{UNIT}\s+from\s+(?:now|today)"), offset(1)),
    (_c(rf"(?:the\s+)?(?P<dir>past|last|previous|next|coming|following)\s+{COUNT}\s+{UNIT}"), rolling),
    (
        _c(
            r"(?:the\s+(?P<dir>past|last|previous|next|coming|following)|(?P<dir2>past))\s+"
            r"(?P<u>hour|week|fortnight|month|year|decade)"
        ),
        rolling,
    ),
    (
        _c(
            r"(?:(?P<mod>this\s+past|last|this|next|previous|coming|current)\s+"
            r"(?P<u>week|month|year|quarter|decade|century))"
        ),
        calendar_relative,
    ),
    (_c(r"(?:the\s+)?(?P<u>week|month|year)\s+(?P<rel>before\s+last|after\s+next)"), calendar_relative),
    (_c(r"(?P<el>earlier|later)\s+(?:today|this\s+(?P<u>week|month|year))"), earlier_later),
    (_c(r"(?:right\s+)?now"), now),
    (_c(rf"(?:{MODIFIER}\s+|the\s+)?weekend(?:\s+(?P<rel>before\s+last|after\s+next))?"), weekend),
    (_c(month_pattern("mon") + rf"(?:\s*,)?\s+(?:of\s+)?{YEAR}"), month_year),
    (_c(r"(?P<y>\d{4})-(?P<mo>\d{2})(?![\d\-])"), iso_month),
    (_c(r"(?P<y>\d{4})-?w(?P<w>\d{2})(?!\d)"), iso_week),
    (_c(rf"(?:{MODIFIER}\s+)?(?:the\s+month\s+of\s+)?" + month_pattern("mon")), month_alone),
    (_c(r"q(?P<q>[1-4])(?:\s*(?:,\s*)?(?P<y>\d{4})(?!\d))?"), quarter),
    (_c(r"(?P<y>\d{4})\s*(?:-\s*)?q(?P<q>[1-4])"), quarter),
    (_c(r"(?:the\s+)?(?P<qw>first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter(?:\s+of)?\s+(?P<y>\d{4})"), quarter),
    (_c(rf"(?:{MODIFIER}\s+|the\s+)?(?P<s>spring|summer|autumn|fall|winter)(?:\s+(?:of\s+)?{YEAR})?"), season),
    (_c(r"(?:the\s+year\s+)?(?P<y>\d{4})(?!\d|['’]?s(?![a-z]))"), year),
    (_c(r"(?:the\s+)?(?:(?P<d4>\d{3}0)|['’]?(?P<d2>\d0))['’]?s"), decade),
    (_c(r"(?:the\s+)?(?P<w>" + "|".join(_DECADE_WORDS) + ")"), decade),
    (_c(r"(?:the\s+)?(?:(?P<d>\d{1,2})(?:st|nd|rd|th)|(?P<dw>" + ORDINAL_ALT + r"))\s+century"), century),
]

#: Atoms that name a time of day.
CLOCKS: list[tuple[re.Pattern[str], Handler]] = [
    (_c(HOUR_PATTERN + r"(?:[:.](?P<mi>\d{2}))?(?::(?P<s>\d{2}))?\s*(?P<ap>[ap])(?:m|\.m\.?)"), clock_ampm),
    (_c(r"(?P<h>\d{1,2}):(?P<mi>\d{2})(?::(?P<s>\d{2})(?:[.,](?P<f>\d{1,6}))?)?(?![\d:])"), clock_24),
    (_c(HOUR_PATTERN + r"\s*o['’]?\s*clock"), clock_oclock),
    (_c(r"(?:12\s*)?(?P<w>noon|midday|midnight)"), clock_word),
    (_c(HOUR_PATTERN + r"(?![\d:.,/%])"), clock_bare),
]

#: A part of the day after a date ("Monday morning", "tomorrow in the evening").
DAY_PART = re.compile(r"\s+(?:in\s+the\s+)?(?P<pod>morning|afternoon|evening|night)" + _END, _FLAGS)
#: A part of the day after a time ("9 in the morning", "11 at night").
CLOCK_PART = re.compile(r"\s*(?:in\s+the\s+(?P<pod>morning|afternoon|evening)|at\s+night)" + _END, _FLAGS)
#: Between a date and its time ("Monday at 3pm", "2024-03-03 15:30").
DAY_TO_CLOCK = re.compile(r"\s*(?:,\s*)?(?:at\s+|@\s*|around\s+|about\s+)?", _FLAGS)
#: Between a time and its date ("3pm yesterday", "9:30 on Friday").
CLOCK_TO_DAY = re.compile(r"\s*(?:,\s*)?(?:on\s+|of\s+)?", _FLAGS)
