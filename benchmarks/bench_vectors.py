"""Vector search latency of the embedding stores, beside plain numpy brute force in the same run.

For 10,000 and 100,000 vectors of 384 dimensions (``--quick``: 2,000 and 10,000), each store
(in-memory, SQLite file, and Qdrant local mode up to 20,000 points, past which local mode
warns that it is not meant for the size) answers top-10 cosine searches; p50/p95 are taken
after a warm-up search (which builds the cached matrix). The baseline is numpy: a float32 unit
matrix times the query and ``argpartition``, measured with BLAS limited to one thread and with
the default threads (NOTES.md: a second OpenBLAS thread slows small products down); the ratio
is to the faster of the two. At the largest size a search filtered to one agent of 50 is timed
too (target on SQLite: under 30 ms), and the first search after a write (the cache reload).

Targets: in-memory and SQLite within 2x of numpy at 10,000; the filtered SQLite search < 30 ms.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.common import Row, percentiles, time_sync
from cogitator_memory import unwrap
from cogitator_memory.vectors import InMemoryEmbeddingAdapter, QdrantAdapter, SQLiteEmbeddingAdapter
from cogitator_memory.vectors.base import BaseEmbeddingAdapter
from cogitator_memory.vectors.matrix import single_blas_thread

DIMS = 384
AGENTS = 50
BATCH = 2_000


def _data(n: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(42)
    vectors = rng.standard_normal((n, DIMS)).astype(np.float32)
    queries = rng.standard_normal((64, DIMS)).astype(np.float32)
    return vectors, queries


async def _fill(store: BaseEmbeddingAdapter, vectors: Any) -> float:
    started = time.perf_counter()
    for start in range(0, len(vectors), BATCH):
        batch = [
            {
                "source_id": f"msg-{i}",
                "source_type": "message",
                "content": f"message {i} about topic {i % 97}",
                "vector": vectors[i],
                "metadata": {"agent_id": f"agent-{i % AGENTS}"},
            }
            for i in range(start, min(start + BATCH, len(vectors)))
        ]
        unwrap(await store.add_embeddings(batch))
    return time.perf_counter() - started


def _unit(vectors: Any) -> Any:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _numpy_search(unit: Any, q: Any) -> list[int]:
    q = q / np.linalg.norm(q)
    scores = unit @ q
    idx = np.argpartition(-scores, 9)[:10]
    out: list[int] = idx[np.argsort(-scores[idx])].tolist()
    return out


def _numpy_tight_loop(unit: Any, queries: Any, repeat: int) -> dict[str, tuple[float, float]]:
    """numpy alone, query after query: default BLAS threads, then one thread."""
    counter = iter(range(10**9))

    def search() -> None:
        _numpy_search(unit, queries[next(counter) % len(queries)])

    search()
    out = {"default threads": percentiles(time_sync(search, repeat))}
    with threadpool_limits(1):
        out["1 BLAS thread"] = percentiles(time_sync(search, repeat))
    return out


async def _interleaved(
    store: BaseEmbeddingAdapter, unit: Any, queries: Any, repeat: int, flt: dict[str, str] | None = None
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(store p50, p95), (numpy p50, p95): one numpy search (one BLAS thread) and one store
    search in turn, so both run with the same caches and the same neighbours on the machine."""
    unwrap(await store.search(queries[0], limit=10, threshold=-1.0, filter=flt))  # builds the cached matrix
    store_times: list[float] = []
    numpy_times: list[float] = []
    for i in range(repeat):
        q = queries[i % len(queries)]
        started = time.perf_counter()
        with single_blas_thread():
            _numpy_search(unit, q)
        numpy_times.append(time.perf_counter() - started)
        started = time.perf_counter()
        unwrap(await store.search(q, limit=10, threshold=-1.0, filter=flt))
        store_times.append(time.perf_counter() - started)
    return percentiles(store_times), percentiles(numpy_times)


async def run(quick: bool) -> list[Row]:
    """The figures of this benchmark (see the module docstring)."""
    sizes = [2_000, 10_000] if quick else [10_000, 100_000]
    repeat = 50 if quick else 200
    rows: list[Row] = []
    for n in sizes:
        label = f"{n // 1000}k"
        vectors, queries = _data(n)
        unit = _unit(vectors)
        agent_unit = unit[7::AGENTS]  # the vectors of agent-7
        for name, (p50, p95) in _numpy_tight_loop(unit, queries, repeat).items():
            rows.append(
                Row("vectors", f"numpy alone, {name}, {label} p50", p50 * 1000, "ms", extra={"p95_ms": p95 * 1000})
            )
        with tempfile.TemporaryDirectory() as tmp:
            stores: list[tuple[str, BaseEmbeddingAdapter]] = [
                ("in-memory", InMemoryEmbeddingAdapter(dimensions=DIMS)),
                ("sqlite", SQLiteEmbeddingAdapter(path=Path(tmp) / "bench.db", dimensions=DIMS)),
            ]
            if n <= 20_000:  # qdrant-client's local mode warns past 20,000 points and slows down a lot
                stores.append(("qdrant-local", QdrantAdapter(url=":memory:", collection="bench", dimensions=DIMS)))
            for name, store in stores:
                unwrap(await store.connect())
                try:
                    fill_s = await _fill(store, vectors)
                    (p50, p95), (np50, np95) = await _interleaved(store, unit, queries, repeat)
                    target = "<= 2x numpy" if n == 10_000 and name != "qdrant-local" else None
                    ratio = p50 / np50
                    rows.append(
                        Row(
                            "vectors",
                            f"{name} search {label} p50",
                            p50 * 1000,
                            "ms",
                            baseline=np50 * 1000,
                            baseline_name="numpy, 1 BLAS thread, interleaved",
                            ratio=ratio,
                            target=target,
                            passed=(ratio <= 2.0) if target else None,
                            extra={"p95_ms": p95 * 1000, "numpy_p95_ms": np95 * 1000, "inserts_per_s": n / fill_s},
                        )
                    )
                    rows.append(
                        Row(
                            "vectors",
                            f"{name} search {label} p95",
                            p95 * 1000,
                            "ms",
                            baseline=np95 * 1000,
                            baseline_name="numpy p95",
                            ratio=p95 / np95,
                        )
                    )
                    if n != sizes[-1]:
                        continue
                    flt = {"agent_id": "agent-7"}
                    (f50, f95), (nf50, _) = await _interleaved(store, agent_unit, queries, repeat, flt)
                    is_target = name == "sqlite" and n == 100_000
                    rows.append(
                        Row(
                            "vectors",
                            f"{name} search {label}, 1 agent of {AGENTS}, p50",
                            f50 * 1000,
                            "ms",
                            baseline=nf50 * 1000,
                            baseline_name="numpy over that agent's rows",
                            ratio=f50 / nf50,
                            target="< 30 ms" if is_target else None,
                            passed=(f50 * 1000 < 30) if is_target else None,
                            extra={"p95_ms": f95 * 1000},
                        )
                    )
                    if name == "qdrant-local":
                        continue
                    late = {
                        "source_id": "late",
                        "source_type": "message",
                        "content": "late",
                        "vector": vectors[0],
                        "metadata": flt,
                    }
                    unwrap(await store.add_embedding(late))
                    started = time.perf_counter()
                    unwrap(await store.search(queries[0], limit=10, filter=flt))
                    cold = time.perf_counter() - started
                    rows.append(Row("vectors", f"{name} first agent search after a write, {label}", cold * 1000, "ms"))
                finally:
                    await store.disconnect()
    return rows
