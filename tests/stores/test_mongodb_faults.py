"""MongoDBAdapter when its server goes away: failed results within the timeouts, then recovery;
and when its client dies between two writes: what is left is never read.

The server tests start a private mongoeco server (the MongoDB wire emulator, as
``scripts/services.sh`` finds it: ``$COGMEM_SERVICES_DIR/mongovenv``) on a free port, and stop or
freeze it mid-run. The emulator keeps data in memory, so a restarted server comes back empty.
The client tests run the adapter in a process of its own on ``COGMEM_TEST_MONGODB_URL`` (a fresh
database each) and kill that process with ``SIGKILL`` before its n-th write.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from cogitator_memory.cascade import MemoryCascade
from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter
from cogitator_memory.errors import ConflictError, NotFoundError, StoreUnavailableError
from cogitator_memory.result import MemoryResult, unwrap
from cogitator_memory.testing import service_url

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mongoeco_server.py"


def collect_cancelled_connect_sockets() -> None:
    """Collect the sockets of connect attempts pymongo abandoned when its client closed.

    pymongo 4.20's ``pool_shared._async_create_connection`` closes its socket on ``OSError``
    only; a monitor's connect attempt cancelled by ``client.close()`` (likely while a server is
    down or frozen) leaves the socket to the garbage collector, whose ``ResourceWarning`` would
    fail a later, unrelated test under ``-W error``. The adapter has closed its client by now.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def free_port() -> int:
    """A TCP port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PrivateServer:
    """A mongoeco server of this test's own, which the test can stop, freeze and start again."""

    def __init__(self, python: Path, port: int) -> None:
        self.python, self.port = python, port
        self.process: subprocess.Popen[str] | None = None

    @property
    def uri(self) -> str:
        """The connection string of the server."""
        return f"mongodb://127.0.0.1:{self.port}/?directConnection=true"

    def start(self) -> None:
        """Start the server and wait until it listens."""
        self.process = subprocess.Popen(
            [str(self.python), str(SCRIPT), str(self.port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert self.process.stdout is not None
        deadline = time.monotonic() + 30
        for line in self.process.stdout:
            if "listening" in line:
                return
            if time.monotonic() > deadline:
                break
        raise RuntimeError(f"mongoeco did not start on port {self.port}")

    def stop(self) -> None:
        """Stop the server (its data is gone)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None

    def freeze(self) -> None:
        """Pause the process: connections stay open, nothing answers."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        """Resume a paused server."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)


@pytest.fixture
def server() -> Iterator[PrivateServer]:
    services = Path(service_url("COGMEM_SERVICES_DIR"))
    python = services / "mongovenv" / "bin" / "python"
    if not python.exists():
        message = f"no mongoeco virtualenv at {python}: run scripts/services.sh start"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    private = PrivateServer(python, free_port())
    private.start()
    try:
        yield private
    finally:
        private.stop()


@pytest.fixture
async def memory(server: PrivateServer) -> AsyncIterator[MongoDBAdapter]:
    adapter = MongoDBAdapter(uri=server.uri, database="faults", connect_timeout=1.0, socket_timeout=2.0)
    unwrap(await adapter.connect())
    try:
        yield adapter
    finally:
        await adapter.disconnect()
        collect_cancelled_connect_sockets()


async def timed(call: asyncio.Future[MemoryResult[object]] | object) -> tuple[MemoryResult[object], float]:
    """The result of awaiting ``call`` and the seconds it took."""
    started = time.monotonic()
    result = await call  # type: ignore[misc]
    return result, time.monotonic() - started


async def assert_down(memory: MongoDBAdapter, thread_id: str, limit: float) -> None:
    """Every kind of call fails, with a store-unavailable error, within ``limit`` seconds."""
    calls = {
        "health_check": memory.health_check(),
        "get_thread": memory.get_thread(thread_id),
        "add_entry": memory.add_entry({"thread_id": thread_id, "message": {"role": "user", "content": "lost"}}),
        "get_path": memory.get_path(thread_id=thread_id, limit=50),
        "list_threads": memory.list_threads(),
        "delete_entry": memory.delete_entry("entry_x"),
    }
    for name, call in calls.items():
        result, took = await timed(call)
        assert not result.success, f"{name} succeeded with the server down"
        assert result.error_type is not None and issubclass(result.error_type, StoreUnavailableError), result.error
        assert took < limit, f"{name} took {took:.1f}s, more than {limit}s"


async def wait_until_up(memory: MongoDBAdapter, seconds: float = 20) -> None:
    """Wait until the adapter's health check passes again."""
    deadline = time.monotonic() + seconds
    while not (await memory.health_check()).success:
        assert time.monotonic() < deadline, "the adapter did not recover"
        await asyncio.sleep(0.2)


async def test_stopped_server_fails_fast_and_the_adapter_recovers(
    server: PrivateServer, memory: MongoDBAdapter
) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "before"}}))
    server.stop()
    await assert_down(memory, thread.id, limit=6)
    assert memory.connected, "the adapter stays connected and retries on its own"
    server.start()  # same port, empty (the emulator keeps data in memory)
    await wait_until_up(memory)
    again = unwrap(await memory.create_thread("agent", thread_id=thread.id))
    entry = unwrap(await memory.add_entry({"thread_id": again.id, "message": {"role": "user", "content": "after"}}))
    assert [e.id for e in unwrap(await memory.get_path(thread_id=again.id))] == [entry.id]


