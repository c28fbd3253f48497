"""Forgetting reaches the recall index, on every store: its raw data after delete, redact,
delete_thread and forget_user holds none of the forgotten text, nor its stemmed terms.

Two checks per engine (in-memory, SQLite, PostgreSQL, Redis standalone and cluster, MongoDB):

- The forgetting cases of :mod:`cogitator_memory.testing.cascade` run with a
  :class:`~cogitator_memory.index.indexer.RecallIndexer` attached, as ``Memory`` runs it, so
  every turn they write is in the index; the scan is every byte the store holds, plus the index's
  own data upper-cased (its terms are lower case: ``passport3f...``).
- A secret said as a word the index stems (``zelqivorings`` -> ``zelqivor`` and the root
  ``~zelqi``), in turns (indexed with ``catch_up(full=True)``, what ``reindex`` runs, and no
  indexer listening, so what takes them out is the store itself), a memory item, a graph fact
  and, for forget_user, a core fact (indexed by their stores as written); the scan is the index's own data (SQLite
  tables ``recall_*``, PostgreSQL tables ``recall_*``, Redis keys ``<prefix>recall*``, MongoDB
  collections ``*recall*``, the in-memory engine's index dicts), before (it must hold the word,
  its stem and its root) and after (none of them), and again after a second full catch-up (a
  reindex brings nothing back). On SQLite the whole file and its WAL are scanned too (free pages).
"""

from __future__ import annotations

import asyncio
import secrets
import string
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cascade_raw import (
    mongo_documents,
    postgres_table_text,
    process_bytes,
    redis_key_bytes,
    sqlite_file_bytes,
    sqlite_table_text,
)

from cogitator_memory import unwrap
from cogitator_memory.cascade import MemoryCascade
from cogitator_memory.index.indexer import RecallIndexer
from cogitator_memory.index.terms import word_terms
from cogitator_memory.items.service import MemoryItems
from cogitator_memory.testing import postgres_database, service_url
from cogitator_memory.testing.cascade import DIMENSIONS, CascadeCase, CascadeStores, cascade_cases

ENGINES = ["memory", "sqlite", "postgres", "redis", "redis-cluster", "mongodb"]
AGENT = "assistant"

Raw = Callable[[], Awaitable[bytes]]


@dataclass
class IndexedStore:
    """A connected store keeping a recall index, its graph when it has one, and two scans:
    ``index_raw`` (the index's own data) and ``raw`` (every byte the store holds)."""

    memory: Any
    graph: Any | None
    index_raw: Raw
    raw: Raw
    embeddings: Any | None = None
    engine: str = ""


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with postgres_database("cogmem_rcascade") as url:
        yield url


def _redis_client(cluster: bool) -> Any:
    if cluster:
        from redis.asyncio.cluster import ClusterNode, RedisCluster

        nodes = [n.rsplit(":", 1) for n in service_url("COGMEM_TEST_REDIS_CLUSTER_NODES").split(",")]
        return RedisCluster(startup_nodes=[ClusterNode(h, int(p)) for h, p in nodes], decode_responses=False)
    import redis.asyncio as aioredis

    return aioredis.from_url(service_url("COGMEM_TEST_REDIS_URL"), decode_responses=False)


