"""Recall on BEAM 100K: evidence coverage of ``build(strategy=...)`` and recall@k of ``MemoryRetriever``.

Each of the 20 chats becomes a thread of an ``InMemoryAdapter``: every message an entry, dated by
its batch's ``time_anchor`` (one minute apart), with a ``MessageIndex`` over an
``InMemoryEmbeddingAdapter``. Vectors come from the local model (all-MiniLM-L6-v2 int8 ONNX,
``LocalEmbeddingService``), cached by ``bench_retrieval`` under ``benchmarks/results/cache/``; the
benchmark's embedding service answers from that cache (questions are embedded once by the model).

For each question with evidence:

* **coverage**: ``build(strategy, current_input=question, max_tokens=2,000 or 4,000,
  as_of=the day after the chat's last date)`` for ``recent``, ``relevant`` and ``hybrid``; the share
  of the evidence messages whose whole text reaches the model (:func:`whole_turns`: the entry was
  sent, in the history or in ``recalled["entries"]``, and its text, whitespace runs aside, is found
  as one piece in the text of the context's messages, so a turn sent as a passage or cut short does
  not count); ``<strategy>@<budget> ids`` is the counting before issue 34 (the entry sent in any
  form, a clipped passage included);
* **recall@5/10/20** of the turn hits of ``MemoryRetriever.retrieve(question, history=every
  turn, cosines=the question's cosine with each turn)``, beside the plain hybrid search of the
  vectors issue (``HybridSearch`` over the store with ``BM25(k1=3, b=1)``, RRF k=10, vector
  weight 1.5: ``hybrid*`` of ``bench_retrieval``).

Settings are chosen on chats 1-10 and checked on 11-20 (``--tune`` runs the search over them on
chats 1-10 only). ``latency`` times ``build(strategy="hybrid")`` on SQLite at 10,000 turns (the
BEAM messages, repeated) with a message index on the SQLite embedding store; the input's vector
comes from the cache, so its one embedding is not in the figure.

``--set chitchat`` measures the same on two long chats between two people instead (the
Chit-Chat Challenge histories of :mod:`benchmarks.chitchat`, turns dated by when they were said,
speakers named in ``message.name``): settings chosen on history ``ccc-a``, checked on ``ccc-b``.

Run: ``python -m benchmarks --only recall`` or ``python -m benchmarks.bench_recall [--set beam|chitchat]
[--chats N] [--tune] [--latency-only] [--json PATH] [--before COMMIT]``; ``--before`` runs the same figures
in a fresh process on the package of ``COMMIT`` (a ``git archive`` of its ``src``) and prints
each figure with its change (issue 32 measured ``--before 82b1398``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import datetime, timedelta
from datetime import time as day_start
from pathlib import Path
from typing import Any

import numpy as np

from cogitator_memory.embeddings.base import BaseEmbeddingService
from cogitator_memory.embeddings.local import LocalEmbeddingService

from .beam import Chat, Message, load_chats
from .bench_retrieval import CANDIDATES, FUSION, TUNED_BM25, chat_vectors, recall
from .chitchat import TUNING as CHITCHAT_TUNING
from .chitchat import load_histories
from .common import Row

KS = (5, 10, 20)
BUDGETS = (2000, 4000)
STRATEGIES = ("recent", "relevant", "hybrid")
TUNE_CHATS = {str(n) for n in range(1, 11)}
#: Per set: the chats settings are chosen on, and the names of the tuning and held-out groups.
SPLITS: dict[str, tuple[set[str], str, str]] = {
    "beam": (TUNE_CHATS, "tuning chats 1-10", "held-out chats 11-20"),
    "chitchat": ({CHITCHAT_TUNING}, f"tuning history {CHITCHAT_TUNING}", "held-out history ccc-b"),
    "chitchat-roles": ({CHITCHAT_TUNING}, f"tuning history {CHITCHAT_TUNING}", "held-out history ccc-b"),
}


def load_set(name: str, data: str | None = None, limit: int | None = None) -> list[Chat]:
    """The chats of the set ``name`` (a key of :data:`SPLITS`), the first ``limit`` of them."""
    if name == "beam":
        return load_chats(data, limit=limit)
    return load_histories(roles=name == "chitchat-roles")[:limit]


#: The retriever settings the figures are measured with, over the package defaults: none, so the
#: figures are what a user of the defaults gets (until stop 32 every cosine was kept here while
#: the package's floor was 0.45 and 0.6 of the best; the package now keeps cosines from 0.2).
SETTINGS: dict[str, Any] = {}
#: The builders' ``config.recall``: :data:`SETTINGS` over the package defaults of
#: ``RecallSettings`` (``turn_tokens`` 60 and ``neighbour_tokens`` 20, chosen on chats 1-10).
BUILD_SETTINGS: dict[str, Any] = dict(SETTINGS)


class VectorTable(BaseEmbeddingService):
    """An embedding service answering from known vectors (texts and their first 8,000
    characters, as the message index embeds them), the local model for anything else."""

    provider = "table"

    def __init__(self, model: LocalEmbeddingService) -> None:
        super().__init__(dimensions=model.dimensions, batch_size=256)
        self.model = model
        self.table: dict[str, list[float]] = {}
        self.misses = 0

    def add(self, texts: Sequence[str], vectors: Any) -> None:
        for text, vector in zip(texts, vectors, strict=True):
            row = [float(x) for x in vector]
            self.table[text] = row
            self.table.setdefault(text[:8000], row)

    async def _embed_chunk(self, texts: list[str]) -> list[list[float]]:
        missing = [t for t in texts if t not in self.table]
        if missing:
            self.misses += len(missing)
            self.add(missing, await self.model.embed_batch(missing))
        return [self.table[t] for t in texts]


def message_times(chat: Chat) -> list[datetime]:
    """When each message of ``chat`` is written: a message dated by a day alone (BEAM's batch
    dates, midnight) at 9:00 that day plus a minute per message, after the one before it; one
    with a time of day (when it was said) at that time."""
    out: list[datetime] = []
    previous = None
    for i, message in enumerate(chat.messages):
        day = message.anchor
        assert day is not None
        if day.time() != day_start(0):
            out.append(day)
            continue
        at = day + timedelta(hours=9, minutes=i)
        if previous is not None and at <= previous:
            at = previous + timedelta(minutes=1)
        out.append(at)
        previous = at
    return out


def said(message: Message) -> dict[str, Any]:
    """The stored message of a chat's message: its role, text and speaker's name."""
    out: dict[str, Any] = {"role": message.role or "user", "content": message.content}
    if message.name:
        out["name"] = message.name
    return out


async def load_chat_thread(memory: Any, index: Any, chat: Chat) -> tuple[str, dict[str, int], Any]:
    """Write the chat as a thread (each message at its :func:`message_times`, as :func:`said`);
    returns its id, entry id -> message id, and its last time."""
    from cogitator_memory import frozen_clock, unwrap

    thread = unwrap(await memory.create_thread("beam", {"user_id": "reader"}))
    ids: dict[str, int] = {}
    times = message_times(chat)
    for message, at in zip(chat.messages, times, strict=True):
        with frozen_clock(at):
            entry = unwrap(await memory.add_entry({"thread_id": thread.id, "message": said(message)}))
        ids[entry.id] = message.id
    last = max(times) if times else None
    await index.flush()
    return thread.id, ids, last


def summarise(records: list[dict[str, Any]], keys: Sequence[str], split: str = "beam") -> dict[str, dict[str, float]]:
    """Mean of each key per group: overall, tuning and held-out chats (of ``SPLITS[split]``),
    each question type."""
    tune_chats, tune_name, held_name = SPLITS[split]
    groups: dict[str, list[dict[str, Any]]] = {"overall": records}
    groups[tune_name] = [r for r in records if r["chat"] in tune_chats]
    groups[held_name] = [r for r in records if r["chat"] not in tune_chats]
    for r in sorted(records, key=lambda r: r["type"]):
        groups.setdefault(r["type"], []).append(r)
    return {
        name: {"n": float(len(rows)), **{k: float(np.mean([r[k] for r in rows])) for k in keys}}
        for name, rows in groups.items()
        if rows
    }


async def evaluate(
    chats: list[Chat],
    model: LocalEmbeddingService,
    settings: dict[str, Any],
    *,
    builds: bool = True,
    progress: bool = False,
    build_settings: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One record per question: coverage per strategy and budget, recall@k of the retriever and
    of the plain hybrid search."""
    from cogitator_memory import InMemoryAdapter, unwrap
    from cogitator_memory.context import ContextBuilder, MessageIndex
    from cogitator_memory.recall import MemoryRetriever
    from cogitator_memory.search import BM25, HybridSearch
    from cogitator_memory.vectors import MAX_CONTENT_CHARS, InMemoryEmbeddingAdapter

    table = VectorTable(model)
    out: list[dict[str, Any]] = []
    retriever = MemoryRetriever(settings)
    for chat in chats:
        started = time.perf_counter()
        vectors = await chat_vectors(chat, model)
        table.add([m.content for m in chat.messages], vectors)
        questions = [q.question for q in chat.questions]
        table.add(questions, await model.embed_batch(questions))
        memory = InMemoryAdapter()
        await memory.connect()
        store = InMemoryEmbeddingAdapter(dimensions=model.dimensions)
        await store.connect()
        index = MessageIndex(store=store, embedding=table)
        index.attach(memory)
        thread_id, id_map, last = await load_chat_thread(memory, index, chat)
        as_of = (last or chat.messages[-1].anchor) + timedelta(days=1)
        entries = unwrap(await memory.get_entries(thread_id=thread_id))
        by_message = {m.id: v for m, v in zip(chat.messages, vectors, strict=True)}
        entry_vectors = np.stack([by_message[id_map[e.id]] for e in entries])
        plain_store = InMemoryEmbeddingAdapter(dimensions=model.dimensions, bm25=BM25(**TUNED_BM25))
        await plain_store.connect()
        unwrap(
            await plain_store.add_embeddings(
                [
                    {
                        "source_id": str(m.id),
                        "source_type": "message",
                        "content": m.content[:MAX_CONTENT_CHARS],
                        "vector": v.tolist(),
                    }
                    for m, v in zip(chat.messages, vectors, strict=True)
                ]
            )
        )
        plain = HybridSearch(
            plain_store,
            vector_weight=FUSION["vector_weight"],
            keyword_weight=FUSION["keyword_weight"],
            k=FUSION["rrf_k"],
            candidates=CANDIDATES,
        )
        texts = {m.id: m.content for m in chat.messages}
        builders = {
            s: ContextBuilder(
                {"strategy": s, "recall": dict(settings if build_settings is None else build_settings)},
                {"memory_adapter": memory, "embedding_service": table, "message_index": index},
            )
            for s in STRATEGIES
        }
        for question in chat.questions:
            qvec = np.asarray(table.table[question.question], dtype=np.float32)
            cos = entry_vectors @ qvec
            found = await retriever.retrieve(
                question.question,
                anchor=as_of,
                history=entries,
                cosines={e.id: float(c) for e, c in zip(entries, cos, strict=True)},
                limit=max(KS),
            )
            ranked = [id_map[h.id] for h in found.hits if h.kind == "turn"]
            hy = [int(h.source_id) for h in unwrap(await plain.search(question.question, qvec.tolist(), limit=max(KS)))]
            record: dict[str, Any] = {"chat": chat.name, "type": question.type, "kind": found.analysis.kind}
            for k in KS:
                record[f"retriever@{k}"] = recall(ranked, question.evidence, k)
                record[f"plain@{k}"] = recall(hy, question.evidence, k)
            if builds:
                for strategy, builder in builders.items():
                    for budget in BUDGETS:
                        context = await builder.build(
                            thread_id, current_input=question.question, max_tokens=budget, as_of=as_of
                        )
                        sent = {id_map[e.id] for e in context.entries}
                        if context.recalled:
                            sent |= {id_map[e.id] for e in context.recalled["entries"]}
                        whole = whole_turns(context, question.evidence & sent, texts)
                        record[f"{strategy}@{budget}"] = len(whole) / len(question.evidence)
                        record[f"{strategy}@{budget} ids"] = len(question.evidence & sent) / len(question.evidence)
                        if context.errors:
                            record.setdefault("errors", []).extend(str(e.error) for e in context.errors)
            out.append(record)
        await index.close()
        await memory.disconnect()
        if progress:
            print(
                f"chat {chat.name}: {len(chat.questions)} questions, {time.perf_counter() - started:.1f}s",
                file=sys.stderr,
            )
    return out