async def test_frozen_server_times_out_and_the_adapter_recovers(server: PrivateServer, memory: MongoDBAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    first = unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "kept"}}))
    server.freeze()  # the port accepts connections but nothing answers
    try:
        await assert_down(memory, thread.id, limit=8)
    finally:
        server.thaw()
    await wait_until_up(memory)
    path = unwrap(await memory.get_path(thread_id=thread.id))
    assert path[0].id == first.id, "the data of a server that only paused is still there"
    entries = unwrap(await memory.get_entries(thread_id=thread.id, types="all"))
    ids = {e.id for e in entries}
    assert all(e.parent_id is None or e.parent_id in ids for e in entries), "no write left a broken tree"
    final = unwrap(await memory.get_thread(thread.id))
    assert final is not None and final.active_leaf_id in ids


if sys.platform == "win32":  # pragma: no cover - signals used above
    pytestmark = pytest.mark.skip(reason="needs POSIX signals")


# --- a client killed between two writes ---------------------------------------------------------

#: Runs one adapter call in a process that SIGKILLs itself just before its n-th write reaches the
#: server. argv: uri, database, n, then "delete_thread" or "fork_thread <at entry id>".
DYING_CLIENT = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from pymongo.asynchronous.collection import AsyncCollection
    from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter

    uri, database, kill_at, operation = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    state = {"armed": False, "writes": 0}

    def dying(name):
        original = getattr(AsyncCollection, name)

        async def write(self, *args, **kwargs):
            if state["armed"]:
                state["writes"] += 1
                if state["writes"] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
            return await original(self, *args, **kwargs)

        setattr(AsyncCollection, name, write)

    for name in ("insert_one", "insert_many", "update_one", "update_many", "delete_one", "delete_many",
                 "find_one_and_update", "find_one_and_delete", "replace_one", "bulk_write"):
        dying(name)

    async def main():
        memory = MongoDBAdapter(uri=uri, database=database, transactions=False)
        await memory.connect()
        state["armed"] = True
        if operation == "delete_thread":
            result = await memory.delete_thread("doomed")
        else:
            result = await memory.fork_thread("origin", sys.argv[5], "copy")
        print("finished after", state["writes"], "writes:", result, flush=True)

    asyncio.run(main())
    """
)


@pytest.fixture
async def shared() -> AsyncIterator[MongoDBAdapter]:
    """An adapter with ordered writes on the test server, in a database of its own."""
    memory = MongoDBAdapter(
        uri=service_url("COGMEM_TEST_MONGODB_URL"), database=f"cogmem_crash_{uuid.uuid4().hex[:10]}", transactions=False
    )
    async with memory:
        try:
            yield memory
        finally:
            await memory.client.drop_database(memory.database)


def kill_client_before_write(memory: MongoDBAdapter, kill_at: int, *operation: str) -> None:
    """Run ``operation`` in a client process killed just before its ``kill_at``-th write."""
    proc = subprocess.run(
        [sys.executable, "-c", DYING_CLIENT, memory.uri, memory.database, str(kill_at), *operation],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, f"the client was not killed: {proc.stdout} {proc.stderr[-2000:]}"


async def say(memory: MongoDBAdapter, thread_id: str, text: str, **extra: object) -> str:
    entry = await memory.add_entry({"thread_id": thread_id, "message": {"role": "user", "content": text}, **extra})
    return unwrap(entry).id


async def assert_valid_tree(memory: MongoDBAdapter, thread_id: str) -> list[str]:
    """The thread's entries form a tree: unique seqs, parents that exist, a leaf that exists."""
    entries = unwrap(await memory.get_entries(thread_id=thread_id, types="all"))
    thread = unwrap(await memory.get_thread(thread_id))
    assert thread is not None
    ids = {e.id for e in entries}
    assert len({e.seq for e in entries}) == len(entries), "duplicate seq"
    assert all(e.parent_id is None or e.parent_id in ids for e in entries), "an entry names a missing parent"
    assert thread.active_leaf_id is None or thread.active_leaf_id in ids, "the leaf names a missing entry"
    return [e.id for e in entries]


