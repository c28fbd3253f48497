"""SyncMemory: the Memory API without asyncio, from threads and from inside running loops."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cogitator_memory.errors import InvalidArgumentError, MemoryStoreError
from cogitator_memory.runtime import sync as sync_module
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.runtime.sync import SyncMemory

CONFIG = {"adapter": "memory", "embedding": {"provider": "none"}}
#: Memory's coroutines without a twin: open and close have their own sync forms; core_facts
#: hands out the async CoreFacts store (SyncMemory reads facts with facts(), sets them with
#: remember(core_fact_key=)).
#: after_write is a hook for writers on the memory's own loop (SyncMemory.run runs such code).
NO_TWIN = {"open", "close", "core_facts", "after_write"}


def test_every_async_method_of_memory_has_its_twin() -> None:
    public = {
        name
        for name, member in inspect.getmembers(Memory, inspect.iscoroutinefunction)
        if not name.startswith("_") and name not in NO_TWIN
    }
    for name in public:
        twin = getattr(SyncMemory, name, None)
        assert twin is not None, f"SyncMemory has no {name}"
        assert not inspect.iscoroutinefunction(twin)
        assert inspect.signature(twin) == inspect.signature(getattr(Memory, name)), name


def test_calls_from_many_threads_at_once(tmp_path: Path) -> None:
    with SyncMemory({"adapter": "sqlite", "path": str(tmp_path / "s.db"), "embedding": {"provider": "none"}}) as memory:

        def work(n: int) -> int:
            memory.add([{"role": "user", "content": f"turn {n} about kiwis"}], user_id="u", thread_id=f"t{n % 4}")
            return len(memory.history(f"t{n % 4}"))

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(work, range(40)))
        assert sum(len(memory.history(f"t{i}")) for i in range(4)) == 40
        assert memory.search("kiwis", user_id="u", limit=5)


def test_from_a_running_loop_and_its_worker_threads() -> None:
    memory = SyncMemory.open(CONFIG)
    try:

        async def inside() -> tuple[int, int]:
            memory.add([{"role": "user", "content": "said inside a loop"}], thread_id="loop")
            in_worker = await asyncio.to_thread(memory.history, "loop")
            return len(memory.history("loop")), len(in_worker)

        assert asyncio.run(inside()) == (1, 1)
    finally:
        memory.close()


def test_errors_keep_their_class_and_the_loop_thread_is_refused() -> None:
    with SyncMemory(CONFIG) as memory:
        with pytest.raises(InvalidArgumentError, match="query"):
            memory.search("")

        async def from_the_loop() -> None:
            memory.facts()

        with pytest.raises(MemoryStoreError, match="its own event loop"):
            memory._loop.run(from_the_loop())
    memory.close()  # twice is fine
    with pytest.raises(MemoryStoreError, match="closed"):
        memory.facts()


def test_close_stops_the_thread_and_a_failed_open_leaves_none() -> None:
    before = threading.active_count()
    memory = SyncMemory.open(CONFIG)
    memory.close()
    assert threading.active_count() == before
    with pytest.raises(InvalidArgumentError, match=r"memory\.connection_string"):
        SyncMemory.open(
            {
                "adapter": "redis",
                "connection_string": "redis://127.0.0.1:1/0",
                "options": {"connect_timeout": 0.3},
                "on_error": "raise",
            }
        )
    assert threading.active_count() == before


@pytest.mark.parametrize("debug", [False, True])
def test_each_call_runs_as_a_task_of_the_private_loop(debug: bool) -> None:
    # An idle loop is run by the calling thread itself; a busy one gets the call as a task (a
    # debug loop, which refuses a task made in another thread, gets it from a callback).
    with SyncMemory(CONFIG) as memory:
        loop = memory._loop.loop
        loop.set_debug(debug)

        async def probe(delay: float) -> tuple[bool, bool, int]:
            await asyncio.sleep(delay)  # a call that waits on the loop comes back too
            task = asyncio.current_task()
            return asyncio.get_running_loop() is loop, task is not None and not task.done(), threading.get_ident()

        for delay in (0, 0.01):
            assert memory._loop.run(probe(delay)) == (True, True, threading.get_ident())

        # While one thread's call holds the loop, another thread's call runs on it too.
        holding = threading.Event()
        release = threading.Event()

        async def hold() -> int:
            holding.set()
            while not release.is_set():
                await asyncio.sleep(0.005)
            return threading.get_ident()

        with ThreadPoolExecutor(1) as pool:
            held = pool.submit(memory._loop.run, hold())
            assert holding.wait(5)
            on_loop, in_task, ran_in = memory._loop.run(probe(0.01))
            assert (on_loop, in_task) == (True, True)
            assert ran_in != threading.get_ident()  # the other thread ran it, this one waited
            release.set()
            assert held.result(5) != threading.get_ident()
        memory.remember("likes green tea", core_fact_key="drink", user_id="u")
        assert memory.facts(user_id="u") == {"drink": "likes green tea"}


def test_background_work_goes_on_between_calls_and_close_cancels_what_is_left() -> None:
    memory = SyncMemory.open(CONFIG)
    done = threading.Event()
    cancelled = threading.Event()

    async def leave_work() -> None:
        async def later() -> None:
            await asyncio.sleep(0.05)
            done.set()

        async def forever() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        loop = asyncio.get_running_loop()
        memory_tasks.extend([loop.create_task(later()), loop.create_task(forever())])

    memory_tasks: list[asyncio.Task[None]] = []
    memory._loop.run(leave_work())
    assert done.wait(5)  # no further call was made: the daemon thread ran the loop
    assert memory.facts() == {}  # a call while the daemon runs the loop is handed to it
    memory.close()
    assert cancelled.is_set()
    assert not memory._loop.thread.is_alive()


def test_a_thread_running_its_own_loop_hands_the_call_over() -> None:
    with SyncMemory(CONFIG) as memory:

        async def where() -> int:
            return threading.get_ident()

        async def caller() -> int:
            return memory._loop.run(where())

        assert asyncio.run(caller()) == memory._loop.thread.ident


async def _numbers(closed: threading.Event) -> AsyncIterator[int]:
    """An async generator that sets ``closed`` when it is closed."""
    try:
        yield 1
        yield 2
    finally:
        closed.set()


def test_an_async_generator_a_call_leaves_open_is_closed_by_the_loop() -> None:
    closed = threading.Event()

    async def take_one() -> int:
        return await anext(_numbers(closed))  # the generator is dropped unfinished

    with SyncMemory(CONFIG) as memory:
        assert memory._loop.run(take_one()) == 1
        assert closed.wait(5)  # closed in the background, without another call


def test_winding_up_survives_the_cancel_stop_left_in_the_ready_queue() -> None:
    """stop() sends the loop a cancel of every task; when the daemon thread has left its
    loop before that callback ran, the callback cancels the wind-up's own steps."""
    loop = asyncio.new_event_loop()
    closed = threading.Event()

    async def take_one() -> AsyncIterator[int]:
        gen = _numbers(closed)
        await anext(gen)
        return gen

    try:
        kept = loop.run_until_complete(take_one())  # an async generator left open
        loop.call_soon_threadsafe(sync_module._cancel_all, loop)  # what stop() sends
        sync_module._wind_up(loop)
        assert closed.is_set()
        assert not asyncio.all_tasks(loop)
    finally:
        loop.close()
    del kept
