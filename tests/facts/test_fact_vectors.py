"""The vectors of facts (``remember``'s fact nodes) are kept packed in SQLite, never as JSON text,
and read back exactly as they were written, on every read path."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.embeddings import HashingEmbedder
from cogitator_memory.engines.sqlite.graph import pack_vector, unpack_vector
from cogitator_memory.engines.sqlite.schema import migrate
from cogitator_memory.runtime.memory import Memory

SINGLE = [0.5, -0.25, 0.125, 1.0]  # float32 values exactly
DOUBLE = [0.1, -0.2, 1 / 3, 0.7]  # not float32 values


def _row(path: Path, node_id: str) -> tuple[str, bytes | None]:
    db = sqlite3.connect(path)
    try:
        body, blob = db.execute("SELECT body, embedding FROM graph_nodes WHERE id = ?", (node_id,)).fetchone()
    finally:
        db.close()
    return body, blob


def test_a_vector_is_packed_as_float32_when_it_is_one_and_float64_otherwise() -> None:
    assert len(pack_vector(SINGLE)) == 1 + 4 * len(SINGLE)
    assert len(pack_vector(DOUBLE)) == 1 + 8 * len(DOUBLE)
    assert unpack_vector(pack_vector(SINGLE)) == SINGLE
    assert unpack_vector(pack_vector(DOUBLE)) == DOUBLE
    assert unpack_vector(pack_vector([])) == []
    huge = [1e300, -0.5]  # past float32's range: float64, not an OverflowError
    assert len(pack_vector(huge)) == 1 + 8 * len(huge) and unpack_vector(pack_vector(huge)) == huge


async def test_a_node_with_a_value_past_float32_is_stored_and_read_back(tmp_path: Path) -> None:
    async with SQLiteAdapter(path=str(tmp_path / "big.db")) as store:
        [node] = unwrap(
            await store.add_nodes([{"name": "Huge", "type": "concept", "agent_id": "a", "embedding": [1e300, 0.5]}])
        )
        got = unwrap(await store.get_node(node.id))
        assert got is not None and got.embedding == [1e300, 0.5]


async def test_remember_stores_the_fact_vector_packed(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    embedder = HashingEmbedder(64)
    config = {"adapter": "sqlite", "path": str(path), "embedding": {"provider": "none"}}
    async with Memory(config, embedding_service=embedder) as memory:
        answer = await memory.remember("Ana's dog is named Luna", user_id="ana")
        assert memory.graph is not None
        node = unwrap(await memory.graph.get_node(answer["id"]))
        assert node is not None and node.embedding == embedder.vector("Ana's dog is named Luna")
    body, blob = _row(path, answer["id"])
    assert "embedding" not in json.loads(body), "no vector in the JSON body"
    assert isinstance(blob, bytes) and len(blob) == 1 + 8 * 64  # the hashing vector's floats are float64


async def test_every_read_gives_the_vector_back(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    quote = [{"quote": "hi", "entry_id": "e1", "thread_id": "t"}]
    async with SQLiteAdapter(path=path) as store:
        unwrap(
            await store.add_nodes(
                [
                    {"id": "a", "name": "A", "type": "fact", "agent_id": "x", "embedding": SINGLE, "evidence": quote},
                    {"id": "b", "name": "B", "type": "fact", "agent_id": "x", "embedding": DOUBLE},
                    {"id": "c", "name": "C", "type": "fact", "agent_id": "x"},
                ]
            )
        )
        unwrap(await store.add_edge({"id": "e", "source_id": "a", "target_id": "b", "type": "knows", "agent_id": "x"}))
        vectors = {"a": SINGLE, "b": DOUBLE, "c": None}
        got = [unwrap(await store.get_node(node_id)) for node_id in vectors]
        assert {n.id: n.embedding for n in got if n is not None} == vectors
        queried = unwrap(await store.query_nodes({"agent_id": "x", "name": "B"}))
        assert [n.embedding for n in queried] == [DOUBLE]
        walked = unwrap(await store.traverse("a", max_depth=1))
        assert {n.id: n.embedding for n in walked.nodes} == {"a": SINGLE, "b": DOUBLE}
        quoted, _ = unwrap(await store.find_by_evidence("x", ["e1"]))
        assert [n.embedding for n in quoted] == [SINGLE]
        nearest = unwrap(await store.search_nodes_semantic("x", SINGLE, limit=1))
        assert [(n.id, round(score, 6)) for n, score in nearest] == [("a", 1.0)]
        updated = unwrap(await store.update_node("b", {"embedding": None}))
        assert updated.embedding is None
        assert unwrap(await store.get_node("b")).embedding is None  # type: ignore[union-attr]
    assert _row(path, "b")[1] is None and _row(path, "a")[1] == pack_vector(SINGLE)


async def test_the_migration_moves_json_vectors_out_of_the_body(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with SQLiteAdapter(path=path) as store:
        unwrap(await store.add_node({"id": "n", "name": "N", "type": "fact", "agent_id": "x", "embedding": DOUBLE}))
    db = sqlite3.connect(path, isolation_level=None)  # back to the schema before: the vector in the body
    body, _ = db.execute("SELECT body, embedding FROM graph_nodes").fetchone()
    db.execute("ALTER TABLE graph_nodes DROP COLUMN embedding")
    db.execute("UPDATE graph_nodes SET body = ?", (json.dumps({**json.loads(body), "embedding": DOUBLE}),))
    db.execute("DELETE FROM cogitator_migrations WHERE version >= 13")
    db.execute("PRAGMA user_version = 12")
    assert migrate(db) == 12
    db.close()
    body, blob = _row(path, "n")
    assert "embedding" not in json.loads(body) and blob == pack_vector(DOUBLE)
    async with SQLiteAdapter(path=path) as store:
        assert unwrap(await store.get_node("n")).embedding == DOUBLE  # type: ignore[union-attr]
