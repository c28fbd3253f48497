"""``SQLiteAdapter``: the embedded default store, on the standard library's ``sqlite3``.

One file (or ``:memory:``) holds threads and entries. WAL mode by default, so readers never
wait for the writer and a committed write survives a killed process. Every write is one
``BEGIN IMMEDIATE`` transaction, so processes sharing the file stay consistent; the schema
version is ``PRAGMA user_version``, moved forward by the named migrations of
:mod:`cogitator_memory.engines.sqlite.schema`.

Calls run on the event loop's thread: SQLite answers these queries in microseconds, and a
thread hop per call would cost more than the query. A write waiting for another process's
lock waits up to ``busy_timeout`` (default 5 s) and then fails.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from ...clock import from_micros, to_micros
from ...errors import (
    ConflictError,
    InvalidArgumentError,
    MemoryStoreError,
    NotConnectedError,
    NotFoundError,
    StoreUnavailableError,
)
from ...result import MemoryResult, ok
from ...threads import tree
from ...threads.base import BaseMemoryAdapter
from ...threads.damage import broken_branch
from ...threads.records import MemoryEntry, NewMemoryEntry, Thread
from ...threads.tree import build_entry, with_fork_listed
from .db import ReadConnection, has_own_readers, normalize_path, open_database, write_transaction
from .files import SQLiteFiles
from .graph import SQLiteGraph
from .items import SQLiteItems
from .recall import SQLiteRecallIndex
from .schema import USER_ID_EXPR, USERS_LISTED_EXPR

T = TypeVar("T")

DEFAULT_PATH = "cogitator-memory.db"

_THREAD_COLUMNS = "id, agent_id, metadata, created_at, updated_at, active_leaf_id"
#: The indexed expression of a thread's ``metadata["user_id"]`` and the threads listing users.
_USER_EXPR = USER_ID_EXPR
_USERS_LISTED = USERS_LISTED_EXPR


def _thread_from_row(row: Sequence[Any]) -> Thread:
    return Thread(
        id=row[0],
        agent_id=row[1],
        metadata=json.loads(row[2]),
        created_at=from_micros(row[3]),
        updated_at=from_micros(row[4]),
        active_leaf_id=row[5],
    )


def _entry(body: str) -> MemoryEntry:
    return MemoryEntry.model_validate_json(body)


def _types_clause(types: frozenset[str] | None, column: str = "type") -> tuple[str, list[Any]]:
    if types is None:
        return "", []
    ordered = sorted(types)
    return f" AND {column} IN ({','.join('?' * len(ordered))})", list(ordered)


class SQLiteAdapter(SQLiteRecallIndex, SQLiteFiles, SQLiteGraph, SQLiteItems, BaseMemoryAdapter):
    """A thread store in a SQLite file (or ``:memory:``).

    ``path`` is created with its parent folders; ``wal_mode`` (default on) uses write-ahead
    logging; ``busy_timeout`` is how long a write waits for another process's lock, in seconds.
    The connection can be shared with other stores of the same file through :attr:`connection`.
    """

    provider: ClassVar[str] = "sqlite"

    def __init__(
        self,
        *,
        path: str | Path = DEFAULT_PATH,
        wal_mode: bool = True,
        busy_timeout: float = 5.0,
        provider: str | None = None,
    ) -> None:
        super().__init__()
        if provider not in (None, "sqlite"):
            raise InvalidArgumentError("provider", f"must be 'sqlite', got {provider!r}")
        if not isinstance(path, str | Path) or not str(path):
            raise InvalidArgumentError("path", "must be a file path or ':memory:'")
        if isinstance(busy_timeout, bool) or not isinstance(busy_timeout, int | float) or busy_timeout < 0:
            raise InvalidArgumentError("busy_timeout", f"must be a number of seconds >= 0, got {busy_timeout!r}")
        self.path = normalize_path(path)
        self.wal_mode = bool(wal_mode)
        self.busy_timeout = float(busy_timeout)
        self._db: sqlite3.Connection | None = None
        self._reader: ReadConnection | None = None

    # ----- lifecycle -----------------------------------------------------------------------

    @property
    def connection(self) -> sqlite3.Connection:
        """The open ``sqlite3`` connection (for stores that share the file)."""
        if self._db is None:
            raise NotConnectedError("sqlite store is not connected: call connect() first")
        return self._db

    @property
    def schema_version(self) -> int:
        """The file's ``PRAGMA user_version``."""
        return int(self.connection.execute("PRAGMA user_version").fetchone()[0])

    async def _connect(self) -> None:
        self._db = open_database(self.path, wal_mode=self.wal_mode, busy_timeout=self.busy_timeout)
        if has_own_readers(self.path, self.wal_mode):
            self._reader = ReadConnection(self.path, self.busy_timeout)

    async def _disconnect(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()
        db, self._db = self._db, None
        if db is not None:
            db.close()

    async def _search_read(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)`` for a search's reads: on the store's :class:`ReadConnection` (off
        the event loop) when the file has one, else here on :attr:`connection`."""
        reader = self._reader
        if reader is None:
            return work(self.connection)
        return await reader.run(work)

    async def _ping(self) -> None:
        self.connection.execute("SELECT 1").fetchone()

    def _map_error(self, operation: str, exc: Exception) -> MemoryStoreError:
        if isinstance(exc, sqlite3.IntegrityError):
            return ConflictError(f"sqlite {operation}: {exc}")
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return StoreUnavailableError(
                f"sqlite {operation}: the database stayed locked by another connection for "
                f"{self.busy_timeout:g}s ({exc})"
            )
        return StoreUnavailableError(f"sqlite {operation} failed on {self.path}: {type(exc).__name__}: {exc}")

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction: committed when the block ends, rolled back when it raises."""
        return write_transaction(self.connection)

    # ----- threads -------------------------------------------------------------------------

    async def _upsert_thread(self, thread_id: str, agent_id: str, metadata: dict[str, Any], now: datetime) -> Thread:
        with self._write() as db:
            row = db.execute("SELECT metadata FROM threads WHERE id = ?", (thread_id,)).fetchone()
            stamp = to_micros(now)
            if row is None:
                db.execute(
                    "INSERT INTO threads (id, agent_id, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
                    (thread_id, agent_id, json.dumps(metadata), stamp, stamp),
                )
            else:
                merged = {**json.loads(row[0]), **metadata}
                db.execute(
                    "UPDATE threads SET metadata = ?, updated_at = ? WHERE id = ?",
                    (json.dumps(merged), stamp, thread_id),
                )
            return self._read_thread(db, thread_id)

    def _read_thread(self, db: sqlite3.Connection, thread_id: str) -> Thread:
        row = db.execute(f"SELECT {_THREAD_COLUMNS} FROM threads WHERE id = ?", (thread_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"thread not found: {thread_id}")
        return _thread_from_row(row)

    async def _get_thread(self, thread_id: str) -> Thread | None:
        row = self.connection.execute(f"SELECT {_THREAD_COLUMNS} FROM threads WHERE id = ?", (thread_id,)).fetchone()
        return None if row is None else _thread_from_row(row)

    async def _update_thread(
        self, thread_id: str, metadata: dict[str, Any], replace: bool, now: datetime
    ) -> Thread | None:
        with self._write() as db:
            row = db.execute("SELECT metadata FROM threads WHERE id = ?", (thread_id,)).fetchone()
            if row is None:
                return None
            merged = metadata if replace else {**json.loads(row[0]), **metadata}
            db.execute(
                "UPDATE threads SET metadata = ?, updated_at = ? WHERE id = ?",
                (json.dumps(merged), to_micros(now), thread_id),
            )
            return self._read_thread(db, thread_id)

    async def _delete_thread(self, thread_id: str) -> bool:
        with self._write() as db:
            db.execute("DELETE FROM entries WHERE thread_id = ?", (thread_id,))
            return db.execute("DELETE FROM threads WHERE id = ?", (thread_id,)).rowcount > 0

    async def _scan_threads(
        self,
        *,
        agent_id: str | None,
        updated_after: datetime | None,
        updated_before: datetime | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Thread]:
        where: list[str] = []
        args: list[Any] = []
        if agent_id is not None:
            where.append("agent_id = ?")
            args.append(agent_id)
        if updated_after is not None:
            where.append("updated_at > ?")
            args.append(to_micros(updated_after))
        if updated_before is not None:
            where.append("updated_at < ?")
            args.append(to_micros(updated_before))
        if after is not None:
            where.append("(updated_at < ? OR (updated_at = ? AND id < ?))")
            args.extend([after[0], after[0], after[1]])
        sql = f"SELECT {_THREAD_COLUMNS} FROM threads"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated_at DESC, id DESC LIMIT ?"
        args.append(limit)
        return [_thread_from_row(row) for row in self.connection.execute(sql, args)]

    async def threads_of_user(self, user_id: str) -> MemoryResult[list[Thread]]:
        """Every thread whose metadata ``user_id`` is the user or whose ``memory_user_ids`` lists
        them (what a user's erasure deletes), read through two indexes (migration m007: one on the
        metadata's ``user_id``, one over the threads that list users) instead of every thread."""
        try:
            self._require_connected()
            user = tree.check_id("user_id", user_id)
            sql = (
                f"SELECT {_THREAD_COLUMNS} FROM threads WHERE {_USER_EXPR} = ? UNION "
                f"SELECT {_THREAD_COLUMNS} FROM threads WHERE {_USERS_LISTED} AND EXISTS "
                "(SELECT 1 FROM json_each(metadata, '$.memory_user_ids') WHERE value = ?)"
            )
            return ok([_thread_from_row(row) for row in self.connection.execute(sql, (user, user))])
        except Exception as exc:
            return self._fail("threads_of_user", exc)

    # ----- entries -------------------------------------------------------------------------

    async def _add_entry(
        self, entry: NewMemoryEntry, entry_id: str, token_count: int | None, now: datetime
    ) -> MemoryEntry:
        token_count = tree.counted(entry, token_count)
        with self._write() as db:
            row = db.execute("SELECT active_leaf_id, next_seq FROM threads WHERE id = ?", (entry.thread_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"thread not found: {entry.thread_id}")
            leaf, seq = row
            parent = entry.parent_id
            if parent is None:
                parent = None if entry.root else leaf
            else:
                owner = db.execute("SELECT thread_id FROM entries WHERE id = ?", (parent,)).fetchone()
                if owner is None:
                    raise NotFoundError(f"parent entry not found: {parent}")
                if owner[0] != entry.thread_id:
                    raise ConflictError(f"parent {parent} is an entry of another thread, not of {entry.thread_id}")
            created = build_entry(entry, entry_id, parent, seq, token_count, now)
            body = created.model_dump_json(exclude_none=True)
            db.execute(
                "INSERT INTO entries (id, thread_id, parent_id, seq, type, created_at, body) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (entry_id, entry.thread_id, parent, seq, entry.type, to_micros(now), body),
            )
            if entry.activate:
                db.execute(
                    "UPDATE threads SET next_seq = ?, active_leaf_id = ? WHERE id = ?",
                    (seq + 1, entry_id, entry.thread_id),
                )
            else:
                db.execute("UPDATE threads SET next_seq = ? WHERE id = ?", (seq + 1, entry.thread_id))
        return created

    async def _get_entries(
        self,
        thread_id: str,
        *,
        limit: int,
        before: datetime | None,
        after: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        db = self.connection
        type_sql, args = _types_clause(types)
        sql = "SELECT body FROM entries WHERE thread_id = ?" + type_sql
        params: list[Any] = [thread_id, *args]
        if after is not None:
            sql += " AND created_at > ?"
            params.append(to_micros(after))
        if before is not None:
            sql += " AND created_at < ?"
            params.append(to_micros(before))
        if limit:
            sql += " ORDER BY seq DESC LIMIT ?"
            params.append(limit)
        else:
            sql += " ORDER BY seq"
        rows = db.execute(sql, params).fetchall()
        if not rows and db.execute("SELECT 1 FROM threads WHERE id = ?", (thread_id,)).fetchone() is None:
            return None
        if limit:
            rows.reverse()
        return [_entry(row[0]) for row in rows]

    async def _get_entry(self, entry_id: str) -> MemoryEntry | None:
        row = self.connection.execute("SELECT body FROM entries WHERE id = ?", (entry_id,)).fetchone()
        return None if row is None else _entry(row[0])

    async def _delete_entry(self, entry_id: str) -> MemoryEntry | None:
        with self._write() as db:
            row = db.execute("SELECT thread_id, parent_id, body FROM entries WHERE id = ?", (entry_id,)).fetchone()
            if row is None:
                return None
            thread_id, parent, body = row
            if parent is None:
                db.execute(
                    "UPDATE entries SET parent_id = NULL, body = json_remove(body, '$.parent_id') WHERE parent_id = ?",
                    (entry_id,),
                )
            else:
                db.execute(
                    "UPDATE entries SET parent_id = ?, body = json_set(body, '$.parent_id', ?) WHERE parent_id = ?",
                    (parent, parent, entry_id),
                )
            db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
            db.execute(
                "UPDATE threads SET active_leaf_id = ? WHERE id = ? AND active_leaf_id = ?",
                (parent, thread_id, entry_id),
            )
        return _entry(body)

    async def _clear_thread(self, thread_id: str) -> bool:
        with self._write() as db:
            if db.execute("UPDATE threads SET active_leaf_id = NULL WHERE id = ?", (thread_id,)).rowcount == 0:
                return False
            db.execute("DELETE FROM entries WHERE thread_id = ?", (thread_id,))
            return True

    # ----- trees ---------------------------------------------------------------------------

    async def _get_path(
        self,
        thread_id: str,
        leaf_id: str | None,
        *,
        limit: int,
        before: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        db = self.connection
        if leaf_id is None:
            row = db.execute("SELECT active_leaf_id FROM threads WHERE id = ?", (thread_id,)).fetchone()
            if row is None:
                return None
            leaf_id = row[0]
            if leaf_id is None:
                return []
        else:
            owner = db.execute("SELECT thread_id FROM entries WHERE id = ?", (leaf_id,)).fetchone()
            if owner is None or owner[0] != thread_id:
                if db.execute("SELECT 1 FROM threads WHERE id = ?", (thread_id,)).fetchone() is None:
                    return None
                raise NotFoundError(f"entry {leaf_id} is not an entry of thread {thread_id}")
        type_sql, args = _types_clause(types)
        # The walk stops after as many steps as the thread has seq numbers: a healthy branch
        # is shorter, so reaching that depth means its parent links loop (see threads/damage.py).
        sql = (
            "WITH RECURSIVE bound(most) AS (SELECT coalesce(max(seq), 0) + 1 FROM entries WHERE thread_id = ?),"
            " path(id, parent_id, type, created_at, body, depth) AS ("
            " SELECT id, parent_id, type, created_at, body, 1 FROM entries WHERE id = ?"
            " UNION ALL"
            " SELECT e.id, e.parent_id, e.type, e.created_at, e.body, p.depth + 1 FROM entries e"
            " JOIN path p ON e.id = p.parent_id WHERE p.depth < (SELECT most FROM bound)"
            ") SELECT body, depth >= (SELECT most FROM bound), depth FROM path WHERE (1" + type_sql
        )
        params: list[Any] = [thread_id, leaf_id, *args]
        if before is not None:
            sql += " AND created_at < ?"
            params.append(to_micros(before))
        sql += ") OR depth >= (SELECT most FROM bound)"
        if limit:
            sql += " LIMIT ?"
            params.append(limit)
        rows = db.execute(sql, params).fetchall()
        if rows and rows[-1][1]:
            raise broken_branch("sqlite get_path", thread_id, leaf_id, rows[-1][2])
        rows.reverse()
        return [_entry(row[0]) for row in rows]

    async def _set_active_leaf(self, thread_id: str, entry_id: str, *, on_active_path: bool, now: datetime) -> Thread:
        with self._write() as db:
            row = db.execute("SELECT active_leaf_id FROM threads WHERE id = ?", (thread_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"thread not found: {thread_id}")
            owner = db.execute("SELECT thread_id FROM entries WHERE id = ?", (entry_id,)).fetchone()
            if owner is None or owner[0] != thread_id:
                raise NotFoundError(f"entry {entry_id} is not an entry of thread {thread_id}")
            if on_active_path and not self._is_ancestor(db, thread_id, entry_id, row[0]):
                raise ConflictError(f"entry {entry_id} is not on the active branch of {thread_id}: use checkout()")
            db.execute("UPDATE threads SET active_leaf_id = ? WHERE id = ?", (entry_id, thread_id))
            return self._read_thread(db, thread_id)

    @staticmethod
    def _is_ancestor(db: sqlite3.Connection, thread_id: str, entry_id: str, leaf_id: str | None) -> bool:
        """Whether ``entry_id`` is on the branch of ``leaf_id``; a walk as bounded as :meth:`_get_path`'s."""
        if leaf_id is None:
            return False
        found = db.execute(
            "WITH RECURSIVE bound(most) AS (SELECT coalesce(max(seq), 0) + 1 FROM entries WHERE thread_id = ?),"
            " up(id, parent_id, depth) AS ("
            " SELECT id, parent_id, 1 FROM entries WHERE id = ?"
            " UNION ALL SELECT e.id, e.parent_id, up.depth + 1 FROM entries e JOIN up ON e.id = up.parent_id"
            " WHERE up.depth < (SELECT most FROM bound)"
            ") SELECT id = ?, depth FROM up WHERE id = ? OR depth >= (SELECT most FROM bound) LIMIT 1",
            (thread_id, leaf_id, entry_id, entry_id),
        ).fetchone()
        if found is None:
            return False
        if not found[0]:
            raise broken_branch("sqlite rewind", thread_id, leaf_id, found[1])
        return True

    async def _replace_entry(self, entry: MemoryEntry) -> None:
        with self._write() as db:
            changed = db.execute(
                "UPDATE entries SET body = ? WHERE id = ?",
                (entry.model_dump_json(exclude_none=True), entry.id),
            ).rowcount
            if changed == 0:
                raise NotFoundError(f"entry not found: {entry.id}")

    async def _write_fork(self, origin_id: str, fork: Thread, entries: list[MemoryEntry], now: datetime) -> Thread:
        with self._write() as db:
            row = db.execute("SELECT metadata FROM threads WHERE id = ?", (origin_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"thread not found: {origin_id}")
            if db.execute("SELECT 1 FROM threads WHERE id = ?", (fork.id,)).fetchone() is not None:
                raise ConflictError(f"thread {fork.id} already exists")
            stamp = to_micros(now)
            db.execute(
                "INSERT INTO threads (id, agent_id, metadata, created_at, updated_at, active_leaf_id, next_seq)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    fork.id,
                    fork.agent_id,
                    json.dumps(fork.metadata),
                    stamp,
                    stamp,
                    fork.active_leaf_id,
                    len(entries) + 1,
                ),
            )
            db.executemany(
                "INSERT INTO entries (id, thread_id, parent_id, seq, type, created_at, body) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        e.id,
                        e.thread_id,
                        e.parent_id,
                        e.seq,
                        e.type,
                        to_micros(e.created_at),
                        e.model_dump_json(exclude_none=True),
                    )
                    for e in entries
                ],
            )
            origin_meta = with_fork_listed(json.loads(row[0]), fork.id)
            db.execute(
                "UPDATE threads SET metadata = ?, updated_at = ? WHERE id = ?",
                (json.dumps(origin_meta), stamp, origin_id),
            )
            return self._read_thread(db, fork.id)


__all__ = ["DEFAULT_PATH", "SQLiteAdapter"]
