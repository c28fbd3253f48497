"""PostgresAdapter: the conformance suite on a fresh schema per test, plus what only Postgres has.

Runs against ``COGMEM_TEST_POSTGRES_URL`` (``scripts/services.sh`` starts one on :5433).
"""

from __future__ import annotations

import asyncio
import re
import runpy
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import psycopg
import pytest

from cogitator_memory import unwrap
from cogitator_memory.engines.factory import create_memory_adapter
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.testing import ConformanceCase, memory_adapter_conformance_cases

CASES = memory_adapter_conformance_cases()


@pytest.fixture
async def store(pg_url: str, schema: str) -> AsyncIterator[PostgresAdapter]:
    async with PostgresAdapter(connection_string=pg_url, schema=schema, pool_size=5, dimensions=8) as memory:
        yield memory


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_conformance(case: ConformanceCase, store: PostgresAdapter) -> None:
    await case.run(store)


# --- beyond the suite -----------------------------------------------------------------------


async def test_twenty_concurrent_adds_on_one_thread_leave_a_chain(store: PostgresAdapter) -> None:
    thread = unwrap(await store.create_thread("agent"))
    results = await asyncio.gather(
        *(store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": f"m{i}"}}) for i in range(20))
    )
    assert all(r.success for r in results), [r.error for r in results if not r.success]
    entries = unwrap(await store.get_entries(thread_id=thread.id))
    assert sorted(e.seq for e in entries) == list(range(1, 21))
    by_seq = sorted(entries, key=lambda e: e.seq)
    # every add appended after the leaf the previous one left: one chain in seq order
    assert by_seq[0].parent_id is None
    assert [e.parent_id for e in by_seq[1:]] == [e.id for e in by_seq[:-1]]
    after = unwrap(await store.get_thread(thread.id))
    assert after is not None and after.active_leaf_id == by_seq[-1].id
    path = unwrap(await store.get_path(thread_id=thread.id))
    assert [e.id for e in path] == [e.id for e in by_seq]


async def test_stored_as_jsonb_columns(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    thread = unwrap(await store.create_thread("agent", {"k": [1, "two"]}))
    entry = unwrap(
        await store.add_entry(
            {
                "thread_id": thread.id,
                "message": {
                    "role": "assistant",
                    "content": "calling",
                    "tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": "x"}}],
                },
                "tool_results": [{"call_id": "c1", "result": {"ok": True}}],
                "metadata": {"source": "test"},
            }
        )
    )
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        cur = await conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns"
            " WHERE table_schema = %s AND data_type = 'jsonb' ORDER BY 1, 2",
            (schema,),
        )
        assert await cur.fetchall() == [("embeddings", "metadata"), ("entries", "content"), ("threads", "metadata")]
        cur = await conn.execute(
            f"SELECT content->'message'->'tool_calls'->0->>'name', content->'metadata'->>'source',"
            f" jsonb_typeof(content->'tool_results') FROM \"{schema}\".entries WHERE id = %s",
            (entry.id,),
        )
        assert await cur.fetchone() == ("lookup", "test", "array")


