"""The memory file conformance suite on MongoDBAdapter (``COGMEM_TEST_MONGODB_URL``), in the
adapter's default mode and with transactions forced on, plus what is MongoDB's own: the
collection's indexes, and a reader that meets a path with two heads (a client that died between
inserting a version and clearing the old head) keeps the newer.

Every test gets a database of its own, dropped after.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from cogitator_memory import unwrap
from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter, server_has_transactions
from cogitator_memory.testing import service_url
from cogitator_memory.testing.files import FileConformanceCase, memory_file_adapter_conformance_cases


def make_adapter(**options: Any) -> MongoDBAdapter:
    options.setdefault("database", f"cogmem_files_{uuid.uuid4().hex[:12]}")
    return MongoDBAdapter(uri=service_url("COGMEM_TEST_MONGODB_URL"), connect_timeout=20.0, **options)


@pytest.fixture(params=["default", "transactions"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[MongoDBAdapter]:
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


def test_the_mongodb_store_keeps_files() -> None:
    assert "files" in MongoDBAdapter.capabilities


@pytest.mark.parametrize("case", memory_file_adapter_conformance_cases(), ids=str)
async def test_file_conformance(case: FileConformanceCase, store: MongoDBAdapter) -> None:
    await case.run(store)


async def test_indexes_and_a_path_left_with_two_heads(store: MongoDBAdapter) -> None:
    scope = {"agent_id": "agent", "user_id": "ana"}

    def version(sequence: int) -> dict[str, Any]:
        return {
            "id": f"file_m{sequence}",
            "scope": scope,
            "path": "/memories/a.md",
            "sequence": sequence,
            "content": f"v{sequence}",
            "created_at": "2026-03-01T09:30:00+00:00",
        }

    unwrap(await store.add_file_versions([version(1)]))
    unwrap(await store.add_file_versions([version(2)]))
    collection = store.client[store.database][f"{store.collection_prefix}file_versions"]
    names = {index["name"] for index in await (await collection.list_indexes()).to_list()}
    assert {"scope_path_sequence", "heads", "agent_limits", "entries", "origins"} <= names
    assert await collection.count_documents({"head": True}) == 1
    await collection.update_one({"_id": "file_m1"}, {"$set": {"head": True}})  # as a client killed mid-write leaves it
    heads = unwrap(await store.find_file_heads({"visible_to": scope}))
    assert [(h.id, h.content) for h in heads] == [("file_m2", "v2")]
    unwrap(await store.add_file_versions([version(3)]))
    assert await collection.count_documents({"head": True}) == 1, "the next write clears every lower head"
