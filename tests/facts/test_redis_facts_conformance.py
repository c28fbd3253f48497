"""The fact conformance suite on RedisAdapter, on the standalone server and on the cluster, each
test under a key prefix of its own (deleted afterwards)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from cogitator_memory import RedisAdapter
from cogitator_memory.testing import service_url
from cogitator_memory.testing.facts import FactConformanceCase, fact_adapter_conformance_cases


@pytest.fixture(params=["standalone", "cluster"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[RedisAdapter]:
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    if request.param == "cluster":
        nodes = service_url("COGMEM_TEST_REDIS_CLUSTER_NODES").split(",")
        memory = RedisAdapter(cluster={"nodes": nodes}, key_prefix=prefix)
    else:
        memory = RedisAdapter(url=service_url("COGMEM_TEST_REDIS_URL"), key_prefix=prefix)
    async with memory:
        try:
            yield memory
        finally:
            await memory.delete_all_keys()


@pytest.mark.parametrize("case", fact_adapter_conformance_cases(), ids=str)
async def test_fact_conformance(case: FactConformanceCase, store: RedisAdapter) -> None:
    await case.run(store)
