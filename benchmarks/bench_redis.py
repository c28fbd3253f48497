"""RedisAdapter on the real standalone server and cluster.

* ``add_entry`` rate, one call at a time, against raw redis-py doing the same writes for each
  entry (HINCRBY of the seq, the entry hash, the parent's child list, the index ZADD and the
  active leaf) in one pipelined round trip, in the same run: the faster of a MULTI/EXEC
  pipeline and a plain (not atomic) one is the baseline. Target: at least 50%.
* ``get_path(limit=50)`` and ``get_entries(limit=50)`` on a 100,000-entry thread against the same
  on a 1,000-entry thread. Target: within 1.5x (they read only what they return).

Servers come from ``COGMEM_TEST_REDIS_URL`` / ``COGMEM_TEST_REDIS_CLUSTER_NODES`` (defaults: the
ports ``scripts/services.sh`` uses). Each run writes under a unique key prefix and deletes it.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from typing import Any

from cogitator_memory.engines.redis.threads import RedisAdapter
from cogitator_memory.result import unwrap

from .common import Row, percentiles, time_async

STANDALONE_URL = os.environ.get("COGMEM_TEST_REDIS_URL", "redis://127.0.0.1:6390/0")
CLUSTER_NODES = os.environ.get("COGMEM_TEST_REDIS_CLUSTER_NODES", "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002")


def _adapter(topology: str) -> RedisAdapter:
    prefix = f"bench:{uuid.uuid4().hex[:10]}:"
    if topology == "cluster":
        return RedisAdapter(cluster={"nodes": CLUSTER_NODES.split(",")}, key_prefix=prefix)
    return RedisAdapter(url=STANDALONE_URL, key_prefix=prefix)


def _message(i: int) -> dict[str, Any]:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i} of the benchmark run"}


async def _raw_rate(memory: RedisAdapter, count: int, transaction: bool) -> float:
    """Entries per second written by raw redis-py commands, the same keys and fields per entry,
    in one pipeline per entry (MULTI/EXEC with ``transaction``, else a plain pipeline)."""
    client = memory.client
    p = memory.key_prefix
    thread_id = f"raw-{uuid.uuid4().hex[:8]}"
    thread_key, index_key = f"{p}thread:{thread_id}", f"{p}entries:{thread_id}"
    await client.hset(thread_key, mapping={"id": thread_id, "a": "bench", "c": 0, "u": 0, "l": "", "n": 0})
    parent = ""
    started = time.perf_counter()
    for i in range(count):
        entry_id = f"entry_raw{i:08d}"
        seq = i + 1
        body = json.dumps(
            {
                "id": entry_id,
                "thread_id": thread_id,
                "type": "message",
                "message": _message(i),
                "token_count": 12,
                "created_at": "2026-01-01T00:00:00Z",
            },
            separators=(",", ":"),
        )
        pipe = client.pipeline(transaction=transaction)
        pipe.hincrby(thread_key, "n", 1)
        pipe.hset(
            f"{p}entry:{entry_id}",
            mapping={"t": thread_id, "p": parent, "y": "message", "c": 0, "s": seq, "b": body},
        )
        if parent:
            pipe.hset(f"{p}entry:{parent}", "k", entry_id)
        pipe.zadd(index_key, {entry_id: seq})
        pipe.hset(thread_key, "l", entry_id)
        await pipe.execute()
        parent = entry_id
    return count / (time.perf_counter() - started)


async def _adapter_rate(memory: RedisAdapter, count: int) -> float:
    thread = unwrap(await memory.create_thread("bench"))
    started = time.perf_counter()
    for i in range(count):
        unwrap(await memory.add_entry({"thread_id": thread.id, "message": _message(i)}))
    return count / (time.perf_counter() - started)


async def _fill(memory: RedisAdapter, size: int) -> str:
    thread = unwrap(await memory.create_thread("bench"))
    batch = 200
    for start in range(0, size, batch):
        results = await asyncio.gather(
            *(
                memory.add_entry({"thread_id": thread.id, "message": _message(i)})
                for i in range(start, min(size, start + batch))
            )
        )
        for result in results:
            unwrap(result)
    return thread.id


async def _read_p50(memory: RedisAdapter, thread_id: str, repeat: int, kind: str) -> float:
    async def call() -> None:
        if kind == "get_path":
            result = await memory.get_path(thread_id=thread_id, limit=50)
        else:
            result = await memory.get_entries(thread_id=thread_id, limit=50)
        assert len(unwrap(result)) == 50

    await time_async(call, 20)  # warm up
    p50, _ = percentiles(await time_async(call, repeat))
    return p50 * 1000


async def _topology(topology: str, quick: bool) -> list[Row]:
    rows: list[Row] = []
    writes = 300 if quick else 3000
    big = 20_000 if quick else 100_000
    small = 1_000
    memory = _adapter(topology)
    async with memory:
        try:
            # Interleave the two writers and keep each one's best round, so a burst of load
            # from elsewhere on the machine hits both alike.
            multi_best = plain_best = adapter_best = 0.0
            for _ in range(3):
                multi_best = max(multi_best, await _raw_rate(memory, writes, True))
                plain_best = max(plain_best, await _raw_rate(memory, writes, False))
                adapter_best = max(adapter_best, await _adapter_rate(memory, writes))
            # The baseline is the faster raw writer: the plain pipeline, which is not even atomic.
            raw_best = max(multi_best, plain_best)
            ratio = adapter_best / raw_best
            rows.append(
                Row(
                    group="redis",
                    name=f"add_entry ({topology})",
                    value=adapter_best,
                    unit="entries/s",
                    baseline=raw_best,
                    baseline_name="raw redis-py, same writes, 1 pipelined round trip",
                    ratio=ratio,
                    target=">= 0.5x raw",
                    passed=ratio >= 0.5,
                    extra={
                        "entries_per_round": writes,
                        "rounds": 3,
                        "raw_multi_exec_per_s": multi_best,
                        "raw_plain_pipeline_per_s": plain_best,
                    },
                )
            )
            small_id = await _fill(memory, small)
            big_id = await _fill(memory, big)
            for kind in ("get_path", "get_entries"):
                small_ms = big_ms = float("inf")
                for _ in range(2):
                    small_ms = min(small_ms, await _read_p50(memory, small_id, 200, kind))
                    big_ms = min(big_ms, await _read_p50(memory, big_id, 200, kind))
                ratio = big_ms / small_ms
                rows.append(
                    Row(
                        group="redis",
                        name=f"{kind}(limit=50) on {big:,} entries ({topology})",
                        value=big_ms,
                        unit="ms p50",
                        baseline=small_ms,
                        baseline_name=f"same on {small:,} entries",
                        ratio=ratio,
                        target="<= 1.5x",
                        passed=ratio <= 1.5,
                    )
                )
        finally:
            await memory.delete_all_keys()
    return rows


async def run(quick: bool) -> list[Row]:
    """The figures of both topologies."""
    rows: list[Row] = []
    for topology in ("standalone", "cluster"):
        rows.extend(await _topology(topology, quick))
    return rows
