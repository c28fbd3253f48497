"""Switches of ``MemoryRetriever``'s fusion, each measured off and on in the same run on BEAM 100K.

The questions are read once (:func:`benchmarks.bench_recall.prepare`: the turns of each chat, the
question's cosine with each, the plain hybrid search's ranking); then each variant of
:data:`VARIANTS` (changes of ``RetrieverSettings`` over :data:`benchmarks.bench_recall.SETTINGS`)
retrieves for every question, and recall@5/10/20 of its turn hits is printed for the tuning chats
(1-10: where settings are chosen) and the held-out chats (11-20: where they are checked), with
recall@10 per question type, each beside the first variant (the baseline of the run). The
default variants turn each switch on alone over the retriever with all of them off, then all
on (the package defaults), then each off alone from the defaults (the session spread, off by
default, on).

Run: ``python -m benchmarks.bench_recall_fusion [--chats N] [--variants JSON] [--json PATH]``;
``--variants`` is a JSON list of ``[name, changes]`` pairs (the first is the baseline).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from cogitator_memory.embeddings.local import LocalEmbeddingService
from cogitator_memory.recall.query import QUERY_KINDS

from .beam import load_chats
from .bench_recall import KS, SETTINGS, TUNE_CHATS, prepare
from .bench_retrieval import recall

#: The variants measured by default: the retriever with every switch of this benchmark off,
#: then each on alone, then all on (the package defaults).
NO_STANDING: dict[str, Any] = {"weights": {kind: {"standing": 0.0} for kind in QUERY_KINDS}}
OFF: dict[str, Any] = {"hop_seeds": 0, "session_spread": 0.0, "speaker_from_question": False, **NO_STANDING}
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("all off", OFF),
    ("hop", {**OFF, "hop_seeds": None}),
    ("session spread 0.5", {**OFF, "session_spread": 0.5}),
    ("speakers", {**OFF, "speaker_from_question": True}),
    ("standing", {k: v for k, v in OFF.items() if k != "weights"}),
    ("defaults", {}),
    ("defaults, no hop", {"hop_seeds": 0}),
    ("defaults, spread 0.5", {"session_spread": 0.5}),
    ("defaults, no speakers", {"speaker_from_question": False}),
    ("defaults, no standing", NO_STANDING),
]


def _resolve(changes: dict[str, Any]) -> dict[str, Any]:
    """``None`` stands for the package default of a field."""
    from cogitator_memory.recall import RetrieverSettings

    defaults = RetrieverSettings()
    return {k: (getattr(defaults, k) if v is None else v) for k, v in changes.items()}


async def measure(cases: list[dict[str, Any]], changes: dict[str, Any]) -> dict[str, Any]:
    """Per question: recall@k of the retriever with ``changes`` over :data:`SETTINGS`; and the
    mean time of one retrieval (ms)."""
    from cogitator_memory.recall import MemoryRetriever

    retriever = MemoryRetriever({**SETTINGS, **_resolve(changes)})
    rows = []
    started = time.perf_counter()
    for case in cases:
        q = case["question"]
        found = await retriever.retrieve(
            q.question, anchor=case["as_of"], history=case["entries"], cosines=case["cosines"], limit=max(KS)
        )
        ranked = [case["id_map"][h.id] for h in found.hits if h.kind == "turn"]
        rows.append(
            {
                "chat": case["chat"],
                "type": case["type"],
                "kind": found.analysis.kind,
                **{f"r@{k}": recall(ranked, q.evidence, k) for k in KS},
            }
        )
    return {"rows": rows, "ms": (time.perf_counter() - started) * 1000 / max(1, len(cases))}


def table(results: list[tuple[str, dict[str, Any]]]) -> str:
    """Markdown: per variant, R@5/10/20 on tuning and held-out chats and R@10 per type on each
    (change from the first variant in brackets)."""
    groups: dict[str, dict[str, dict[str, float]]] = {}
    types = sorted({r["type"] for r in results[0][1]["rows"]})
    for name, result in results:
        out: dict[str, dict[str, float]] = defaultdict(dict)
        for part in ("tune", "held"):
            rows = [r for r in result["rows"] if (r["chat"] in TUNE_CHATS) == (part == "tune")]
            if not rows:
                continue
            for k in KS:
                out[part][f"R@{k}"] = float(np.mean([r[f"r@{k}"] for r in rows]))
            for t in types:
                typed = [r["r@10"] for r in rows if r["type"] == t]
                if typed:
                    out[part][t] = float(np.mean(typed))
        groups[name] = out
    base = groups[results[0][0]]
    lines = []
    for part, title in (("tune", "tuning chats 1-10"), ("held", "held-out chats 11-20")):
        if part not in base:
            continue
        cols = [*(f"R@{k}" for k in KS), *types]
        lines.append(f"\n{title} (R@10 per type)\n")
        lines.append("| variant | ms | " + " | ".join(c[:14] for c in cols) + " |")
        lines.append("|" + "---|" * (len(cols) + 2))
        for name, result in results:
            row = groups[name][part]
            cells = []
            for c in cols:
                value, old = row.get(c, float("nan")), base[part].get(c, float("nan"))
                cells.append(f"{value:.3f}" if name == results[0][0] else f"{value:.3f} ({value - old:+.3f})")
            lines.append(f"| {name} | {result['ms']:.1f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def run(chats_limit: int | None, variants: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    model = LocalEmbeddingService(batch_size=16)
    cases = await prepare(load_chats(limit=chats_limit), model)
    results = []
    for name, changes in variants:
        results.append((name, await measure(cases, changes)))
        print(f"{name}: done", file=sys.stderr)
    return results


async def latency(turns: int = 10_000, builds: int = 100, rounds: int = 3) -> dict[str, Any]:
    """``build(hybrid)`` p50/p95 (ms) on SQLite at ``turns`` turns (the set-up of
    :func:`benchmarks.bench_recall.latency`), with this benchmark's switches off and on (the
    package defaults), taking turns on the same thread; each keeps its best round."""
    import statistics
    import tempfile
    from datetime import timedelta

    from cogitator_memory import SQLiteAdapter, frozen_clock, unwrap
    from cogitator_memory.context import ContextBuilder, MessageIndex
    from cogitator_memory.vectors import SQLiteEmbeddingAdapter

    from .bench_recall import BUILD_SETTINGS, VectorTable
    from .bench_retrieval import chat_vectors

    model = LocalEmbeddingService(batch_size=16)
    chats = load_chats()
    table = VectorTable(model)
    messages = []
    for chat in chats:
        table.add([m.content for m in chat.messages], await chat_vectors(chat, model))
        messages.extend(chat.messages)
    questions = [q.question for chat in chats for q in chat.questions][:builds]
    table.add(questions, await model.embed_batch(questions))
    folder = Path(tempfile.mkdtemp(prefix="recall-fusion-latency-"))
    memory = SQLiteAdapter(path=folder / "threads.db")
    await memory.connect()
    store = SQLiteEmbeddingAdapter(path=folder / "vectors.db", dimensions=model.dimensions)
    await store.connect()
    index = MessageIndex(store=store, embedding=table, batch_size=256)
    index.attach(memory)
    thread = unwrap(await memory.create_thread("beam"))
    start = chats[0].messages[0].anchor
    assert start is not None
    for i in range(turns):
        message = messages[i % len(messages)]
        with frozen_clock(start + timedelta(minutes=i)):
            content = {"role": message.role or "user", "content": message.content}
            unwrap(await memory.add_entry({"thread_id": thread.id, "message": content}))
    await index.flush()
    builders = {
        name: ContextBuilder(
            {"strategy": "hybrid", "recall": {**BUILD_SETTINGS, **_resolve(changes)}},
            {"memory_adapter": memory, "embedding_service": table, "message_index": index},
        )
        for name, changes in (("switches off", OFF), ("defaults", {}))
    }
    out: dict[str, Any] = {}
    for builder in builders.values():
        for q in questions[:5]:
            await builder.build(thread.id, current_input=q, max_tokens=4000)
    for _round in range(rounds):
        for name, builder in builders.items():
            times = []
            for q in questions:
                t0 = time.perf_counter()
                await builder.build(thread.id, current_input=q, max_tokens=4000)
                times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            p50, p95 = statistics.median(times), times[int(len(times) * 0.95) - 1]
            if p95 < out.get(f"{name} p95 ms", float("inf")):
                out[f"{name} p50 ms"], out[f"{name} p95 ms"] = p50, p95
    await index.close()
    await memory.disconnect()
    await store.disconnect()
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.bench_recall_fusion [--chats N] [--variants JSON] [--json PATH]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_recall_fusion")
    parser.add_argument("--chats", type=int, default=None, help="only the first N chats")
    parser.add_argument("--variants", default=None, help="JSON list of [name, changes] (first is the baseline)")
    parser.add_argument("--json", default=None, help="write the per-question figures here")
    parser.add_argument("--latency", action="store_true", help="build(hybrid) p95 at 10,000 turns, off and on")
    args = parser.parse_args(argv)
    if args.latency:
        print(json.dumps(asyncio.run(latency()), indent=2))
        return 0
    variants = [(str(n), dict(c)) for n, c in json.loads(args.variants)] if args.variants else VARIANTS
    results = asyncio.run(run(args.chats, variants))
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps([{"name": n, **r} for n, r in results], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
