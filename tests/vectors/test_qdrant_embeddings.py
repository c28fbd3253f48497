"""The embedding conformance suite on QdrantAdapter: qdrant-client's local mode, and a real server
when ``COGMEM_TEST_QDRANT_URL`` is set."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cogitator_memory import unwrap
from cogitator_memory.engines.qdrant.vectors import (
    POINT_NAMESPACE,
    metadata_term,
    metadata_terms,
    point_id,
    qdrant_filter,
)
from cogitator_memory.testing.embedding import axis_vector, embedding_adapter_conformance_cases
from cogitator_memory.testing.services import service_url
from cogitator_memory.vectors import QdrantAdapter, create_embedding_adapter

CASES = embedding_adapter_conformance_cases()


# A Qdrant server is tested only where one is given: none can be had on the CI machines.
KINDS = ["local-memory", "local-path"] + (["server"] if os.environ.get("COGMEM_TEST_QDRANT_URL") else [])


@pytest.fixture(params=KINDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[QdrantAdapter]:
    if request.param == "local-memory":
        adapter = QdrantAdapter(url=":memory:", collection="t", dimensions=8)
    elif request.param == "local-path":
        adapter = QdrantAdapter(path=str(tmp_path / "qdrant"), collection="t")
    else:
        url = service_url("COGMEM_TEST_QDRANT_URL")
        adapter = QdrantAdapter(url=url, collection=f"cogmem_test_{uuid.uuid4().hex[:12]}", dimensions=8)
    unwrap(await adapter.connect())
    try:
        yield adapter
    finally:
        if request.param == "server" and adapter._client is not None:
            await adapter._client.delete_collection(adapter.collection)
        await adapter.disconnect()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_conformance(case, store):
    await case.run(store)


def _doc(content: str, **metadata: str) -> dict[str, object]:
    return {
        "source_id": "s",
        "source_type": "document",
        "content": content,
        "vector": axis_vector(0),
        "metadata": metadata,
    }


def test_point_ids_are_deterministic_uuids() -> None:
    assert point_id("emb_abc") == str(uuid.uuid5(POINT_NAMESPACE, "emb_abc"))
    assert point_id("emb_abc") == point_id("emb_abc") != point_id("emb_abd")
    assert uuid.UUID(point_id("emb_abc")).version == 5


async def test_points_carry_the_embedding_id_in_their_payload(tmp_path: Path) -> None:
    async with QdrantAdapter(url=":memory:", collection="p") as store:
        added = unwrap(await store.add_embedding({**_doc("hello world", agent_id="a"), "id": "emb_fixed"}))
        client = store._client
        points, _ = await client.scroll("p", with_payload=True, limit=10)
        assert [str(p.id) for p in points] == [point_id("emb_fixed")]
        payload = points[0].payload
        assert payload["embedding_id"] == added.id == "emb_fixed"
        assert payload["agent_id"] == "a" and "user_id" not in payload
        assert payload["terms"] == ["hello", "world"]
        hits = unwrap(await store.search(axis_vector(0)))
        assert [h.id for h in hits] == ["emb_fixed"]


async def test_collection_size_is_adopted_and_checked(tmp_path: Path) -> None:
    path = str(tmp_path / "q")
    async with QdrantAdapter(path=path, collection="c") as first:
        assert first.dimensions is None
        unwrap(await first.add_embedding(_doc("x")))
    async with QdrantAdapter(path=path, collection="c") as again:
        assert again.dimensions == 8
        assert [e.content for e in unwrap(await again.get_by_sources(["s"]))] == ["x"]
    wrong = QdrantAdapter(path=path, collection="c", dimensions=4)
    result = await wrong.connect()
    assert not result.success and "8" in (result.error or "") and "4" in (result.error or "")


async def test_unreachable_server_gives_a_failed_connect() -> None:
    store = QdrantAdapter(url="http://127.0.0.1:9", collection="c", timeout=2)
    result = await store.connect()
    assert not result.success and "qdrant" in (result.error or "")
    assert not store.connected
    assert not (await store.search(axis_vector(0))).success


def test_filter_translation() -> None:
    from qdrant_client import models

    assert qdrant_filter(models) is None
    flt = qdrant_filter(models, source_type="fact", scope={"agent_id": "a"}, exact={"page": 3, "odd key.x": "x"})
    assert flt is not None and len(flt.must) == 4  # every condition goes to the server
    scope = flt.must[1]
    assert isinstance(scope, models.Filter) and len(scope.should) == 2
    assert [(c.key, c.match.value) for c in flt.must[2:]] == [
        ("metadata_terms", '["page",3]'),
        ("metadata_terms", '["odd key.x","x"]'),
    ]


def test_metadata_terms_hold_the_values_a_filter_can_ask_for() -> None:
    meta = {"b": True, "a": 1, "s": "x", "f": 1.5, "l": ["x"], "o": {"k": "x"}, "n": None, "ключ": "значение"}
    assert metadata_terms(meta) == ['["a",1]', '["b",true]', '["s","x"]', '["ключ","значение"]']
    assert metadata_term("a", True) != metadata_term("a", 1)


async def test_a_collection_written_before_metadata_terms_gets_them_at_connect(tmp_path: Path) -> None:
    path = str(tmp_path / "old")
    async with QdrantAdapter(path=path, collection="c") as store:
        kept = unwrap(await store.add_embedding({**_doc("tagged"), "metadata": {"odd key": "x", "n": 2}}))
        unwrap(await store.add_embedding({**_doc("plain"), "metadata": {"tags": ["x"]}}))
        client = store._client
        points, _ = await client.scroll("c", limit=10)
        await client.delete_payload("c", keys=["metadata_terms"], points=[p.id for p in points])  # as written before
        assert unwrap(await store.search(axis_vector(0), filter={"metadata": {"odd key": "x"}})) == []
    async with QdrantAdapter(path=path, collection="c") as again:
        hits = unwrap(await again.search(axis_vector(0), filter={"metadata": {"odd key": "x", "n": 2}}))
        assert [h.id for h in hits] == [kept.id]
        assert unwrap(await again.search(axis_vector(0), filter={"metadata": {"tags": "x"}})) == []


async def test_factory_makes_a_qdrant_store() -> None:
    store = create_embedding_adapter({"provider": "qdrant", "url": ":memory:", "dimensions": 8})
    assert isinstance(store, QdrantAdapter)
    unwrap(await store.connect())
    assert store.dimensions == 8
    unwrap(await store.disconnect())
