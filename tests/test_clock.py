"""Times stored as integer microseconds come back exactly, to the microsecond, in every year."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from cogitator_memory.clock import from_micros, to_micros


def test_microseconds_round_trip_exactly_across_the_calendar() -> None:
    rng = random.Random(7)
    low, high = (
        to_micros(datetime(1, 1, 1, tzinfo=UTC)),
        to_micros(datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)),
    )
    samples = [low, high, -1, 0, 1, 999_999, -999_999]
    samples += [rng.randrange(low, high) for _ in range(200_000)]
    for us in samples:
        seconds, micros = divmod(us, 1_000_000)
        got = from_micros(us)
        assert got == datetime.fromtimestamp(seconds, UTC).replace(microsecond=micros), us
        assert got.tzinfo is UTC
        assert to_micros(got) == us


def test_a_time_just_before_a_second_keeps_its_second() -> None:
    # A float of the seconds rounds 03:19:10.999995 up to 03:19:11 in year 8968.
    t = datetime(8968, 8, 14, 3, 19, 10, 999995, tzinfo=UTC)
    assert from_micros(to_micros(t)) == t
