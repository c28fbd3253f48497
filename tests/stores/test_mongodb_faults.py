"""MongoDBAdapter when its server goes away: failed results within the timeouts, then recovery.

Each test starts a private mongoeco server (the MongoDB wire emulator, as ``scripts/services.sh``
finds it: ``$COGMEM_SERVICES_DIR/mongovenv``) on a free port, and stops or freezes it mid-run.
The emulator keeps data in memory, so a restarted server comes back empty.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from cogitator_memory.engines.mongodb.threads import MongoDBAdapter
from cogitator_memory.errors import StoreUnavailableError
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
