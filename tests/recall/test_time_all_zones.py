"""Day, week and month boundaries are the local calendar's, in every zone of the database.

For each zone and session the checks are exact: a period starts at the first instant of its first
local date (the instant before belongs to an earlier date) and ends at the first instant of the
date after its last one, and consecutive periods meet without gap or overlap.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, available_timezones

import pytest

from cogitator_memory.recall import TimeInterval, resolve_time

ZONES = sorted(available_timezones())
TICK = timedelta(microseconds=1)

SESSIONS = [
    datetime(2024, 1, 15, 12, 0, tzinfo=UTC),
    datetime(2024, 2, 29, 21, 0, tzinfo=UTC),  # Kazakhstan's clocks moved on 1 March 2024
    datetime(2024, 3, 10, 7, 30, tzinfo=UTC),  # North America springs forward
    datetime(2024, 3, 31, 1, 30, tzinfo=UTC),  # Europe springs forward
    datetime(2024, 4, 7, 14, 0, tzinfo=UTC),  # Australia and New Zealand fall back
    datetime(2024, 10, 6, 16, 0, tzinfo=UTC),
    datetime(2024, 11, 3, 6, 30, tzinfo=UTC),
    datetime(2024, 12, 31, 23, 30, tzinfo=UTC),
]


def _local_date(moment: datetime, zone: ZoneInfo) -> date:
    return moment.astimezone(zone).date()


def _starts_on(moment: datetime, day: date, zone: ZoneInfo) -> bool:
    """``moment`` is the first instant of local ``day``."""
    return _local_date(moment, zone) == day and _local_date(moment - TICK, zone) < day


def _resolve(expression: str, session: datetime, zone: str) -> TimeInterval:
    got = resolve_time(expression, session, zone)
    assert got is not None, (expression, zone)
    return got


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.strftime("%Y-%m-%dT%H:%M"))
def test_days_weeks_and_months_follow_the_local_calendar(session: datetime) -> None:
    failures: list[str] = []
    for name in ZONES:
        zone = ZoneInfo(name)
        today_date = _local_date(session, zone)
        yesterday, today, tomorrow = (_resolve(w, session, name) for w in ("yesterday", "today", "tomorrow"))
        week, month = _resolve("this week", session, name), _resolve("this month", session, name)
        monday = today_date - timedelta(days=today_date.weekday())
        first = today_date.replace(day=1)
        next_first = (first + timedelta(days=32)).replace(day=1)
        checks = {
            "today holds the session": today.contains(session),
            "today starts at its local midnight": _starts_on(today.start, today_date, zone),
            "today ends at the next local midnight": _starts_on(today.end, today_date + timedelta(days=1), zone),
            "yesterday meets today": yesterday.end == today.start,
            "today meets tomorrow": today.end == tomorrow.start,
            "a day lasts 22 to 26 hours": timedelta(hours=22) <= today.duration <= timedelta(hours=26),
            "the week starts on Monday": _starts_on(week.start, monday, zone),
            "the week ends the next Monday": _starts_on(week.end, monday + timedelta(days=7), zone),
            "the week holds today": week.start <= today.start and today.end <= week.end,
            "the month starts on the 1st": _starts_on(month.start, first, zone),
            "the month ends on the next 1st": _starts_on(month.end, next_first, zone),
            "the month holds today": month.start <= today.start and today.end <= month.end,
        }
        failures += [f"{name}: {what}" for what, holds in checks.items() if not holds]
    assert not failures, failures[:20]


def test_a_day_a_zone_skipped_is_not_a_time() -> None:
    # Samoa crossed the date line by skipping 30 December 2011.
    session = datetime(2011, 12, 31, 12, 0, tzinfo=UTC)
    assert resolve_time("2011-12-30", session, "Pacific/Apia") is None
    assert resolve_time("yesterday", session, "Pacific/Apia") == TimeInterval(
        datetime(2011, 12, 30, 10, 0, tzinfo=UTC), datetime(2011, 12, 31, 10, 0, tzinfo=UTC), "day"
    )  # 1 January 2012 02:00 there, so yesterday is the 31st