@pytest.fixture(params=ENGINES)
async def indexed(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[IndexedStore]:
    engine = str(request.param)
    if engine == "memory":
        from cogitator_memory import InMemoryAdapter, InMemoryEmbeddingAdapter

        async with InMemoryAdapter() as memory, InMemoryEmbeddingAdapter(dimensions=DIMENSIONS) as vectors:

            async def memory_index() -> bytes:
                return process_bytes(memory._recall, memory._postings, memory._recall_state)

            async def memory_all() -> bytes:
                return process_bytes(memory, vectors)

            yield IndexedStore(memory, memory, memory_index, memory_all, vectors, engine)
    elif engine == "sqlite":
        from cogitator_memory import SQLiteAdapter, SQLiteEmbeddingAdapter

        path = tmp_path / "memory.db"
        async with (
            SQLiteAdapter(path=str(path)) as memory,
            SQLiteEmbeddingAdapter(store=memory, dimensions=DIMENSIONS) as vectors,
        ):

            async def sqlite_index() -> bytes:
                return sqlite_table_text(path, "recall_")

            async def sqlite_all() -> bytes:
                return sqlite_file_bytes(path)

            yield IndexedStore(memory, memory, sqlite_index, sqlite_all, vectors, engine)
    elif engine == "postgres":
        import psycopg

        from cogitator_memory.engines.postgres.adapter import PostgresAdapter

        url = request.getfixturevalue("pg_url")
        schema = f"cogmem_r_{secrets.token_hex(6)}"
        try:
            async with PostgresAdapter(connection_string=url, schema=schema, pool_size=3, dimensions=DIMENSIONS) as pg:

                async def pg_index() -> bytes:
                    return await postgres_table_text(url, schema, "recall_")

                async def pg_all() -> bytes:
                    return await postgres_table_text(url, schema)

                yield IndexedStore(pg, pg, pg_index, pg_all, pg, engine)
        finally:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    elif engine.startswith("redis"):
        from cogitator_memory import RedisAdapter

        cluster = engine == "redis-cluster"
        prefix = f"test:{uuid.uuid4().hex[:12]}:"
        if cluster:
            nodes = service_url("COGMEM_TEST_REDIS_CLUSTER_NODES").split(",")
            redis_store = RedisAdapter(cluster={"nodes": nodes}, key_prefix=prefix)
        else:
            redis_store = RedisAdapter(url=service_url("COGMEM_TEST_REDIS_URL"), key_prefix=prefix)
        client = _redis_client(cluster)
        async with redis_store:
            try:

                async def redis_index() -> bytes:
                    return await redis_key_bytes(client, redis_store.key_prefix + "recall")

                async def redis_all() -> bytes:
                    return await redis_key_bytes(client, redis_store.key_prefix)

                yield IndexedStore(redis_store, None, redis_index, redis_all, engine=engine)
            finally:
                await redis_store.delete_all_keys()
                await client.aclose()
    else:
        from cogitator_memory.engines.mongodb.adapter import MongoDBAdapter

        mongo = MongoDBAdapter(
            uri=service_url("COGMEM_TEST_MONGODB_URL"),
            database=f"cogmem_rcascade_{uuid.uuid4().hex[:12]}",
            connect_timeout=20.0,
        )
        async with mongo:
            db = mongo.client[mongo.database]

            async def mongo_index() -> bytes:
                return await mongo_documents(db, "recall")

            async def mongo_all() -> bytes:
                return await mongo_documents(db)

            try:
                yield IndexedStore(mongo, None, mongo_index, mongo_all, engine=engine)
            finally:
                await mongo.client.drop_database(mongo.database)


# --- the forgetting cases, with the index written as Memory writes it ----------------------------


@pytest.mark.parametrize("case", cascade_cases(forgetting=True), ids=str)
async def test_the_forgetting_cases_leave_nothing_in_the_index(case: CascadeCase, indexed: IndexedStore) -> None:
    indexer = RecallIndexer(indexed.memory)
    indexer.attach()
    held: list[bytes] = []

    async def settle() -> None:
        await indexer.flush()

    async def raw() -> bytes:
        index = await indexed.index_raw()
        held.append(index)
        return await indexed.raw() + b"\n" + index.upper()

    stores = CascadeStores(
        memory=indexed.memory, embeddings=indexed.embeddings, graph=indexed.graph, raw=raw, settle=settle
    )
    try:
        await case.run(stores)
    finally:
        await indexer.close()
    assert indexer.last_error is None, indexer.last_error
    assert held and b"KEEPTEA" in held[-1].upper(), "the index holds the turns that stay: the scan reads it"


# --- a stemmed word, indexed by a full catch-up, taken out by the store itself -------------------


def _word() -> str:
    """A word of letters the stemmer shortens: its stem and root are in no other text here."""
    return "zq" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(6)) + "ings"


@dataclass
class _Seeded:
    word: str
    keep: str
    ana: str
    bo: str
    fork: str
    said: list[str]  # the user messages with the word (in Ana's thread and in Bo's)


async def _say(store: Any, thread_id: str, role: str, text: str, user: str | None = None) -> str:
    metadata = {"user_id": user} if user else {}
    entry = unwrap(
        await store.add_entry(
            {"thread_id": thread_id, "message": {"role": role, "content": text}, "metadata": metadata}
        )
    )
    return str(entry.id)


