"""``cogitator-memory reindex``: the recall index written again from the store's threads, on
every store a config can name, resumable after Ctrl-C or a kill."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.cli import main
from cogitator_memory.index import indexer as indexer_module
from cogitator_memory.index.indexer import RecallIndexer
from cogitator_memory.runtime.config import load_config
from cogitator_memory.runtime.memory import create_store
from cogitator_memory.testing.services import service_url

PREFIX = "cogitator-memory: error: "
ENGINES = ["sqlite", "postgres", "redis", "redis-cluster", "mongodb"]
THREADS = 7
WORD = "quokkaberries"  # indexed by its stem, "quokkaberri"
ORIGINAL_RESYNC = RecallIndexer.resync_thread


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("COGITATOR_MEMORY_DB", raising=False)
    monkeypatch.delenv("COGITATOR_CONFIG", raising=False)
    monkeypatch.setenv("COGITATOR_HOME", str(tmp_path / "home"))


def _config(tmp_path: Path, engine: str) -> tuple[Path, dict[str, Any]]:
    """A config file naming a fresh namespace of ``engine``, and that namespace (to drop it)."""
    tag = uuid.uuid4().hex[:8]
    if engine == "sqlite":
        body, where = f"  adapter: sqlite\n  path: {tmp_path / 'reindex.db'}\n", {}
    elif engine == "redis":
        body = f"  adapter: redis\n  connection_string: {service_url('COGMEM_TEST_REDIS_URL')}\n"
        body += f"  options: {{key_prefix: 'rx{tag}:'}}\n"
        where = {}
    elif engine == "redis-cluster":
        nodes = json.dumps(service_url("COGMEM_TEST_REDIS_CLUSTER_NODES").split(","))
        body = f"  adapter: redis\n  options: {{cluster: {{nodes: {nodes}}}, key_prefix: 'rx{tag}:'}}\n"
        where = {}
    elif engine == "mongodb":
        body = f"  adapter: mongodb\n  connection_string: '{service_url('COGMEM_TEST_MONGODB_URL')}'\n"
        body += f"  options: {{database: rx{tag}}}\n"
        where = {"database": f"rx{tag}"}
    else:
        body = f"  adapter: postgres\n  connection_string: '{service_url('COGMEM_TEST_POSTGRES_URL')}'\n"
        body += f"  options: {{schema: rx{tag}}}\n"
        where = {"schema": f"rx{tag}"}
    file = tmp_path / f"{engine}.yml"
    file.write_text(f"memory:\n{body}  embedding: {{provider: none}}\n")
    return file, where


def _drop(engine: str, where: dict[str, Any], file: Path) -> None:
    if engine.startswith("redis"):

        async def drop_keys() -> None:
            store = create_store(load_config(str(file)))
            unwrap(await store.connect())
            try:
                await store.delete_all_keys()
            finally:
                await store.disconnect()

        asyncio.run(drop_keys())
    elif engine == "mongodb":
        import pymongo

        with pymongo.MongoClient(service_url("COGMEM_TEST_MONGODB_URL")) as client:
            client.drop_database(where["database"])
    elif engine == "postgres":
        import psycopg

        with psycopg.connect(service_url("COGMEM_TEST_POSTGRES_URL"), autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{where["schema"]}" CASCADE')


@pytest.fixture(params=ENGINES)
def engine_config(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    file, where = _config(tmp_path, request.param)
    try:
        yield file
    finally:
        _drop(request.param, where, file)


async def _on_store(config: Path, work: Any) -> Any:
    """``work(store)`` on the bare store of ``config`` (no indexer: what it writes is not indexed)."""
    store = create_store(load_config(str(config)))
    unwrap(await store.connect())
    try:
        return await work(store)
    finally:
        await store.disconnect()


def _seed(config: Path, threads: int = THREADS) -> None:
    """``threads`` threads of ana, two turns each, none of them in the recall index."""

    async def work(store: Any) -> None:
        for n in range(threads):
            tid = f"t{n:02d}"
            unwrap(await store.create_thread("assistant", {"user_id": "ana"}, tid))
            for role, text in (("user", f"Thread {n}: I am allergic to {WORD}."), ("assistant", "Noted.")):
                unwrap(await store.add_entry({"thread_id": tid, "message": {"role": role, "content": text}}))
        assert unwrap(await store.count_recall_records(filter={"user_id": "ana"})) == 0

    asyncio.run(_on_store(config, work))


def _index_of(config: Path) -> tuple[int, set[str]]:
    """How many turn records the index holds, and the threads the stemmed word finds."""

    async def work(store: Any) -> tuple[int, set[str]]:
        count = unwrap(await store.count_recall_records(filter={"user_id": "ana"}))
        hits = unwrap(await store.recall_keyword("quokkaberry", filter={"user_id": "ana"}, limit=1000))
        return count, {h.record.thread_id for h in hits}

    result: tuple[int, set[str]] = asyncio.run(_on_store(config, work))
    return result


def _interrupt_at(monkeypatch: pytest.MonkeyPatch, call: int) -> list[str]:
    """Ctrl-C (``KeyboardInterrupt``) as the ``call``-th thread is being indexed; the threads
    indexed are listed in the returned list."""
    real = ORIGINAL_RESYNC
    seen: list[str] = []

    async def resync(self: RecallIndexer, thread: Any, *, force: bool = False) -> int:
        if len(seen) + 1 == call:
            raise KeyboardInterrupt
        seen.append(thread.id)
        return await real(self, thread, force=force)

    monkeypatch.setattr(RecallIndexer, "resync_thread", resync)
    return seen


def test_reindex_writes_every_thread_into_the_index(engine_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _seed(engine_config)
    code, out, err = _run(capsys, "reindex", "--config", str(engine_config), "--json")
    assert code == 0, err
    assert json.loads(out) == {
        "threads_checked": THREADS,
        "threads_indexed": THREADS,
        "records_written": 2 * THREADS,
        "records_checked": 2 * THREADS,
        "records_removed": 0,
        "resumed": False,
    }
    count, found = _index_of(engine_config)
    assert count == 2 * THREADS
    assert found == {f"t{n:02d}" for n in range(THREADS)}, "the stemmed word finds every thread"
    code, out, _ = _run(capsys, "reindex", "--config", str(engine_config))
    assert code == 0 and f"Reindexed {THREADS} threads of " in out and f"{2 * THREADS} records written" in out
    assert "earlier run" not in out
    assert _index_of(engine_config)[0] == 2 * THREADS, "run again, it writes the same records (no copies)"


def test_reindex_writes_the_items_and_graph_facts_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Items and graph facts held before the store kept an index (here: their records taken out)."""
    from cogitator_memory.items.service import MemoryItems

    config, _ = _config(tmp_path, "sqlite")
    _seed(config, 1)

    async def write(store: Any) -> list[str]:
        items = MemoryItems(adapter=store)
        item = await items.add(
            {
                "kind": "fact",
                "subject": "ana",
                "attribute": "allergy",
                "value": WORD,
                "trust": "user",
                "scope": {"agent_id": "assistant", "user_id": "ana"},
            }
        )
        await items.activate([item.id])
        node = unwrap(
            await store.add_node(
                {"scope": {"agent_id": "assistant", "user_id": "ana"}, "type": "fact", "name": f"Ana and {WORD}"}
            )
        )
        unwrap(await store.delete_recall_sources([item.id, node.id]))
        return [item.id, node.id]

    sources = asyncio.run(_on_store(config, write))

    async def kinds(store: Any) -> set[str]:
        hits = unwrap(await store.recall_keyword(WORD, filter={"user_id": "ana"}, limit=100))
        return {h.record.kind for h in hits if h.record.source_id in sources}

    assert asyncio.run(_on_store(config, kinds)) == set()
    code, out, err = _run(capsys, "reindex", "--config", str(config), "--json")
    assert code == 0, err
    assert json.loads(out)["records_written"] == 2 + 2
    assert asyncio.run(_on_store(config, kinds)) == {"item", "graph_fact"}


