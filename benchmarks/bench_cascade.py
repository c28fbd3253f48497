"""``MemoryCascade.delete_user`` on SQLite and PostgreSQL: a user with 100 threads of 1,000 entries,
with memory items quoting them, a memory file per thread written at one of its entries and a
vector per entry, in a store that also holds another user's threads.

* **Time** of ``delete_user`` (SQLite with ``secure_delete`` on, PostgreSQL with pgvector), and
  entries taken per second. After it, nothing of the user is left (threads, items, vectors) and
  the other user's threads are all there.
* **Finding the user's threads** through the store's ``threads_of_user`` (indexes on the thread
  metadata) beside listing every thread of the store, as a store without that path must, in the
  same run; the figure is also the number of ``list_threads`` calls ``delete_user`` made (0:
  it did not list the store).

PostgreSQL comes from ``COGMEM_TEST_POSTGRES_URL`` (a database of the run's own, dropped at the
end). Run: ``python -m benchmarks --only cascade`` (``--quick``: 10 threads of 200 entries).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from cogitator_memory import SQLiteAdapter, SQLiteEmbeddingAdapter, unwrap
from cogitator_memory.cascade import MemoryCascade, find_user_threads
from cogitator_memory.clock import now
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.files.service import MemoryFiles
from cogitator_memory.items.service import MemoryItems
from cogitator_memory.testing.services import own_database

from .common import Row

ADMIN_URL = os.environ.get("COGMEM_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5433/postgres")
GROUP = "cascade"
AGENT = "bench"
DIMENSIONS = 8
ITEMS_PER_THREAD = 10


def _text(thread: int, i: int) -> str:
    return f"thread {thread} message {i}: the user talks about plans number {i * 7 % 97} and more"


class _Counting:
    """The store, counting the ``list_threads`` calls made through it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.listed = 0

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name == "list_threads":

            async def counted(*args: Any, **kwargs: Any) -> Any:
                self.listed += 1
                return await value(*args, **kwargs)

            return counted
        return value


class _Listing:
    """Only the listing of the store: how a store without ``threads_of_user`` is searched."""

    def __init__(self, inner: Any) -> None:
        self.list_threads = inner.list_threads


async def _derived(memory: Any, vectors: Any, thread_id: str, user: str, entry_ids: list[str], n: int) -> None:
    items = MemoryItems(adapter=memory)
    for k in range(ITEMS_PER_THREAD):
        entry = entry_ids[(k * 97) % len(entry_ids)]
        await items.add(
            {
                "kind": "fact",
                "subject": "user",
                "attribute": f"plan {n} {k}",
                "value": f"plan {k}",
                "evidence": [{"entry_id": entry, "thread_id": thread_id, "quote": "plans"}],
                "trust": "user",
                "scope": {"agent_id": AGENT, "user_id": user},
            }
        )
    files = MemoryFiles(adapter=memory)
    place = {"thread_id": thread_id, "entry_id": entry_ids[0], "branch": [entry_ids[0]]}
    await files.run(
        {"scope": {"agent_id": AGENT, "user_id": user}, "place": place},
        {"command": "create", "path": f"/memories/plans-{n}.md", "file_text": f"plans of thread {n}\n"},
    )
    batch = [
        {
            "source_id": entry,
            "source_type": "message",
            "content": _text(n, i),
            "vector": [float((i + d) % 7 + 1) for d in range(DIMENSIONS)],
            "metadata": {"agent_id": AGENT, "thread_id": thread_id, "user_id": user},
        }
        for i, entry in enumerate(entry_ids)
    ]
    unwrap(await vectors.add_embeddings(batch))


async def _fill_sqlite(memory: SQLiteAdapter, vectors: Any, user: str, threads: int, size: int, derived: bool) -> None:
    for n in range(threads):
        thread_id = f"thread_{user}_{n:03d}"
        unwrap(await memory.create_thread(AGENT, {"user_id": user}, thread_id))
        ids = []
        for i in range(size):
            role = "user" if i % 2 == 0 else "assistant"
            entry = unwrap(
                await memory.add_entry({"thread_id": thread_id, "message": {"role": role, "content": _text(n, i)}})
            )
            ids.append(entry.id)
        if derived:
            await _derived(memory, vectors, thread_id, user, ids, n)


