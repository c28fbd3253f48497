"""How atoms combine into whole time expressions, and the scan that finds them in text.

Three levels, each taking the longest reading at a position:

1. a compound: a date with its part of the day and time ("Monday morning at 9"), a time with
   its date ("3pm yesterday"), or any other atom;
2. a part of it: "early/mid/late X", "the beginning/middle/end of X";
3. a range: "since X", "until X", "from X to Y", "between X and Y", "X to Y", "X - Y".
"""

from __future__ import annotations

import re
from dataclasses import replace

from ._atoms import ATOMS, CLOCK_PART, CLOCK_TO_DAY, CLOCKS, DAY_PART, DAY_TO_CLOCK, unit_span
from ._calendar import PartName, part_of
from ._pieces import PRECISIONS, ClockRef, Context, DayRef, Span, State, finish, span_of_days
from ._words import COUNT_WORDS, MONTHS, ORDINAL_WORDS, WEEKDAY_WORDS

Found = tuple[int, Span]

_PART = re.compile(
    r"(?:the\s+)?(?:(?P<part>early|mid|late)(?:\s*-\s*|\s+)(?:in\s+)?|(?P<edge>beginning|start|middle|end)\s+of\s+)",
    re.I,
)
_PARTS: dict[str, PartName] = {"early": "early", "mid": "mid", "late": "late"}
_EDGES: dict[str, PartName] = {"beginning": "early", "start": "early", "middle": "mid", "end": "late"}
_THIS_UNIT = re.compile(r"(?:the|this)\s+(?P<u>week|month|year)(?![\w])", re.I)
_SINCE = re.compile(r"since\s+", re.I)
_UNTIL = re.compile(r"(?:until|till|til|up\s+(?:to|until))\s+", re.I)
_FROM = re.compile(r"from\s+", re.I)
_BETWEEN = re.compile(r"between\s+", re.I)
_AND = re.compile(r"\s+and\s+", re.I)
_TO = re.compile(r"\s*[-–—]\s*|\s+(?:to|until|till|through|thru)\s+", re.I)

#: Words a finder starts a reading at (besides numbers).
TRIGGERS = frozenset(
    list(MONTHS)
    + list(WEEKDAY_WORDS)
    + list(COUNT_WORDS)
    + list(ORDINAL_WORDS)
    + ["twenty", "thirty", "couple", "few", "several", "the", "this", "last", "next", "past", "previous"]
    + ["coming", "current", "early", "mid", "late", "since", "until", "till", "til", "up", "from", "between"]
    + ["in", "today", "tonight", "yesterday", "tomorrow", "day", "noon", "midday", "midnight", "now", "right"]
    + ["earlier", "later", "weekend", "spring", "summer", "autumn", "fall", "winter", "christmas", "new"]
    + ["boxing", "halloween", "valentine", "valentines", "q1", "q2", "q3", "q4", "beginning", "start"]
    + ["middle", "end", "noughties", "aughts", "twenties", "thirties", "forties", "fifties", "sixties"]
    + ["seventies", "eighties", "nineties", "1st", "2nd", "3rd", "4th", "half"]
)

#: Words after which a bare month, year, season, "the 15th" or "now" reads as a time.
CUES = frozenset(
    [
        "in",
        "on",
        "during",
        "since",
        "until",
        "till",
        "til",
        "by",
        "from",
        "through",
        "throughout",
        "around",
        "about",
        "before",
        "after",
        "of",
        "at",
        "for",
        "over",
        "within",
        "circa",
        "into",
        "than",
        "as",
    ]
)


def _trie(words: list[str]) -> str:
    """An alternation of ``words`` grouped by common prefix, which the regex engine tries fast."""
    branches: dict[str, list[str]] = {}
    ends = False
    for word in words:
        if word:
            branches.setdefault(word[0], []).append(word[1:])
        else:
            ends = True
    if not branches:
        return ""
    parts = [re.escape(first) + _trie(rest) for first, rest in sorted(branches.items())]
    body = parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"
    return f"(?:{body})?" if ends else body