def _stale_sources(config: Path) -> dict[str, str]:
    """Sources deleted by writers that kept no index, their records left behind: a thread and
    an item deleted by an older program (its rows deleted in SQL), a graph node and a memory
    file whose records a restored backup brought back. Their record ids, by what they were."""
    from cogitator_memory.files.service import MemoryFiles
    from cogitator_memory.items.service import MemoryItems

    scope = {"agent_id": "assistant", "user_id": "ana"}

    async def work(store: Any) -> dict[str, str]:
        items = MemoryItems(adapter=store)
        item = await items.add(
            {"kind": "fact", "subject": "ana", "attribute": "allergy", "value": WORD, "trust": "user", "scope": scope}
        )
        await items.activate([item.id])
        node = unwrap(await store.add_node({"scope": scope, "type": "fact", "name": f"Ana and {WORD}"}))
        files = MemoryFiles(adapter=store)
        await files.run({"scope": scope}, {"command": "create", "path": "/memories/a.md", "file_text": WORD})
        [section] = [
            h.record for h in unwrap(await store.recall_keyword(WORD, filter={"kinds": ["file_section"]}, limit=10))
        ]
        node_record = unwrap(await store.get_recall_records([f"graph_fact:{node.id}"]))
        unwrap(await store.delete_nodes([node.id]))
        await files.run({"scope": scope}, {"command": "delete", "path": "/memories/a.md"})
        unwrap(await store.index_recall_records([*node_record, section]))  # the backup's records
        return {"thread": "t00", "item": f"item:{item.id}", "node": node_record[0].id, "file": section.id}

    stale: dict[str, str] = asyncio.run(_on_store(config, work))
    with sqlite3.connect(config.parent / "reindex.db") as db:  # a program that keeps no index
        db.execute("DELETE FROM entries WHERE thread_id = 't00'")
        db.execute("DELETE FROM threads WHERE id = 't00'")
        db.execute("DELETE FROM memory_items WHERE id = ?", (stale["item"].split(":", 1)[1],))
    return stale


