"""Reading every byte a store holds, past its own calls, for the forgetting scans."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel


def strings_of(value: Any, seen: set[int] | None = None) -> Iterator[str]:
    """Every string reachable from ``value`` (objects' attributes, containers, pydantic models)."""
    seen = set() if seen is None else seen
    if isinstance(value, str):
        yield value
        return
    if isinstance(value, bytes | bytearray):
        yield bytes(value).decode("utf-8", "replace")
        return
    if value is None or isinstance(value, int | float | bool) or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, BaseModel):
        yield json.dumps(value.model_dump(mode="json"))
        return
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from strings_of(key, seen)
            yield from strings_of(inner, seen)
        return
    if isinstance(value, list | tuple | set | frozenset):
        for inner in value:
            yield from strings_of(inner, seen)
        return
    if type(value).__module__.startswith(("asyncio", "threading", "_thread", "weakref", "numpy")):
        return
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        yield from strings_of(fields, seen)
    for slot in getattr(type(value), "__slots__", ()):
        if hasattr(value, slot):
            yield from strings_of(getattr(value, slot), seen)


def process_bytes(*objects: Any) -> bytes:
    """The text an in-process store keeps (every string reachable from it), as UTF-8."""
    return "\n".join(s for obj in objects for s in strings_of(obj)).encode("utf-8", "replace")


def sqlite_file_bytes(path: Path) -> bytes:
    """A SQLite file and its WAL as they are on disk (free pages and old page images included)."""
    files = [path, path.with_name(path.name + "-wal")]
    return b"".join(f.read_bytes() for f in files if f.exists())


def sqlite_table_text(path: Path, prefix: str = "") -> bytes:
    """Every row of every table of the SQLite file whose name starts with ``prefix``, as text
    (the logical view: what the file's pages hold for those tables now)."""
    db = sqlite3.connect(str(path))
    try:
        names = [
            r[0]
            for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE ?", (prefix + "%",))
        ]
        assert names, f"the file has tables starting with {prefix!r}"
        return "\n".join(repr(row) for name in names for row in db.execute(f'SELECT * FROM "{name}"')).encode()
    finally:
        db.close()


async def postgres_table_text(url: str, schema: str, prefix: str = "") -> bytes:
    """Every row of every table of ``schema`` whose name starts with ``prefix``, as text (dead
    row versions are not visible to SQL; VACUUM is what drops them from the table files)."""
    import psycopg

    from cogitator_memory.engines.postgres.schema import quote_ident

    out: list[str] = []
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s AND table_type = 'BASE TABLE'"
            " AND starts_with(table_name, %s)",
            (schema, prefix),
        )
        tables = [row[0] for row in await cur.fetchall()]
        assert tables, f"the schema has tables starting with {prefix!r}"
        for table in tables:
            rows = await (
                await conn.execute(f"SELECT t::text FROM {quote_ident(schema)}.{quote_ident(table)} t")
            ).fetchall()
            out.extend(row[0] for row in rows)
    return "\n".join(out).encode()


async def redis_key_bytes(client: Any, prefix: str) -> bytes:
    """Every key of ``client`` (standalone or cluster, ``decode_responses=False``) starting with
    ``prefix``: its name, its ``DUMP`` and its value read by type (a ``DUMP`` may be
    LZF-compressed, so the values are read as well)."""
    pattern = "".join("\\" + c if c in "*?[]\\" else c for c in prefix) + "*"
    out: list[bytes] = []
    async for key in client.scan_iter(match=pattern.encode(), count=1000):
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
    return b"\n".join(out)


async def mongo_documents(db: Any, contains: str = "") -> bytes:
    """Every document of every collection of the MongoDB database ``db`` whose name holds
    ``contains``, as extended JSON."""
    from bson import json_util

    out: list[str] = []
    names = [n for n in await db.list_collection_names() if contains in n]
    assert names, f"the database has collections named with {contains!r}"
    for name in names:
        async for doc in db[name].find({}):
            out.append(json_util.dumps(doc))
    return "\n".join(out).encode()
