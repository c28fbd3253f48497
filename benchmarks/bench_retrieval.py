"""Retrieval quality on BEAM 100K: recall@5/10/20 of evidence messages, BM25 vs vectors vs hybrid.

For each of the 20 chats every message goes into an ``InMemoryEmbeddingAdapter`` (one store per
chat): its whole text as ``content`` (keyword search reads all of it) and its vector from the
local model (all-MiniLM-L6-v2, int8 ONNX, which reads the first 256 tokens, its own limit). Each
question that names evidence (``source_chat_ids``) is asked three ways, 20 hits each:

* ``bm25``: ``keyword_search`` of the question;
* ``vector``: ``search`` with the question's vector;
* ``hybrid``: :class:`~cogitator_memory.search.HybridSearch` (RRF of both), with the same
  settings for every chat and question (``FUSION`` below);
* ``bm25*`` and ``hybrid*``: the same through a store made with ``bm25=BM25(k1=3, b=1)``
  (``TUNED_BM25``) instead of the default ``k1=1.2, b=0.75``. On chat transcripts, where short
  user turns sit beside long assistant replies, the default length
  normalisation lets long replies win most keyword searches.

The fusion and BM25 settings were chosen on chats 1-10 and are checked on chats 11-20 (the rows
``held-out``), so the figures are not tuned per question or per chat. ``bm25*`` and ``hybrid*``
are measured again on the ``SQLiteEmbeddingAdapter`` (same BM25, a file per chat), beside the
in-memory figures (``--store sqlite`` runs every mode there).

recall@k is the share of the question's evidence messages among the first k hits, averaged over
questions, overall and per question type. Vectors are cached under ``benchmarks/results/cache/``
keyed by model and chat contents, so reruns take seconds. Run: ``python -m benchmarks --only
retrieval`` or ``python -m benchmarks.bench_retrieval --data PATH`` (default
``../shared/data/beam-100k``, or ``$COGMEM_BEAM_DIR``), with ``--vector-weight``,
``--keyword-weight``, ``--rrf-k`` to try other fusion settings.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from cogitator_memory.embeddings.local import LocalEmbeddingService

from .beam import Chat, load_chats
from .common import Row

HERE = Path(__file__).parent
CACHE = HERE / "results" / "cache"
MODEL_KEY = "all-MiniLM-L6-v2-int8-t256"
KS = (5, 10, 20)
CANDIDATES = 100  # hits each search hands to the fusion
FUSION: dict[str, float] = {"vector_weight": 1.5, "keyword_weight": 1.0, "rrf_k": 10.0}
TUNED_BM25: dict[str, float] = {"k1": 3.0, "b": 1.0}
MODES = ("bm25", "vector", "hybrid", "bm25*", "hybrid*")
TUNE_CHATS = {str(n) for n in range(1, 11)}  # settings chosen on these; the others are held out

Record = tuple[str, str, dict[str, list[float]]]  # chat, question type, recall@k per mode


async def chat_vectors(chat: Chat, service: LocalEmbeddingService) -> Any:
    """One vector per message (the model reads its first 256 tokens), from the cache when it has them."""
    path = CACHE / f"beam-{chat.name}-{MODEL_KEY}-{chat.fingerprint()}.npy"
    if path.is_file():
        vectors = np.load(path)
        if vectors.shape == (len(chat.messages), service.dimensions):
            return vectors
    vectors = np.asarray(await service.embed_batch([m.content for m in chat.messages]), dtype=np.float32)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def recall(ranked: list[int], evidence: frozenset[int], k: int) -> float:
    """Share of ``evidence`` among the first ``k`` of ``ranked``."""
    return len(evidence.intersection(ranked[:k])) / len(evidence)


async def evaluate(
    chats: list[Chat],
    service: LocalEmbeddingService,
    *,
    fusion: dict[str, float] | None = None,
    tuned_bm25: dict[str, float] | None = None,
    progress: bool = False,
    store_kind: str = "memory",
) -> list[Record]:
    """Recall@5/10/20 of every question with evidence, for every mode, on the in-memory
    (``store_kind="memory"``) or the SQLite embedding store (``"sqlite"``, a file per chat)."""
    from cogitator_memory.search import BM25, HybridSearch
    from cogitator_memory.vectors import MAX_CONTENT_CHARS, InMemoryEmbeddingAdapter, SQLiteEmbeddingAdapter
    from cogitator_memory.vectors.base import BaseEmbeddingAdapter

    folder = Path(tempfile.mkdtemp(prefix="beam-"))

    def new_store(name: str, bm25: BM25 | None = None) -> BaseEmbeddingAdapter:
        if store_kind == "sqlite":
            return SQLiteEmbeddingAdapter(path=folder / f"{name}.db", dimensions=service.dimensions, bm25=bm25)
        return InMemoryEmbeddingAdapter(dimensions=service.dimensions, bm25=bm25)

    fusion = fusion or FUSION
    tuned = tuned_bm25 or TUNED_BM25
    top = max(KS)
    records: list[Record] = []
    for chat in chats:
        started = time.perf_counter()
        vectors = await chat_vectors(chat, service)
        store = new_store(f"{chat.name}-default")
        await store.connect()
        rows = [
            {
                "source_id": str(message.id),
                "source_type": "message",
                "content": message.content[:MAX_CONTENT_CHARS],
                "vector": vector.tolist(),
                "metadata": {"role": message.role},
            }
            for message, vector in zip(chat.messages, vectors, strict=True)
        ]
        added = await store.add_embeddings(rows)
        if not added.success:
            raise RuntimeError(f"chat {chat.name}: {added.error}")
        hybrid = HybridSearch(
            store,
            vector_weight=fusion["vector_weight"],
            keyword_weight=fusion["keyword_weight"],
            k=fusion["rrf_k"],
            candidates=CANDIDATES,
        )
        tuned_store = new_store(f"{chat.name}-tuned", BM25(k1=tuned["k1"], b=tuned["b"]))
        await tuned_store.connect()
        (await tuned_store.add_embeddings(rows)).unwrap()
        tuned_hybrid = HybridSearch(
            tuned_store,
            vector_weight=fusion["vector_weight"],
            keyword_weight=fusion["keyword_weight"],
            k=fusion["rrf_k"],
            candidates=CANDIDATES,
        )
        query_vectors = await service.embed_batch([q.question for q in chat.questions])
        for question, qvec in zip(chat.questions, query_vectors, strict=True):
            kw = [int(h.source_id) for h in (await store.keyword_search(question.question, limit=top)).unwrap()]
            vs_hits = (await store.search(qvec, limit=CANDIDATES)).unwrap()
            vs = [int(h.source_id) for h in vs_hits]
            hy = [int(h.source_id) for h in (await hybrid.search(question.question, qvec, limit=top)).unwrap()]
            kw_tuned = [
                int(h.source_id) for h in (await tuned_store.keyword_search(question.question, limit=top)).unwrap()
            ]
            hy_tuned = [
                int(h.source_id) for h in (await tuned_hybrid.search(question.question, qvec, limit=top)).unwrap()
            ]
            ranked = {"bm25": kw, "vector": vs, "hybrid": hy, "bm25*": kw_tuned, "hybrid*": hy_tuned}
            records.append(
                (
                    chat.name,
                    question.type,
                    {mode: [recall(r, question.evidence, k) for k in KS] for mode, r in ranked.items()},
                )
            )
        await store.disconnect()
        await tuned_store.disconnect()
        if progress:
            print(
                f"chat {chat.name}: {len(chat.messages)} messages, {time.perf_counter() - started:.1f}s",
                file=sys.stderr,
            )
    shutil.rmtree(folder, ignore_errors=True)
    return records


def summarise(records: list[Record]) -> dict[str, dict[str, list[float]]]:
    """Mean recall@k per group (``overall``, the two halves, each question type) and mode."""
    groups: dict[str, list[Record]] = {"overall": list(records)}
    groups["tuning chats 1-10"] = [r for r in records if r[0] in TUNE_CHATS]
    groups["held-out chats 11-20"] = [r for r in records if r[0] not in TUNE_CHATS]
    for record in sorted(records, key=lambda r: r[1]):
        groups.setdefault(record[1], []).append(record)
    out: dict[str, dict[str, list[float]]] = {}
    for name, members in groups.items():
        if members:
            out[name] = {
                mode: [float(np.mean([m[2][mode][i] for m in members])) for i in range(len(KS))] for mode in MODES
            }
            out[name]["n"] = [float(len(members))]
    return out


def markdown(summary: dict[str, dict[str, list[float]]]) -> str:
    """The summary as a Markdown table: one row per group, recall@5/10/20 per mode."""
    header = "| questions | n | " + " | ".join(f"{m} @{k}" for m in MODES for k in KS) + " |"
    lines = [header, "|" + "---|" * (2 + len(MODES) * len(KS))]
    for group, table in summary.items():
        cells = []
        for mode in MODES:
            for i in range(len(KS)):
                cell = f"{table[mode][i]:.3f}"
                rival = [table[m][i] for m in (("bm25", "vector") if mode == "hybrid" else ("bm25*", "vector"))]
                if mode.startswith("hybrid") and table[mode][i] > max(rival):
                    cell = f"**{cell}**"
                cells.append(cell)
        lines.append(f"| {group} | {int(table['n'][0])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict(summary: dict[str, dict[str, list[float]]], hybrid: str, bm25: str) -> tuple[bool, int, int]:
    """Whether ``hybrid`` beats ``bm25`` and ``vector`` overall at every k, and on how many
    question types (compared on the mean of recall@5/10/20)."""
    overall = summary["overall"]
    wins_overall = all(overall[hybrid][i] > max(overall[bm25][i], overall["vector"][i]) for i in range(len(KS)))
    types = [g for g in summary if g != "overall" and not g.startswith(("tuning", "held-out"))]
    wins = sum(
        1 for t in types if np.mean(summary[t][hybrid]) > max(np.mean(summary[t][bm25]), np.mean(summary[t]["vector"]))
    )
    return wins_overall, wins, len(types)


async def run(quick: bool) -> list[Row]:
    """The benchmark entry point: recall rows per mode and k, the hybrid bar as the target."""
    try:
        chats = load_chats(limit=3 if quick else None)
    except FileNotFoundError as exc:
        print(f"[retrieval] skipped: {exc}", file=sys.stderr)
        return []
    service = LocalEmbeddingService(batch_size=16)
    summary = summarise(await evaluate(chats, service, progress=True))
    overall = summary["overall"]
    rows: list[Row] = []
    for hybrid, bm25, label in (("hybrid", "bm25", "store BM25 k1=1.2 b=0.75"), ("hybrid*", "bm25*", "BM25 k1=3 b=1")):
        for i, k in enumerate(KS):
            best = max(overall[bm25][i], overall["vector"][i])
            best_name = bm25 if overall[bm25][i] >= overall["vector"][i] else "vector"
            if hybrid == "hybrid":
                for mode in ("bm25", "vector"):
                    rows.append(Row("retrieval", f"beam-100k recall@{k} {mode}", overall[mode][i], "recall"))
            else:
                rows.append(Row("retrieval", f"beam-100k recall@{k} bm25*", overall[bm25][i], "recall"))
            rows.append(
                Row(
                    "retrieval",
                    f"beam-100k recall@{k} {hybrid} ({label})",
                    overall[hybrid][i],
                    "recall",
                    baseline=best,
                    baseline_name=f"best single ({best_name})",
                    ratio=overall[hybrid][i] / best if best else None,
                    target="hybrid > bm25 and > vector",
                    passed=overall[hybrid][i] > best,
                )
            )
        wins_overall, wins, n_types = verdict(summary, hybrid, bm25)
        rows.append(
            Row(
                "retrieval",
                f"beam-100k question types where {hybrid} wins",
                float(wins),
                "types",
                baseline=float(n_types),
                baseline_name="question types",
                ratio=wins / n_types if n_types else None,
                target="most types, and overall at every k",
                passed=wins * 2 > n_types and wins_overall,
                extra={"summary": summary, "fusion": FUSION, "tuned_bm25": TUNED_BM25} if hybrid == "hybrid*" else {},
            )
        )
    print(markdown(summary), file=sys.stderr)
    # The SQLite store takes the same BM25 and must rank as the in-memory store does.
    on_sqlite = summarise(await evaluate(chats, service, progress=True, store_kind="sqlite"))["overall"]
    for mode in ("bm25*", "hybrid*"):
        for i, k in enumerate(KS):
            rows.append(
                Row(
                    "retrieval",
                    f"beam-100k recall@{k} {mode} on the SQLite store",
                    on_sqlite[mode][i],
                    "recall",
                    baseline=overall[mode][i],
                    baseline_name="the same on the in-memory store",
                    ratio=on_sqlite[mode][i] / overall[mode][i] if overall[mode][i] else None,
                    target="the same recall",
                    passed=abs(on_sqlite[mode][i] - overall[mode][i]) < 0.005,
                )
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.bench_retrieval [--data PATH] [--chats N] [--json PATH] [settings]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_retrieval")
    parser.add_argument("--data", default=None, help="the beam-100k folder")
    parser.add_argument("--chats", type=int, default=None, help="only the first N chats")
    parser.add_argument("--vector-weight", type=float, default=FUSION["vector_weight"])
    parser.add_argument("--keyword-weight", type=float, default=FUSION["keyword_weight"])
    parser.add_argument("--rrf-k", type=float, default=FUSION["rrf_k"])
    parser.add_argument("--k1", type=float, default=TUNED_BM25["k1"], help="k1 of the bm25* channel")
    parser.add_argument("--b", type=float, default=TUNED_BM25["b"], help="b of the bm25* channel")
    parser.add_argument("--json", default=None, help="write the summary here")
    parser.add_argument("--store", choices=("memory", "sqlite"), default="memory", help="the embedding store")
    args = parser.parse_args(argv)
    chats = load_chats(args.data, limit=args.chats)
    service = LocalEmbeddingService(batch_size=16)
    fusion = {"vector_weight": args.vector_weight, "keyword_weight": args.keyword_weight, "rrf_k": args.rrf_k}
    records = asyncio.run(
        evaluate(
            chats,
            service,
            fusion=fusion,
            tuned_bm25={"k1": args.k1, "b": args.b},
            progress=True,
            store_kind=args.store,
        )
    )
    summary = summarise(records)
    print(markdown(summary))
    for hybrid, bm25 in (("hybrid", "bm25"), ("hybrid*", "bm25*")):
        wins_overall, wins, n_types = verdict(summary, hybrid, bm25)
        print(f"{hybrid} beats {bm25} and vector overall at every k: {wins_overall}; on {wins} of {n_types} types")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "fusion": fusion}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
