"""MongoDBAdapter on a real MongoDB wire server (``COGMEM_TEST_MONGODB_URL``).

Here that is the mongoeco emulator started by ``scripts/services.sh``; point the variable at a
real MongoDB to run the same tests there. Every test gets a database of its own, dropped after.
The conformance suite runs in the adapter's default mode (on mongoeco and a standalone mongod:
the ordered writes; on a replica set: transactions), and again with transactions forced on.
"""

from __future__ import annotations

import asyncio
import gc
import re
import socket
import subprocess
import sys
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory.clock import to_micros
from cogitator_memory.engines.factory import create_memory_adapter
from cogitator_memory.engines.mongodb.adapter import (
    DEFAULT_URI,
    MongoDBAdapter,
    is_write_conflict,
    server_has_transactions,
)
from cogitator_memory.engines.mongodb.threads import (
    entries_filter,
    entry_document,
    entry_from_document,
    scan_filter,
    thread_document,
    thread_from_document,
)
from cogitator_memory.errors import InvalidArgumentError, StoreUnavailableError
from cogitator_memory.result import unwrap
from cogitator_memory.testing import ConformanceCase, memory_adapter_conformance_cases, service_url
from cogitator_memory.threads.records import MemoryEntry, Thread

#: Cases not repeated with transactions forced: 10,000 sequential adds take minutes on mongoeco
#: (it scans every stored document on each insert) and exercise no transaction-specific code.
SLOW_CASES = {"same_created_at_keeps_insertion_order"}
EMULATOR_TRANSACTIONS = (
    "mongoeco's transactions lose committed writes when sessions commit concurrently "
    "(a failed commit can undo another's), so concurrency runs on the ordered writes it gets by default"
)


def collect_cancelled_connect_sockets() -> None:
    """Collect sockets of connect attempts pymongo abandoned when a client closed (see the
    function of this name in ``test_mongodb_faults.py``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def make_adapter(**options: Any) -> MongoDBAdapter:
    """An adapter on the test server with a fresh database (unless ``database`` is given)."""
    options.setdefault("database", f"cogmem_test_{uuid.uuid4().hex[:12]}")
    options.setdefault("connect_timeout", 5.0)
    return MongoDBAdapter(uri=service_url("COGMEM_TEST_MONGODB_URL"), **options)


async def drop(adapter: MongoDBAdapter) -> None:
    """Drop the adapter's database and disconnect."""
    if adapter.connected:
        await adapter.client.drop_database(adapter.database)
    await adapter.disconnect()


@pytest.fixture
async def store() -> AsyncIterator[MongoDBAdapter]:
    """A store in its default mode: transactions when the server says it runs them (a replica
    set or mongos), else the ordered writes (a standalone mongod, and mongoeco)."""
    memory = make_adapter()
    async with memory:
        try:
            yield memory
        finally:
            await drop(memory)


@pytest.fixture
async def transactional_store() -> AsyncIterator[MongoDBAdapter]:
    """A store with multi-document transactions forced on (mongoeco runs them though it says it is
    standalone; a real standalone mongod refuses them, so there these tests do not apply)."""
    memory = make_adapter(transactions=True)
    async with memory:
        try:
            hello = await memory.client.admin.command("hello")
            if not server_has_transactions(hello) and hello.get("gitVersion") != "mongoeco":
                pytest.skip("a standalone mongod runs no multi-document transactions")
            yield memory
        finally:
            await drop(memory)


@pytest.mark.parametrize("case", memory_adapter_conformance_cases(), ids=str)
async def test_conformance(case: ConformanceCase, store: MongoDBAdapter) -> None:
    await case.run(store)


@pytest.mark.parametrize("case", [c for c in memory_adapter_conformance_cases() if c.name not in SLOW_CASES], ids=str)
async def test_conformance_with_transactions(case: ConformanceCase, transactional_store: MongoDBAdapter) -> None:
    assert transactional_store.uses_transactions
    if case.name.startswith("concurrent") and await is_emulator(transactional_store):
        pytest.xfail(EMULATOR_TRANSACTIONS)
    await case.run(transactional_store)


async def is_emulator(store: MongoDBAdapter) -> bool:
    """Whether the test server is the mongoeco emulator rather than a real MongoDB."""
    hello = await store.client.admin.command("hello")
    return hello.get("gitVersion") == "mongoeco"


# --- documents and options (no server) --------------------------------------------------------


