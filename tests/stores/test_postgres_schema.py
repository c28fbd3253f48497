"""The Postgres schema versions: each named migration from the version before, no DDL when up to
date, concurrent first connects that do not race, and a newer schema refused."""

from __future__ import annotations

import asyncio
import secrets
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from cogitator_memory import unwrap
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.engines.postgres.schema import (
    ADVISORY_LOCK_CLASS,
    MIGRATIONS,
    SCHEMA_VERSION,
    applied_migrations,
    check_schema_name,
    migrate,
    quote_ident,
    schema_version,
)
from cogitator_memory.testing import service_url


async def connect(url: str) -> psycopg.AsyncConnection:
    return await psycopg.AsyncConnection.connect(url, autocommit=True)


def test_migrations_are_named_and_numbered() -> None:
    assert [m.version for m in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert [m.name for m in MIGRATIONS][:4] == ["m001_initial", "m002_trees", "m003_memory_items", "m004_memory_files"]
    assert all(m.name.startswith(f"m{m.version:03d}_") for m in MIGRATIONS)
    assert MIGRATIONS[-1].version == SCHEMA_VERSION
    assert quote_ident('a"b') == '"a""b"'
    assert MIGRATIONS[0].sql("x")[0].startswith('CREATE TABLE "x".threads')
    with pytest.raises(ValueError, match="schema"):
        check_schema_name("1abc")


async def test_m001_initial_from_an_empty_database(pg_url: str, schema: str) -> None:
    async with await connect(pg_url) as conn:
        assert await schema_version(conn, schema) == 0
        assert await migrate(conn, schema, MIGRATIONS[:1]) == (0, 1)
        assert await applied_migrations(conn, schema) == [(1, "m001_initial")]
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s ORDER BY 1", (schema,)
        )
        assert [r[0] for r in await cur.fetchall()] == ["cogitator_schema_migrations", "entries", "threads"]


async def test_m002_trees_chains_entries_written_before_trees(pg_url: str, schema: str) -> None:
    s = quote_ident(schema)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    async with await connect(pg_url) as conn:
        await migrate(conn, schema, MIGRATIONS[:1])
        for tid in ("thread_a", "thread_b", "thread_empty"):
            await conn.execute(
                f"INSERT INTO {s}.threads (id, agent_id, metadata, created_at, updated_at)"
                " VALUES (%s, 'agent', '{}', %s, %s)",
                (tid, t0, t0),
            )
        # same created_at on purpose: the order is seq, not time
        for tid, n in (("thread_a", 3), ("thread_b", 2)):
            for seq in range(1, n + 1):
                await conn.execute(
                    f"INSERT INTO {s}.entries (id, thread_id, seq, type, content, created_at)"
                    " VALUES (%s, %s, %s, 'message', %s::jsonb, %s)",
                    (
                        f"{tid}_e{seq}",
                        tid,
                        seq,
                        f'{{"type":"message","token_count":1,"message":{{"role":"user","content":"{tid} {seq}"}}}}',
                        t0 + timedelta(seconds=10 - seq),
                    ),
                )
    async with PostgresAdapter(url=pg_url, schema=schema) as memory:
        async with await connect(pg_url) as conn:
            assert await applied_migrations(conn, schema) == [(m.version, m.name) for m in MIGRATIONS]
        a = unwrap(await memory.get_thread("thread_a"))
        assert a is not None and a.active_leaf_id == "thread_a_e3"
        path = unwrap(await memory.get_path(thread_id="thread_a"))
        assert [e.id for e in path] == ["thread_a_e1", "thread_a_e2", "thread_a_e3"]
        assert [e.parent_id for e in path] == [None, "thread_a_e1", "thread_a_e2"]
        b_path = unwrap(await memory.get_path(thread_id="thread_b"))
        assert [e.id for e in b_path] == ["thread_b_e1", "thread_b_e2"]
        empty = unwrap(await memory.get_thread("thread_empty"))
        assert empty is not None and empty.active_leaf_id is None
        # the next entry continues the chain with the next seq
        added = unwrap(await memory.add_entry({"thread_id": "thread_a", "message": {"role": "user", "content": "4"}}))
        assert (added.seq, added.parent_id) == (4, "thread_a_e3")
        first = unwrap(
            await memory.add_entry({"thread_id": "thread_empty", "message": {"role": "user", "content": "1"}})
        )
        assert (first.seq, first.parent_id) == (1, None)


