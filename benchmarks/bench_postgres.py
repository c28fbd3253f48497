"""PostgresAdapter on the real server (PostgreSQL 18 + pgvector 0.8).

* ``add_entry`` rate, one call at a time, against raw psycopg executing the same statement (the
  adapter's own single-statement insert, with the same parameters) on one connection, in the
  same run. Rounds alternate between the two; the best round of each counts. Target: >= 50%.
* ``get_path(limit=50)`` on a 100,000-entry thread against the same on a 1,000-entry thread
  (both chains loaded with COPY into the store's own tables). Target: within 1.5x.
* Vector search (``limit=10``) over 100,000 vectors of 384 dimensions (clustered, like real
  embeddings; 10 agents and shared rows), with and without an agent filter: p50/p95 latency
  beside an exact (sequential scan) search in the same database, and recall@10 against exact
  search computed with numpy. Target: recall >= 0.95. The vectors are loaded through
  ``add_embeddings`` with the HNSW index dropped, then the index is built once (as for a large
  import); load rate and build time are in the row's extras.

The server comes from ``COGMEM_TEST_POSTGRES_URL`` (default: the one ``scripts/services.sh``
starts on :5433). Each run uses a database of its own and drops it at the end.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import numpy as np
import psycopg

from cogitator_memory.clock import now
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.engines.postgres.threads import entry_content
from cogitator_memory.ids import entry_id as new_entry_id
from cogitator_memory.result import unwrap
from cogitator_memory.testing.services import own_database
from cogitator_memory.threads.records import NewMemoryEntry

from .common import Row, percentiles, time_async

ADMIN_URL = os.environ.get("COGMEM_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5433/postgres")
GROUP = "postgres"


def _message(i: int) -> dict[str, Any]:
    return {"role": "user" if i % 2 == 0 else "assistant", "content": f"message number {i} of the benchmark run"}


# --- add_entry ---------------------------------------------------------------------------------


async def _adapter_rate(memory: PostgresAdapter, thread_id: str, count: int) -> float:
    started = time.perf_counter()
    for i in range(count):
        unwrap(await memory.add_entry({"thread_id": thread_id, "message": _message(i)}))
    return count / (time.perf_counter() - started)


async def _raw_rate(conn: psycopg.AsyncConnection[Any], sql: str, thread_id: str, count: int) -> float:
    started = time.perf_counter()
    for i in range(count):
        content = entry_content(NewMemoryEntry(thread_id=thread_id, message=_message(i)), 12)  # type: ignore[arg-type]
        params = {
            "tid": thread_id,
            "parent": None,
            "id": new_entry_id(),
            "type": "message",
            "content": json.dumps(content, separators=(",", ":")),
            "now": now(),
            "activate": True,
        }
        cur = await conn.execute(sql, params)
        row = await cur.fetchone()
        assert row is not None and row[3] == 1
    return count / (time.perf_counter() - started)


async def _bench_add_entry(url: str, quick: bool) -> list[Row]:
    per_round = 300 if quick else 1500
    rounds = 3 if quick else 4
    async with PostgresAdapter(url=url, schema="bench_add", dimensions=8) as memory:
        ours = unwrap(await memory.create_thread("bench")).id
        theirs = unwrap(await memory.create_thread("bench")).id
        sql = memory._sql.add_entry
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await _raw_rate(conn, sql, theirs, 50)  # warm up (prepared statements on both sides)
            await _adapter_rate(memory, ours, 50)
            adapter_rates, raw_rates = [], []
            for _ in range(rounds):
                raw_rates.append(await _raw_rate(conn, sql, theirs, per_round))
                adapter_rates.append(await _adapter_rate(memory, ours, per_round))
    adapter, raw = max(adapter_rates), max(raw_rates)
    return [
        Row(
            GROUP,
            "add_entry rate (one at a time)",
            adapter,
            "entries/s",
            baseline=raw,
            baseline_name="raw psycopg, same statement",
            ratio=adapter / raw,
            target=">= 0.5x raw",
            passed=adapter / raw >= 0.5,
            extra={"adapter_rounds": adapter_rates, "raw_rounds": raw_rates},
        )
    ]


# --- get_path ----------------------------------------------------------------------------------


def _load_chain(url: str, schema: str, thread_id: str, size: int) -> None:
    """A thread of ``size`` entries in one chain, written with COPY into the store's tables."""
    stamp = now()
    ids = [f"entry_{thread_id}_{i:07d}" for i in range(size)]
    with psycopg.connect(url, autocommit=True) as conn:
        with (
            conn.cursor() as cur,
            cur.copy(
                f'COPY "{schema}".entries (id, thread_id, parent_id, seq, type, content, created_at) FROM STDIN'
            ) as copy,
        ):
            for i, eid in enumerate(ids):
                content = {"type": "message", "token_count": 12, "message": _message(i)}
                copy.write_row(
                    (eid, thread_id, ids[i - 1] if i else None, i + 1, "message", json.dumps(content), stamp)
                )
        conn.execute(
            f'UPDATE "{schema}".threads SET active_leaf_id = %s, next_seq = %s WHERE id = %s',
            (ids[-1], size + 1, thread_id),
        )
        conn.execute(f'ANALYZE "{schema}".entries')