def test_options_are_checked() -> None:
    assert MongoDBAdapter(url="mongodb://h:1").uri == "mongodb://h:1"
    adapter = MongoDBAdapter(provider="mongodb")
    assert (adapter.uri, adapter.database, adapter.collection_prefix) == (DEFAULT_URI, "cogitator", "memory_")
    bad: list[tuple[dict[str, Any], str]] = [
        ({"provider": "redis"}, "provider"),
        ({"uri": "http://x"}, "uri"),
        ({"uri": "mongodb://a", "url": "mongodb://b"}, "uri"),
        ({"database": ""}, "database"),
        ({"database": "a.b"}, "database"),
        ({"database": "x" * 64}, "database"),
        ({"collection_prefix": "$bad"}, "collection_prefix"),
        ({"transactions": "yes"}, "transactions"),
        ({"connect_timeout": 0}, "connect_timeout"),
        ({"socket_timeout": True}, "socket_timeout"),
        ({"client_options": ["x"]}, "client_options"),
    ]
    for options, argument in bad:
        with pytest.raises(InvalidArgumentError) as caught:
            MongoDBAdapter(**options)
        assert caught.value.argument == argument, options


def test_missing_driver_fails_connect_with_the_pip_command() -> None:
    code = (
        "import asyncio, sys\n"
        "import cogitator_memory, cogitator_memory.engines.mongodb.threads\n"
        "print('imported:', 'pymongo' in sys.modules)\n"
        "sys.modules['pymongo'] = None  # this interpreter has no pymongo\n"
        "from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter\n"
        "adapter = MongoDBAdapter()\n"
        "result = asyncio.run(adapter.connect())\n"
        "print(result.success, result.error_type.__name__, adapter.connected, result.error)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert "imported: False" in out, "importing the package and the store module imports no driver"
    assert "False MissingDriverError False" in out
    assert 'pip install "cogitator-memory[mongodb]"' in out


def test_factory_builds_the_adapter() -> None:
    adapter = create_memory_adapter({"provider": "mongodb", "uri": "mongodb://h:1", "database": "d"})
    assert isinstance(adapter, MongoDBAdapter)
    assert (adapter.uri, adapter.database) == ("mongodb://h:1", "d")


def test_transactions_follow_the_topology() -> None:
    assert server_has_transactions({"setName": "rs0", "isWritablePrimary": True})
    assert server_has_transactions({"msg": "isdbgrid"})
    assert not server_has_transactions({"isWritablePrimary": True})
    assert not server_has_transactions({"isWritablePrimary": True, "gitVersion": "mongoeco"})


def test_only_write_conflicts_are_retried() -> None:
    from pymongo.errors import AutoReconnect, DuplicateKeyError, OperationFailure

    assert is_write_conflict(OperationFailure("WriteConflict", code=112))
    assert is_write_conflict(OperationFailure("Write conflict during transaction commit"))  # mongoeco's words
    labelled = OperationFailure("conflict", code=251, details={"errorLabels": ["TransientTransactionError"]})
    assert is_write_conflict(labelled)
    assert not is_write_conflict(AutoReconnect("connection refused")), "a lost server fails fast, not retried"
    assert not is_write_conflict(DuplicateKeyError("E11000", code=11000))
    assert not is_write_conflict(ValueError("write conflict"))


def test_documents_leave_out_what_was_never_set() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
    entry = MemoryEntry(id="e1", thread_id="t1", seq=1, created_at=now, message={"role": "user", "content": "hi"})
    doc = entry_document(entry)
    assert doc["_id"] == "e1" and doc["created_us"] == to_micros(now)
    for field in ("parent_id", "metadata", "event", "tool_calls", "tool_results", "id"):
        assert field not in doc
    assert "name" not in doc["message"]
    assert entry_from_document(doc) == entry
    thread = Thread(id="t1", agent_id="a", created_at=now, updated_at=now)
    tdoc = thread_document(thread, 1)
    assert "active_leaf_id" not in tdoc
    assert thread_from_document(tdoc) == thread


def test_queries() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert scan_filter(None, None, None, None) == {}
    assert scan_filter("a", None, None, None) == {"agent_id": "a"}
    keyset = scan_filter(None, None, None, (5, "t9"))
    assert keyset == {"$or": [{"updated_us": {"$lt": 5}}, {"updated_us": 5, "_id": {"$lt": "t9"}}]}
    query = entries_filter("t", types=frozenset({"message"}), before=now, after=None)
    assert query == {"thread_id": "t", "type": {"$in": ["message"]}, "created_us": {"$lt": to_micros(now)}}


async def test_missing_server_fails_connect_then_connect_retries() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    adapter = MongoDBAdapter(uri=f"mongodb://127.0.0.1:{closed_port}/?directConnection=true", connect_timeout=0.5)
    started = time.monotonic()
    result = await adapter.connect()
    assert not result.success and result.error_type is not None
    assert issubclass(result.error_type, StoreUnavailableError)
    assert time.monotonic() - started < 5, "a missing server fails within the timeout"
    assert not adapter.connected and adapter._client is None, "a failed connect closes its client"
    assert not (await adapter.health_check()).success
    assert not (await adapter.create_thread("a")).success
    collect_cancelled_connect_sockets()  # of the monitor the failed connect() closed
    # Point the same adapter at the real server: connect() tries again and works.
    adapter.uri = service_url("COGMEM_TEST_MONGODB_URL")
    adapter.database = f"cogmem_test_{uuid.uuid4().hex[:12]}"
    try:
        unwrap(await adapter.connect())
        assert adapter.connected
        unwrap(await adapter.health_check())
        thread = unwrap(await adapter.create_thread("a"))
        assert unwrap(await adapter.get_thread(thread.id)) == thread
    finally:
        await drop(adapter)


# --- on the server ----------------------------------------------------------------------------


@pytest.fixture
async def memory() -> AsyncIterator[MongoDBAdapter]:
    """One adapter in its default mode (transactions when the server says it has them)."""
    adapter = make_adapter(collection_prefix="app_")
    async with adapter:
        try:
            yield adapter
        finally:
            await drop(adapter)


async def test_collections_indexes_and_stored_documents(memory: MongoDBAdapter) -> None:
    db = memory.client[memory.database]
    thread = unwrap(await memory.create_thread("agent-1", {"a.b": 1, "$c": {"d": None}}))
    entry = unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "hi"}}))
    assert set(await db.list_collection_names()) >= {"app_threads", "app_entries"}
    thread_indexes = await memory.threads_collection.index_information()
    entry_indexes = await memory.entries_collection.index_information()
    assert thread_indexes["agent_updated"]["key"] == [("agent_id", 1), ("updated_us", -1), ("_id", -1)]
    assert entry_indexes["thread_seq"]["key"] == [("thread_id", 1), ("seq", 1)]
    assert entry_indexes["parent"]["key"] == [("parent_id", 1)]
    raw = await db["app_entries"].find_one({"_id": entry.id})
    assert raw is not None
    for field in ("parent_id", "metadata", "event", "tool_calls", "tool_results"):
        assert field not in raw, f"{field} is omitted, not stored as null"
    assert "name" not in raw["message"]
    assert raw["thread_id"] == thread.id and raw["seq"] == entry.seq
    raw_thread = await db["app_threads"].find_one({"_id": thread.id})
    assert raw_thread is not None and raw_thread["agent_id"] == "agent-1"
    updated = unwrap(await memory.update_thread(thread.id, {"x.y": "$literal"}))
    assert updated.metadata == {"a.b": 1, "$c": {"d": None}, "x.y": "$literal"}, "keys with dots and dollars are data"
    cleared = unwrap(await memory.create_thread("agent-1"))
    assert "active_leaf_id" not in (await db["app_threads"].find_one({"_id": cleared.id}) or {})