#: Where a finder tries a reading: a number, or a trigger word standing alone.
_CANDIDATE = re.compile(r"(?<![\w'’])(?:['’]?\d|" + _trie(sorted(TRIGGERS)) + r"(?!\w))", re.I)
_LAST_WORD = re.compile(r"(\w+)\W*$")


def _unnamed(pattern: str) -> str:
    return re.sub(r"\(\?P<\w+>", "(?:", pattern).replace("(?P=sep)", r"[/.\-]")


#: Matches wherever any reading could start: a cheap test before trying each atom.
_START = re.compile(
    "|".join(
        f"(?:{_unnamed(p.pattern)})"
        for p in [*(a[0] for a in ATOMS), *(c[0] for c in CLOCKS), _PART, _SINCE, _UNTIL, _FROM, _BETWEEN]
    ),
    re.I,
)


def _is_clock_like(span: Span) -> bool:
    return PRECISIONS.index(span.precision) < PRECISIONS.index("part_of_day")


def _coarser(a: Span, b: Span) -> Span:
    return a if PRECISIONS.index(a.precision) >= PRECISIONS.index(b.precision) else b


def _longest(found: list[Found]) -> Found | None:
    best: Found | None = None
    for item in found:
        if best is None or item[0] > best[0]:
            best = item
    return best


