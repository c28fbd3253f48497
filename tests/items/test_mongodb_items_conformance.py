"""The memory item conformance suite on MongoDBAdapter (``COGMEM_TEST_MONGODB_URL``), in the
adapter's default mode and again with transactions forced on, plus what is MongoDB's own: the
collection and its indexes, the documents' fields, exact times, and batches that fail part way
without transactions.

Every test gets a database of its own, dropped after.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from cogitator_memory.engines.mongodb.threads import MongoDBAdapter, server_has_transactions
from cogitator_memory.testing import service_url
from cogitator_memory.testing.items import ItemConformanceCase, memory_item_adapter_conformance_cases


def make_adapter(**options: Any) -> MongoDBAdapter:
    """An adapter on the test server with a database of its own."""
    options.setdefault("database", f"cogmem_items_{uuid.uuid4().hex[:12]}")
    # mongoeco answers nothing, heartbeats included, while it stores a batch (it scans the
    # collection for each document), and pymongo drops a server whose heartbeat goes unanswered
    # for connect_timeout: the 1,200-item case needs more than the 5 s of the thread tests.
    options.setdefault("connect_timeout", 60.0)
    options.setdefault("socket_timeout", 300.0)
    return MongoDBAdapter(uri=service_url("COGMEM_TEST_MONGODB_URL"), **options)


async def is_emulator(store: MongoDBAdapter) -> bool:
    """Whether the test server is the mongoeco emulator rather than a real MongoDB."""
    hello = await store.client.admin.command("hello")
    return hello.get("gitVersion") == "mongoeco"


@pytest.fixture(params=["default", "transactions"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[MongoDBAdapter]:
    """A store in its default mode (transactions when the server runs them), or with transactions
    forced on (not on a real standalone mongod, which refuses them)."""
    memory = make_adapter(transactions=True) if request.param == "transactions" else make_adapter()
    async with memory:
        try:
            if request.param == "transactions":
                hello = await memory.client.admin.command("hello")
                if not server_has_transactions(hello) and hello.get("gitVersion") != "mongoeco":
                    pytest.skip("a standalone mongod runs no multi-document transactions")
            yield memory
        finally:
            await memory.client.drop_database(memory.database)


@pytest.mark.parametrize("case", memory_item_adapter_conformance_cases(), ids=str)
async def test_item_conformance(case: ItemConformanceCase, store: MongoDBAdapter) -> None:
    await case.run(store)
