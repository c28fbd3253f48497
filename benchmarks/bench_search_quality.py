"""Recall quality as a user gets it: ``Memory.search`` over the recall index, on BEAM 100K.

``bench_recall`` scores ``MemoryRetriever`` given a chat's every turn (``history=``) and every
cosine. A user does not call that: ``Memory.search(question, user_id=...)`` asks the store's recall
index for candidates (keywords, time, the message vectors of every thread of the user, a few
hundred each) and ranks only those, with the package's default settings. This benchmark loads
each chat as a user would store it and scores that path, beside the retriever over the whole
history measured in the same run (the ``bench_recall`` figure):

* each chat is one user of one ``Memory`` (the in-memory store, or ``--store sqlite``: a file
  per chat), each of its sessions (messages without a pause of 4 hours) a thread of its own,
  every message added with ``Memory.add`` at its time (``created_at``; the times and names of
  ``bench_recall``'s loading), the embedding service answering from the cached MiniLM vectors;
  ``--set chitchat`` loads the two-person chat set instead of BEAM (``chitchat-roles``: the same
  stored as "user" and "assistant" without names);
* each question is searched the day after the chat's last message: ``Memory.search(question,
  user_id=..., limit=20)``, its turn hits mapped back to message ids; R@5/10/20 is the share of
  the evidence messages among the first 5/10/20 turn hits;
* ``retriever``: ``MemoryRetriever()`` with the package defaults (or ``--settings``, given to
  both sides) over the whole history, every cosine given: what ``bench_recall`` measures;
  ``search@100`` says how much of the evidence the index's candidates held at all.

Run: ``python -m benchmarks.bench_search_quality [--set beam|chitchat] [--chats N] [--store
memory|sqlite] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from cogitator_memory.embeddings.local import LocalEmbeddingService

from .beam import Chat, load_chats
from .bench_recall import KS, SPLITS, VectorTable, load_set, message_times, said, summarise
from .bench_retrieval import chat_vectors, recall
from .common import Row

USER = "reader"


#: A pause this long between two messages starts a new thread (a new conversation).
SESSION_GAP = timedelta(hours=4)


async def _load(memory: Any, chat: Chat) -> tuple[dict[str, int], list[str], Any]:
    """The chat as one user's threads (a new one after a pause of :data:`SESSION_GAP`): entry id
    -> message id, the threads, and the last time."""
    ids: dict[str, int] = {}
    times = message_times(chat)
    session = 0
    previous = None
    for message, at in zip(chat.messages, times, strict=True):
        if previous is None or at - previous > SESSION_GAP:
            session += 1
        previous = at
        added = await memory.add([said(message)], user_id=USER, thread_id=f"beam-{chat.name}-{session}", created_at=at)
        ids[added.entries[0].id] = message.id
    await memory.flush()
    return ids, [f"beam-{chat.name}-{n}" for n in range(1, session + 1)], max(times)


async def evaluate(
    chats: list[Chat], model: LocalEmbeddingService, store: str, progress: bool, settings: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    from cogitator_memory import unwrap
    from cogitator_memory.recall import MemoryRetriever
    from cogitator_memory.runtime import Memory

    table = VectorTable(model)
    defaults = MemoryRetriever(settings)
    out: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for chat in chats:
            started = time.perf_counter()
            vectors = await chat_vectors(chat, model)
            table.add([m.content for m in chat.messages], vectors)
            questions = [q.question for q in chat.questions]
            table.add(questions, await model.embed_batch(questions))
            config: dict[str, Any] = {"adapter": "memory"}
            if store == "sqlite":
                config = {"adapter": "sqlite", "path": str(Path(tmp) / f"{chat.name}.db")}
            async with Memory(config, embedding_service=table) as memory:
                memory.retriever = defaults
                id_map, threads, last = await _load(memory, chat)
                as_of = last + timedelta(days=1)
                thread_entries = []
                for tid in threads:
                    thread_entries.extend(unwrap(await memory.adapter.get_entries(thread_id=tid)))
                thread_entries.sort(key=lambda e: (e.created_at, e.id))
                by_message = {m.id: v for m, v in zip(chat.messages, vectors, strict=True)}
                matrix = np.stack([by_message[id_map[e.id]] for e in thread_entries])
                for question in chat.questions:
                    qvec = np.asarray(table.table[question.question], dtype=np.float32)
                    cosines = {e.id: float(c) for e, c in zip(thread_entries, matrix @ qvec, strict=True)}
                    hits = await memory.search(question.question, user_id=USER, limit=100, as_of=as_of)
                    found = [id_map[h.id] for h in hits if h.kind == "entry" and h.id in id_map]
                    record: dict[str, Any] = {"chat": chat.name, "type": question.type}
                    for name, retriever in (("retriever", defaults),):
                        got = await retriever.retrieve(
                            question.question, anchor=as_of, history=thread_entries, cosines=cosines, limit=max(KS)
                        )
                        ranked = [id_map[h.id] for h in got.hits if h.kind == "turn"]
                        for k in KS:
                            record[f"{name}@{k}"] = recall(ranked, question.evidence, k)
                    for k in KS:
                        record[f"search@{k}"] = recall(found, question.evidence, k)
                    record["search@100"] = recall(found, question.evidence, 100)
                    out.append(record)
            if progress:
                print(f"chat {chat.name}: {time.perf_counter() - started:.1f}s", file=sys.stderr)
    return out


async def run(quick: bool) -> list[Row]:
    """The runner's entry point: ``Memory.search`` R@k on BEAM beside the retriever over the
    whole history (3 chats with ``quick``)."""
    try:
        chats = load_chats(limit=3 if quick else None)
    except FileNotFoundError as exc:
        print(f"[search_quality] skipped: {exc}", file=sys.stderr)
        return []
    records = await evaluate(chats, LocalEmbeddingService(batch_size=16), "memory", progress=True)
    summary = summarise(records, keys())
    print(markdown(summary), file=sys.stderr)
    overall = summary["overall"]
    rows: list[Row] = []
    for k in KS:
        value, base = overall[f"search@{k}"], overall[f"retriever@{k}"]
        rows.append(
            Row(
                "recall",
                f"beam-100k recall@{k}, Memory.search turn hits (recall index)",
                value,
                "recall",
                baseline=base,
                baseline_name="MemoryRetriever over the whole history",
                ratio=value / base if base else None,
                extra={"summary": summary} if k == KS[-1] else {},
            )
        )
    return rows


def keys() -> list[str]:
    return [*(f"{m}@{k}" for m in ("search", "retriever") for k in KS), "search@100"]


def markdown(summary: dict[str, dict[str, float]]) -> str:
    cols = keys()
    lines = ["| questions | n | " + " | ".join(cols) + " |", "|---|---|" + "---|" * len(cols)]
    for name, row in summary.items():
        lines.append(f"| {name} | {int(row['n'])} | " + " | ".join(f"{row[c]:.3f}" for c in cols) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_search_quality")
    parser.add_argument("--data", default=None, help="the beam-100k folder")
    parser.add_argument("--chats", type=int, default=None, help="only the first N chats")
    parser.add_argument("--store", choices=("memory", "sqlite"), default="memory")
    parser.add_argument(
        "--set",
        choices=sorted(SPLITS),
        default="beam",
        help="BEAM, the two-person chat set, or the same stored as user and assistant without names (chitchat-roles)",
    )
    parser.add_argument("--json", default=None, help="write the summary and records here")
    parser.add_argument("--settings", default=None, help="JSON of RetrieverSettings fields (both sides)")
    args = parser.parse_args(argv)
    model = LocalEmbeddingService(batch_size=16)
    chats = load_set(args.set, args.data, args.chats)
    settings = json.loads(args.settings) if args.settings else None
    records = asyncio.run(evaluate(chats, model, args.store, progress=True, settings=settings))
    summary = summarise(records, keys(), args.set)
    print(markdown(summary))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "records": records}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
