"""The forgetting cases on MongoDB (``COGMEM_TEST_MONGODB_URL``): threads, items and files in a
MongoDBAdapter with a database of the test's own; of the other cases (run on faster stores), the
erasure past someone else's bad data, which every store must pass.

The raw data is every document of every collection of the database, as extended JSON."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from cascade_raw import mongo_documents

from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter
from cogitator_memory.testing import service_url
from cogitator_memory.testing.cascade import CascadeCase, CascadeStores, cascade_cases

#: The cases beyond the forgetting ones that run here too.
ERASURE_CASES = {"bad_ids_of_others_do_not_stop_erasure"}


@pytest.fixture
async def stores() -> AsyncIterator[CascadeStores]:
    memory = MongoDBAdapter(
        uri=service_url("COGMEM_TEST_MONGODB_URL"),
        database=f"cogmem_cascade_{uuid.uuid4().hex[:12]}",
        connect_timeout=20.0,
    )
    async with memory:
        db = memory.client[memory.database]

        async def raw() -> bytes:
            return await mongo_documents(db)

        try:
            yield CascadeStores(memory=memory, raw=raw)
        finally:
            await memory.client.drop_database(memory.database)


@pytest.mark.parametrize("case", cascade_cases(forgetting=True), ids=str)
async def test_forgetting(case: CascadeCase, stores: CascadeStores) -> None:
    await case.run(stores)


@pytest.mark.parametrize("case", [c for c in cascade_cases() if c.name in ERASURE_CASES], ids=str)
async def test_erasure(case: CascadeCase, stores: CascadeStores) -> None:
    await case.run(stores)
