"""The SQLite embedding store's vector search over binary codes kept in the file: in step with
every write (its own, another connection's, another process's), read again only where a write
changed it, written for a file made before the codes, and close to exact cosine."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from cogitator_memory import unwrap
from cogitator_memory.engines.sqlite.codes import CHUNK_ROWS, part_of
from cogitator_memory.engines.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, migrate
from cogitator_memory.errors import ConflictError
from cogitator_memory.vectors import SQLiteEmbeddingAdapter

DIMS = 128


def _vectors(count: int, seed: int = 0, topics: int = 40) -> np.ndarray:
    """Unit vectors around ``topics`` directions (as text embeddings cluster by subject)."""
    rng = np.random.default_rng(seed)
    centres = np.random.default_rng(99).standard_normal((topics, DIMS))
    picks = rng.integers(0, topics, count)
    out = centres[picks] + 0.9 * rng.standard_normal((count, DIMS))
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def _docs(vectors: np.ndarray, start: int = 0, **metadata: str) -> list[dict[str, object]]:
    return [
        {
            "id": f"emb_{start + i}",
            "source_id": f"s{start + i}",
            "source_type": "message",
            "content": f"text {start + i}",
            "vector": v.tolist(),
            "metadata": {"user_id": "u", **metadata},
        }
        for i, v in enumerate(vectors)
    ]


def _exact(vectors: np.ndarray, query: np.ndarray, k: int) -> list[str]:
    scores = vectors @ (query / np.linalg.norm(query))
    return [f"emb_{i}" for i in np.argsort(-scores, kind="stable")[:k]]


async def _ids(store: SQLiteEmbeddingAdapter, query: np.ndarray, limit: int = 10, **flt: object) -> list[str]:
    hits = unwrap(await store.search(query.tolist(), limit=limit, threshold=-1.0, filter={"user_id": "u", **flt}))
    return [h.id for h in hits]


async def test_a_search_after_a_write_reads_only_the_chunk_it_changed(tmp_path: Path) -> None:
    vectors = _vectors(2 * CHUNK_ROWS + 500)
    async with SQLiteEmbeddingAdapter(path=tmp_path / "v.db") as store:
        unwrap(await store.add_embeddings(_docs(vectors)))
        await _ids(store, vectors[0])
        assert store.code_cache.chunks_read == 3
        await _ids(store, vectors[1])
        assert store.code_cache.chunks_read == 3, "a warm search reads no code"
        new = _vectors(1, seed=9)
        unwrap(await store.add_embeddings(_docs(new, start=len(vectors))))
        assert (await _ids(store, new[0]))[0] == f"emb_{len(vectors)}"
        assert store.code_cache.chunks_read == 4, "the write changed the last chunk only"
        unwrap(await store.delete_embedding("emb_0"))
        assert "emb_0" not in await _ids(store, vectors[0])
        assert store.code_cache.chunks_read == 5


async def test_another_process_write_and_delete_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    vectors = _vectors(1500)
    new = _vectors(1, seed=5)[0]
    script = f"""
import asyncio, sys
from cogitator_memory import unwrap
from cogitator_memory.vectors import SQLiteEmbeddingAdapter

async def main():
    async with SQLiteEmbeddingAdapter(path=sys.argv[1]) as store:
        if sys.argv[2] == "add":
            unwrap(await store.add_embedding({{"id": "emb_new", "source_id": "n", "source_type": "message",
                "content": "new", "vector": {new.tolist()!r}, "metadata": {{"user_id": "u"}}}}))
        else:
            unwrap(await store.delete_embedding(sys.argv[2]))