async def _fill_postgres(
    memory: PostgresAdapter, url: str, schema: str, user: str, threads: int, size: int, derived: bool
) -> None:
    stamp = now()
    for n in range(threads):
        thread_id = f"thread_{user}_{n:03d}"
        unwrap(await memory.create_thread(AGENT, {"user_id": user}, thread_id))
        ids = [f"entry_{user}_{n:03d}_{i:05d}" for i in range(size)]
        with psycopg.connect(url, autocommit=True) as conn:
            with (
                conn.cursor() as cur,
                cur.copy(
                    f'COPY "{schema}".entries (id, thread_id, parent_id, seq, type, content, created_at) FROM STDIN'
                ) as copy,
            ):
                for i, eid in enumerate(ids):
                    role = "user" if i % 2 == 0 else "assistant"
                    content = {"type": "message", "token_count": 16, "message": {"role": role, "content": _text(n, i)}}
                    copy.write_row(
                        (eid, thread_id, ids[i - 1] if i else None, i + 1, "message", json.dumps(content), stamp)
                    )
            conn.execute(
                f'UPDATE "{schema}".threads SET active_leaf_id = %s, next_seq = %s WHERE id = %s',
                (ids[-1], size + 1, thread_id),
            )
        if derived:
            await _derived(memory, memory, thread_id, user, ids, n)


async def _measure(label: str, memory: Any, vectors: Any, threads: int, size: int) -> list[Row]:
    # finding the user's threads: the store's index path beside listing the whole store
    await find_user_threads(memory, "nobody")  # the indexes are made on first use
    started = time.perf_counter()
    indexed = await find_user_threads(memory, "ana")
    by_index = time.perf_counter() - started
    started = time.perf_counter()
    listed = await find_user_threads(_Listing(memory), "ana")
    by_listing = time.perf_counter() - started
    assert {t.id for t in indexed.owned} == {t.id for t in listed.owned} and len(indexed.owned) == threads

    counting = _Counting(memory)
    cascade = MemoryCascade(memory=counting, items=memory, files=memory, graph=memory, embeddings=vectors)
    started = time.perf_counter()
    counts = await cascade.delete_user("ana", {"agent_ids": [AGENT]})
    elapsed = time.perf_counter() - started

    left_threads = (await find_user_threads(memory, "ana")).owned
    left_items = unwrap(await memory.query_items({"within": {"agent_id": AGENT, "user_id": "ana"}}))
    left_vectors = unwrap(await vectors.get_by_sources([f"entry_ana_000_{i:05d}" for i in range(5)]))
    others = (await find_user_threads(memory, "bo")).owned
    assert not left_threads and not left_items and not left_vectors, "delete_user left something behind"
    assert counts.threads == threads and counts.entries.deleted == threads * size, counts
    entries = threads * size
    return [
        Row(
            GROUP,
            f"{label} delete_user, {threads} threads x {size:,} entries",
            elapsed,
            "s",
            target="lists no thread of the store (index path)",
            passed=counting.listed == 0,
            extra={
                "entries_per_s": entries / elapsed,
                "list_threads_calls": counting.listed,
                "counts": counts.dump(),
                "other_user_threads_kept": len(others),
            },
        ),
        Row(
            GROUP,
            f"{label} find the user's threads (threads_of_user)",
            by_index * 1000,
            "ms",
            baseline=by_listing * 1000,
            baseline_name="listing every thread of the store",
            ratio=by_index / by_listing if by_listing else None,
        ),
    ]


async def run(quick: bool) -> list[Row]:
    threads, size = (10, 200) if quick else (100, 1_000)
    other_threads = threads * 2
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cascade.db"
        async with SQLiteAdapter(path=str(path)) as memory:
            memory.connection.execute("PRAGMA secure_delete = ON")
            async with SQLiteEmbeddingAdapter(store=memory, dimensions=DIMENSIONS) as vectors:
                await _fill_sqlite(memory, vectors, "ana", threads, size, True)
                await _fill_sqlite(memory, vectors, "bo", other_threads, 20, False)
                rows += await _measure("SQLite", memory, vectors, threads, size)
    with own_database(ADMIN_URL, "cogmem_bench") as url:
        schema = "bench_cascade"
        async with PostgresAdapter(url=url, schema=schema, pool_size=4, dimensions=DIMENSIONS) as pg:
            await _fill_postgres(pg, url, schema, "ana", threads, size, True)
            await _fill_postgres(pg, url, schema, "bo", other_threads, 20, False)
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'ANALYZE "{schema}".entries')
            rows += await _measure("PostgreSQL", pg, pg, threads, size)
    return rows
