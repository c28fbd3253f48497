"""MongoDBAdapter on a MongoDB wire server.

* ``add_entry`` rate, one call at a time, against raw pymongo doing the same writes for each
  entry in the same run: take the seq (``find_one_and_update`` with ``$inc``), insert the entry
  document, move the leaf (``update_one`` on the thread), as the adapter does without
  transactions. The two alternate in rounds, each in a database of its own, so both write into
  collections of the same size. Target: at least 60% of the raw rate.
* ``get_path(limit=50)`` on a big thread against the same on a 1,000-entry thread in the same
  collection. The big thread is 100,000 entries on a real MongoDB. On the mongoeco emulator it
  is smaller (10,000; 2,000 with ``--quick``): mongoeco checks ``_id`` uniqueness by scanning every
  stored document in Python on each insert, bulk inserts included, so loading costs O(n^2)
  (measured: 400 documents into a 1,000-document collection took 2.4 s) and 100,000 entries
  would take hours. ``COGMEM_BENCH_MONGODB_BIG`` sets the size. The threads are loaded with
  ``insert_many`` of prepared documents (batches of 250), not through ``add_entry``.
  Target: within 1.5x (a read of the newest 50 should not depend on the thread's size).

The server: ``COGMEM_BENCH_MONGODB_URL`` when set; otherwise a private mongoeco started from
``$COGMEM_SERVICES_DIR/mongovenv`` (as ``scripts/services.sh`` installs it) on a free port, so
the benchmark never loads the shared test server; otherwise ``COGMEM_TEST_MONGODB_URL``. The
row names say which server the figures come from.
"""

from __future__ import annotations

import functools
import os
import socket
import subprocess
import time
import uuid
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pymongo import AsyncMongoClient, ReturnDocument

from cogitator_memory.clock import to_micros
from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter
from cogitator_memory.result import unwrap

from .common import Row, percentiles, time_async

ROOT = Path(__file__).resolve().parents[1]


def _message(i: int) -> dict[str, Any]:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i} of the benchmark run"}


