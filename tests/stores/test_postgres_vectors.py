"""PostgresAdapter as an embedding store (pgvector): the embedding conformance suite, vector
sizes (vector, halfvec, unindexed), adopting and refusing an existing table's size, HNSW with
ef_search and iterative scans, full-text keyword search, and the paths without pgvector."""

from __future__ import annotations

import random
import secrets
from collections.abc import AsyncIterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from cogitator_memory import unwrap
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.engines.postgres.vectors import (
    VectorLayout,
    deletion_filter_sql,
    search_filter_sql,
    tsquery_literal,
    tsvector_literal,
)
from cogitator_memory.errors import InvalidArgumentError
from cogitator_memory.testing import service_url
from cogitator_memory.testing.embedding import (
    axis_vector,
    cosine,
    embedding_adapter_conformance_cases,
    seeded_vector,
)
from cogitator_memory.vectors import EmbeddingAdapter
from cogitator_memory.vectors.records import DeletionFilter, EmbeddingFilter

CASES = embedding_adapter_conformance_cases()


@pytest.fixture(params=["configured", "adopted"])
async def store(request: pytest.FixtureRequest, pg_url: str, schema: str) -> AsyncIterator[PostgresAdapter]:
    if request.param == "adopted":  # a table made by an earlier adapter, its size learned at connect
        async with PostgresAdapter(url=pg_url, schema=schema, dimensions=8):
            pass
        memory = PostgresAdapter(url=pg_url, schema=schema, pool_size=4)
    else:
        memory = PostgresAdapter(url=pg_url, schema=schema, pool_size=4, dimensions=8)
    async with memory:
        yield memory


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_embedding_conformance(case, store: PostgresAdapter) -> None:
    await case.run(store)


def test_it_is_an_embedding_adapter() -> None:
    memory = PostgresAdapter(url="postgresql://x/y")
    assert isinstance(memory, EmbeddingAdapter)
    assert memory.supports("vectors") and memory.supports("keyword-search")
    assert memory.vector_status() == {"available": False, "reason": "not connected"}


# --- plain functions -------------------------------------------------------------------------


def test_layout_by_size() -> None:
    def plan(dims: int, version: str = "0.8.0") -> tuple[str, bool, bool]:
        layout = VectorLayout.plan("s", "public", version, dims)
        return layout.storage, layout.indexed, layout.iterative_scan

    assert plan(384) == ("vector", True, True)
    assert plan(2000) == ("vector", True, True)
    assert plan(2001) == ("halfvec", True, True)
    assert plan(4000) == ("halfvec", True, True)
    assert plan(4001) == ("vector", False, True)
    assert plan(3000, "0.6.2") == ("vector", False, False)
    with pytest.raises(Exception, match="16000"):
        plan(16001)


def test_text_search_literals() -> None:
    assert tsvector_literal("Quick quick FOX, the fox!") == "'quick':1,2 'fox':3,4"
    assert tsquery_literal(["quick", "fox", "quick"]) == "'quick' | 'fox'"
    assert tsquery_literal(["it's"]) == "'it''s'"
    assert tsvector_literal("東京タワー").startswith("'東京'")


def test_filter_translation() -> None:
    assert search_filter_sql(EmbeddingFilter()) == ("true", {})
    sql, params = search_filter_sql(EmbeddingFilter(agent_id="a", source_type="doc", metadata={"page": 3}))
    assert "metadata->>'agent_id' IS NULL OR metadata->>'agent_id' = %(f_agent_id)s" in sql
    assert params == {"f_source_type": "doc", "f_agent_id": "a", "f_metadata": '{"page":3}'}
    sql, params = search_filter_sql(EmbeddingFilter(metadata={"index": "items", "page": 3}))
    assert sql == "metadata->>'index' = %(f_indexed0)s AND metadata @> %(f_metadata)s::jsonb"
    assert params == {"f_indexed0": "items", "f_metadata": '{"index":"items","page":3}'}
    sql, params = deletion_filter_sql(DeletionFilter(agent_id="a", metadata={"k": True}))
    assert sql == "metadata @> %(f_metadata)s::jsonb"
    assert params == {"f_metadata": '{"k":true,"agent_id":"a"}'}


# --- sizes ------------------------------------------------------------------------------------


