"""Fixtures of the compaction tests: a fresh thread store of every built-in engine, and a chat
model over real HTTP (``ScriptedServer`` speaking OpenAI's API) turned into a ``SummarizeFn``."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from cogitator_memory import InMemoryAdapter, SQLiteAdapter
from cogitator_memory.http import RetryPolicy
from cogitator_memory.models import OpenAIChatClient
from cogitator_memory.testing import postgres_database, service_url
from cogitator_memory.testing.scripted_server import ScriptedServer
from cogitator_memory.threads.base import BaseMemoryAdapter

STORES = ["memory", "sqlite", "postgres", "redis", "mongodb"]


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A database of the module's own on the test server (``COGMEM_TEST_POSTGRES_URL``)."""
    with postgres_database("cogmem_compact") as url:
        yield url


@pytest.fixture(params=STORES)
async def memory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BaseMemoryAdapter]:
    """A fresh store of each built-in engine, emptied after the test."""
    kind = str(request.param)
    store: BaseMemoryAdapter
    if kind == "memory":
        store = InMemoryAdapter()
    elif kind == "sqlite":
        store = SQLiteAdapter(path=tmp_path / "threads.db")
    elif kind == "postgres":
        from cogitator_memory.engines.postgres.adapter import PostgresAdapter

        url = request.getfixturevalue("pg_url")
        schema = f"cogmem_c_{secrets.token_hex(6)}"
        store = PostgresAdapter(connection_string=url, schema=schema, pool_size=3)
    elif kind == "redis":
        from cogitator_memory.engines.redis.threads import RedisAdapter

        store = RedisAdapter(url=service_url("COGMEM_TEST_REDIS_URL"), key_prefix=f"test:{uuid.uuid4().hex[:12]}:")
    else:
        from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter

        store = MongoDBAdapter(
            uri=service_url("COGMEM_TEST_MONGODB_URL"),
            database=f"cogmem_compact_{uuid.uuid4().hex[:12]}",
            connect_timeout=5.0,
        )
    async with store:
        try:
            yield store
        finally:
            await _empty(kind, store)
    if kind == "postgres":
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def _empty(kind: str, store: BaseMemoryAdapter) -> None:
    if kind == "redis":
        await store.delete_all_keys()  # type: ignore[attr-defined]
    elif kind == "mongodb":
        await store.client.drop_database(store.database)  # type: ignore[attr-defined]


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as scripted:
        yield scripted


@pytest.fixture
async def client(server: ScriptedServer) -> AsyncIterator[OpenAIChatClient]:
    """A chat client of the scripted server, retrying nothing and waiting at most 2 s."""
    chat = OpenAIChatClient(
        provider="compatible",
        base_url=server.url + "/v1",
        model="summarizer-1",
        timeout=2.0,
        retry=RetryPolicy(max_retries=0),
    )
    async with chat:
        yield chat
