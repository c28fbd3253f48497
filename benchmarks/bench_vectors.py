"""Vector search latency of the embedding stores, beside plain numpy brute force in the same run.

For 10,000 and 100,000 vectors of 384 dimensions (``--quick``: 2,000 and 10,000), each store
(in-memory, SQLite file, and Qdrant local mode up to 20,000 points, past which local mode
warns that it is not meant for the size) answers top-10 cosine searches of 1,024 distinct
queries (so that a store's caches of hit rows meet the spread of real searches), measured the
strict way: numpy alone (a float32 unit matrix times the query and ``argpartition``, with its
default BLAS threads), warm, in a tight loop; then the store alone, warm (its matrix built by a
first search), in a tight loop. The two alternate in 10 rounds over the same queries, and the
ratio is the median over the rounds of the store's p50 / numpy's p50 in that round: the load of
a shared machine drifts (numpy's own p50 moved 3x within one run here), and a ratio of two
loops run moments apart leaves the drift out. Each side starts after a pause of 0.2 s, so that it
does not run beside the other side's BLAS threads, which spin for a while after a product. Each side also reports its p50 and p95 over all
rounds, its best search (best-of-N) and its CPU time per search (``time.process_time``, which
counts every BLAS thread). numpy with one BLAS thread is reported too, measured after a pause
that lets BLAS's spinning threads sleep, and each numpy-backed store is paired again with both
sides on one BLAS thread, where no thread is woken: the figure least moved by a shared machine's
load. numpy's one-thread product of its row-major matrix is slower than the store's product of
the matrix kept by columns (see ``VectorMatrix``), so that ratio can be under 1.

At 10,000 the numpy-backed stores are paired again with ``include_vectors=False``: how much of
a search goes to making the hits' vectors (a store's own work, which numpy's baseline, giving row
numbers, does not do).

At the largest size a search filtered to one agent of 50 is timed (target on SQLite: under
30 ms) against numpy alone over that agent's rows, and the first search after a write (the
cache reload).

Targets: in-memory and SQLite within 2x of numpy at 10,000; the filtered SQLite search < 30 ms.

Deletes on SQLite (what a thread's or a user's erasure does): a file of 20,000 embeddings
(``--quick``: 4,000) of chat-like text, half of them in one thread; that half is deleted by
thread (``delete_by_filter(thread_id=)``) and by source ids as the cascade sweeps them
(``get_by_sources`` then ``delete_embedding`` each), each from a fresh copy of the same file,
best of N and CPU time, beside raw ``sqlite3`` deleting the same rows and their keyword-index
terms in one transaction.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.common import Row, percentiles, time_sync
from cogitator_memory import unwrap
from cogitator_memory.vectors import InMemoryEmbeddingAdapter, QdrantAdapter, SQLiteEmbeddingAdapter
from cogitator_memory.vectors import matrix as matrix_module
from cogitator_memory.vectors.base import BaseEmbeddingAdapter

DIMS = 384
#: Distinct queries, so that a store's caches of hit rows meet the spread of real searches.
QUERIES = 1024
#: Rounds of the paired measurement (see :func:`_paired`).
ROUNDS = 10
#: The pause before each side of a round: long enough for BLAS's threads, which spin for a while
#: after a product, to go to sleep, so that neither side runs beside the other's spinning threads.
SETTLE_SECONDS = 0.2
AGENTS = 50
BATCH = 2_000


def _data(n: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(42)
    vectors = rng.standard_normal((n, DIMS)).astype(np.float32)
    queries = rng.standard_normal((QUERIES, DIMS)).astype(np.float32)
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


class _Timing:
    """Seconds of each search, and the CPU time of them all."""

    def __init__(self, samples: list[float], cpu: float) -> None:
        self.samples = samples
        self.p50, self.p95 = percentiles(samples)
        self.best = min(samples)
        self.cpu = cpu / len(samples)

    def extra(self, prefix: str = "") -> dict[str, float]:
        return {
            f"{prefix}p95_ms": self.p95 * 1000,
            f"{prefix}best_ms": self.best * 1000,
            f"{prefix}cpu_ms": self.cpu * 1000,
        }


def _numpy_samples(unit: Any, queries: Any, repeat: int, first: int = 0) -> tuple[list[float], float]:
    """Seconds of ``repeat`` numpy searches alone, warm, query after query from ``first``, with
    the BLAS threads in force; and their CPU time."""
    counter = iter(range(first, first + repeat))

    def search() -> None:
        _numpy_search(unit, queries[next(counter) % len(queries)])

    _numpy_search(unit, queries[(first - 1) % len(queries)])
    started = time.process_time()
    samples = time_sync(search, repeat)
    return samples, time.process_time() - started


def _numpy_alone(unit: Any, queries: Any, repeat: int) -> _Timing:
    """numpy alone, warm, query after query, with the BLAS threads in force."""
    samples, cpu = _numpy_samples(unit, queries, repeat)
    return _Timing(samples, cpu)


async def _store_samples(
    store: BaseEmbeddingAdapter,
    queries: Any,
    repeat: int,
    flt: dict[str, str] | None = None,
    first: int = 0,
    include_vectors: bool = True,
) -> tuple[list[float], float]:
    """Seconds of ``repeat`` searches of the store alone, warm (a first search, untimed, builds
    its cached matrix), query after query from ``first``; and their CPU time."""
    last = queries[(first - 1) % len(queries)]
    unwrap(await store.search(last, limit=10, threshold=-1.0, filter=flt, include_vectors=include_vectors))
    samples: list[float] = []
    cpu_started = time.process_time()
    for i in range(first, first + repeat):
        q = queries[i % len(queries)]
        started = time.perf_counter()
        unwrap(await store.search(q, limit=10, threshold=-1.0, filter=flt, include_vectors=include_vectors))
        samples.append(time.perf_counter() - started)
    return samples, time.process_time() - cpu_started


async def _store_alone(
    store: BaseEmbeddingAdapter, queries: Any, repeat: int, flt: dict[str, str] | None = None
) -> _Timing:
    """The store alone, warm, query after query."""
    samples, cpu = await _store_samples(store, queries, repeat, flt)
    return _Timing(samples, cpu)


class _Paired:
    """A store and numpy timed in alternating rounds: each side's timing over all its rounds,
    and the median over the rounds of the store's p50 / numpy's p50 in the same round."""

    def __init__(self, store: _Timing, numpy: _Timing, ratio: float) -> None:
        self.store = store
        self.numpy = numpy
        self.ratio = ratio


async def _paired_one_thread(store: BaseEmbeddingAdapter, unit: Any, queries: Any, repeat: int) -> _Paired:
    """:func:`_paired` with numpy and the store both on one BLAS thread: no waking of BLAS's
    threads, the noisiest part of a search on a shared machine. (numpy multiplies its row-major
    matrix, the store its matrix kept by columns, which is faster on one thread.)"""
    saved = matrix_module.BLAS_THREADS
    matrix_module.BLAS_THREADS = "one"
    try:
        with threadpool_limits(1):
            return await _paired(store, unit, queries, repeat)
    finally:
        matrix_module.BLAS_THREADS = saved


async def _paired(
    store: BaseEmbeddingAdapter, unit: Any, queries: Any, repeat: int, *, include_vectors: bool = True
) -> _Paired:
    """The strict way on a machine whose load drifts: :data:`ROUNDS` rounds, each numpy alone
    then the store alone, each warm and in a tight loop over the same queries; a round's ratio
    compares two loops run moments apart, so a drift of the machine between rounds (which moved
    numpy's own p50 by 3x within a run here) does not enter it."""
    per_round = max(10, repeat // ROUNDS)
    store_all: list[float] = []
    numpy_all: list[float] = []
    store_cpu = numpy_cpu = 0.0
    ratios: list[float] = []
    for r in range(ROUNDS):
        first = r * per_round
        time.sleep(SETTLE_SECONDS)
        numpy_samples, cpu = _numpy_samples(unit, queries, per_round, first)
        numpy_cpu += cpu
        time.sleep(SETTLE_SECONDS)  # numpy's BLAS threads, still spinning, would slow the store's round
        samples, cpu = await _store_samples(store, queries, per_round, first=first, include_vectors=include_vectors)
        store_cpu += cpu
        ratios.append(percentiles(samples)[0] / percentiles(numpy_samples)[0])
        store_all.extend(samples)
        numpy_all.extend(numpy_samples)
    return _Paired(_Timing(store_all, store_cpu), _Timing(numpy_all, numpy_cpu), percentiles(ratios)[0])


def _paired_row(figure: str, paired: _Paired, threads: str) -> Row:
    """A row of the store's p50 beside numpy's over their paired rounds (no target)."""
    return Row(
        "vectors",
        f"{figure} (ratio: median of {ROUNDS} rounds)",
        paired.store.p50 * 1000,
        "ms",
        baseline=paired.numpy.p50 * 1000,
        baseline_name=f"numpy alone, {threads}, p50 (its rounds beside the store's)",
        ratio=paired.ratio,
        extra={**paired.store.extra(), **paired.numpy.extra("numpy_")},
    )


_WORDS = [
    "garden",
    "piano",
    "bicycle",
    "lisbon",
    "coffee",
    "teacher",
    "python",
    "marathon",
    "violin",
    "kayak",
    "weather",
    "invoice",
    "meeting",
    "birthday",
    "recipe",
    "tomato",
    "deadline",
    "project",
    "holiday",
    "passport",
    "museum",
    "football",
    "guitar",
]


async def _delete_template(path: Path, n: int) -> list[str]:
    """A file of ``n`` embeddings, every other one in thread ``t-gone``; the source ids of those."""
    rng = random.Random(3)
    vectors = np.random.default_rng(3).standard_normal((n, 64)).astype(np.float32)
    store = SQLiteEmbeddingAdapter(path=path, dimensions=64)
    unwrap(await store.connect())
    gone: list[str] = []
    try:
        for start in range(0, n, BATCH):
            batch = []
            for i in range(start, min(start + BATCH, n)):
                thread = "t-gone" if i % 2 == 0 else f"t-{i % 50}"
                if thread == "t-gone":
                    gone.append(f"msg-{i}")
                words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(8, 40)))
                batch.append(
                    {
                        "source_id": f"msg-{i}",
                        "source_type": "message",
                        "content": f"turn {i}: {words}",
                        "vector": vectors[i],
                        "metadata": {"agent_id": "a", "user_id": "u", "thread_id": thread},
                    }
                )
            unwrap(await store.add_embeddings(batch))
    finally:
        await store.disconnect()
    return gone