async def _column_and_index(url: str, schema: str) -> tuple[str, str | None]:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = to_regclass(%s) AND attname = 'embedding'",
            (f'"{schema}".embeddings',),
        )
        column = await cur.fetchone()
        cur = await conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname = 'embeddings_hnsw'", (schema,)
        )
        index = await cur.fetchone()
    assert column is not None
    return column[0], None if index is None else index[0]


def _rand(rng: random.Random, dims: int) -> list[float]:
    return [rng.gauss(0, 1) for _ in range(dims)]


@pytest.mark.parametrize(
    ("dims", "column", "ops"),
    [
        (384, "vector(384)", "vector_cosine_ops"),
        (3000, "halfvec(3000)", "halfvec_cosine_ops"),
        (4500, "vector(4500)", None),
    ],
)
async def test_vector_sizes(pg_url: str, schema: str, dims: int, column: str, ops: str | None) -> None:
    async with PostgresAdapter(url=pg_url, schema=schema, dimensions=dims) as memory:
        status = memory.vector_status()
        assert status["available"] and status["dimensions"] == dims
        assert status["indexed"] == (ops is not None)
        found_column, index = await _column_and_index(pg_url, schema)
        assert found_column.endswith(column)
        if ops is None:
            assert index is None
        else:
            assert index is not None and "USING hnsw" in index and ops in index
        rng = random.Random(dims)
        vectors = [_rand(rng, dims) for _ in range(30)]
        added = unwrap(
            await memory.add_embeddings(
                [
                    {"source_id": f"s{i}", "source_type": "doc", "content": f"v{i}", "vector": v}
                    for i, v in enumerate(vectors)
                ]
            )
        )
        query = _rand(rng, dims)
        expected = sorted(range(30), key=lambda i: -cosine(query, vectors[i]))[:5]
        hits = unwrap(await memory.search(query, limit=5, threshold=-1.0))
        assert [h.id for h in hits] == [added[i].id for i in expected]
        tolerance = 5e-3 if status["storage"] == "halfvec" else 1e-4  # halfvec keeps 16-bit floats
        for hit, i in zip(hits, expected, strict=True):
            assert abs(hit.score - cosine(query, vectors[i])) < tolerance
        assert len(hits[0].vector) == dims


async def test_without_a_size_no_table_is_made_until_the_first_vectors(pg_url: str, schema: str) -> None:
    async with PostgresAdapter(url=pg_url, schema=schema) as memory:
        status = memory.vector_status()
        assert status["available"] and "dimensions" not in status and memory.dimensions is None
        async with await psycopg.AsyncConnection.connect(pg_url) as conn:
            cur = await conn.execute("SELECT to_regclass(%s)", (f'"{schema}".embeddings',))
            assert await cur.fetchone() == (None,), "a store opened without a size makes no table"
        assert unwrap(await memory.search([1.0] * 5)) == []
        assert unwrap(await memory.keyword_search("x")) == []
        assert unwrap(await memory.get_embedding("emb_x")) is None
        assert unwrap(await memory.get_by_sources(["s"])) == []
        assert unwrap(await memory.delete_by_filter(source_type="d")) == 0
        added = unwrap(
            await memory.add_embedding(
                {"source_id": "s", "source_type": "d", "content": "x", "vector": [1.0, 0.0, 0.0, 0.0, 0.5]}
            )
        )
        assert memory.dimensions == 5 and memory.vector_status()["dimensions"] == 5
        assert [h.id for h in unwrap(await memory.search([1.0, 0.0, 0.0, 0.0, 0.4]))] == [added.id]
        async with await psycopg.AsyncConnection.connect(pg_url) as conn:
            cur = await conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename = 'embeddings'", (schema,)
            )
            names = {row[0] for row in await cur.fetchall()}
        assert {"embeddings_hnsw", "embeddings_by_user", "embeddings_by_thread", "embeddings_by_index"} <= names
    async with PostgresAdapter(url=pg_url, schema=schema) as adopter:
        assert adopter.dimensions == 5


