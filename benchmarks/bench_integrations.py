"""LangGraph's store API: ``CogitatorStore`` beside LangGraph's own stores, in the same run.

The same items (``N`` = 2,000, ``--quick``: 300, each a sentence under ``("docs",)``) go into
LangGraph's ``InMemoryStore``, ``AsyncSqliteStore`` (langgraph-checkpoint-sqlite) and
``AsyncPostgresStore`` (langgraph-checkpoint-postgres, a database of its own), and into
``CogitatorStore`` over a ``Memory`` on the in-memory store, SQLite and PostgreSQL (a schema of
its own). Every store gets the same index: the sentences embedded by the same hashing embedder
(256 dimensions, no model, so the figures are the stores' own work). Measured, as p50 and p95
of single awaited calls: ``aput`` (each item once), ``aget`` (300 random keys) and
``asearch(query=...)`` (100 queries of two words, ``limit=10``). Each figure of ours is printed
beside LangGraph's store of the same engine (our in-memory engine beside ``InMemoryStore``).
"""

from __future__ import annotations

import random
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from cogitator_memory.embeddings.hashing import HashingEmbedder
from cogitator_memory.testing.services import service_url

from .common import Row, percentiles

DIMS = 256
WORDS = [
    "garden",
    "piano",
    "bicycle",
    "lisbon",
    "coffee",
    "teacher",
    "python",
    "marathon",
    "violin",
    "kayak",
    "tomato",
    "river",
    "winter",
    "museum",
    "train",
    "recipe",
    "dentist",
    "novel",
    "chess",
    "guitar",
]


def _text(i: int) -> str:
    rng = random.Random(i)
    return f"note {i}: the {rng.choice(WORDS)} and the {rng.choice(WORDS)} near the {rng.choice(WORDS)}"


def _embed(texts: Any) -> list[list[float]]:
    embedder = HashingEmbedder(DIMS)
    return [embedder.vector(t) for t in texts]


@asynccontextmanager
async def _langgraph_memory() -> AsyncIterator[Any]:
    from langgraph.store.memory import InMemoryStore

    yield InMemoryStore(index={"dims": DIMS, "embed": _embed, "fields": ["text"]})


@asynccontextmanager
async def _langgraph_sqlite(tmp: Path) -> AsyncIterator[Any]:
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    # No index: sqlite-vec needs sqlite3's extension loading, which this Python may not have
    # built in; without an index the store's search ignores the query and lists the namespace.
    async with AsyncSqliteStore.from_conn_string(str(tmp / "langgraph.db")) as store:
        await store.setup()
        yield store


@asynccontextmanager
async def _langgraph_postgres() -> AsyncIterator[Any]:
    import psycopg
    from langgraph.store.postgres.aio import AsyncPostgresStore

    url = service_url("COGMEM_TEST_POSTGRES_URL")
    database = f"bench_lg_{uuid.uuid4().hex[:10]}"
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(f"CREATE DATABASE {database}")
    try:
        index = {"dims": DIMS, "embed": _embed, "fields": ["text"]}
        async with AsyncPostgresStore.from_conn_string(url.rsplit("/", 1)[0] + "/" + database, index=index) as store:  # type: ignore[arg-type]
            await store.setup()
            yield store
    finally:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute(f"DROP DATABASE {database}")


@asynccontextmanager
async def _ours(engine: str, tmp: Path, *, indexed: bool = True) -> AsyncIterator[Any]:
    from cogitator_memory.integrations.langgraph import CogitatorStore
    from cogitator_memory.runtime import Memory

    config: dict[str, Any]
    if engine == "memory":
        config = {"adapter": "memory"}
    elif engine == "sqlite":
        config = {"adapter": "sqlite", "path": str(tmp / f"ours-{indexed}.db")}
    else:
        config = {
            "adapter": "postgres",
            "connection_string": service_url("COGMEM_TEST_POSTGRES_URL"),
            "options": {"schema": f"bench_lg_{uuid.uuid4().hex[:10]}"},
        }
    config["embedding"] = {"provider": "hashing", "dimensions": DIMS}
    schema = config.get("options", {}).get("schema", "")
    if not indexed:
        config["embedding"] = {"provider": "none"}
    try:
        async with Memory(config) as memory:
            yield CogitatorStore(memory, index={"dims": DIMS, "fields": ["text"]} if indexed else None)
    finally:
        if engine == "postgres":
            import psycopg

            url = service_url("COGMEM_TEST_POSTGRES_URL")
            async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                await conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


async def _timed(calls: list[Callable[[], Awaitable[Any]]]) -> tuple[float, float]:
    samples = []
    for call in calls:
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    p50, p95 = percentiles(samples)
    return p50 * 1000, p95 * 1000


async def _measure(store: Any, n: int) -> dict[str, float]:
    ns = ("docs",)
    out: dict[str, float] = {}
    rng = random.Random(7)
    puts = [lambda i=i: store.aput(ns, f"k{i}", {"text": _text(i), "n": i}) for i in range(n)]
    out["put p50"], out["put p95"] = await _timed(puts)
    keys = [rng.randrange(n) for _ in range(300)]
    gets = [lambda k=k: store.aget(ns, f"k{k}") for k in keys]
    out["get p50"], out["get p95"] = await _timed(gets)
    queries = [f"{rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(100)]
    searches = [lambda q=q: store.asearch(ns, query=q, limit=10) for q in queries]
    out["search p50"], out["search p95"] = await _timed(searches)
    found = await store.asearch(ns, query=queries[0], limit=10)
    assert len(found) == 10, f"{type(store).__name__}: search found {len(found)}"
    return out


async def run(quick: bool) -> list[Row]:
    """The rows of this benchmark (see the module docs)."""
    n = 300 if quick else 2000
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        pairs = [
            ("in-memory", _ours("memory", tmp), _langgraph_memory(), "LangGraph InMemoryStore"),
            (
                "SQLite without index",
                _ours("sqlite", tmp, indexed=False),
                _langgraph_sqlite(tmp),
                "LangGraph AsyncSqliteStore (no index)",
            ),
            ("SQLite", _ours("sqlite", tmp), _langgraph_memory(), "LangGraph InMemoryStore"),
            ("PostgreSQL", _ours("postgres", tmp), _langgraph_postgres(), "LangGraph AsyncPostgresStore"),
        ]
        for engine, ours_cm, theirs_cm, theirs in pairs:
            async with theirs_cm as store:
                base = await _measure(store, n)
            async with ours_cm as store:
                mine = await _measure(store, n)
            for figure, value in mine.items():
                rows.append(
                    Row(
                        group="integrations",
                        name=f"CogitatorStore {engine}, {n} items: {figure}",
                        value=value,
                        unit="ms",
                        baseline=base[figure],
                        baseline_name=theirs,
                        ratio=value / base[figure] if base[figure] else None,
                    )
                )
    return rows
