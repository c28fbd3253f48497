"""Memory items on MongoDBAdapter, each figure beside raw pymongo in the same run.

* Item writes per second through ``MemoryItems.add`` (the rules, one item at a time: the slot
  read, the insert, the layout read; plus an update when the write supersedes the slot's state),
  for new slots and for writes superseding them, and through ``add_items`` in batches of 500,
  against raw pymongo inserting the same documents (``insert_one`` per item; ``insert_many`` per
  batch). Adapter and raw write into databases of their own and alternate in rounds, so both
  collections grow alike; the best round of each counts.
* ``MemoryItems.query(scope)`` and ``query_items({"visible_to": scope})`` p50/p95 for a scope of
  100 items among a small and a big number of items of the same agent (the other users' items),
  each size in a database of its own, the two queried in turn. Target: the big figure within
  1.5x of the small one. Beside them, raw pymongo reading the same 100 documents (``scope_key
  $in`` the scope's keys, the same fields and index hint) and parsing their JSON bodies.

The sizes are 10,000 and 100,000 on a real MongoDB. On the mongoeco emulator they are 1,000 and
4,000 (300 and 1,200 with ``--quick``), and the write rounds are smaller: mongoeco scans every
stored document of a collection on each insert (``insert_many`` included, one document at a
time), so loading N documents costs O(N^2) (100,000 would take a day), and it answers every
query by scanning the collection in Python without reading an index, so a query's time grows
with the collection whatever its indexes. ``COGMEM_BENCH_MONGODB_ITEMS=small,big`` sets the sizes.

The server: as ``bench_mongodb`` (``COGMEM_BENCH_MONGODB_URL``, else a private mongoeco, else
``COGMEM_TEST_MONGODB_URL``); the row names say which server the figures come from. Each run
drops the databases it made.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from contextlib import suppress
from datetime import UTC, datetime, timedelta
from typing import Any

from cogitator_memory import unwrap
from cogitator_memory.clock import to_micros
from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter
from cogitator_memory.items import MemoryItem, MemoryItems, MemoryScope
from cogitator_memory.items.records import scope_key, visible_scope_keys

from .bench_mongodb import _server_name, _start_private_server
from .common import Row, percentiles, time_async

T0 = datetime(2026, 1, 1, tzinfo=UTC)
AGENT = "bench"
SCOPE_SIZE = 100
BATCH = 500


def _adapter(url: str, label: str) -> MongoDBAdapter:
    # mongoeco answers no heartbeat while it stores a batch: a long connect_timeout keeps pymongo
    # from dropping the server mid-load.
    return MongoDBAdapter(
        uri=url, database=f"bench_i{label}_{uuid.uuid4().hex[:8]}", connect_timeout=120, socket_timeout=900
    )


def _item(n: int, user: str) -> MemoryItem:
    return MemoryItem(
        id=f"mem_{user}_{n:07d}",
        kind="fact",
        subject=user,
        attribute=f"attribute {n % SCOPE_SIZE}",
        value=f"The value number {n} that {user} mentioned while planning a trip to Lisbon.",
        evidence=[{"entry_id": f"entry_{user}_{n}", "thread_id": f"thread_{user}", "quote": f"value number {n}"}],
        trust="user",
        verified=True,
        confidence=0.9,
        status="active",
        scope=MemoryScope(agent_id=AGENT, user_id=user),
        recorded_at=T0 + timedelta(milliseconds=n),
    )


def _new(n: int, writer: str, slots: int) -> dict[str, Any]:
    return {
        "kind": "fact",
        "subject": writer,
        "attribute": f"attribute {n % slots}",
        "value": f"The value number {n} said while planning a trip.",
        "evidence": [{"entry_id": f"entry_{n}", "thread_id": "thread_w", "quote": f"value number {n}"}],
        "trust": "user",
        "verified": True,
        "confidence": 0.9,
        "scope": {"agent_id": AGENT, "user_id": writer},
    }


def _raw_document(item: MemoryItem) -> dict[str, Any]:
    """The document MongoDBItems stores for an item, built by hand (engines/mongodb/items.py)."""
    scope = item.scope
    recorded = to_micros(item.recorded_at)
    return {
        "_id": item.id,
        "agent_id": scope.agent_id,
        "user_id": scope.user_id,
        "project_id": scope.project_id,
        "thread_id": scope.thread_id,
        "scope_key": scope_key(scope),
        "subject_key": item.subject_key,
        "slot_key": item.slot_key,
        "kind": item.kind,
        "status": item.status,
        "start_us": recorded,
        "valid_to_us": None,
        "recorded_us": recorded,
        "expired_us": None,
        "entry_ids": sorted({e.entry_id for e in item.evidence if e.entry_id}),
        "times_retrieved": 0,
        "last_retrieved_us": None,
        "version": 1,
        "body": item.model_dump_json(exclude_none=True, exclude={"times_retrieved", "last_retrieved_at", "version"}),
    }


async def _raw_rate(store: MongoDBAdapter, items: list[MemoryItem], per_call: int) -> float:
    collection = store.items_collection
    start = time.perf_counter()
    for i in range(0, len(items), per_call):
        docs = [_raw_document(item) for item in items[i : i + per_call]]
        if per_call == 1:
            await collection.insert_one(docs[0])
        else:
            await collection.insert_many(docs, ordered=True)
    return len(items) / (time.perf_counter() - start)


async def _batches(store: MongoDBAdapter, items: list[MemoryItem]) -> float:
    start = time.perf_counter()
    for i in range(0, len(items), BATCH):
        unwrap(await store.add_items(items[i : i + BATCH]))
    return len(items) / (time.perf_counter() - start)


async def _singles(service: MemoryItems, news: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    for new in news:
        await service.add(new)
    return len(news) / (time.perf_counter() - start)


async def _bench_writes(url: str, server: str, emulator: bool, quick: bool) -> list[Row]:
    rounds = 3
    singles, batched = ((20, 250) if quick else (40, 500)) if emulator else ((200, 2_000) if quick else (1_000, 10_000))
    rates: dict[str, list[float]] = {k: [] for k in ("new", "supersede", "raw_single", "batch", "raw_batch")}
    ours, raw = _adapter(url, "w"), _adapter(url, "r")
    async with ours, raw:
        try:
            mode = "transactions" if ours.uses_transactions else "ordered writes"
            service = MemoryItems(adapter=ours)
            for r in range(rounds):  # alternate, so both collections grow alike
                rates["raw_single"].append(await _raw_rate(raw, [_item(n, f"single{r}") for n in range(singles)], 1))
                rates["new"].append(await _singles(service, [_new(n, f"writer{r}", singles) for n in range(singles)]))
                # Every slot written before: each write closes the slot's state (one update_items more).
                rates["supersede"].append(
                    await _singles(service, [_new(n + singles, f"writer{r}", singles) for n in range(singles)])
                )
                rates["raw_single"].append(await _raw_rate(raw, [_item(n, f"single{r}b") for n in range(singles)], 1))
                rates["raw_batch"].append(
                    await _raw_rate(raw, [_item(n, f"rawbatch{r}") for n in range(batched)], BATCH)
                )
                rates["batch"].append(await _batches(ours, [_item(n, f"batch{r}") for n in range(batched)]))
        finally:
            for store in (ours, raw):
                await store.client.drop_database(store.database)
    raw_single, raw_batch = max(rates["raw_single"]), max(rates["raw_batch"])
    rows = []
    for key, label, target in (
        ("new", "MemoryItems.add, new slots (slot read, insert, layout read)", 0.15),
        ("supersede", "MemoryItems.add, superseding (plus one update_items)", 0.10),
    ):
        rate = max(rates[key])
        rows.append(
            Row(
                f"mongodb items ({server})",
                f"{label}, {mode}, items/s",
                rate,
                "items/s",
                raw_single,
                "raw pymongo insert_one of the same documents",
                rate / raw_single,
                f">= {target:.0%} of raw",
                rate / raw_single >= target,
                {"rounds": rates[key], "raw_rounds": rates["raw_single"]},
            )
        )
    batch_rate = max(rates["batch"])
    rows.append(
        Row(
            f"mongodb items ({server})",
            f"add_items batches of {BATCH}, {mode}, items/s",
            batch_rate,
            "items/s",
            raw_batch,
            f"raw pymongo insert_many of {BATCH} same documents",
            batch_rate / raw_batch,
            ">= 40% of raw",
            batch_rate / raw_batch >= 0.40,
            {"rounds": rates["batch"], "raw_rounds": rates["raw_batch"]},
        )
    )
    return rows


async def _fill(store: MongoDBAdapter, size: int) -> None:
    """``size`` items: 100 for each of the users u0, u1, ..."""
    items = [_item(n, f"u{user}") for user in range(size // SCOPE_SIZE) for n in range(SCOPE_SIZE)]
    for i in range(0, len(items), BATCH):
        unwrap(await store.add_items(items[i : i + BATCH]))


async def _bench_query(url: str, server: str, emulator: bool, quick: bool) -> list[Row]:
    default = ((300, 1_200) if quick else (1_000, 4_000)) if emulator else (10_000, 100_000)
    given = os.environ.get("COGMEM_BENCH_MONGODB_ITEMS")
    sizes = (int(given.split(",")[0]), int(given.split(",")[1])) if given else default
    repeat = 30 if quick else 100
    scope = MemoryScope(agent_id=AGENT, user_id="u0")
    keys = sorted(visible_scope_keys(scope))
    timings: dict[tuple[str, int], list[tuple[float, float]]] = {}
    stores = {size: _adapter(url, f"q{size}") for size in sizes}
    load_seconds: dict[int, float] = {}
    try:
        for size, store in stores.items():
            unwrap(await store.connect())
            started = time.perf_counter()
            await _fill(store, size)
            load_seconds[size] = time.perf_counter() - started
        for _ in range(2):  # alternate the sizes, so load from elsewhere hits both alike
            for size, store in stores.items():
                service = MemoryItems(adapter=store)
                if len(await service.query(scope)) != SCOPE_SIZE:
                    raise RuntimeError(f"query(scope) did not find the {SCOPE_SIZE} items of the scope")

                async def raw(store: MongoDBAdapter = store) -> None:
                    wanted = {"_id": 0, "body": 1, "times_retrieved": 1, "last_retrieved_us": 1, "version": 1}
                    cursor = store.items_collection.find({"scope_key": {"$in": keys}}, wanted).hint("scope_recorded")
                    [json.loads(doc["body"]) for doc in await cursor.to_list()]

                async def direct(store: MongoDBAdapter = store) -> None:
                    unwrap(await store.query_items({"visible_to": scope}))

                async def rules(service: MemoryItems = service) -> None:
                    await service.query(scope)

                for label, fn in (("raw", raw), ("store", direct), ("service", rules)):
                    await time_async(fn, 5)  # warm up
                    timings.setdefault((label, size), []).append(percentiles(await time_async(fn, repeat)))
    finally:
        for store in stores.values():
            if store.connected:
                await store.client.drop_database(store.database)
                await store.disconnect()

    def best(label: str, size: int) -> tuple[float, float]:
        return min(timings[(label, size)])

    low, big = sizes
    rows = []
    for label, name in (("service", "MemoryItems.query(scope)"), ("store", "query_items(visible_to)")):
        ratio = best(label, big)[0] / best(label, low)[0]
        rows.append(
            Row(
                f"mongodb items ({server})",
                f"{name}, scope of {SCOPE_SIZE} among {big:,}, p50 ms",
                best(label, big)[0] * 1e3,
                "ms",
                best(label, low)[0] * 1e3,
                f"same, among {low:,}, p50",
                ratio,
                "within 1.5x",
                ratio <= 1.5,
                {
                    "p95_ms": best(label, big)[1] * 1e3,
                    f"p95_ms_at_{low}": best(label, low)[1] * 1e3,
                    "raw_p50_ms": best("raw", big)[0] * 1e3,
                    "raw_p95_ms": best("raw", big)[1] * 1e3,
                    f"raw_p50_ms_at_{low}": best("raw", low)[0] * 1e3,
                    "load_seconds": load_seconds,
                    "server_reads_indexes": not emulator,
                },
            )
        )
    ratio = best("store", big)[0] / best("raw", big)[0]
    rows.append(
        Row(
            f"mongodb items ({server})",
            f"query_items vs raw pymongo among {big:,}, p50 ms",
            best("store", big)[0] * 1e3,
            "ms",
            best("raw", big)[0] * 1e3,
            "raw pymongo: same find, fields and hint; json.loads of each body",
            ratio,
            "within 2x (records built)",
            ratio <= 2.0,
        )
    )
    return rows


async def run(quick: bool) -> list[Row]:
    """The rows of this benchmark (see the module docstring)."""
    url, process = _start_private_server()
    try:
        server, emulator = await _server_name(url)
        rows = await _bench_writes(url, server, emulator, quick)
        rows += await _bench_query(url, server, emulator, quick)
        return rows
    finally:
        if process is not None:
            process.terminate()
            with suppress(subprocess.TimeoutExpired):
                process.wait(10)
            if process.stdout is not None:
                process.stdout.close()