async def test_a_table_made_by_another_adapter_is_adopted_after_connect(pg_url: str, schema: str) -> None:
    async with PostgresAdapter(url=pg_url, schema=schema) as waiting:  # no table at its connect
        async with PostgresAdapter(url=pg_url, schema=schema, dimensions=8) as maker:
            unwrap(
                await maker.add_embedding(
                    {"source_id": "s", "source_type": "d", "content": "x", "vector": axis_vector(0)}
                )
            )
        assert [h.source_id for h in unwrap(await waiting.search(axis_vector(0)))] == ["s"]
        assert waiting.dimensions == 8
        refused = await waiting.add_embedding(
            {"source_id": "t", "source_type": "d", "content": "y", "vector": [1.0] * 4}
        )
        assert not refused.success and "8" in (refused.error or "")


async def test_an_existing_table_of_another_size_fails_the_connect(pg_url: str, schema: str) -> None:
    async with PostgresAdapter(url=pg_url, schema=schema, dimensions=8) as first:
        unwrap(
            await first.add_embedding({"source_id": "s", "source_type": "d", "content": "x", "vector": axis_vector(0)})
        )
    async with PostgresAdapter(url=pg_url, schema=schema) as adopter:
        assert adopter.dimensions == 8 and adopter.vector_status()["available"]
        assert len(unwrap(await adopter.search(axis_vector(0)))) == 1
    mismatched = PostgresAdapter(url=pg_url, schema=schema, dimensions=16)
    opened = await mismatched.connect()
    assert not opened.success and opened.error_type is InvalidArgumentError
    error = opened.error or ""
    assert "8 dimensions" in error and "vectors of 16" in error, error
    assert f'DROP TABLE "{schema}".embeddings' in error and "schema" in error, error
    assert mismatched.vector_status() == {"available": False, "reason": "not connected"}
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        cur = await conn.execute(f'SELECT count(*) FROM "{schema}".embeddings')
        assert await cur.fetchone() == (1,), "the refused adapter changed nothing"


async def test_an_older_table_gets_its_filter_indexes_at_connect(pg_url: str, schema: str) -> None:
    async with PostgresAdapter(url=pg_url, schema=schema, dimensions=8) as first:
        unwrap(
            await first.add_embedding(
                {
                    "source_id": "s",
                    "source_type": "d",
                    "content": "x",
                    "vector": axis_vector(0),
                    "metadata": {"user_id": "u"},
                }
            )
        )
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await conn.execute(
            f'DROP INDEX "{schema}".embeddings_by_user, "{schema}".embeddings_by_thread, "{schema}".embeddings_by_index'
        )
    async with PostgresAdapter(url=pg_url, schema=schema) as memory:
        hits = unwrap(await memory.search(axis_vector(0), filter={"user_id": "u"}))
        assert [h.source_id for h in hits] == ["s"]
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        cur = await conn.execute(
            "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND tablename = 'embeddings'", (schema,)
        )
        names = {row[0] for row in await cur.fetchall()}
        assert {"embeddings_by_user", "embeddings_by_thread", "embeddings_by_index"} <= names


# --- search behaviour ------------------------------------------------------------------------


async def test_filtered_search_finds_every_matching_row_through_the_index(pg_url: str, schema: str) -> None:
    rng = random.Random(7)
    async with PostgresAdapter(url=pg_url, schema=schema, dimensions=16) as memory:
        items = []
        for i in range(3000):
            group = "even" if i % 2 == 0 else "odd"
            items.append(
                {
                    "source_id": f"s{i}",
                    "source_type": group,
                    "content": f"c{i}",
                    "vector": _rand(rng, 16),
                }
            )
        for start in range(0, len(items), 500):
            unwrap(await memory.add_embeddings(items[start : start + 500]))
        with psycopg.connect(pg_url, autocommit=True) as conn:  # what autovacuum would do soon
            conn.execute(f'ANALYZE "{schema}".embeddings')
        query = _rand(rng, 16)
        even = unwrap(await memory.search(query, limit=100, threshold=-1.0, filter={"source_type": "even"}))
        assert len(even) == 100 and all(h.source_type == "even" for h in even)
        assert [h.score for h in even] == sorted((h.score for h in even), reverse=True)
        wide = unwrap(await memory.search(query, limit=600, threshold=-1.0))
        assert len(wide) == 600, "a limit above the default ef_search (40) still gets every row asked for"
    # the same filtered query on a plain connection: it goes through the HNSW index, and without
    # the settings the adapter makes it misses rows, so the figures above came from those settings
    sql = (
        f"SELECT id FROM \"{schema}\".embeddings WHERE source_type = 'even'"
        " ORDER BY embedding <=> %s::float8[]::vector LIMIT 100"
    )
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        cur = await conn.execute("EXPLAIN " + sql, (query,))
        plan = "\n".join(row[0] for row in await cur.fetchall())
        assert "embeddings_hnsw" in plan, plan
        cur = await conn.execute(sql, (query,))
        assert len(await cur.fetchall()) < 100


