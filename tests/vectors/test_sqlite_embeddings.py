"""The embedding conformance suite on SQLiteEmbeddingAdapter, plus what is particular to SQLite."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path

import pytest

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.engines.sqlite.schema import applied_migrations
from cogitator_memory.testing.embedding import axis_vector, embedding_adapter_conformance_cases, seeded_vector
from cogitator_memory.vectors import SQLiteEmbeddingAdapter

CASES = embedding_adapter_conformance_cases()


@pytest.fixture(params=["file", "memory-file", "shared"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SQLiteEmbeddingAdapter]:
    if request.param == "file":
        async with SQLiteEmbeddingAdapter(path=tmp_path / "vec.db", dimensions=8) as adapter:
            yield adapter
    elif request.param == "memory-file":
        async with SQLiteEmbeddingAdapter(path=":memory:") as adapter:
            yield adapter
    else:
        threads = SQLiteAdapter(path=tmp_path / "shared.db")
        async with threads, SQLiteEmbeddingAdapter(store=threads) as adapter:
            yield adapter


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_conformance(case, store):
    await case.run(store)


def _doc(content: str, vector: list[float], **metadata: str) -> dict[str, object]:
    return {"source_id": "s", "source_type": "document", "content": content, "vector": vector, "metadata": metadata}


async def test_threads_and_vectors_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "one.db"
    async with SQLiteAdapter(path=path) as threads, SQLiteEmbeddingAdapter(store=threads) as vectors:
        thread = unwrap(await threads.create_thread("agent-1"))
        entry = unwrap(await threads.add_entry({"thread_id": thread.id, "message": {"role": "user", "content": "hi"}}))
        unwrap(await vectors.add_embedding({**_doc("hi there", axis_vector(0)), "source_id": entry.id}))
        assert vectors.connection is threads.connection
    db = sqlite3.connect(path)
    assert [name for _, name in applied_migrations(db)][:3] == ["m001_initial", "m002_embeddings", "m003_keyword_index"]
    assert db.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == 1
    db.close()
    async with SQLiteEmbeddingAdapter(path=path) as again:
        assert again.dimensions == 8
        found = unwrap(await again.get_by_sources([entry.id]))
        assert [e.content for e in found] == ["hi there"]


async def test_shared_store_must_be_connected(tmp_path: Path) -> None:
    vectors = SQLiteEmbeddingAdapter(store=SQLiteAdapter(path=tmp_path / "x.db"))
    result = await vectors.connect()
    assert not result.success and "connect()" in (result.error or "")


async def test_cache_sees_writes_of_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "two.db"
    async with SQLiteEmbeddingAdapter(path=path) as one, SQLiteEmbeddingAdapter(path=path) as two:
        first = unwrap(await one.add_embedding(_doc("first", seeded_vector(1), agent_id="a")))
        assert [h.id for h in unwrap(await two.search(seeded_vector(1), filter={"agent_id": "a"}))] == [first.id]
        second = unwrap(await one.add_embedding(_doc("second", seeded_vector(2), agent_id="a")))
        hits = unwrap(await two.search(seeded_vector(2), filter={"agent_id": "a"}, threshold=-1))
        assert hits[0].id == second.id, "the other connection's cached matrix was reloaded"
        unwrap(await one.delete_embedding(second.id))
        hits = unwrap(await two.search(seeded_vector(2), filter={"agent_id": "a"}, threshold=-1))
        assert [h.id for h in hits] == [first.id]


async def test_a_row_reused_by_another_connection_is_not_read_as_the_old_hit(tmp_path: Path) -> None:
    """A warm search reads its hits by rowid, the rowids of a matrix built earlier; another
    connection deleting the last row and adding one (which takes the same rowid) must not make
    the old hit come back under the new row, nor lose the search."""
    path = tmp_path / "reuse.db"
    async with SQLiteEmbeddingAdapter(path=path) as one, SQLiteEmbeddingAdapter(path=path) as two:
        kept = unwrap(await one.add_embedding(_doc("kept", axis_vector(0))))
        gone = unwrap(await one.add_embedding(_doc("gone", axis_vector(1))))
        assert [h.id for h in unwrap(await two.search(axis_vector(1), limit=1))] == [gone.id]
        with closing(sqlite3.connect(path)) as db:
            rowid = db.execute("SELECT rowid FROM embeddings WHERE id = ?", (gone.id,)).fetchone()[0]
        unwrap(await one.delete_embedding(gone.id))
        new = unwrap(await one.add_embedding(_doc("new", axis_vector(2))))
        with closing(sqlite3.connect(path)) as db:
            assert db.execute("SELECT rowid FROM embeddings WHERE id = ?", (new.id,)).fetchone()[0] == rowid
        hits = unwrap(await two.search(axis_vector(1), limit=2, threshold=-1))
        assert sorted(h.id for h in hits) == sorted([kept.id, new.id])
        assert all(h.score == 0.0 for h in hits)
        assert {h.id: h.content for h in hits} == {kept.id: "kept", new.id: "new"}


async def test_a_search_finding_nothing_on_a_stale_matrix_looks_again(tmp_path: Path) -> None:
    """No hit above the threshold in the matrix of an older generation is no answer until the
    file is known unchanged: another connection's new embedding is found."""
    path = tmp_path / "empty.db"
    async with SQLiteEmbeddingAdapter(path=path) as one, SQLiteEmbeddingAdapter(path=path) as two:
        unwrap(await one.add_embedding(_doc("x", axis_vector(0))))
        assert unwrap(await two.search(axis_vector(1), threshold=0.5)) == []
        added = unwrap(await one.add_embedding(_doc("y", axis_vector(1))))
        assert [h.id for h in unwrap(await two.search(axis_vector(1), threshold=0.5))] == [added.id]
        assert unwrap(await two.search(axis_vector(2), threshold=0.5)) == []


