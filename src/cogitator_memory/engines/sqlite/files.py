"""Memory files in SQLite: the primitives of :class:`~cogitator_memory.files.base.MemoryFileStoreMixin`
as SQL, mixed into :class:`~cogitator_memory.engines.sqlite.threads.SQLiteAdapter`.

A version is a row of ``memory_file_versions`` (migration ``m005_memory_files``): the fields
queries filter by are indexed columns (scope key and the agent and limits it is made of, path,
sequence, the entry of its place, the path it was renamed from), the text is a column of its own
(so heads read without their text skip it) and the rest is JSON in ``body``. A unique index on
``(scope_key, path, sequence)`` refuses a second version at one sequence, and ``head`` marks the
newest version of each scope and path under a partial unique index, so heads are read through
that index alone, whatever the history. Every write is one ``BEGIN IMMEDIATE`` transaction: a
batch is stored whole or not at all, and writers in other processes wait for it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ...clock import to_micros
from ...errors import ConflictError
from ...files.base import MemoryFileStoreMixin
from ...files.errors import MemoryFileConflictError
from ...files.paths import prefix_range
from ...files.records import (
    FileHeadQuery,
    FileRedaction,
    FileVersionQuery,
    MemoryFileVersion,
    redacted_version,
)
from ...items.records import TRUSTED
from ...items.scope_sql import sqlite_scope

_COLUMNS = "body, content"
#: Values per statement, well under SQLite's limit of bound parameters.
_CHUNK = 500


def _chunks(values: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


def _marks(count: int) -> str:
    return ",".join("?" * count)


def _body(version: MemoryFileVersion) -> str:
    return version.model_dump_json(exclude_none=True, exclude={"content"})


def _version(row: Sequence[Any]) -> MemoryFileVersion:
    version = MemoryFileVersion.model_validate_json(row[0], context=TRUSTED)  # checked when it was written
    version.content = row[1]
    return version


def _path_clause(paths: frozenset[str] | None, prefix: str | None) -> tuple[str, list[Any]]:
    if paths is not None:
        ordered = sorted(paths)
        return f" AND path IN ({_marks(len(ordered))})", list(ordered)
    if prefix is not None:
        low, high = prefix_range(prefix)
        return " AND (path = ? OR (path >= ? AND path < ?))", [prefix, low, high]
    return "", []


def heads_sql(query: FileHeadQuery) -> tuple[str, list[Any]]:
    """The SELECT of the heads ``query`` asks for and its parameters (through the heads index)."""
    keys = sorted(query.scope_keys)
    clause, params = _path_clause(query.paths, query.prefix)
    columns = _COLUMNS if query.content else "body, NULL"
    sql = (
        f"SELECT {columns} FROM memory_file_versions INDEXED BY memory_file_heads"
        f" WHERE scope_key IN ({_marks(len(keys))}) AND head = 1{clause}"
    )
    return sql, [*keys, *params]


def versions_sql(query: FileVersionQuery) -> tuple[str, list[Any]]:
    """The SELECT of ``query`` and its parameters: every condition on an indexed column."""
    where, params = sqlite_scope(query)
    clause, extra = _path_clause(query.paths, query.prefix)
    for column, values in (
        ("place_entry_id", query.entry_ids),
        ("renamed_from", query.renamed_from),
        ("id", query.ids),
    ):
        if values is not None:
            ordered = sorted(values)
            where.append(f"{column} IN ({_marks(len(ordered))})")
            params.extend(ordered)
    return f"SELECT {_COLUMNS} FROM memory_file_versions WHERE {' AND '.join(where)}{clause}", [*params, *extra]


def _conflict(exc: sqlite3.IntegrityError, version: MemoryFileVersion) -> ConflictError:
    if "memory_file_versions.id" in str(exc):
        return ConflictError(f"memory file version id is taken: {version.id}")
    return MemoryFileConflictError(
        f"MEMORY_FILE_CONFLICT: {version.path} already has version {version.sequence} in its scope"
    )


class SQLiteFiles(MemoryFileStoreMixin):
    """The file half of :class:`~cogitator_memory.engines.sqlite.threads.SQLiteAdapter`."""

    if TYPE_CHECKING:  # provided by the adapter

        @property
        def connection(self) -> sqlite3.Connection: ...

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

    async def _add_file_versions(self, versions: list[MemoryFileVersion]) -> None:
        with self._write() as db:
            for version in versions:
                key = version.scope_key
                row = db.execute(
                    "SELECT sequence FROM memory_file_versions WHERE scope_key = ? AND path = ? AND head = 1",
                    (key, version.path),
                ).fetchone()
                head = row is None or version.sequence > row[0]
                if row is not None and head:
                    db.execute(
                        "UPDATE memory_file_versions SET head = 0 WHERE scope_key = ? AND path = ? AND head = 1",
                        (key, version.path),
                    )
                scope, place = version.scope, version.place
                try:
                    db.execute(
                        "INSERT INTO memory_file_versions (id, agent_id, user_id, project_id, thread_id, scope_key,"
                        " path, sequence, head, place_entry_id, renamed_from, created_us, content, body)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            version.id,
                            scope.agent_id,
                            scope.user_id,
                            scope.project_id,
                            scope.thread_id,
                            key,
                            version.path,
                            version.sequence,
                            1 if head else 0,
                            place.entry_id if place is not None else None,
                            version.renamed_from,
                            to_micros(version.created_at),
                            version.content,
                            _body(version),
                        ),
                    )
                except sqlite3.IntegrityError as exc:
                    raise _conflict(exc, version) from None

    async def _find_file_heads(self, query: FileHeadQuery) -> list[MemoryFileVersion]:
        sql, params = heads_sql(query)
        return list(map(_version, self.connection.execute(sql, params).fetchall()))

    async def _query_file_versions(self, query: FileVersionQuery) -> list[MemoryFileVersion]:
        sql, params = versions_sql(query)
        return list(map(_version, self.connection.execute(sql, params).fetchall()))

    async def _redact_file_versions(self, ids: list[str], redaction: FileRedaction) -> list[MemoryFileVersion]:
        done: list[MemoryFileVersion] = []
        with self._write() as db:
            for chunk in _chunks(ids):
                rows = db.execute(
                    f"SELECT rid, {_COLUMNS} FROM memory_file_versions"
                    f" WHERE id IN ({_marks(len(chunk))}) AND content IS NOT NULL",
                    chunk,
                ).fetchall()
                for row in rows:
                    version = redacted_version(_version(row[1:]), redaction)
                    db.execute(
                        "UPDATE memory_file_versions SET content = ?, body = ? WHERE rid = ?",
                        (version.content, _body(version), row[0]),
                    )
                    done.append(version)
        return done


__all__ = ["SQLiteFiles", "heads_sql", "versions_sql"]