async def test_values_mongodb_cannot_store_are_refused(memory: MongoDBAdapter) -> None:
    thread = unwrap(await memory.create_thread("a"))
    result = await memory.add_entry(
        {"thread_id": thread.id, "message": {"role": "user", "content": "x"}, "metadata": {"n": 2**70}}
    )
    assert not result.success and result.error_type is InvalidArgumentError
    assert unwrap(await memory.get_entries(thread_id=thread.id)) == []


async def test_concurrent_writes_of_every_kind_leave_a_valid_tree(memory: MongoDBAdapter) -> None:
    thread = unwrap(await memory.create_thread("a"))
    first = [unwrap(await memory.add_entry(say(thread.id, f"s{i}"))) for i in range(6)]

    async def add(i: int) -> None:
        unwrap(await memory.add_entry(say(thread.id, f"c{i}")))

    async def side(i: int) -> None:
        unwrap(await memory.add_entry({**say(thread.id, f"b{i}"), "parent_id": first[1].id, "activate": False}))

    jobs: list[Awaitable[object]] = []
    jobs += [add(i) for i in range(12)]
    jobs += [side(i) for i in range(4)]
    jobs += [delete(memory, first[i].id) for i in (2, 4)]
    jobs += [memory.rewind(thread.id, first[0].id), memory.checkout(thread.id, first[5].id)]
    await asyncio.gather(*jobs)
    entries = unwrap(await memory.get_entries(thread_id=thread.id, types="all"))
    final = unwrap(await memory.get_thread(thread.id))
    assert final is not None
    ids = {e.id: e for e in entries}
    assert len(entries) == 6 - 2 + 12 + 4, "every add landed and both deletes happened"
    for e in entries:
        assert e.parent_id is None or e.parent_id in ids, f"{e.id} lost its parent"
        if e.parent_id is not None:
            assert ids[e.parent_id].seq < e.seq, "a parent is older than its child"
    assert len({e.seq for e in entries}) == len(entries)
    assert final.active_leaf_id in ids
    assert sum(1 for e in entries if e.parent_id is None) == 1
    path = unwrap(await memory.get_path(thread_id=thread.id))
    assert path[-1].id == final.active_leaf_id and path[0].parent_id is None


