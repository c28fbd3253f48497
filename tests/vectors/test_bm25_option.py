"""The BM25 parameters of the embedded stores: the in-memory and the SQLite store rank keyword
searches the same way, with any ``k1`` and ``b``, and a SQLite file of the FTS5 schema is moved
to the store's own term index with its embeddings kept."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from cogitator_memory import BM25, InMemoryEmbeddingAdapter, InvalidArgumentError, unwrap
from cogitator_memory.engines.sqlite.schema import MIGRATIONS, applied_migrations, migrate
from cogitator_memory.search.tokenizer import index_terms
from cogitator_memory.vectors import SQLiteEmbeddingAdapter
from cogitator_memory.vectors.base import BaseEmbeddingAdapter
from cogitator_memory.vectors.records import ScoredEmbedding

Factory = Callable[[Path, BM25 | None], BaseEmbeddingAdapter]
STORES: dict[str, Factory] = {
    "memory": lambda _path, bm25: InMemoryEmbeddingAdapter(bm25=bm25),
    "sqlite": lambda path, bm25: SQLiteEmbeddingAdapter(path=path / "vec.db", bm25=bm25),
}
WORDS = [
    "hotel",
    "lisbon",
    "flight",
    "refund",
    "museum",
    "dinner",
    "train",
    "booking",
    "weather",
    "garden",
    "cello",
    "invoice",
]


def _scores(hits: list[ScoredEmbedding]) -> dict[str, float]:
    """Scores by source id (embedding ids differ between stores, and they break ties)."""
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True), "best first"
    return {h.source_id: h.score for h in hits}


def _corpus(count: int = 120, seed: int = 3) -> list[dict[str, object]]:
    rng = random.Random(seed)
    docs: list[dict[str, object]] = []
    for i in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.choice([2, 5, 12, 40]))]
        docs.append(
            {
                "source_id": f"s{i}",
                "source_type": "message" if i % 3 else "fact",
                "content": " ".join(words) + f" item{i}",
                "vector": [1.0, float(i + 1)],
                "metadata": {"agent_id": f"a{i % 2}", "topic": "x" if i % 4 else "y"},
            }
        )
    return docs


@pytest.mark.parametrize("kind", sorted(STORES))
async def test_length_normalisation_follows_the_bm25_given(kind: str, tmp_path: Path) -> None:
    # With b=0 length does not count and k1 large, the long reply's three "hotel"s win; with the
    # default b=0.75 its length pulls it below the short turn.
    async def ranking(bm25: BM25 | None, where: Path) -> list[str]:
        long_reply = "hotel " * 3 + " ".join(f"filler{i}" for i in range(200))
        docs = [("short", "which hotel in Lisbon"), ("long", long_reply)] + [
            (f"other{i}", f"unrelated text number {i}") for i in range(8)
        ]
        where.mkdir()
        async with STORES[kind](where, bm25) as store:
            rows = [
                {"source_id": sid, "source_type": "message", "content": text, "vector": [1.0, float(i + 1)]}
                for i, (sid, text) in enumerate(docs)
            ]
            unwrap(await store.add_embeddings(rows))
            hits = unwrap(await store.keyword_search("hotel", limit=2))
        return [h.source_id for h in hits]

    assert await ranking(None, tmp_path / "default") == ["short", "long"]
    assert await ranking(BM25(k1=3.0, b=0.0), tmp_path / "tuned") == ["long", "short"]


@pytest.mark.parametrize("kind", sorted(STORES))
def test_a_bm25_that_is_not_one_is_refused(kind: str, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="bm25"):
        STORES[kind](tmp_path, (3, 1))  # type: ignore[arg-type]


@pytest.mark.parametrize("bm25", [None, BM25(k1=3.0, b=1.0), BM25(k1=0.5, b=0.0)], ids=["default", "3-1", "0.5-0"])
async def test_sqlite_scores_as_the_in_memory_store_does(bm25: BM25 | None, tmp_path: Path) -> None:
    queries = ["hotel", "lisbon refund", "museum dinner train", "item7 hotel", "cello garden invoice weather"]
    filters: list[dict[str, object] | None] = [
        None,
        {"agent_id": "a1"},
        {"source_type": "fact", "metadata": {"topic": "y"}},
    ]
    async with (
        InMemoryEmbeddingAdapter(bm25=bm25) as memory,
        SQLiteEmbeddingAdapter(path=tmp_path / "vec.db", bm25=bm25) as sqlite,
    ):
        stores: list[BaseEmbeddingAdapter] = [memory, sqlite]
        for store in stores:
            added = unwrap(await store.add_embeddings(_corpus()))
            unwrap(await store.delete_embedding(added[5].id))
            unwrap(await store.delete_by_filter(metadata={"topic": "y"}, agent_id="a0"))

        async def compare() -> int:
            seen = 0
            for query in queries:
                for flt in filters:
                    want = _scores(unwrap(await memory.keyword_search(query, limit=500, filter=flt)))
                    got = _scores(unwrap(await sqlite.keyword_search(query, limit=500, filter=flt)))
                    assert got.keys() == want.keys(), (query, flt)
                    assert [got[k] for k in want] == pytest.approx(list(want.values()), rel=1e-9)
                    seen += len(got)
            return seen

        assert await compare() > 100
        for store in stores:  # statistics follow later writes
            unwrap(await store.add_embeddings(_corpus(30, seed=9)))
        assert await compare() > 100


async def test_a_file_of_the_fts5_schema_is_moved_to_the_term_index(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    migrate(db, MIGRATIONS[:2])  # the schema before m003: FTS5 beside the embeddings
    docs = _corpus(40)
    for i, doc in enumerate(docs, start=1):
        db.execute(
            "INSERT INTO embeddings (id, source_id, source_type, content, vector, metadata, agent_id, created_at)"
            ' VALUES (?, ?, ?, ?, ?, \'{"agent_id": "a0"}\', ?, ?)',
            (f"e{i}", doc["source_id"], doc["source_type"], doc["content"], bytes(8), "a0", i),
        )
        db.execute(
            "INSERT INTO embeddings_fts (rowid, terms) VALUES (?, ?)", (i, " ".join(index_terms(str(doc["content"]))))
        )
    db.execute("INSERT INTO embedding_state (key, value) VALUES ('dimensions', 2)")
    db.close()

    async with SQLiteEmbeddingAdapter(path=path) as sqlite, InMemoryEmbeddingAdapter() as memory:
        assert "m003_keyword_index" in [name for _, name in applied_migrations(sqlite.connection)]
        tables = {r[0] for r in sqlite.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "embedding_terms" in tables and "embeddings_fts" not in tables
        unwrap(await memory.add_embeddings([{**d, "metadata": {"agent_id": "a0"}} for d in docs]))
        for query in ("hotel", "lisbon refund cello", "item3"):
            want = _scores(unwrap(await memory.keyword_search(query, limit=500)))
            got = _scores(unwrap(await sqlite.keyword_search(query, limit=500)))
            assert got and got.keys() == want.keys()
            assert [got[k] for k in want] == pytest.approx(list(want.values()), rel=1e-9)
        unwrap(await sqlite.delete_by_filter(agent_id="a0"))
        assert unwrap(await sqlite.keyword_search("hotel")) == []
        assert sqlite.connection.execute("SELECT count(*) FROM embedding_terms").fetchone() == (0,)
