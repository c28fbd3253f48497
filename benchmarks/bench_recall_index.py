"""The recall index at scale: ``Memory.search`` and ``build_context(hybrid)`` for one user with
10,000 -> 100,000 (-> 1,000,000 with ``--huge``) turns, beside the code before the index.

**Load.** One user, ``TURNS_PER_THREAD`` (50) turns a thread, threads 6 hours apart (a thread's
turns share its time), the texts the BEAM-100k messages in order and repeated (5,732 messages,
2,130 characters on average). Everything goes through the product's own write path:
``Memory.add`` of each thread's 50 messages (``add_entry`` one by one), the ``RecallIndexer``
writing the records in the background from the change events, the ``MessageIndex`` embedding
every turn into the store's vectors, then ``Memory.flush()``, then one ``RecallIndexer.catch_up()``
(timed apart: it is what the first search of a process pays once on a store no indexer checked,
every thread read; afterwards the watermark is current, as for any store searched before). Only the embedder is made fast for
the load: :class:`SeededEmbedder` (a deterministic unit vector seeded by the text's hash, 384
dimensions). How long the load took is printed.

**Queries.** Each size is measured in fresh processes (``--worker``) opening ``Memory`` on the
file as a user would, with the local model (all-MiniLM-L6-v2, 384 dimensions) embedding the
queries when the ``[local]`` extra is installed (its first embedding is made before any timing:
loading the model is not recall's warm-up). The queries are the BEAM probing questions.

* the **first** ``search`` (or ``build_context``) after the restart, beside the warm p50 of the
  same call in the same process;
* warm ``search(query, user_id)`` and ``build_context(newest thread, current_input=query,
  max_tokens=4000)`` (strategy ``hybrid``) p50/p95 over the first ``QUERIES`` (40) questions:
  ``ROUNDS`` (3) rounds up to 10,000 turns, the round of the best p95 kept (the machine is
  shared), each round's p95 in ``extra``, one round above 10,000; beside them the
  engine's own calls of the same search (``recall_keyword`` for 200 candidates, the vector search
  of the message index by user, and by the newest thread as the build's own recall asks it: 50
  nearest) and the query's embedding;
* the process's RSS after opening and after the warm rounds, and the file's size per 100,000
  turns.

**Baseline.** The code of commit ``82b1398`` (the last before the index; ``search`` read the
whole active path of the user's 20 newest threads and ranked it in Python) loads a file of the
smallest size the same way and is timed by the same worker, from a ``git archive`` of that
commit. PostgreSQL is measured too when
``COGMEM_TEST_POSTGRES_URL`` is set, in a schema of its own dropped afterwards.

Targets (issue 32): ``search`` and ``build_context(hybrid)`` p95 under 50 ms at 1M turns, at
most 1.5x from 10k to 1M; the first call after a restart within 2x of a warm one; RSS growing
at most 100 MB from 10k to 1M. (``MemoryItems.add_many(500)`` beside a raw batch insert is
``bench_add_many``.)

Run: ``python -m benchmarks --only recall_index`` or ``python -m benchmarks.bench_recall_index
[--sizes 10000 100000] [--huge] [--no-before] [--no-postgres] [--no-sqlite] [--profile PATH]
[--same-load COMMIT] [--keep] [--items N] [--queries N]``; ``--items N`` also loads N memory items (each
in a slot of its own, active) and N facts (as ``remember`` saves them) after the turns, the
"plus items and facts" of the targets (the baseline of ``82b1398`` is then not measured); ``--same-load`` loads SQLite's files (and PostgreSQL's schemas) with
``COMMIT``'s code and measures them with it, then opens them once with this checkout (its
migrations, timed) and measures them again: each size beside the code before, on the same data,
in one run; on PostgreSQL (where a schema this checkout migrated cannot be opened by older code
again) a schema loaded by each side is measured ``--alternate`` (3) times, the sides in turn, each
figure the median of its runs, then ``COMMIT``'s schema once more after this checkout migrated it;
``--huge`` (or ``COGMEM_BENCH_HUGE=1``) adds 1,000,000 turns; ``--quick`` (the runner's) measures
1,000 and 5,000 turns on SQLite without the baseline; ``--keep`` leaves the loaded stores for another look.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .common import Row, percentiles

HERE = Path(__file__).parent
REPO = HERE.parent
BEFORE_COMMIT = "82b1398"
SIZES = (10_000, 100_000)
HUGE = 1_000_000
TURNS_PER_THREAD = 50
USER = "reader"
DIMENSIONS = 384
QUERIES = 40
#: Rounds of the warm queries up to 10,000 turns; one round above (a round of slow searches
#: takes minutes on the shared machine).
ROUNDS = 3
START = datetime(2022, 1, 1, tzinfo=UTC)


def _seeded_class() -> Any:
    from cogitator_memory.embeddings.base import BaseEmbeddingService

    class SeededEmbedder(BaseEmbeddingService):
        """A fast deterministic embedder for loading: a unit vector seeded by the text's hash."""

        provider = "seeded"

        def __init__(self, dimensions: int = DIMENSIONS) -> None:
            super().__init__(dimensions=dimensions, batch_size=256)

        async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
            import numpy as np

            out = []
            for text in texts:
                seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
                vector = np.random.default_rng(seed).standard_normal(self.dimensions).astype(np.float32)
                out.append((vector / np.linalg.norm(vector)).tolist())
            return out

    return SeededEmbedder


