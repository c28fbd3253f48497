"""The recall-index conformance suite on PostgresAdapter (a fresh schema per test), plus what only
PostgreSQL shows: the counters and term frequencies stay exact under racing writers, searches
are served by the index's own indexes, and a schema at version 8 gains the index on connect."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from cogitator_memory import unwrap
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.engines.postgres.recall import _keyword_sql, _time_sql, scope_where
from cogitator_memory.engines.postgres.schema import MIGRATIONS, applied_migrations, migrate, quote_ident
from cogitator_memory.index.records import RecallFilter
from cogitator_memory.testing import postgres_database
from cogitator_memory.testing.recall_index import RecallIndexConformanceCase, recall_index_conformance_cases

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A database of the module's own on the test server (``COGMEM_TEST_POSTGRES_URL``), dropped at the end."""
    with postgres_database("cogmem_recall") as url:
        yield url


@pytest.fixture
def schema(pg_url: str) -> Iterator[str]:
    """A schema name no other test uses, dropped with everything in it after the test."""
    import psycopg

    name = f"cogmem_r_{secrets.token_hex(6)}"
    yield name
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture
async def store(pg_url: str, schema: str) -> AsyncIterator[PostgresAdapter]:
    async with PostgresAdapter(connection_string=pg_url, schema=schema, pool_size=5, dimensions=8) as memory:
        yield memory


@pytest.mark.parametrize("case", recall_index_conformance_cases(), ids=str)
async def test_recall_index_conformance(case: RecallIndexConformanceCase, store: PostgresAdapter) -> None:
    await case.run(store)


def _rec(source: str, text: str, *, minutes: int = 0, **fields: Any) -> dict[str, Any]:
    return {
        "kind": "turn",
        "source_id": source,
        "text": text,
        "said_at": T0 + timedelta(minutes=minutes),
        "agent_id": "agent",
        **fields,
    }


async def _counters(pg_url: str, schema: str) -> tuple[tuple[int, int], tuple[int, int], list[tuple[str, int]]]:
    """(the stats row, the same counted from the records, the stored df that differs from the postings)."""
    import psycopg

    s = quote_ident(schema)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        cur = await conn.execute(f"SELECT records, total FROM {s}.recall_stats")
        kept = await cur.fetchone()
        cur = await conn.execute(f"SELECT count(*), coalesce(sum(term_count), 0) FROM {s}.recall_records")
        counted = await cur.fetchone()
        cur = await conn.execute(
            f"SELECT coalesce(d.term, p.term), coalesce(d.df, 0) FROM {s}.recall_df d"
            f" FULL JOIN (SELECT term, count(*) AS n FROM {s}.recall_terms GROUP BY term) p ON p.term = d.term"
            " WHERE d.df IS DISTINCT FROM p.n"
        )
        wrong = [(str(t), int(n)) for t, n in await cur.fetchall()]
    assert kept is not None and counted is not None
    return (int(kept[0]), int(kept[1])), (int(counted[0]), int(counted[1])), wrong


