"""The fact conformance suite on MongoDBAdapter (``COGMEM_TEST_MONGODB_URL``), a database of its
own per test, dropped after."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter
from cogitator_memory.testing import service_url
from cogitator_memory.testing.facts import FactConformanceCase, fact_adapter_conformance_cases


@pytest.fixture
async def store() -> AsyncIterator[MongoDBAdapter]:
    memory = MongoDBAdapter(
        uri=service_url("COGMEM_TEST_MONGODB_URL"),
        database=f"cogmem_facts_{uuid.uuid4().hex[:12]}",
        connect_timeout=5.0,
    )
    async with memory:
        try:
            yield memory
        finally:
            await memory.client.drop_database(memory.database)


@pytest.mark.parametrize("case", fact_adapter_conformance_cases(), ids=str)
async def test_fact_conformance(case: FactConformanceCase, store: MongoDBAdapter) -> None:
    await case.run(store)