async def test_get_path_reads_long_branches_in_windows(memory: MongoDBAdapter) -> None:
    thread = unwrap(await memory.create_thread("a"))
    root = unwrap(await memory.add_entry(say(thread.id, "root")))
    side_leaf = root.id
    for i in range(150):  # two branches from the root, their entries interleaved in seq order
        if i % 2 == 0:
            unwrap(await memory.add_entry(say(thread.id, f"m{i}")))
        else:
            side = {**say(thread.id, f"s{i}"), "parent_id": side_leaf, "activate": False}
            side_leaf = unwrap(await memory.add_entry(side)).id
    whole = unwrap(await memory.get_path(thread_id=thread.id))
    assert [e.message.text for e in whole if e.message] == ["root"] + [f"m{i}" for i in range(0, 150, 2)]
    assert unwrap(await memory.get_path(thread_id=thread.id, limit=50)) == whole[-50:]
    other = unwrap(await memory.get_path(thread_id=thread.id, leaf_id=side_leaf, limit=60))
    assert [e.message.text for e in other if e.message] == [f"s{i}" for i in range(31, 150, 2)]
    rewound = unwrap(await memory.rewind(thread.id, whole[3].id))
    assert rewound.active_leaf_id == whole[3].id, "rewind finds an entry far down the branch"


def say(thread_id: str, text: str) -> dict[str, Any]:
    """A user message entry for ``add_entry``."""
    return {"thread_id": thread_id, "message": {"role": "user", "content": text}}


async def delete(memory: MongoDBAdapter, entry_id: str) -> None:
    """Delete an entry, failing the test on a failed result."""
    unwrap(await memory.delete_entry(entry_id))


def test_docs_example_runs(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "mongodb.md").read_text()
    example = re.findall(r"```python\n(.*?)```", page, re.S)[0]
    database = f"cogmem_test_docs_{uuid.uuid4().hex[:8]}"
    example = example.replace(
        "mongodb://127.0.0.1:27019/?directConnection=true", service_url("COGMEM_TEST_MONGODB_URL")
    )
    example = example.replace('"docs_example"', repr(database))
    script = tmp_path / "example.py"
    script.write_text(example)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.splitlines() == ["user Hi", "assistant Hello!", "['Hi', 'Hey there']", "True"]


async def test_parent_links_that_loop_are_reported(store: MongoDBAdapter) -> None:
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
    await store.entries_collection.update_one({"_id": ids[0]}, {"$set": {"parent_id": ids[2]}})  # a -> c -> b -> a
    calls = {
        "get_path": (lambda: store.get_path(thread_id="loop"), ids[2]),
        "get_path_filtered": (lambda: store.get_path(thread_id="loop", types=["label"], limit=5), ids[2]),
        "get_path_from": (lambda: store.get_path(thread_id="loop", leaf_id=ids[1]), ids[1]),
        "fork_thread": (lambda: store.fork_thread("loop", ids[1]), ids[1]),
    }
    for name, (call, start) in calls.items():
        result = await call()
        assert not result.success, f"{name} read a branch whose parent links loop: {result.data!r}"
        assert result.error_type is StoreUnavailableError, (name, result.error)
        assert "thread loop is damaged" in (result.error or ""), (name, result.error)
        assert start in (result.error or ""), (name, result.error)
    assert [e.id for e in unwrap(await store.get_path(thread_id="loop", leaf_id=aside.id, limit=1))] == [aside.id]
    await store.entries_collection.update_one({"_id": ids[0]}, {"$unset": {"parent_id": ""}})
    assert [e.id for e in unwrap(await store.get_path(thread_id="loop"))] == ids, "repaired, it reads again"