async def _seed(indexed: IndexedStore, *, core_fact: bool = False) -> _Seeded:
    store = indexed.memory
    word, keep = _word(), "Kumquatterings"
    ana = unwrap(await store.create_thread(AGENT, {"user_id": "ana"})).id
    said = [await _say(store, ana, "user", f"I keep my {word.upper()} {word} in the attic.", "ana")]
    reply = await _say(store, ana, "assistant", f"Your {word} are in the attic, noted.")
    await _say(store, ana, "user", f"And {keep} every morning.", "ana")
    fork = unwrap(await store.fork_thread(ana, reply)).id
    bo = unwrap(await store.create_thread(AGENT, {"user_id": "bo", "memory_user_ids": ["ana"]})).id
    await _say(store, bo, "user", f"Bo likes {keep}.", "bo")
    said.append(await _say(store, bo, "user", f"Ana here: the {word} too.", "ana"))
    await _say(store, bo, "assistant", f"{word.capitalize()}, noted.")
    items = MemoryItems(adapter=store)
    item = await items.add(
        {
            "kind": "fact",
            "subject": "ana",
            "attribute": "attic",
            "value": f"keeps {word} in the attic",
            "evidence": [{"entry_id": said[0], "thread_id": ana, "quote": word}],
            "trust": "user",
            "scope": {"agent_id": AGENT, "user_id": "ana"},
        }
    )
    await items.activate([item.id])  # a suggested item is kept out of the index
    if core_fact:  # only forget_user takes the user's core facts (agent "core")
        core = await items.add(
            {
                "kind": "fact",
                "subject": "user",
                "attribute": "attic_contents",
                "value": word,
                "trust": "user",
                "scope": {"agent_id": "core", "user_id": "ana"},
            }
        )
        await items.activate([core.id])
    if indexed.graph is not None:
        unwrap(
            await indexed.graph.add_node(
                {
                    "scope": {"agent_id": AGENT, "user_id": "ana"},
                    "type": "fact",
                    "name": f"Ana keeps {word} in the attic",
                    "evidence": [{"entry_id": said[0], "thread_id": ana, "quote": word}],
                }
            )
        )
    cy = unwrap(await store.create_thread(AGENT, {"user_id": "cy"})).id
    await _say(store, cy, "user", f"Cy drinks {keep}.", "cy")
    return _Seeded(word, keep, ana, bo, fork, said)


def _needles(word: str) -> list[bytes]:
    """The word as said and every term the index makes of it (stem, root)."""
    return [word.encode(), *(t.encode() for t in word_terms(word))]


def _found(data: bytes, needles: list[bytes]) -> list[str]:
    lower = data.lower()
    out = []
    for needle in needles:
        at = lower.find(needle)
        if at >= 0:
            out.append(f"{needle.decode()!r} in ...{data[max(0, at - 120) : at + 80]!r}...")
    return out


async def _forget_user(cascade: MemoryCascade, seeded: _Seeded) -> None:
    counts = await cascade.delete_user("ana", {"agent_ids": [AGENT]})
    assert counts.threads == 2, counts  # her thread and its fork


async def _delete_entries(cascade: MemoryCascade, seeded: _Seeded) -> None:
    counts = await cascade.delete_entries(seeded.said)
    assert counts.entries.deleted >= 4, counts


async def _redact_entries(cascade: MemoryCascade, seeded: _Seeded) -> None:
    counts = await cascade.redact_entries(seeded.said, {"at": datetime.now(UTC), "reason": "asked"})
    assert counts.entries.redacted >= 4, counts


async def _delete_threads(cascade: MemoryCascade, seeded: _Seeded) -> None:
    for thread_id in (seeded.ana, seeded.fork, seeded.bo):
        counts = await cascade.delete_thread(thread_id)
        assert counts.threads == 1, counts


FORGETS = {
    "forget_user": _forget_user,
    "delete_entries": _delete_entries,
    "redact_entries": _redact_entries,
    "delete_thread": _delete_threads,
}


