"""Reading a turn: ``analyze_query`` at 1,000, 10,000 and 100,000 characters (``MAX_QUERY_CHARS``).

Two kinds of text: ``prose`` (a conversation's turns, names and a time now and then) and
``dates`` (a date every 8 characters, the costliest shape found: every word starts a reading).
For each size the p50 of a few readings, beside the 1,000-character figure of the same run
scaled to the size: reading is linear when the ratio stays near 1 (the quadratic reading it
replaced was 60x at 100,000 characters of prose). Target: within 2x of linear.

Then how long the event loop waits while ``analyze_query_async`` reads a turn at the cap (a
ticker every 2 ms measures how late it wakes), beside how long the loop would wait were the turn
read on it. Target: the longest wait under 50 ms.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from datetime import UTC, datetime
from functools import partial

from cogitator_memory.recall.query import MAX_QUERY_CHARS, analyze_query, analyze_query_async

from .common import Row, time_sync

AT = datetime(2026, 10, 21, 15, 0, tzinfo=UTC)
TEXTS = {
    "prose": "I moved to Lisbon last March and started at Render.com on Flask-Login. Then Bo Silva came by. ",
    "dates": "3 March ",
}
SIZES = (1_000, 10_000, MAX_QUERY_CHARS)
LAG_TARGET_MS = 50.0


def _text(kind: str, size: int) -> str:
    unit = TEXTS[kind]
    return (unit * (size // len(unit) + 1))[:size]


async def _loop_lag(text: str) -> tuple[float, float]:
    """The longest wait of a 2 ms ticker (ms) while ``text`` is read off the loop, and the p50."""
    loop = asyncio.get_running_loop()
    lags: list[float] = []
    reading = True

    async def tick() -> None:
        last = loop.time()
        while reading:
            await asyncio.sleep(0.002)
            now = loop.time()
            lags.append((now - last - 0.002) * 1e3)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.01)
    lags.clear()
    await analyze_query_async(text, AT)
    reading = False
    await ticker
    return max(lags), statistics.median(lags)


async def run(quick: bool) -> list[Row]:
    rows: list[Row] = []
    repeat = 3 if quick else 7
    for kind in TEXTS:
        per_size: dict[int, float] = {}
        for size in SIZES:
            text = _text(kind, size)
            runs = repeat if size < MAX_QUERY_CHARS else max(2, repeat // 2)
            per_size[size] = statistics.median(time_sync(partial(analyze_query, text, AT), runs)) * 1e3
        first = per_size[SIZES[0]]
        for size in SIZES:
            linear = first * size / SIZES[0]
            ratio = per_size[size] / linear
            rows.append(
                Row(
                    "analyze_query",
                    f"{kind}, {size:,} characters, p50 ms",
                    per_size[size],
                    "ms",
                    linear,
                    f"{kind}, 1,000 characters, scaled to {size:,}",
                    ratio,
                    "within 2x of linear" if size > SIZES[0] else None,
                    ratio <= 2.0 if size > SIZES[0] else None,
                )
            )
        text = _text(kind, MAX_QUERY_CHARS)
        start = time.perf_counter()
        analyze_query(text, AT)
        inline_ms = (time.perf_counter() - start) * 1e3
        worst, median = await _loop_lag(text)
        rows.append(
            Row(
                "analyze_query_async",
                f"{kind}, {MAX_QUERY_CHARS:,} characters, longest loop wait ms",
                worst,
                "ms",
                inline_ms,
                "the same turn read on the loop",
                worst / inline_ms,
                f"under {LAG_TARGET_MS:.0f} ms",
                worst < LAG_TARGET_MS,
                {"median_wait_ms": median},
            )
        )
    return rows
