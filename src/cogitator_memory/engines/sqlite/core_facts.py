"""``CoreFactsStore``: the spec's core facts store, on a SQLite file by default.

The rules are :class:`~cogitator_memory.facts.core.CoreFacts` (core facts are system memory
items); this module opens the store they live in and moves the tables of the earlier key/value
store into items:

- ``CoreFactsStore(path="./memory.db")`` opens a :class:`SQLiteAdapter` on the file (connected
  by :meth:`~CoreFacts.initialize`, closed by :meth:`~CoreFacts.close`);
- ``CoreFactsStore(db=connection)`` shares an open ``sqlite3`` connection (in autocommit mode,
  ``isolation_level=None``): its file gains the package's tables, and ``close()`` leaves the
  connection open;
- ``CoreFactsStore(adapter=store)`` uses any store that keeps items (a connected
  ``SQLiteAdapter`` shares its file; PostgreSQL, Redis... work the same).

On a SQLite file, :meth:`~CoreFacts.initialize` moves ``core_facts`` and ``core_facts_history``
(the tables of the earlier store) into items and renames them ``core_facts_legacy`` and
``core_facts_history_legacy``: each history row is a state of its key from its ``set_at`` (a value
repeated is one state), the row of ``core_facts`` is the value the key has now, and a key with
history but no current row (deleted then) is let go at the migration, since the old tables did
not record when. Every item is written in one batch (all or none), so a migration that stops
half way leaves nothing and runs again on the next ``initialize()``; a key whose slot already
holds values is left as it is (its rows stay in the renamed tables). Rows the items cannot hold
(an empty value, a key with control characters) stay in the renamed tables too.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ... import clock as package_clock
from ...errors import InvalidArgumentError, StoreUnavailableError
from ...facts.core import CORE_PREFIX, CORE_SUBJECT, CoreFacts, check_key, check_value, core_key
from ...ids import new_id
from ...items import rules
from ...items.base import MemoryItemAdapter
from ...items.records import MemoryItem, MemoryScope
from ...result import unwrap
from .db import normalize_path, write_transaction
from .schema import migrate
from .threads import SQLiteAdapter

#: The tables of the earlier store, and the suffix they are renamed with once moved.
LEGACY_TABLES = ("core_facts", "core_facts_history")
LEGACY_SUFFIX = "_legacy"


class _SharedConnection(SQLiteAdapter):
    """A :class:`SQLiteAdapter` over a connection its owner opened (and closes)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        super().__init__(path=":memory:")
        self._given = db
        row = db.execute("PRAGMA database_list").fetchone()
        self.path = str(row[2]) if row is not None and row[2] else ":memory:"

    async def _connect(self) -> None:
        migrate(self._given)
        self._db = self._given

    async def _disconnect(self) -> None:
        self._db = None


def _check_db(value: object) -> sqlite3.Connection:
    if not isinstance(value, sqlite3.Connection):
        raise InvalidArgumentError("db", f"must be a sqlite3.Connection, got {type(value).__name__}")
    if value.isolation_level is not None:
        raise InvalidArgumentError("db", "must be in autocommit mode: sqlite3.connect(path, isolation_level=None)")
    return value


