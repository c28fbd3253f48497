"""``threads_of_user`` on Redis (standalone and cluster) and MongoDB: the same contract as SQLite's
(every thread whose metadata ``user_id`` is the user or whose ``memory_user_ids`` lists them),
kept by every write that changes a thread's users, and used by ``find_user_threads`` instead of
listing the store.

Redis keeps a set per user written in the same script as the thread; the tests read the raw sets
too, so a set that the read path merely filters would fail them. Threads written before the sets
existed are found through the one-time backfill. MongoDB answers from two indexes made at connect.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from cogitator_memory import clock
from cogitator_memory.cascade import find_user_threads
from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter
from cogitator_memory.engines.redis.threads import RedisAdapter
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.result import unwrap
from cogitator_memory.testing import service_url


class Counting:
    """A store seen through a proxy that counts its ``list_threads`` calls."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.listed = 0

    async def list_threads(self, **kwargs: Any) -> Any:
        self.listed += 1
        return await self.inner.list_threads(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Listing:
    """The same store without ``threads_of_user``: ``find_user_threads`` lists every thread."""

    def __init__(self, inner: Any) -> None:
        self.list_threads = inner.list_threads


async def ids_of(store: Any, user: str) -> set[str]:
    return {t.id for t in unwrap(await store.threads_of_user(user))}


async def check_moves(store: Any, raw: Callable[[str], Awaitable[set[str]]] | None = None) -> None:
    """Threads gain, change and lose users by every kind of write; the index follows each one.

    ``raw`` reads the store's own index of a user (Redis: the set): after each write it must
    already hold the answer, before ``threads_of_user`` reads (and prunes) it."""

    async def expect(user: str, ids: set[str]) -> None:
        if raw is not None:
            assert await raw(user) == ids, f"the raw index of {user}"
        assert await ids_of(store, user) == ids, f"threads_of_user({user!r})"

    async def create(tid: str, metadata: dict[str, Any]) -> None:
        unwrap(await store.create_thread("agent", metadata, tid))

    async def plant(tid: str, metadata: dict[str, Any]) -> None:
        """Forms the writes refuse now, as an older version left them: the store's primitive."""
        assert not (await store.create_thread("agent", metadata, tid)).success
        await store._upsert_thread(tid, "agent", metadata, clock.now())

    await create("t1", {"user_id": "ana"})
    await plant("t2", {"user_id": "bo", "memory_user_ids": ["ana", 7]})
    await create("t3", {"user_id": "bo"})
    await create("t4", {"topic": "nobody's"})
    await plant("t5", {"user_id": ["ana"], "memory_user_ids": "ana"})  # neither form names ana
    await expect("ana", {"t1", "t2"})
    await expect("bo", {"t2", "t3"})
    await expect("nobody", set())

    unwrap(await store.update_thread("t3", {"user_id": "ana"}))  # merge: bo -> ana
    await expect("ana", {"t1", "t2", "t3"})
    await expect("bo", {"t2"})
    unwrap(await store.update_thread("t2", {"user_id": "cy"}, replace=True))  # both users gone
    await expect("ana", {"t1", "t3"})
    await expect("bo", set())
    await expect("cy", {"t2"})
    unwrap(await store.create_thread("agent", {"memory_user_ids": ["bo"]}, "t1"))  # upsert merges
    await expect("bo", {"t1"})

    entry = unwrap(await store.add_entry({"thread_id": "t1", "message": {"role": "user", "content": "hi"}}))
    fork = unwrap(await store.fork_thread("t1", entry.id, "t1-fork"))
    assert fork.metadata["user_id"] == "ana"
    await expect("ana", {"t1", "t3", "t1-fork"})
    await expect("bo", {"t1", "t1-fork"})

    unwrap(await store.delete_thread("t1"))
    await expect("ana", {"t3", "t1-fork"})
    await expect("bo", {"t1-fork"})
    threads = unwrap(await store.threads_of_user("ana"))
    assert all(t.metadata.get("user_id") == "ana" for t in threads), threads

    counting = Counting(store)
    found = await find_user_threads(counting, "bo")
    assert counting.listed == 0, "find_user_threads must use the index, not list the store"
    assert [t.id for t in found.joined] == ["t1-fork"] and found.owned == []
    found = await find_user_threads(counting, "ana")
    assert counting.listed == 0
    assert {t.id for t in found.owned} == {"t3", "t1-fork"} and found.joined == []
    listed = await find_user_threads(Listing(store), "ana")  # the listing finds the same threads
    assert {t.id for t in listed.owned} == {"t3", "t1-fork"} and listed.joined == []

    assert "user_id" in str(unwrap_error(await store.threads_of_user("")))


def unwrap_error(result: Any) -> Exception:
    with pytest.raises(InvalidArgumentError) as caught:
        unwrap(result)
    return caught.value


# --- Redis --------------------------------------------------------------------------------------


def redis_adapter(topology: str) -> RedisAdapter:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    if topology == "cluster":
        nodes = service_url("COGMEM_TEST_REDIS_CLUSTER_NODES").split(",")
        return RedisAdapter(cluster={"nodes": nodes}, key_prefix=prefix)
    return RedisAdapter(url=service_url("COGMEM_TEST_REDIS_URL"), key_prefix=prefix)


@pytest.fixture(params=["standalone", "cluster"])
async def redis_store(request: pytest.FixtureRequest) -> AsyncIterator[RedisAdapter]:
    store = redis_adapter(str(request.param))
    async with store:
        try:
            yield store
        finally:
            await store.delete_all_keys()


async def user_set(store: RedisAdapter, user: str) -> set[str]:
    return set(await store.client.smembers(f"{store.key_prefix}user:{user}"))


async def test_redis_keeps_a_set_per_user(redis_store: RedisAdapter) -> None:
    async def raw(user: str) -> set[str]:
        return await user_set(redis_store, user)

    await check_moves(redis_store, raw)
    assert await user_set(redis_store, "ana") == {"t3", "t1-fork"}
    assert await user_set(redis_store, "bo") == {"t1-fork"}
    assert await user_set(redis_store, "cy") == {"t2"}
    assert await user_set(redis_store, "7") == set()


async def test_redis_finds_threads_written_before_the_sets(redis_store: RedisAdapter) -> None:
    for n in range(1200):  # more than one backfill batch
        unwrap(await redis_store.create_thread("agent", {"user_id": f"u{n % 40}"}, f"old{n:04d}"))
    unwrap(await redis_store.update_thread("old0007", {"memory_user_ids": ["u3"]}))
    client, prefix = redis_store.client, redis_store.key_prefix
    # what an older version left: no sets, no marker
    assert await client.delete(*[f"{prefix}user:u{n}" for n in range(40)]) == 40
    assert await client.delete(f"{prefix}user:u3") == 0

    expected = {f"old{n:04d}" for n in range(1200) if n % 40 == 3} | {"old0007"}
    assert await ids_of(redis_store, "u3") == expected
    assert await client.get(f"{prefix}users:indexed") == "1"
    assert await user_set(redis_store, "u5") == {f"old{n:04d}" for n in range(1200) if n % 40 == 5}

    # the backfill ran once: a set lost after it stays lost until the marker goes
    await client.delete(f"{prefix}user:u5")
    assert await ids_of(redis_store, "u5") == set()
    await client.delete(f"{prefix}users:indexed")
    assert len(await ids_of(redis_store, "u5")) == 30


async def test_redis_prunes_threads_that_expired(redis_store: RedisAdapter) -> None:
    unwrap(await redis_store.create_thread("agent", {"user_id": "ana"}, "kept"))
    unwrap(await redis_store.create_thread("agent", {"user_id": "ana"}, "expired"))
    await redis_store.client.delete(f"{redis_store.key_prefix}thread:expired")  # as a TTL would
    assert await ids_of(redis_store, "ana") == {"kept"}
    assert await user_set(redis_store, "ana") == {"kept"}


# --- MongoDB ------------------------------------------------------------------------------------


@pytest.fixture
async def mongo_store() -> AsyncIterator[MongoDBAdapter]:
    store = MongoDBAdapter(uri=service_url("COGMEM_TEST_MONGODB_URL"), database=f"cogmem_test_{uuid.uuid4().hex[:12]}")
    async with store:
        try:
            yield store
        finally:
            await store.client.drop_database(store.database)


async def test_mongodb_finds_a_users_threads_by_index(mongo_store: MongoDBAdapter) -> None:
    indexes = await mongo_store.threads_collection.index_information()
    assert indexes["by_user"]["key"] == [("metadata.user_id", 1)]
    assert indexes["with_users"]["key"] == [("metadata.memory_user_ids", 1)]
    await check_moves(mongo_store)
