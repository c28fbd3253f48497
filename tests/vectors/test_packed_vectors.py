"""Embeddings whose vector is kept packed until first read (what the SQLite store hands out):
every reader sees exactly what it sees of the embedding made with its vector."""

from __future__ import annotations

import copy
import pickle
import struct
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cogitator_memory import SQLiteEmbeddingAdapter, unwrap
from cogitator_memory.threads.records import Record, built_record
from cogitator_memory.vectors.records import Embedding, ScoredEmbedding, packed_embedding

NOW = datetime(2026, 12, 2, 8, 30, tzinfo=UTC)
# float32 values (the packed form holds float32), one not exact in binary, a negative, a tiny one.
VECTORS = [[0.0, 1.0, -2.5, 3.0], [0.1, -0.2, 1e-30, 7.0], [1.0] * 384]
SHAPES: list[tuple[type[Embedding], dict[str, Any]]] = [
    (Embedding, {}),
    (Embedding, {"agent_id": "a1", "deep": {"x": [1, {"y": None}]}}),
    (ScoredEmbedding, {}),
    (ScoredEmbedding, {"thread_id": "t1", "n": 3}),
]


class _Hits(Record):
    hits: list[Embedding]


_READS: dict[str, Any] = {
    "attribute": lambda e: e.vector,
    "hasattr": lambda e: hasattr(e, "vector"),
    "model_dump": lambda e: e.model_dump(),
    "model_dump_json": lambda e: e.model_dump_json(),
    "dump": lambda e: e.dump(),
    "nested dump": lambda e: _Hits(hits=[e]).model_dump_json(),
    "equality": lambda e: e == e.model_copy(),
    "repr": repr,
    "str": str,
    "iteration": lambda e: dict(e),
    "model_copy": lambda e: e.model_copy(update={"content": "other"}).vector,
    "pickle": lambda e: pickle.loads(pickle.dumps(e)).vector,
    "deepcopy": lambda e: copy.deepcopy(e).vector,
    "copy": lambda e: copy.copy(e).vector,
}


def _pair(cls: type[Embedding], metadata: dict[str, Any], vector: list[float]) -> tuple[Embedding, Embedding]:
    """The embedding made with its vector (by validation), and the same one with it packed."""
    exact = np.asarray(vector, dtype="<f4")
    fields: dict[str, Any] = {
        "id": "emb_1",
        "source_id": "s1",
        "source_type": "message",
        "content": "text",
        "metadata": metadata,
        "created_at": NOW,
    }
    if cls is ScoredEmbedding:
        fields["score"] = 0.25
    made = cls.model_validate({**fields, "vector": exact.tolist()})
    packed = packed_embedding(cls, {**fields, "metadata": copy.deepcopy(metadata)}, exact.tobytes())
    return made, packed


@pytest.mark.parametrize("read", list(_READS))
@pytest.mark.parametrize("vector", VECTORS)
@pytest.mark.parametrize("shape", SHAPES)
def test_a_packed_vector_reads_as_the_list_to_every_reader(
    shape: tuple[type[Embedding], dict[str, Any]], vector: list[float], read: str
) -> None:
    cls, metadata = shape
    made, packed = _pair(cls, metadata, vector)
    assert type(packed) is cls
    assert "vector" not in packed.__dict__  # not made when the record is
    assert _READS[read](packed) == _READS[read](made)
    # After any read the record is the one made with its vector, down to the order of its fields
    # and without the packed bytes.
    assert packed.vector == made.vector
    assert packed.__dict__ == made.__dict__
    assert list(packed.__dict__) == list(made.__dict__)
    assert packed.model_fields_set == made.model_fields_set
    assert all(type(x) is float for x in packed.vector)


def test_a_packed_vector_is_made_once_and_what_is_set_first_is_kept() -> None:
    made, packed = _pair(ScoredEmbedding, {}, VECTORS[0])
    first = packed.vector
    assert packed.vector is first
    _, other = _pair(ScoredEmbedding, {}, VECTORS[0])
    other.vector = [9.0, 9.0]  # set before any read: kept
    assert other.vector == [9.0, 9.0]
    assert other.model_dump()["vector"] == [9.0, 9.0]
    assert other == made.model_copy(update={"vector": [9.0, 9.0]})
    assert "_vector_f32le" not in other.model_dump_json()
    with pytest.raises(AttributeError):
        _ = packed.no_such_field  # type: ignore[attr-defined]
    # Neither a vector nor packed bytes: the attribute is missing, as on any record.
    bare = built_record(Embedding, {k: v for k, v in made.__dict__.items() if k not in ("vector", "score")})
    with pytest.raises(AttributeError, match="vector"):
        _ = bare.vector
    # The serialization schema is the record's own.
    schema = ScoredEmbedding.model_json_schema(mode="serialization")
    assert schema["properties"]["vector"] == {"items": {"type": "number"}, "title": "Vector", "type": "array"}


def test_the_packed_form_is_little_endian_float32() -> None:
    values = [1.5, -0.25, 3.0]
    _, packed = _pair(Embedding, {}, values)
    assert packed.__dict__["_vector_f32le"] == struct.pack("<3f", *values)
    assert packed.vector == values


async def test_sqlite_hands_out_packed_vectors_that_read_as_stored(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((20, 8)).astype(np.float32)
    async with SQLiteEmbeddingAdapter(path=tmp_path / "v.db") as store:
        added = unwrap(
            await store.add_embeddings(
                [
                    {"source_id": f"s{i}", "source_type": "message", "content": f"c{i}", "vector": v}
                    for i, v in enumerate(vectors)
                ]
            )
        )
        hits = unwrap(await store.search(vectors[4], limit=5, threshold=-1.0))
        assert hits[0].id == added[4].id
        assert all("vector" not in h.__dict__ for h in hits)  # made only when read
        by_id = {e.id: e for e in added}
        for hit in hits:
            assert hit.vector == by_id[hit.id].vector == vectors[int(hit.source_id[1:])].tolist()
            expected = ScoredEmbedding.model_validate({**by_id[hit.id].model_dump(), "score": hit.score})
            assert hit == expected
            assert hit.model_dump_json() == expected.model_dump_json()
        got = unwrap(await store.get_embedding(added[0].id))
        assert got is not None and "vector" not in got.__dict__
        assert got == added[0]
        assert unwrap(await store.get_by_sources(["s1"])) == [added[1]]
        words = unwrap(await store.keyword_search("c7"))
        assert [h.vector for h in words] == [added[7].vector]
        bare = unwrap(await store.search(vectors[4], limit=5, threshold=-1.0, include_vectors=False))
        assert [h.vector for h in bare] == [[]] * 5