asyncio.run(main())
"""
    async with SQLiteEmbeddingAdapter(path=path) as store:
        unwrap(await store.add_embeddings(_docs(vectors)))
        assert "emb_new" not in await _ids(store, new)
        subprocess.run([sys.executable, "-c", script, str(path), "add"], check=True)
        assert (await _ids(store, new))[0] == "emb_new"
        top = (await _ids(store, vectors[7]))[0]
        assert top == "emb_7"
        subprocess.run([sys.executable, "-c", script, str(path), "emb_7"], check=True)
        assert "emb_7" not in await _ids(store, vectors[7])


async def test_a_file_from_before_the_codes_is_coded_when_opened(tmp_path: Path) -> None:
    """A file at schema version 11 (no codes) holding embeddings gets their codes when opened,
    and its searches answer as an exact search does."""
    path = tmp_path / "old.db"
    vectors = _vectors(1200)
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        migrate(db, MIGRATIONS[:11])
        db.execute("INSERT INTO embedding_state (key, value) VALUES ('dimensions', ?)", (DIMS,))
        db.executemany(
            "INSERT INTO embeddings (id, source_id, source_type, content, vector, metadata, user_id, created_at)"
            " VALUES (?, ?, 'message', 'text', ?, ?, 'u', 0)",
            [(f"emb_{i}", f"s{i}", v.astype("<f4").tobytes(), '{"user_id": "u"}') for i, v in enumerate(vectors)],
        )
    async with SQLiteEmbeddingAdapter(path=path) as store:
        with closing(sqlite3.connect(path)) as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
            coded = sum(
                len(blob) // 8
                for (blob,) in db.execute("SELECT rowids FROM embedding_codes WHERE part = ?", (part_of("u", None),))
            )
        assert coded == len(vectors)
        for q in range(5):
            assert await _ids(store, vectors[q]) == _exact(vectors, vectors[q], 10)


async def test_recall_at_10_against_exact_cosine(tmp_path: Path) -> None:
    """Beyond the shortlist the search is approximate: at least 0.95 of the exact ten found."""
    vectors = _vectors(6000, seed=3)
    queries = _vectors(40, seed=4)
    async with SQLiteEmbeddingAdapter(path=tmp_path / "r.db") as store:
        unwrap(await store.add_embeddings(_docs(vectors)))
        found = [len(set(await _ids(store, q)) & set(_exact(vectors, q, 10))) / 10 for q in queries]
    assert sum(found) / len(found) >= 0.95, found


async def test_a_scope_no_larger_than_the_shortlist_is_exact(tmp_path: Path) -> None:
    vectors = _vectors(150, seed=6)
    async with SQLiteEmbeddingAdapter(path=tmp_path / "s.db") as store:
        unwrap(await store.add_embeddings(_docs(vectors)))
        for q in _vectors(10, seed=7):
            assert await _ids(store, q, limit=20) == _exact(vectors, q, 20)


async def test_a_filter_few_pass_is_answered_exactly(tmp_path: Path) -> None:
    """Five embeddings of 3,000 in the thread: a search of the thread scores its rows exactly
    without reading a code; a filter the codes must answer (the thread in the metadata) widens
    its shortlist, then scans, and finds the same, best first."""
    vectors = _vectors(3000, seed=8)
    async with SQLiteEmbeddingAdapter(path=tmp_path / "f.db") as store:
        unwrap(await store.add_embeddings(_docs(vectors[:2995], thread_id="other")))
        unwrap(await store.add_embeddings(_docs(vectors[2995:], start=2995, thread_id="t")))
        query = vectors[0]
        got = await _ids(store, query, limit=10, thread_id="t")
        scores = vectors[2995:] @ query
        assert got == [f"emb_{2995 + i}" for i in np.argsort(-scores, kind="stable")]
        assert store.code_cache.chunks_read == 0, "a small thread is scanned, its user's codes unread"
        only = await _ids(store, query, limit=10, metadata={"thread_id": "t"})
        assert only == got
        assert store.code_cache.chunks_read == 3


async def test_a_thread_search_sees_shared_rows_and_uses_the_codes_past_the_exact_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rows of no thread pass a thread's search (the scoping rule) whichever way it runs;
    a thread that, with them, holds more than ``THREAD_EXACT_MAX`` is searched through the codes."""
    from cogitator_memory.engines.sqlite import vectors as sqlite_vectors

    vectors = _vectors(1200, seed=10)
    async with SQLiteEmbeddingAdapter(path=tmp_path / "b.db") as store:
        unwrap(await store.add_embeddings(_docs(vectors[:1000], thread_id="other")))
        unwrap(await store.add_embeddings(_docs(vectors[1000:1150], start=1000, thread_id="t")))
        unwrap(await store.add_embeddings(_docs(vectors[1150:], start=1150)))  # shared: no thread
        passing = vectors[1000:]
        for bound, codes_read in ((sqlite_vectors.THREAD_EXACT_MAX, 0), (199, 2)):
            monkeypatch.setattr(sqlite_vectors, "THREAD_EXACT_MAX", bound)
            for q in _vectors(5, seed=11):
                got = await _ids(store, q, limit=20, thread_id="t")
                exact = [f"emb_{1000 + i}" for i in np.argsort(-(passing @ q), kind="stable")[:20]]
                if codes_read == 0:
                    assert got == exact
                else:  # a shortlist of the codes, rescored (how near it comes: test_recall_at_10_...)
                    assert len(got) == 20 and all(int(h[4:]) >= 1000 for h in got), "nothing outside the filter"
            assert store.code_cache.chunks_read == codes_read


