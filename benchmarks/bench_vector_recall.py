"""Recall of the SQLite embedding store's vector search (binary codes, the shortlist rescored
exactly) against exact cosine, on real MiniLM vectors.

**Data.** The vectors of the BEAM-100k messages made by the local model (all-MiniLM-L6-v2,
384 dimensions), from ``bench_retrieval``'s cache (made by it when missing), plus, with
``--extra PATH.npy``, more real vectors of the same model (such as those of the messages'
sentences), one user. **Queries**: the BEAM probing questions embedded by the same model.

**Measured**, beside numpy's exact cosine over the same vectors (the baseline):
recall@10 of a search for 10 (the bar: at least 0.95), recall@10 and recall@200 of a search for
200 (what the recall index's vector channel asks), and the search's p50 / p95.

Run: ``python -m benchmarks.bench_vector_recall [--extra PATH.npy] [--queries N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .common import Row, percentiles


async def _vectors(extra: list[str]) -> tuple[Any, Any]:
    """The messages' vectors (and the extra ones) and the service that made them."""
    from cogitator_memory.embeddings.local import LocalEmbeddingService

    from .beam import load_chats
    from .bench_retrieval import chat_vectors

    service = LocalEmbeddingService(batch_size=16)
    chats = load_chats()
    parts = [np.asarray(await chat_vectors(chat, service), dtype=np.float32) for chat in chats]
    parts.extend(np.load(path).astype(np.float32) for path in extra)
    questions = [q.question for chat in chats for q in chat.questions]
    return np.concatenate(parts), (service, questions)


async def measure(extra: list[str], queries: int) -> list[Row]:
    """The rows of the table (see the module docs)."""
    from cogitator_memory import unwrap
    from cogitator_memory.vectors import SQLiteEmbeddingAdapter

    vectors, (service, questions) = await _vectors(extra)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    asked = np.asarray(await service.embed_batch(questions[:queries]), dtype=np.float32)
    folder = Path(tempfile.mkdtemp(prefix="bench-vector-recall-"))
    rows: list[Row] = []
    async with SQLiteEmbeddingAdapter(path=folder / "v.db") as store:
        for start in range(0, len(vectors), 2000):
            unwrap(
                await store.add_embeddings(
                    [
                        {
                            "id": f"emb_{start + i}",
                            "source_id": f"s{start + i}",
                            "source_type": "message",
                            "content": "m",
                            "vector": v,
                            "metadata": {"user_id": "u", "index": "messages"},
                        }
                        for i, v in enumerate(vectors[start : start + 2000])
                    ]
                )
            )
        scope = {"user_id": "u", "metadata": {"index": "messages"}}
        for limit in (10, 200):
            found10, found_all, took, exact_took = [], [], [], []
            for q in asked:
                t0 = time.perf_counter()
                scores = unit @ (q / np.linalg.norm(q))
                exact = [f"emb_{i}" for i in np.argsort(-scores, kind="stable")[:limit]]
                exact_took.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                hits = unwrap(await store.search(q, limit=limit, threshold=-1.0, filter=scope, include_vectors=False))
                took.append((time.perf_counter() - t0) * 1000)
                got = [h.id for h in hits]
                found10.append(len(set(got[:10]) & set(exact[:10])) / 10)
                found_all.append(len(set(got) & set(exact)) / limit)
            p50, p95 = percentiles(took)
            e50, _ = percentiles(exact_took)
            group = f"vector search recall, {len(vectors):,} MiniLM vectors, {len(asked)} questions"
            rows.append(
                Row(
                    group,
                    f"recall@10 of a search for {limit}",
                    sum(found10) / len(found10),
                    "",
                    baseline=1.0,
                    baseline_name="exact cosine (numpy)",
                    target=">= 0.95",
                    passed=sum(found10) / len(found10) >= 0.95,
                    extra={"min": min(found10), "search p50 ms": p50, "search p95 ms": p95, "exact numpy p50 ms": e50},
                )
            )
            if limit > 10:
                rows.append(
                    Row(
                        group,
                        f"recall@{limit} of a search for {limit}",
                        sum(found_all) / len(found_all),
                        "",
                        baseline=1.0,
                        baseline_name="exact cosine (numpy)",
                        extra={"min": min(found_all)},
                    )
                )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_vector_recall")
    parser.add_argument("--extra", nargs="*", default=[], help="more real vectors of the same model (.npy)")
    parser.add_argument("--queries", type=int, default=355)
    args = parser.parse_args(argv)
    for row in asyncio.run(measure(args.extra, args.queries)):
        print(json.dumps(row.as_dict()))
    print("done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
