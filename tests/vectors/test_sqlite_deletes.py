"""Deletes on the SQLite embedding store take an embedding's keyword-index terms by its rowid
(migration m008): nothing of a deleted embedding stays in ``embedding_terms``, the others keep
theirs, keyword search ranks as the in-memory store does after the same deletes, and a file made
before m008 gets the index when opened."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from cogitator_memory import InMemoryEmbeddingAdapter, unwrap
from cogitator_memory.engines.sqlite.schema import SCHEMA_VERSION, applied_migrations
from cogitator_memory.vectors import SQLiteEmbeddingAdapter
from cogitator_memory.vectors.records import ScoredEmbedding

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


def _docs(count: int = 90) -> list[dict[str, object]]:
    rng = random.Random(11)
    return [
        {
            "source_id": f"s{i}",
            "source_type": "message",
            "content": " ".join(rng.choice(WORDS) for _ in range(rng.randrange(2, 30))) + f" item{i}",
            "vector": [1.0, float(i + 1)],
            "metadata": {"agent_id": "a", "user_id": f"u{i % 2}", "thread_id": f"t{i % 3}", "n": i},
        }
        for i in range(count)
    ]


def _scores(hits: list[ScoredEmbedding]) -> dict[str, float]:
    return {h.source_id: h.score for h in hits}


def _terms_by_rid(db: sqlite3.Connection) -> dict[int, int]:
    return dict(db.execute("SELECT rid, count(*) FROM embedding_terms GROUP BY rid").fetchall())


async def test_deletes_take_exactly_the_terms_of_what_went(tmp_path: Path) -> None:
    docs = _docs()
    async with SQLiteEmbeddingAdapter(path=tmp_path / "v.db") as sqlite, InMemoryEmbeddingAdapter() as memory:
        db = sqlite.connection
        plan = db.execute("EXPLAIN QUERY PLAN DELETE FROM embedding_terms WHERE rid = 1").fetchall()
        assert "embedding_terms_by_rid" in str(plan)
        added = unwrap(await sqlite.add_embeddings(docs))
        unwrap(await memory.add_embeddings(docs))
        rowid = {r[1]: r[0] for r in db.execute("SELECT rowid, id FROM embeddings")}
        before = _terms_by_rid(db)
        assert len(before) == len(docs)

        unwrap(await sqlite.delete_embedding(added[5].id))
        unwrap(await sqlite.delete_embedding(added[5].id))  # gone already: nothing else moves
        assert unwrap(await sqlite.delete_by_filter(thread_id="t1")) == 30
        assert unwrap(await sqlite.delete_by_filter(metadata={"user_id": "u0", "n": 12})) == 1
        assert unwrap(await sqlite.delete_by_filter(metadata={"user_id": 0})) == 0  # not the string "0"
        gone = {added[5].id, *(e.id for i, e in enumerate(added) if i % 3 == 1), added[12].id}
        left = {rowid[e.id]: before[rowid[e.id]] for e in added if e.id not in gone}
        assert _terms_by_rid(db) == left
        counted = db.execute("SELECT rowid, term_count FROM embeddings").fetchall()
        assert {r for r, _ in counted} == set(left)

        mem_ids = {e.source_id: e.id for e in unwrap(await memory.get_by_sources([str(d["source_id"]) for d in docs]))}
        unwrap(await memory.delete_embedding(mem_ids["s5"]))
        unwrap(await memory.delete_by_filter(thread_id="t1"))
        unwrap(await memory.delete_by_filter(metadata={"user_id": "u0", "n": 12}))
        for query in ("hotel", "lisbon refund cello", "item12", "item12 garden", "train"):
            for flt in (None, {"user_id": "u1"}, {"thread_id": "t2"}):
                want = _scores(unwrap(await memory.keyword_search(query, limit=500, filter=flt)))
                got = _scores(unwrap(await sqlite.keyword_search(query, limit=500, filter=flt)))
                assert got.keys() == want.keys(), (query, flt)
                assert [got[k] for k in want] == pytest.approx(list(want.values()), rel=1e-9)


async def test_a_file_made_before_m008_gets_the_index(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with SQLiteEmbeddingAdapter(path=path) as sqlite:
        unwrap(await sqlite.add_embeddings(_docs(12)))
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("DROP INDEX embedding_terms_by_rid")
    db.execute("DELETE FROM cogitator_migrations WHERE version >= 8")
    db.execute("PRAGMA user_version = 7")
    db.close()

    async with SQLiteEmbeddingAdapter(path=path) as sqlite:
        db = sqlite.connection
        assert (8, "m008_terms_by_embedding") in applied_migrations(db)
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert "embedding_terms_by_rid" in names
        assert unwrap(await sqlite.delete_by_filter(metadata={"user_id": "u0"})) == 6
        assert db.execute("SELECT count(DISTINCT rid) FROM embedding_terms").fetchone() == (6,)
        hits = unwrap(await sqlite.keyword_search("item3"))
        assert [h.source_id for h in hits] == ["s3"]