@pytest.mark.parametrize("forget", list(FORGETS))
async def test_a_stemmed_word_leaves_the_index_with_its_source(indexed: IndexedStore, forget: str) -> None:
    seeded = await _seed(indexed, core_fact=forget == "forget_user")
    store = indexed.memory
    report = await RecallIndexer(store).catch_up(full=True)
    assert report.threads_checked == 4 and report.records_written >= 9, report
    needles, kept = _needles(seeded.word), _needles(seeded.keep.lower())
    before = await indexed.index_raw()
    assert len(_found(before, needles)) == 3, f"the index holds the word, its stem and its root: {needles}"
    hits = unwrap(await store.recall_keyword(f"{seeded.word[:-4]}ed", filter={"user_id": "ana"}))
    kinds = {hit.record.kind for hit in hits}
    wanted = {"turn", "item"} | ({"graph_fact"} if indexed.graph is not None else set())
    hits += unwrap(await store.recall_keyword(seeded.word, filter={"user_id": "ana", "agent_id": "core"}))
    kinds = {hit.record.kind for hit in hits}
    wanted |= {"core_fact"} if forget == "forget_user" else set()
    assert wanted <= kinds, f"a search by another form of the word finds every kind that holds it: {kinds}"

    cascade = MemoryCascade(memory=store, graph=indexed.graph, embeddings=indexed.embeddings)
    await FORGETS[forget](cascade, seeded)
    after = await indexed.index_raw()
    assert len(_found(after, kept)) == 3, "the scan still sees what stays"
    assert _found(after, needles) == [], f"the index keeps forgotten text after {forget}"
    assert unwrap(await store.recall_keyword(seeded.word, filter={"statuses": ["active", "superseded", "stale"]})) == []
    assert _found(await indexed.raw(), needles) == [], f"the store keeps forgotten text after {forget}"

    again = await RecallIndexer(store).catch_up(full=True)
    assert again.threads_checked >= 1, again
    assert _found(await indexed.index_raw(), needles) == [], "a reindex after forgetting brings nothing back"


# --- forgetting while the indexes are busy -------------------------------------------------------


@pytest.mark.parametrize("forget", ["redact_entries", "delete_entries"])
async def test_memory_forgetting_right_after_add_leaves_nothing_in_the_sqlite_file(tmp_path: Path, forget: str) -> None:
    from cogitator_memory.runtime.memory import Memory

    path = tmp_path / "memory.db"
    async with Memory({"adapter": "sqlite", "path": str(path), "embedding": {"provider": "none"}}) as memory:
        said = [
            {"role": "user", "content": "My code is ZORBLAX9931."},
            {"role": "assistant", "content": "ZORBLAX9931, noted."},
        ]
        await memory.add(said, user_id="ana", thread_id="t1")
        await memory.add([{"role": "user", "content": "I drink KEEPTEA daily."}], user_id="bo", thread_id="t2")
        first = unwrap(await memory.adapter.get_entries("t1"))[0].id
        await getattr(memory, forget)([first])  # the reply goes with it
        await memory.flush()
        data = sqlite_file_bytes(path)
        assert b"KEEPTEA" in data
        assert _found(data, [b"zorblax9931"]) == []


class _PausedReads:
    """The store, with ``get_entries`` waiting for ``go`` after it read (``read`` is set then):
    a catch-up that has read a thread's turns and not yet written them."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.read = asyncio.Event()
        self.go = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def get_entries(self, *args: Any, **kwargs: Any) -> Any:
        out = await self._inner.get_entries(*args, **kwargs)
        self.read.set()
        await self.go.wait()
        return out


@pytest.mark.parametrize("forget", ["delete_thread", "redact_entries"])
async def test_a_catch_up_running_across_a_forget_writes_nothing_back(tmp_path: Path, forget: str) -> None:
    from cogitator_memory import SQLiteAdapter

    async with SQLiteAdapter(path=str(tmp_path / "memory.db")) as store:
        unwrap(await store.create_thread(AGENT, {"user_id": "ana"}, "t1"))
        entry = await _say(store, "t1", "user", "My code is ZORBLAX9931.", "ana")
        paused = _PausedReads(store)
        catching_up = asyncio.create_task(RecallIndexer(paused).catch_up(full=True))
        await paused.read.wait()
        cascade = MemoryCascade(memory=store)
        if forget == "delete_thread":
            await cascade.delete_thread("t1")
        else:
            await cascade.redact_entries([entry], {"at": datetime.now(UTC), "reason": "asked"})
        paused.go.set()
        await catching_up
        assert unwrap(await store.recall_keyword("zorblax9931", filter={"user_id": "ana"})) == []
