"""The cascade cases on SQLite: threads, items, files and graph in SQLiteAdapter, vectors in a
SQLiteEmbeddingAdapter on the same file.

The raw data is the database file and its WAL, read as bytes. SQLite leaves deleted rows in
free pages and old page images in the WAL; the cascade itself turns ``PRAGMA secure_delete``
on and checkpoints the WAL (``cascade/scrub.py``), so the stores here are left as they open,
and nothing settles them before the scan.
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
    memory = SQLiteAdapter(path=str(path))
    async with memory, SQLiteEmbeddingAdapter(store=memory, dimensions=DIMENSIONS) as vectors:

        async def raw() -> bytes:
            files = [path, path.with_name(path.name + "-wal")]
            return b"".join(f.read_bytes() for f in files if f.exists())

        yield CascadeStores(memory=memory, embeddings=vectors, graph=memory, raw=raw)


@pytest.mark.parametrize("case", cascade_cases(), ids=str)
async def test_cascade(case: CascadeCase, stores: CascadeStores) -> None:
    await case.run(stores)


async def test_the_cascade_clears_the_file_a_plain_delete_leaves(tmp_path: Path) -> None:
    """Why the cascade turns secure_delete on and checkpoints the WAL itself: a plain delete on a
    connection without it leaves the text in the file; the cascade, on the same kind of
    connection, leaves none (in the file or its WAL) and keeps what stays."""
    from cogitator_memory import unwrap
    from cogitator_memory.cascade import MemoryCascade

    async def seed(memory: SQLiteAdapter, user: str, secret: str) -> None:
        unwrap(await memory.create_thread("assistant", {"user_id": user}, f"thread_{user}"))
        message = {"role": "user", "content": f"{secret} " * 40}
        unwrap(await memory.add_entry({"thread_id": f"thread_{user}", "message": message}))

    def raw(path: Path) -> bytes:
        return b"".join(f.read_bytes() for f in (path, path.with_name(path.name + "-wal")) if f.exists())

    plain = tmp_path / "plain.db"
    async with SQLiteAdapter(path=str(plain)) as memory:
        memory.connection.execute("PRAGMA secure_delete = OFF")
        await seed(memory, "zed", "ZEDSECRET42")
        unwrap(await memory.delete_thread("thread_zed"))
        memory.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert b"ZEDSECRET42" in raw(plain)

    cleared = tmp_path / "cleared.db"
    async with SQLiteAdapter(path=str(cleared)) as memory:
        memory.connection.execute("PRAGMA secure_delete = OFF")
        await seed(memory, "zed", "ZEDSECRET42")
        await seed(memory, "amy", "AMYSTAYS77")
        counts = await MemoryCascade(memory=memory).delete_user("zed")
        assert counts.threads == 1 and counts.skipped == []
        data = raw(cleared)
        assert b"ZEDSECRET42" not in data and b"AMYSTAYS77" in data
        assert memory.connection.execute("PRAGMA secure_delete").fetchone()[0] == 1


async def test_a_wal_held_by_a_reader_is_reported_not_fatal(tmp_path: Path) -> None:
    """Another connection reading keeps the WAL from emptying: the erasure finishes, says so in
    ``skipped``, and the next erasure, once the reader is gone, clears the file."""
    import sqlite3

    from cogitator_memory import unwrap
    from cogitator_memory.cascade import MemoryCascade
    from cogitator_memory.cascade.scrub import WAL_BUSY

    path = tmp_path / "held.db"
    async with SQLiteAdapter(path=str(path)) as memory:
        for user in ("zed", "amy"):
            unwrap(await memory.create_thread("assistant", {"user_id": user}, f"thread_{user}"))
            message = {"role": "user", "content": f"{user.upper()}SECRET42 " * 40}
            unwrap(await memory.add_entry({"thread_id": f"thread_{user}", "message": message}))
        reader = sqlite3.connect(str(path), isolation_level=None)
        try:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM threads").fetchone()
            counts = await MemoryCascade(memory=memory).delete_user("zed")
            assert counts.threads == 1 and counts.skipped == [WAL_BUSY]
        finally:
            reader.close()
        counts = await MemoryCascade(memory=memory).delete_user("amy")
        assert counts.threads == 1 and counts.skipped == []
        data = b"".join(f.read_bytes() for f in (path, path.with_name(path.name + "-wal")) if f.exists())
        assert b"ZEDSECRET42" not in data and b"AMYSECRET42" not in data
