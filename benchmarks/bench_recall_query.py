"""The query analysis's share of recall: ``MemoryRetriever`` R@5/10/20 with the query-reading
files as they are, beside the same code with those files taken from another commit.

Recall reads its input through ``recall/query.py`` (kind, terms, names, times), ``recall/time.py``
and the time parser, and ``index/terms.py`` (stemming). To measure a change there while the
rest of the package changes too, both sides run on one snapshot of the working tree's ``src``:
"now" as it is, "before" with :data:`QUERY_FILES` taken from ``--against`` (default ``HEAD``),
each in a fresh process. Figures are per question type, on the tuning chats (1-10) and the
held-out chats (11-20) of BEAM 100K, with the same cases as ``bench_recall`` (retriever only).

Run: ``python -m benchmarks.bench_recall_query [--against COMMIT] [--chats N]``.
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
from pathlib import Path
from typing import Any

import numpy as np

from .bench_recall import KS, SETTINGS, TUNE_CHATS

REPO = Path(__file__).resolve().parent.parent
#: The files of the query analysis (what "before" takes from the other commit).
QUERY_FILES: tuple[str, ...] = (
    "src/cogitator_memory/recall/query.py",
    "src/cogitator_memory/recall/time.py",
    "src/cogitator_memory/recall/_calendar.py",
    "src/cogitator_memory/recall/_parser.py",
    "src/cogitator_memory/recall/_words.py",
    "src/cogitator_memory/recall/_atoms.py",
    "src/cogitator_memory/recall/_pieces.py",
    "src/cogitator_memory/index/terms.py",
)


async def measure(chat_limit: int | None, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per question: chat, type, kind and the retriever's recall@k."""
    from cogitator_memory.embeddings.local import LocalEmbeddingService
    from cogitator_memory.recall import MemoryRetriever

    from .beam import load_chats
    from .bench_recall import prepare
    from .bench_retrieval import recall

    model = LocalEmbeddingService(batch_size=16)
    cases = await prepare(load_chats(limit=chat_limit), model)
    retriever = MemoryRetriever({**SETTINGS, **settings})
    out = []
    for case in cases:
        q = case["question"]
        found = await retriever.retrieve(
            q.question, anchor=case["as_of"], history=case["entries"], cosines=case["cosines"], limit=max(KS)
        )
        ranked = [case["id_map"][h.id] for h in found.hits if h.kind == "turn"]
        record = {"chat": case["chat"], "type": case["type"], "kind": found.analysis.kind, "question": q.question}
        record.update({f"r@{k}": recall(ranked, q.evidence, k) for k in KS})
        out.append(record)
    return out


def summary(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mean recall@k per group: overall, each split, each type in each split."""
    groups: dict[str, list[dict[str, Any]]] = {"overall": records}
    for r in records:
        split = "tune" if r["chat"] in TUNE_CHATS else "held"
        groups.setdefault(split, []).append(r)
        groups.setdefault(f"{split} {r['type']}", []).append(r)
    return {
        name: {"n": float(len(rows)), **{f"r@{k}": float(np.mean([r[f"r@{k}"] for r in rows])) for k in KS}}
        for name, rows in sorted(groups.items(), key=lambda kv: (kv[0] != "overall", kv[0]))
    }


def snapshot(against: str | None) -> Path:
    """A copy of the working tree's ``src``; with ``against``, :data:`QUERY_FILES` from that commit."""
    folder = Path(tempfile.mkdtemp(prefix="recall-query-"))
    shutil.copytree(REPO / "src", folder / "src", ignore=shutil.ignore_patterns("__pycache__"))
    if against is not None:
        for name in QUERY_FILES:
            text = subprocess.run(["git", "show", f"{against}:{name}"], cwd=REPO, capture_output=True, check=True)
            (folder / name).write_bytes(text.stdout)
    return folder / "src"


def run_on(src: Path, chats: int | None, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """:func:`measure` in a fresh process with ``src`` first on the path."""
    out = src.parent / "records.json"
    env = {**os.environ, "PYTHONPATH": str(src) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    argv = [sys.executable, "-m", "benchmarks.bench_recall_query", "--worker", str(out)]
    argv += ["--settings", json.dumps(settings)]
    if chats:
        argv += ["--chats", str(chats)]
    subprocess.run(argv, cwd=REPO, env=env, check=True)
    records: list[dict[str, Any]] = json.loads(out.read_text())
    return records


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.bench_recall_query [--against COMMIT] [--chats N] [--settings JSON]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_recall_query")
    parser.add_argument("--against", default="HEAD", help="the commit the query files of 'before' come from")
    parser.add_argument("--chats", type=int, default=None)
    parser.add_argument("--settings", default="{}", help="JSON of RetrieverSettings fields (both sides)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--json", default=None, help="write both sides' records here")
    args = parser.parse_args(argv)
    settings = json.loads(args.settings)
    if args.worker:
        Path(args.worker).write_text(json.dumps(asyncio.run(measure(args.chats, settings))))
        return 0
    now_src, before_src = snapshot(None), snapshot(args.against)
    try:
        now = run_on(now_src, args.chats, settings)
        before = run_on(before_src, args.chats, settings)
    finally:
        shutil.rmtree(now_src.parent, ignore_errors=True)
        shutil.rmtree(before_src.parent, ignore_errors=True)
    a, b = summary(now), summary(before)
    print(f"MemoryRetriever recall, query files now vs {args.against} (same snapshot of the rest of src)")
    print("| questions | n | " + " | ".join(f"R@{k} now (change)" for k in KS) + " |")
    print("|" + "---|" * (2 + len(KS)))
    for group, row in a.items():
        old = b.get(group, {})
        cells = [f"{row[f'r@{k}']:.3f} ({row[f'r@{k}'] - old.get(f'r@{k}', 0.0):+.3f})" for k in KS]
        print(f"| {group} | {int(row['n'])} | " + " | ".join(cells) + " |")
    changed = [(x, y) for x, y in zip(now, before, strict=True) if x["kind"] != y["kind"]]
    print(f"{len(changed)} questions read as another kind", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps({"now": now, "before": before}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