class Parser:
    """Reads time expressions in one text against one context."""

    def __init__(self, text: str, ctx: Context, *, strict: bool) -> None:
        self.text = text
        self.ctx = ctx
        self.strict = strict

    # -- level 1: atoms and compounds ------------------------------------------------------------

    def _atoms_at(self, pos: int, st: State) -> tuple[list[Found], list[tuple[int, DayRef]]]:
        """The spans and the dates (with a part of the day after them) that start at ``pos``."""
        spans: list[Found] = []
        days: list[tuple[int, DayRef]] = []
        for pattern, handler in ATOMS:
            m = pattern.match(self.text, pos)
            if m is None:
                continue
            piece = handler(m, st)
            if isinstance(piece, Span):
                spans.append((m.end(), piece))
            elif isinstance(piece, DayRef):
                days.append((m.end(), piece))
                part = DAY_PART.match(self.text, m.end()) if piece.pod is None else None
                if part:
                    days.append((part.end(), DayRef(piece.day, part.group("pod").lower())))
        return spans, days

    def _clocks_at(self, pos: int, st: State) -> list[tuple[int, ClockRef]]:
        clocks: list[tuple[int, ClockRef]] = []
        for pattern, handler in CLOCKS:
            m = pattern.match(self.text, pos)
            if m:
                piece = handler(m, st)
                if isinstance(piece, ClockRef):
                    clocks.append((m.end(), piece))
                    part = CLOCK_PART.match(self.text, m.end())
                    if part:
                        pod = (part.group("pod") or "night").lower()
                        clocks.append((part.end(), replace(piece, pod=pod)))
        return clocks

    def compound(self, pos: int, cue: bool) -> Found | None:
        st = State(self.ctx, self.strict, cue)
        found, days = self._atoms_at(pos, st)
        for end, day in days:
            if (alone := finish(day, None, self.ctx)) is not None:
                found.append((end, alone))
            gap = DAY_TO_CLOCK.match(self.text, end)
            if gap:
                for clock_end, clock in self._clocks_at(gap.end(), st):
                    if (both := finish(day, clock, self.ctx)) is not None:
                        found.append((clock_end, both))
        for end, clock in self._clocks_at(pos, st):
            if (alone := finish(None, clock, self.ctx)) is not None:
                found.append((end, alone))
            gap = CLOCK_TO_DAY.match(self.text, end)
            if gap:
                for day_end, day in self._atoms_at(gap.end(), State(self.ctx, self.strict, True))[1]:
                    if (both := finish(day, clock, self.ctx)) is not None:
                        found.append((day_end, both))
        return _longest(found)

    # -- level 2: parts of a period --------------------------------------------------------------

    def part(self, pos: int, cue: bool) -> Found | None:
        found: list[Found] = []
        if (plain := self.compound(pos, cue)) is not None:
            found.append(plain)
        m = _PART.match(self.text, pos)
        if m:
            which: PartName = _PARTS[m.group("part").lower()] if m.group("part") else _EDGES[m.group("edge").lower()]
            inner: Found | None = None
            this = _THIS_UNIT.match(self.text, m.end())
            if this:
                inner = (this.end(), unit_span(this.group("u").lower(), 0, State(self.ctx, self.strict, True)))
            inner = _longest([x for x in (inner, self.compound(m.end(), True)) if x is not None])
            if inner and inner[1].days:
                days = part_of(inner[1].days, inner[1].precision, which)
                if days:
                    found.append((inner[0], span_of_days(days, inner[1].precision, self.ctx)))
        return _longest(found)

    # -- level 3: ranges -------------------------------------------------------------------------

    def _range(self, first: Span, second_at: int, second: Found) -> Found | None:
        """``first`` to ``second``: from the start of one to the end of the other (to the start
        of a time of day)."""
        if second[1].end <= first.start:
            # "from Friday to Monday": read the end again from the start, looking ahead.
            local = first.start.astimezone(self.ctx.zone).replace(tzinfo=None)
            anchored = replace(self.ctx, session=first.start, local=local, prefer="future")
            again = Parser(self.text, anchored, strict=self.strict).part(second_at, True)
            if again is None:
                return None
            second = again
        last = second[1]
        end = last.start if _is_clock_like(last) else last.end
        if end <= first.start:
            return None
        return second[0], Span(first.start, end, _coarser(first, last).precision)

    def parse(self, pos: int, cue: bool) -> Found | None:
        """The longest reading at ``pos``, or ``None``."""
        found: list[Found] = []
        plain = self.part(pos, cue)
        if plain is not None:
            found.append(plain)
            to = _TO.match(self.text, plain[0])
            second = self.part(to.end(), True) if to else None
            if to and second and (joined := self._range(plain[1], to.end(), second)):
                found.append(joined)
        session = self.ctx.session
        m = _SINCE.match(self.text, pos)
        if m and (inner := self.part(m.end(), True)) and inner[1].start < session:
            found.append((inner[0], Span(inner[1].start, session, inner[1].precision)))
        m = _UNTIL.match(self.text, pos)
        if m and (inner := self.part(m.end(), True)):
            end = inner[1].start if _is_clock_like(inner[1]) else inner[1].end
            if end > session:
                found.append((inner[0], Span(session, end, inner[1].precision)))
        for opener, joiner in ((_FROM, _TO), (_BETWEEN, _AND)):
            m = opener.match(self.text, pos)
            first = self.part(m.end(), True) if m else None
            link = joiner.match(self.text, first[0]) if first else None
            second = self.part(link.end(), True) if link else None
            if first and link and second and (joined := self._range(first[1], link.end(), second)):
                found.append(joined)
        return _longest(found)

    # -- the scan --------------------------------------------------------------------------------

    def scan(self, limit: int | None = None) -> list[tuple[int, int, Span]]:
        """Every expression in the text, left to right, none overlapping (the first ``limit``)."""
        found: list[tuple[int, int, Span]] = []
        taken = 0
        for candidate in _CANDIDATE.finditer(self.text):
            pos = candidate.start()
            if pos < taken or not _START.match(self.text, pos):
                continue
            before = _LAST_WORD.search(self.text, max(taken, pos - 40), pos)
            try:
                hit = self.parse(pos, before is not None and before.group(1).lower() in CUES)
            except (ValueError, OverflowError):
                hit = None  # a date past year 1 or 9999
            if hit is not None:
                found.append((pos, hit[0], hit[1]))
                taken = hit[0]
                if limit is not None and len(found) >= limit:
                    break
        return found
