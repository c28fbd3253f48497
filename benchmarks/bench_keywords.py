"""Keyword search of the SQLite embedding store, beside the FTS5 query it replaced, in the same run.

The store ranks keyword searches with the package's own BM25 computed in SQL over its term
index (``embedding_terms``), so ``k1`` and ``b`` can be chosen; before, it asked FTS5's
``bm25()`` (k1=1.2, b=0.75 fixed). Measured on 10,000 and 100,000 messages (``--quick``: 2,000
and 10,000) of Zipf-distributed words over a 30,000-word vocabulary, lengths from a few words
to a few hundred (chat turns and long replies), 64 questions of 6 words:

- ``keyword_search(limit=10)`` p50/p95 on the store, default BM25 and ``BM25(k1=3, b=1)``;
- baseline: raw ``sqlite3``, the same documents' terms in an FTS5 table, ``ORDER BY bm25()``
  ``LIMIT 10`` over the same OR query (what the store ran before);
- ``add_embeddings`` in batches of 500 (384-dim vectors) vs raw ``sqlite3`` writing the same
  rows and terms into the same tables; raw ``sqlite3`` writing them into the schema before
  (embeddings + FTS5) is reported beside it (what the term index costs against FTS5).
"""

from __future__ import annotations

import random
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import Row, percentiles
from cogitator_memory import BM25, unwrap
from cogitator_memory.search.tokenizer import index_terms
from cogitator_memory.vectors import SQLiteEmbeddingAdapter

VOCAB = 30_000
DIMS = 384
BATCH = 500