async def test_counters_stay_exact_under_racing_writers(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    # Writers replace, delete and scope-delete overlapping records at once: every write locks
    # the counters first, so N, the total length and every term's df match what is stored.
    first = [_rec(f"e{n}", f"apple pear {n} plum", user_id=f"u{n % 3}", thread_id=f"t{n % 4}") for n in range(60)]
    unwrap(await store.index_recall_records(first))
    jobs = []
    for n in range(8):
        batch = [_rec(f"e{(n * 7 + k) % 60}", f"pear quince {n} {'fig ' * k}") for k in range(12)]
        jobs.append(store.index_recall_records(batch[::-1] if n % 2 else batch))
        jobs.append(store.delete_recall_records([f"turn:e{(n * 5 + k) % 60}" for k in range(6)]))
    jobs.append(store.delete_recall_scope(thread_id="t1"))
    jobs.append(store.delete_recall_scope(user_id="u2"))
    results = await asyncio.gather(*jobs)
    assert all(r.success for r in results), [r.error for r in results if not r.success]
    kept, counted, wrong = await _counters(pg_url, schema)
    assert kept == counted
    assert wrong == []
    left = unwrap(await store.count_recall_records(filter={"statuses": ["active", "superseded", "stale"]}))
    assert left == kept[0]


async def test_deleted_terms_leave_no_frequency_behind(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    import psycopg

    unwrap(await store.index_recall_records([_rec("a", "zanzibar walrus"), _rec("b", "walrus")]))
    unwrap(await store.index_recall_records([_rec("a", "walrus again")]))
    unwrap(await store.delete_recall_records(["turn:b"]))
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        cur = await conn.execute(f"SELECT term, df FROM {quote_ident(schema)}.recall_df ORDER BY term")
        assert await cur.fetchall() == [("again", 1), ("walrus", 1), ("~walru", 1)]
    assert await _counters(pg_url, schema) == ((1, 3), (1, 3), [])


async def test_text_that_jsonb_would_refuse_round_trips(store: PostgresAdapter) -> None:
    text = 'nul\x00inside ß ✓ 日本語 \\ "quoted"'
    unwrap(await store.index_recall_records([_rec("a", text, lineage=["x\x00y"])]))
    [got] = unwrap(await store.get_recall_records(["turn:a"]))
    assert (got.text, got.lineage) == (text, ["x\x00y"])
    assert [c.record.source_id for c in unwrap(await store.recall_keyword("日本"))] == ["a"]


async def test_a_term_the_index_cannot_keep_is_named(store: PostgresAdapter) -> None:
    result = await store.index_recall_records([_rec("a", "fine"), _rec("b", "odd", terms=["ok", "bad\x1fterm"])])
    assert not result.success and "records[1].terms" in (result.error or "")
    assert unwrap(await store.count_recall_records()) == 0


async def _plan(pg_url: str, sql: str, params: dict[str, Any]) -> str:
    import psycopg

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute("SET TIME ZONE 'UTC'")
        cur = await conn.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {sql}", params)
        return "\n".join(str(r[0]) for r in await cur.fetchall())


async def test_searches_are_served_by_the_indexes(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    import psycopg

    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
    records = [
        _rec(
            f"r{n:05d}",
            f"{words[n % 10]} {words[(n // 10) % 10]} note {n}",
            minutes=n,
            user_id=f"u{n % 20}",
            **({"time_start": T0 + timedelta(days=n % 50)} if n % 7 == 0 else {}),
        )
        for n in range(6000)
    ]
    for start in range(0, len(records), 2000):
        unwrap(await store.index_recall_records(records[start : start + 2000]))
    s = quote_ident(schema)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        for table in ("recall_records", "recall_terms", "recall_df"):
            await conn.execute(f"VACUUM ANALYZE {s}.recall_{table.removeprefix('recall_')}")
    # A user the planner's statistics do not know yet (written after ANALYZE): flattened into a
    # join, the planner would expect one row in scope and scan it once per candidate.
    unwrap(
        await store.index_recall_records(
            [{**r, "user_id": "new", "source_id": f"n{r['source_id']}"} for r in records[:2000]]
        )
    )
    flt = RecallFilter(user_id="new", agent_id="agent")
    where, params = scope_where(flt)
    params.update(terms=["golf", "3"], idfs=[1.5, 8.0], k1p1=2.2, k1=1.2, fixed=0.25, per_len=0.15, limit=10)
    plan = await _plan(pg_url, _keyword_sql(schema, where), params)
    # Postings read from their primary key (tf and length in it), then records looked up by rid
    # in score order: no read of the user's whole scope.
    assert "recall_terms_pkey" in plan and "Index Scan using recall_records_pkey" in plan, plan
    assert "Seq Scan" not in plan and "recall_by_user" not in plan, plan
    # A term past the postings budget: its newest postings read backwards along that key, no
    # sort of all of them (the 600 of "golf" here).
    params.update(terms=["golf"], idfs=[1.5], newest=50)
    plan = await _plan(pg_url, _keyword_sql(schema, where, False, True), params)
    assert "Index Only Scan Backward using recall_terms_pkey" in plan, plan
    assert "Seq Scan" not in plan, plan

    # Items among thousands of turns holding the same words: a search of items keeps the
    # postings of records that are not turns through their small partial index, and reads the
    # rows of those alone (the items), not the turns' rows it used to look up one by one.
    items = [_rec(f"i{n}", f"golf item {n}", kind="item", user_id="new") for n in range(3)]
    unwrap(await store.index_recall_records(items))
    flt = RecallFilter(user_id="new", agent_id="agent", kinds=["item", "core_fact"])
    where, params = scope_where(flt)
    params.update(terms=["golf"], idfs=[1.5], k1p1=2.2, k1=1.2, fixed=0.25, per_len=0.15, limit=10)
    plan = await _plan(pg_url, _keyword_sql(schema, where, True), params)
    assert "recall_not_turns" in plan and "Seq Scan" not in plan, plan
    assert "recall_records_pkey" not in plan, plan  # no record looked up among all of them
    found = unwrap(await store.recall_keyword("golf", filter=flt))
    assert sorted(c.record.source_id for c in found) == ["i0", "i1", "i2"]

    lo, hi = T0 + timedelta(days=3), T0 + timedelta(days=3, hours=2)
    # Said in the range: the user's (and the shared) records through (user_id, said_at), or with
    # no user, every record through (said_at DESC, id); the named times through the GiST index.
    flt = RecallFilter(user_id="u3", agent_id="agent")
    for scope, said_index in ((flt, "recall_by_user"), (RecallFilter(), "recall_by_said")):
        where, params = scope_where(scope)
        params.update(lo=lo, hi=hi, limit=10)
        plan = await _plan(pg_url, _time_sql(schema, where), params)
        assert said_index in plan and "recall_by_named_time" in plan, plan
        assert "Seq Scan" not in plan, plan
    found = unwrap(await store.recall_time(lo, hi, filter=flt, limit=10))
    assert found and all(c.record.user_id == "u3" for c in found)


async def test_a_schema_at_version_8_gains_the_recall_index_on_connect(pg_url: str, schema: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert await migrate(conn, schema, MIGRATIONS[:8]) == (0, 8)
    async with PostgresAdapter(url=pg_url, schema=schema, dimensions=8) as memory:
        assert memory.supports("recall-index")
        unwrap(await memory.index_recall_records([_rec("e1", "moved to Porto")]))
        assert [c.record.source_id for c in unwrap(await memory.recall_keyword("porto"))] == ["e1"]
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        assert [v for v, _ in await applied_migrations(conn, schema)] == [m.version for m in MIGRATIONS]