@pytest.mark.parametrize("kill_at", [1, 2, 3, 4])
async def test_a_client_killed_inside_delete_thread_leaves_nothing_a_new_thread_inherits(
    shared: MongoDBAdapter, kill_at: int
) -> None:
    unwrap(await shared.create_thread("agent-a", {"owner": "a"}, "doomed"))
    first = await say(shared, "doomed", "secret of agent a")
    await say(shared, "doomed", "more")
    await say(shared, "doomed", "aside", parent_id=first, activate=False)
    kill_client_before_write(shared, kill_at, "delete_thread")
    left = unwrap(await shared.get_thread("doomed"))
    if left is None:
        assert await shared.entries_collection.count_documents({"thread_id": "doomed"}) == 0, (
            "the thread is gone but its entries are not"
        )
        assert not (await shared.get_entries(thread_id="doomed")).success
    else:
        assert left.agent_id == "agent-a", "what is left is the old thread, which a retried delete finishes"
        await assert_valid_tree(shared, "doomed")
        unwrap(await shared.delete_thread("doomed"))
    fresh = unwrap(await shared.create_thread("agent-b", None, "doomed"))
    assert fresh.agent_id == "agent-b"
    assert unwrap(await shared.get_entries(thread_id="doomed", types="all")) == [], "agent b inherited entries"
    assert unwrap(await shared.get_path(thread_id="doomed")) == []