def _texts(n: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    words = [f"w{i}x" for i in range(VOCAB)]
    weights = [1.0 / (i + 1) ** 1.05 for i in range(VOCAB)]
    lengths = [rng.choice([6, 10, 15, 25, 40, 80, 300]) for _ in range(n)]
    flat = rng.choices(words, weights, k=sum(lengths))
    out, at = [], 0
    for length in lengths:
        out.append(" ".join(flat[at : at + length]))
        at += length
    return out


def _questions(seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(f"w{rng.randrange(20, 3000)}x" for _ in range(6)) for _ in range(64)]


def _raw_fill(folder: Path, texts: list[str], vectors: Any, *, fts: bool) -> tuple[sqlite3.Connection, float]:
    """Raw sqlite3 writing the same rows: into the schema before (embeddings + FTS5 over the
    tokenized content, ``fts=True``) or the store's own (embeddings + ``embedding_terms``)."""
    db = sqlite3.connect(folder / f"raw-{fts}.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(
        "CREATE TABLE embeddings (rowid INTEGER PRIMARY KEY, id TEXT UNIQUE, source_id TEXT, source_type TEXT,"
        " content TEXT, vector BLOB, metadata TEXT, agent_id TEXT, user_id TEXT, thread_id TEXT, created_at INTEGER,"
        " term_count INTEGER NOT NULL DEFAULT 0)"
    )
    if fts:
        db.execute("CREATE VIRTUAL TABLE embeddings_fts USING fts5(terms, tokenize = 'unicode61 remove_diacritics 0')")
    else:
        db.execute(
            "CREATE TABLE embedding_terms (term TEXT NOT NULL, rid INTEGER NOT NULL, tf INTEGER NOT NULL,"
            " PRIMARY KEY (term, rid)) WITHOUT ROWID"
        )
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        db.execute("BEGIN IMMEDIATE")
        for i in range(start, min(start + BATCH, len(texts))):
            terms = index_terms(texts[i])
            cur = db.execute(
                "INSERT INTO embeddings (id, source_id, source_type, content, vector, metadata, created_at, term_count)"
                " VALUES (?, ?, 'message', ?, ?, '{}', ?, ?)",
                (f"e{i}", f"m{i}", texts[i], vectors[i].tobytes(), i, len(terms)),
            )
            if fts:
                db.execute("INSERT INTO embeddings_fts (rowid, terms) VALUES (?, ?)", (cur.lastrowid, " ".join(terms)))
            else:
                db.executemany(
                    "INSERT INTO embedding_terms (term, rid, tf) VALUES (?, ?, ?)",
                    [(t, cur.lastrowid, n) for t, n in Counter(terms).items()],
                )
        db.execute("COMMIT")
    return db, time.perf_counter() - started


async def _fill(store: SQLiteEmbeddingAdapter, texts: list[str], vectors: Any) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        batch = [
            {"source_id": f"m{i}", "source_type": "message", "content": texts[i], "vector": vectors[i]}
            for i in range(start, min(start + BATCH, len(texts)))
        ]
        unwrap(await store.add_embeddings(batch))
    return time.perf_counter() - started


async def _interleaved(store: SQLiteEmbeddingAdapter, raw: sqlite3.Connection, questions: list[str]) -> Any:
    """Seconds per search of the store and of the FTS5 query, question by question, alternating
    (so both see the machine in the same state); every question once first, to warm up."""
    matches = [" OR ".join(f'"{t}"' for t in dict.fromkeys(index_terms(q))) for q in questions]
    sql = (
        "SELECT e.id, -bm25(embeddings_fts) FROM embeddings_fts JOIN embeddings e"
        " ON e.rowid = embeddings_fts.rowid WHERE embeddings_fts MATCH ? ORDER BY bm25(embeddings_fts) LIMIT 10"
    )
    ours: list[float] = []
    theirs: list[float] = []
    for i in range(len(questions) * 6):
        question = questions[i % len(questions)]
        started = time.perf_counter()
        unwrap(await store.keyword_search(question, limit=10))
        middle = time.perf_counter()
        raw.execute(sql, (matches[i % len(questions)],)).fetchall()
        ended = time.perf_counter()
        if i >= len(questions):
            ours.append(middle - started)
            theirs.append(ended - middle)
    return percentiles(ours), percentiles(theirs)


async def run(quick: bool) -> list[Row]:
    rows: list[Row] = []
    questions = _questions()
    for n in (2_000, 10_000) if quick else (10_000, 100_000):
        texts = _texts(n)
        vectors = np.random.default_rng(3).standard_normal((n, DIMS)).astype("<f4")
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            raw, fts_fill = _raw_fill(folder, texts, vectors, fts=True)
            terms_db, terms_fill = _raw_fill(folder, texts, vectors, fts=False)
            terms_db.close()
            for label, bm25 in (("default BM25", None), ("BM25(k1=3, b=1)", BM25(k1=3.0, b=1.0))):
                path = folder / f"store-{bm25 is None}.db"
                async with SQLiteEmbeddingAdapter(path=path, bm25=bm25) as store:
                    fill = await _fill(store, texts, vectors)
                    (p50, p95), (fts_p50, fts_p95) = await _interleaved(store, raw, questions)
                rows.append(
                    Row(
                        "keyword_search(limit=10), SQLite",
                        f"{n:,} messages, {label}, p50 ms",
                        p50 * 1e3,
                        "ms",
                        fts_p50 * 1e3,
                        "raw sqlite3 FTS5 bm25() top-10, same documents and terms (the store before), alternating",
                        p50 / fts_p50,
                        None,
                        None,
                        {"p95_ms": p95 * 1e3, "baseline_p95_ms": fts_p95 * 1e3},
                    )
                )
                if bm25 is None:
                    rows.append(
                        Row(
                            "add_embeddings (batches of 500, 384 dims), SQLite",
                            f"{n:,} messages, embeddings/s",
                            n / fill,
                            "embeddings/s",
                            n / terms_fill,
                            "raw sqlite3, same rows and term index (embeddings + embedding_terms)",
                            (n / fill) / (n / terms_fill),
                            None,
                            None,
                            {"raw_into_the_fts5_schema_per_s": n / fts_fill},
                        )
                    )
            raw.close()
    return rows