async def _bench_get_path(url: str, quick: bool) -> list[Row]:
    big_size = 20_000 if quick else 100_000
    repeat = 100 if quick else 400
    async with PostgresAdapter(url=url, schema="bench_path", dimensions=8) as memory:
        small = unwrap(await memory.create_thread("bench")).id
        big = unwrap(await memory.create_thread("bench")).id
        _load_chain(url, "bench_path", small, 1_000)
        _load_chain(url, "bench_path", big, big_size)

        async def read(tid: str) -> None:
            entries = unwrap(await memory.get_path(thread_id=tid, limit=50))
            assert len(entries) == 50

        for tid in (small, big):
            await time_async(lambda t=tid: read(t), 20)  # type: ignore[misc]
        small_t: list[float] = []
        big_t: list[float] = []
        for _ in range(4):  # interleaved, so a disturbance hits both
            small_t += await time_async(lambda: read(small), repeat // 4)
            big_t += await time_async(lambda: read(big), repeat // 4)
    s50, s95 = percentiles(small_t)
    b50, b95 = percentiles(big_t)
    return [
        Row(
            GROUP,
            f"get_path(limit=50) p50, {big_size:,}-entry thread",
            b50 * 1000,
            "ms",
            baseline=s50 * 1000,
            baseline_name="same on a 1,000-entry thread",
            ratio=b50 / s50,
            target="<= 1.5x",
            passed=b50 / s50 <= 1.5,
            extra={"p95_ms": b95 * 1000, "baseline_p95_ms": s95 * 1000},
        )
    ]


# --- vector search -----------------------------------------------------------------------------


def _dataset(n: int, dims: int, seed: int = 42) -> tuple[np.ndarray, list[str | None]]:
    """Clustered unit vectors (like text embeddings) and an owner per row (10 agents, 10% shared)."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(200, dims)).astype(np.float32)
    which = rng.integers(0, len(centers), size=n)
    data = centers[which] + rng.normal(scale=0.8, size=(n, dims)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    owners: list[str | None] = [None if i % 10 == 9 else f"agent-{i % 10}" for i in range(n)]
    return data, owners


async def _bench_vectors(url: str, quick: bool) -> list[Row]:
    n = 20_000 if quick else 100_000
    dims = 384
    queries = 60 if quick else 200
    data, owners = _dataset(n, dims)
    rows: list[Row] = []
    async with PostgresAdapter(url=url, schema="bench_vec", dimensions=dims, pool_size=4) as memory:
        # Bulk load without the index, then build it once (what one does for a large import;
        # the index of a table filled row by row is the same kind of graph, built slower).
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute('DROP INDEX "bench_vec".embeddings_hnsw')
        started = time.perf_counter()
        batch = 1000
        ids: list[str] = []
        for start in range(0, n, batch):
            items = []
            for i in range(start, min(n, start + batch)):
                meta = {} if owners[i] is None else {"agent_id": owners[i]}
                items.append(
                    {
                        "id": f"emb_{i:07d}",
                        "source_id": f"src-{i}",
                        "source_type": "chunk",
                        "content": f"chunk {i}",
                        "vector": data[i].tolist(),
                        "metadata": meta,
                    }
                )
            ids.extend(e.id for e in unwrap(await memory.add_embeddings(items)))
        load_rate = n / (time.perf_counter() - started)
        layout = memory._layout
        assert layout is not None
        started = time.perf_counter()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("SET maintenance_work_mem = '1GB'")
            conn.execute(layout.index_statement())
            conn.execute('VACUUM ANALYZE "bench_vec".embeddings')
        index_build_s = time.perf_counter() - started
        rng = np.random.default_rng(7)
        picks = rng.integers(0, n, size=queries)
        qs = data[picks] + rng.normal(scale=0.5 / np.sqrt(dims), size=(queries, dims)).astype(np.float32)
        agent_mask = np.array([o is None or o == "agent-3" for o in owners])
        for label, flt, mask in (("no filter", None, None), ("agent filter", {"agent_id": "agent-3"}, agent_mask)):
            latencies: list[float] = []
            recalls: list[float] = []
            for q in qs:
                scores = data @ q
                if mask is not None:
                    scores = np.where(mask, scores, -np.inf)
                exact = {f"emb_{i:07d}" for i in np.argpartition(-scores, 10)[:10]}
                t0 = time.perf_counter()
                hits = unwrap(await memory.search(q.tolist(), limit=10, threshold=-1.0, filter=flt))
                latencies.append(time.perf_counter() - t0)
                recalls.append(len(exact & {h.id for h in hits}) / 10)
            exact_lat = await _exact_latencies(url, qs[: max(10, queries // 10)], mask is not None)
            p50, p95 = percentiles(latencies)
            e50, _ = percentiles(exact_lat)
            recall = float(np.mean(recalls))
            rows.append(
                Row(
                    GROUP,
                    f"vector search p50, {n:,} x {dims}, {label}",
                    p50 * 1000,
                    "ms",
                    baseline=e50 * 1000,
                    baseline_name="exact search (seq scan) in PostgreSQL",
                    ratio=p50 / e50,
                    extra={
                        "p95_ms": p95 * 1000,
                        "exact_p95_ms": percentiles(exact_lat)[1] * 1000,
                        "load_rate_per_s": load_rate,
                        "index_build_s": index_build_s,
                    },
                )
            )
            rows.append(
                Row(
                    GROUP,
                    f"vector search recall@10, {label}",
                    recall,
                    "recall",
                    baseline=1.0,
                    baseline_name="exact search (numpy)",
                    ratio=recall,
                    target=">= 0.95",
                    passed=recall >= 0.95,
                    extra={"p95_ms": p95 * 1000, "min_recall": min(recalls)},
                )
            )
    return rows


async def _exact_latencies(url: str, qs: np.ndarray, filtered: bool) -> list[float]:
    where = "WHERE (metadata->>'agent_id' IS NULL OR metadata->>'agent_id' = 'agent-3')" if filtered else ""
    sql = f'SELECT id FROM "bench_vec".embeddings {where} ORDER BY embedding <=> %s::float8[]::vector LIMIT 10'
    out = []
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("SET enable_indexscan = off")
        await conn.execute("SET enable_bitmapscan = off")
        for q in qs:
            t0 = time.perf_counter()
            cur = await conn.execute(sql, (q.tolist(),))
            await cur.fetchall()
            out.append(time.perf_counter() - t0)
    return out


async def run(quick: bool) -> list[Row]:
    """Every figure of the PostgreSQL store (see the module docstring)."""
    with own_database(ADMIN_URL, "cogmem_bench") as url:
        rows = await _bench_add_entry(url, quick)
        rows += await _bench_get_path(url, quick)
        rows += await _bench_vectors(url, quick)
    return rows
