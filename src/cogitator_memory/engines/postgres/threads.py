"""The thread store in PostgreSQL: the primitives of
:class:`~cogitator_memory.threads.base.BaseMemoryAdapter` as SQL, mixed into
:class:`~cogitator_memory.engines.postgres.adapter.PostgresAdapter`.

A thread is a row of ``threads`` (metadata as jsonb); an entry a row of ``entries`` whose indexed
columns (id, thread, parent, seq, type, time) sit beside one jsonb column ``content`` holding the
message, tool calls, tool results, metadata and event. Writes to a thread's tree first lock the
thread's row (``FOR UPDATE``), so concurrent writers of one thread queue up and always leave a
valid tree. ``get_path`` walks parent links up from the leaf with a recursive query that stops at
``limit``, so its cost follows the branch, not the thread.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ...errors import (
    ConflictError,
    NotFoundError,
    StoreUnavailableError,
)
from ...result import MemoryResult, ok
from ...threads import tree
from ...threads.damage import broken_branch
from ...threads.records import MemoryEntry, NewMemoryEntry, Thread
from ...threads.tree import with_fork_listed
from .schema import THREAD_COLUMNS, ThreadSql

if TYPE_CHECKING:
    from psycopg import AsyncConnection


T = TypeVar("T")

#: Fields of an entry kept in its ``content`` jsonb column (the rest are columns).
CONTENT_FIELDS = frozenset({"message", "token_count", "type", "event", "metadata", "tool_calls", "tool_results"})


def thread_from_row(row: Sequence[Any]) -> Thread:
    """A :class:`Thread` from a row of ``threads`` (columns in ``THREAD_COLUMNS`` order)."""
    return Thread(
        id=row[0],
        agent_id=row[1],
        metadata=row[2],
        created_at=row[3],
        updated_at=row[4],
        active_leaf_id=row[5],
    )


def entry_from_row(row: Sequence[Any]) -> MemoryEntry:
    """A :class:`MemoryEntry` from a row of ``entries`` (columns in ``ENTRY_COLUMNS`` order)."""
    data = dict(row[5])
    data["id"] = row[0]
    data["thread_id"] = row[1]
    data["parent_id"] = row[2]
    data["seq"] = row[3]
    data["created_at"] = row[4]
    return MemoryEntry.model_validate(data)


def entry_content(entry: MemoryEntry | NewMemoryEntry, token_count: int | None = None) -> dict[str, Any]:
    """What an entry keeps in its ``content`` column, JSON-ready."""
    content = entry.model_dump(mode="json", include=set(CONTENT_FIELDS), exclude_none=True)
    if token_count is not None:
        content["token_count"] = token_count
    return content


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


#: Most entries one coalesced read asks for in one statement.
ENTRY_READ_BATCH = 1000


class EntryReads:
    """Single-entry reads asked in the same turn of the event loop, made as one statement.

    A search reads the 20-50 turns it returns with concurrent ``get_entry`` calls (one pooled
    connection and one round trip each); here the calls of one turn of the loop wait together,
    and one ``WHERE id = ANY(...)`` answers them all (in chunks of :data:`ENTRY_READ_BATCH`). A
    call alone costs one pass of the loop more. A failed read fails every call of its batch.
    """

    def __init__(self, read: Callable[[list[str]], Awaitable[dict[str, MemoryEntry]]]) -> None:
        self._read = read
        self._waiting: dict[str, list[asyncio.Future[MemoryEntry | None]]] = {}
        self._scheduled = False
        self._running: set[asyncio.Task[None]] = set()

    async def get(self, entry_id: str) -> MemoryEntry | None:
        """The entry (``None`` when there is none), read with the other calls of this turn."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[MemoryEntry | None] = loop.create_future()
        self._waiting.setdefault(entry_id, []).append(future)
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._start)
        return await future

    def _start(self) -> None:
        waiting, self._waiting = self._waiting, {}
        self._scheduled = False
        task = asyncio.ensure_future(self._answer(waiting))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _answer(self, waiting: dict[str, list[asyncio.Future[MemoryEntry | None]]]) -> None:
        ids = list(waiting)
        found: dict[str, MemoryEntry] = {}
        try:
            for start in range(0, len(ids), ENTRY_READ_BATCH):
                found.update(await self._read(ids[start : start + ENTRY_READ_BATCH]))
        except BaseException as exc:
            for futures in waiting.values():
                for future in futures:
                    if not future.done():
                        future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        for entry_id, futures in waiting.items():
            for future in futures:
                if not future.done():
                    future.set_result(found.get(entry_id))