async def test_a_warm_search_is_three_statements(tmp_path: Path) -> None:
    """Once a scope's codes are held, a search reads the file's generation, the shortlist's
    vectors and its hits' rows: three statements (each starts a read of the file), none of them
    a read of the codes again."""
    async with SQLiteEmbeddingAdapter(path=tmp_path / "one.db") as store:
        unwrap(await store.add_embeddings([_doc(f"d{i}", seeded_vector(i), agent_id="a") for i in range(20)]))
        cold = unwrap(await store.search(seeded_vector(3), limit=5, filter={"agent_id": "a"}))
        statements: list[str] = []
        store.connection.set_trace_callback(statements.append)
        try:
            warm = unwrap(await store.search(seeded_vector(3), limit=5, filter={"agent_id": "a"}))
            bare = unwrap(
                await store.search(seeded_vector(3), limit=5, filter={"agent_id": "a"}, include_vectors=False)
            )
        finally:
            store.connection.set_trace_callback(None)
        assert len(statements) == 6, statements
        assert not [sql for sql in statements if "embedding_codes" in sql], statements
        assert warm == cold
        assert [h.model_copy(update={"vector": []}) for h in warm] == bare


async def test_configured_size_must_match_the_file(tmp_path: Path) -> None:
    path = tmp_path / "dims.db"
    async with SQLiteEmbeddingAdapter(path=path) as first:
        unwrap(await first.add_embedding(_doc("x", axis_vector(0))))
    wrong = SQLiteEmbeddingAdapter(path=path, dimensions=16)
    result = await wrong.connect()
    assert not result.success and "8" in (result.error or "") and "16" in (result.error or "")
    assert not wrong.connected


async def test_vectors_are_float32_blobs(tmp_path: Path) -> None:
    async with SQLiteEmbeddingAdapter(path=tmp_path / "f.db") as store:
        added = unwrap(await store.add_embedding(_doc("x", [0.1, 0.2, 0.3, 0.4])))
        got = unwrap(await store.get_embedding(added.id))
        assert got is not None
        assert got.vector != [0.1, 0.2, 0.3, 0.4]  # rounded to float32
        assert got.vector == pytest.approx([0.1, 0.2, 0.3, 0.4], rel=1e-6)
        blob = store.connection.execute("SELECT vector FROM embeddings").fetchone()[0]
        assert len(blob) == 16


async def test_sqlite_vec_refused_when_it_cannot_load(tmp_path: Path) -> None:
    store = SQLiteEmbeddingAdapter(path=tmp_path / "v.db", vector_backend="sqlite-vec")
    result = await store.connect()
    if result.success:  # a Python that can load sqlite-vec, with it installed
        assert store.vector_backend == "sqlite-vec"
        unwrap(await store.add_embedding(_doc("x", axis_vector(0))))
        assert [h.content for h in unwrap(await store.search(axis_vector(0)))] == ["x"]
        await store.disconnect()
    else:
        assert "sqlite-vec" in (result.error or "")
    async with SQLiteEmbeddingAdapter(path=tmp_path / "a.db") as auto:
        assert auto.vector_backend == "numpy"


async def test_closed_connection_gives_failed_results(tmp_path: Path) -> None:
    threads = SQLiteAdapter(path=tmp_path / "c.db")
    unwrap(await threads.connect())
    vectors = SQLiteEmbeddingAdapter(store=threads)
    unwrap(await vectors.connect())
    unwrap(await vectors.add_embedding(_doc("x", axis_vector(0))))
    await threads.disconnect()
    result = await vectors.search(axis_vector(0))
    assert not result.success and "sqlite" in (result.error or "")
    assert not (await vectors.health_check()).success


def test_constructor_checks() -> None:
    with pytest.raises(ValueError, match="path"):
        SQLiteEmbeddingAdapter()
    with pytest.raises(ValueError, match="vector_backend"):
        SQLiteEmbeddingAdapter(path=":memory:", vector_backend="faiss")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dimensions"):
        SQLiteEmbeddingAdapter(path=":memory:", dimensions=0)
