"""A cancelled call ends: asyncio.timeout, a server's cancelled request and Ctrl-C rely on it.

pymongo, and redis-py with a ``socket_timeout``, time sends and reads with ``asyncio.wait_for``,
which on Python 3.11 drops a cancellation that comes as the awaited read finishes; the network
stores raise it again as the call ends (:func:`cogitator_memory.lifecycle.keep_cancellations`).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from cogitator_memory.lifecycle import keep_cancellations
from cogitator_memory.result import unwrap
from cogitator_memory.runtime.memory import Memory
from cogitator_memory.testing.services import service_url


@keep_cancellations
class _LosingDriver:
    """A store method whose driver loses the cancellation, as wait_for can."""

    async def read(self) -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "lost"
        return "read"

    async def _private(self) -> str:
        return "left alone"


def test_a_lost_cancellation_is_raised_again_and_one_asked_before_is_left_alone() -> None:
    async def go() -> None:
        store = _LosingDriver()
        task = asyncio.create_task(store.read())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

        async def clean_up_after_a_cancel() -> str:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                # cancelling() is 1 here already: the clean-up's own calls must still work
                return await store._private() + " / " + str(asyncio.current_task().cancelling())  # type: ignore[union-attr]
            return "never"

        cleaner = asyncio.create_task(clean_up_after_a_cancel())
        await asyncio.sleep(0.01)
        cleaner.cancel()
        assert await cleaner == "left alone / 1"
        assert getattr(_LosingDriver.read, "__wrapped__", None) is not None

    asyncio.run(go())


def _config(engine: str) -> dict[str, Any]:
    tag = uuid.uuid4().hex[:8]
    if engine == "redis":
        store: dict[str, Any] = {
            "connection_string": service_url("COGMEM_TEST_REDIS_URL"),
            "options": {"key_prefix": f"cc{tag}:"},
        }
    elif engine == "mongodb":
        store = {"connection_string": service_url("COGMEM_TEST_MONGODB_URL"), "options": {"database": f"cc_{tag}"}}
    else:
        store = {"connection_string": service_url("COGMEM_TEST_POSTGRES_URL"), "options": {"schema": f"cc_{tag}"}}
    return {"adapter": engine, **store, "embedding": {"provider": "none"}}


@pytest.mark.parametrize("engine", ["redis", "mongodb", "postgres"])
def test_a_task_writing_to_the_store_stops_when_cancelled(engine: str) -> None:
    async def trial() -> bool:
        async with Memory(_config(engine)) as memory:
            store = memory.adapter
            unwrap(await store.create_thread("a", thread_id="t"))

            async def write_forever() -> None:
                while True:
                    unwrap(await store.add_entry({"thread_id": "t", "message": {"role": "user", "content": "x"}}))

            task = asyncio.create_task(write_forever())
            await asyncio.sleep(0.15)
            task.cancel()
            done, _ = await asyncio.wait([task], timeout=3)
            stopped = bool(done) and task.cancelled()
            if not done:
                task.cancel()
                await asyncio.wait([task], timeout=3)
            unwrap(await store.delete_thread("t"))
            return stopped

    # Without the fix most tries on Redis and MongoDB went on writing (5 of 6 on Redis).
    results = [asyncio.run(trial()) for _ in range(6)]
    assert all(results), f"cancelled tasks that went on writing: {results.count(False)} of {len(results)}"
