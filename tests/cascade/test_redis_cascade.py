"""The cascade cases on Redis standalone (``COGMEM_TEST_REDIS_URL``): threads, items and files in
a RedisAdapter under a key prefix of the test's own (Redis keeps no graph or vectors here).

The raw data is every key under the prefix: its name, its ``DUMP`` and its value read by type
(a ``DUMP`` may be LZF-compressed, so the values are read as well)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest

from cogitator_memory import RedisAdapter
from cogitator_memory.testing import service_url
from cogitator_memory.testing.cascade import CascadeCase, CascadeStores, cascade_cases


async def key_bytes(url: str, prefix: str) -> bytes:
    """Every key under ``prefix`` with its dump and its value."""
    import redis.asyncio as aioredis

    client = aioredis.from_url(url, decode_responses=False)
    out: list[bytes] = []
    try:
        async for key in client.scan_iter(match=prefix.encode() + b"*", count=1000):
            out.append(key)
            dumped = await client.dump(key)
            if dumped is not None:
                out.append(dumped)
            kind = (await client.type(key)).decode()
            if kind == "string":
                out.append(await client.get(key) or b"")
            elif kind == "hash":
                for field, value in (await client.hgetall(key)).items():
                    out.extend((field, value))
            elif kind == "list":
                out.extend(await client.lrange(key, 0, -1))
            elif kind == "set":
                out.extend(await client.smembers(key))
            elif kind == "zset":
                out.extend(member for member, _ in await client.zrange(key, 0, -1, withscores=True))
            elif kind == "stream":
                for _, fields in await client.xrange(key):
                    for field, value in fields.items():
                        out.extend((field, value))
            else:
                raise AssertionError(f"a key of type {kind} the scan cannot read: {key!r}")
    finally:
        await client.aclose()
    return b"\n".join(out)


@pytest.fixture
async def stores() -> AsyncIterator[CascadeStores]:
    url = service_url("COGMEM_TEST_REDIS_URL")
    prefix = f"test:{uuid.uuid4().hex[:12]}:"
    async with RedisAdapter(url=url, key_prefix=prefix) as memory:
        try:

            async def raw() -> bytes:
                return await key_bytes(url, prefix)

            yield CascadeStores(memory=memory, raw=raw)
        finally:
            await memory.delete_all_keys()


@pytest.mark.parametrize("case", cascade_cases(), ids=str)
async def test_cascade(case: CascadeCase, stores: CascadeStores) -> None:
    await case.run(stores)
