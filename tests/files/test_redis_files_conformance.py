"""The memory file conformance suite on RedisAdapter, on the standalone server and on the cluster,
plus what is Redis's own: the heads a read touches and the keys files live under.

Each test runs under a key prefix of its own, deleted afterwards. Servers come from
``COGMEM_TEST_REDIS_URL`` and ``COGMEM_TEST_REDIS_CLUSTER_NODES``.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from cogitator_memory import RedisAdapter, unwrap
from cogitator_memory.testing import service_url
from cogitator_memory.testing.files import FileConformanceCase, memory_file_adapter_conformance_cases


def make_adapter(topology: str) -> RedisAdapter:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    if topology == "cluster":
        nodes = service_url("COGMEM_TEST_REDIS_CLUSTER_NODES").split(",")
        return RedisAdapter(cluster={"nodes": nodes}, key_prefix=prefix)
    return RedisAdapter(url=service_url("COGMEM_TEST_REDIS_URL"), key_prefix=prefix)


@pytest.fixture(params=["standalone", "cluster"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[RedisAdapter]:
    memory = make_adapter(str(request.param))
    async with memory:
        try:
            yield memory
        finally:
            await memory.delete_all_keys()


def test_the_redis_store_keeps_files() -> None:
    assert "files" in RedisAdapter.capabilities


@pytest.mark.parametrize("case", memory_file_adapter_conformance_cases(), ids=str)
async def test_file_conformance(case: FileConformanceCase, store: RedisAdapter) -> None:
    await case.run(store)


async def test_files_live_under_the_prefix_and_heads_are_one_hash(store: RedisAdapter) -> None:
    scope = {"agent_id": "agent", "user_id": "ana"}
    for sequence in range(1, 4):
        version = {
            "id": f"file_r{sequence}",
            "scope": scope,
            "path": "/memories/a.md",
            "sequence": sequence,
            "content": f"v{sequence}",
            "created_at": "2026-03-01T09:30:00+00:00",
        }
        unwrap(await store.add_file_versions([version]))
    keys = [key async for key in store.client.scan_iter(match="*", count=1000)]
    mine = [key for key in keys if key.startswith(store.key_prefix)]
    assert any(key.endswith("fheads:agent\x1fana\x1f\x1f") for key in mine)
    heads = await store.client.hgetall(f"{store.key_prefix}fheads:agent\x1fana\x1f\x1f")
    assert heads == {"/memories/a.md": "file_r3"}
    assert await store.delete_all_keys() == len(mine)
