"""Memory files on SQLite (a file, WAL) and PostgreSQL, each figure beside the raw driver in the same run.

* ``MemoryFiles.run`` ``view`` of a file and ``str_replace`` in it, p50/p95, with 1,000 files of 10
  versions each in one scope (200 files in ``--quick``). Beside them, the raw driver doing the
  store's part of the same command on the same table: reading the file's head row (view), and
  reading it, clearing its head flag and inserting the next version in one transaction
  (str_replace, on a copy of the same files the service does not touch). The service adds the access and path checks, the scopes' heads, the record
  checks and the answer's text.
* Flatness: ``view`` and ``str_replace`` p50 on files of 1 version and on files of 100 versions
  in the same scope, call by call in turn. Heads are read through the heads index, never the
  history, so the 100-version figure must stay within 1.5x of the 1-version one.
* ``view`` of ``/memories`` listing the 1,000 files, p50 (no baseline: the listing is the service's).

The PostgreSQL server comes from ``COGMEM_TEST_POSTGRES_URL`` (default: the one
``scripts/services.sh`` starts on :5433); each run uses a database of its own, dropped at the end.
"""

from __future__ import annotations

import os
import random
import sqlite3
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cogitator_memory import SQLiteAdapter, unwrap
from cogitator_memory.files import MemoryFiles, MemoryFileVersion
from cogitator_memory.items.records import MemoryScope, scope_key
from cogitator_memory.testing.services import own_database

from .common import Row, percentiles

ADMIN_URL = os.environ.get("COGMEM_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5433/postgres")
T0 = datetime(2026, 1, 1, tzinfo=UTC)
SCOPE = MemoryScope(agent_id="bench", user_id="ana")
KEY = scope_key(SCOPE)
ACCESS = {"scope": SCOPE}
FILLER = "Preferences noted over several conversations, kept for the next session. " * 4


def _text(f: int, version: int, edits: int = 0) -> str:
    return f"# Note {f}\nversion {version}\nedits: {edits}\n{FILLER}\n"


def _versions(prefix: str, files: int, versions: int, start: int = 0) -> list[list[MemoryFileVersion]]:
    """Batches of versions (one batch per sequence, so no batch holds a path twice)."""
    batches = []
    for s in range(1, versions + 1):
        batch = []
        for f in range(files):
            n = start + f
            batch.append(
                MemoryFileVersion(
                    id=f"file_{prefix.strip('/').replace('/', '_')}_{n:05d}_{s:04d}",
                    scope=SCOPE,
                    path=f"{prefix}/note{n:05d}.md",
                    sequence=s,
                    content=_text(n, s),
                    previous_id=None if s == 1 else f"file_{prefix.strip('/').replace('/', '_')}_{n:05d}_{s - 1:04d}",
                    author="model",
                    created_at=T0 + timedelta(seconds=s, microseconds=n),
                )
            )
        batches.append(batch)
    return batches


async def _fill(store: Any, batches: list[list[MemoryFileVersion]]) -> None:
    for batch in batches:
        for i in range(0, len(batch), 1000):
            unwrap(await store.add_file_versions(batch[i : i + 1000]))


