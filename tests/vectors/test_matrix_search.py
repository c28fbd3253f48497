"""Brute-force search: the matrix kept by columns finds what a plain float64 search finds, and the
stores' hits carry exactly the stored embeddings, with or without their vectors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cogitator_memory import unwrap
from cogitator_memory.vectors import InMemoryEmbeddingAdapter, SQLiteEmbeddingAdapter
from cogitator_memory.vectors.base import BaseEmbeddingAdapter
from cogitator_memory.vectors.matrix import SAMPLED_MIN_ROWS, VectorMatrix, top_rows, unit_rows
from cogitator_memory.vectors.records import ScoredEmbedding

DIMS = 24


def _reference(vectors: Any, query: Any, limit: int, threshold: float) -> list[tuple[int, float]]:
    """The top ``limit`` (row, cosine) in float64, best first."""
    rows = np.asarray(vectors, dtype=np.float64)
    rows = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    q = np.asarray(query, dtype=np.float64)
    scores = rows @ (q / np.linalg.norm(q))
    order = sorted(range(len(scores)), key=lambda i: -scores[i])[:limit]
    return [(i, float(scores[i])) for i in order if scores[i] >= threshold]


@pytest.mark.parametrize("count", [1, 7, 500])
@pytest.mark.parametrize("limit", [1, 5, 600])
def test_top_is_the_float64_brute_force_top(count: int, limit: int) -> None:
    rng = np.random.default_rng(count * 1000 + limit)
    vectors = rng.standard_normal((count, DIMS)).astype(np.float32)
    ids = [f"e{i}" for i in range(count)]
    matrix = VectorMatrix(ids, unit_rows(vectors))
    assert matrix.columns is not None and matrix.columns.flags.c_contiguous
    assert matrix.columns.shape == (DIMS, count)
    assert np.array_equal(matrix.matrix, unit_rows(vectors))  # rows as given
    for query in rng.standard_normal((5, DIMS)):
        for threshold in (-1.0, 0.1):
            found = matrix.top(query.tolist(), limit, threshold)
            expected = _reference(vectors, query, limit, threshold)
            assert [i for i, _ in found] == [ids[i] for i, _ in expected]
            assert [s for _, s in found] == pytest.approx([s for _, s in expected], abs=1e-5)
            assert all(-1.0 <= s <= 1.0 for _, s in found)
            # A numpy query gives the same.
            assert matrix.top(query.astype(np.float32), limit, threshold) == found


def test_ties_keep_the_order_of_the_rows() -> None:
    vectors = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [2.0, 0.0]]
    matrix = VectorMatrix(["a", "b", "c", "d"], unit_rows(vectors))
    assert [i for i, _ in matrix.top([1.0, 0.0], 3, -1.0)] == ["a", "c", "d"]
    assert VectorMatrix([], None).top([1.0, 0.0], 3, -1.0) == []


def _sorted_top(scores: Any, limit: int) -> list[tuple[int, float]]:
    """The ``limit`` best (row, score) by a full sort, equal scores in row order."""
    order = sorted(range(len(scores)), key=lambda i: (-float(scores[i]), i))[:limit]
    return [(i, float(scores[i])) for i in order]


@pytest.mark.parametrize("count", [3, 100, SAMPLED_MIN_ROWS - 1, SAMPLED_MIN_ROWS, 20_000])
@pytest.mark.parametrize("limit", [1, 10, 37, 300])
def test_top_rows_is_a_full_sort_ties_included(count: int, limit: int) -> None:
    rng = np.random.default_rng(count + limit)
    shapes = [
        rng.standard_normal(count).astype(np.float32),  # all apart
        rng.integers(0, 20, count).astype(np.float32),  # many equal, at the cut too
        np.full(count, 0.5, dtype=np.float32),  # all equal: the first rows
        np.sort(rng.standard_normal(count)).astype(np.float32),  # best last (the sample's worst case)
        np.where(np.arange(count) % 997 == 0, 1.0, 0.0).astype(np.float32),  # few over a sea of equals
    ]
    for scores in shapes:
        assert top_rows(scores, limit) == _sorted_top(scores, limit)


def test_top_rows_when_the_sample_misses_the_best() -> None:
    # The best rows are the sampled ones: fewer than the limit pass the bound the sample gives.
    scores = np.zeros(SAMPLED_MIN_ROWS * 2, dtype=np.float32)
    scores[::16] = np.linspace(1.0, 0.9, len(scores[::16]), dtype=np.float32)
    assert np.count_nonzero(scores >= np.sort(scores[::16])[-(50 // 16 + 4)]) < 50
    assert top_rows(scores, 50) == _sorted_top(scores, 50)


def test_equal_scores_at_the_cut_keep_the_first_ids() -> None:
    count = SAMPLED_MIN_ROWS + 5
    ids = [f"e{(count - i):06d}" for i in range(count)]  # ids in reverse row order
    scores = np.zeros(count, dtype=np.float32)
    scores[:3] = 0.9
    found = top_rows(scores, 10, ids)
    assert [r for r, _ in found[:3]] == [0, 1, 2]
    kept = sorted(r for r, _ in found[3:])
    assert kept == list(range(count - 7, count))  # the seven rows of the first ids
    assert [r for r, _ in found[3:]] == kept  # in row order


def _sorted_top_by_ids(scores: Any, limit: int, ids: list[str]) -> list[tuple[int, float]]:
    """The reference with ids: every row over the ``limit``-th best score, of those equal to it
    the rows of the first ids, all best first and equal scores in row order."""
    values = [float(x) for x in scores]
    if limit >= len(values):
        kept = list(range(len(values)))
    else:
        cut = sorted(values, reverse=True)[limit - 1]
        over = [i for i, v in enumerate(values) if v > cut]
        at = sorted((i for i, v in enumerate(values) if v == cut), key=ids.__getitem__)[: limit - len(over)]
        kept = over + at
    return [(i, values[i]) for i in sorted(kept, key=lambda i: (-values[i], i))]


@pytest.mark.parametrize("limit", [1, 10, 37])
def test_top_rows_with_ids_is_the_reference_ties_included(limit: int) -> None:
    count = SAMPLED_MIN_ROWS * 2 + 3
    rng = np.random.default_rng(limit)
    ids = [f"e{(count - i):06d}" for i in range(count)]  # ids in reverse row order
    apart = rng.standard_normal(count).astype(np.float32)
    tied_inside = apart.copy()
    tied_inside[np.argsort(-apart)[: max(1, limit // 2)]] = 5.0  # equal scores, all kept
    shapes = [
        apart,
        tied_inside,
        rng.integers(0, 20, count).astype(np.float32),  # equal scores at the cut
        np.full(count, 0.5, dtype=np.float32),
    ]
    for scores in shapes:
        assert top_rows(scores, limit, ids) == _sorted_top_by_ids(scores, limit, ids)


async def _filled(store: BaseEmbeddingAdapter, vectors: Any) -> None:
    unwrap(
        await store.add_embeddings(
            [
                {
                    "source_id": f"s{i}",
                    "source_type": "message",
                    "content": f"text {i}",
                    "vector": vectors[i].tolist(),
                    "metadata": {"agent_id": f"a{i % 3}", "n": i},
                }
                for i in range(len(vectors))
            ]
        )
    )


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_hits_are_the_stored_embeddings_with_their_scores(kind: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((200, DIMS)).astype(np.float32)
    store: BaseEmbeddingAdapter = (
        InMemoryEmbeddingAdapter() if kind == "memory" else SQLiteEmbeddingAdapter(path=tmp_path / "v.db")
    )
    async with store:
        await _filled(store, vectors)
        for query in rng.standard_normal((4, DIMS)):
            for flt in (None, {"agent_id": "a1"}):
                hits = unwrap(await store.search(query.tolist(), limit=8, threshold=-1.0, filter=flt))
                rows = range(len(vectors)) if flt is None else range(1, len(vectors), 3)
                expected = _reference(vectors[list(rows)], query, 8, -1.0)
                assert [h.source_id for h in hits] == [f"s{list(rows)[i]}" for i, _ in expected]
                for hit in hits:
                    stored = unwrap(await store.get_embedding(hit.id))
                    assert stored is not None
                    assert type(hit) is ScoredEmbedding
                    assert hit.model_dump(exclude={"score"}) == stored.model_dump()
                    assert hit.model_fields_set == set(ScoredEmbedding.model_fields)
                    hit.vector.append(1.0)  # a hit shares nothing with the store
                    hit.metadata["n"] = -1
                    assert unwrap(await store.get_embedding(hit.id)) == stored
                bare = unwrap(
                    await store.search(query.tolist(), limit=8, threshold=-1.0, filter=flt, include_vectors=False)
                )
                assert [(h.id, h.score) for h in bare] == [(h.id, h.score) for h in hits]
                assert all(h.vector == [] for h in bare)
                assert [h.model_dump(exclude={"vector", "metadata"}) for h in bare] == [
                    h.model_dump(exclude={"vector", "metadata"}) for h in hits
                ]


async def test_memory_hits_build_what_model_construct_builds() -> None:
    store = InMemoryEmbeddingAdapter()
    await store.connect()
    stored = unwrap(
        await store.add_embedding(
            {
                "source_id": "s1",
                "source_type": "message",
                "content": "text",
                "vector": [1.0, 2.0],
                "metadata": {"a": [1]},
            }
        )
    )
    (hit,) = unwrap(await store.search([1.0, 2.0], limit=1, threshold=-1.0))
    expected = ScoredEmbedding.model_construct(**stored.model_dump(), score=hit.score)
    assert hit == expected
    assert list(hit.__dict__) == list(expected.__dict__)
    assert hit.model_fields_set == expected.model_fields_set
    assert hit.model_dump_json() == expected.model_dump_json()
    # The hit shares nothing mutable with the store.
    hit.metadata["a"].append(2)
    hit.vector.append(3.0)
    (again,) = unwrap(await store.search([1.0, 2.0], limit=1, threshold=-1.0))
    assert again.metadata == {"a": [1]} and len(again.vector) == 2


async def test_memory_copies_of_flat_metadata_share_nothing_with_the_store() -> None:
    store = InMemoryEmbeddingAdapter()
    unwrap(await store.connect())
    stored = unwrap(
        await store.add_embedding(
            {"source_id": "s1", "source_type": "message", "content": "t", "vector": [1.0, 0.0], "metadata": {"k": "v"}}
        )
    )
    (hit,) = unwrap(await store.search([1.0, 0.0], limit=1, threshold=-1.0))
    hit.metadata["k"] = "changed"
    hit.metadata["new"] = 1
    got = unwrap(await store.get_embedding(stored.id))
    assert got is not None and got.metadata == {"k": "v"}
    got.metadata.clear()
    (again,) = unwrap(await store.search([1.0, 0.0], limit=1, threshold=-1.0))
    assert again.metadata == {"k": "v"}
