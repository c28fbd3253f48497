"""The memory item conformance suite on RedisAdapter, on the standalone server and on the cluster,
plus what is Redis's own: exact times past 2^53 microseconds, the index a query walks, batches
mixing agents, and counts racing updates.

Each test runs under a key prefix of its own, deleted afterwards. Servers come from
``COGMEM_TEST_REDIS_URL`` and ``COGMEM_TEST_REDIS_CLUSTER_NODES``.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory import InMemoryAdapter, RedisAdapter
from cogitator_memory.errors import ConflictError, StoreUnavailableError
from cogitator_memory.items.records import MemoryItem, check_filter
from cogitator_memory.result import unwrap
from cogitator_memory.testing import service_url
from cogitator_memory.testing.items import ItemConformanceCase, memory_item_adapter_conformance_cases


def make_adapter(topology: str) -> RedisAdapter:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    if topology == "cluster":
        nodes = service_url("COGMEM_TEST_REDIS_CLUSTER_NODES").split(",")
        return RedisAdapter(cluster={"nodes": nodes}, key_prefix=prefix)
    return RedisAdapter(url=service_url("COGMEM_TEST_REDIS_URL"), key_prefix=prefix)


@pytest.fixture(params=["standalone", "cluster"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[RedisAdapter]:
    memory = make_adapter(str(request.param))
    async with memory:
        try:
            yield memory
        finally:
            await memory.delete_all_keys()


@pytest.mark.parametrize("case", memory_item_adapter_conformance_cases(), ids=str)
async def test_item_conformance(case: ItemConformanceCase, store: RedisAdapter) -> None:
    await case.run(store)


# --- Redis's own ----------------------------------------------------------------------------

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def _item(n: int, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": f"mem_r{n:05d}",
        "kind": "fact",
        "subject": "Ana",
        "attribute": "city",
        "value": f"value {n}",
        "trust": "user",
        "status": "active",
        "scope": {"agent_id": "agent", "user_id": "ana"},
        "recorded_at": T0 + timedelta(seconds=n),
    }
    base.update(fields)
    return base


async def _ids(store: RedisAdapter, **flt: Any) -> list[str]:
    return [item.id for item in unwrap(await store.query_items(flt))]


def test_items_are_a_capability() -> None:
    assert "items" in RedisAdapter.capabilities


async def test_times_beyond_double_precision_compare_exactly(store: RedisAdapter) -> None:
    # Microseconds in year 9000 are ~2.2e17: doubles there are 32 us apart, so neighbouring
    # instants share a sorted-set score; the scripts must still tell them apart.
    far = datetime(9000, 1, 1, tzinfo=UTC)
    scope = {"agent_id": "agent"}
    items = [_item(n, scope=scope, recorded_at=far + timedelta(microseconds=n)) for n in range(1, 6)]
    items.append(_item(9, scope=scope, valid_from=far + timedelta(microseconds=3), recorded_at=T0))
    unwrap(await store.add_items(items))
    recorded = [i["id"] for i in items[:5]]
    assert await _ids(store, scope=scope, recorded_after=far + timedelta(microseconds=2)) == recorded[2:]
    assert await _ids(store, scope=scope, known_at=far + timedelta(microseconds=2)) == [items[5]["id"], *recorded[:2]]
    assert await _ids(store, scope=scope, as_of=far + timedelta(microseconds=2)) == recorded[:2]
    assert await _ids(store, scope=scope, as_of=far + timedelta(microseconds=3)) == [items[5]["id"], *recorded[:3]]
    assert await _ids(store, scope=scope, limit=2) == recorded[3:]
    assert await _ids(store, scope=scope, limit=2, recorded_after=far) == recorded[3:]
    got = unwrap(await store.get_items([recorded[4]]))[0]
    assert got.recorded_at == far + timedelta(microseconds=5)


async def test_a_batch_mixing_agents_is_all_or_nothing(store: RedisAdapter) -> None:
    taken = _item(1, scope={"agent_id": "zed"})
    unwrap(await store.add_items([taken]))
    batch = [_item(2, scope={"agent_id": "amy"}), _item(3, scope={"agent_id": "bob"}), dict(taken, value="again")]
    failed = await store.add_items(batch)
    assert failed.error_type is ConflictError and taken["id"] in (failed.error or "")
    for agent in ("amy", "bob"):
        assert await _ids(store, within={"agent_id": agent}) == []
    assert unwrap(await store.get_items([b["id"] for b in batch[:2]])) == []
    unwrap(await store.add_items(batch[:2]))
    updates = [
        {"id": batch[0]["id"], "expected_version": 1, "status": "stale"},
        {"id": batch[1]["id"], "expected_version": 2, "status": "stale"},
    ]
    refused = await store.update_items(updates)
    assert refused.error_type is ConflictError and batch[1]["id"] in (refused.error or "")
    assert [i.status for i in unwrap(await store.get_items([batch[0]["id"]]))] == ["active"]


async def test_queries_agree_with_the_reference_on_every_index(store: RedisAdapter) -> None:
    # Many items in other scopes and slots: within a user reads that user's scopes, a slot its slot
    # indexes, a subject its subject indexes; the answers must be the reference's whichever it reads.
    crowd = [_item(n, scope={"agent_id": "agent", "user_id": f"u{n % 50}"}, attribute=f"a{n % 3}") for n in range(600)]
    unwrap(await store.add_items(crowd))
    for flt in (
        {"within": {"agent_id": "agent", "user_id": "u7"}},
        {"within": {"agent_id": "agent"}, "slot": {"subject": "ana", "attribute": "a1"}, "limit": 5},
        {"visible_to": {"agent_id": "agent", "user_id": "u8"}, "subject": "ANA", "limit": 3},
        {
            "within": {"agent_id": "agent", "user_id": "u9"},
            "slot": {"subject": "Ana", "attribute": "a0"},
            "recorded_after": T0,
        },
    ):
        query = check_filter(flt)
        expected = sorted((MemoryItem.model_validate(i) for i in crowd), key=lambda i: (i.recorded_at, i.id))
        wanted = [i.id for i in expected if query.matches(i)]
        if query.limit:
            wanted = wanted[-query.limit :]
        assert [i.id for i in unwrap(await store.query_items(flt))] == wanted, flt


async def test_counts_race_updates_without_loss(store: RedisAdapter) -> None:
    item = _item(1)
    unwrap(await store.add_items([item]))

    async def update_loop() -> int:
        done = 0
        for _ in range(10):
            current = unwrap(await store.get_items([item["id"]]))[0]
            result = await store.update_items(
                [{"id": item["id"], "expected_version": current.version, "confidence": 0.5}]
            )
            done += result.success
        return done

    counts = [store.count_retrieved([item["id"]], T0) for _ in range(30)]
    results = await asyncio.gather(update_loop(), *counts)
    got = unwrap(await store.get_items([item["id"]]))[0]
    assert got.times_retrieved == 30
    assert got.version == 1 + results[0]


async def test_random_writes_keep_every_index_in_step(store: RedisAdapter) -> None:
    # Random adds, updates (status, times, evidence), deletes and counts on Redis and on the
    # in-memory reference; afterwards every kind of query answers the same on both.
    rng = random.Random(1313)
    users, entries = ["ana", "bo", None], [f"e{n}" for n in range(8)]
    reference = InMemoryAdapter()
    await reference.connect()
    live: list[str] = []

    def evidence() -> list[dict[str, str]]:
        return [{"entry_id": e, "quote": "q"} for e in rng.sample(entries, rng.randint(0, 2))]

    async def both(call: str, *args: Any) -> Any:
        ours, theirs = await getattr(store, call)(*args), await getattr(reference, call)(*args)
        assert (ours.success, ours.data) == (theirs.success, theirs.data), (call, args, ours.error, theirs.error)
        return ours.data

    for step in range(300):
        roll = rng.random()
        if roll < 0.45 or not live:
            scope = {"agent_id": rng.choice(["agent", "other"]), "user_id": rng.choice(users)}
            if rng.random() < 0.3:
                scope["thread_id"] = rng.choice(["t1", "t2"])
            batch = [
                _item(
                    step * 10 + k,
                    scope=scope,
                    attribute=rng.choice(["city", "diet", None]),
                    subject=rng.choice(["Ana", "Bo"]),
                    evidence=evidence(),
                    status=rng.choice(["active", "suggested", "superseded"]),
                    valid_from=T0 + timedelta(seconds=rng.randint(-50, 3000)) if rng.random() < 0.5 else None,
                )
                for k in range(rng.randint(1, 3))
            ]
            await both("add_items", batch)
            live += [b["id"] for b in batch]
        elif roll < 0.75:
            picked = rng.sample(live, min(len(live), rng.randint(1, 3)))
            current = {i.id: i for i in unwrap(await store.get_items(picked))}
            changes: list[dict[str, Any]] = []
            for item_id in picked:
                change: dict[str, Any] = {"id": item_id, "expected_version": current[item_id].version}
                change[rng.choice(["status", "evidence", "valid_to", "expired_at"])] = None
                if "status" in change:
                    change["status"] = rng.choice(["active", "stale", "superseded"])
                if "evidence" in change:
                    change["evidence"] = evidence()
                if "valid_to" in change and rng.random() < 0.7:
                    change["valid_to"] = T0 + timedelta(seconds=rng.randint(3000, 9000))
                if "expired_at" in change and rng.random() < 0.7:
                    change["expired_at"] = T0 + timedelta(seconds=rng.randint(0, 9000))
                changes.append(change)
            await both("update_items", changes)
        elif roll < 0.9:
            gone = rng.sample(live, min(len(live), rng.randint(1, 2)))
            await both("delete_items", [*gone, "mem_never"])
            live = [i for i in live if i not in gone]
        else:
            await both("count_retrieved", rng.sample(live, min(len(live), 2)), T0 + timedelta(seconds=step))
    at = T0 + timedelta(seconds=1500)
    filters: list[dict[str, Any]] = []
    for agent in ("agent", "other"):
        for user in users:
            scope = {"agent_id": agent, "user_id": user, "thread_id": "t1"}
            filters += [
                {"visible_to": scope},
                {"scope": {"agent_id": agent, "user_id": user}},
                {"within": {"agent_id": agent, "user_id": user} if user else {"agent_id": agent}},
                {"within": {"agent_id": agent, "thread_id": "t2"}, "subject": "ana"},
                {"visible_to": scope, "slot": {"subject": "ANA", "attribute": "city"}, "limit": 2},
                {"within": {"agent_id": agent}, "entry_ids": ["e1", "e2"], "statuses": ["active", "stale"]},
                {"visible_to": scope, "as_of": at, "known_at": at + timedelta(seconds=2000)},
                {"within": {"agent_id": agent}, "recorded_after": at, "kinds": ["fact"], "limit": 3},
            ]
    for flt in filters:
        await both("query_items", flt)
    await both("get_items", [*live, "mem_never"])


async def test_a_server_error_is_a_store_error_naming_the_call(store: RedisAdapter) -> None:
    # A key of another type where an item's hash should be: Redis answers WRONGTYPE in the script.
    await store.client.set(f"{store.key_prefix}item:mem_clash", "not a hash")
    for result, call in (
        (await store.get_items(["mem_clash"]), "get_items"),
        (await store.count_retrieved(["mem_clash"]), "count_retrieved"),
        (await store.delete_items(["mem_clash"]), "delete_items"),
    ):
        assert result.error_type is StoreUnavailableError, (call, result.error)
        assert f"redis {call} failed" in (result.error or "") and "WRONGTYPE" in (result.error or "")