def test_reindex_removes_the_records_of_sources_gone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, _ = _config(tmp_path, "sqlite")
    _seed(config, 3)
    assert _run(capsys, "reindex", "--config", str(config), "--json")[0] == 0
    stale = _stale_sources(config)

    async def held(store: Any) -> set[str]:
        hits = unwrap(await store.recall_keyword(WORD, filter={"user_id": "ana"}, limit=100))
        return {h.record.thread_id or h.record.id for h in hits}

    before = asyncio.run(_on_store(config, held))
    assert {"t00", stale["item"], stale["node"], stale["file"]} <= before, "the stale records are found"
    code, out, err = _run(capsys, "reindex", "--config", str(config), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["threads_checked"] == 2 and report["records_removed"] == 2 + 3, report
    assert asyncio.run(_on_store(config, held)) == {"t01", "t02"}, "only the turns of the threads still held"
    code, out, _ = _run(capsys, "reindex", "--db", str(tmp_path / "reindex.db"))
    assert code == 0 and "4 records written, 0 removed (their source was gone)." in out


def test_a_reindex_stopped_while_removing_goes_on_removing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = _config(tmp_path, "sqlite")
    _seed(config, 4)
    _stale_sources(config)
    monkeypatch.setattr(indexer_module, "PRUNE_PAGE", 2)
    real = SQLiteAdapter.prune_recall_records
    pages: list[str | None] = []

    async def prune(self: Any, *, cursor: str | None = None, limit: int = 500) -> Any:
        if len(pages) == 2:
            raise KeyboardInterrupt
        pages.append(cursor)
        return await real(self, cursor=cursor, limit=limit)

    monkeypatch.setattr(SQLiteAdapter, "prune_recall_records", prune)
    code, out, err = _run(capsys, "reindex", "--config", str(config), "--json")
    # by id, the first two pages hold the file's, the node's and the item's records, and a turn's
    assert code == 130 and "interrupted after 3 threads (6 records, 3 removed): run " in err, err
    monkeypatch.setattr(SQLiteAdapter, "prune_recall_records", real)
    code, out, err = _run(capsys, "reindex", "--config", str(config), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["resumed"] and report["threads_checked"] == 0, "the threads were done: it goes on removing"
    assert (report["records_checked"], report["records_removed"]) == (6 + 3 - 4, 0), report
    code, out, err = _run(capsys, "reindex", "--config", str(config), "--json")
    report = json.loads(out)
    assert (report["threads_checked"], report["records_removed"], report["resumed"]) == (3, 0, False), report


def test_a_reindex_stopped_after_its_threads_goes_on_with_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = _config(tmp_path, "sqlite")
    _seed(config, 3)
    stale = _stale_sources(config)
    real = RecallIndexer._index_sources

    async def stop(self: RecallIndexer, agents: list[str]) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(RecallIndexer, "_index_sources", stop)
    code, _, err = _run(capsys, "reindex", "--config", str(config))
    assert code == 130 and "interrupted after 2 threads (4 records)" in err, err
    monkeypatch.setattr(RecallIndexer, "_index_sources", real)
    code, out, err = _run(capsys, "reindex", "--config", str(config), "--json", "--progress")
    assert code == 0, err
    report = json.loads(out)
    assert report["resumed"] and report["threads_checked"] == 0, "the threads are not read again"
    assert (report["records_checked"], report["records_removed"]) == (4 + 3, 3), report
    assert "removing the records of sources gone (resumed): 7 records checked, done in " in err, err

    async def left(store: Any) -> list[str]:
        return [r.id for r in unwrap(await store.get_recall_records(list(stale.values())[1:]))]

    assert asyncio.run(_on_store(config, left)) == []


def test_a_stopped_reindex_goes_on_from_where_it_stopped(
    engine_config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(indexer_module, "THREAD_PAGE", 2)
    _seed(engine_config)
    first = _interrupt_at(monkeypatch, 6)  # in the third page: two pages (4 threads) are done
    code, out, err = _run(capsys, "reindex", "--config", str(engine_config), "--json")
    assert code == 130 and out == ""
    assert err.startswith(PREFIX + "interrupted after 4 threads (8 records)") and err.count("\n") == 1, err
    assert "run 'cogitator-memory reindex' again" in err and "Traceback" not in err
    assert len(first) == 5
    second = _interrupt_at(monkeypatch, 0)  # never: only records what is indexed
    code, out, err = _run(capsys, "reindex", "--config", str(engine_config), "--json", "--progress")
    assert code == 0, err
    assert "reindexing (resumed): 3/3 threads (100%), done in " in err, "the progress counts what is left"
    report = json.loads(out)
    assert report == {
        "threads_checked": 3,
        "threads_indexed": 3,
        "records_written": 6,
        "records_checked": 2 * THREADS,
        "records_removed": 0,
        "resumed": True,
    }
    assert second[0] == first[4], "it goes on from the page it stopped in"
    assert set(first[:4]).isdisjoint(second), "the pages done before the stop are not written again"
    assert set(first) | set(second) == {f"t{n:02d}" for n in range(THREADS)}
    assert _index_of(engine_config)[0] == 2 * THREADS
    second.clear()
    code, out, _ = _run(capsys, "reindex", "--config", str(engine_config), "--json")
    assert json.loads(out)["threads_checked"] == THREADS and not json.loads(out)["resumed"], (
        "a finished run starts over"
    )


def test_restart_begins_at_the_first_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = _config(tmp_path, "sqlite")
    monkeypatch.setattr(indexer_module, "THREAD_PAGE", 2)
    _seed(config)
    _interrupt_at(monkeypatch, 4)
    db = str(tmp_path / "reindex.db")
    assert _run(capsys, "reindex", "--db", db)[0] == 130
    monkeypatch.setattr(RecallIndexer, "resync_thread", ORIGINAL_RESYNC)
    code, out, err = _run(capsys, "reindex", "--db", db, "--restart", "--json")
    assert code == 0, err
    assert json.loads(out)["threads_checked"] == THREADS and not json.loads(out)["resumed"]


def test_a_store_without_a_recall_index_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cogitator_memory.cli import reindex as reindex_module

    config, _ = _config(tmp_path, "sqlite")
    _seed(config, 1)
    monkeypatch.setattr(reindex_module, "is_recall_index", lambda store: False)
    code, out, err = _run(capsys, "reindex", "--config", str(config))
    assert code == 1 and out == ""
    assert err == f"{PREFIX}{tmp_path / 'reindex.db'} keeps no recall index (CliStore): there is nothing to reindex\n"


def test_the_default_store_and_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "reindex")
    assert code == 1 and "no database at" in err and str(tmp_path / "home" / "memory.db") in err
    assert not (tmp_path / "home" / "memory.db").exists(), "reindex never creates a store"


# --- a real process: Ctrl-C and kill -----------------------------------------------------------

#: The command line in a child whose reindex reads small pages and takes a while on each thread.
_SLOW_CHILD = """
import asyncio, sys
from cogitator_memory.index import indexer
indexer.THREAD_PAGE = 10
real = indexer.RecallIndexer.resync_thread
async def slow(self, thread, *, force=False):
    await asyncio.sleep(0.005)
    return await real(self, thread, force=force)
indexer.RecallIndexer.resync_thread = slow
from cogitator_memory.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _interruptible() -> None:
    """In the child: SIGINT as a terminal delivers it (a background shell may have it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_slow_reindex(db: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _SLOW_CHILD, "reindex", "--db", str(db), "--progress"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        preexec_fn=_interruptible,
    )


def _wait_mid_reindex(process: subprocess.Popen[str], total: int) -> None:
    """Read the progress lines until some threads are done (and not all)."""
    assert process.stderr is not None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        found = re.match(r"reindexing: ([\d,]+)/([\d,]+) threads", line)
        if found and found.group(2) == f"{total:,}" and 0 < int(found.group(1).replace(",", "")) < total:
            return
    raise AssertionError(f"the reindex never reported progress part way (exit {process.poll()})")


@pytest.mark.parametrize("stop", ["ctrl-c", "kill"])
def test_a_reindex_stopped_in_a_real_process_goes_on_when_run_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], stop: str
) -> None:
    total = 400
    config, _ = _config(tmp_path, "sqlite")
    _seed(config, total)
    db = tmp_path / "reindex.db"
    process = _start_slow_reindex(db)
    _wait_mid_reindex(process, total)
    if stop == "ctrl-c":
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 130, err
        assert f"{PREFIX}interrupted after " in err and "again to go on from where it stopped" in err
        assert "Traceback" not in err
    else:
        process.kill()
        process.communicate(timeout=60)
        assert process.returncode == -signal.SIGKILL
    code, out, err = _run(capsys, "reindex", "--db", str(db), "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["resumed"] and 0 < report["threads_checked"] < total - 10, report
    assert _index_of(config) == (2 * total, {f"t{n:02d}" for n in range(total)}), "every thread is indexed once"


# --- import indexes what it writes --------------------------------------------------------------


def test_an_imported_export_is_searchable_without_a_reindex(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An exported thread keeps its old update time, which a catch-up (threads updated since its
    last pass) never looks at: the import indexes the thread itself."""
    from datetime import UTC, datetime

    from cogitator_memory import SQLiteAdapter, frozen_clock
    from cogitator_memory.runtime.memory import Memory

    db, source = tmp_path / "memory.db", tmp_path / "source.db"
    config = {"adapter": "sqlite", "path": str(db), "embedding": {"provider": "none"}}

    async def search() -> list[str]:
        async with Memory(config) as memory:
            return [hit.text for hit in await memory.search("walruses", user_id="ana", agent_id="assistant")]

    async def write_source() -> None:
        async with SQLiteAdapter(path=str(source)) as store, Memory(config) as memory:
            await memory.add([{"role": "user", "content": "hello"}], user_id="ana")
            with frozen_clock(datetime(2025, 1, 1, tzinfo=UTC)):
                unwrap(await store.create_thread("assistant", {"user_id": "ana"}, "old"))
                for text in ("My walrus is called Bob.", "And a second walrus, Rita."):
                    unwrap(await store.add_entry({"thread_id": "old", "message": {"role": "user", "content": text}}))

    asyncio.run(write_source())
    assert asyncio.run(search()) == [], "the memory has caught up once: its watermark is now"
    assert _run(capsys, "export", "old", "--db", str(source), "--out", str(tmp_path / "old.json"))[0] == 0
    code, _, err = _run(capsys, "import", str(tmp_path / "old.json"), "--db", str(db))
    assert code == 0, err
    assert sorted(asyncio.run(search())) == ["And a second walrus, Rita.", "My walrus is called Bob."]
    code, _, err = _run(capsys, "import", str(tmp_path / "old.json"), "--db", str(db), "--thread", "old")
    assert code == 0, err

    async def held() -> int:
        async with SQLiteAdapter(path=str(db)) as store:
            count: int = unwrap(await store.count_recall_records(filter={"thread_id": "old"}))
            return count

    assert asyncio.run(held()) == 4, "entries appended to a thread are indexed too"
