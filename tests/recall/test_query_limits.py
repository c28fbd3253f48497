"""How long reading a turn takes: in proportion to its length, at most MAX_QUERY_CHARS characters,
and off the event loop when long (issue 33, item 5).

The time bounds are loose (ten times what the linear reading takes on a loaded 2-core machine);
the quadratic reading took from seconds to minutes on each of these texts.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.context import ContextBuilder
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.recall import MAX_QUERY_CHARS, analyze_query, analyze_query_async, find_times
from cogitator_memory.recall.query import MAX_QUERY_TIMES, THREAD_ABOVE_CHARS, check_query, find_entities, query_kind

AT = datetime(2026, 10, 21, 15, 0, tzinfo=UTC)  # a Wednesday


def _took(fn: Callable[..., object], *args: object) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def _repeat(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


# -- linear -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head", ["March", "3 March", "March 3", "Monday", "christmas", "q1", "2024", "March 3-5", "3-5 March"]
)
@pytest.mark.parametrize("space", [" ", "\n"])
def test_a_long_run_of_spaces_after_a_time_word_is_read_once(head: str, space: str) -> None:
    # "Monday" and 4,000 spaces took 11 s: "\s*,?\s+" tried every split of the spaces
    text = head + space * 8_000 + "x"
    assert _took(find_times, text, AT) < 0.25


def test_names_are_found_in_time_in_proportion_to_the_text() -> None:
    # each word looked back over the whole text before it for a sentence's end: 3.5 s for this
    words = "I moved to Lisbon last March and started at Render.com on Flask-Login. Then Bo Silva came"
    text = _repeat(words + " ", 100_000)
    assert _took(find_entities, text) < 1.0
    # a word after ".!?:;" or a line's end opens a sentence and is no name for its capital alone
    assert find_entities("Hi. Bo met Ann\nToday Lisbon: Porto ; NASA") == ["Ann", "Lisbon", "NASA"]


def test_between_and_is_found_in_time_in_proportion_to_the_text() -> None:
    # "between" with no "and" after it scanned to the end of the line: 7 s for this
    assert _took(query_kind, _repeat("between ", 100_000)) < 1.0


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("How many weeks between the launch and the deadline?", "temporal"),
        ("what happened between the launch\nand the release?", "temporal"),  # the spaces may end a line
        ("between \t and", "temporal"),  # the phrase between them may be a space
        ("between  and", "general"),  # but not nothing
        ("between us\nand the dog", "temporal"),
        ("between us\nthe dog and", "general"),  # the phrase may not cross a line's end
        ("between x andy", "general"),
        ("betweenx y and z", "general"),
    ],
)
def test_between_x_and_y_reads_as_before(text: str, kind: str) -> None:
    assert query_kind(text) == kind


# -- the cap ------------------------------------------------------------------------------------


def test_a_turn_over_the_cap_is_refused_naming_the_argument() -> None:
    assert analyze_query("x" * MAX_QUERY_CHARS, AT).terms == ("x" * MAX_QUERY_CHARS,)
    with pytest.raises(InvalidArgumentError) as caught:
        analyze_query("x" * (MAX_QUERY_CHARS + 1), AT)
    assert caught.value.argument == "input"
    assert f"{MAX_QUERY_CHARS:,}" in caught.value.problem
    with pytest.raises(InvalidArgumentError) as caught:
        check_query("query", "x" * (MAX_QUERY_CHARS + 1))
    assert caught.value.argument == "query"
    with pytest.raises(InvalidArgumentError, match="current_input"):
        check_query("current_input", b"bytes")
    assert check_query("query", "hello") == "hello"


async def test_the_async_reading_refuses_what_the_reading_refuses() -> None:
    for bad, argument in [("x" * (MAX_QUERY_CHARS + 1), "input"), (42, "input")]:
        with pytest.raises(InvalidArgumentError) as caught:
            await analyze_query_async(bad, AT)  # type: ignore[arg-type]
        assert caught.value.argument == argument
    with pytest.raises(InvalidArgumentError, match="time_zone"):
        await analyze_query_async("what did I say on Monday? " * 100, AT, "Mars/Olympus")


@pytest.mark.parametrize("size", [30, THREAD_ABOVE_CHARS + 1, 20_000])
async def test_the_async_reading_reads_as_the_reading_does(size: int) -> None:
    text = _repeat("Where did Bo Silva stay last April? ", size)
    assert await analyze_query_async(text, AT, "Europe/Lisbon") == analyze_query(text, AT, "Europe/Lisbon")


# -- off the event loop -------------------------------------------------------------------------


PROSE = "I moved to Lisbon last March and started at Render.com on Flask-Login. Then Bo Silva came "


async def _lags_while(call: Callable[[], Awaitable[object]]) -> tuple[list[float], float]:
    """How late each 2 ms tick of the loop came while ``call()`` was awaited, and how long it took."""
    loop = asyncio.get_running_loop()
    lags: list[float] = []
    reading = True

    async def tick() -> None:
        last = loop.time()
        while reading:
            await asyncio.sleep(0.002)
            now = loop.time()
            lags.append(now - last - 0.002)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.01)
    lags.clear()
    start = time.perf_counter()
    await call()
    took = time.perf_counter() - start
    reading = False
    await ticker
    return lags, took


async def _lags_while_read(text: str) -> tuple[list[float], float]:
    async def read() -> None:
        analysis = await analyze_query_async(text, AT)
        assert analysis.times and analysis.entities  # it was read

    return await _lags_while(read)


async def test_a_turn_at_the_cap_does_not_hold_the_event_loop() -> None:
    text = _repeat(PROSE, MAX_QUERY_CHARS)
    inline = _took(analyze_query, text, AT)  # what one tick waits when it is read on the loop
    lags, took = await _lags_while_read(text)
    # the loop ticked on, every few milliseconds (the worker thread yields the GIL every 5 ms;
    # on a loaded 2-core machine other processes hold the loop up now and then); read on the
    # loop, it would have ticked once, after the reading
    assert len(lags) > took / 0.05
    assert statistics.median(lags) < 0.02
    assert max(lags) < 0.1, f"the loop waited {max(lags) * 1000:.0f} ms (read on it: {inline * 1000:.0f} ms)"


async def test_the_costliest_turn_at_the_cap_does_not_hold_the_event_loop() -> None:
    # a date every 8 characters, 12,500 of them: only the first MAX_QUERY_TIMES are read (reading
    # them all took 2-3 s, and the collector's full pass over their objects held the loop 100+ ms)
    text = _repeat("3 March Bo ", MAX_QUERY_CHARS)
    assert len(analyze_query(text).times) == MAX_QUERY_TIMES
    lags, _took = await _lags_while_read(text)
    assert max(lags, default=0.0) < 0.05, f"the loop waited {max(lags) * 1000:.0f} ms"


# -- the context builder ------------------------------------------------------------------------


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[InMemoryAdapter | SQLiteAdapter]:
    adapter = InMemoryAdapter() if request.param == "memory" else SQLiteAdapter(path=tmp_path / "threads.db")
    async with adapter:
        yield adapter


async def _thread(store: InMemoryAdapter | SQLiteAdapter) -> str:
    thread = unwrap(await store.create_thread("concierge", {"user_id": "ana"}))
    for i in range(40):
        role = "user" if i % 2 == 0 else "assistant"
        text = f"turn {i}: the Hotel Avenida in Lisbon, room {200 + i}"
        unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": role, "content": text}}))
    return thread.id


@pytest.mark.parametrize("strategy", ["recent", "hybrid"])
async def test_a_build_refuses_an_input_over_the_cap_naming_current_input(
    store: InMemoryAdapter | SQLiteAdapter, strategy: str
) -> None:
    tid = await _thread(store)
    builder = ContextBuilder({"strategy": strategy, "reserve_tokens": 0}, {"memory_adapter": store})
    with pytest.raises(InvalidArgumentError) as caught:
        await builder.build(tid, current_input="x " * (MAX_QUERY_CHARS // 2 + 1), max_tokens=1000)
    assert caught.value.argument == "current_input"
    built = await builder.build(tid, current_input="x " * (MAX_QUERY_CHARS // 2), max_tokens=100_000)
    assert built.strategy == strategy and not built.errors


async def test_a_hybrid_build_at_the_cap_does_not_hold_the_event_loop(store: InMemoryAdapter | SQLiteAdapter) -> None:
    # REST /api/context with 420 KB held the loop 65 s; at the cap, the input is read and counted
    # in a worker thread
    tid = await _thread(store)
    builder = ContextBuilder({"strategy": "hybrid", "reserve_tokens": 0}, {"memory_adapter": store})
    text = _repeat(PROSE, MAX_QUERY_CHARS)
    inline = _took(analyze_query, text, AT)
    built: list[object] = []

    async def build() -> None:
        built.append(await builder.build(tid, current_input=text, max_tokens=100_000, as_of=AT))

    lags, took = await _lags_while(build)
    assert built
    assert len(lags) > took / 0.05
    assert max(lags) < 0.1, f"the loop waited {max(lags) * 1000:.0f} ms (the input read on it: {inline * 1000:.0f} ms)"
