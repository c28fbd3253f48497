"""``SyncMemory``: :class:`~cogitator_memory.runtime.memory.Memory` for code that does not use
``asyncio`` (notebooks, WSGI apps, scripts, worker threads).

Each method is made once from the ``Memory`` method of the same name by :func:`blocking`: the
call runs on a private event loop in a background thread and the calling thread waits for it.
So it works from any thread, and from a thread that runs an event loop of its own (the loop is
blocked for the call, nothing deadlocks); only a call from the private loop's own thread (code
the memory itself runs) is refused. One ``SyncMemory`` may be used by many threads at once.
"""

from __future__ import annotations

import asyncio
import functools
import os
import queue
import threading
from collections.abc import Callable, Coroutine, Mapping
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, Self, TypeVar

from ..errors import MemoryStoreError
from .config import MemoryConfig
from .memory import Memory

P = ParamSpec("P")
R = TypeVar("R")


class _LoopThread:
    """An event loop running forever in a daemon thread, until :meth:`stop`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._main, name="cogitator-memory-sync", daemon=True)
        self.thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
        finally:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.close()

    def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        """Run ``coroutine`` on the loop and wait for its result (its exception is raised here)."""
        if threading.get_ident() == self.thread.ident:
            coroutine.close()
            raise MemoryStoreError("SyncMemory was called from its own event loop: await the Memory (.memory) instead")
        if self.loop.is_closed() or not self.thread.is_alive():
            coroutine.close()
            raise MemoryStoreError("SyncMemory is closed")
        # The task is made here, in the calling thread, and the loop woken up: its first step
        # then runs in the loop's next iteration. Making it from a callback (as
        # run_coroutine_threadsafe does) costs one more iteration of the loop, about a sixth of
        # the hop. Making a task only appends its first step to the loop's ready queue, as
        # call_soon_threadsafe does, whose wake-up follows (a debug loop refuses that from
        # another thread: it gets the callback). The outcome comes back through a SimpleQueue,
        # cheaper than a concurrent Future (a Condition and a done callback of its own).
        outcome: queue.SimpleQueue[tuple[bool, Any]] = queue.SimpleQueue()

        async def runner() -> None:
            try:
                value = await coroutine
            except BaseException as exc:  # every outcome goes back to the caller
                outcome.put((False, exc))
                if not isinstance(exc, Exception | asyncio.CancelledError):
                    raise
            else:
                outcome.put((True, value))

        loop = self.loop
        started: list[asyncio.Task[None]] = []
        if loop.get_debug():
            loop.call_soon_threadsafe(lambda: started.append(loop.create_task(runner())))
        else:
            started.append(asyncio.Task(runner(), loop=loop))
            loop.call_soon_threadsafe(_nothing)
        try:
            ok, value = outcome.get()
        except BaseException:  # KeyboardInterrupt in the waiting thread: cancel the call

            def cancel() -> None:
                for task in started:
                    task.cancel()

            loop.call_soon_threadsafe(cancel)
            raise
        if ok:
            result: R = value
            return result
        raise value

    def stop(self) -> None:
        """Stop the loop and wait for its thread (what is still running is cancelled)."""
        if not self.thread.is_alive():
            return

        def _cancel_all() -> None:
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self.loop.call_soon(self.loop.stop)

        self.loop.call_soon_threadsafe(_cancel_all)
        self.thread.join()


def _nothing() -> None:
    """What the loop is woken up for when the work is in its ready queue already."""


def blocking(
    method: Callable[Concatenate[Memory, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[SyncMemory, P], R]:
    """The synchronous twin of an ``async`` :class:`Memory` method: same arguments, same result."""
    name = method.__name__

    def call(self: SyncMemory, *args: P.args, **kwargs: P.kwargs) -> R:
        bound: Callable[P, Coroutine[Any, Any, R]] = getattr(self.memory, name)
        return self._loop.run(bound(*args, **kwargs))

    return functools.wraps(method)(call)  # type: ignore[return-value]


class SyncMemory:
    """The :class:`Memory` API, synchronous (see the module docstring).

    Takes the arguments of :class:`Memory` (or an existing, not yet connected ``memory=``).
    Use ``with SyncMemory(...) as memory:`` or :meth:`open`, and :meth:`close` when done. The
    ``Memory`` it runs is :attr:`memory`.
    """

    def __init__(
        self,
        config: MemoryConfig | Mapping[str, Any] | str | os.PathLike[str] | None = None,
        *,
        memory: Memory | None = None,
        **options: Any,
    ) -> None:
        self.memory = memory if memory is not None else Memory(config, **options)
        self._loop = _LoopThread()

    @classmethod
    def open(
        cls, config: MemoryConfig | Mapping[str, Any] | str | os.PathLike[str] | None = None, **options: Any
    ) -> SyncMemory:
        """A connected :class:`SyncMemory` (the loop thread is stopped again when connecting fails)."""
        memory = cls(config, **options)
        try:
            memory.connect()
        except BaseException:
            memory._loop.stop()
            raise
        return memory

    def close(self) -> None:
        """Close the memory and stop the loop thread. Safe to call twice."""
        if not self._loop.thread.is_alive():
            return
        try:
            self._loop.run(self.memory.close())
        finally:
            self._loop.stop()

    def __enter__(self) -> Self:
        self.connect()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def enabled(self) -> bool:
        """False when the store could not be reached and the config said ``on_error: disable``."""
        return self.memory.enabled

    connect = blocking(Memory.connect)
    flush = blocking(Memory.flush)
    add = blocking(Memory.add)
    search = blocking(Memory.search)
    build_context = blocking(Memory.build_context)
    history = blocking(Memory.history)
    remember = blocking(Memory.remember)
    recall = blocking(Memory.recall)
    forget = blocking(Memory.forget)
    facts = blocking(Memory.facts)
    run_tool = blocking(Memory.run_tool)
    memory_file_tool = blocking(Memory.memory_file_tool)
    brief = blocking(Memory.brief)
    refresh_observations = blocking(Memory.refresh_observations)
    consolidate = blocking(Memory.consolidate)
    delete_entries = blocking(Memory.delete_entries)
    redact_entries = blocking(Memory.redact_entries)
    rewind = blocking(Memory.rewind)
    delete_thread = blocking(Memory.delete_thread)
    forget_user = blocking(Memory.forget_user)


__all__ = ["SyncMemory", "blocking"]
