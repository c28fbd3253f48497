"""The cascade cases with vectors in Qdrant's local mode (on disk) and threads, items, files and
graph in process memory. The raw data of Qdrant is the payload of every point, scrolled
through the client; the rest is every string the in-process stores keep."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from cascade_raw import process_bytes

from cogitator_memory import InMemoryAdapter, QdrantAdapter
from cogitator_memory.testing.cascade import DIMENSIONS, CascadeCase, CascadeStores, cascade_cases


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[CascadeStores]:
    from qdrant_client import AsyncQdrantClient

    client = AsyncQdrantClient(path=str(tmp_path / "qdrant"))
    try:
        async with (
            InMemoryAdapter() as memory,
            QdrantAdapter(client=client, collection="cascade", dimensions=DIMENSIONS) as vectors,
        ):

            async def raw() -> bytes:
                payloads: list[str] = []
                offset = None
                while True:
                    points, offset = await client.scroll(
                        "cascade", limit=256, offset=offset, with_payload=True, with_vectors=False
                    )
                    payloads.extend(str(p.payload) for p in points)
                    if offset is None:
                        break
                return process_bytes(memory) + b"\n" + "\n".join(payloads).encode()

            yield CascadeStores(memory=memory, embeddings=vectors, graph=memory, raw=raw)
    finally:
        await client.close()


@pytest.mark.parametrize("case", cascade_cases(), ids=str)
async def test_cascade(case: CascadeCase, stores: CascadeStores) -> None:
    await case.run(stores)


async def test_the_scan_reads_the_payloads(stores: CascadeStores) -> None:
    """The qdrant part of the scan sees what the points carry."""
    from cogitator_memory import unwrap

    assert stores.embeddings is not None and stores.raw is not None
    unwrap(
        await stores.embeddings.add_embedding(
            {"source_id": "entry_x", "source_type": "message", "content": "QDRANTONLY77", "vector": [1.0] * DIMENSIONS}
        )
    )
    assert b"QDRANTONLY77" in await stores.raw()
