"""Memory items on RedisAdapter, standalone and cluster, each figure beside raw redis-py in the same run.

* Item writes per second through ``MemoryItems.add`` (the rules: the slot read, the insert, the
  layout read and the read back, one item at a time) and through ``add_items`` in batches of
  500, against raw redis-py writing the same hash and index entries per item (one plain, not
  atomic, pipeline per item; one per batch). Rounds alternate; the best round of each counts.
* ``MemoryItems.query(scope)`` and ``query_items({"visible_to": scope})`` p50/p95 for a scope of
  100 items among 10,000 and among 100,000 items of the same agent (the other users' items),
  under two key prefixes measured in alternation. Target: the 100,000 figure within 1.5x of the
  10,000 one. Beside them, raw redis-py reading the same 100 items (the scope's sorted sets, then
  the hashes, two pipelined round trips) and parsing their JSON.

Servers come from ``COGMEM_TEST_REDIS_URL`` / ``COGMEM_TEST_REDIS_CLUSTER_NODES`` (defaults: the
ports ``scripts/services.sh`` uses). Each run writes under unique key prefixes and deletes them.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from cogitator_memory import unwrap
from cogitator_memory.clock import to_micros
from cogitator_memory.engines.redis.threads import RedisAdapter
from cogitator_memory.items import MemoryItem, MemoryItems, MemoryScope
from cogitator_memory.items.records import scope_key, visible_scope_keys

from .common import Row, percentiles, time_async

STANDALONE_URL = os.environ.get("COGMEM_TEST_REDIS_URL", "redis://127.0.0.1:6390/0")
CLUSTER_NODES = os.environ.get("COGMEM_TEST_REDIS_CLUSTER_NODES", "127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
AGENT = "bench"
SCOPE_SIZE = 100
BATCH = 500


def _adapter(topology: str) -> RedisAdapter:
    prefix = f"bench:{uuid.uuid4().hex[:10]}:"
    if topology == "cluster":
        return RedisAdapter(cluster={"nodes": CLUSTER_NODES.split(",")}, key_prefix=prefix)
    return RedisAdapter(url=STANDALONE_URL, key_prefix=prefix)


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


def _new(n: int, writer: str) -> dict[str, Any]:
    return {
        "kind": "fact",
        "subject": writer,
        "attribute": f"attribute {n % 1000}",
        "value": f"The value number {n} said while planning a trip.",
        "evidence": [{"entry_id": f"entry_{n}", "thread_id": "thread_w", "quote": f"value number {n}"}],
        "trust": "user",
        "verified": True,
        "confidence": 0.9,
        "scope": {"agent_id": AGENT, "user_id": writer},
    }


def _raw_write(pipe: Any, p: str, item: MemoryItem) -> None:
    """Queue the hash and index entries RedisItems keeps for an item (engines/redis/items_scripts.py)."""
    scope = item.scope
    sk, r = scope_key(scope), to_micros(item.recorded_at)
    entries = sorted({e.entry_id for e in item.evidence if e.entry_id})
    fields = {
        "a": scope.agent_id,
        "u": scope.user_id or "",
        "p": scope.project_id or "",
        "t": scope.thread_id or "",
        "sk": sk,
        "sl": item.slot_key,
        "sj": item.subject_key,
        "st": item.status,
        "k": item.kind,
        "s": to_micros(item.start),
        "vt": "",
        "r": r,
        "x": "",
        "e": json.dumps(entries),
        "n": 0,
        "lr": "",
        "li": "",
        "v": 1,
        "b": item.model_dump_json(exclude_none=True, exclude={"times_retrieved", "last_retrieved_at", "version"}),
    }
    pipe.hset(f"{p}item:{item.id}", mapping=fields)
    pipe.zadd(f"{p}items:scope:{sk}", {item.id: r})
    pipe.zadd(f"{p}items:slot:{sk}\x1f{item.slot_key}", {item.id: r})
    pipe.zadd(f"{p}items:subject:{sk}\x1f{item.subject_key}", {item.id: r})
    pipe.zadd(f"{p}items:agent:{scope.agent_id}", {item.id: r})
    pipe.sadd(f"{p}items:scopes:{scope.agent_id}", sk)
    pipe.sadd(f"{p}items:scopes:{scope.agent_id}\x1fu\x1f{scope.user_id}", sk)
    for entry in entries:
        pipe.zadd(f"{p}items:entry:{entry}", {item.id: r})


async def _raw_rate(store: RedisAdapter, items: list[MemoryItem], per_pipeline: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(items), per_pipeline):
        pipe = store.client.pipeline(transaction=False)
        for item in items[i : i + per_pipeline]:
            _raw_write(pipe, store.key_prefix, item)
        await pipe.execute()
    return len(items) / (time.perf_counter() - start)


async def _store_batches(store: RedisAdapter, items: list[MemoryItem]) -> float:
    start = time.perf_counter()
    for i in range(0, len(items), BATCH):
        unwrap(await store.add_items(items[i : i + BATCH]))
    return len(items) / (time.perf_counter() - start)


async def _service_singles(items: MemoryItems, news: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    for new in news:
        await items.add(new)
    return len(news) / (time.perf_counter() - start)


async def _bench_writes(topology: str, quick: bool) -> list[Row]:
    rounds = 3
    per_round = 200 if quick else 1_000
    batched_per_round = 2_000 if quick else 10_000
    rates: dict[str, list[float]] = {"service": [], "raw_single": [], "batch": [], "raw_batch": []}
    async with _adapter(topology) as store:
        try:
            service = MemoryItems(adapter=store)
            for r in range(rounds):
                rates["raw_single"].append(
                    await _raw_rate(store, [_item(n, f"single{r}") for n in range(per_round)], 1)
                )
                news = [_new(n, f"writer{r}") for n in range(per_round)]
                rates["service"].append(await _service_singles(service, news))
                raw = [_item(n, f"rawbatch{r}") for n in range(batched_per_round)]
                rates["raw_batch"].append(await _raw_rate(store, raw, BATCH))
                rates["batch"].append(
                    await _store_batches(store, [_item(n, f"batch{r}") for n in range(batched_per_round)])
                )
        finally:
            await store.delete_all_keys()
    service_rate, raw_single = max(rates["service"]), max(rates["raw_single"])
    batch_rate, raw_batch = max(rates["batch"]), max(rates["raw_batch"])
    return [
        Row(
            "item writes",
            f"Redis {topology}, MemoryItems.add (rules), items/s",
            service_rate,
            "items/s",
            raw_single,
            "raw redis-py, same keys, 1 pipeline/item",
            service_rate / raw_single,
            ">= 15% of raw",
            service_rate / raw_single >= 0.15,
            {"rounds": rates["service"], "raw_rounds": rates["raw_single"]},
        ),
        Row(
            "item writes",
            f"Redis {topology}, add_items batches of {BATCH}, items/s",
            batch_rate,
            "items/s",
            raw_batch,
            f"raw redis-py, same keys, 1 pipeline/{BATCH}",
            batch_rate / raw_batch,
            ">= 40% of raw",
            batch_rate / raw_batch >= 0.40,
            {"rounds": rates["batch"], "raw_rounds": rates["raw_batch"]},
        ),
    ]


async def _fill(store: RedisAdapter, size: int) -> None:
    """``size`` items: 100 for each of the users u0, u1, ..."""
    items = [_item(n, f"u{user}") for user in range(size // SCOPE_SIZE) for n in range(SCOPE_SIZE)]
    for i in range(0, len(items), 5_000):
        unwrap(await store.add_items(items[i : i + 5_000]))


async def _bench_query(topology: str, quick: bool) -> list[Row]:
    sizes = (2_000, 20_000) if quick else (10_000, 100_000)
    repeat = 100 if quick else 400
    scope = MemoryScope(agent_id=AGENT, user_id="u0")
    timings: dict[tuple[str, int], list[tuple[float, float]]] = {}
    stores = {size: _adapter(topology) for size in sizes}
    try:
        for size, store in stores.items():
            unwrap(await store.connect())
            await _fill(store, size)
        for _ in range(2):  # alternate the sizes, so load from elsewhere hits both alike
            for size, store in stores.items():
                service = MemoryItems(adapter=store)
                keys = [f"{store.key_prefix}items:scope:{k}" for k in visible_scope_keys(scope)]
                if len(await service.query(scope)) != SCOPE_SIZE:
                    raise RuntimeError(f"query(scope) did not find the {SCOPE_SIZE} items of the scope")

                async def raw(store: RedisAdapter = store, keys: list[str] = keys) -> None:
                    pipe = store.client.pipeline(transaction=False)
                    for key in keys:
                        pipe.zrange(key, 0, -1)
                    ids = [i for found in await pipe.execute() for i in found]
                    pipe = store.client.pipeline(transaction=False)
                    for item_id in ids:
                        pipe.hmget(f"{store.key_prefix}item:{item_id}", ["b", "n", "lr", "v"])
                    [json.loads(row[0]) for row in await pipe.execute()]

                async def direct(store: RedisAdapter = store) -> None:
                    unwrap(await store.query_items({"visible_to": scope}))

                async def rules(service: MemoryItems = service) -> None:
                    await service.query(scope)

                for label, fn in (("raw", raw), ("store", direct), ("service", rules)):
                    await time_async(fn, 20)  # warm up
                    timings.setdefault((label, size), []).append(percentiles(await time_async(fn, repeat)))
    finally:
        for store in stores.values():
            if store.connected:
                await store.delete_all_keys()
                await store.disconnect()

    def best(label: str, size: int) -> tuple[float, float]:
        return min(timings[(label, size)])

    small, big = sizes
    rows = []
    for label, name in (("service", "MemoryItems.query(scope)"), ("store", "query_items(visible_to)")):
        ratio = best(label, big)[0] / best(label, small)[0]
        rows.append(
            Row(
                "query(scope)",
                f"Redis {topology} {name}, scope of {SCOPE_SIZE} among {big:,}, p50 ms",
                best(label, big)[0] * 1e3,
                "ms",
                best(label, small)[0] * 1e3,
                f"same, among {small:,}, p50",
                ratio,
                "within 1.5x",
                ratio <= 1.5,
                {
                    "p95_ms": best(label, big)[1] * 1e3,
                    f"p95_ms_at_{small}": best(label, small)[1] * 1e3,
                    "raw_p50_ms": best("raw", big)[0] * 1e3,
                    "raw_p95_ms": best("raw", big)[1] * 1e3,
                    f"raw_p50_ms_at_{small}": best("raw", small)[0] * 1e3,
                },
            )
        )
    ratio = best("store", big)[0] / best("raw", big)[0]
    rows.append(
        Row(
            "query(scope)",
            f"Redis {topology} query_items vs raw redis-py among {big:,}, p50 ms",
            best("store", big)[0] * 1e3,
            "ms",
            best("raw", big)[0] * 1e3,
            "raw redis-py: sorted sets, hashes, json.loads",
            ratio,
            "within 8x (records built and checked)",
            ratio <= 8.0,
        )
    )
    return rows


async def run(quick: bool) -> list[Row]:
    """The figures of both topologies."""
    rows: list[Row] = []
    for topology in ("standalone", "cluster"):
        rows += await _bench_writes(topology, quick)
        rows += await _bench_query(topology, quick)
    return rows
