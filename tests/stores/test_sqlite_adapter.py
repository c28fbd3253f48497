"""SQLiteAdapter beyond the shared contract: files, WAL, schema versions, durability."""

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from cogitator_memory import InvalidArgumentError, SQLiteAdapter, create_memory_adapter, unwrap
from cogitator_memory.engines.sqlite.db import PAGE_CACHE_KIB
from cogitator_memory.engines.sqlite.items import _latest_started
from cogitator_memory.engines.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, applied_migrations
from cogitator_memory.items.records import check_filter


async def test_creates_parent_folders_and_uses_wal(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "memory.db"
    async with SQLiteAdapter(path=path) as memory:
        assert path.exists()
        mode = memory.connection.execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
        assert memory.connection.execute("PRAGMA cache_size").fetchone()[0] == -PAGE_CACHE_KIB
        assert memory.schema_version == SCHEMA_VERSION
        assert applied_migrations(memory.connection) == [(m.version, m.name) for m in MIGRATIONS]


async def test_data_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    async with SQLiteAdapter(path=path) as memory:
        thread = unwrap(await memory.create_thread("agent", {"k": "v"}, "kept"))
        unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "persist me"}}))
    async with SQLiteAdapter(path=path) as memory:
        entries = unwrap(await memory.get_entries(thread_id="kept"))
        assert [e.message.text for e in entries] == ["persist me"]  # type: ignore[union-attr]
        assert memory.schema_version == SCHEMA_VERSION, "reopening migrates nothing"
        assert len(applied_migrations(memory.connection)) == len(MIGRATIONS)


WRITER = textwrap.dedent(
    """
    import asyncio, sys, time
    from cogitator_memory import SQLiteAdapter, unwrap

    async def main() -> None:
        memory = SQLiteAdapter(path=sys.argv[1])
        await memory.connect()
        thread = unwrap(await memory.create_thread("agent", None, "crash"))
        for i in range(200):
            unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": f"m{i}"}}))
        print("written", flush=True)
        time.sleep(60)

    asyncio.run(main())
    """
)


async def test_committed_writes_survive_a_killed_process(tmp_path: Path) -> None:
    path = tmp_path / "crash.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "written"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    async with SQLiteAdapter(path=path) as memory:
        entries = unwrap(await memory.get_entries(thread_id="crash"))
        assert len(entries) == 200
        path_entries = unwrap(await memory.get_path(thread_id="crash", limit=3))
        assert [e.message.text for e in path_entries] == ["m197", "m198", "m199"]  # type: ignore[union-attr]


