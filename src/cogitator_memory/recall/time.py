"""Time words to intervals: :func:`resolve_time` and :func:`find_times`.

A conversation says "last Tuesday", "in March" or "the 90s"; memory needs instants. Both
functions read such words against the moment they were said (``session_at``) in the speaker's
IANA time zone, and give an interval ``[start, end)`` in UTC with its precision. Day boundaries
are the zone's local midnights, so a day across a DST change lasts 23 or 25 hours.

Only the standard library is used (:mod:`zoneinfo` with the system's zone database). The
rules for each kind of expression are in ``docs/time.md``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal, TypeAlias
from zoneinfo import TZPATH, ZoneInfo, ZoneInfoNotFoundError

from ..errors import InvalidArgumentError
from ._calendar import shift_months, to_utc_wall
from ._parser import Parser
from ._pieces import PRECISIONS, Context, Precision
from ._words import COUNT, count_of

Prefer: TypeAlias = Literal["nearest", "past", "future"]
Hemisphere: TypeAlias = Literal["north", "south"]


@dataclass(frozen=True, slots=True)
class TimeInterval:
    """The time an expression names: ``[start, end)`` in UTC, and how precise it is.

    ``start`` is inclusive and ``end`` exclusive, both timezone-aware in UTC. ``precision``
    is the unit the expression was given in: ``instant``, ``second``, ``minute``, ``hour``,
    ``part_of_day``, ``day``, ``weekend``, ``week``, ``month``, ``quarter``, ``season``,
    ``year``, ``decade`` or ``century`` (see :data:`PRECISIONS`). "early March" keeps the
    precision ``month`` over a narrower interval; a range keeps the coarser precision of its ends.
    """

    start: datetime
    end: datetime
    precision: Precision

    @property
    def duration(self) -> timedelta:
        """How long the interval lasts (a local day across a DST change is 23 or 25 hours)."""
        return self.end - self.start

    def contains(self, moment: datetime) -> bool:
        """Whether ``moment`` (naive taken as UTC) falls inside the interval."""
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return self.start <= moment < self.end

    def overlaps(self, other: TimeInterval) -> bool:
        """Whether the two intervals share any instant."""
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True, slots=True)
class TimeMention:
    """A time expression found in a text: its words, where they are, and what they name.

    ``span`` is ``(start, end)`` in the text, so ``text[start:end] == mention.text``.
    Prepositions before the expression ("on", "in", "at") are not part of it; words that change
    its meaning ("since", "until", "from ... to", "in 3 days") are.
    """

    text: str
    span: tuple[int, int]
    interval: TimeInterval


_FILLER = re.compile(
    r"(?:on|in|at|during|around|about|approximately|approx\.?|roughly|circa|ca\.|c\.|over|within|"
    r"throughout|by|sometime|some\s+time|back\s+in|back|as\s+of|for|from|of)\s+",
    re.I,
)
_EDGE_JUNK = '"“”‘’«»()[]{}'


def zone_of(time_zone: str | tzinfo) -> tzinfo:
    """The zone ``time_zone`` names: a tzinfo as it is, an IANA name (``"Europe/Lisbon"``) read
    from the zone database; anything else, or an unknown name, is an
    :class:`~cogitator_memory.errors.InvalidArgumentError` naming ``time_zone``."""
    if isinstance(time_zone, tzinfo):
        return time_zone
    if not isinstance(time_zone, str):
        raise InvalidArgumentError(
            "time_zone", f"must be an IANA time zone name or a tzinfo, got {type(time_zone).__name__}"
        )
    try:
        return ZoneInfo(time_zone)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidArgumentError("time_zone", f"unknown time zone {time_zone!r}") from None


def zone_name(time_zone: str | tzinfo) -> str:
    """The name to show for a zone given as :func:`zone_of` takes it: the name given, else the
    tzinfo's IANA key, else what the tzinfo prints as."""
    if isinstance(time_zone, str):
        return time_zone
    return str(getattr(time_zone, "key", None) or time_zone)


