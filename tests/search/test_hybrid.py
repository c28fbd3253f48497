"""HybridSearch over a real store: BM25 and vector rankings fused by RRF."""

from __future__ import annotations

import pytest

from cogitator_memory import unwrap
from cogitator_memory.search import HybridSearch
from cogitator_memory.testing.embedding import axis_vector, blend
from cogitator_memory.vectors import InMemoryEmbeddingAdapter, SQLiteEmbeddingAdapter


def _doc(content: str, vector: list[float], **metadata: str) -> dict[str, object]:
    return {"source_id": content, "source_type": "document", "content": content, "vector": vector, "metadata": metadata}


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest):
    adapter = InMemoryEmbeddingAdapter() if request.param == "memory" else SQLiteEmbeddingAdapter(path=":memory:")
    async with adapter:
        unwrap(
            await adapter.add_embeddings(
                [
                    _doc("apple apple pie", blend({0: 0.2, 1: 1})),  # keyword 1st, vector 3rd
                    _doc("banana bread", axis_vector(0)),  # vector 1st only
                    _doc("apple banana", blend({0: 1, 1: 1})),  # keyword 2nd, vector 2nd
                    _doc("apple of agent b", axis_vector(1, scale=-1.0), agent_id="b"),
                ]
            )
        )
        yield adapter


async def test_fused_order_and_ranks(store) -> None:
    hits = unwrap(await HybridSearch(store).search("apple", axis_vector(0), filter={"agent_id": "a"}))
    assert [h.content for h in hits] == ["apple apple pie", "apple banana", "banana bread"]
    assert hits[0].score == pytest.approx(1 / 61 + 1 / 63)
    assert hits[1].score == pytest.approx(1 / 62 + 1 / 62)
    assert (hits[0].keyword_rank, hits[0].vector_rank) == (1, 3)
    assert (hits[2].keyword_rank, hits[2].vector_rank, hits[2].keyword_score) == (None, 1, None)
    assert hits[2].vector_score == pytest.approx(1.0)


async def test_weights_change_the_order(store) -> None:
    hybrid = HybridSearch(store, vector_weight=2.0)
    hits = unwrap(await hybrid.search("apple", axis_vector(0), filter={"agent_id": "a"}))
    assert [h.content for h in hits] == ["apple banana", "apple apple pie", "banana bread"]
    keyword_only = unwrap(await HybridSearch(store, vector_weight=0).search("apple", axis_vector(0), limit=2))
    assert [h.vector_rank for h in keyword_only] == [None, None]
    no_vector = unwrap(await HybridSearch(store).search("banana", None))
    assert {h.content for h in no_vector} == {"banana bread", "apple banana"}


async def test_failures_are_results(store) -> None:
    result = await HybridSearch(store).search("apple", [1.0, 2.0])
    assert not result.success and "vector" in (result.error or "")
    assert not (await HybridSearch(store).search("apple", limit=0)).success
    with pytest.raises(ValueError, match="candidates"):
        HybridSearch(store, candidates=0)
