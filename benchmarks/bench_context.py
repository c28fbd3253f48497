"""The context builder: ``build(strategy="recent", max_tokens=4000)`` and ``relevant`` with a message index.

- ``recent`` on InMemory and SQLite threads of 2,000 and 100,000 messages of about 190
  characters: p50 and p95 per build. Targets: the 100,000-entry build within 1.5x of the
  2,000-entry one (the builder reads only what the budget holds), and faster than the TypeScript
  package at 2,000 entries (0.25 ms in memory, 6.8 ms on SQLite, reading the whole thread).
  Measured in the same run beside it: a plain ``get_path()`` of as many entries as the build
  read (what reading them as copies costs, before any building).
- ``relevant`` with a :class:`MessageIndex` on SQLite (threads and vectors in one file) at
  10,000 entries, HashingEmbedder(256): p50 and p95 per build. The input's vector is remembered
  by the builder after the first build, so the figures exclude embedding the input.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

from cogitator_memory import InMemoryAdapter, SQLiteAdapter, unwrap
from cogitator_memory.context import ContextBuilder, MessageIndex
from cogitator_memory.embeddings import HashingEmbedder
from cogitator_memory.threads.base import BaseMemoryAdapter
from cogitator_memory.vectors import SQLiteEmbeddingAdapter

from .common import Row, percentiles, time_async

WORDS = [
    "the",
    "agent",
    "reviewed",
    "deployment",
    "plan",
    "latency",
    "budget",
    "retries",
    "queue",
    "worker",
    "cache",
    "invoice",
    "customer",
    "order",
    "shipping",
    "refund",
    "weather",
    "travel",
    "booking",
    "hotel",
    "flight",
    "train",
    "museum",
    "dinner",
    "recipe",
    "garden",
    "bicycle",
    "cello",
]
TS_MEMORY_MS = 0.25
TS_SQLITE_MS = 6.8


def _text(rng: random.Random, i: int) -> str:
    words: list[str] = [f"#{i}"]
    while sum(len(w) + 1 for w in words) < 190:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:190]


async def _fill(memory: BaseMemoryAdapter, count: int, seed: int = 7) -> str:
    rng = random.Random(seed)
    thread = unwrap(await memory.create_thread("bench", {"user_id": "u1"}))
    for i in range(count):
        role = "user" if i % 2 == 0 else "assistant"
        unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": role, "content": _text(rng, i)}}))
    return thread.id


async def _recent(memory: BaseMemoryAdapter, thread_id: str, repeat: int) -> tuple[float, float, float, Any]:
    """p50 and p95 of a build, and p50 of a plain ``get_path()`` of as many entries as it read."""
    builder = ContextBuilder({"strategy": "recent", "max_tokens": 4000}, {"memory_adapter": memory})
    context = await builder.build(thread_id, system_prompt="You are a helpful assistant.")
    for _ in range(20):  # warm up
        await builder.build(thread_id, system_prompt="You are a helpful assistant.")
    samples = await time_async(lambda: builder.build(thread_id, system_prompt="You are a helpful assistant."), repeat)
    p50, p95 = percentiles(samples)
    read = context.metadata.original_message_count
    reads = await time_async(lambda: memory.get_path(thread_id=thread_id, limit=read), repeat)
    return p50 * 1e3, p95 * 1e3, percentiles(reads)[0] * 1e3, context


async def run(quick: bool) -> list[Row]:
    rows: list[Row] = []
    big = 20_000 if quick else 100_000
    repeat = 200 if quick else 1_000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for label, reference in (("InMemory", TS_MEMORY_MS), ("SQLite", TS_SQLITE_MS)):
            figures: dict[int, tuple[float, float]] = {}
            for size in (2_000, big):
                memory: BaseMemoryAdapter
                if label == "InMemory":
                    memory = InMemoryAdapter(max_entries=size + 10)
                else:
                    memory = SQLiteAdapter(path=folder / f"recent-{size}.db")
                async with memory:
                    tid = await _fill(memory, size)
                    p50, p95, plain_read, context = await _recent(memory, tid, repeat)
                    figures[size] = (p50, p95)
                    read = context.metadata.original_message_count
                    sent = context.metadata.included_message_count
                rows.append(
                    Row(
                        'build(strategy="recent", max_tokens=4000)',
                        f"{label}, {size:,} entries, p50 ms",
                        p50,
                        "ms",
                        reference if size == 2_000 else figures[2_000][0],
                        f"TypeScript package, {label}, 2,000 entries"
                        if size == 2_000
                        else f"{label}, 2,000 entries, p50",
                        p50 / (reference if size == 2_000 else figures[2_000][0]),
                        "faster than TypeScript" if size == 2_000 else "within 1.5x of 2,000",
                        p50 < reference if size == 2_000 else p50 <= 1.5 * figures[2_000][0],
                        {
                            "p95_ms": p95,
                            "entries_read": read,
                            "entries_sent": sent,
                            "get_path_of_as_many_p50_ms": plain_read,
                        },
                    )
                )

        size = 2_000 if quick else 10_000
        async with SQLiteAdapter(path=folder / "relevant.db") as memory:
            vectors = SQLiteEmbeddingAdapter(store=memory)
            unwrap(await vectors.connect())
            embedder = HashingEmbedder(256)
            index = MessageIndex(store=vectors, embedding=embedder, batch_size=256, queue_size=4096)
            index.attach(memory)
            tid = await _fill(memory, size)
            await index.flush()
            builder = ContextBuilder(
                {"strategy": "relevant", "max_tokens": 4000},
                {"memory_adapter": memory, "embedding_service": embedder, "message_index": index},
            )
            question = "what did we decide about the hotel booking and the refund for the flight"
            first = await builder.build(tid, current_input=question)
            await index.flush()
            for _ in range(10):
                await builder.build(tid, current_input=question)
            samples = await time_async(lambda: builder.build(tid, current_input=question), max(50, repeat // 5))
            p50, p95 = percentiles(samples)
            last = await builder.build(tid, current_input=question)
            await index.close()
            await vectors.disconnect()
        rows.append(
            Row(
                'build(strategy="relevant") + MessageIndex',
                f"SQLite, {size:,} entries, p50 ms",
                p50 * 1e3,
                "ms",
                None,
                None,
                None,
                None,
                None,
                {
                    "p95_ms": p95 * 1e3,
                    "indexed": index.indexed,
                    "strategy": last.strategy,
                    "errors": [e.message for e in first.errors + last.errors],
                    "entries_sent": last.metadata.included_message_count,
                },
            )
        )
    return rows