async def test_connect_when_up_to_date_changes_nothing(pg_url: str, schema: str) -> None:
    async with PostgresAdapter(url=pg_url, schema=schema):
        pass
    async with await connect(pg_url) as conn:
        cur = await conn.execute(
            f"SELECT version, name, applied_at FROM {quote_ident(schema)}.cogitator_schema_migrations"
        )
        before = await cur.fetchall()
    # hold the migration lock: a connect that wanted to migrate would wait on it and time out
    async with await connect(pg_url) as holder, holder.transaction():
        await holder.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (ADVISORY_LOCK_CLASS, schema))
        memory = PostgresAdapter(url=pg_url, schema=schema, command_timeout=2)
        result = await memory.connect()
        assert result.success, result.error
        await memory.disconnect()
    async with await connect(pg_url) as conn:
        cur = await conn.execute(
            f"SELECT version, name, applied_at FROM {quote_ident(schema)}.cogitator_schema_migrations"
        )
        assert await cur.fetchall() == before


async def test_a_pending_upgrade_waits_for_the_lock(pg_url: str, schema: str) -> None:
    async with await connect(pg_url) as conn:
        await migrate(conn, schema, MIGRATIONS[:1])
    async with await connect(pg_url) as holder:
        async with holder.transaction():
            await holder.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (ADVISORY_LOCK_CLASS, schema))
            memory = PostgresAdapter(url=pg_url, schema=schema)
            pending = asyncio.ensure_future(memory.connect())
            await asyncio.sleep(0.5)
            assert not pending.done(), "the upgrade must wait for the lock another process holds"
        result = await asyncio.wait_for(pending, 10)
        assert result.success, result.error
        await memory.disconnect()
    async with await connect(pg_url) as conn:
        assert await schema_version(conn, schema) == SCHEMA_VERSION


async def test_concurrent_first_connects_in_one_process(pg_url: str, schema: str) -> None:
    stores = [PostgresAdapter(url=pg_url, schema=schema, pool_size=2) for _ in range(8)]
    results = await asyncio.gather(*(s.connect() for s in stores))
    assert all(r.success for r in results), [r.error for r in results if not r.success]
    threads = await asyncio.gather(*(s.create_thread(f"agent-{i}") for i, s in enumerate(stores)))
    assert all(t.success for t in threads)
    for s in stores:
        await s.disconnect()
    async with await connect(pg_url) as conn:
        assert await applied_migrations(conn, schema) == [(m.version, m.name) for m in MIGRATIONS]