class PostgresThreads:
    """The thread half of :class:`~cogitator_memory.engines.postgres.adapter.PostgresAdapter`: it
    runs its SQL through the adapter's ``run`` (a pooled connection within its deadline)."""

    if TYPE_CHECKING:
        _sql: ThreadSql
        _entry_reads: EntryReads

        def _require_connected(self) -> None: ...
        def _fail(self, operation: str, exc: Exception) -> MemoryResult[Any]: ...

        async def run(
            self, operation: Callable[[AsyncConnection[Any]], Awaitable[T]], *, timeout: float | None = None
        ) -> T: ...

    # ----- threads -------------------------------------------------------------------------

    async def _upsert_thread(self, thread_id: str, agent_id: str, metadata: dict[str, Any], now: datetime) -> Thread:
        async def op(conn: AsyncConnection[Any]) -> Thread:
            cur = await conn.execute(self._sql.upsert_thread, (thread_id, agent_id, _dumps(metadata), now, now))
            row = await cur.fetchone()
            assert row is not None
            return thread_from_row(row)

        return await self.run(op)

    async def _get_thread(self, thread_id: str) -> Thread | None:
        async def op(conn: AsyncConnection[Any]) -> Thread | None:
            cur = await conn.execute(self._sql.get_thread, (thread_id,))
            row = await cur.fetchone()
            return None if row is None else thread_from_row(row)

        return await self.run(op)

    async def _update_thread(
        self, thread_id: str, metadata: dict[str, Any], replace: bool, now: datetime
    ) -> Thread | None:
        body = _dumps(metadata)

        async def op(conn: AsyncConnection[Any]) -> Thread | None:
            cur = await conn.execute(self._sql.update_thread, (replace, body, body, now, thread_id))
            row = await cur.fetchone()
            return None if row is None else thread_from_row(row)

        return await self.run(op)

    async def _delete_thread(self, thread_id: str) -> bool:
        return await self._drop_entries(thread_id, self._sql.delete_thread)

    async def _scan_threads(
        self,
        *,
        agent_id: str | None,
        updated_after: datetime | None,
        updated_before: datetime | None,
        after: tuple[int, str] | None,
        limit: int,
    ) -> list[Thread]:
        from ...clock import from_micros

        params: dict[str, Any] = {
            "agent": agent_id,
            "updated_after": updated_after,
            "updated_before": updated_before,
            "limit": limit,
        }
        if after is not None:
            params["cursor_t"] = from_micros(after[0])
            params["cursor_id"] = after[1]
        sql = self._sql.scan_threads(
            agent=agent_id is not None,
            after_t=updated_after is not None,
            before_t=updated_before is not None,
            cursor=after is not None,
        )

        async def op(conn: AsyncConnection[Any]) -> list[Thread]:
            cur = await conn.execute(sql, params)
            return [thread_from_row(row) for row in await cur.fetchall()]

        return await self.run(op)

    async def threads_of_user(self, user_id: str) -> MemoryResult[list[Thread]]:
        """Every thread whose metadata ``user_id`` is the user or whose ``memory_user_ids`` lists
        them (what a user's erasure deletes), read through two indexes (migration m006: a b-tree
        on the metadata's ``user_id``, a GIN index on ``memory_user_ids``) instead of every thread."""
        try:
            self._require_connected()
            user = tree.check_id("user_id", user_id)
            table = self._sql.threads

            async def op(conn: AsyncConnection[Any]) -> list[Thread]:
                cur = await conn.execute(
                    f"SELECT {THREAD_COLUMNS} FROM {table} WHERE metadata->>'user_id' = %s "
                    f"UNION SELECT {THREAD_COLUMNS} FROM {table} WHERE metadata->'memory_user_ids' @> %s::jsonb",
                    (user, json.dumps([user])),
                )
                return [thread_from_row(row) for row in await cur.fetchall()]

            return ok(await self.run(op))
        except Exception as exc:
            return self._fail("threads_of_user", exc)

    # ----- entries -------------------------------------------------------------------------

    async def _add_entry(
        self, entry: NewMemoryEntry, entry_id: str, token_count: int | None, now: datetime
    ) -> MemoryEntry:
        token_count = tree.counted(entry, token_count)
        content = entry_content(entry, token_count)
        params = {
            "tid": entry.thread_id,
            "parent": entry.parent_id,
            "root": entry.root,
            "id": entry_id,
            "type": entry.type,
            "content": _dumps(content),
            "now": now,
            "activate": entry.activate,
        }

        async def op(conn: AsyncConnection[Any]) -> tuple[Any, ...] | None:
            cur = await conn.execute(self._sql.add_entry, params)
            return await cur.fetchone()

        row = await self.run(op)
        if row is None:
            raise NotFoundError(f"thread not found: {entry.thread_id}")
        parent_id, seq, parent_owner, written = row
        if entry.parent_id is not None:
            if parent_owner is None:
                raise NotFoundError(f"parent entry not found: {entry.parent_id}")
            if parent_owner != entry.thread_id:
                raise ConflictError(f"parent {entry.parent_id} is an entry of another thread, not of {entry.thread_id}")
        if not written:
            raise StoreUnavailableError(f"postgres add_entry: the entry was not written to {entry.thread_id}")
        return entry_from_row((entry_id, entry.thread_id, parent_id, seq, now, content))

    async def _get_entries(
        self,
        thread_id: str,
        *,
        limit: int,
        before: datetime | None,
        after: datetime | None,
        types: frozenset[str] | None,
    ) -> list[MemoryEntry] | None:
        sql = self._sql.entries_of(
            typed=types is not None, after=after is not None, before=before is not None, limited=limit > 0
        )
        params = {
            "tid": thread_id,
            "types": sorted(types) if types is not None else None,
            "after": after,
            "before": before,
            "limit": limit,
        }

        async def op(conn: AsyncConnection[Any]) -> list[MemoryEntry] | None:
            cur = await conn.execute(sql, params)
            rows = await cur.fetchall()
            if not rows:
                cur = await conn.execute(self._sql.thread_exists, (thread_id,))
                if await cur.fetchone() is None:
                    return None
            if limit:
                rows.reverse()
            return [entry_from_row(row) for row in rows]

        return await self.run(op)

    async def _get_entry(self, entry_id: str) -> MemoryEntry | None:
        return await self._entry_reads.get(entry_id)

    async def _entries_by_id(self, ids: list[str]) -> dict[str, MemoryEntry]:
        """The stored entries of ``ids`` (with their tool calls), by id; missing ones left out."""

        async def op(conn: AsyncConnection[Any]) -> dict[str, MemoryEntry]:
            cur = await conn.execute(self._sql.get_entries_by_id, (ids,))
            return {entry.id: entry for entry in map(entry_from_row, await cur.fetchall())}

        return await self.run(op)

    async def _delete_entry(self, entry_id: str) -> MemoryEntry | None:
        async def op(conn: AsyncConnection[Any]) -> MemoryEntry | None:
            async with conn.transaction():
                cur = await conn.execute(self._sql.lock_entry_thread, (entry_id,))
                if await cur.fetchone() is None:
                    return None
                cur = await conn.execute(self._sql.delete_entry, (entry_id,))
                row = await cur.fetchone()
                if row is None:
                    return None
                deleted = entry_from_row(row)
                await conn.execute(self._sql.reparent, (deleted.parent_id, deleted.thread_id, entry_id))
                await conn.execute(self._sql.move_leaf, (deleted.parent_id, deleted.thread_id, entry_id))
                return deleted

        return await self.run(op)

    async def _clear_thread(self, thread_id: str) -> bool:
        return await self._drop_entries(thread_id, self._sql.clear_leaf)

    async def _drop_entries(self, thread_id: str, then: str) -> bool:
        """Delete the thread's entries and run ``then`` on it, under its row lock; whether it exists."""

        async def op(conn: AsyncConnection[Any]) -> bool:
            async with conn.transaction():
                cur = await conn.execute(self._sql.lock_thread, (thread_id,))
                if await cur.fetchone() is None:
                    return False
                await conn.execute(self._sql.delete_entries, (thread_id,))
                await conn.execute(then, (thread_id,))
                return True

        return await self.run(op)

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
        sql = self._sql.path(
            by_leaf=leaf_id is not None, typed=types is not None, before=before is not None, limited=limit > 0
        )
        params = {
            "tid": thread_id,
            "leaf": leaf_id,
            "types": sorted(types) if types is not None else None,
            "before": before,
            "limit": limit,
        }

        async def op(conn: AsyncConnection[Any]) -> list[MemoryEntry] | None:
            cur = await conn.execute(sql, params)
            rows = await cur.fetchall()
            if not rows:
                cur = await conn.execute(self._sql.thread_exists, (thread_id,))
                if await cur.fetchone() is None:
                    return None
                if leaf_id is not None:
                    cur = await conn.execute(self._sql.entry_owner, (leaf_id,))
                    owner = await cur.fetchone()
                    if owner is None or owner[0] != thread_id:
                        raise NotFoundError(f"entry {leaf_id} is not an entry of thread {thread_id}")
            elif rows[-1][6]:
                start = leaf_id
                if start is None:
                    cur = await conn.execute(self._sql.thread_exists, (thread_id,))
                    found = await cur.fetchone()
                    start = found[0] if found is not None else "?"
                raise broken_branch("postgres get_path", thread_id, start, rows[-1][7])
            rows.reverse()
            return [entry_from_row(row) for row in rows]

        return await self.run(op)

    async def _set_active_leaf(self, thread_id: str, entry_id: str, *, on_active_path: bool, now: datetime) -> Thread:
        async def op(conn: AsyncConnection[Any]) -> Thread:
            async with conn.transaction():
                cur = await conn.execute(self._sql.lock_thread, (thread_id,))
                row = await cur.fetchone()
                if row is None:
                    raise NotFoundError(f"thread not found: {thread_id}")
                leaf = row[5]
                cur = await conn.execute(self._sql.entry_owner, (entry_id,))
                owner = await cur.fetchone()
                if owner is None or owner[0] != thread_id:
                    raise NotFoundError(f"entry {entry_id} is not an entry of thread {thread_id}")
                if on_active_path:
                    found = None
                    if leaf is not None:
                        cur = await conn.execute(
                            self._sql.is_ancestor, {"leaf": leaf, "tid": thread_id, "entry": entry_id}
                        )
                        found = await cur.fetchone()
                        if found is not None and not found[0]:
                            raise broken_branch("postgres rewind", thread_id, leaf, found[1])
                    if found is None:
                        raise ConflictError(
                            f"entry {entry_id} is not on the active branch of {thread_id}: use checkout()"
                        )
                cur = await conn.execute(self._sql.set_leaf, (entry_id, thread_id))
                updated = await cur.fetchone()
                assert updated is not None
                return thread_from_row(updated)

        return await self.run(op)

    async def _replace_entry(self, entry: MemoryEntry) -> None:
        body = _dumps(entry_content(entry))

        async def op(conn: AsyncConnection[Any]) -> int:
            cur = await conn.execute(self._sql.replace_entry, (body, entry.id))
            return cur.rowcount

        if await self.run(op) == 0:
            raise NotFoundError(f"entry not found: {entry.id}")

    async def _write_fork(self, origin_id: str, fork: Thread, entries: list[MemoryEntry], now: datetime) -> Thread:
        rows = [
            (e.id, e.thread_id, e.parent_id, e.seq, e.type, _dumps(entry_content(e)), e.created_at) for e in entries
        ]

        async def op(conn: AsyncConnection[Any]) -> Thread:
            async with conn.transaction():
                cur = await conn.execute(self._sql.lock_thread, (origin_id,))
                origin = await cur.fetchone()
                if origin is None:
                    raise NotFoundError(f"thread not found: {origin_id}")
                cur = await conn.execute(
                    self._sql.insert_fork,
                    (
                        fork.id,
                        fork.agent_id,
                        _dumps(fork.metadata),
                        now,
                        now,
                        fork.active_leaf_id,
                        len(entries) + 1,
                    ),
                )
                created = await cur.fetchone()
                if created is None:
                    raise ConflictError(f"thread {fork.id} already exists")
                if rows:
                    async with conn.cursor() as many:
                        await many.executemany(self._sql.insert_entry, rows)
                await conn.execute(
                    self._sql.set_metadata, (_dumps(with_fork_listed(origin[2], fork.id)), now, origin_id)
                )
                return thread_from_row(created)

        return await self.run(op)


__all__ = [
    "CONTENT_FIELDS",
    "PostgresThreads",
    "entry_content",
    "entry_from_row",
    "thread_from_row",
]