async def test_a_users_search_goes_through_hnsw_and_a_rare_index_key_through_its_btree(
    pg_url: str, schema: str
) -> None:
    """One user's 3,000 turn vectors and 5 item vectors: the user's search of the turns walks the
    HNSW index (the planner knows the user's filter keeps every row), the items' search and a
    thread's read their few rows by index; none compares every vector."""
    rng = random.Random(11)
    async with PostgresAdapter(url=pg_url, schema=schema, dimensions=16) as memory:
        rows = [
            {
                "source_id": f"e{i}",
                "source_type": "message",
                "content": f"turn {i}",
                "vector": _rand(rng, 16),
                "metadata": {"index": "messages", "user_id": "ana", "agent_id": "a", "thread_id": f"t{i // 50}"},
            }
            for i in range(3000)
        ]
        rows += [
            {
                "source_id": f"i{i}",
                "source_type": "item",
                "content": f"item {i}",
                "vector": _rand(rng, 16),
                "metadata": {"index": "items", "user_id": "ana", "agent_id": "a"},
            }
            for i in range(5)
        ]
        rows.append(  # the same key holding a number: not an item vector
            {"source_id": "n", "source_type": "x", "content": "n", "vector": _rand(rng, 16), "metadata": {"index": 7}}
        )
        for start in range(0, len(rows), 500):
            unwrap(await memory.add_embeddings(rows[start : start + 500]))
        query = _rand(rng, 16)
        scope = {"user_id": "ana", "agent_id": "a"}
        turns = unwrap(
            await memory.search(query, limit=200, threshold=-1.0, filter={**scope, "metadata": {"index": "messages"}})
        )
        items = unwrap(
            await memory.search(query, limit=200, threshold=-1.0, filter={**scope, "metadata": {"index": "items"}})
        )
        thread = unwrap(
            await memory.search(
                query, limit=200, threshold=-1.0, filter={"thread_id": "t3", "metadata": {"index": "messages"}}
            )
        )
        assert len(turns) == 200 and {h.source_id for h in items} == {f"i{i}" for i in range(5)}
        assert {h.source_id for h in thread} == {f"e{i}" for i in range(150, 200)}
        assert unwrap(await memory.search(query, limit=5, threshold=-1.0, filter={"metadata": {"index": "7"}})) == []

    plans = {}
    async with await psycopg.AsyncConnection.connect(pg_url) as conn:
        await conn.execute("SET hnsw.iterative_scan = relaxed_order")
        for name, flt in (
            ("turns", EmbeddingFilter(user_id="ana", agent_id="a", metadata={"index": "messages"})),
            ("items", EmbeddingFilter(user_id="ana", agent_id="a", metadata={"index": "items"})),
            ("thread", EmbeddingFilter(thread_id="t3", metadata={"index": "messages"})),
        ):
            where, params = search_filter_sql(flt)
            params["q"] = str(query)
            cur = await conn.execute(
                f'EXPLAIN SELECT id FROM "{schema}".embeddings WHERE {where} ORDER BY embedding <=> %(q)s::vector LIMIT 200',
                params,
            )
            plans[name] = "\n".join(row[0] for row in await cur.fetchall())
    assert "embeddings_hnsw" in plans["turns"], plans["turns"]
    assert "embeddings_by_index" in plans["items"] and "Seq Scan" not in plans["items"], plans["items"]
    assert "embeddings_by_thread" in plans["thread"] and "Seq Scan" not in plans["thread"], plans["thread"]


