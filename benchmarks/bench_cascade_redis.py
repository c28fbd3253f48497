"""``MemoryCascade.delete_user`` on Redis: a user with 100 threads among 1,000 threads of others.

Two users with the same threads (100 of 10 entries each) share the store with 1,000 threads of
a third. One is forgotten through ``threads_of_user`` (a set per user kept by the thread
scripts), the other through a view of the same store without it, which must list every thread:
the same run, the same data. Also timed: finding the threads alone, both ways, and the one-time
backfill that adds threads written before the sets existed (here: all 1,200, after their sets
and the marker were deleted).

Redis comes from ``COGMEM_TEST_REDIS_URL`` (a key prefix of the run's own, deleted at the end).
Run: ``python -m benchmarks --only cascade_redis`` (``--quick``: 10 threads among 100).
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

from cogitator_memory import RedisAdapter, unwrap
from cogitator_memory.cascade import MemoryCascade, find_user_threads

from .common import Row

REDIS_URL = os.environ.get("COGMEM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
GROUP = "cascade"
AGENT = "bench"
ENTRIES = 10


class _Counting:
    """The store, counting the ``list_threads`` calls made through it; ``indexed=False`` hides
    ``threads_of_user`` (a store without that path)."""

    def __init__(self, inner: Any, *, indexed: bool) -> None:
        self._inner = inner
        self._indexed = indexed
        self.listed = 0

    def __getattr__(self, name: str) -> Any:
        if name == "threads_of_user" and not self._indexed:
            raise AttributeError(name)
        value = getattr(self._inner, name)
        if name == "list_threads":

            async def counted(*args: Any, **kwargs: Any) -> Any:
                self.listed += 1
                return await value(*args, **kwargs)

            return counted
        return value


async def _fill(memory: RedisAdapter, user: str, threads: int, entries: int) -> None:
    for n in range(threads):
        thread_id = f"thread_{user}_{n:04d}"
        unwrap(await memory.create_thread(AGENT, {"user_id": user}, thread_id))
        for i in range(entries):
            role = "user" if i % 2 == 0 else "assistant"
            text = f"{user} thread {n} message {i}"
            unwrap(await memory.add_entry({"thread_id": thread_id, "message": {"role": role, "content": text}}))


async def _forget(memory: RedisAdapter, user: str, *, indexed: bool) -> tuple[float, int, Any]:
    view = _Counting(memory, indexed=indexed)
    cascade = MemoryCascade(memory=view)
    started = time.perf_counter()
    counts = await cascade.delete_user(user, {"agent_ids": [AGENT]})
    return time.perf_counter() - started, view.listed, counts


async def run(quick: bool) -> list[Row]:
    threads, others = (10, 100) if quick else (100, 1_000)
    prefix = f"bench:{uuid.uuid4().hex[:10]}:"
    async with RedisAdapter(url=REDIS_URL, key_prefix=prefix) as memory:
        try:
            await _fill(memory, "ana", threads, ENTRIES)
            await _fill(memory, "cy", threads, ENTRIES)
            await _fill(memory, "bo", others, 1)
            client = memory.client
            await client.delete(f"{prefix}user:ana", f"{prefix}user:cy", f"{prefix}user:bo", f"{prefix}users:indexed")
            started = time.perf_counter()
            await find_user_threads(memory, "nobody")  # the backfill runs here, once
            backfill = time.perf_counter() - started

            started = time.perf_counter()
            by_index = await find_user_threads(memory, "ana")
            find_indexed = time.perf_counter() - started
            started = time.perf_counter()
            by_listing = await find_user_threads(_Counting(memory, indexed=False), "ana")
            find_listed = time.perf_counter() - started
            assert {t.id for t in by_index.owned} == {t.id for t in by_listing.owned}
            assert len(by_index.owned) == threads

            indexed, listed_calls, counts = await _forget(memory, "ana", indexed=True)
            listing, listing_calls, counts_listing = await _forget(memory, "cy", indexed=False)
            assert counts.threads == counts_listing.threads == threads, (counts, counts_listing)
            assert counts.entries.deleted == counts_listing.entries.deleted == threads * ENTRIES
            assert listed_calls == 0 and listing_calls > 0
            kept = unwrap(await memory.threads_of_user("bo"))
            assert len(kept) == others and not unwrap(await memory.threads_of_user("ana"))
        finally:
            await memory.delete_all_keys()
    store = f"{threads} threads x {ENTRIES} entries among {others:,} others"
    return [
        Row(
            GROUP,
            f"Redis delete_user, {store}",
            indexed * 1000,
            "ms",
            baseline=listing * 1000,
            baseline_name="the same delete_user listing every thread of the store",
            ratio=indexed / listing if listing else None,
            target="lists no thread of the store (index path)",
            passed=listed_calls == 0,
            extra={"list_threads_calls": listed_calls, "list_threads_calls_listing": listing_calls},
        ),
        Row(
            GROUP,
            f"Redis find the user's threads (threads_of_user), {store}",
            find_indexed * 1000,
            "ms",
            baseline=find_listed * 1000,
            baseline_name="listing every thread of the store",
            ratio=find_indexed / find_listed if find_listed else None,
        ),
        Row(
            GROUP,
            f"Redis one-time backfill of the user sets, {threads * 2 + others:,} threads",
            backfill * 1000,
            "ms",
        ),
    ]
