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
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal, TypeAlias
from zoneinfo import TZPATH, ZoneInfo, ZoneInfoNotFoundError

from ..errors import InvalidArgumentError
from ._parser import Parser
from ._pieces import PRECISIONS, Context, Precision

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


__all__ = [
    "PRECISIONS",
    "Hemisphere",
    "Precision",
    "Prefer",
    "TimeInterval",
    "TimeMention",
    "find_times",
    "resolve_time",
    "zone_hemisphere",
    "zone_name",
    "zone_of",
]
