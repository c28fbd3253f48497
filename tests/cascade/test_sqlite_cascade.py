"""The cascade cases on SQLite: threads, items, files and graph in SQLiteAdapter, vectors in a
SQLiteEmbeddingAdapter on the same file.

The raw data is the database file and its WAL, read as bytes. SQLite leaves deleted rows in
free pages and old page images in the WAL, so the forgetting cases run the engine's own means,
as docs/cascade.md tells: ``PRAGMA secure_delete = ON`` on the connection (freed cells and pages
are overwritten with zeros) and a checkpoint that truncates the WAL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cogitator_memory import SQLiteAdapter, SQLiteEmbeddingAdapter
from cogitator_memory.testing.cascade import DIMENSIONS, CascadeCase, CascadeStores, cascade_cases


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[CascadeStores]:
    path = tmp_path / "memory.db"
    async with SQLiteAdapter(path=str(path)) as memory:
        memory.connection.execute("PRAGMA secure_delete = ON")
        async with SQLiteEmbeddingAdapter(store=memory, dimensions=DIMENSIONS) as vectors:

            async def settle() -> None:
                db = memory.connection
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

            async def raw() -> bytes:
                files = [path, path.with_name(path.name + "-wal")]
                return b"".join(f.read_bytes() for f in files if f.exists())

            yield CascadeStores(memory=memory, embeddings=vectors, graph=memory, raw=raw, settle=settle)


@pytest.mark.parametrize("case", cascade_cases(), ids=str)
async def test_cascade(case: CascadeCase, stores: CascadeStores) -> None:
    await case.run(stores)


async def test_without_secure_delete_the_file_keeps_old_bytes(tmp_path: Path) -> None:
    """Why the forgetting cases turn secure_delete on: without it the deleted text stays in the file."""
    path = tmp_path / "plain.db"
    async with SQLiteAdapter(path=str(path)) as memory:
        memory.connection.execute("PRAGMA secure_delete = OFF")
        stores = CascadeStores(memory=memory)
        from cogitator_memory import unwrap
        from cogitator_memory.cascade import MemoryCascade

        unwrap(await memory.create_thread("assistant", {"user_id": "zed"}, "thread_zed"))
        unwrap(
            await memory.add_entry(
                {"thread_id": "thread_zed", "message": {"role": "user", "content": "ZEDSECRET42 " * 40}}
            )
        )
        await MemoryCascade(memory=stores.memory).delete_user("zed")
        memory.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert b"ZEDSECRET42" in path.read_bytes()
