"""find_times: where time expressions are in running text, what they resolve to, and what is not one."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.recall import TimeInterval, find_times, resolve_time

SESSION = datetime(2024, 3, 13, 15, 30, tzinfo=UTC)  # Wednesday


def local(zone: str, text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)


def found(text: str, zone: str = "UTC") -> list[str]:
    return [m.text for m in find_times(text, SESSION, zone)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I moved to Lisbon in March and started the job on Monday at 9am.",
            ["March", "Monday at 9am"],
        ),
        (
            "May I ask what you did last summer? We may meet in May or on the 15th.",
            ["last summer", "May", "the 15th"],
        ),
        ("She is in her 90s and loved the 90s.", ["the 90s"]),
        ("The sun was out on Sat, 3 March 2024. Sun and sat are words.", ["Sat, 3 March 2024"]),
        ("What changed since yesterday? I paid 2019 dollars in 2019.", ["since yesterday", "2019"]),
        ("I have 3 cats and 2 dogs; the score was 10 to 5. See you at 7 tonight!", ["7 tonight"]),
        (
            "We met 3 weeks ago, then a few days ago, and meet in 2 days, from Friday to Monday.",
            ["3 weeks ago", "a few days ago", "in 2 days", "from Friday to Monday"],
        ),
        (
            "Back in the summer of 2019, between 2019 and 2021, during the early 2000s.",
            ["the summer of 2019", "between 2019 and 2021", "the early 2000s"],
        ),
        (
            "The call is 2024-03-20T14:00:00+01:00 or March 21st, 2024 at 3:30 pm.",
            ["2024-03-20T14:00:00+01:00", "March 21st, 2024 at 3:30 pm"],
        ),
        ("A book on the fall of Rome. I fall asleep at 11 at night.", ["11 at night"]),
        ("We went in the fall and again last fall.", ["the fall", "last fall"]),
        ("Next to the station, this is the last time, the first time, one day ago.", ["one day ago"]),
        ("Let's march on. I may. The 3rd time. On the 3rd we left.", ["the 3rd"]),
        ("Deadline: end of next month, or early April at the latest.", ["end of next month", "early April"]),
        ("Yesterday morning was cold; tomorrow night will be colder.", ["Yesterday morning", "tomorrow night"]),
        # "until" needs an end after the session; a past one stays a plain mention
        ("I've been vegan since 2019 and lived in Berlin until last year.", ["since 2019", "last year"]),
        ("I'll be in Berlin until next Friday.", ["until next Friday"]),
        ("Call me at 15:30 or at 4pm, not 3:1 odds.", ["15:30", "4pm"]),
        ("It's the 2020s; in 2023 Q4 revenue grew, compared with Q1 2022.", ["the 2020s", "2023 Q4", "Q1 2022"]),
        ("the nineties, in their sixties, the sixties", ["the nineties", "the sixties"]),
        ("Right now I'm busy; now and then I read.", ["Right now"]),
        ("For April 6-7 and the 8th, then March 26–27 for revisions.", ["April 6-7", "March 26–27"]),
        (
            "I've been running for three years now, moved a year and a half ago, and ate half the cake; two of us now.",
            ["three years now", "a year and a half ago"],
        ),
        ("Nothing here at all.", []),
        ("", []),
    ],
)
def test_finds_the_expressions_and_skips_look_alikes(text: str, expected: list[str]) -> None:
    assert found(text) == expected


def test_spans_index_the_original_text() -> None:
    text = "Na terça? No — I said NEXT FRIDAY at 10:30, or the 2nd of May."
    mentions = find_times(text, SESSION, "Europe/Lisbon")
    assert [m.text for m in mentions] == ["NEXT FRIDAY at 10:30", "the 2nd of May"]
    for m in mentions:
        start, end = m.span
        assert text[start:end] == m.text
    assert mentions[0].interval == TimeInterval(
        local("Europe/Lisbon", "2024-03-15 10:30"), local("Europe/Lisbon", "2024-03-15 10:31"), "minute"
    )
    assert mentions[1].interval == TimeInterval(
        local("Europe/Lisbon", "2024-05-02"), local("Europe/Lisbon", "2024-05-03"), "day"
    )


def test_each_mention_resolves_as_resolve_time_does() -> None:
    text = (
        "Last Tuesday we talked about the trip in early June; I booked it 2 weeks ago and fly "
        "out on 03/06/2024 at 7am, back the weekend after next."
    )
    mentions = find_times(text, SESSION, "Asia/Kolkata")
    assert [m.text for m in mentions] == [
        "Last Tuesday",
        "early June",
        "2 weeks ago",
        "03/06/2024 at 7am",
        "the weekend after next",
    ]
    for m in mentions:
        assert m.interval == resolve_time(m.text, SESSION, "Asia/Kolkata"), m.text
    assert mentions[3].interval.start == local("Asia/Kolkata", "2024-06-03 07:00")


def test_options_reach_the_finder() -> None:
    assert find_times("on 03/04/2024", SESSION, day_first=False)[0].interval.start == datetime(2024, 3, 4, tzinfo=UTC)
    ahead = find_times("see you on Monday", SESSION, prefer="future")[0].interval
    assert ahead.start == datetime(2024, 3, 18, tzinfo=UTC)
    south = find_times("in the summer", SESSION, "UTC", hemisphere="south")[0].interval
    assert south.start == datetime(2023, 12, 1, tzinfo=UTC)  # ended 13 days ago, the next starts in 263


def test_a_date_out_of_range_does_not_stop_the_scan() -> None:
    assert found("10000 years ago, or yesterday") == ["yesterday"]


def test_long_text_finds_every_mention() -> None:
    text = "We talked about the plan on Monday and agreed to meet again next week at 3pm. " * 500
    mentions = find_times(text, SESSION)
    assert [m.text for m in mentions] == ["Monday", "next week", "3pm"] * 500  # a week has no 3pm
    assert mentions[-1].span == (len(text) - 5, len(text) - 2)


@pytest.mark.parametrize(
    ("call", "argument"),
    [
        (lambda: find_times(b"yesterday", SESSION), "text"),  # type: ignore[arg-type]
        (lambda: find_times("yesterday", 1710343800), "session_at"),  # type: ignore[arg-type]
        (lambda: find_times("yesterday", SESSION, "Europe/Atlantis"), "time_zone"),
    ],
)
def test_bad_arguments(call: object, argument: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        call()  # type: ignore[operator]
    assert caught.value.argument == argument