async def test_two_processes_share_a_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    script = textwrap.dedent(
        """
        import asyncio, sys
        from cogitator_memory import SQLiteAdapter, unwrap

        async def main() -> None:
            async with SQLiteAdapter(path=sys.argv[1]) as memory:
                unwrap(await memory.create_thread("agent", None, "shared"))
                for i in range(100):
                    unwrap(await memory.add_entry({"thread_id": "shared", "message": {"role": "user", "content": sys.argv[2] + str(i)}}))

        asyncio.run(main())
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(path), tag]) for tag in ("a", "b")]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    async with SQLiteAdapter(path=path) as memory:
        entries = unwrap(await memory.get_entries(thread_id="shared", include_tool_calls=True))
        assert len(entries) == 200
        path_entries = unwrap(await memory.get_path(thread_id="shared"))
        assert len(path_entries) == 200, "both writers appended to one unbroken branch"


async def test_a_file_of_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    async with SQLiteAdapter(path=path):
        pass
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    memory = SQLiteAdapter(path=path)
    result = await memory.connect()
    assert not result.success and "newer" in (result.error or "")
    assert not memory.connected


async def test_a_failed_connect_can_be_retried(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a folder should be")
    memory = SQLiteAdapter(path=blocker / "memory.db")
    result = await memory.connect()
    assert not result.success and "sqlite connect failed" in (result.error or "")
    blocker.unlink()
    assert (await memory.connect()).success
    assert (await memory.health_check()).success
    await memory.disconnect()


async def test_a_locked_database_gives_a_failed_result_not_a_hang(tmp_path: Path) -> None:
    path = tmp_path / "locked.db"
    async with SQLiteAdapter(path=path, busy_timeout=0.2) as memory:
        thread = unwrap(await memory.create_thread("agent"))
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            result = await asyncio.wait_for(
                memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "x"}}), timeout=5
            )
            assert not result.success and "locked" in (result.error or "")
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert unwrap(await memory.get_entries(thread_id=thread.id)) == [], "the failed write left nothing"
        unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "after"}}))


def test_bad_options_are_named() -> None:
    with pytest.raises(InvalidArgumentError, match="busy_timeout"):
        SQLiteAdapter(path=":memory:", busy_timeout=-1)
    with pytest.raises(InvalidArgumentError, match="path"):
        SQLiteAdapter(path="")
    with pytest.raises(InvalidArgumentError, match="provider"):
        SQLiteAdapter(path=":memory:", provider="redis")


async def test_factory_builds_the_embedded_stores(tmp_path: Path) -> None:
    memory = create_memory_adapter({"provider": "sqlite", "path": str(tmp_path / "f.db")})
    assert isinstance(memory, SQLiteAdapter)
    async with memory:
        assert unwrap(await memory.create_thread("a")).agent_id == "a"
    in_memory = create_memory_adapter(provider="memory", max_entries=10)
    assert in_memory.provider == "memory"
    with pytest.raises(InvalidArgumentError, match="provider"):
        create_memory_adapter({"provider": "cassandra"})
    with pytest.raises(InvalidArgumentError, match="config"):
        create_memory_adapter({"provider": "memory", "no_such_option": 1})


async def test_processes_opening_a_new_file_at_once_all_connect(tmp_path: Path) -> None:
    # Switching a new file to WAL needs it alone, and SQLite may answer "locked" at once (without
    # its busy wait) to a process that opens the file in that moment: connect() must wait it out.
    script = textwrap.dedent(
        """
        import asyncio, sys, time
        from cogitator_memory import SQLiteAdapter, unwrap

        async def main() -> None:
            start = float(sys.argv[3])
            for k in range(15):
                time.sleep(max(0.0, start + 0.05 * k - time.time()))  # every process opens file k at once
                async with SQLiteAdapter(path=f"{sys.argv[1]}/new-{k}.db") as memory:
                    unwrap(await memory.create_thread("agent", None, "t-" + sys.argv[2]))

        asyncio.run(main())
        """
    )
    start = time.time() + 2.0
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), str(n), str(start)]) for n in range(4)]
    codes = [proc.wait(timeout=120) for proc in procs]
    assert codes == [0, 0, 0, 0]
    async with SQLiteAdapter(path=tmp_path / "new-14.db") as memory:
        page = unwrap(await memory.list_threads())
        assert sorted(t.id for t in page.threads) == ["t-0", "t-1", "t-2", "t-3"]


LOOP_READER = textwrap.dedent(
    """
    import asyncio, json, sys
    from cogitator_memory import SQLiteAdapter

    async def main() -> None:
        async with SQLiteAdapter(path=sys.argv[1]) as memory:
            calls = {
                "get_path": memory.get_path(thread_id="loop"),
                "get_path_limited": memory.get_path(thread_id="loop", limit=50, types=["label"]),
                "get_path_from": memory.get_path(thread_id="loop", leaf_id=sys.argv[2]),
                "rewind": memory.rewind("loop", sys.argv[3]),
                "fork_thread": memory.fork_thread("loop", sys.argv[2]),
                "healthy": memory.get_path(thread_id="fine"),
            }
            out = {}
            for name, call in calls.items():
                result = await call
                out[name] = [result.success, result.error, result.error_type.__name__ if result.error_type else None]
            print(json.dumps(out), flush=True)

    asyncio.run(main())
    """
)


async def test_a_parent_cycle_in_a_damaged_file_is_reported_not_walked_forever(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    async with SQLiteAdapter(path=path) as memory:
        thread = unwrap(await memory.create_thread("agent", None, "loop"))
        ids = []
        for text in ("a", "b", "c"):
            entry = unwrap(
                await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": text}})
            )
            ids.append(entry.id)
        aside = unwrap(
            await memory.add_entry(
                {
                    "thread_id": thread.id,
                    "parent_id": ids[0],
                    "activate": False,
                    "message": {"role": "user", "content": "d"},
                }
            )
        )
        unwrap(await memory.create_thread("agent", None, "fine"))
        unwrap(await memory.add_entry({"thread_id": "fine", "message": {"role": "user", "content": "ok"}}))
    db = sqlite3.connect(path)
    with db:
        db.execute("UPDATE entries SET parent_id = ? WHERE id = ?", (ids[2], ids[0]))  # a -> c -> b -> a
    db.close()
    # A walk that loops blocks its process for good, so it runs in a process of its own.
    proc = subprocess.run(
        [sys.executable, "-c", LOOP_READER, str(path), ids[1], aside.id], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0, proc.stderr
    outcome = json.loads(proc.stdout)
    for name in ("get_path", "get_path_limited", "get_path_from", "rewind", "fork_thread"):
        success, error, error_type = outcome[name]
        assert not success, f"{name} read a branch whose parent links loop"
        assert error_type == "StoreUnavailableError", (name, error_type, error)
        assert "thread loop is damaged" in error and "loop" in error, (name, error)
    assert ids[2] in outcome["get_path"][1], "the message names the entry the walk started from"
    assert ids[1] in outcome["get_path_from"][1]
    assert outcome["healthy"][0], "other threads of the file still read"


async def test_m015_items_by_start_from_version_14(tmp_path: Path) -> None:
    """A file at version 14 with items gains the index of items by scope, kind and start when
    opened, and the latest started items of a scope are read through it."""
    path = tmp_path / "old.db"
    scope = {"agent_id": "a", "user_id": "u"}
    base = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        {
            "id": f"mem_{n:03d}",
            "kind": "fact",
            "subject": "u",
            "attribute": f"a{n}",
            "value": str(n),
            "trust": "user",
            "status": "active",
            "scope": scope,
            "recorded_at": base + timedelta(hours=n),
            "valid_from": base - timedelta(hours=n),
        }  # the latest recorded started first
        for n in range(50)
    ]
    async with SQLiteAdapter(path=path) as store:
        unwrap(await store.add_items(rows))
    db = sqlite3.connect(path, isolation_level=None)  # back to version 14: no index by start
    db.execute("DROP INDEX memory_items_by_start")
    db.execute("DELETE FROM cogitator_migrations WHERE version >= 15")
    db.execute("PRAGMA user_version = 14")
    db.close()
    async with SQLiteAdapter(path=path) as store:
        assert (15, "m015_items_by_start") in applied_migrations(store.connection)
        latest = unwrap(await store.query_items({"visible_to": scope, "order": "start", "limit": 3}))
        assert [i.id for i in latest] == ["mem_002", "mem_001", "mem_000"]
        sql, params = _latest_started(check_filter({"visible_to": scope, "order": "start", "limit": 3}))
        plan = [str(row[3]) for row in store.connection.execute(f"EXPLAIN QUERY PLAN {sql}", params)]
        walks = [step for step in plan if "INDEX memory_items_by_start (scope_key=? AND kind=?)" in step]
        assert len(walks) == 2 * 6, plan  # each scope key the run sees, each kind
        assert plan.count("USE TEMP B-TREE FOR ORDER BY") == 1, plan  # the merge of the walks alone