def test_two_processes_connecting_to_a_new_database_do_not_race() -> None:
    """Four processes connect at once to a database that has nothing yet (no pgvector, no
    tables): each succeeds, the migrations run once, the extension and tables are made once."""
    admin = service_url("COGMEM_TEST_POSTGRES_URL")
    database = f"cogmem_pgtest_{secrets.token_hex(4)}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    url = make_conninfo(admin, dbname=database)
    script = textwrap.dedent(
        """
        import asyncio, sys
        from cogitator_memory import unwrap
        from cogitator_memory.engines.postgres.adapter import PostgresAdapter

        async def main():
            async with PostgresAdapter(url=sys.argv[1], schema="app", pool_size=1, dimensions=8) as memory:
                thread = unwrap(await memory.create_thread("agent"))
                unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "hi"}}))
                assert memory.vector_status()["available"], memory.vector_status()
            print("ok")

        asyncio.run(main())
        """
    )
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", script, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(4)
        ]
        outputs = [p.communicate(timeout=60) for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0, 0], [err for _, err in outputs]
        assert all(out.strip() == "ok" for out, _ in outputs)
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT version, name FROM app.cogitator_schema_migrations ORDER BY version").fetchall()
            assert rows == [(m.version, m.name) for m in MIGRATIONS]
            assert conn.execute("SELECT count(*) FROM app.entries").fetchone() == (4,)
            assert conn.execute("SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone() == (1,)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


async def test_a_newer_schema_is_refused(pg_url: str, schema: str) -> None:
    async with PostgresAdapter(url=pg_url, schema=schema):
        pass
    async with await connect(pg_url) as conn:
        await conn.execute(
            f"INSERT INTO {quote_ident(schema)}.cogitator_schema_migrations (version, name) VALUES (99, 'm099_future')"
        )
    memory = PostgresAdapter(url=pg_url, schema=schema)
    result = await memory.connect()
    assert not result.success
    assert "version 99" in (result.error or "") and "upgrade" in (result.error or "")
    assert not memory.connected


async def test_m010_recall_terms_text_keeps_every_record_searchable(pg_url: str, schema: str) -> None:
    """Records written as m009 kept them (terms a ``text[]``) are read, searched and deleted the
    same after m010 makes the terms one text."""
    from cogitator_memory.index.terms import recall_terms

    s = quote_ident(schema)
    said = datetime(2026, 1, 1, tzinfo=UTC)
    terms = recall_terms("I'm allergic to peanuts.")
    async with await connect(pg_url) as conn:
        await migrate(conn, schema, MIGRATIONS[:9])
        cur = await conn.execute(
            f"INSERT INTO {s}.recall_records (id, kind, agent_id, user_id, thread_id, status, said_at, term_count,"
            " terms, body) VALUES ('turn:e1', 'turn', 'a', 'ana', 't1', 'active', %s, %s, %s::text[], %s) RETURNING rid",
            (said, len(terms), terms, '{"source_id":"e1","role":"user","seq":1,"text":"I\'m allergic to peanuts."}'),
        )
        row = await cur.fetchone()
        assert row is not None
        for term in sorted(set(terms)):
            await conn.execute(
                f"INSERT INTO {s}.recall_terms (term, rid, tf, len) VALUES (%s, %s, %s, %s)",
                (term, row[0], terms.count(term), len(terms)),
            )
            await conn.execute(f"INSERT INTO {s}.recall_df (term, df) VALUES (%s, 1)", (term,))
        await conn.execute(f"UPDATE {s}.recall_stats SET records = 1, total = %s", (len(terms),))
    async with PostgresAdapter(url=pg_url, schema=schema) as memory:
        async with await connect(pg_url) as conn:
            assert (10, "m010_recall_terms_text") in await applied_migrations(conn, schema)
            cur = await conn.execute(
                "SELECT data_type FROM information_schema.columns"
                " WHERE table_schema = %s AND table_name = 'recall_records' AND column_name = 'terms'",
                (schema,),
            )
            assert await cur.fetchone() == ("text",)
        [record] = unwrap(await memory.get_recall_records(["turn:e1"]))
        assert record.terms == terms and record.text == "I'm allergic to peanuts." and record.said_at == said
        found = unwrap(await memory.recall_keyword("allergies", filter={"user_id": "ana"}))
        assert [c.record.id for c in found] == ["turn:e1"]
        assert unwrap(await memory.delete_recall_records(["turn:e1"])) == 1
        async with await connect(pg_url) as conn:
            cur = await conn.execute(f"SELECT count(*) FROM {s}.recall_terms")
            assert await cur.fetchone() == (0,), "the record's postings went with it"
            # a schema whose record of m010 was lost runs it again, changing nothing
            await conn.execute(f"DELETE FROM {s}.cogitator_schema_migrations WHERE version = 10")
    async with PostgresAdapter(url=pg_url, schema=schema) as memory:
        unwrap(await memory.index_recall_records([record]))
        assert [c.record.id for c in unwrap(await memory.recall_keyword("peanut"))] == ["turn:e1"]


async def test_m012_recall_not_turns_from_version_11_and_again(pg_url: str, schema: str) -> None:
    """A schema at version 11 gains the partial index of the records that are not turns on
    connect, a schema whose records from m012 on were lost builds it again, and a search of items
    finds them through it."""
    s = quote_ident(schema)
    async with await connect(pg_url) as conn:
        await migrate(conn, schema, MIGRATIONS[:11])
    async with PostgresAdapter(url=pg_url, schema=schema):
        pass  # connect() migrates to the newest version
    async with await connect(pg_url) as conn:
        assert (12, "m012_recall_not_turns") in await applied_migrations(conn, schema)
        await conn.execute(f"DROP INDEX {s}.recall_not_turns")
        await conn.execute(f"DELETE FROM {s}.cogitator_schema_migrations WHERE version >= 12")
    said = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        {"kind": kind, "source_id": f"{kind}{n}", "text": f"peanut note {n}", "said_at": said, "agent_id": "a"}
        for kind in ("turn", "item")
        for n in range(3)
    ]
    async with PostgresAdapter(url=pg_url, schema=schema) as memory:
        unwrap(await memory.index_recall_records(rows))
        async with await connect(pg_url) as conn:
            cur = await conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'recall_not_turns'", (schema,)
            )
            row = await cur.fetchone()
            assert row is not None and "WHERE (kind <> 'turn'::text)" in row[0]
        found = unwrap(await memory.recall_keyword("peanut", filter={"kinds": ["item"]}))
        assert sorted(c.record.source_id for c in found) == ["item0", "item1", "item2"]
        assert len(unwrap(await memory.recall_keyword("peanut"))) == 6