async def _timed(fn: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await fn()
    return time.perf_counter() - start


def _ms(samples: list[float]) -> tuple[float, float]:
    p50, p95 = percentiles(samples)
    return p50 * 1000, p95 * 1000


class _Edits:
    """The next ``str_replace`` of each file: ``edits: k`` becomes ``edits: k+1``."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}

    def command(self, path: str) -> dict[str, Any]:
        k = self.count.get(path, 0)
        self.count[path] = k + 1
        return {"command": "str_replace", "path": path, "old_str": f"edits: {k}", "new_str": f"edits: {k + 1}"}


# --- raw drivers ------------------------------------------------------------------------------


class _RawSQLite:
    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.db.execute("PRAGMA synchronous=NORMAL")  # as the store's own connection
        self.n = 0

    def view(self, path: str) -> Any:
        return self.db.execute(
            "SELECT content, body FROM memory_file_versions WHERE scope_key = ? AND path = ? AND head = 1", (KEY, path)
        ).fetchone()

    def replace(self, path: str) -> None:
        self.n += 1
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        row = db.execute(
            "SELECT sequence, content, body FROM memory_file_versions WHERE scope_key = ? AND path = ? AND head = 1",
            (KEY, path),
        ).fetchone()
        db.execute(
            "UPDATE memory_file_versions SET head = 0 WHERE scope_key = ? AND path = ? AND head = 1", (KEY, path)
        )
        db.execute(
            "INSERT INTO memory_file_versions (id, agent_id, user_id, scope_key, path, sequence, head, created_us,"
            " content, body) VALUES (?, 'bench', 'ana', ?, ?, ?, 1, 0, ?, ?)",
            (f"file_raw_{self.n}", KEY, path, row[0] + 1, row[1], row[2]),
        )
        db.execute("COMMIT")


# --- one engine -------------------------------------------------------------------------------


async def _engine(
    name: str,
    store: Any,
    raw_view: Callable[[str], Awaitable[Any]],
    raw_replace: Callable[[str], Awaitable[Any]],
    files_count: int,
    flat_files: int,
    repeat: int,
) -> list[Row]:
    files = MemoryFiles(adapter=store)
    rng = random.Random(7)
    await _fill(store, _versions("/memories/notes", files_count, 10))
    await _fill(store, _versions("/memories/raw", files_count, 10))  # what the raw writes change
    await _fill(store, _versions("/memories/one", flat_files, 1))
    await _fill(store, _versions("/memories/hundred", flat_files, 100))
    edits = _Edits()
    samples: dict[str, list[float]] = {k: [] for k in ("view", "raw view", "replace", "raw replace")}
    for _ in range(repeat):
        path = f"/memories/notes/note{rng.randrange(files_count):05d}.md"
        samples["view"].append(await _timed(lambda p=path: files.run(ACCESS, {"command": "view", "path": p})))
        samples["raw view"].append(await _timed(lambda p=path: raw_view(p)))
        path = f"/memories/notes/note{rng.randrange(files_count):05d}.md"
        samples["replace"].append(await _timed(lambda p=path: files.run(ACCESS, edits.command(p))))
        path = f"/memories/raw/note{rng.randrange(files_count):05d}.md"
        samples["raw replace"].append(await _timed(lambda p=path: raw_replace(p)))
    flat: dict[str, list[float]] = {k: [] for k in ("view 1", "view 100", "replace 1", "replace 100")}
    for _ in range(repeat):
        f = rng.randrange(flat_files)
        for depth, folder in (("1", "one"), ("100", "hundred")):
            path = f"/memories/{folder}/note{f:05d}.md"
            flat[f"view {depth}"].append(await _timed(lambda p=path: files.run(ACCESS, {"command": "view", "path": p})))
            flat[f"replace {depth}"].append(await _timed(lambda p=path: files.run(ACCESS, edits.command(p))))
    listing = [
        await _timed(lambda: files.run(ACCESS, {"command": "view", "path": "/memories/notes"}))
        for _ in range(max(5, repeat // 20))
    ]

    rows: list[Row] = []
    shape = f"{files_count:,} files x 10 versions"
    for label, ours, raw, what in (
        ("view of a file", "view", "raw view", "select the head row"),
        ("str_replace", "replace", "raw replace", "read head, clear flag, insert next, 1 tx"),
    ):
        p50, p95 = _ms(samples[ours])
        raw50, raw95 = _ms(samples[raw])
        rows.append(
            Row(
                "memory files",
                f"{name}, {label} ({shape}), p50 ms",
                p50,
                "ms",
                raw50,
                f"raw driver: {what}",
                p50 / raw50,
                extra={"p95_ms": p95, "raw_p95_ms": raw95},
            )
        )
        rows.append(
            Row(
                "memory files",
                f"{name}, {label} ({shape}), p95 ms",
                p95,
                "ms",
                raw95,
                f"raw driver: {what}",
                p95 / raw95,
            )
        )
    for label, key in (("view of a file", "view"), ("str_replace", "replace")):
        one, _ = _ms(flat[f"{key} 1"])
        hundred, p95 = _ms(flat[f"{key} 100"])
        rows.append(
            Row(
                "memory files",
                f"{name}, {label}, a file of 100 versions, p50 ms",
                hundred,
                "ms",
                one,
                "the same on a file of 1 version, same run",
                hundred / one,
                "<= 1.5x (heads never read history)",
                hundred / one <= 1.5,
                {"p95_ms": p95, "files": flat_files},
            )
        )
    p50, p95 = _ms(listing)
    rows.append(
        Row(
            "memory files",
            f"{name}, view of a directory of {files_count:,} files, p50 ms",
            p50,
            "ms",
            extra={"p95_ms": p95},
        )
    )
    return rows


async def _sqlite(folder: Path, files_count: int, flat_files: int, repeat: int) -> list[Row]:
    path = str(folder / "files.db")
    async with SQLiteAdapter(path=path) as store:
        raw = _RawSQLite(path)

        async def raw_view(p: str) -> Any:
            return raw.view(p)

        async def raw_replace(p: str) -> None:
            raw.replace(p)

        try:
            return await _engine("SQLite", store, raw_view, raw_replace, files_count, flat_files, repeat)
        finally:
            raw.db.close()


async def _postgres(files_count: int, flat_files: int, repeat: int) -> list[Row]:
    import psycopg

    from cogitator_memory.engines.postgres.adapter import PostgresAdapter

    with own_database(ADMIN_URL, "cogmem_bench_files") as url:
        async with (
            PostgresAdapter(url=url, schema="bench", dimensions=8) as store,
            await psycopg.AsyncConnection.connect(url, autocommit=True) as conn,
        ):
            table = '"bench".memory_file_versions'
            counter = iter(range(10**9))

            async def raw_view(p: str) -> Any:
                cur = await conn.execute(
                    f"SELECT content, body FROM {table} WHERE scope_key = %s AND path = %s AND head", (KEY, p)
                )
                return await cur.fetchone()

            async def raw_replace(p: str) -> None:
                async with conn.transaction():
                    cur = await conn.execute(
                        f"SELECT sequence, content, body FROM {table} WHERE scope_key = %s AND path = %s AND head"
                        " FOR UPDATE",
                        (KEY, p),
                    )
                    row = await cur.fetchone()
                    assert row is not None
                    await conn.execute(
                        f"UPDATE {table} SET head = false WHERE scope_key = %s AND path = %s AND head", (KEY, p)
                    )
                    await conn.execute(
                        f"INSERT INTO {table} (id, agent_id, user_id, scope_key, path, sequence, head, created_at,"
                        " content, body) VALUES (%s, 'bench', 'ana', %s, %s, %s, true, now(), %s, %s)",
                        (f"file_raw_{next(counter)}", KEY, p, row[0] + 1, row[1], row[2]),
                    )

            return await _engine("PostgreSQL", store, raw_view, raw_replace, files_count, flat_files, repeat)


async def run(quick: bool) -> list[Row]:
    files_count = 200 if quick else 1_000
    flat_files = 50 if quick else 200
    repeat = 100 if quick else 400
    with tempfile.TemporaryDirectory() as folder:
        rows = await _sqlite(Path(folder), files_count, flat_files, repeat)
    try:
        rows += await _postgres(files_count, flat_files, repeat)
    except Exception as exc:  # no server: say so in the table rather than fail the whole run
        rows.append(Row("memory files", f"PostgreSQL skipped: {type(exc).__name__}: {exc}", 0, "-"))
    return rows