async def test_get_path_reads_only_the_branch(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    thread = unwrap(await store.create_thread("agent"))
    ids = []
    for i in range(30):
        ids.append(
            unwrap(await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": str(i)}})).id
        )
    # a side branch off entry 10 that the path must not read
    side = unwrap(
        await store.add_entry(
            {
                "thread_id": thread.id,
                "parent_id": ids[9],
                "activate": False,
                "message": {"role": "user", "content": "side"},
            }
        )
    )
    path = unwrap(await store.get_path(thread_id=thread.id, limit=5))
    assert [e.message.content for e in path if e.message] == ["25", "26", "27", "28", "29"]
    side_path = unwrap(await store.get_path(thread_id=thread.id, leaf_id=side.id))
    assert [e.message.content for e in side_path if e.message] == [*map(str, range(10)), "side"]
    # the plan walks parent links: the recursive part probes the primary key, never scans entries
    sql = store._sql.path(by_leaf=False, typed=True, before=False, limited=True)
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        await conn.execute("SET enable_seqscan = off")
        cur = await conn.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + sql,
            {"tid": thread.id, "types": ["message"], "limit": 5, "leaf": None, "before": None},
        )
        row = await cur.fetchone()
        assert row is not None
        plan = row[0][0]["Plan"]

    def walk(node: dict) -> list[dict]:
        return [node, *(n for child in node.get("Plans", []) for n in walk(child))]

    scans = [n for n in walk(plan) if n.get("Relation Name") == "entries"]
    assert scans and all(n["Node Type"] in ("Index Scan", "Index Only Scan") for n in scans)
    # the recursion stopped at the limit: at most limit (+ the anchor) rows fetched per scan
    assert max(n["Actual Rows"] * n.get("Actual Loops", 1) for n in scans) <= 6


def test_options_are_checked() -> None:
    with pytest.raises(InvalidArgumentError, match="connection_string"):
        PostgresAdapter()
    with pytest.raises(InvalidArgumentError, match="schema"):
        PostgresAdapter(url="postgresql://x/y", schema="bad name; drop")
    with pytest.raises(InvalidArgumentError, match="pool_size"):
        PostgresAdapter(url="postgresql://x/y", pool_size=0)
    with pytest.raises(InvalidArgumentError, match="provider"):
        PostgresAdapter(url="postgresql://x/y", provider="redis")
    with pytest.raises(InvalidArgumentError, match="command_timeout"):
        PostgresAdapter(url="postgresql://x/y", command_timeout=0)


async def test_factory_builds_it(pg_url: str, schema: str) -> None:
    memory = create_memory_adapter(
        {"provider": "postgres", "connection_string": pg_url, "schema": schema, "pool_size": 3}
    )
    assert isinstance(memory, PostgresAdapter)
    assert memory.pool_size == 3 and memory.schema == schema
    async with memory:
        thread = unwrap(await memory.create_thread("agent"))
        assert unwrap(await memory.get_thread(thread.id)) == thread
    by_url = create_memory_adapter({"provider": "postgres", "url": pg_url})
    assert isinstance(by_url, PostgresAdapter) and by_url.schema == "public" and by_url.pool_size == 10


async def test_calls_before_connect_fail_named(pg_url: str) -> None:
    memory = PostgresAdapter(url=pg_url)
    result = await memory.get_thread("t")
    assert not result.success and "connect" in (result.error or "")


async def test_unreachable_server_fails_connect_fast() -> None:
    memory = PostgresAdapter(url="postgresql://postgres@127.0.0.1:1/postgres", connect_timeout=2)
    started = asyncio.get_running_loop().time()
    result = await memory.connect()
    assert not result.success
    assert "refused" in (result.error or "").lower() or "connect" in (result.error or "").lower()
    assert asyncio.get_running_loop().time() - started < 5
    assert not memory.connected


async def test_text_postgres_cannot_store_is_refused_by_name(store: PostgresAdapter) -> None:
    thread = unwrap(await store.create_thread("agent"))
    bad = await store.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "nul \x00 here"}})
    assert not bad.success and bad.error_type is InvalidArgumentError
    assert "'entry'" in (bad.error or "")
    meta = await store.create_thread("agent", {"k": "a\x00b"})
    assert not meta.success and "'metadata'" in (meta.error or "")
    assert unwrap(await store.get_entries(thread_id=thread.id)) == []
    assert len(unwrap(await store.list_threads()).threads) == 1


def test_the_docs_example_runs(pg_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "postgres.md"
    blocks = [b for b in re.findall(r"```python\n(.*?)```", page.read_text(), re.S) if "asyncio.run(" in b]
    assert blocks
    monkeypatch.setenv("DATABASE_URL", pg_url)
    for i, block in enumerate(blocks):
        script = tmp_path / f"example_{i}.py"
        script.write_text(block)
        runpy.run_path(str(script), run_name="__main__")


def test_a_missing_driver_fails_connect_with_the_pip_command() -> None:
    script = (
        "import asyncio, sys\n"
        "sys.modules['psycopg'] = None  # as if psycopg were not installed\n"
        "from cogitator_memory.engines.postgres.adapter import PostgresAdapter\n"
        "result = asyncio.run(PostgresAdapter(url='postgresql://x/y').connect())\n"
        "print(result.success, result.error_type.__name__, result.error)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.startswith("False MissingDriverError")
    assert 'pip install "cogitator-memory[postgres]"' in out.stdout


async def test_parent_links_that_loop_are_reported_not_walked_forever(pg_url: str, schema: str) -> None:
    # Without a bound the recursive walk runs until the call's deadline (5 s here) and fails as a timeout.
    async with PostgresAdapter(connection_string=pg_url, schema=schema, pool_size=2, command_timeout=5) as memory:
        thread = unwrap(await memory.create_thread("agent", None, "loop"))
        ids = [
            unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": t}})).id
            for t in ("a", "b", "c")
        ]
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
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
            await conn.execute(f'UPDATE "{schema}".entries SET parent_id = %s WHERE id = %s', (ids[2], ids[0]))
        calls = {
            "get_path": (lambda: memory.get_path(thread_id="loop"), ids[2]),
            "get_path_filtered": (lambda: memory.get_path(thread_id="loop", types=["label"], limit=5), ids[2]),
            "get_path_from": (lambda: memory.get_path(thread_id="loop", leaf_id=ids[1]), ids[1]),
            "rewind": (lambda: memory.rewind("loop", aside.id), ids[2]),
            "fork_thread": (lambda: memory.fork_thread("loop", ids[1]), ids[1]),
        }
        for name, (call, start) in calls.items():
            result = await asyncio.wait_for(call(), timeout=20)
            assert not result.success, f"{name} walked parent links that loop"
            assert result.error_type is not None and result.error_type.__name__ == "StoreUnavailableError"
            assert "thread loop is damaged" in (result.error or ""), (name, result.error)
            assert start in (result.error or ""), (name, result.error)
        assert unwrap(await memory.get_path(thread_id="loop", leaf_id=aside.id, limit=1))[0].id == aside.id
