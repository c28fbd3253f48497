"""The SQLite store's vector search as the recall index's vector channel meets it, the code
before the binary codes beside this checkout, on the same files.

**Load.** ``N`` embeddings of one user (384 dimensions, random unit vectors, short content,
``metadata={"user_id": "u", "index": "messages"}``), written through
``SQLiteEmbeddingAdapter.add_embeddings`` in batches of 2,000 by the code of ``--before``
(default ``7f36a76``, the last commit before the codes: a whole float32 matrix per scope, loaded
at the first search and again after every write), from a ``git archive`` of its ``src``.

**Measured**, each side in a fresh process on the same file (the before side first; then this
checkout opens it once, which writes the codes: timed), the search the channel makes (limit
200, ``include_vectors=False``, filtered by user and index):

* the first search after opening (a restart);
* warm searches, p50 / p95 of 40;
* the agent loop: one embedding added, then a search, 20 times, p50 / p95 of the searches;
* the process's RSS after opening and at the end;
* CPU time (``time.process_time``) beside each wall-clock figure: the machine is shared.

Run: ``python -m benchmarks.bench_vector_codes [--sizes 10000 100000] [--before COMMIT]``;
``--before ''`` loads and measures with this checkout alone (no baseline: for 1,000,000, where
the code before reloads a 1.5 GB matrix at every search after a write; 3.4 s at 100,000).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .bench_recall_index import before_tree
from .common import Row, percentiles

REPO = Path(__file__).parent.parent
BEFORE = "7f36a76"
DIMS = 384
SCOPE = {"user_id": "u", "metadata": {"index": "messages"}}


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _doc(i: int, vector: Any) -> dict[str, Any]:
    return {
        "id": f"emb_{i}",
        "source_id": f"s{i}",
        "source_type": "message",
        "content": f"turn {i}",
        "vector": vector,
        "metadata": {"user_id": "u", "index": "messages"},
    }


async def load(path: str, n: int) -> dict[str, Any]:
    """Write ``n`` embeddings (see the module docs)."""
    from cogitator_memory import unwrap
    from cogitator_memory.vectors import SQLiteEmbeddingAdapter

    rng = np.random.default_rng(0)
    started = time.perf_counter()
    async with SQLiteEmbeddingAdapter(path=path) as store:
        for start in range(0, n, 2000):
            block = rng.standard_normal((min(2000, n - start), DIMS)).astype(np.float32)
            unwrap(await store.add_embeddings([_doc(start + i, v) for i, v in enumerate(block)]))
    return {"load s": time.perf_counter() - started}


async def measure(path: str) -> dict[str, Any]:
    """In a fresh process: the figures of the module docs."""
    from cogitator_memory import unwrap
    from cogitator_memory.vectors import SQLiteEmbeddingAdapter

    rng = np.random.default_rng(1)
    queries = rng.standard_normal((61, DIMS)).astype(np.float32)
    out: dict[str, Any] = {"rss start MB": _rss_mb()}
    t0 = time.perf_counter()
    async with SQLiteEmbeddingAdapter(path=path) as store:
        out["open ms"] = (time.perf_counter() - t0) * 1000
        out["rss open MB"] = _rss_mb()

        async def search(q: Any) -> tuple[float, float]:
            wall, cpu = time.perf_counter(), time.process_time()
            unwrap(await store.search(q, limit=200, threshold=-1.0, filter=SCOPE, include_vectors=False))
            return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000

        out["first search ms"], out["first search CPU ms"] = await search(queries[0])
        warm = [await search(q) for q in queries[1:41]]
        out["warm p50 ms"], out["warm p95 ms"] = percentiles([w for w, _ in warm])
        out["warm CPU p50 ms"], _ = percentiles([c for _, c in warm])
        loop = []
        for i, q in enumerate(queries[41:61]):
            new = _doc(0, rng.standard_normal(DIMS).astype(np.float32))
            unwrap(await store.add_embeddings([{**new, "id": f"emb_loop_{os.getpid()}_{i}"}]))
            loop.append(await search(q))
        out["after a write p50 ms"], out["after a write p95 ms"] = percentiles([w for w, _ in loop])
        out["after a write CPU p50 ms"], _ = percentiles([c for _, c in loop])
        out["rss end MB"] = _rss_mb()
    return out


def worker(task: dict[str, Any], src: Path | None = None) -> dict[str, Any]:
    """Run ``task`` in a fresh process (with ``src`` first on the path: the code before)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_vector_codes", "--worker", json.dumps(task)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


def run_all(sizes: list[int], before: str | None) -> list[Row]:
    """Each size loaded and measured by ``before``'s code, then by this checkout's (``None``:
    loaded and measured by this checkout only, no baseline)."""
    src = before_tree(before) if before else None
    if before and src is None:
        raise SystemExit(f"no code of {before}")
    folder = Path(tempfile.mkdtemp(prefix="bench-vector-codes-"))
    rows: list[Row] = []
    try:
        for n in sizes:
            path = str(folder / f"{n}.db")
            if src is None:
                loaded = worker({"do": "load", "path": path, "n": n})
                again = worker({"do": "measure", "path": path})
                print(
                    f"[vector_codes] {n:,} codes, loaded by this checkout: {json.dumps({**loaded, **again})}",
                    file=sys.stderr,
                )
                for key in ("first search ms", "warm p95 ms", "after a write p95 ms", "rss end MB"):
                    rows.append(
                        Row("SQLite vector search (limit 200, one user)", f"{key}, {n:,} embeddings", again[key], "")
                    )
                continue
            old = worker({"do": "load", "path": path, "n": n}, src)
            old.update(worker({"do": "measure", "path": path}, src))
            new = worker({"do": "measure", "path": path})  # its open writes the codes
            again = worker({"do": "measure", "path": path})  # a restart of a file with codes
            print(f"[vector_codes] {n:,} {before}: {json.dumps(old)}", file=sys.stderr)
            print(f"[vector_codes] {n:,} codes, migrating open: {json.dumps(new)}", file=sys.stderr)
            print(f"[vector_codes] {n:,} codes: {json.dumps(again)}", file=sys.stderr)
            for key, unit in (
                ("first search ms", "ms"),
                ("warm p50 ms", "ms"),
                ("warm p95 ms", "ms"),
                ("after a write p50 ms", "ms"),
                ("after a write p95 ms", "ms"),
                ("rss end MB", "MB"),
            ):
                rows.append(
                    Row(
                        "SQLite vector search (limit 200, one user)",
                        f"{key}, {n:,} embeddings",
                        again[key],
                        unit,
                        baseline=old[key],
                        baseline_name=f"{before} (float matrix), same file",
                        ratio=again[key] / old[key] if old[key] else None,
                        extra={"before": old, "after": again, "migrating open": new}
                        if key == "first search ms"
                        else {},
                    )
                )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if src is not None:
            shutil.rmtree(src.parent, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_vector_codes")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--before", default=BEFORE, help="the code before; '' for this checkout alone")
    args = parser.parse_args(argv)
    if args.worker:
        task = json.loads(args.worker)
        if task["do"] == "load":
            result = asyncio.run(load(task["path"], task["n"]))
        else:
            result = asyncio.run(measure(task["path"]))
        print(json.dumps(result))
        return 0
    for row in run_all(args.sizes, args.before):
        print(json.dumps(row.as_dict()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