async def test_m013_items_by_start_from_version_12(pg_url: str, schema: str) -> None:
    """A schema at version 12 with items gains the index of items by scope, kind and start on
    connect, and the latest started items of a scope are read by walking it, not by sorting."""
    from cogitator_memory.engines.postgres.items import _query_sql
    from cogitator_memory.items.records import check_filter

    s = quote_ident(schema)
    scope = {"agent_id": "a", "user_id": "u"}
    async with await connect(pg_url) as conn:
        await migrate(conn, schema, MIGRATIONS[:12])
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
    async with PostgresAdapter(url=pg_url, schema=schema) as memory:
        unwrap(await memory.add_items(rows))
        latest = unwrap(await memory.query_items({"visible_to": scope, "order": "start", "limit": 3}))
        assert [i.id for i in latest] == ["mem_002", "mem_001", "mem_000"]
        sql, params = _query_sql(f"{s}.memory_items", check_filter({"visible_to": scope, "order": "start", "limit": 3}))
    async with await connect(pg_url) as conn:
        assert (13, "m013_items_by_start") in await applied_migrations(conn, schema)
        await conn.execute("SET enable_seqscan = off")
        cur = await conn.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in await cur.fetchall())
        assert "memory_items_by_start" in plan, plan


async def test_an_upgrade_may_take_longer_than_a_command(pg_url: str, schema: str) -> None:
    # a migration runs once and may rewrite a whole table: its deadline is MIGRATION_TIMEOUT, not
    # command_timeout (here it waits a second for another process's lock, past the 0.3 s of a call)
    async with await connect(pg_url) as conn:
        await migrate(conn, schema, MIGRATIONS[:1])
    memory = PostgresAdapter(url=pg_url, schema=schema, command_timeout=0.3)
    async with await connect(pg_url) as holder:
        async with holder.transaction():
            await holder.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (ADVISORY_LOCK_CLASS, schema))
            pending = asyncio.ensure_future(memory.connect())
            await asyncio.sleep(1.0)
            assert not pending.done()
        result = await pending
    try:
        assert result.success, result.error
        async with await connect(pg_url) as conn:
            assert await schema_version(conn, schema) == SCHEMA_VERSION
    finally:
        await memory.disconnect()