def _texts() -> tuple[list[tuple[str, str]], list[str]]:
    """The BEAM messages (role, text) and probing questions."""
    from .beam import load_chats

    chats = load_chats()
    messages = [("user" if m.role == "user" else "assistant", m.content) for c in chats for m in c.messages]
    questions = [q.question for c in chats for q in c.questions]
    return messages, questions


def _config(store: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {**store, "context_builder": {"strategy": "hybrid"}}
    if store.get("adapter") == "postgres":
        config["options"] = {"schema": store["schema"]}
        config.pop("schema")
    return config


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def file_mb(path: Path) -> float:
    """The SQLite file with its WAL and shared memory, in MB."""
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6


def first_thread_at(threads: int) -> datetime:
    """When the first of ``threads`` threads (6 hours apart) is dated: :data:`START`, or earlier
    when the last would be dated after today. A thread dated after the indexer's watermark (the
    real time of its last catch-up) is checked again by every process's first search: loaded
    from 2022, most of a million turns' 20,000 threads were dated after today, and the first
    search after a restart re-checked 12,000 of them (108 s)."""
    latest = datetime.now(UTC) - timedelta(days=1)
    return min(START, latest - timedelta(hours=6 * threads))


def _sentences() -> list[str]:
    """The sentences of the BEAM messages (30 to 200 characters): the texts of the items and facts."""
    messages, _ = _texts()
    return [s for _, text in messages for s in re.split(r"(?<=[.!?])\s+", text) if 30 <= len(s) <= 200]


async def load_items(memory: Any, count: int) -> dict[str, Any]:
    """Write ``count`` memory items (each in a slot of its own, verified, so active and indexed)
    and ``count`` facts (as ``remember`` saves them, with their vectors, in batches) of the user
    through ``memory``: the "plus items and facts" of issue 32's scale figures."""
    from .bench_remember import add_facts

    sentences = _sentences()
    scope = {"agent_id": memory.agent_id, "user_id": USER}
    started = time.perf_counter()
    for first in range(0, count, 500):
        batch = [
            {
                "kind": "fact",
                "subject": "user",
                "attribute": f"note {i}",
                "value": f"{sentences[i % len(sentences)]} (#{i})",
                "trust": "user",
                "confidence": 0.9,
                "verified": True,
                "evidence": [{"entry_id": f"entry_{i}", "thread_id": "thread_notes", "quote": "noted"}],
                "scope": scope,
            }
            for i in range(first, min(count, first + 500))
        ]
        await memory.items.add_many(batch)
    items_s = time.perf_counter() - started
    facts = [f"{sentences[(i * 7 + 3) % len(sentences)]} [fact {i}]" for i in range(count)]
    await add_facts(memory, memory.embedding_service, facts, USER)
    await memory.flush()
    return {
        "items": count,
        "facts": count,
        "items load s": items_s,
        "facts load s": time.perf_counter() - started - items_s,
    }


async def load(store: dict[str, Any], turns: int, items: int = 0) -> dict[str, Any]:
    """Write ``turns`` turns for one user through ``Memory`` (see the module docs), then
    ``items`` memory items and as many facts (:func:`load_items`)."""
    from cogitator_memory import Memory, frozen_clock

    messages, _ = _texts()
    memory = Memory(_config(store), embedding_service=_seeded_class()())
    await memory.connect()
    started = time.perf_counter()
    threads = max(1, turns // TURNS_PER_THREAD)
    start = first_thread_at(threads)
    for t in range(threads):
        batch = [
            {"role": role, "content": text}
            for role, text in (messages[(t * TURNS_PER_THREAD + i) % len(messages)] for i in range(TURNS_PER_THREAD))
        ]
        with frozen_clock(start + timedelta(hours=6 * t)):
            await memory.add(batch, user_id=USER)
        if t % 100 == 99:
            print(
                f"  loaded {(t + 1) * TURNS_PER_THREAD:,} turns, {time.perf_counter() - started:.0f}s", file=sys.stderr
            )
    written = time.perf_counter() - started
    await memory.flush()
    flushed = time.perf_counter() - started
    out = {"turns": threads * TURNS_PER_THREAD, "threads": threads, "write s": written, "load s": flushed}
    if items:
        out.update(await load_items(memory, items))
    indexer = getattr(memory, "indexer", None)  # none before the index
    if indexer is not None:
        # what the first search of a process does once on a store no indexer has checked (an
        # import, a store written by processes that never searched): every thread checked
        t0 = time.perf_counter()
        report = await indexer.catch_up()
        out["catch-up s"] = time.perf_counter() - t0
        out["catch-up threads indexed again"] = report.threads_indexed
    await memory.close()
    return out


async def measure(
    store: dict[str, Any], first: str, rounds: int, queries: int, profile: str | None = None
) -> dict[str, Any]:
    """In a fresh process: the first ``first`` call ("search" or "build") after opening, then
    the warm rounds and the engine's own calls (see the module docs)."""
    from cogitator_memory import Memory, unwrap

    _, questions = _texts()
    questions = questions[:queries]
    out: dict[str, Any] = {"rss start MB": _rss_mb()}
    service: Any
    try:
        from cogitator_memory.embeddings.local import LocalEmbeddingService

        service = LocalEmbeddingService(batch_size=16)
        await service.embed("warm the model up")
        out["query embedder"] = "local all-MiniLM-L6-v2"
    except Exception:
        service = _seeded_class()()
        out["query embedder"] = "seeded"
    out["rss model MB"] = _rss_mb()
    opened = time.perf_counter()
    memory = Memory(_config(store), embedding_service=service)
    await memory.connect()
    out["open ms"] = (time.perf_counter() - opened) * 1000
    out["rss open MB"] = _rss_mb()
    page = unwrap(await memory.adapter.list_threads(metadata={"user_id": USER}, limit=1))
    newest = page.threads[0].id

    async def search(q: str) -> Any:
        return await memory.search(q, user_id=USER)

    async def build(q: str) -> Any:
        return await memory.build_context(newest, user_id=USER, current_input=q, max_tokens=4000)

    calls = {"search": search, "build": build}
    t0 = time.perf_counter()
    await calls[first](questions[0])
    out[f"first {first} ms"] = (time.perf_counter() - t0) * 1000
    if first == "build":
        # the first build only: the warm figure beside it comes from this process too
        for q in questions[1:6]:
            await build(q)
        times = []
        for q in questions[6:26]:
            t0 = time.perf_counter()
            await build(q)
            times.append((time.perf_counter() - t0) * 1000)
        out["build p50 ms"], out["build p95 ms"] = percentiles(times)
        await memory.close()
        return out
    for q in questions[1:6]:
        await search(q)
        await build(q)
    for _round in range(rounds):
        for name, call in calls.items():
            times = []
            for q in questions:
                t0 = time.perf_counter()
                result = await call(q)
                times.append((time.perf_counter() - t0) * 1000)
                if name == "build":
                    assert not result.errors, result.errors
            p50, p95 = percentiles(times)
            out.setdefault(f"{name} p95 ms per round", []).append(round(p95, 1))
            if p95 < out.get(f"{name} p95 ms", float("inf")):
                out[f"{name} p50 ms"], out[f"{name} p95 ms"] = p50, p95
    if profile:  # one more round under cProfile, after the timed ones (it slows Python down)
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        for q in questions:
            await search(q)
            await build(q)
        profiler.disable()
        profiler.dump_stats(profile)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    out["rss end MB"] = _rss_mb()
    await _engine_calls(memory, service, questions, out, newest)
    await memory.close()
    return out


async def _engine_calls(
    memory: Any, service: Any, questions: Sequence[str], out: dict[str, Any], thread_id: str
) -> None:
    """The engine's calls a search makes, alone: the query's embedding, the keyword channel
    (``recall_keyword``, 200 candidates), the vector search of the messages by user, and of the
    thread ``thread_id``'s (50 nearest: the build's recall inside its conversation)."""
    from cogitator_memory import unwrap

    nearest_ids: Any = None
    with contextlib.suppress(ImportError):  # the code before the index has no ids-only search
        from cogitator_memory.vectors.base import nearest_ids

    embeds, keywords, vectors, in_thread = [], [], [], []
    has_index = hasattr(memory.adapter, "recall_keyword")
    for q in questions:
        t0 = time.perf_counter()
        vector = await service.embed(q)
        embeds.append((time.perf_counter() - t0) * 1000)
        if has_index:
            from cogitator_memory.index.records import RecallFilter

            flt = RecallFilter(agent_id=memory.agent_id, user_id=USER, kinds=["turn"])
            t0 = time.perf_counter()
            unwrap(await memory.adapter.recall_keyword(q, filter=flt, limit=200))
            keywords.append((time.perf_counter() - t0) * 1000)
        if memory.vectors is not None:
            scope = {"metadata": {"index": "messages"}, "user_id": USER}
            t0 = time.perf_counter()
            unwrap(await memory.vectors.search(vector, limit=200, threshold=-1.0, filter=scope, include_vectors=False))
            vectors.append((time.perf_counter() - t0) * 1000)
            if nearest_ids is not None:
                thread_scope = {"metadata": {"index": "messages"}, "thread_id": thread_id}
                t0 = time.perf_counter()
                unwrap(await nearest_ids(memory.vectors, vector, limit=50, threshold=-1.0, filter=thread_scope))
                in_thread.append((time.perf_counter() - t0) * 1000)
    parts = (("embed", embeds), ("recall_keyword", keywords), ("vector search", vectors), ("thread search", in_thread))
    for name, samples in parts:
        if samples:
            out[f"{name} p50 ms"], out[f"{name} p95 ms"] = percentiles(samples)


# ----- orchestration -------------------------------------------------------------------------


def before_tree(commit: str = BEFORE_COMMIT) -> Path | None:
    """The ``src`` folder of ``commit``, from ``git archive`` into a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="cogmem-before-"))
    try:
        archive = subprocess.run(["git", "archive", commit, "src"], cwd=REPO, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"[recall_index] no baseline: git archive {commit} failed: {exc}", file=sys.stderr)
        return None
    return folder / "src"


def worker(task: dict[str, Any], src: Path | None = None) -> dict[str, Any]:
    """Run ``task`` in a fresh process (with ``src`` first on the path: the code before)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_recall_index", "--worker", json.dumps(task)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


async def open_once(store: dict[str, Any]) -> dict[str, Any]:
    """Open ``Memory`` on the store and close it: the migrations a file written by older code
    gets, timed (so that the measuring processes open a file already migrated)."""
    from cogitator_memory import Memory

    started = time.perf_counter()
    memory = Memory(_config(store), embedding_service=_seeded_class()())
    await memory.connect()
    opened = time.perf_counter() - started
    await memory.close()
    return {"first open (migration) s": opened}


def measure_size(
    store: dict[str, Any],
    turns: int,
    *,
    src: Path | None = None,
    queries: int = QUERIES,
    profile: str | None = None,
    loaded: bool = False,
    items: int = 0,
) -> dict[str, Any]:
    """Load ``turns`` turns and ``items`` items and facts (unless ``loaded``: then the file,
    written by older code, is opened once, migrating it) and measure them (each step a fresh
    process)."""
    if loaded:
        figures = worker({"do": "open", "store": store}, src)
    else:
        figures = worker({"do": "load", "store": store, "turns": turns, "items": items}, src)
    if store["adapter"] == "sqlite":
        figures["file MB"] = file_mb(Path(store["path"]))
    figures.update(measure_loaded(store, turns, src=src, queries=queries, profile=profile))
    return figures


def measure_loaded(
    store: dict[str, Any], turns: int, *, src: Path | None = None, queries: int = QUERIES, profile: str | None = None
) -> dict[str, Any]:
    """Measure a loaded store: the first search and the warm rounds in one fresh process, the
    first build in another (see the module docs)."""
    figures: dict[str, Any] = {}
    rounds = ROUNDS if turns <= 10_000 else 1
    common = {"do": "measure", "store": store, "rounds": rounds, "queries": queries}
    figures.update(worker({**common, "first": "search", "profile": profile}, src))
    built = worker({**common, "first": "build"}, src)
    figures["first build ms"] = built["first build ms"]
    figures["build p50 ms (first-build process)"] = built["build p50 ms"]
    return figures


def _median_figures(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each number's median over ``runs`` (each list joined), with each run's first-call ratios."""
    out: dict[str, Any] = {}
    for key in runs[0]:
        values = [r[key] for r in runs if key in r]
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            out[key] = statistics.median(values)
        elif all(isinstance(v, list) for v in values):
            out[key] = [x for v in values for x in v]
        else:
            out[key] = values[-1]
    out["first search / warm p50 per run"] = [round(r["first search ms"] / r["search p50 ms"], 2) for r in runs]
    out["first build / warm p50 per run"] = [
        round(r["first build ms"] / r["build p50 ms (first-build process)"], 2) for r in runs
    ]
    out["runs"] = len(runs)
    return out


def alternate_postgres(
    make: Any, turns: int, commit: str, src: Path, times: int
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """PostgreSQL beside ``commit``'s code (``src``): a schema loaded by each, measured ``times``
    times each, alternately (the shared machine's load moves between processes; a schema that
    this checkout migrated cannot be opened by older code again), each figure the median of its
    runs; then the schema ``commit`` loaded, opened once by this checkout (its migrations) and
    measured once. Returns (``commit``'s figures, this checkout's, this checkout's on ``commit``'s schema)."""
    old, new = make(turns), make(turns)
    try:
        loads = (
            worker({"do": "load", "store": old, "turns": turns}, src),
            worker({"do": "load", "store": new, "turns": turns}),
        )
        runs: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
        for i in range(times):
            runs[0].append(measure_loaded(old, turns, src=src))
            runs[1].append(measure_loaded(new, turns))
            print(f"[recall_index] postgres {turns:,} run {i + 1}/{times}: {json.dumps(runs)}", file=sys.stderr)
        migrated = measure_size(old, turns, loaded=True)
    finally:
        _drop_schema(old)
        _drop_schema(new)
    before = {**loads[0], **_median_figures(runs[0])}
    after = {**loads[1], **_median_figures(runs[1])}
    return before, after, migrated


def _postgres_store(url: str) -> dict[str, Any]:
    return {"adapter": "postgres", "connection_string": url, "schema": f"bench_ri_{uuid.uuid4().hex[:8]}"}


def _drop_schema(store: dict[str, Any]) -> None:
    import psycopg

    with psycopg.connect(store["connection_string"], autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {store['schema']} CASCADE")


def rows_for(
    engine: str, sizes: Sequence[int], figures: dict[int, dict[str, Any]], before: dict[str, Any] | None
) -> list[Row]:
    """The rows of one engine: each size's p95 beside the smallest size's (growth) and the code
    before; the first calls beside the warm ones; RSS and file size."""
    group = f"recall index ({engine})"
    rows: list[Row] = []
    small, big = sizes[0], sizes[-1]
    for name, label in (("search", "Memory.search"), ("build", "build_context(hybrid, 4,000 tokens)")):
        for n in sizes:
            f = figures[n]
            value = f[f"{name} p95 ms"]
            rows.append(
                Row(
                    group,
                    f"{label} p95, {n:,} turns (p50 {f[f'{name} p50 ms']:.1f} ms)",
                    value,
                    "ms",
                    baseline=figures[small][f"{name} p95 ms"] if n != small else None,
                    baseline_name=f"same at {small:,} turns" if n != small else None,
                    ratio=value / figures[small][f"{name} p95 ms"] if n != small else None,
                    target="< 50 ms; <= 1.5x from 10k to 1M",
                    passed=value < 50 and (n == small or value / figures[small][f"{name} p95 ms"] <= 1.5),
                    extra={k: v for k, v in f.items() if k.startswith(name) or k.endswith("per round")},
                )
            )
        if before is not None:
            value = figures[small][f"{name} p95 ms"]
            base = before[f"{name} p95 ms"]
            rows.append(
                Row(
                    group,
                    f"{label} p95, {small:,} turns, beside the code before the index",
                    value,
                    "ms",
                    baseline=base,
                    baseline_name=f"{BEFORE_COMMIT} (20 newest threads read), same load",
                    ratio=value / base,
                    extra={"before": before},
                )
            )
        for n in sizes:
            f = figures[n]
            first = f[f"first {name} ms"]
            warm = f[f"{name} p50 ms"] if name == "search" else f["build p50 ms (first-build process)"]
            rows.append(
                Row(
                    group,
                    f"first {label} after a restart (fresh process), {n:,} turns",
                    first,
                    "ms",
                    baseline=warm,
                    baseline_name="warm p50, same process",
                    ratio=first / warm,
                    target="<= 2x warm",
                    passed=first / warm <= 2,
                )
            )
    for n in sizes:
        f = figures[n]
        for part in ("embed", "recall_keyword", "vector search", "thread search"):
            if f"{part} p95 ms" in f:
                rows.append(
                    Row(
                        group,
                        f"of a search, {part} alone p95, {n:,} turns",
                        f[f"{part} p95 ms"],
                        "ms",
                        baseline=f["search p95 ms"],
                        baseline_name="Memory.search p95",
                        ratio=f[f"{part} p95 ms"] / f["search p95 ms"],
                    )
                )
    grown = figures[big]["rss end MB"] - figures[small]["rss end MB"]
    rows.append(
        Row(
            group,
            f"process RSS after the warm rounds, {big:,} turns",
            figures[big]["rss end MB"],
            "MB",
            baseline=figures[small]["rss end MB"],
            baseline_name=f"same at {small:,} turns",
            ratio=figures[big]["rss end MB"] / figures[small]["rss end MB"],
            target="grows <= 100 MB from 10k to 1M",
            passed=grown <= 100,
            extra={"growth MB": grown, **{f"rss open MB at {n}": figures[n]["rss open MB"] for n in sizes}},
        )
    )
    if "file MB" in figures[big]:
        per = figures[big]["file MB"] / figures[big]["turns"] * 100_000
        rows.append(
            Row(
                group,
                f"file size per 100,000 turns (at {big:,})",
                per,
                "MB",
                baseline=figures[small]["file MB"] / figures[small]["turns"] * 100_000,
                baseline_name=f"same at {small:,} turns",
                extra={f"load s at {n}": figures[n].get("load s") for n in sizes},
            )
        )
    for n in sizes:
        if "load s" not in figures[n]:  # opened, not loaded (--same-load)
            continue
        rows.append(
            Row(group, f"load through Memory.add + flush, {n:,} turns", figures[n]["load s"], "s", extra=figures[n])
        )
        if "catch-up s" in figures[n]:
            rows.append(
                Row(
                    group,
                    f"catch-up checking every thread (once, on a store no indexer checked), {n:,} turns",
                    figures[n]["catch-up s"],
                    "s",
                    baseline=figures[n]["load s"],
                    baseline_name="the load",
                    ratio=figures[n]["catch-up s"] / figures[n]["load s"],
                )
            )
    return rows


def same_load_rows(
    engine: str,
    sizes: Sequence[int],
    figures: dict[int, dict[str, Any]],
    before: dict[int, dict[str, Any]],
    commit: str,
    label: str = "same data",
) -> list[Row]:
    """Each size's figures beside those of ``commit``'s code on the same file (or, ``label``
    says, on data this checkout loaded)."""
    group = f"recall index ({engine}), beside {commit}, {label}"
    rows: list[Row] = []
    names = (
        ("search p95 ms", "Memory.search p95", "ms"),
        ("build p95 ms", "build_context(hybrid) p95", "ms"),
        ("first search ms", "first search after a restart", "ms"),
        ("first build ms", "first build_context after a restart", "ms"),
        ("build p50 ms (first-build process)", "build_context(hybrid) p50 in the first-build process", "ms"),
        ("search p50 ms", "Memory.search p50", "ms"),
        ("build p50 ms", "build_context(hybrid) p50", "ms"),
        ("recall_keyword p50 ms", "recall_keyword (200 candidates) alone p50", "ms"),
        ("recall_keyword p95 ms", "recall_keyword (200 candidates) alone p95", "ms"),
        ("vector search p95 ms", "vector search of the user's messages alone p95", "ms"),
        ("thread search p95 ms", "vector search of the newest thread's messages alone p95", "ms"),
        ("rss end MB", "process RSS after the warm rounds", "MB"),
    )
    for n in sizes:
        for key, label, unit in names:
            if key in figures[n] and key in before[n]:
                rows.append(
                    Row(
                        group,
                        f"{label}, {n:,} turns",
                        figures[n][key],
                        unit,
                        baseline=before[n][key],
                        baseline_name=f"{commit}, same file",
                        ratio=figures[n][key] / before[n][key] if before[n][key] else None,
                        extra={"before": before[n]} if key == "search p95 ms" else {},
                    )
                )
    return rows


def run_all(
    sizes: Sequence[int],
    *,
    with_before: bool = True,
    with_postgres: bool = True,
    with_sqlite: bool = True,
    profile: str | None = None,
    same_load: str | None = None,
    alternate: int = 3,
    keep: bool = False,
    items: int = 0,
    queries: int = QUERIES,
) -> list[Row]:
    """Every engine and size and the baseline; the rows of the table. With ``same_load`` (a
    commit), SQLite's files and PostgreSQL's schemas are loaded and measured by that commit's
    code first, then measured by this checkout's (after opening once: its migrations), each size
    beside the other; on PostgreSQL a schema loaded by each is measured ``alternate`` times, in
    turn (:func:`alternate_postgres`). With ``keep`` the stores measured without ``same_load``
    (SQLite's files, PostgreSQL's schemas) are left for another look, their names printed.
    ``items`` adds that many memory items and facts to each store after its turns (not to the
    baseline of ``82b1398``, which is then not measured); ``queries`` questions are timed."""
    if items:
        with_before = False
    rows: list[Row] = []
    folder = Path(tempfile.mkdtemp(prefix="bench-recall-index-"))
    engines: list[tuple[str, Any]] = []
    if with_sqlite:
        engines.append(("sqlite", lambda n: {"adapter": "sqlite", "path": str(folder / f"{n}.db")}))
    url = os.environ.get("COGMEM_TEST_POSTGRES_URL")
    if with_postgres and url:
        engines.append(("postgres", lambda n: _postgres_store(url)))
    try:
        for engine, make in engines:
            figures: dict[int, dict[str, Any]] = {}
            same = before_tree(same_load) if same_load else None
            before_at: dict[int, dict[str, Any]] = {}
            migrated: dict[int, dict[str, Any]] = {}
            for n in sizes:
                started = time.perf_counter()
                if same is not None and engine == "postgres":
                    before_at[n], figures[n], migrated[n] = alternate_postgres(make, n, str(same_load), same, alternate)
                    print(f"[recall_index] {same_load} {n:,}: {json.dumps(before_at[n])}", file=sys.stderr)
                    print(f"[recall_index] {engine} {n:,}: {json.dumps(figures[n])}", file=sys.stderr)
                    print(
                        f"[recall_index] {engine} {n:,} on {same_load}'s schema: {json.dumps(migrated[n])}",
                        file=sys.stderr,
                    )
                    continue
                store = make(n)
                try:
                    if same is not None:
                        before_at[n] = measure_size(store, n, src=same, items=items, queries=queries)
                        print(f"[recall_index] {same_load} {n:,}: {json.dumps(before_at[n])}", file=sys.stderr)
                    figures[n] = measure_size(
                        store,
                        n,
                        profile=profile if n == sizes[-1] else None,
                        loaded=same is not None,
                        items=items,
                        queries=queries,
                    )
                finally:
                    if keep:
                        print(f"[recall_index] kept {engine} {n:,}: {json.dumps(store)}", file=sys.stderr)
                    elif engine == "postgres":
                        _drop_schema(store)
                print(
                    f"[recall_index] {engine} {n:,}: {time.perf_counter() - started:.0f}s {json.dumps(figures[n])}",
                    file=sys.stderr,
                )
            before = None
            src = before_tree() if with_before and engine == "sqlite" else None
            if src is not None:
                store = {"adapter": "sqlite", "path": str(folder / f"before-{sizes[0]}.db")}
                before = measure_size(store, sizes[0], src=src)
                print(f"[recall_index] before {sizes[0]:,}: {json.dumps(before)}", file=sys.stderr)
                shutil.rmtree(src.parent, ignore_errors=True)
            rows.extend(rows_for(engine, sizes, figures, before))
            if same is not None:
                label = "schemas loaded by each, measured alternately" if migrated else "same data"
                rows.extend(same_load_rows(engine, sizes, figures, before_at, str(same_load), label))
                if migrated:
                    label = f"this checkout once on {same_load}'s schema (migrated)"
                    rows.extend(same_load_rows(engine, sizes, migrated, before_at, str(same_load), label))
                shutil.rmtree(same.parent, ignore_errors=True)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)
    return rows


async def run(quick: bool) -> list[Row]:
    """The benchmark entry point (``--quick``: 1,000 and 5,000 turns, no baseline, no PostgreSQL)."""
    huge = os.environ.get("COGMEM_BENCH_HUGE") == "1"
    sizes = (1_000, 5_000) if quick else (*SIZES, *((HUGE,) if huge else ()))
    return await asyncio.to_thread(run_all, sizes, with_before=not quick, with_postgres=not quick)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_recall_index")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    parser.add_argument("--huge", action="store_true", help=f"add {HUGE:,} turns")
    parser.add_argument("--no-before", action="store_true", help=f"skip the baseline of {BEFORE_COMMIT}")
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--profile", default=None, help="write cProfile stats of the largest size's warm rounds here")
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--same-load",
        default=None,
        metavar="COMMIT",
        help="load SQLite's files and PostgreSQL's schemas with COMMIT's code, measure them with it, then with this"
        " checkout (on PostgreSQL: a schema loaded by each, measured --alternate times in turn)",
    )
    parser.add_argument(
        "--alternate", type=int, default=3, help="runs of each side on PostgreSQL with --same-load (default 3)"
    )
    parser.add_argument(
        "--keep", action="store_true", help="leave the loaded SQLite files and PostgreSQL schemas (names printed)"
    )
    parser.add_argument(
        "--items", type=int, default=0, help="also load this many memory items and as many facts (no baseline)"
    )
    parser.add_argument("--queries", type=int, default=QUERIES, help=f"questions timed (default {QUERIES})")
    args = parser.parse_args(argv)
    if args.queries < 10:  # the first build's process warms up on 5 questions and times those after
        parser.error("--queries must be at least 10")
    if args.worker:
        task = json.loads(args.worker)
        if task["do"] == "load":
            result = asyncio.run(load(task["store"], task["turns"], task.get("items", 0)))
        elif task["do"] == "open":
            result = asyncio.run(open_once(task["store"]))
        else:
            result = asyncio.run(
                measure(task["store"], task["first"], task["rounds"], task["queries"], task.get("profile"))
            )
        print(json.dumps(result))
        return 0
    sizes = [*args.sizes, *([HUGE] if args.huge or os.environ.get("COGMEM_BENCH_HUGE") == "1" else [])]
    rows = run_all(
        sizes,
        with_before=not args.no_before,
        with_postgres=not args.no_postgres,
        with_sqlite=not args.no_sqlite,
        profile=args.profile,
        same_load=args.same_load,
        alternate=args.alternate,
        keep=args.keep,
        items=args.items,
        queries=args.queries,
    )
    for row in rows:
        print(json.dumps(row.as_dict()))
    if args.json:
        Path(args.json).write_text(json.dumps([r.as_dict() for r in rows], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
