"""``threads_of_user`` on SQLite and PostgreSQL: a user's erasure finds their threads (owned, and
those listing them in ``memory_user_ids``) through indexes, not by listing the store, and finds
the same threads as the listing does."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.cascade import find_user_threads
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.testing import postgres_database


async def _fill(store: Any) -> None:
    for n in range(300):
        metadata: dict[str, Any] = {"user_id": f"u{n % 50}"}
        if n % 30 == 0:
            metadata["memory_user_ids"] = ["u7", f"u{n % 50}"]
        unwrap(await store.create_thread("agent", metadata, f"thread_{n:03d}"))


def _expected() -> tuple[set[str], set[str]]:
    owned = {f"thread_{n:03d}" for n in range(300) if n % 50 == 7}
    joined = {f"thread_{n:03d}" for n in range(300) if n % 30 == 0} - owned
    return owned, joined


async def _check(store: Any) -> None:
    found = await find_user_threads(store, "u7")
    owned, joined = _expected()
    assert {t.id for t in found.owned} == owned and {t.id for t in found.joined} == joined

    class Listing:  # the same store seen without the index path: every thread listed
        def __init__(self, inner: Any) -> None:
            self.list_threads = inner.list_threads

    listed = await find_user_threads(Listing(store), "u7")
    assert {t.id for t in listed.owned} == owned and {t.id for t in listed.joined} == joined
    assert unwrap(await store.threads_of_user("nobody")) == []


async def test_sqlite_finds_a_users_threads_by_index(tmp_path: Path) -> None:
    async with SQLiteAdapter(path=str(tmp_path / "u.db")) as store:
        await _fill(store)
        await _check(store)
        db = store.connection
        db.execute("ANALYZE")
        plan = " ".join(
            row[3]
            for row in db.execute(
                "EXPLAIN QUERY PLAN SELECT id FROM threads WHERE json_extract(metadata, '$.user_id') = 'u7' UNION "
                "SELECT id FROM threads WHERE json_type(metadata, '$.memory_user_ids') = 'array'"
            )
        )
        # the second part walks the partial index: only the threads that list users
        assert "threads_by_user" in plan and "SCAN threads USING INDEX threads_with_users" in plan, plan
        assert plan.count("SCAN threads") == plan.count("SCAN threads USING INDEX"), plan


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with postgres_database("cogmem_users") as url:
        yield url


async def test_postgres_finds_a_users_threads_by_index(pg_url: str) -> None:
    import psycopg

    schema = f"cogmem_u_{secrets.token_hex(6)}"
    async with PostgresAdapter(url=pg_url, schema=schema, pool_size=2) as store:
        await _fill(store)
        await _check(store)
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
            await conn.execute(f'ANALYZE "{schema}".threads')
            await conn.execute("SET enable_seqscan = off")
            sql = (
                f"""EXPLAIN SELECT id FROM "{schema}".threads WHERE metadata->>'user_id' = 'u7' UNION """
                f"""SELECT id FROM "{schema}".threads WHERE metadata->'memory_user_ids' @> '["u7"]'::jsonb"""
            )
            plan = "\n".join(r[0] for r in await (await conn.execute(sql)).fetchall())
            assert "threads_by_user" in plan and "threads_with_users" in plan, plan
            await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
