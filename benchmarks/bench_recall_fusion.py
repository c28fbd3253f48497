"""Switches of ``MemoryRetriever``'s fusion, each measured off and on in the same run on BEAM 100K.

The questions are read once (:func:`benchmarks.bench_recall.prepare`: the turns of each chat, the
question's cosine with each, the plain hybrid search's ranking); then each variant of
:data:`VARIANTS` (changes of ``RetrieverSettings`` over :data:`benchmarks.bench_recall.SETTINGS`)
retrieves for every question, and recall@5/10/20 of its turn hits is printed for the tuning chats
(1-10: where settings are chosen) and the held-out chats (11-20: where they are checked), with
recall@10 per question type, each beside the first variant (the baseline of the run).

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

from .beam import load_chats
from .bench_recall import KS, SETTINGS, TUNE_CHATS, prepare
from .bench_retrieval import recall

#: The variants measured by default: the retriever with every switch of this benchmark off,
#: then each on alone, then all on (the package defaults).
OFF: dict[str, Any] = {"hop_seeds": 0, "session_spread": 0.0, "speaker_from_question": False}
VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("all off", OFF),
    ("hop", {**OFF, "hop_seeds": None}),
    ("session spread", {**OFF, "session_spread": None}),
    ("speakers", {**OFF, "speaker_from_question": True}),
    ("defaults", {}),
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


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.bench_recall_fusion [--chats N] [--variants JSON] [--json PATH]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_recall_fusion")
    parser.add_argument("--chats", type=int, default=None, help="only the first N chats")
    parser.add_argument("--variants", default=None, help="JSON list of [name, changes] (first is the baseline)")
    parser.add_argument("--json", default=None, help="write the per-question figures here")
    args = parser.parse_args(argv)
    variants = [(str(n), dict(c)) for n, c in json.loads(args.variants)] if args.variants else VARIANTS
    results = asyncio.run(run(args.chats, variants))
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps([{"name": n, **r} for n, r in results], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
