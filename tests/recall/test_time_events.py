"""find_event_times: times named from an event ("the week before the trip"), placed in the
calendar once the event's date is known."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.recall import TimeInterval, analyze_query
from cogitator_memory.recall.time import MAX_EVENT_TIMES, find_event_times

TRIP = datetime(2024, 5, 10, 14, 0, tzinfo=UTC)  # a Friday afternoon


@pytest.mark.parametrize(
    ("text", "found", "event", "before", "count", "unit"),
    [
        ("What did I eat the week before the trip?", "the week before the trip", "the trip", True, 1, "week"),
        ("two days after my surgery I walked", "two days after my surgery", "my surgery", False, 2, "day"),
        (
            "in the month leading up to our move to Lisbon, when",
            "the month leading up to our move to Lisbon",
            "our move to Lisbon",
            True,
            1,
            "month",
        ),
        ("the night before the exam I studied", "the night before the exam", "the exam", True, 1, "night"),
        ("3 hours before the interview?", "3 hours before the interview", "the interview", True, 3, "hour"),
        ("a few weeks ahead of the launch", "a few weeks ahead of the launch", "the launch", True, 4, "week"),
        ("the year following my graduation", "the year following my graduation", "my graduation", False, 1, "year"),
    ],
)
def test_finds_the_length_the_side_and_the_event(
    text: str, found: str, event: str, before: bool, count: int, unit: str
) -> None:
    (mention,) = find_event_times(text)
    assert mention.text == found and text[mention.span[0] : mention.span[1]] == found
    assert (mention.event, mention.before, mention.count, mention.unit) == (event, before, count, unit)


@pytest.mark.parametrize(
    "text",
    [
        "the day after tomorrow",
        "the week before last",
        "two days after I moved",
        "a week before 5 May",
        "before the trip",
    ],
)
def test_calendar_times_and_clauses_are_not_event_times(text: str) -> None:
    assert find_event_times(text) == []


def test_the_interval_is_whole_local_days_around_the_event() -> None:
    (week,) = find_event_times("the week before the trip")
    assert week.interval(TRIP) == TimeInterval(
        datetime(2024, 5, 3, tzinfo=UTC), datetime(2024, 5, 10, tzinfo=UTC), "week"
    )
    (day,) = find_event_times("the day after the trip")
    assert day.interval(TRIP) == TimeInterval(
        datetime(2024, 5, 11, tzinfo=UTC), datetime(2024, 5, 12, tzinfo=UTC), "day"
    )
    # in Lisbon (UTC+1 in May) the days start at 23:00 UTC the evening before
    assert week.interval(TRIP, "Europe/Lisbon").start == datetime(2024, 5, 2, 23, 0, tzinfo=UTC)
    (month,) = find_event_times("the month before the wedding")
    wedding = datetime(2024, 3, 31, 12, tzinfo=UTC)
    assert month.interval(wedding) == TimeInterval(
        datetime(2024, 2, 29, tzinfo=UTC), datetime(2024, 3, 31, tzinfo=UTC), "month"
    )
    (hours,) = find_event_times("2 hours after the call")
    assert hours.interval(datetime(2024, 5, 10, 14, 30)) == TimeInterval(
        datetime(2024, 5, 10, 14, 30, tzinfo=UTC), datetime(2024, 5, 10, 16, 30, tzinfo=UTC), "hour"
    )


def test_a_question_naming_an_event_time_is_temporal_and_carries_it() -> None:
    analysis = analyze_query("What did I pack the week before the trip?", TRIP)
    assert analysis.kind == "temporal" and analysis.interval is None
    assert [e.event for e in analysis.event_times] == ["the trip"]
    assert analyze_query("What did I pack for the trip?", TRIP).event_times == ()


def test_bad_arguments_and_the_limit() -> None:
    with pytest.raises(InvalidArgumentError, match="text"):
        find_event_times(42)  # type: ignore[arg-type]
    (day,) = find_event_times("the day before the trip")
    with pytest.raises(InvalidArgumentError, match="event_at"):
        day.interval("yesterday")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="time_zone"):
        day.interval(TRIP, "Mars/Olympus")
    assert len(find_event_times("the day before the trip. " * 40)) == MAX_EVENT_TIMES
    assert len(find_event_times("the day before the trip. " * 40, limit=3)) == 3
    with pytest.raises(InvalidArgumentError, match="limit"):
        find_event_times("the day before the trip", limit=-1)
