"""``SyncMemory``: :class:`~cogitator_memory.runtime.memory.Memory` for code that does not use
``asyncio`` (notebooks, WSGI apps, scripts, worker threads).

Each method is made once from the ``Memory`` method of the same name by :func:`blocking`: the
call runs on a private event loop and the calling thread waits for it. When nothing else runs
that loop, the calling thread runs it itself for the call (no hop to another thread); otherwise
the call is handed to the loop as a task. Work the memory leaves in the background (auto
extraction, filling the message index) goes on in a daemon thread between calls. So it works
from any thread, and from a thread that runs an event loop of its own (that loop is blocked for
the call, nothing deadlocks); only a call from code the private loop runs (the memory itself)
is refused. One ``SyncMemory`` may be used by many threads at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import queue
import sys
import threading
from asyncio.events import _set_running_loop
from collections.abc import Callable, Coroutine, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Self, TypeVar

from ..errors import MemoryStoreError
from .config import MemoryConfig
from .memory import Memory

if TYPE_CHECKING:
    from ..compat.mem0 import SyncMem0Compat

P = ParamSpec("P")
R = TypeVar("R")


class _LoopThread:
    """The private event loop, run by the thread that calls, or by a daemon thread meanwhile.

    A call made while nobody runs the loop runs it in the calling thread until the call is done
    (no hop between threads: the hop and the woken thread's cold start cost more than the
    call itself for most calls). A call made while the loop is running (another thread's call,
    or work the memory left in the background) is handed to the loop as a task and its caller
    waits. Whoever stops running the loop with tasks still pending (auto-extraction, an index
    being filled, another thread's call) hands it to the daemon thread, which runs it until no
    task is left. So background work never waits for the next call.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        # Who runs the loop (a thread id; None: nobody), and whether stop() was called. Read
        # and changed under the lock, so that a task handed to the loop is always seen by
        # whoever stops running it.
        self._lock = threading.Lock()
        self._driver: int | None = None
        self._stopping = False
        self._wake = threading.Event()
        self.thread = threading.Thread(target=self._main, name="cogitator-memory-sync", daemon=True)
        self.thread.start()

    # ----- the daemon thread ---------------------------------------------------------------

    def _main(self) -> None:
        loop = self.loop
        while True:
            self._wake.wait()
            self._wake.clear()
            while True:
                with contextlib.suppress(asyncio.CancelledError):  # stop() cancels every task
                    loop.run_until_complete(_until_idle())
                with self._lock:
                    if self._stopping:
                        break
                    if not _busy(loop):
                        self._driver = None
                        break
            if self._stopping:
                break
        try:
            _wind_up(loop)
        finally:
            loop.close()

    def _hand_over(self) -> None:
        """Let the daemon thread run the loop (called under the lock by whoever stops running it)."""
        self._driver = self.thread.ident
        self._wake.set()

    # ----- calls ---------------------------------------------------------------------------

    def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        """Run ``coroutine`` on the loop and wait for its result (its exception is raised here)."""
        outer = asyncio._get_running_loop()  # the loop this thread runs, if any (None: no exception made)
        if outer is self.loop:
            coroutine.close()
            raise MemoryStoreError("SyncMemory was called from its own event loop: await the Memory (.memory) instead")
        loop = self.loop
        with self._lock:
            if self._stopping or loop.is_closed():
                coroutine.close()
                raise MemoryStoreError("SyncMemory is closed")
            # A thread running a loop of its own cannot run this one too: its call is handed over.
            drive = self._driver is None and outer is None
            if drive:
                self._driver = threading.get_ident()
            else:
                outcome, started = self._hand(coroutine)
        if drive:
            return self._drive(coroutine)
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

    def _drive(self, coroutine: Coroutine[Any, Any, R]) -> R:
        """Run the loop in this thread until ``coroutine`` is done.

        On asyncio's own loops the loop is stepped directly (``_run_once``), with the handles
        ready when the call starts (its first step among them) run before the first poll: a
        call that does no I/O then costs no system call and none of ``run_until_complete``'s
        setting up, about half of what a call adds (see docs/benchmarks.md). Other loops (a
        debug loop, uvloop) get ``run_until_complete``.
        """
        loop = self.loop
        task = loop.create_task(coroutine)
        step = getattr(loop, "_run_once", None)
        ready = getattr(loop, "_ready", None)
        first = getattr(loop, "_asyncgen_firstiter_hook", None)
        finalizer = getattr(loop, "_asyncgen_finalizer_hook", None)
        try:
            if step is None or ready is None or first is None or finalizer is None or loop.get_debug():
                return loop.run_until_complete(task)
            hooks = sys.get_asyncgen_hooks()  # async generators are closed by the loop, as run_forever has it
            sys.set_asyncgen_hooks(firstiter=first, finalizer=finalizer)
            _set_running_loop(loop)
            try:
                for _ in range(len(ready)):  # what _run_once would run after polling
                    handle = ready.popleft()
                    if not handle._cancelled:
                        handle._run()
                while not task.done():
                    step()
            finally:
                _set_running_loop(None)
                sys.set_asyncgen_hooks(*hooks)
            return task.result()
        finally:
            if not task.done():  # KeyboardInterrupt while running: the call is cancelled
                task.cancel()
            with self._lock:
                if self._stopping or _busy(loop):
                    self._hand_over()
                else:
                    self._driver = None

    def _hand(
        self, coroutine: Coroutine[Any, Any, R]
    ) -> tuple[queue.SimpleQueue[tuple[bool, Any]], list[asyncio.Task[None]]]:
        """Give ``coroutine`` to the loop as a task (called under the lock); its outcome comes
        back through the queue (cheaper than a concurrent Future, which has a Condition and a
        done callback of its own)."""
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
        if self._driver is None:  # nobody runs the loop (the caller runs a loop of its own)
            started.append(loop.create_task(runner()))
            self._hand_over()
        elif loop.get_debug():  # a debug loop refuses a task made in another thread
            loop.call_soon_threadsafe(lambda: started.append(loop.create_task(runner())))
        else:
            # Making a task appends its first step to the loop's ready queue, as
            # call_soon_threadsafe does, whose wake-up follows.
            started.append(asyncio.Task(runner(), loop=loop))
            loop.call_soon_threadsafe(_nothing)
        return outcome, started

    def stop(self) -> None:
        """Stop the loop and wait for the daemon thread (what is still running is cancelled)."""
        with self._lock:
            if not self._stopping:
                self._stopping = True
                if self._driver is None:
                    self._hand_over()
                else:
                    self.loop.call_soon_threadsafe(_cancel_all, self.loop)
        self.thread.join()


def _busy(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` has work left: a task, or a callback waiting to run (such as the closing
    of an async generator a call left open, which becomes a task when it runs)."""
    return bool(asyncio.all_tasks(loop) or getattr(loop, "_ready", None))


async def _until_idle() -> None:
    """Wait until every other task of the running loop is done."""
    me = asyncio.current_task()
    while True:
        others = [task for task in asyncio.all_tasks() if task is not me]
        if not others:
            return
        await asyncio.wait(others)


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    for task in asyncio.all_tasks(loop):
        task.cancel()


def _wind_up(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what is left on the stopped loop, wait for it, and close its async generators.

    The ``_cancel_all`` that :meth:`_LoopThread.stop` sent the loop may still be waiting in its
    ready queue when the daemon thread gets here; it then runs first and cancels the step run
    here. The step is run again: the callback has run by then, and is sent only once.
    """
    for _ in range(2):
        try:
            _cancel_all(loop)
            left = asyncio.all_tasks(loop)
            if left:
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            return
        except asyncio.CancelledError:
            continue


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

    def run(self, coroutine: Coroutine[Any, Any, R]) -> R:
        """Run a coroutine of :attr:`memory` (or one using it) on the memory's loop and return
        its result: for code of your own, and the integrations, that call more than one method."""
        return self._loop.run(coroutine)

    @property
    def enabled(self) -> bool:
        """False when the store could not be reached and the config said ``on_error: disable``."""
        return self.memory.enabled

    @property
    def mem0(self) -> SyncMem0Compat:
        """mem0's calls in mem0's shapes, synchronous (see :attr:`Memory.mem0`, docs/mem0.md)."""
        from ..compat.mem0 import SyncMem0Compat

        return SyncMem0Compat(self)

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