async def test_keyword_search_uses_full_text_ranking(pg_url: str, schema: str) -> None:
    async with PostgresAdapter(url=pg_url, schema=schema, dimensions=8) as memory:
        added = unwrap(
            await memory.add_embeddings(
                [
                    {
                        "source_id": "a",
                        "source_type": "d",
                        "content": "postgres keeps vectors",
                        "vector": axis_vector(0),
                    },
                    {
                        "source_id": "b",
                        "source_type": "d",
                        "content": "postgres postgres everywhere",
                        "vector": axis_vector(1),
                    },
                ]
            )
        )
        hits = unwrap(await memory.keyword_search("Postgres"))
        assert [h.id for h in hits] == [added[1].id, added[0].id]
        async with await psycopg.AsyncConnection.connect(pg_url) as conn:
            cur = await conn.execute(
                f"SELECT id, ts_rank(terms, 'postgres'::tsquery) FROM \"{schema}\".embeddings ORDER BY 2 DESC"
            )
            ranks = await cur.fetchall()
        assert [(h.id, round(h.score, 5)) for h in hits] == [(i, round(r, 5)) for i, r in ranks]


# --- without pgvector ------------------------------------------------------------------------


async def _embedding_calls_fail(memory: PostgresAdapter, needle: str) -> None:
    vec = [1.0] * (memory.dimensions or 768)
    for result in (
        await memory.add_embedding({"source_id": "s", "source_type": "d", "content": "x", "vector": vec}),
        await memory.search(vec),
        await memory.keyword_search("x"),
        await memory.get_embedding("emb_x"),
        await memory.delete_embedding("emb_x"),
        await memory.delete_by_filter(source_type="d"),
        await memory.get_by_sources(["s"]),
    ):
        assert not result.success
        assert "embeddings are unavailable" in (result.error or "") and needle in (result.error or "")


async def _threads_work(memory: PostgresAdapter) -> None:
    thread = unwrap(await memory.create_thread("agent"))
    entry = unwrap(await memory.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "hi"}}))
    assert [e.id for e in unwrap(await memory.get_path(thread_id=thread.id))] == [entry.id]
    unwrap(await memory.health_check())


async def test_a_server_without_pgvector() -> None:
    url = service_url("COGMEM_TEST_POSTGRES_NOVECTOR_URL")
    schema = f"cogmem_nv_{secrets.token_hex(6)}"
    try:
        async with PostgresAdapter(url=url, schema=schema) as memory:
            status = memory.vector_status()
            assert status == {
                "available": False,
                "reason": "the pgvector extension is not installed on this PostgreSQL server",
            }
            await _threads_work(memory)
            await _embedding_calls_fail(memory, "not installed")
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def test_a_role_that_may_not_create_pgvector(admin_url: str) -> None:
    role = f"cogmem_role_{secrets.token_hex(4)}"
    database = f"cogmem_pgtest_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'CREATE DATABASE "{database}" OWNER "{role}"')
    try:
        params = conninfo_to_dict(admin_url)
        url = make_conninfo(admin_url, dbname=database, user=role)
        assert params.get("user") != role
        async with PostgresAdapter(url=url, schema="app") as memory:
            status = memory.vector_status()
            assert status["available"] is False
            assert "may not create the pgvector extension" in status["reason"]
            await _threads_work(memory)
            await _embedding_calls_fail(memory, "may not create")
        # once an administrator creates the extension, the same role gets vectors
        with psycopg.connect(make_conninfo(admin_url, dbname=database), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        async with PostgresAdapter(url=url, schema="app", dimensions=8) as memory:
            assert memory.vector_status()["available"] is True
            unwrap(
                await memory.add_embedding(
                    {"source_id": "s", "source_type": "d", "content": "x", "vector": seeded_vector(1)}
                )
            )
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


async def test_pooled_connections_search_with_ef_search_and_iterative_scans(pg_url: str, schema: str) -> None:
    async with PostgresAdapter(url=pg_url, schema=schema, dimensions=8, ef_search=64) as memory:

        async def show(conn: psycopg.AsyncConnection) -> list[str]:
            out = []
            for name in ("hnsw.ef_search", "hnsw.iterative_scan"):
                cur = await conn.execute(f"SHOW {name}")
                row = await cur.fetchone()
                assert row is not None
                out.append(row[0])
            return out

        assert await memory.run(show) == ["64", "relaxed_order"]
    with pytest.raises(ValueError, match="ef_search"):
        PostgresAdapter(url=pg_url, ef_search=0)


def test_the_embedding_factory_builds_it(pg_url: str) -> None:
    from cogitator_memory.vectors import create_embedding_adapter

    store = create_embedding_adapter({"provider": "postgres", "url": pg_url, "dimensions": 384, "ef_search": 200})
    assert isinstance(store, PostgresAdapter) and store.dimensions == 384 and store.ef_search == 200