async def test_a_failed_write_leaves_the_codes_as_they_were(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    vectors = _vectors(300)
    async with SQLiteEmbeddingAdapter(path=path) as store:
        unwrap(await store.add_embeddings(_docs(vectors)))
        with closing(sqlite3.connect(path)) as db:
            before = db.execute("SELECT part, chunk, version, rowids, codes FROM embedding_codes").fetchall()
        with pytest.raises(ConflictError):
            unwrap(await store.add_embeddings(_docs(_vectors(2, seed=1), start=299)))  # emb_299 is taken
        with closing(sqlite3.connect(path)) as db:
            assert db.execute("SELECT part, chunk, version, rowids, codes FROM embedding_codes").fetchall() == before


async def test_deletes_take_the_codes_with_them(tmp_path: Path) -> None:
    path = tmp_path / "d.db"
    async with SQLiteEmbeddingAdapter(path=path) as store:
        unwrap(await store.add_embeddings(_docs(_vectors(CHUNK_ROWS + 10))))
        unwrap(
            await store.add_embeddings([{**_docs(_vectors(3, seed=2), start=5000)[0], "metadata": {"user_id": "w"}}])
        )
        unwrap(await store.delete_embeddings(["emb_1", "emb_2"]))
        with closing(sqlite3.connect(path)) as db:
            held = {
                part: sum(
                    len(blob) // 8
                    for (blob,) in db.execute(
                        "SELECT rowids FROM embedding_codes WHERE part = ?", (part_of(part, None),)
                    )
                )
                for part in ("u", "w")
            }
        assert held == {"u": CHUNK_ROWS + 8, "w": 1}
        unwrap(await store.delete_by_filter(metadata={"user_id": "u"}))
        with closing(sqlite3.connect(path)) as db:
            assert [r[0] for r in db.execute("SELECT DISTINCT part FROM embedding_codes")] == [part_of("w", None)]
        assert (
            unwrap(await store.search(_vectors(1)[0].tolist(), limit=5, threshold=-1.0, filter={"user_id": "u"})) == []
        )


async def test_each_index_of_a_user_has_codes_of_its_own(tmp_path: Path) -> None:
    """The items' vectors of a user holding thousands of turns are searched among the items'
    codes only (a search of them reads no turn), and a search naming no index sees both."""
    path = tmp_path / "i.db"
    turns = _vectors(3000, seed=10)
    items = _vectors(3, seed=11)
    async with SQLiteEmbeddingAdapter(path=path) as store:
        unwrap(await store.add_embeddings(_docs(turns, index="messages")))
        unwrap(await store.add_embeddings(_docs(items, start=9000, index="items")))
        statements: list[str] = []
        store.connection.set_trace_callback(statements.append)
        try:
            got = await _ids(store, items[1], limit=10, metadata={"index": "items"})
        finally:
            store.connection.set_trace_callback(None)
        order = np.argsort(-(items @ items[1]), kind="stable")
        assert got == [f"emb_{9000 + i}" for i in order]
        reads = [sql for sql in statements if "FROM embeddings WHERE" in sql]
        assert reads and all("rowid IN" in sql for sql in reads), reads  # no scan of the user's rows
        assert (await _ids(store, items[1], limit=1))[0] == "emb_9001"
        assert (await _ids(store, turns[5], limit=1))[0] == "emb_5"
        with closing(sqlite3.connect(path)) as db:
            parts = dict(db.execute("SELECT part, count(*) FROM embedding_codes GROUP BY part").fetchall())
        assert parts == {part_of("u", "messages"): 3, part_of("u", "items"): 1}