def _start_private_server() -> tuple[str, subprocess.Popen[str] | None]:
    """A server URL, and the process of the private mongoeco started for it (if any)."""
    url = os.environ.get("COGMEM_BENCH_MONGODB_URL")
    if url:
        return url, None
    python = Path(os.environ.get("COGMEM_SERVICES_DIR", "/tmp/cogmem-services")) / "mongovenv" / "bin" / "python"
    if not python.exists():
        return os.environ.get("COGMEM_TEST_MONGODB_URL", "mongodb://127.0.0.1:27019/?directConnection=true"), None
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [str(python), str(ROOT / "scripts" / "mongoeco_server.py"), str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "listening" in line:
            break
    return f"mongodb://127.0.0.1:{port}/?directConnection=true", process


async def _server_name(url: str) -> tuple[str, bool]:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(url, serverSelectionTimeoutMS=5000)
    try:
        hello = await client.admin.command("hello")
    finally:
        await client.close()
    if hello.get("gitVersion") == "mongoeco":
        return f"mongoeco {hello.get('version', '?')} emulator", True
    return f"MongoDB {hello.get('version', '?')}", False


async def _adapter_round(memory: MongoDBAdapter, thread_id: str, count: int) -> float:
    started = time.perf_counter()
    for i in range(count):
        unwrap(await memory.add_entry({"thread_id": thread_id, "message": _message(i), "token_count": 12}))
    return time.perf_counter() - started


async def _raw_round(memory: MongoDBAdapter, thread_id: str, count: int) -> float:
    """The adapter's writes for ``count`` entries, made with raw pymongo calls."""
    threads, entries = memory.threads_collection, memory.entries_collection
    started = time.perf_counter()
    for i in range(count):
        entry_id = f"entry_{uuid.uuid4().hex}"
        before = await threads.find_one_and_update(
            {"_id": thread_id},
            {"$inc": {"next_seq": 1}},
            projection={"next_seq": 1, "active_leaf_id": 1},
            return_document=ReturnDocument.BEFORE,
        )
        assert before is not None
        leaf = before.get("active_leaf_id")
        now = datetime.now(UTC)
        doc: dict[str, Any] = {
            "_id": entry_id,
            "thread_id": thread_id,
            "seq": before["next_seq"],
            "type": "message",
            "message": _message(i),
            "token_count": 12,
            "created_at": now,
            "created_us": to_micros(now),
        }
        if leaf is not None:
            doc["parent_id"] = leaf
        await entries.insert_one(doc)
        await threads.update_one({"_id": thread_id, "active_leaf_id": leaf}, {"$set": {"active_leaf_id": entry_id}})
    return time.perf_counter() - started


async def _add_rate(url: str, server: str, quick: bool) -> list[Row]:
    rounds, per_round = (3, 60) if quick else (5, 200)
    ours = MongoDBAdapter(uri=url, database=f"bench_a_{uuid.uuid4().hex[:8]}", socket_timeout=300)
    raw = MongoDBAdapter(uri=url, database=f"bench_r_{uuid.uuid4().hex[:8]}", socket_timeout=300)
    async with ours, raw:
        try:
            mode = "transactions" if ours.uses_transactions else "ordered writes"
            a_thread = unwrap(await ours.create_thread("bench")).id
            r_thread = unwrap(await raw.create_thread("bench")).id
            a_time = r_time = 0.0
            for _ in range(rounds):  # alternate, so both collections grow alike
                a_time += await _adapter_round(ours, a_thread, per_round)
                r_time += await _raw_round(raw, r_thread, per_round)
        finally:
            for store in (ours, raw):
                await store.client.drop_database(store.database)
    total = rounds * per_round
    adapter_rate, raw_rate = total / a_time, total / r_time
    return [
        Row(
            group=f"mongodb ({server})",
            name=f"add_entry, {mode}, {total} entries",
            value=adapter_rate,
            unit="entries/s",
            baseline=raw_rate,
            baseline_name="raw pymongo, same 3 writes",
            ratio=adapter_rate / raw_rate,
            target=">= 0.6x raw",
            passed=adapter_rate / raw_rate >= 0.6,
        )
    ]


async def _load(memory: MongoDBAdapter, thread_id: str, count: int) -> None:
    """A linear thread of ``count`` entries, written as prepared documents with insert_many."""
    base = datetime(2026, 1, 1, tzinfo=UTC)
    us = to_micros(base)
    batch: list[dict[str, Any]] = []
    parent: str | None = None
    for i in range(count):
        entry_id = f"entry_{thread_id}_{i:07d}"
        doc: dict[str, Any] = {
            "_id": entry_id,
            "thread_id": thread_id,
            "seq": i + 1,
            "type": "message",
            "message": _message(i),
            "token_count": 12,
            "created_at": base,
            "created_us": us + i,
        }
        if parent is not None:
            doc["parent_id"] = parent
        batch.append(doc)
        parent = entry_id
        if len(batch) == 250:
            await memory.entries_collection.insert_many(batch, ordered=False)
            batch = []
    if batch:
        await memory.entries_collection.insert_many(batch, ordered=False)
    await memory.threads_collection.update_one(
        {"_id": thread_id}, {"$set": {"active_leaf_id": parent, "next_seq": count + 1}}
    )


async def _path_scaling(url: str, server: str, emulator: bool, quick: bool) -> list[Row]:
    default_big = (2_000 if quick else 10_000) if emulator else 100_000
    big = int(os.environ.get("COGMEM_BENCH_MONGODB_BIG", default_big))
    small = 1_000
    memory = MongoDBAdapter(uri=url, database=f"bench_p_{uuid.uuid4().hex[:8]}", socket_timeout=600)
    rows: list[Row] = []
    async with memory:
        try:
            small_id = unwrap(await memory.create_thread("bench", thread_id="small")).id
            big_id = unwrap(await memory.create_thread("bench", thread_id="big")).id
            started = time.perf_counter()
            await _load(memory, small_id, small)
            await _load(memory, big_id, big)
            load_s = time.perf_counter() - started
            repeat = 20 if quick else 60

            async def path(thread_id: str) -> list[Any]:
                return unwrap(await memory.get_path(thread_id=thread_id, limit=50))

            async def newest(thread_id: str) -> list[Any]:
                return unwrap(await memory.get_entries(thread_id=thread_id, limit=50))

            for label, read in (("get_path(limit=50)", path), ("get_entries(limit=50)", newest)):
                assert len(await read(small_id)) == 50 and len(await read(big_id)) == 50
                small_p50, _ = percentiles(await time_async(functools.partial(read, small_id), repeat))
                big_p50, big_p95 = percentiles(await time_async(functools.partial(read, big_id), repeat))
                rows.append(
                    Row(
                        group=f"mongodb ({server})",
                        name=f"{label}, {big:,}-entry thread, p50",
                        value=big_p50 * 1000,
                        unit="ms",
                        baseline=small_p50 * 1000,
                        baseline_name=f"{small:,}-entry thread",
                        ratio=big_p50 / small_p50,
                        target="<= 1.5x" if label.startswith("get_path") else None,
                        passed=big_p50 / small_p50 <= 1.5 if label.startswith("get_path") else None,
                        extra={"p95_ms": big_p95 * 1000, "load_seconds": load_s, "loaded_with": "insert_many x250"},
                    )
                )
        finally:
            await memory.client.drop_database(memory.database)
    return rows


async def run(quick: bool) -> list[Row]:
    """The rows of this benchmark (see the module docstring)."""
    url, process = _start_private_server()
    try:
        server, emulator = await _server_name(url)
        rows = await _add_rate(url, server, quick)
        rows += await _path_scaling(url, server, emulator, quick)
        return rows
    finally:
        if process is not None:
            process.terminate()
            with suppress(subprocess.TimeoutExpired):
                process.wait(10)
            if process.stdout is not None:
                process.stdout.close()