async def _by_thread(path: Path, gone: list[str]) -> int:
    store = SQLiteEmbeddingAdapter(path=path)
    unwrap(await store.connect())
    try:
        count: int = unwrap(await store.delete_by_filter(thread_id="t-gone"))
        return count
    finally:
        await store.disconnect()


async def _by_sources(path: Path, gone: list[str]) -> int:
    store = SQLiteEmbeddingAdapter(path=path)
    unwrap(await store.connect())
    try:
        count = 0
        for start in range(0, len(gone), 500):  # as cascade.derived.sweep_vectors does
            for embedding in unwrap(await store.get_by_sources(gone[start : start + 500])):
                unwrap(await store.delete_embedding(embedding.id))
                count += 1
        return count
    finally:
        await store.disconnect()


def _raw(path: Path, gone: list[str]) -> int:
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        rows = "SELECT rowid FROM embeddings WHERE thread_id = 't-gone'"
        db.execute(f"DELETE FROM embedding_terms WHERE rid IN ({rows})")
        count = db.execute("DELETE FROM embeddings WHERE thread_id = 't-gone'").rowcount
        db.execute("COMMIT")
        return count
    finally:
        db.close()


async def delete_rows(quick: bool) -> list[Row]:
    """Deleting half of a SQLite file's embeddings, by thread and by source ids, beside raw sqlite3."""
    n = 4_000 if quick else 20_000
    repeat = 3 if quick else 5
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        template = Path(tmp) / "template.db"
        gone = await _delete_template(template, n)
        work = Path(tmp) / "work.db"

        async def measure(fn: Any) -> tuple[float, float]:
            best, best_cpu = float("inf"), float("inf")
            for _ in range(repeat):
                for suffix in ("-wal", "-shm"):
                    Path(f"{work}{suffix}").unlink(missing_ok=True)
                shutil.copy(template, work)
                started, cpu = time.perf_counter(), time.process_time()
                result = fn(work, gone)
                count = await result if not isinstance(result, int) else result
                best = min(best, time.perf_counter() - started)
                best_cpu = min(best_cpu, time.process_time() - cpu)
                assert count == len(gone), (count, len(gone))
            return best, best_cpu

        raw, raw_cpu = await measure(_raw)
        for label, fn in (("by thread (delete_by_filter)", _by_thread), ("by source ids, one by one", _by_sources)):
            best, cpu = await measure(fn)
            rows.append(
                Row(
                    "vectors",
                    f"sqlite delete {len(gone):,} of {n:,} embeddings {label}, best of {repeat}",
                    best * 1000,
                    "ms",
                    baseline=raw * 1000,
                    baseline_name="raw sqlite3 DELETE of the same rows and terms, best",
                    ratio=best / raw,
                    extra={"cpu_ms": cpu * 1000, "raw_cpu_ms": raw_cpu * 1000},
                )
            )
    return rows


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
        time.sleep(0.5)  # BLAS's threads, spinning after the last product, go to sleep first
        with threadpool_limits(1):
            one_thread = _numpy_alone(unit, queries, repeat)
        baseline = _numpy_alone(unit, queries, repeat)
        for name, numpy_timing in (("default threads", baseline), ("1 BLAS thread", one_thread)):
            rows.append(
                Row(
                    "vectors",
                    f"numpy alone, {name}, {label} p50",
                    numpy_timing.p50 * 1000,
                    "ms",
                    extra=numpy_timing.extra(),
                )
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
                    paired = await _paired(store, unit, queries, repeat)
                    timing, beside = paired.store, paired.numpy
                    target = "<= 2x numpy" if n == 10_000 and name != "qdrant-local" else None
                    rows.append(
                        Row(
                            "vectors",
                            f"{name} search {label} p50 (ratio: median of {ROUNDS} paired rounds)",
                            timing.p50 * 1000,
                            "ms",
                            baseline=beside.p50 * 1000,
                            baseline_name="numpy alone, default threads, p50 (its rounds beside the store's)",
                            ratio=paired.ratio,
                            target=target,
                            passed=(paired.ratio <= 2.0) if target else None,
                            extra={
                                **timing.extra(),
                                **beside.extra("numpy_"),
                                "ratio_of_p50s": timing.p50 / beside.p50,
                                "inserts_per_s": n / fill_s,
                            },
                        )
                    )
                    if name != "qdrant-local":
                        alone = await _paired_one_thread(store, unit, queries, repeat)
                        rows.append(
                            _paired_row(f"{name} search {label} p50, both on 1 BLAS thread", alone, "1 BLAS thread")
                        )
                    if name != "qdrant-local" and n == 10_000:
                        # What of the store's time goes to making the hits' vectors (3,840 Python
                        # floats for ten hits of 384): the same search with include_vectors=False.
                        bare = await _paired(store, unit, queries, repeat, include_vectors=False)
                        rows.append(
                            _paired_row(f"{name} search {label} p50, hits without vectors", bare, "default threads")
                        )
                    rows.append(
                        Row(
                            "vectors",
                            f"{name} search {label}, best of {len(paired.store.samples)}",
                            timing.best * 1000,
                            "ms",
                            baseline=beside.best * 1000,
                            baseline_name="numpy alone, default threads, best",
                            ratio=timing.best / beside.best,
                        )
                    )
                    rows.append(
                        Row(
                            "vectors",
                            f"{name} search {label}, CPU time per search",
                            timing.cpu * 1000,
                            "ms",
                            baseline=beside.cpu * 1000,
                            baseline_name="numpy alone, default threads, CPU",
                            ratio=timing.cpu / beside.cpu,
                        )
                    )
                    if n != sizes[-1]:
                        continue
                    flt = {"agent_id": "agent-7"}
                    agent_numpy = _numpy_alone(agent_unit, queries, repeat)
                    filtered = await _store_alone(store, queries, repeat, flt)
                    is_target = name == "sqlite" and n == 100_000
                    rows.append(
                        Row(
                            "vectors",
                            f"{name} search {label}, 1 agent of {AGENTS}, p50",
                            filtered.p50 * 1000,
                            "ms",
                            baseline=agent_numpy.p50 * 1000,
                            baseline_name="numpy alone over that agent's rows",
                            ratio=filtered.p50 / agent_numpy.p50,
                            target="< 30 ms" if is_target else None,
                            passed=(filtered.p50 * 1000 < 30) if is_target else None,
                            extra=filtered.extra(),
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
    rows.extend(await delete_rows(quick))
    return rows
