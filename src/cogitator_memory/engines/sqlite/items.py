"""Memory items in SQLite: the primitives of :class:`~cogitator_memory.items.base.MemoryItemStoreMixin`
as SQL, mixed into :class:`~cogitator_memory.engines.sqlite.threads.SQLiteAdapter`.

An item is a row of ``memory_items`` (migration ``m004_memory_items``): the fields queries filter
by are indexed columns (scope key, agent and its limits, subject and slot keys, kind, status,
start, end, recorded and expired times in microseconds), the retrieval counters and the version
are columns of their own, and the rest is one JSON column ``body``. ``memory_item_evidence`` maps
each quoted entry to the items quoting it. Every write is one ``BEGIN IMMEDIATE`` transaction,
so a batch is stored whole or not at all and a version check and its write cannot be split by
another connection.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ...clock import from_micros, to_micros
from ...errors import ConflictError, NotFoundError
from ...items.base import MemoryItemStoreMixin
from ...items.records import TRUSTED, ItemQuery, ItemUpdate, MemoryItem, scope_key
from ...items.scope_sql import sqlite_scope, start_walks, walks_by_start
from ...threads import tree

#: Fields kept in columns of their own rather than in ``body``.
_COLUMN_FIELDS = {"times_retrieved", "last_retrieved_at", "version"}
_SELECT = "SELECT rid, body, times_retrieved, last_retrieved_us, version FROM memory_items"
#: Ids per statement, well under SQLite's limit of bound parameters.
_CHUNK = 500


def _chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


def _marks(count: int) -> str:
    return ",".join("?" * count)


def _body(item: MemoryItem) -> str:
    return item.model_dump_json(exclude_none=True, exclude=_COLUMN_FIELDS)


def _item(row: Sequence[Any]) -> MemoryItem:
    # The counters and version are columns: spliced into the body (a JSON object) before it is
    # parsed, once, as a record checked when it was written.
    body: str = row[1]
    extra = f',"times_retrieved":{int(row[2])},"version":{int(row[4])}'
    if row[3] is not None:
        extra += f',"last_retrieved_at":"{from_micros(row[3]).isoformat()}"'
    return MemoryItem.model_validate_json(f"{body[:-1]}{extra}}}", context=TRUSTED)


def _micros(value: datetime | None) -> int | None:
    return None if value is None else to_micros(value)


def _row(item: MemoryItem) -> tuple[Any, ...]:
    scope = item.scope
    return (
        item.id,
        scope.agent_id,
        scope.user_id,
        scope.project_id,
        scope.thread_id,
        scope_key(scope),
        item.subject_key,
        item.slot_key,
        item.kind,
        item.status,
        to_micros(item.start),
        _micros(item.valid_to),
        to_micros(item.recorded_at),
        _micros(item.expired_at),
        item.times_retrieved,
        _micros(item.last_retrieved_at),
        item.version,
        _body(item),
    )


def _entry_ids(item: MemoryItem) -> set[str]:
    return {e.entry_id for e in item.evidence if e.entry_id}


def _entry_rows(rid: int, item: MemoryItem) -> list[tuple[str, int]]:
    return [(entry_id, rid) for entry_id in _entry_ids(item)]


def _where(query: ItemQuery) -> tuple[list[str], list[Any]]:
    """The SQL conditions (and their parameters) of ``query``, every one but its limit."""
    where, params = sqlite_scope(query)
    for column, values in (("status", query.statuses), ("kind", query.kinds)):
        if values is not None:
            ordered = sorted(values)
            where.append(f"{column} IN ({_marks(len(ordered))})")
            params.extend(ordered)
    if query.slot_keys is not None:
        slots = sorted(query.slot_keys)
        where.append(f"slot_key IN ({_marks(len(slots))})")
        params.extend(slots)
    if query.subject_key is not None:
        where.append("subject_key = ?")
        params.append(query.subject_key)
    if query.entry_ids is not None:
        entries = sorted(query.entry_ids)
        where.append(f"rid IN (SELECT rid FROM memory_item_evidence WHERE entry_id IN ({_marks(len(entries))}))")
        params.extend(entries)
    if query.as_of is not None:
        at = to_micros(query.as_of)
        where.append("start_us <= ? AND (valid_to_us IS NULL OR valid_to_us > ?)")
        params.extend((at, at))
    if query.known_at is not None:
        at = to_micros(query.known_at)
        where.append("recorded_us <= ? AND (expired_us IS NULL OR expired_us > ?)")
        params.extend((at, at))
    if query.recorded_after is not None:
        where.append("recorded_us > ?")
        params.append(to_micros(query.recorded_after))
    return where, params


_NEWEST_STARTED = "ORDER BY start_us DESC, recorded_us DESC, id DESC LIMIT ?"


def _latest_started(query: ItemQuery) -> tuple[str, list[Any]]:
    """The SELECT of the ``query.limit`` latest started items of a query of scope keys: one walk
    of ``memory_items_by_start`` (scope key, kind, start, recorded, id) from its newest end per
    scope key and kind, each stopping at ``limit`` matches, merged, and only the kept rows read
    whole. One ordered walk of the scope would read every row of it, and sort them."""
    walks: list[str] = []
    params: list[Any] = []
    for key, kind in start_walks(query):
        where, more = _where(dataclasses.replace(query, scope_keys=frozenset({key}), kinds=frozenset({kind})))
        walks.append(
            "SELECT * FROM (SELECT rid, start_us, recorded_us, id FROM memory_items"
            f" INDEXED BY memory_items_by_start WHERE {' AND '.join(where)} {_NEWEST_STARTED})"
        )
        params += [*more, query.limit]
    merged = f"SELECT rid FROM ({' UNION ALL '.join(walks)}) {_NEWEST_STARTED}"
    return f"{_SELECT} WHERE rid IN ({merged})", [*params, query.limit]


class SQLiteItems(MemoryItemStoreMixin):
    """The item half of :class:`~cogitator_memory.engines.sqlite.threads.SQLiteAdapter`."""

    if TYPE_CHECKING:  # provided by the adapter

        @property
        def connection(self) -> sqlite3.Connection: ...

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

    async def _add_items(self, items: list[MemoryItem]) -> None:
        ids = [item.id for item in items]
        with self._write() as db:
            for chunk in _chunks(ids):
                taken = db.execute(f"SELECT id FROM memory_items WHERE id IN ({_marks(len(chunk))})", chunk).fetchone()
                if taken is not None:
                    raise ConflictError(f"memory item id is taken: {taken[0]}")
            db.executemany(
                "INSERT INTO memory_items (id, agent_id, user_id, project_id, thread_id, scope_key, subject_key,"
                " slot_key, kind, status, start_us, valid_to_us, recorded_us, expired_us, times_retrieved,"
                " last_retrieved_us, version, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                map(_row, items),
            )
            evidence = [(entry_id, item.id) for item in items for entry_id in _entry_ids(item)]
            if evidence:
                db.executemany(
                    "INSERT INTO memory_item_evidence (entry_id, rid) SELECT ?, rid FROM memory_items WHERE id = ?",
                    evidence,
                )

    async def _get_items(self, ids: list[str]) -> list[MemoryItem]:
        db = self.connection
        found: list[MemoryItem] = []
        for chunk in _chunks(ids):
            rows = db.execute(f"{_SELECT} WHERE id IN ({_marks(len(chunk))})", chunk).fetchall()
            found.extend(map(_item, rows))
        return found

    async def _query_items(self, query: ItemQuery) -> list[MemoryItem]:
        if walks_by_start(query):
            sql, params = _latest_started(query)
            return list(map(_item, self.connection.execute(sql, params)))
        where, params = _where(query)
        # Slots name a few rows of their scopes: without the hint, a time condition (recorded_us)
        # can make the planner walk the whole scope by time instead.
        hint = " INDEXED BY memory_items_by_slot" if query.slot_keys is not None and query.scope_keys else ""
        sql = f"{_SELECT}{hint} WHERE {' AND '.join(where)}"
        if query.limit:
            newest = (
                "start_us DESC, recorded_us DESC, id DESC" if query.order == "start" else "recorded_us DESC, id DESC"
            )
            rows = self.connection.execute(f"{sql} ORDER BY {newest} LIMIT ?", (*params, query.limit)).fetchall()
            rows.reverse()
        else:
            # No ORDER BY (the mixin sorts): with one, the planner prefers the index that gives the
            # order (scope, time) over the one that narrows to the slot or subject, and reads the
            # whole scope.
            rows = self.connection.execute(sql, params).fetchall()
        return list(map(_item, rows))

    async def _item_versions(self, query: ItemQuery) -> dict[str, int]:
        where, params = _where(query)
        rows = self.connection.execute(f"SELECT id, version FROM memory_items WHERE {' AND '.join(where)}", params)
        return {str(item_id): int(version) for item_id, version in rows}

    async def _update_items(self, updates: list[ItemUpdate]) -> list[MemoryItem]:
        with self._write() as db:
            current: dict[str, tuple[int, MemoryItem]] = {}
            for chunk in _chunks([u.id for u in updates]):
                for row in db.execute(f"{_SELECT} WHERE id IN ({_marks(len(chunk))})", chunk):
                    item = _item(row)
                    current[item.id] = (row[0], item)
            changed: list[tuple[int, MemoryItem, bool]] = []
            for update in updates:
                if update.id not in current:
                    raise NotFoundError(f"memory item not found: {update.id}")
                rid, item = current[update.id]
                if item.version != update.expected_version:
                    raise ConflictError(
                        f"memory item {update.id} is at version {item.version}, not {update.expected_version}: "
                        "it changed since it was read"
                    )
                try:
                    new = update.apply(item)
                except ValidationError as exc:
                    raise tree.validation_error("updates", exc) from None
                changed.append((rid, new, "evidence" in update.model_fields_set))
            db.executemany(
                "UPDATE memory_items SET status = ?, start_us = ?, valid_to_us = ?, expired_us = ?, version = ?,"
                " body = ? WHERE rid = ?",
                [
                    (
                        new.status,
                        to_micros(new.start),
                        _micros(new.valid_to),
                        _micros(new.expired_at),
                        new.version,
                        _body(new),
                        rid,
                    )
                    for rid, new, _ in changed
                ],
            )
            if any(u.model_fields_set & {"times_retrieved", "last_retrieved_at"} for u in updates):
                # the counters change only when an update carries them
                db.executemany(
                    "UPDATE memory_items SET times_retrieved = ?, last_retrieved_us = ? WHERE rid = ?",
                    [(new.times_retrieved, _micros(new.last_retrieved_at), rid) for rid, new, _ in changed],
                )
            moved = [(rid, new) for rid, new, evidence_changed in changed if evidence_changed]
            if moved:
                db.executemany("DELETE FROM memory_item_evidence WHERE rid = ?", [(rid,) for rid, _ in moved])
                db.executemany(
                    "INSERT INTO memory_item_evidence (entry_id, rid) VALUES (?, ?)",
                    [row for rid, new in moved for row in _entry_rows(rid, new)],
                )
        return [new for _, new, _ in changed]

    async def _delete_items(self, ids: list[str]) -> int:
        gone = 0
        with self._write() as db:
            for chunk in _chunks(ids):
                marks = _marks(len(chunk))
                db.execute(
                    f"DELETE FROM memory_item_evidence WHERE rid IN (SELECT rid FROM memory_items WHERE id IN ({marks}))",
                    chunk,
                )
                gone += db.execute(f"DELETE FROM memory_items WHERE id IN ({marks})", chunk).rowcount
        return gone

    async def _count_retrieved(self, ids: list[str], at: datetime) -> int:
        stamp = to_micros(at)
        counted = 0
        with self._write() as db:
            for chunk in _chunks(ids):
                counted += db.execute(
                    "UPDATE memory_items SET times_retrieved = times_retrieved + 1,"
                    f" last_retrieved_us = max(coalesce(last_retrieved_us, ?), ?) WHERE id IN ({_marks(len(chunk))})",
                    (stamp, stamp, *chunk),
                ).rowcount
        return counted


__all__ = ["SQLiteItems"]
