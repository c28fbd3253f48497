"""RedisAdapter on the real standalone server and the real 3-master cluster.

Every test runs on both topologies with a key prefix of its own, deleted afterwards. Servers
come from ``COGMEM_TEST_REDIS_URL`` and ``COGMEM_TEST_REDIS_CLUSTER_NODES``.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from cogitator_memory.engines.factory import create_memory_adapter
from cogitator_memory.engines.redis.threads import RedisAdapter, cluster_prefix, parse_node
from cogitator_memory.errors import ConflictError, InvalidArgumentError, NotFoundError
from cogitator_memory.result import unwrap
from cogitator_memory.testing import ConformanceCase, memory_adapter_conformance_cases, service_url
from cogitator_memory.testing.conformance import T0
from cogitator_memory.threads.records import MemoryEntry, Message, NewMemoryEntry

TOPOLOGIES = ["standalone", "cluster"]


def make_adapter(topology: str, **options: Any) -> RedisAdapter:
    """An adapter on ``topology`` with a fresh key prefix (unless ``key_prefix`` is given)."""
    options.setdefault("key_prefix", f"test:{uuid.uuid4().hex[:12]}:")
    if topology == "cluster":
        nodes = service_url("COGMEM_TEST_REDIS_CLUSTER_NODES").split(",")
        return RedisAdapter(cluster={"nodes": nodes}, **options)
    return RedisAdapter(url=service_url("COGMEM_TEST_REDIS_URL"), **options)


@pytest.fixture(params=TOPOLOGIES)
def topology(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def store(topology: str) -> AsyncIterator[RedisAdapter]:
    memory = make_adapter(topology)
    async with memory:
        try:
            yield memory
        finally:
            await memory.delete_all_keys()


@pytest.mark.parametrize("case", memory_adapter_conformance_cases(), ids=str)
async def test_conformance(case: ConformanceCase, store: RedisAdapter) -> None:
    await case.run(store)


# --- options --------------------------------------------------------------------------------


def test_cluster_prefix_gets_a_hash_tag() -> None:
    assert cluster_prefix("cogitator:") == "{cogitator}:"
    assert cluster_prefix("myapp:") == "{myapp}:"
    assert cluster_prefix("myapp") == "{myapp}"
    assert cluster_prefix("{app}:x:") == "{app}:x:"
    assert cluster_prefix("a{}b:") == "{a{}b}:"
    assert RedisAdapter(cluster={"nodes": ["h:1"]}).key_prefix == "{cogitator}:"
    assert RedisAdapter(cluster={"nodes": ["h:1"]}, key_prefix="myapp:").key_prefix == "{myapp}:"
    assert RedisAdapter(url="redis://h:1").key_prefix == "cogitator:"


def test_nodes_in_both_spellings() -> None:
    assert parse_node("127.0.0.1:7000", 0) == ("127.0.0.1", 7000)
    assert parse_node({"host": "r1", "port": "7001"}, 0) == ("r1", 7001)
    assert parse_node("[::1]:7002", 0) == ("::1", 7002)
    adapter = RedisAdapter(cluster={"nodes": [{"host": "a", "port": 1}, "b:2"]})
    assert adapter.nodes == [("a", 1), ("b", 2)]
    assert adapter.where == "cluster a:1,b:2"


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"provider": "postgres"}, "provider"),
        ({"url": "http://x"}, "url"),
        ({"url": "redis://x:99999"}, "url"),
        ({"url": "redis://x", "host": "y"}, "host"),
        ({"port": 1}, "port"),
        ({"host": "h", "port": 70000}, "port"),
        ({"cluster": {"nodes": []}}, "cluster.nodes"),
        ({"cluster": {"nodes": ["h:x"]}}, "cluster.nodes[0]"),
        ({"cluster": {"nodes": [{"port": 1}]}}, "cluster.nodes[0]"),
        ({"cluster": {"nodes": ["h:1"]}, "key_prefix": ""}, "key_prefix"),
        ({"key_prefix": 5}, "key_prefix"),
        ({"ttl": -1}, "ttl"),
        ({"ttl": True}, "ttl"),
        ({"ttl": float("nan")}, "ttl"),
        ({"ttl": float("inf")}, "ttl"),
        ({"socket_timeout": 0}, "socket_timeout"),
        ({"max_connections": 0}, "max_connections"),
        ({"retries": -1}, "retries"),
    ],
)
def test_bad_options_are_named(options: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        RedisAdapter(**options)
    assert caught.value.argument == named


def test_factory_builds_a_redis_adapter() -> None:
    adapter = create_memory_adapter({"provider": "redis", "host": "h", "port": 6390, "ttl": 60})
    assert isinstance(adapter, RedisAdapter)
    assert adapter.nodes == [("h", 6390)]
    assert adapter.ttl == 60
    with pytest.raises(InvalidArgumentError):
        create_memory_adapter({"provider": "redis", "bogus": 1})


async def test_not_connected_calls_fail() -> None:
    adapter = RedisAdapter(url="redis://127.0.0.1:1")
    result = await adapter.get_thread("t")
    assert not result.success and "connect()" in (result.error or "")


# --- keys -----------------------------------------------------------------------------------


async def test_keys_live_under_the_prefix(topology: str) -> None:
    async with make_adapter(topology) as memory:
        try:
            thread = unwrap(await memory.create_thread("agent-1", {"k": 1}))
            entry = unwrap(
                await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "hi"}})
            )
            keys = sorted([key async for key in memory.client.scan_iter(match=memory.key_prefix + "*")])
            p = memory.key_prefix
            assert keys == sorted(
                [
                    f"{p}agent:agent-1",
                    f"{p}entries:{thread.id}",
                    f"{p}entry:{entry.id}",
                    f"{p}thread:{thread.id}",
                    f"{p}threads",
                ]
            )
            if topology == "cluster":
                slots = {await memory.client.cluster_keyslot(key) for key in keys}
                assert len(slots) == 1, "every key of a cluster adapter is in one slot"
            assert await memory.client.ttl(f"{p}thread:{thread.id}") == -1, "nothing expires by default"
        finally:
            assert await memory.delete_all_keys() == 5
        assert [key async for key in memory.client.scan_iter(match=memory.key_prefix + "*")] == []


async def test_two_prefixes_do_not_see_each_other(topology: str) -> None:
    async with make_adapter(topology) as one, make_adapter(topology) as two:
        try:
            thread = unwrap(await one.create_thread("a", thread_id="shared-id"))
            assert unwrap(await two.get_thread(thread.id)) is None
            assert unwrap(await two.list_threads()).threads == []
        finally:
            await one.delete_all_keys()
            await two.delete_all_keys()


async def test_explicit_ids_with_odd_characters(store: RedisAdapter) -> None:
    odd = "weird {tag} id:*?[x] ü"
    thread = unwrap(await store.create_thread("agent {x}", {"m:k": "v"}, odd))
    unwrap(await store.add_entry({"thread_id": odd, "message": {"role": "user", "content": "a"}}))
    again = unwrap(await store.get_thread(odd))
    assert again is not None and again.metadata == {"m:k": "v"} and again.agent_id == thread.agent_id
    assert [t.id for t in unwrap(await store.list_threads(agent_id="agent {x}")).threads] == [odd]
    assert len(unwrap(await store.get_path(thread_id=odd))) == 1


# --- trees and atomicity ------------------------------------------------------------------


async def test_concurrent_adds_on_one_thread_keep_one_chain(store: RedisAdapter) -> None:
    thread = unwrap(await store.create_thread("a"))
    results = await asyncio.gather(
        *(store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": f"m{i}"}}) for i in range(20))
    )
    added = [unwrap(r) for r in results]
    assert sorted(e.seq for e in added) == list(range(1, 21))
    path = unwrap(await store.get_path(thread_id=thread.id))
    assert len(path) == 20, "each add went after the previous one: one branch holds them all"
    assert [e.seq for e in path] == list(range(1, 21))
    assert path[0].parent_id is None
    assert all(path[i].parent_id == path[i - 1].id for i in range(1, 20))


async def test_get_path_limit_reads_the_newest(store: RedisAdapter) -> None:
    thread = unwrap(await store.create_thread("a"))
    for i in range(30):
        unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": str(i)}}))
    path = unwrap(await store.get_path(thread_id=thread.id, limit=5))
    assert [e.message.text for e in path if e.message] == ["25", "26", "27", "28", "29"]
    newest = unwrap(await store.get_entries(thread_id=thread.id, limit=3))
    assert [e.message.text for e in newest if e.message] == ["27", "28", "29"]


async def test_delete_entry_with_many_children_keeps_them(store: RedisAdapter) -> None:
    thread = unwrap(await store.create_thread("a"))
    root = unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "r"}}))
    middle = unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "m"}}))
    kids = [
        unwrap(
            await store.add_entry(
                {"thread_id": thread.id, "parent_id": middle.id, "message": {"role": "user", "content": f"k{i}"}}
            )
        )
        for i in range(3)
    ]
    unwrap(await store.delete_entry(middle.id))
    for kid in kids:
        stored = unwrap(await store.get_entry(kid.id))
        assert stored is not None and stored.parent_id == root.id
    unwrap(await store.delete_entry(root.id))
    for kid in kids:
        stored = unwrap(await store.get_entry(kid.id))
        assert stored is not None and stored.parent_id is None
    thread_now = unwrap(await store.get_thread(thread.id))
    assert thread_now is not None and thread_now.active_leaf_id == kids[-1].id


async def test_add_entry_parent_errors(store: RedisAdapter) -> None:
    one = unwrap(await store.create_thread("a"))
    two = unwrap(await store.create_thread("a"))
    other = unwrap(await store.add_entry({"thread_id": two.id, "message": {"role": "user", "content": "x"}}))
    result = await store.add_entry({"thread_id": one.id, "parent_id": other.id, "message": {"role": "user"}})
    assert result.error_type is ConflictError
    result = await store.add_entry({"thread_id": one.id, "parent_id": "entry_nope", "message": {"role": "user"}})
    assert result.error_type is NotFoundError and "entry_nope" in (result.error or "")
    assert unwrap(await store.get_entries(thread_id=one.id, types="all")) == []


async def test_fork_of_a_fork_lists_both(store: RedisAdapter) -> None:
    thread = unwrap(await store.create_thread("a", {"keep": 1}))
    entry = unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "x"}}))
    forks = await asyncio.gather(*(store.fork_thread(thread.id, entry.id) for _ in range(5)))
    ids = [unwrap(f).id for f in forks]
    origin = unwrap(await store.get_thread(thread.id))
    assert origin is not None and sorted(origin.metadata["memory_forks"]) == sorted(ids)
    copied = unwrap(await store.get_path(thread_id=ids[0]))
    assert [e.metadata for e in copied] == [{"fork_of": entry.id}]


# --- list_threads ---------------------------------------------------------------------------


async def test_list_threads_pages_through_many(store: RedisAdapter) -> None:
    made = [unwrap(await store.create_thread("pager" if i % 3 else "other")).id for i in range(45)]
    seen: list[str] = []
    cursor = None
    while True:
        page = unwrap(await store.list_threads(agent_id="pager", limit=7, cursor=cursor))
        seen += [t.id for t in page.threads]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert sorted(seen) == sorted(t for i, t in enumerate(made) if i % 3)
    assert len(seen) == len(set(seen))


# --- TTL --------------------------------------------------------------------------------------


async def test_ttl_refreshes_on_writes_and_expires_when_idle(topology: str) -> None:
    async with make_adapter(topology, ttl=2) as memory:
        try:
            thread = unwrap(await memory.create_thread("a"))
            first = unwrap(
                await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "1"}})
            )
            p = memory.key_prefix
            for key in (f"{p}thread:{thread.id}", f"{p}entries:{thread.id}", f"{p}entry:{first.id}", f"{p}threads"):
                assert 0 < await memory.client.ttl(key) <= 2, key
            # Keep writing for longer than the ttl: the thread and its index stay.
            for i in range(3):
                await asyncio.sleep(0.8)
                unwrap(
                    await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": f"w{i}"}})
                )
            assert unwrap(await memory.get_thread(thread.id)) is not None
            texts = [e.message.text for e in unwrap(await memory.get_entries(thread_id=thread.id)) if e.message]
            assert texts == ["w0", "w1", "w2"], "the first entry expired on its own, pruned from the read"
            assert await memory.client.zscore(f"{p}entries:{thread.id}", first.id) is None, "pruned from the index"
            assert [t.id for t in unwrap(await memory.list_threads()).threads] == [thread.id]
            # Idle for longer than the ttl: everything goes.
            await asyncio.sleep(2.3)
            assert unwrap(await memory.get_thread(thread.id)) is None
            assert unwrap(await memory.list_threads()).threads == []
            assert [key async for key in memory.client.scan_iter(match=p + "*")] == []
        finally:
            await memory.delete_all_keys()


async def test_ttl_prunes_expired_threads_from_listing(topology: str) -> None:
    async with make_adapter(topology, ttl=60) as memory:
        try:
            gone = unwrap(await memory.create_thread("a"))
            kept = unwrap(await memory.create_thread("a"))
            # Expire one thread's key by hand, as the server does when its ttl runs out.
            await memory.client.delete(f"{memory.key_prefix}thread:{gone.id}")
            page = unwrap(await memory.list_threads(agent_id="a"))
            assert [t.id for t in page.threads] == [kept.id]
            assert await memory.client.zscore(f"{memory.key_prefix}agent:a", gone.id) is None
            assert await memory.client.zscore(f"{memory.key_prefix}threads", gone.id) is None
        finally:
            await memory.delete_all_keys()


# --- connections ------------------------------------------------------------------------------


async def test_health_check_pings(store: RedisAdapter) -> None:
    assert (await store.health_check()).success
    await store.disconnect()
    result = await store.health_check()
    assert not result.success and "connect()" in (result.error or "")
    unwrap(await store.connect())


async def test_many_concurrent_calls_do_not_exhaust_the_pool(topology: str) -> None:
    async with make_adapter(topology, max_connections=20) as memory:
        try:
            threads = [unwrap(await memory.create_thread("a")) for _ in range(10)]
            calls = []
            for i in range(500):
                thread = threads[i % 10]
                if i % 2:
                    calls.append(
                        memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": str(i)}})
                    )
                else:
                    calls.append(memory.get_path(thread_id=thread.id, limit=5))
            results = await asyncio.gather(*calls)
            failures = [r.error for r in results if not r.success]
            assert failures == []
            total = sum([len(unwrap(await memory.get_entries(thread_id=t.id))) for t in threads])
            assert total == 250
        finally:
            await memory.delete_all_keys()


async def test_redis_cluster_default_pool_would_fail_without_the_bound() -> None:
    """What the bound protects against: the raw cluster client raises past max_connections."""
    from redis.asyncio.cluster import ClusterNode, RedisCluster
    from redis.exceptions import MaxConnectionsError

    nodes = [parse_node(n, i) for i, n in enumerate(service_url("COGMEM_TEST_REDIS_CLUSTER_NODES").split(","))]
    client = RedisCluster(startup_nodes=[ClusterNode(h, p) for h, p in nodes], max_connections=5)
    try:
        # Initialized first, as the adapter does: redis-py (8.1) initializing lazily under 200
        # concurrent calls can drop a node object whose connections then outlive aclose() (about
        # one run in 20 here), and a later test's garbage collection reports the open sockets.
        await client.initialize()
        outcome = await asyncio.gather(*(client.get("{raw}:k") for _ in range(200)), return_exceptions=True)
        assert any(isinstance(o, MaxConnectionsError) for o in outcome)
    finally:
        await client.aclose()
    async with make_adapter("cluster", max_connections=5) as memory:
        try:
            results = await asyncio.gather(*(memory.get_thread("t") for _ in range(200)))
            assert all(r.success for r in results)
        finally:
            await memory.delete_all_keys()


async def test_add_entry_reads_nothing_back_after_the_script_commits(
    store: RedisAdapter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once the script has run the entry is written: add_entry builds what it returns before,
    so no failure after (here: a reader that cannot parse, as a value too deep for it once
    made) reports a committed write as failed, inviting a retry that writes it twice."""
    thread = unwrap(await store.create_thread("agent-1"))

    def unreadable(cls: type[MemoryEntry], *args: Any, **kwargs: Any) -> MemoryEntry:
        raise ValueError("the reader failed")

    monkeypatch.setattr(MemoryEntry, "model_validate_json", classmethod(unreadable))
    result = await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "hi"}})
    monkeypatch.undo()
    assert result.success, result.error
    entries = unwrap(await store.get_entries(thread_id=thread.id))
    assert [e.id for e in entries] == [result.data.id]  # type: ignore[union-attr]
    assert unwrap(await store.get_entry(result.data.id)) == result.data  # type: ignore[union-attr]