@pytest.mark.parametrize("kill_at", [1, 2, 3, 4])
async def test_a_client_killed_inside_fork_thread_leaves_nothing_a_retry_reads(
    shared: MongoDBAdapter, kill_at: int
) -> None:
    unwrap(await shared.create_thread("agent-a", None, "origin"))
    ids = [await say(shared, "origin", f"m{i}") for i in range(4)]
    kill_client_before_write(shared, kill_at, "fork_thread", ids[2])
    leftovers = await shared.entries_collection.count_documents({"thread_id": "copy"})
    if unwrap(await shared.get_thread("copy")) is None:
        entries = await shared.get_entries(thread_id="copy")
        assert entries.error_type is NotFoundError, f"entries without a thread were read: {entries}"
        path = await shared.get_path(thread_id="copy")
        assert path.error_type is NotFoundError, f"entries without a thread were read: {path}"
        other = await shared.create_thread("agent-b", None, "copy")
        retry = await shared.fork_thread("origin", ids[2], "copy")
        if leftovers:
            assert other.error_type is ConflictError and "delete_thread" in (other.error or ""), other
            assert retry.error_type is ConflictError and "delete_thread" in (retry.error or ""), retry
            unwrap(await shared.delete_thread("copy"))
            assert await shared.entries_collection.count_documents({"thread_id": "copy"}) == 0
        else:
            assert unwrap(other).agent_id == "agent-b"
            assert retry.error_type is ConflictError, "the id is taken by agent b's thread"
            unwrap(await shared.delete_thread("copy"))
        unwrap(await shared.fork_thread("origin", ids[2], "copy"))
    assert len(await assert_valid_tree(shared, "copy")) == 3, "one copy of each entry up to the fork point"
    path = unwrap(await shared.get_path(thread_id="copy"))
    assert [e.message.text for e in path] == ["m0", "m1", "m2"]  # type: ignore[union-attr]


@pytest.mark.parametrize("kill_at", [2, 3, 4])
async def test_a_fork_killed_mid_way_leaves_no_copy_get_entry_reads_or_delete_user_keeps(
    shared: MongoDBAdapter, kill_at: int
) -> None:
    """Killed after the copies (2: before the fork thread; 3: before the origin lists it; 4:
    before the copies are marked done): no copy is read without its thread, and the user's
    erasure takes every copy."""
    unwrap(await shared.create_thread("agent-a", {"user_id": "alice"}, "origin"))
    ids = [await say(shared, "origin", f"alice secret {i}") for i in range(3)]
    kill_client_before_write(shared, kill_at, "fork_thread", ids[1])
    copies = [doc["_id"] async for doc in shared.entries_collection.find({"thread_id": "copy"}, {"_id": 1})]
    assert len(copies) == 2, "the client died after writing the copies"
    fork = unwrap(await shared.get_thread("copy"))
    assert (fork is None) == (kill_at == 2)
    for copy_id in copies:
        read = unwrap(await shared.get_entry(copy_id))
        if fork is None:
            assert read is None, f"get_entry read a copy whose fork thread does not exist: {read}"
        else:
            assert read is not None and read.thread_id == "copy" and "pending_fork" not in read.model_dump()
    await MemoryCascade(memory=shared).delete_user("alice")
    left = [doc async for doc in shared.entries_collection.find({}, {"_id": 1, "thread_id": 1})]
    assert left == [], f"delete_user left entries of alice: {left}"
    assert await shared.threads_collection.count_documents({}) == 0
    # the id is free again
    assert unwrap(await shared.create_thread("agent-b", None, "copy")).agent_id == "agent-b"


async def test_an_erasure_while_a_fork_is_written_takes_the_fork_whole(shared: MongoDBAdapter) -> None:
    """The user's erasure finds the copies of a fork still being written (no thread yet) and
    deletes them; the fork then undoes itself instead of leaving a thread whose entries are gone."""
    unwrap(await shared.create_thread("agent-a", {"user_id": "alice"}, "origin"))
    ids = [await say(shared, "origin", f"m{i}") for i in range(3)]
    original = shared.threads_collection.insert_one
    erased: list[int] = []

    async def insert_after_erasure(document: dict[str, object], *args: object, **kwargs: object) -> object:
        if document.get("_id") == "copy" and not erased:
            erased.append(1)
            unwrap(await shared.threads_of_user("alice"))  # what delete_user runs first
        return await original(document, *args, **kwargs)  # type: ignore[arg-type]

    shared.threads_collection.insert_one = insert_after_erasure  # type: ignore[method-assign]
    try:
        result = await shared.fork_thread("origin", ids[1], "copy")
    finally:
        del shared.threads_collection.insert_one
    assert erased and result.error_type is ConflictError and "erased" in (result.error or ""), result
    assert unwrap(await shared.get_thread("copy")) is None
    assert await shared.entries_collection.count_documents({"thread_id": "copy"}) == 0
