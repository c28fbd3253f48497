"""Memory items in PostgreSQL: the primitives of :class:`~cogitator_memory.items.base.MemoryItemStoreMixin`
as SQL, mixed into :class:`~cogitator_memory.engines.postgres.adapter.PostgresAdapter`.

An item is a row of ``<schema>.memory_items`` (migration ``m003_memory_items``), in the same
schema as the threads. The fields queries filter by are indexed columns: the scope key (and the
agent, user, project and thread it is made of), the subject and slot keys, kind, status, the
state's start (``valid_from``, else ``recorded_at``) and end, the recorded and expired times,
and ``entry_ids`` (the entries the evidence quotes, under a GIN index). Times are ``timestamptz``,
which PostgreSQL keeps in whole microseconds, so they round-trip exactly. The retrieval
counters and the version are columns of their own; the rest of the item is one JSON text
column ``body`` (text rather than jsonb, which refuses the character U+0000 that metadata may hold).

Each primitive is one statement, or one transaction when it must read before it writes:

- a batch is inserted by one ``INSERT ... SELECT FROM unnest(...)``, so it is stored whole or
  not at all; a taken id fails the statement and is named by a second look;
- ``update_items`` locks the rows it changes (``SELECT ... ORDER BY id FOR UPDATE``), checks the
  versions, and writes every change with one ``UPDATE``, in one transaction: a concurrent
  writer at the same version waits for the lock and then finds the version moved on. It writes
  the retrieval counters only when an update carries them (the fallback of stores without
  ``count_retrieved``), so no count made meanwhile is lost;
- ``count_retrieved`` is one ``UPDATE`` (``times_retrieved + 1``, ``GREATEST`` of the times);
- rows are locked in id order by every writer of several rows, so two batches cannot deadlock;
- a batch of ``MemoryItems.add_many`` (``_write_plan``) is one transaction: its updates, its
  inserts and the recall-index records of the items written (in a savepoint, see
  :mod:`.recall`), the records built while the server inserts the rows. The index's counters
  row is the last lock it takes, as in every writer of the index.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from ...clock import to_utc
from ...errors import ConflictError, NotFoundError, StoreUnavailableError
from ...index.base import item_records, log_unindexed
from ...index.records import MAX_RECORD_BATCH
from ...items.base import MemoryItemStoreMixin
from ...items.records import TRUSTED, ItemQuery, ItemUpdate, MemoryItem, scope_key
from ...items.scope_sql import postgres_scope, start_walks, walks_by_start
from ...result import MemoryResult, unwrap
from ...threads import tree
from .recall import RecallWrite
from .sql import quote_ident

if TYPE_CHECKING:
    from psycopg import AsyncConnection

T = TypeVar("T")

#: Fields kept in columns of their own rather than in ``body``.
_COLUMN_FIELDS = frozenset({"times_retrieved", "last_retrieved_at", "version"})
#: The retrieval counters: an update writes them only when it carries them.
_COUNTERS = frozenset({"times_retrieved", "last_retrieved_at"})
#: Joins a row's entry ids into one array element (ids a query can name hold no control characters).
_ENTRY_SEP = "\x1f"
_READ = "body, times_retrieved, last_retrieved_at, version"
_INSERT_COLUMNS = (
    "id, agent_id, user_id, project_id, thread_id, scope_key, subject_key, slot_key, kind, status,"
    " start_at, valid_to, recorded_at, expired_at, entry_ids, times_retrieved, last_retrieved_at, version, body"
)


@dataclass(frozen=True, slots=True)
class _ItemSql:
    """The item statements of one schema (plain strings, so psycopg prepares the frequent ones)."""

    table: str
    insert: str
    get: str
    taken: str
    lock: str
    update: str
    delete: str
    count: str


@lru_cache(maxsize=64)
def _item_sql(schema: str) -> _ItemSql:
    t = f"{quote_ident(schema)}.memory_items"
    return _ItemSql(
        table=t,
        insert=(
            f"INSERT INTO {t} ({_INSERT_COLUMNS})"
            " SELECT u.id, u.agent_id, u.user_id, u.project_id, u.thread_id, u.scope_key, u.subject_key, u.slot_key,"
            " u.kind, u.status, u.start_at, u.valid_to, u.recorded_at, u.expired_at,"
            " string_to_array(u.entries, chr(31)), u.times_retrieved, u.last_retrieved_at, 1, u.body"
            " FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::text[],"
            " %b::text[], %b::text[], %b::text[], %b::timestamptz[], %b::timestamptz[], %b::timestamptz[],"
            " %b::timestamptz[], %b::text[], %b::bigint[], %b::timestamptz[], %b::text[])"
            " AS u(id, agent_id, user_id, project_id, thread_id, scope_key, subject_key, slot_key, kind, status,"
            " start_at, valid_to, recorded_at, expired_at, entries, times_retrieved, last_retrieved_at, body)"
        ),
        get=f"SELECT {_READ} FROM {t} WHERE id = ANY(%b::text[])",
        taken=f"SELECT id FROM {t} WHERE id = ANY(%b::text[]) ORDER BY id LIMIT 1",
        lock=f"SELECT id, {_READ} FROM {t} WHERE id = ANY(%b::text[]) ORDER BY id FOR UPDATE",
        update=(
            f"UPDATE {t} AS m SET status = u.status, start_at = u.start_at, valid_to = u.valid_to,"
            " expired_at = u.expired_at, entry_ids = string_to_array(u.entries, chr(31)), version = u.version,"
            " body = u.body,"
            " times_retrieved = CASE WHEN u.counted THEN u.times_retrieved ELSE m.times_retrieved END,"
            " last_retrieved_at = CASE WHEN u.counted THEN u.last_retrieved_at ELSE m.last_retrieved_at END"
            " FROM unnest(%b::text[], %b::text[], %b::timestamptz[], %b::timestamptz[], %b::timestamptz[],"
            " %b::text[], %b::int[], %b::text[], %b::bool[], %b::bigint[], %b::timestamptz[])"
            " AS u(id, status, start_at, valid_to, expired_at, entries, version, body, counted, times_retrieved,"
            " last_retrieved_at)"
            " WHERE m.id = u.id AND m.version = u.version - 1"
        ),
        delete=(
            f"WITH hit AS (SELECT id FROM {t} WHERE id = ANY(%b::text[]) ORDER BY id FOR UPDATE)"
            f" DELETE FROM {t} AS m USING hit WHERE m.id = hit.id"
        ),
        count=(
            f"WITH hit AS (SELECT id FROM {t} WHERE id = ANY(%b::text[]) ORDER BY id FOR UPDATE)"
            f" UPDATE {t} AS m SET times_retrieved = m.times_retrieved + 1,"
            " last_retrieved_at = GREATEST(m.last_retrieved_at, %s::timestamptz)"
            " FROM hit WHERE m.id = hit.id"
        ),
    )


def _body(item: MemoryItem) -> str:
    return item.model_dump_json(exclude_none=True, exclude=set(_COLUMN_FIELDS))


def _entries(item: MemoryItem) -> str:
    """The entry ids the item's evidence quotes, joined (ids with control characters left out:
    no query can name them)."""
    found = {e.entry_id for e in item.evidence if e.entry_id and e.entry_id.isprintable()}
    return _ENTRY_SEP.join(sorted(found))


def _item(row: Sequence[Any]) -> MemoryItem:
    # As in SQLite: the counters and version are spliced into the body (a JSON object), which is
    # parsed once as a record checked when it was written.
    body: str = row[0]
    extra = f',"times_retrieved":{int(row[1])},"version":{int(row[3])}'
    if row[2] is not None:
        extra += f',"last_retrieved_at":"{to_utc(row[2]).isoformat()}"'
    return MemoryItem.model_validate_json(f"{body[:-1]}{extra}}}", context=TRUSTED)


def _query_sql(table: str, query: ItemQuery, columns: str = _READ) -> tuple[str, list[Any]]:
    """The SELECT of ``columns`` (default: the items whole) for ``query`` and its parameters:
    every condition on an indexed column."""
    if columns == _READ and walks_by_start(query):
        return _latest_started(table, query)
    where, params = postgres_scope(query)
    where_more, more = _conditions(query)
    where += where_more
    params += more
    sql = f"SELECT {columns} FROM {table} WHERE {' AND '.join(where)}"
    if query.limit:
        params.append(query.limit)
        newest = _NEWEST_STARTED if query.order == "start" else "recorded_at DESC, id DESC"
        return f"{sql} ORDER BY {newest} LIMIT %s", params
    return f"{sql} ORDER BY recorded_at, id", params


_NEWEST_STARTED = "start_at DESC, recorded_at DESC, id DESC"


def _latest_started(table: str, query: ItemQuery) -> tuple[str, list[Any]]:
    """The SELECT of the ``query.limit`` latest started items of a query of scope keys: one
    backward walk of ``memory_items_by_start`` (scope key, kind, start, recorded, id) per scope
    key and kind, each stopping at ``limit`` matches, merged, and only the kept rows read whole.
    One ordered read of the scope would read every row of it, and sort them."""
    where, more = _conditions(dataclasses.replace(query, kinds=None))
    rest = "".join(f" AND {condition}" for condition in where)
    walks: list[str] = []
    params: list[Any] = []
    for key, kind in start_walks(query):
        walks.append(
            f"(SELECT id, start_at, recorded_at FROM {table} WHERE scope_key = %s AND kind = %s{rest}"
            f" ORDER BY {_NEWEST_STARTED} LIMIT %s)"
        )
        params += [key, kind, *more, query.limit]
    merged = f"SELECT id FROM ({' UNION ALL '.join(walks)}) AS w ORDER BY {_NEWEST_STARTED} LIMIT %s"
    return f"SELECT {_READ} FROM {table} WHERE id IN ({merged})", [*params, query.limit]


def _conditions(query: ItemQuery) -> tuple[list[str], list[Any]]:
    """The conditions of ``query`` but its scope, and their parameters."""
    where: list[str] = []
    params: list[Any] = []
    for column, values in (("status", query.statuses), ("kind", query.kinds)):
        if values is not None:
            where.append(f"{column} = ANY(%b::text[])")
            params.append(sorted(values))
    if query.slot_keys is not None:
        where.append("slot_key = ANY(%b::text[])")
        params.append(sorted(query.slot_keys))
    if query.subject_key is not None:
        where.append("subject_key = %s")
        params.append(query.subject_key)
    if query.entry_ids is not None:
        where.append("entry_ids && %b::text[]")
        params.append(sorted(query.entry_ids))
    if query.as_of is not None:
        where.append("start_at <= %s AND (valid_to IS NULL OR valid_to > %s)")
        params.extend((query.as_of, query.as_of))
    if query.known_at is not None:
        where.append("recorded_at <= %s AND (expired_at IS NULL OR expired_at > %s)")
        params.extend((query.known_at, query.known_at))
    if query.recorded_after is not None:
        where.append("recorded_at > %s")
        params.append(query.recorded_after)
    return where, params


def _insert_columns(items: list[MemoryItem]) -> list[list[Any]]:
    """The arguments of ``_ItemSql.insert`` for ``items``: one array per column."""
    scopes = [item.scope for item in items]
    return [
        [item.id for item in items],
        [scope.agent_id for scope in scopes],
        [scope.user_id for scope in scopes],
        [scope.project_id for scope in scopes],
        [scope.thread_id for scope in scopes],
        [scope_key(scope) for scope in scopes],
        [item.subject_key for item in items],
        [item.slot_key for item in items],
        [item.kind for item in items],
        [item.status for item in items],
        [item.start for item in items],
        [item.valid_to for item in items],
        [item.recorded_at for item in items],
        [item.expired_at for item in items],
        [_entries(item) for item in items],
        [item.times_retrieved for item in items],
        [item.last_retrieved_at for item in items],
        [_body(item) for item in items],
    ]


async def _apply_updates(conn: AsyncConnection[Any], sql: _ItemSql, updates: list[ItemUpdate]) -> list[MemoryItem]:
    """In the caller's transaction: lock the rows ``updates`` change (in id order), check their
    versions (``ConflictError``, ``NotFoundError``) and write every change with one ``UPDATE``;
    the updated items, in the order of ``updates``."""
    cur = await conn.execute(sql.lock, ([u.id for u in updates],))
    current = {row[0]: _item(row[1:]) for row in await cur.fetchall()}
    changed: list[MemoryItem] = []
    for update in updates:
        item = current.get(update.id)
        if item is None:
            raise NotFoundError(f"memory item not found: {update.id}")
        if item.version != update.expected_version:
            raise ConflictError(
                f"memory item {update.id} is at version {item.version}, not {update.expected_version}:"
                " it changed since it was read"
            )
        try:
            changed.append(update.apply(item))
        except ValidationError as exc:
            raise tree.validation_error("updates", exc) from None
    cur = await conn.execute(
        sql.update,
        (
            [n.id for n in changed],
            [n.status for n in changed],
            [n.start for n in changed],
            [n.valid_to for n in changed],
            [n.expired_at for n in changed],
            [_entries(n) for n in changed],
            [n.version for n in changed],
            [_body(n) for n in changed],
            [bool(u.model_fields_set & _COUNTERS) for u in updates],
            [n.times_retrieved for n in changed],
            [n.last_retrieved_at for n in changed],
        ),
    )
    if cur.rowcount != len(changed):
        raise StoreUnavailableError(
            f"postgres update_items: {cur.rowcount} of {len(changed)} locked items were written"
        )
    return changed


def _recall_writes(schema: str, items: list[MemoryItem], fresh: set[str]) -> list[RecallWrite]:
    """The recall-index writes for the items written
    (:func:`~cogitator_memory.index.base.item_records`), or none when they cannot be made (logged)."""
    try:
        records, hidden = item_records(items, fresh)
        if not records and not hidden:
            return []
        return [
            RecallWrite(schema, records[start : start + MAX_RECORD_BATCH], hidden if not start else ())
            for start in range(0, max(len(records), 1), MAX_RECORD_BATCH)
        ]
    except Exception as exc:
        log_unindexed(len(items), exc)
        return []


async def _run_recall_writes(conn: AsyncConnection[Any], writes: list[RecallWrite], count: int) -> None:
    """``writes`` in the caller's transaction, in a savepoint: a failure is logged and rolled
    back to the savepoint, the ``count`` items written before it kept."""
    if not writes:
        return
    try:
        async with conn.transaction():
            for write in writes:
                await write.run(conn)
    except Exception as exc:
        log_unindexed(count, exc)


class PostgresItems(MemoryItemStoreMixin):
    """The item half of :class:`~cogitator_memory.engines.postgres.adapter.PostgresAdapter`: it
    runs its SQL through the adapter's ``run`` (a pooled connection within its deadline)."""

    if TYPE_CHECKING:  # provided by the adapter
        schema: str
        _psycopg: Any

        async def run(
            self, operation: Callable[[AsyncConnection[Any]], Awaitable[T]], *, timeout: float | None = None
        ) -> T: ...

    @property
    def _items_sql(self) -> _ItemSql:
        return _item_sql(self.schema)

    async def _add_items(self, items: list[MemoryItem]) -> None:
        sql = self._items_sql
        columns = _insert_columns(items)
        unique_violation = self._psycopg.errors.UniqueViolation

        async def op(conn: AsyncConnection[Any]) -> bool:
            try:
                await conn.execute(sql.insert, columns)
            except unique_violation:
                return False
            return True

        if not await self.run(op):
            await self._raise_taken([item.id for item in items])

    async def _raise_taken(self, ids: list[str]) -> None:
        """After an insert of ``ids`` failed on a taken id: the ``ConflictError`` naming it."""
        sql = self._items_sql.taken

        async def op(conn: AsyncConnection[Any]) -> str:
            cur = await conn.execute(sql, (ids,))
            row = await cur.fetchone()
            return "" if row is None else str(row[0])

        taken = await self.run(op)
        raise ConflictError(f"memory item id is taken: {taken}" if taken else "memory item id is taken")

    async def _get_items(self, ids: list[str]) -> list[MemoryItem]:
        sql = self._items_sql.get

        async def op(conn: AsyncConnection[Any]) -> list[Any]:
            cur = await conn.execute(sql, (ids,))
            return await cur.fetchall()

        return list(map(_item, await self.run(op)))

    async def _query_items(self, query: ItemQuery) -> list[MemoryItem]:
        sql, params = _query_sql(self._items_sql.table, query)

        async def op(conn: AsyncConnection[Any]) -> list[Any]:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

        rows = await self.run(op)
        if query.limit:
            rows.reverse()
        return list(map(_item, rows))

    async def _item_versions(self, query: ItemQuery) -> dict[str, int]:
        sql, params = _query_sql(self._items_sql.table, query, "id, version")

        async def op(conn: AsyncConnection[Any]) -> list[Any]:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

        return {str(item_id): int(version) for item_id, version in await self.run(op)}

    async def _update_items(self, updates: list[ItemUpdate]) -> list[MemoryItem]:
        sql = self._items_sql

        async def op(conn: AsyncConnection[Any]) -> list[MemoryItem]:
            async with conn.transaction():
                return await _apply_updates(conn, sql, updates)

        return await self.run(op)

    async def _write_plan(
        self, updates: list[ItemUpdate], adds: list[MemoryItem], undo: Callable[[], list[ItemUpdate]]
    ) -> list[MemoryItem] | None:
        """:meth:`MemoryItemStoreMixin._write_plan` as one transaction: the updates (rows locked
        and versions checked as ``update_items`` does), the inserts, and the recall-index records
        of every item written, so a failure leaves nothing written (``undo`` is not needed) and
        no reader sees the items before their records. The records go in a savepoint: when they
        fail, the items are written all the same and the failure logged, as on every store
        (``cogitator-memory reindex`` writes what is missing)."""
        try:
            self._require_connected()
            sql = self._items_sql
            columns = _insert_columns(adds) if adds else None
            fresh = {item.id for item in adds}
            unique_violation = self._psycopg.errors.UniqueViolation
            schema = self.schema

            async def op(conn: AsyncConnection[Any]) -> list[MemoryItem] | bool | None:
                try:
                    async with conn.transaction():
                        written = await _apply_updates(conn, sql, updates) if updates else []
                        written.extend(adds)
                        inserting = None
                        if columns is not None:
                            inserting = asyncio.ensure_future(conn.execute(sql.insert, columns))
                            await asyncio.sleep(0)  # sent: the records are built while the server inserts
                        try:
                            writes = _recall_writes(schema, written, fresh)
                        finally:
                            if inserting is not None:
                                await inserting
                        await _run_recall_writes(conn, writes, len(written))
                        return written
                except ConflictError:  # an update met another version: nothing written
                    return None
                except unique_violation:  # an id another writer took: nothing written
                    return False

            outcome = await self.run(op)
            if outcome is False:
                await self._raise_taken([item.id for item in adds])
            return outcome if isinstance(outcome, list) else None
        except Exception as exc:
            failed: MemoryResult[list[MemoryItem] | None] = self._fail("add_items", exc)
            return unwrap(failed)

    async def _delete_items(self, ids: list[str]) -> int:
        sql = self._items_sql.delete

        async def op(conn: AsyncConnection[Any]) -> int:
            cur = await conn.execute(sql, (ids,))
            return cur.rowcount

        return await self.run(op)

    async def _count_retrieved(self, ids: list[str], at: datetime) -> int:
        sql = self._items_sql.count

        async def op(conn: AsyncConnection[Any]) -> int:
            cur = await conn.execute(sql, (ids, at))
            return cur.rowcount

        return await self.run(op)


__all__ = ["PostgresItems"]
