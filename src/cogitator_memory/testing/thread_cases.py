"""What the thread-store conformance cases share: the case class, the start time, and helpers that
write a thread and read it back. :mod:`.conformance` and :mod:`.conformance_inputs` both use it,
so neither imports the other's helpers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from ..result import MemoryResult, unwrap
from ..threads.base import MemoryAdapter
from ..threads.records import MemoryEntry, Thread
from .cases import NamedCase, expect, expect_equal, expect_failed

Case = Callable[[MemoryAdapter], Awaitable[None]]


class ConformanceCase(NamedCase[MemoryAdapter]):
    """One named check of the thread-store contract."""


_eq = expect_equal
_true = expect

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


_fails = expect_failed


async def _thread(store: MemoryAdapter, agent: str = "agent-1", **metadata: Any) -> Thread:
    return unwrap(await store.create_thread(agent, metadata or None))


async def _say(store: MemoryAdapter, thread_id: str, text: str, role: str = "user", **extra: Any) -> MemoryEntry:
    entry: dict[str, Any] = {"thread_id": thread_id, "message": {"role": role, "content": text}}
    entry.update(extra)
    return unwrap(await store.add_entry(entry))


async def _texts(result: Awaitable[MemoryResult[list[MemoryEntry]]]) -> list[str]:
    return [e.message.text if e.message else f"<{e.type}>" for e in unwrap(await result)]


async def _all_entries(store: MemoryAdapter, thread_id: str) -> list[MemoryEntry]:
    return unwrap(await store.get_entries(thread_id=thread_id, types="all", include_tool_calls=True))


def _check_tree(entries: list[MemoryEntry], thread: Thread) -> None:
    ids = {e.id for e in entries}
    for e in entries:
        _true(e.parent_id is None or e.parent_id in ids, f"entry {e.id} has a parent {e.parent_id} that is gone")
    if entries:
        _true(thread.active_leaf_id in ids, f"the active leaf {thread.active_leaf_id} is not an entry of the thread")
    seqs = [e.seq for e in entries]
    _eq(len(set(seqs)), len(seqs), "seq values must be unique within a thread")


__all__ = [
    "T0",
    "Case",
    "ConformanceCase",
    "_all_entries",
    "_check_tree",
    "_eq",
    "_fails",
    "_say",
    "_texts",
    "_thread",
    "_true",
]
