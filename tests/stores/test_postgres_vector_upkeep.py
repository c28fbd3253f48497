"""PostgresAdapter's embeddings after large writes and under long queries: the table is analysed
after a bulk load (so the planner knows how selective a filter is), and a keyword query of many
thousands of terms is split into tsquery chunks whose ranks add up to the whole query's."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import psycopg
import pytest

from cogitator_memory import PostgresAdapter, unwrap
from cogitator_memory.engines.postgres.vectors import (
    ANALYZE_MIN_ROWS,
    TSQUERY_CHUNK,
    keyword_query_sql,
    tsquery_literal,
)
from cogitator_memory.search.tokenizer import index_terms

DIMS = 8


def _rows(count: int, start: int = 0) -> list[dict[str, object]]:
    rng = random.Random(start)
    return [
        {
            "source_id": f"s{start + i}",
            "source_type": "document",
            "content": f"row {start + i}",
            "vector": [rng.uniform(-1, 1) for _ in range(DIMS)],
            "metadata": {"agent_id": f"agent-{(start + i) % 50}"},
        }
        for i in range(count)
    ]


@pytest.fixture
async def store(pg_url: str, schema: str) -> AsyncIterator[PostgresAdapter]:
    async with PostgresAdapter(url=pg_url, schema=schema, dimensions=DIMS, pool_size=2) as memory:
        with psycopg.connect(pg_url, autocommit=True) as conn:  # only the adapter analyses this table
            conn.execute(f'ALTER TABLE "{schema}".embeddings SET (autovacuum_enabled = off)')
        yield memory


async def _stats(url: str, schema: str) -> tuple[float, bool]:
    """``reltuples`` of the table and whether it has been analysed (read on a new connection)."""

    def read() -> tuple[float, bool]:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(
                "SELECT c.reltuples, s.last_analyze IS NOT NULL FROM pg_class c"
                " JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = to_regclass(%s)",
                (f'"{schema}".embeddings',),
            ).fetchone()
            assert row is not None
            return float(row[0]), bool(row[1])

    return await asyncio.to_thread(read)


async def test_a_bulk_load_leaves_the_table_analysed(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    unwrap(await store.add_embeddings(_rows(50)))
    assert await _stats(pg_url, schema) == (-1.0, False)  # a small write: no analyse yet
    total = 50
    for batch in range(4):  # a load in batches: the rows add up across calls
        unwrap(await store.add_embeddings(_rows(300, start=total)))
        total += 300
        if total < ANALYZE_MIN_ROWS:
            assert await _stats(pg_url, schema) == (-1.0, False), f"analysed after batch {batch}"
    assert await _stats(pg_url, schema) == (float(total), True)
    # the next analyse waits for a fifth more rows (or ANALYZE_MIN_ROWS, whichever is more)
    unwrap(await store.add_embeddings(_rows(ANALYZE_MIN_ROWS - 1, start=total)))
    assert (await _stats(pg_url, schema))[0] == float(total)
    unwrap(await store.add_embeddings(_rows(1, start=total + ANALYZE_MIN_ROWS)))
    assert (await _stats(pg_url, schema))[0] == float(total + ANALYZE_MIN_ROWS)


async def test_a_failed_analyse_does_not_fail_the_write(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    # another session holds a lock that ANALYZE waits for: the write still succeeds
    with psycopg.connect(pg_url) as blocker:
        blocker.execute(f'LOCK TABLE "{schema}".embeddings IN SHARE UPDATE EXCLUSIVE MODE')
        added = await store.add_embeddings(_rows(ANALYZE_MIN_ROWS))
        assert added.success, added.error
        assert await _stats(pg_url, schema) == (-1.0, False)
        blocker.rollback()
    unwrap(await store.add_embeddings(_rows(1, start=ANALYZE_MIN_ROWS)))  # tried again at the next write
    assert await _stats(pg_url, schema) == (float(ANALYZE_MIN_ROWS + 1), True)
    hits = unwrap(await store.search([1.0] * DIMS, limit=5, filter={"agent_id": "agent-7"}))
    assert hits and all(h.metadata["agent_id"] == "agent-7" for h in hits)


def test_a_long_query_is_split_into_chunks() -> None:
    terms = [f"t{i}" for i in range(2 * TSQUERY_CHUNK + 5)]
    froms, match, score, params = keyword_query_sql(terms)
    assert len(params) == 3 and froms.count("AS tsquery") == 3
    assert match == "(terms @@ kq0 OR terms @@ kq1 OR terms @@ kq2)"
    assert f"* {TSQUERY_CHUNK}" in score and "* 5" in score and score.endswith(f"/ {len(terms)}.0")
    assert keyword_query_sql(["a", "b"])[2] == "ts_rank(terms, kq0)"
    # the OR tree is balanced: 100,000 terms nest 17 deep, not 100,000
    deep = tsquery_literal([f"t{i}" for i in range(100_000)])
    depth = max_depth = 0
    for ch in deep:
        depth += (ch == "(") - (ch == ")")
        max_depth = max(max_depth, depth)
    assert max_depth <= 17


async def test_chunked_scores_equal_the_whole_query_rank(store: PostgresAdapter, pg_url: str, schema: str) -> None:
    docs = ["alpha beta gamma alpha", "beta delta", "gamma gamma epsilon zeta", "unrelated words only"]
    unwrap(
        await store.add_embeddings(
            [
                {"source_id": f"d{i}", "source_type": "doc", "content": text, "vector": [1.0] + [0.0] * (DIMS - 1)}
                for i, text in enumerate(docs)
            ]
        )
    )
    filler = " ".join(f"qz{i}" for i in range(3 * TSQUERY_CHUNK))
    query = f"alpha {filler} gamma beta zeta"
    hits = unwrap(await store.keyword_search(query))
    assert [h.content for h in hits][:1] == [docs[0]] and len(hits) == 3
    whole = tsquery_literal(list(dict.fromkeys(index_terms(query))))

    def ranks() -> dict[str, float]:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            rows = conn.execute(
                f'SELECT content, ts_rank(terms, %s::tsquery) FROM "{schema}".embeddings', (whole,)
            ).fetchall()
            return {content: float(rank) for content, rank in rows}

    expected = await asyncio.to_thread(ranks)
    for hit in hits:
        assert hit.score == pytest.approx(expected[hit.content], rel=1e-5)