def squeeze(text: str) -> str:
    """``text`` with every run of whitespace as one space (how :func:`whole_turns` compares)."""
    return " ".join(text.split())


def whole_turns(context: Any, sent: set[int], texts: dict[int, str]) -> set[int]:
    """The messages of ``sent`` (ids of entries the build sent, in its history or recalled)
    whose whole text reaches the model: found, whitespace runs aside, as one piece in the text
    of the context's messages (the history and the memory context). A recalled turn sent as a
    passage, or cut short, is not in it whole and does not count."""
    if not sent:
        return set()
    body = squeeze("\n".join(m.text for m in context.messages))
    return {i for i in sent if squeeze(texts[i]) in body}


def coverage_keys(ids: bool = False) -> list[str]:
    """The coverage figures: of whole evidence turns, or (``ids``) of evidence turns sent in any
    form (the counting before issue 34, which credits a clipped passage)."""
    return [f"{s}@{b}{' ids' if ids else ''}" for s in STRATEGIES for b in BUDGETS]


def recall_keys() -> list[str]:
    return [f"{m}@{k}" for m in ("retriever", "plain") for k in KS]


def markdown_change(
    after: dict[str, dict[str, float]], before: dict[str, dict[str, float]], keys: Sequence[str]
) -> str:
    """The summary as a Markdown table, each figure beside its change from ``before`` (a summary
    of the same keys measured on other code)."""
    lines = ["| questions | n | " + " | ".join(keys) + " |", "|" + "---|" * (2 + len(keys))]
    for group, row in after.items():
        old = before.get(group, {})
        cells = [f"{row[k]:.3f} ({row[k] - old[k]:+.3f})" if k in old else f"{row[k]:.3f}" for k in keys]
        lines.append(f"| {group} | {int(row['n'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def measure_before(commit: str, argv: Sequence[str]) -> dict[str, dict[str, float]]:
    """The summary of this benchmark run (``argv``) in a fresh process on the package of
    ``commit`` (``git archive`` of its ``src``, first on the path; the benchmark's own code and
    vector cache are this checkout's)."""
    import os
    import shutil
    import subprocess

    from .bench_recall_index import REPO, before_tree

    src = before_tree(commit)
    if src is None:
        raise RuntimeError(f"cannot read commit {commit}")
    out = Path(tempfile.mkdtemp(prefix="recall-before-")) / "summary.json"
    env = {**os.environ, "PYTHONPATH": str(src) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        subprocess.run(
            [sys.executable, "-m", "benchmarks.bench_recall", *argv, "--json", str(out)],
            cwd=REPO,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        summary: dict[str, dict[str, float]] = json.loads(out.read_text())["summary"]
    finally:
        shutil.rmtree(src.parent, ignore_errors=True)
        shutil.rmtree(out.parent, ignore_errors=True)
    return summary


def markdown(summary: dict[str, dict[str, float]], keys: Sequence[str]) -> str:
    """The summary as a Markdown table."""
    lines = ["| questions | n | " + " | ".join(keys) + " |", "|" + "---|" * (2 + len(keys))]
    for group, row in summary.items():
        lines.append(f"| {group} | {int(row['n'])} | " + " | ".join(f"{row[k]:.3f}" for k in keys) + " |")
    return "\n".join(lines)


async def latency(
    model: LocalEmbeddingService, turns: int = 10_000, builds: int = 100, rounds: int = 5
) -> dict[str, Any]:
    """``build(hybrid)`` and ``build(recent)`` p50/p95 (ms) on SQLite at ``turns`` turns, message
    index on the SQLite embedding store, the input's vector cached: ``rounds`` rounds of
    ``builds`` builds each, the strategies taking turns, the round of the best p95 kept."""
    from cogitator_memory import SQLiteAdapter, frozen_clock, unwrap
    from cogitator_memory.context import ContextBuilder, MessageIndex
    from cogitator_memory.vectors import SQLiteEmbeddingAdapter

    chats = load_chats()
    table = VectorTable(model)
    messages = []
    for chat in chats:
        vectors = await chat_vectors(chat, model)
        table.add([m.content for m in chat.messages], vectors)
        messages.extend(chat.messages)
    questions = [q.question for chat in chats for q in chat.questions][:builds]
    table.add(questions, await model.embed_batch(questions))
    folder = Path(tempfile.mkdtemp(prefix="recall-latency-"))
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
            unwrap(
                await memory.add_entry(
                    {"thread_id": thread.id, "message": {"role": message.role or "user", "content": message.content}}
                )
            )
    await index.flush()
    out: dict[str, Any] = {}
    builders = {
        strategy: ContextBuilder(
            {"strategy": strategy, "recall": BUILD_SETTINGS},
            {"memory_adapter": memory, "embedding_service": table, "message_index": index},
        )
        for strategy in ("recent", "hybrid")
    }
    for strategy, builder in builders.items():
        first = time.perf_counter()
        await builder.build(thread.id, current_input=questions[0], max_tokens=4000)
        out[f"{strategy} first build ms"] = (time.perf_counter() - first) * 1000
        for q in questions[:5]:  # the input vectors are cached by the builder too: warm them
            await builder.build(thread.id, current_input=q, max_tokens=4000)
    # rounds alternate the strategies, so both meet the same load; each keeps its best round
    for _round in range(rounds):
        for strategy, builder in builders.items():
            times = []
            for q in questions:
                t0 = time.perf_counter()
                context = await builder.build(thread.id, current_input=q, max_tokens=4000)
                times.append((time.perf_counter() - t0) * 1000)
                assert not context.errors, context.errors
            times.sort()
            p50, p95 = statistics.median(times), times[int(len(times) * 0.95) - 1]
            if p95 < out.get(f"{strategy} p95 ms", float("inf")):
                out[f"{strategy} p50 ms"], out[f"{strategy} p95 ms"] = p50, p95
            out.setdefault(f"{strategy} p95 ms per round", []).append(round(p95, 1))
    await index.close()
    await memory.disconnect()
    await store.disconnect()
    return out


TUNING_GRID: list[dict[str, Any]] = [
    {},
    {"rrf_k": 5.0},
    {"rrf_k": 30.0},
    {"rrf_k": 60.0},
    {"coverage_weight": 0.0},
    {"coverage_weight": 1.0},
    {"mmr_lambda": 1.0},
    {"mmr_lambda": 0.7},
    {"vector_min_cosine": 0.3},
    {"vector_min_cosine": 0.2, "vector_relative": 0.5},
    {"recency_weight": 0.0},
    {"weights": {k: {"vector": 2.0} for k in ("general", "temporal", "aggregate", "update", "preference")}},
    {"weights": {k: {"vector": 1.0} for k in ("general", "temporal", "aggregate", "update", "preference")}},
    {
        "weights": {
            k: {"entity": 0.0, "time": 0.0} for k in ("general", "temporal", "aggregate", "update", "preference")
        }
    },
]


async def prepare(chats: list[Chat], model: LocalEmbeddingService) -> list[dict[str, Any]]:
    """Per question, what the retriever needs (entries, cosines, as_of) and the plain hybrid
    search's ranking, made once for :func:`tune`."""
    from cogitator_memory import InMemoryAdapter, unwrap
    from cogitator_memory.search import BM25, HybridSearch
    from cogitator_memory.vectors import MAX_CONTENT_CHARS, InMemoryEmbeddingAdapter

    out: list[dict[str, Any]] = []
    for chat in chats:
        vectors = await chat_vectors(chat, model)
        qvecs = np.asarray(await model.embed_batch([q.question for q in chat.questions]), dtype=np.float32)
        memory = InMemoryAdapter()
        await memory.connect()

        class NoIndex:
            async def flush(self) -> None:
                return None

        thread_id, id_map, last = await load_chat_thread(memory, NoIndex(), chat)
        entries = unwrap(await memory.get_entries(thread_id=thread_id))
        plain_store = InMemoryEmbeddingAdapter(dimensions=model.dimensions, bm25=BM25(**TUNED_BM25))
        await plain_store.connect()
        unwrap(
            await plain_store.add_embeddings(
                [
                    {
                        "source_id": str(m.id),
                        "source_type": "message",
                        "content": m.content[:MAX_CONTENT_CHARS],
                        "vector": v.tolist(),
                    }
                    for m, v in zip(chat.messages, vectors, strict=True)
                ]
            )
        )
        plain = HybridSearch(
            plain_store,
            vector_weight=FUSION["vector_weight"],
            keyword_weight=FUSION["keyword_weight"],
            k=FUSION["rrf_k"],
            candidates=CANDIDATES,
        )
        by_message = {m.id: v for m, v in zip(chat.messages, vectors, strict=True)}
        matrix = np.stack([by_message[id_map[e.id]] for e in entries])
        for question, qvec in zip(chat.questions, qvecs, strict=True):
            cos = matrix @ qvec
            hy = [int(h.source_id) for h in unwrap(await plain.search(question.question, qvec.tolist(), limit=max(KS)))]
            out.append(
                {
                    "chat": chat.name,
                    "type": question.type,
                    "question": question,
                    "entries": entries,
                    "id_map": id_map,
                    "as_of": last + timedelta(days=1),
                    "cosines": {e.id: float(c) for e, c in zip(entries, cos, strict=True)},
                    "plain": [recall(hy, question.evidence, k) for k in KS],
                }
            )
    return out


async def tune(
    chats: list[Chat], model: LocalEmbeddingService, tune_chats: set[str] = TUNE_CHATS
) -> list[tuple[dict[str, Any], float, float]]:
    """Retriever recall (mean of @5/10/20) of each setting of :data:`TUNING_GRID` on the tuning
    chats (``tune_chats``), and on the held-out ones beside it (to see, not to choose)."""
    from cogitator_memory.recall import MemoryRetriever

    cases = await prepare(chats, model)
    for name in ("tune", "held"):
        rows = [c["plain"] for c in cases if (c["chat"] in tune_chats) == (name == "tune")]
        if rows:
            print(
                f"plain hybrid search {name}: " + " ".join(f"{x:.4f}" for x in np.mean(rows, axis=0)), file=sys.stderr
            )
    results = []
    for changes in TUNING_GRID:
        retriever = MemoryRetriever({**SETTINGS, **changes})
        per: dict[str, list[list[float]]] = {"tune": [], "held": []}
        for case in cases:
            q = case["question"]
            found = await retriever.retrieve(
                q.question, anchor=case["as_of"], history=case["entries"], cosines=case["cosines"], limit=max(KS)
            )
            ranked = [case["id_map"][h.id] for h in found.hits if h.kind == "turn"]
            per["tune" if case["chat"] in tune_chats else "held"].append([recall(ranked, q.evidence, k) for k in KS])
        tuned = np.mean(per["tune"], axis=0) if per["tune"] else np.zeros(3)
        held = np.mean(per["held"], axis=0) if per["held"] else np.zeros(3)
        results.append((changes, float(np.mean(tuned)), float(np.mean(held))))
        print(
            f"{json.dumps(changes)[:80]:80s} tune "
            + " ".join(f"{x:.4f}" for x in tuned)
            + "  held "
            + " ".join(f"{x:.4f}" for x in held),
            file=sys.stderr,
        )
    return results


async def run(quick: bool) -> list[Row]:
    """The benchmark entry point: coverage per strategy and budget, retriever recall, latency."""
    try:
        chats = load_chats(limit=3 if quick else None)
    except FileNotFoundError as exc:
        print(f"[recall] skipped: {exc}", file=sys.stderr)
        return []
    model = LocalEmbeddingService(batch_size=16)
    records = await evaluate(chats, model, SETTINGS, progress=True)
    summary = summarise(records, [*coverage_keys(), *coverage_keys(ids=True), *recall_keys()])
    print(markdown(summary, coverage_keys()), file=sys.stderr)
    print(markdown(summary, coverage_keys(ids=True)), file=sys.stderr)
    print(markdown(summary, recall_keys()), file=sys.stderr)
    overall = summary["overall"]
    rows: list[Row] = []
    for budget in BUDGETS:
        best = max(overall[f"{s}@{budget}"] for s in ("recent", "relevant"))
        value = overall[f"hybrid@{budget}"]
        rows.append(
            Row(
                "recall",
                f"beam-100k evidence coverage, build(hybrid) at {budget} tokens",
                value,
                "coverage",
                baseline=best,
                baseline_name="best of recent and relevant",
                ratio=value / best if best else None,
                target="hybrid beats every other strategy",
                passed=value > best,
            )
        )
    for k in KS:
        value, base = overall[f"retriever@{k}"], overall[f"plain@{k}"]
        rows.append(
            Row(
                "recall",
                f"beam-100k recall@{k}, MemoryRetriever turn hits",
                value,
                "recall",
                baseline=base,
                baseline_name="plain hybrid search (BM25 k1=3 b=1 + vectors, RRF)",
                ratio=value / base if base else None,
                target="beats the plain hybrid search",
                passed=value > base,
                extra={"summary": summary} if k == KS[-1] else {},
            )
        )
    if not quick:
        lat = await latency(model)
        rows.append(
            Row(
                "recall",
                "build(hybrid) p95, SQLite, 10,000 turns, message index",
                lat["hybrid p95 ms"],
                "ms",
                baseline=lat["recent p95 ms"],
                baseline_name="build(recent) p95, same thread",
                ratio=lat["hybrid p95 ms"] / lat["recent p95 ms"],
                target="< 50 ms",
                passed=lat["hybrid p95 ms"] < 50,
                extra=lat,
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.bench_recall [--data PATH] [--chats N] [--tune] [--latency-only] [--json PATH]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_recall")
    parser.add_argument(
        "--set",
        default="beam",
        choices=sorted(SPLITS),
        help="BEAM (user-assistant), chitchat (two named people) or chitchat-roles (the same stored as user and assistant)",
    )
    parser.add_argument("--data", default=None, help="the beam-100k folder")
    parser.add_argument("--chats", type=int, default=None, help="only the first N chats")
    parser.add_argument("--tune", action="store_true", help="try the settings of TUNING_GRID (retriever only)")
    parser.add_argument("--latency-only", action="store_true")
    parser.add_argument("--no-builds", action="store_true", help="retriever recall only")
    parser.add_argument("--settings", default=None, help="JSON of RetrieverSettings fields to measure with")
    parser.add_argument(
        "--build-settings", default=None, help="JSON of config.recall fields for the builders only (turn_tokens, ...)"
    )
    parser.add_argument("--json", default=None, help="write the summary here")
    parser.add_argument(
        "--before", default=None, help="also run on the package of this commit; figures printed with their change"
    )
    args = parser.parse_args(argv)
    if args.set != "beam" and (args.data or args.latency_only):
        parser.error("--data and --latency-only measure BEAM; the chitchat set is read from its package")
    model = LocalEmbeddingService(batch_size=16)
    settings = {**SETTINGS, **(json.loads(args.settings) if args.settings else {})}
    if args.latency_only:
        print(json.dumps(asyncio.run(latency(model)), indent=2))
        return 0
    chats = load_set(args.set, args.data, args.chats)
    if args.tune:
        asyncio.run(tune(chats, model, SPLITS[args.set][0]))
        return 0
    build = {**settings, **(json.loads(args.build_settings) if args.build_settings else {})}
    records = asyncio.run(
        evaluate(chats, model, settings, builds=not args.no_builds, progress=True, build_settings=build)
    )
    keys = recall_keys() if args.no_builds else [*coverage_keys(), *coverage_keys(ids=True), *recall_keys()]
    summary = summarise(records, keys, args.set)
    if args.before:
        same = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--before" and a != args.before]
        if "--json" in same:
            del same[same.index("--json") : same.index("--json") + 2]
        before = measure_before(args.before, same)
        print(f"figures now, (change from {args.before}):")
        if not args.no_builds:
            print(markdown_change(summary, before, coverage_keys()))
            print(markdown_change(summary, before, coverage_keys(ids=True)))
        print(markdown_change(summary, before, recall_keys()))
    else:
        if not args.no_builds:
            print(markdown(summary, coverage_keys()))
            print(markdown(summary, coverage_keys(ids=True)))
        print(markdown(summary, recall_keys()))
        if args.set != "beam":
            for chat in chats:
                print(f"\n{chat.name} per question type:")
                print(
                    markdown(
                        summarise([r for r in records if r["chat"] == chat.name], recall_keys(), args.set),
                        recall_keys(),
                    )
                )
    errors = [e for r in records for e in r.get("errors", [])]
    if errors:
        print(f"{len(errors)} build errors, e.g. {errors[:3]}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "settings": settings, "records": records}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