@lru_cache(maxsize=1)
def _zone_latitudes() -> dict[str, bool]:
    """Zone name -> whether it lies south of the equator, from the zone database's tables."""
    texts: list[str] = []
    for folder in TZPATH:
        for name in ("zone1970.tab", "zone.tab"):
            path = Path(folder) / name
            if path.is_file():
                texts.append(path.read_text(encoding="utf-8", errors="replace"))
    if not texts:
        try:
            package = resources.files("tzdata").joinpath("zoneinfo")
            for name in ("zone1970.tab", "zone.tab"):
                if package.joinpath(name).is_file():
                    texts.append(package.joinpath(name).read_text(encoding="utf-8"))
        except (ModuleNotFoundError, FileNotFoundError, OSError):
            pass
    south: dict[str, bool] = {}
    for text in texts:
        for line in text.splitlines():
            fields = line.split("\t")
            if len(fields) >= 3 and not line.startswith("#") and fields[1][:1] in "+-":
                south.setdefault(fields[2], fields[1].startswith("-"))
    return south


def zone_hemisphere(time_zone: str | tzinfo) -> Hemisphere:
    """The hemisphere whose seasons a zone keeps: ``south`` for a zone whose principal place lies
    south of the equator in the zone database's tables (``zone1970.tab``), else ``north``."""
    key = time_zone if isinstance(time_zone, str) else getattr(time_zone, "key", None)
    return "south" if key and _zone_latitudes().get(key, False) else "north"


def _context(session_at: object, time_zone: object, prefer: object, day_first: object, hemisphere: object) -> Context:
    if not isinstance(session_at, datetime):
        raise InvalidArgumentError("session_at", f"must be a datetime, got {type(session_at).__name__}")
    zone = zone_of(time_zone)  # type: ignore[arg-type]  # checked there
    if prefer not in ("nearest", "past", "future"):
        raise InvalidArgumentError("prefer", f"must be 'nearest', 'past' or 'future', got {prefer!r}")
    if not isinstance(day_first, bool):
        raise InvalidArgumentError("day_first", f"must be a bool, got {type(day_first).__name__}")
    if hemisphere not in (None, "north", "south"):
        raise InvalidArgumentError("hemisphere", f"must be 'north', 'south' or None, got {hemisphere!r}")
    session = session_at.replace(tzinfo=UTC) if session_at.tzinfo is None else session_at.astimezone(UTC)
    try:
        local = session.astimezone(zone).replace(tzinfo=None)
    except OverflowError:
        raise InvalidArgumentError("session_at", "is out of the datetime range in that time zone") from None
    return Context(
        zone=zone,
        session=session,
        local=local,
        prefer=prefer,
        day_first=day_first,
        hemisphere=hemisphere or zone_hemisphere(zone),
    )


def resolve_time(
    expression: str,
    session_at: datetime,
    time_zone: str | tzinfo = "UTC",
    *,
    prefer: Prefer = "nearest",
    day_first: bool = True,
    hemisphere: Hemisphere | None = None,
) -> TimeInterval | None:
    """The interval a whole time expression names, read from ``session_at`` in ``time_zone``.

    ``expression`` is the time words alone ("last Tuesday", "on 3 March 2024 at 5pm", "since
    the 90s"); prepositions in front ("on", "in", "around", "back in") are ignored. Text that
    is not a time expression gives ``None``. ``session_at`` is when it was said (naive: UTC);
    ``time_zone`` an IANA name or a tzinfo. ``prefer`` chooses among occurrences of a date
    given without its year, week or cycle ("Monday", "March", "3 May", "summer"): the
    ``nearest`` one (default), or the one in the ``past`` or ``future`` of the session.
    ``day_first`` reads 03/04/2024 as 3 April (default) or, when ``False``, as March 4.
    ``hemisphere`` fixes the seasons; by default it follows the zone (:func:`zone_hemisphere`).

    Raises :class:`~cogitator_memory.errors.InvalidArgumentError` naming the argument for a
    wrong type or an unknown time zone.
    """
    if not isinstance(expression, str):
        raise InvalidArgumentError("expression", f"must be a string, got {type(expression).__name__}")
    ctx = _context(session_at, time_zone, prefer, day_first, hemisphere)
    text = expression.strip().strip(_EDGE_JUNK).strip().rstrip(".,;:!?").rstrip()
    for _ in range(4):
        if not text:
            return None
        try:
            found = Parser(text, ctx, strict=True).parse(0, True)
        except (ValueError, OverflowError):
            found = None  # a date past year 1 or 9999
        if found is not None and found[0] == len(text):
            span = found[1]
            # a day a zone skipped (Samoa's 30 December 2011) lasts no time at all
            return TimeInterval(span.start, span.end, span.precision) if span.start < span.end else None
        filler = _FILLER.match(text)
        if not filler:
            return None
        text = text[filler.end() :]
    return None