async def test_add_entry_sent_again_answers_as_the_first_time(store: RedisAdapter) -> None:
    """The client sends a script again when its reply is lost (a timeout, a dropped
    connection): the second run finds its own entry and answers as the first did, writing
    nothing more; another write of the same id is refused."""
    thread = unwrap(await store.create_thread("agent-1"))
    first = await store._add_entry(
        NewMemoryEntry(thread_id=thread.id, message=Message(role="user", content="hi")), "entry-1", 2, T0
    )
    again = await store._add_entry(
        NewMemoryEntry(thread_id=thread.id, message=Message(role="user", content="hi")), "entry-1", 2, T0
    )
    assert again == first
    other = NewMemoryEntry(thread_id=thread.id, message=Message(role="user", content="other"))
    with pytest.raises(ConflictError, match="entry-1"):
        await store._add_entry(other, "entry-1", 2, T0)
    entries = unwrap(await store.get_entries(thread_id=thread.id))
    assert entries == [first]
    assert unwrap(await store.get_thread(thread.id)).active_leaf_id == "entry-1"  # type: ignore[union-attr]


async def test_parent_links_that_loop_are_reported(store: RedisAdapter) -> None:
    thread = unwrap(await store.create_thread("agent", None, "loop"))
    ids = [
        unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": t}})).id
        for t in ("a", "b", "c")
    ]
    aside = unwrap(
        await store.add_entry(
            {
                "thread_id": thread.id,
                "parent_id": ids[0],
                "activate": False,
                "message": {"role": "user", "content": "d"},
            }
        )
    )
    await store.client.hset(store._entry_key(ids[0]), "p", ids[2])  # damage: a -> c -> b -> a
    calls = {
        "get_path": (lambda: store.get_path(thread_id="loop"), ids[2]),
        "get_path_filtered": (lambda: store.get_path(thread_id="loop", types=["label"], limit=5), ids[2]),
        "get_path_from": (lambda: store.get_path(thread_id="loop", leaf_id=ids[1]), ids[1]),
        "rewind": (lambda: store.rewind("loop", aside.id), ids[2]),
        "fork_thread": (lambda: store.fork_thread("loop", ids[1]), ids[1]),
    }
    for name, (call, start) in calls.items():
        result = await call()
        assert not result.success, f"{name} read a branch whose parent links loop: {result.data!r}"
        assert result.error_type is not None and result.error_type.__name__ == "StoreUnavailableError"
        assert "thread loop is damaged" in (result.error or ""), (name, result.error)
        assert start in (result.error or ""), (name, result.error)
    assert [e.id for e in unwrap(await store.get_path(thread_id="loop", leaf_id=aside.id, limit=1))] == [aside.id]
