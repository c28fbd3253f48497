"""RedisAdapter when Redis goes away: failed connects, a server stopped mid-run, a missing driver.

The server here is a private ``redis-server`` (found on PATH, as ``scripts/services.sh`` finds it)
on a free port, started and stopped by the test; the shared servers are never touched.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory.engines.redis.threads import RedisAdapter
from cogitator_memory.errors import StoreUnavailableError
from cogitator_memory.result import MemoryResult, unwrap

#: Every call in these tests must come back within this many seconds (no hangs).
CALL_DEADLINE = 8.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateRedis:
    """A redis-server of the test's own, with an append-only file so data survives a restart."""

    def __init__(self, directory: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            if os.environ.get("CI") == "true":
                pytest.fail("redis-server is not on PATH (scripts/services.sh installs it)")
            pytest.skip("redis-server is not on PATH")
        self.binary = binary
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--dir",
                str(self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"private redis-server on :{self.port} did not start")

    def signal(self, sig: int) -> None:
        assert self.process is not None
        self.process.send_signal(sig)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def within_deadline(call: Awaitable[MemoryResult[Any]]) -> tuple[MemoryResult[Any], float]:
    """The call's result and how long it took; fails the test past CALL_DEADLINE."""
    started = time.monotonic()
    result = await asyncio.wait_for(call, CALL_DEADLINE)
    return result, time.monotonic() - started


async def test_stopped_and_killed_server_give_failed_results_then_recover(private_redis: PrivateRedis) -> None:
    memory = RedisAdapter(host="127.0.0.1", port=private_redis.port, socket_timeout=1, connect_timeout=1, retries=1)
    async with memory:
        thread = unwrap(await memory.create_thread("a", thread_id="kept"))
        unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "before"}}))

        # A server that stops answering (SIGSTOP): every call fails within its timeouts.
        private_redis.signal(signal.SIGSTOP)
        try:
            calls: list[Callable[[], Awaitable[MemoryResult[Any]]]] = [
                lambda: memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "late"}}),
                lambda: memory.get_path(thread_id=thread.id),
                lambda: memory.get_thread(thread.id),
                lambda: memory.health_check(),
            ]
            for call in calls:
                result, took = await within_deadline(call())
                assert not result.success, result
                assert result.error_type is StoreUnavailableError
                assert "127.0.0.1" in (result.error or "")
                assert took < CALL_DEADLINE
        finally:
            private_redis.signal(signal.SIGCONT)

        # Answering again: the same adapter works without reconnecting by hand.
        unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "after"}}))

        # A server that went down: calls fail promptly (connection refused), many at once too.
        private_redis.stop()
        results = await asyncio.wait_for(
            asyncio.gather(*(memory.get_entries(thread_id=thread.id) for _ in range(20))), CALL_DEADLINE
        )
        assert all(not r.success and r.error_type is StoreUnavailableError for r in results)
        assert not (await memory.health_check()).success

        # Back up (the append-only file kept the data; the scripts are gone and get reloaded).
        private_redis.start()
        texts = []
        for _ in range(20):
            got = await memory.get_entries(thread_id=thread.id)
            if got.success:
                texts = [e.message.text for e in unwrap(got) if e.message]
                break
            await asyncio.sleep(0.2)
        assert texts[0] == "before" and texts[-1] == "after"
        # The timed-out add may still run when the server resumes (its bytes were sent), but the
        # retry of it carries the same entry id, so it is never stored twice.
        assert texts.count("late") <= 1, texts
        unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "again"}}))
        path = unwrap(await memory.get_path(thread_id=thread.id))
        assert [e.message.text for e in path if e.message][-1] == "again"
        assert (await memory.health_check()).success


async def test_connect_to_a_closed_port_fails_and_can_be_retried(private_redis: PrivateRedis) -> None:
    port = private_redis.port
    private_redis.stop()
    memory = RedisAdapter(host="127.0.0.1", port=port, connect_timeout=1, socket_timeout=1, retries=0)
    result, took = await within_deadline(memory.connect())
    assert took < 3, "a refused connection fails at once"
    assert not result.success and result.error_type is StoreUnavailableError
    assert f"127.0.0.1:{port}" in (result.error or "")
    assert not memory.connected
    private_redis.start()
    unwrap(await memory.connect())
    assert (await memory.health_check()).success
    await memory.disconnect()


SUBPROCESS_CONNECT = textwrap.dedent(
    """
    import asyncio, sys
    from cogitator_memory.engines.redis.threads import RedisAdapter

    async def main():
        options = {"connect_timeout": 1, "socket_timeout": 1, "retries": 1}
        if sys.argv[1] == "cluster":
            memory = RedisAdapter(cluster={"nodes": [f"127.0.0.1:{sys.argv[2]}"]}, **options)
        else:
            memory = RedisAdapter(host="127.0.0.1", port=int(sys.argv[2]), **options)
        result = await memory.connect()
        print("connected" if result.success else "failed: " + result.error)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("topology", ["standalone", "cluster"])
def test_a_process_that_fails_to_connect_exits(topology: str) -> None:
    port = free_port()
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", SUBPROCESS_CONNECT, topology, str(port)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("failed: "), done.stdout
    assert str(port) in done.stdout
    assert "Unclosed" not in done.stderr and "unclosed" not in done.stderr, done.stderr
    assert took < 20


def test_missing_driver_names_the_pip_command() -> None:
    script = textwrap.dedent(
        """
        import asyncio, sys
        import cogitator_memory.engines.redis.threads as store
        assert "redis" not in sys.modules, "importing the store must not import the driver"
        sys.modules["redis"] = None  # what Python does for a package that is not installed
        result = asyncio.run(store.RedisAdapter(host="127.0.0.1").connect())
        print(result.error)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert 'pip install "cogitator-memory[redis]"' in done.stdout