def find_times(
    text: str,
    session_at: datetime,
    time_zone: str | tzinfo = "UTC",
    *,
    prefer: Prefer = "nearest",
    day_first: bool = True,
    hemisphere: Hemisphere | None = None,
    limit: int | None = None,
) -> list[TimeMention]:
    """Every time expression in ``text`` (the first ``limit``), left to right, with its span and interval.

    Reads what :func:`resolve_time` reads, with the same arguments, but inside running text it
    is more careful with words that are often not times: a bare month ("May"), year ("2019"),
    season ("fall") or day of the month ("the 15th") counts only after a word such as "in",
    "on", "since", "during" or "by"; "the 90s" needs "the" or an apostrophe ("in her 90s" is an
    age); weekday abbreviations ("sun", "sat") need a date or "last/next"; a bare number needs
    am/pm, a colon, "o'clock" or a part of the day. Expressions do not overlap: the longest
    reading at each place wins.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a string, got {type(text).__name__}")
    ctx = _context(session_at, time_zone, prefer, day_first, hemisphere)
    mentions: list[TimeMention] = []
    for start, end, span in Parser(text, ctx, strict=False).scan(limit):
        if span.start < span.end:
            mentions.append(
                TimeMention(text[start:end], (start, end), TimeInterval(span.start, span.end, span.precision))
            )
    return mentions


# "the week before the trip", "two days after my surgery", "the month leading up to the wedding":
# a length of time, before or after an event named by a determiner and up to five words.
_EVENT_STOP = (
    r"(?:and|or|but|when|where|what|which|who|whom|why|how|did|do|does|was|were|is|are|i|we|you|he|she|they|it)"
)
_EVENT_TIME = re.compile(
    r"\b(?P<u>minute|hour|day|night|week|fortnight|month|year)s?\s+"
    r"(?P<rel>before|after|prior\s+to|following|leading\s+up\s+to|ahead\s+of)\s+"
    r"(?P<event>(?:the|my|our|his|her|their|your|that|this)\s+[^\W\d_][\w'’\-]*"
    rf"(?:\s+(?!{_EVENT_STOP}\b)[^\W\d_][\w'’\-]*){{0,4}})",
    re.I,
)
# What may stand before the unit ("the", "two", "a few"), read back from it in a short window:
# the pattern above starts at the unit word, so a text is scanned once for few candidates.
_EVENT_LEAD = re.compile(rf"(?<![\w'’])(?:(?:the|a|an)\s+)?(?:{COUNT}\s+)\Z|(?<![\w'’])(?:the|a|an)\s+\Z", re.I)
_LEAD_WINDOW = 40
_EVENT_PRECISION: dict[str, Precision] = {
    "minute": "minute",
    "hour": "hour",
    "day": "day",
    "night": "day",
    "week": "week",
    "fortnight": "week",
    "month": "month",
    "year": "year",
}
_EVENT_DAYS = {"day": 1, "night": 1, "week": 7, "fortnight": 14}
#: The most event times :func:`find_event_times` reads in one text.
MAX_EVENT_TIMES = 16


@dataclass(frozen=True, slots=True)
class EventTime:
    """A time named from an event rather than the calendar: "the week before the trip".

    ``text`` and ``span`` are where it is in the text, ``event`` the words naming the event as
    written ("the trip"), ``before`` whether the time is before the event (else after it),
    ``count`` and ``unit`` how long it lasts ("two days" is ``2`` and ``day``; "a few days"
    counts the most, 4). When the event's date is known (the day a turn naming it was said),
    :meth:`interval` gives the time in the calendar.
    """

    text: str
    span: tuple[int, int]
    event: str
    before: bool
    count: int
    unit: str

    @property
    def precision(self) -> Precision:
        """The precision of the time it names (``day`` for days and nights, ``week``...)."""
        return _EVENT_PRECISION[self.unit]

    def interval(self, event_at: datetime, time_zone: str | tzinfo = "UTC") -> TimeInterval:
        """The time it names when the event was at ``event_at`` (naive is UTC), in ``time_zone``:
        for minutes and hours, that long before or after the instant; for longer units, whole
        local days: "the week before the trip" is the seven days before the trip's day, "the day
        after the trip" the day after it, "the month before" back to the same day a month earlier."""
        if not isinstance(event_at, datetime):
            raise InvalidArgumentError("event_at", f"must be a datetime, got {type(event_at).__name__}")
        if event_at.tzinfo is None:
            event_at = event_at.replace(tzinfo=UTC)
        event_at = event_at.astimezone(UTC)
        precision = self.precision
        if self.unit in ("minute", "hour"):
            length = timedelta(**{self.unit + "s": self.count})
            if self.before:
                return TimeInterval(event_at - length, event_at, precision)
            return TimeInterval(event_at, event_at + length, precision)
        zone = zone_of(time_zone)
        day = event_at.astimezone(zone).date()
        first = day if self.before else day + timedelta(days=1)

        def moved(d: date, sign: int) -> date:
            if self.unit in _EVENT_DAYS:
                return d + timedelta(days=sign * self.count * _EVENT_DAYS[self.unit])
            return shift_months(d, sign * self.count * (12 if self.unit == "year" else 1))

        start, end = (moved(first, -1), first) if self.before else (first, moved(first, 1))
        midnight = datetime.min.time()
        return TimeInterval(
            to_utc_wall(datetime.combine(start, midnight), zone),
            to_utc_wall(datetime.combine(end, midnight), zone),
            precision,
        )