class CoreFactsStore(CoreFacts):
    """Core facts in a SQLite file, a shared SQLite connection or any item store (see the
    module docstring): give exactly one of ``path``, ``db`` or ``adapter``.

    ``scope`` is where the facts live (default ``{"agent_id": "core"}``), ``clock`` the time
    source of the writes. ``set``, ``get``, ``get_all``, ``get_history``, ``delete`` and
    ``format_for_prompt`` are :class:`~cogitator_memory.facts.core.CoreFacts`'s.
    """

    def __init__(
        self,
        *,
        path: str | Path | None = None,
        db: sqlite3.Connection | None = None,
        adapter: MemoryItemAdapter | None = None,
        scope: MemoryScope | Mapping[str, Any] | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        given = [name for name, value in (("path", path), ("db", db), ("adapter", adapter)) if value is not None]
        if len(given) != 1:
            raise InvalidArgumentError("path", "give exactly one of path=, db= or adapter=")
        store: MemoryItemAdapter
        if path is not None:
            if not isinstance(path, str | Path) or not str(path):
                raise InvalidArgumentError("path", "must be a file path or ':memory:'")
            store = SQLiteAdapter(path=normalize_path(path))
        elif db is not None:
            store = _SharedConnection(_check_db(db))
        else:
            assert adapter is not None
            store = adapter
        super().__init__(adapter=store, scope=scope, clock=clock)

    async def _prepare(self) -> None:
        if isinstance(self.adapter, SQLiteAdapter):
            await move_legacy_tables(self.adapter, self.scope, self.adapter, self.now)


def _tables(db: sqlite3.Connection) -> set[str]:
    return {str(r[0]) for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _when(raw: object, fallback: datetime) -> datetime:
    if isinstance(raw, str):
        try:
            return package_clock.to_utc(datetime.fromisoformat(raw))
        except ValueError:
            return fallback
    return fallback


def _usable(key: object, value: object) -> bool:
    try:
        check_key("key", key)
        check_value("value", value)
    except InvalidArgumentError:
        return False
    return True


def _legacy_states(db: sqlite3.Connection, now: datetime) -> dict[str, tuple[list[tuple[str, datetime]], bool]]:
    """Per key: its values in order with when each was set, and whether it still has one."""
    tables = _tables(db)
    current: dict[str, tuple[str, datetime]] = {}
    if "core_facts" in tables:
        for key, value, updated in db.execute("SELECT key, value, updated_at FROM core_facts"):
            if _usable(key, value):
                current[key] = (value, _when(updated, now))
    history: dict[str, list[tuple[str, datetime]]] = {}
    if "core_facts_history" in tables:
        for key, value, set_at in db.execute("SELECT key, value, set_at FROM core_facts_history ORDER BY id"):
            if _usable(key, value):
                history.setdefault(key, []).append((value, _when(set_at, now)))
    out: dict[str, tuple[list[tuple[str, datetime]], bool]] = {}
    for key in sorted(set(current) | set(history)):
        states: list[tuple[str, datetime]] = []
        for value, at in history.get(key, []):
            if states and rules.same_value(states[-1][0], value):
                continue  # the same value again changed nothing
            if states and at <= states[-1][1]:
                at = states[-1][1] + timedelta(microseconds=1)
            states.append((value, at))
        now_value = current.get(key)
        if now_value is not None and (not states or not rules.same_value(states[-1][0], now_value[0])):
            at = (
                now_value[1]
                if not states or now_value[1] > states[-1][1]
                else states[-1][1] + timedelta(microseconds=1)
            )
            states.append((now_value[0], at))
        out[key] = (states, now_value is not None)
    return out


async def move_legacy_tables(
    store: SQLiteAdapter, scope: MemoryScope, items: MemoryItemAdapter, now: Callable[[], datetime]
) -> int:
    """Move the earlier store's tables in ``store``'s file into items of ``scope`` and rename
    them (see the module docstring); returns how many items were written (0 without tables)."""
    db = store.connection
    tables = _tables(db)
    if not any(t in tables for t in LEGACY_TABLES):
        return 0
    at = now()
    legacy = _legacy_states(db, at)
    existing = unwrap(await items.query_items({"scope": scope, "subject": CORE_SUBJECT}))
    taken = {i.slot_key for i in existing if core_key(i) is not None}
    batch: list[MemoryItem] = []
    for key, (states, holds) in legacy.items():
        group: list[MemoryItem] = []
        for n, (value, start) in enumerate(states):
            last = n == len(states) - 1
            end = at if last and not holds else None
            group.append(
                MemoryItem(
                    id=new_id("mem_"),
                    kind="fact",
                    subject=CORE_SUBJECT,
                    attribute=CORE_PREFIX + key,
                    value=value,
                    trust="system",
                    status="active",
                    scope=scope,
                    valid_from=start,
                    ends_at=max(end, start) if end is not None else None,
                    recorded_at=at,
                    metadata={"migrated_from": "core_facts"},
                )
            )
        if not group or group[0].slot_key in taken:
            continue  # set already (or a key differing only in case): its rows stay in the legacy tables
        taken.add(group[0].slot_key)
        places = rules.lay_out(group, at)
        batch += [
            i.model_copy(update={"status": places[i.id].status, "valid_to": places[i.id].valid_to}) for i in group
        ]
    if batch:
        unwrap(await items.add_items(batch))
    try:
        with write_transaction(db):
            names = _tables(db)
            for table in LEGACY_TABLES:
                if table not in names:
                    continue
                target, n = table + LEGACY_SUFFIX, 2
                while target in names:
                    target, n = f"{table}{LEGACY_SUFFIX}_{n}", n + 1
                db.execute(f'ALTER TABLE "{table}" RENAME TO "{target}"')
                names.add(target)
    except sqlite3.Error as exc:
        raise StoreUnavailableError(f"core facts: renaming the legacy tables failed: {exc}") from exc
    return len(batch)


__all__ = ["LEGACY_SUFFIX", "LEGACY_TABLES", "CoreFactsStore", "move_legacy_tables"]
