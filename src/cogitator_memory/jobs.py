"""``JobQueue``: one background task working through a queue of jobs, as the indexes use it.

The queue belongs to the running event loop: the first job submitted on a loop makes the queue
and starts the worker there (a worker that stopped is started again). :meth:`JobQueue.flush`
waits until every job submitted so far is done: the worker calls :meth:`JobQueue.done` for each
job it finishes, whatever happened to it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, TypeVar

J = TypeVar("J")
T = TypeVar("T")


async def given(value: T) -> T:
    """``value``, awaited: the part of a gathered call that has nothing to do."""
    return value


class JobQueue(Generic[J]):
    """Jobs for ``work`` (a coroutine function taking the queue and running until cancelled),
    at most ``maxsize`` waiting (0: no bound), run by one task named ``name``."""

    def __init__(self, name: str, work: Callable[[asyncio.Queue[J]], Awaitable[None]], maxsize: int = 0) -> None:
        self.name = name
        self.maxsize = maxsize
        self._work = work
        self._queue: asyncio.Queue[J] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: asyncio.Task[None] | None = None
        self._pending = 0
        self._idle: asyncio.Event | None = None

    @property
    def pending(self) -> int:
        """Jobs submitted and not done yet."""
        return self._pending

    @property
    def waiting(self) -> int:
        """Jobs in the queue, not taken by the worker yet."""
        return 0 if self._queue is None else self._queue.qsize()

    def _ensure(self) -> asyncio.Queue[J]:
        loop = asyncio.get_running_loop()
        if self._queue is None or self._loop is not loop:
            self._loop = loop
            self._queue = asyncio.Queue(self.maxsize)
            self._idle = asyncio.Event()
            self._idle.set()
            self._pending = 0
            self._worker = None
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._work(self._queue), name=self.name)  # type: ignore[arg-type]
        return self._queue

    def submit(self, job: J) -> Coroutine[Any, Any, None] | None:
        """Queue ``job`` (on the running loop); when the queue is full, the coroutine that waits
        for room instead (await it, or hand it to a task)."""
        queue = self._ensure()
        self._pending += 1
        assert self._idle is not None
        self._idle.clear()
        try:
            queue.put_nowait(job)
        except asyncio.QueueFull:
            return queue.put(job)
        return None

    def done(self, count: int = 1) -> None:
        """What the worker calls for every ``count`` jobs it finished."""
        self._pending = max(0, self._pending - count)
        if self._pending == 0 and self._idle is not None:
            self._idle.set()

    async def flush(self) -> None:
        """Wait until every job submitted so far (on this loop) is done."""
        if self._idle is None or self._loop is not asyncio.get_running_loop():
            return
        await self._idle.wait()

    async def stop(self) -> None:
        """Stop the worker (jobs left in the queue are not run)."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None


__all__ = ["JobQueue", "given"]