def find_event_times(text: str, limit: int = MAX_EVENT_TIMES) -> list[EventTime]:
    """The times ``text`` names from an event ("the week before the trip", "two days after my
    surgery", "the month leading up to the wedding"), left to right, the first ``limit``.

    An event is named by a determiner ("the", "my", "our"...) and at most five words after it,
    up to a word such as "and", "when", "did" or a punctuation mark; "the day after tomorrow"
    is a calendar time (:func:`find_times`), not an event's."""
    if not isinstance(text, str):
        raise InvalidArgumentError("text", f"must be a string, got {type(text).__name__}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise InvalidArgumentError("limit", f"must be an integer >= 0, got {limit!r}")
    out: list[EventTime] = []
    for m in _EVENT_TIME.finditer(text):
        if len(out) >= limit:
            break
        start, end = m.span()
        window = text[max(0, start - _LEAD_WINDOW) : start]
        lead = _EVENT_LEAD.search(window)
        count = 1
        if lead is not None:
            start -= len(window) - lead.start()
            if lead.group("n"):
                count = count_of(lead.group("n"))[1]
        relation = re.sub(r"\s+", " ", m.group("rel").lower())
        unit = m.group("u").lower()
        before = relation not in ("after", "following")
        out.append(EventTime(text[start:end], (start, end), m.group("event"), before, count, unit))
    return out


__all__ = [
    "MAX_EVENT_TIMES",
    "PRECISIONS",
    "EventTime",
    "Hemisphere",
    "Precision",
    "Prefer",
    "TimeInterval",
    "TimeMention",
    "find_event_times",
    "find_times",
    "resolve_time",
    "zone_hemisphere",
    "zone_name",
    "zone_of",
]
