"""The cascade cases on Redis standalone (``COGMEM_TEST_REDIS_URL``): threads, items and files in
a RedisAdapter under a key prefix of the test's own (Redis keeps no graph or vectors here).

The raw data is every key under the prefix: its name, its ``DUMP`` and its value read by type
(a ``DUMP`` may be LZF-compressed, so the values are read as well)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from cascade_raw import redis_key_bytes

from cogitator_memory import RedisAdapter
from cogitator_memory.testing import service_url
from cogitator_memory.testing.cascade import CascadeCase, CascadeStores, cascade_cases


@pytest.fixture
async def stores() -> AsyncIterator[CascadeStores]:
    url = service_url("COGMEM_TEST_REDIS_URL")
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    async with RedisAdapter(url=url, key_prefix=prefix) as memory:
        try:

            async def raw() -> bytes:
                import redis.asyncio as aioredis

                client = aioredis.from_url(url, decode_responses=False)
                try:
                    return await redis_key_bytes(client, prefix)
                finally:
                    await client.aclose()

            yield CascadeStores(memory=memory, raw=raw)
        finally:
            await memory.delete_all_keys()


@pytest.mark.parametrize("case", cascade_cases(), ids=str)
async def test_cascade(case: CascadeCase, stores: CascadeStores) -> None:
    await case.run(stores)
