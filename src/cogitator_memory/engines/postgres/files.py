"""Memory files in PostgreSQL: the primitives of :class:`~cogitator_memory.files.base.MemoryFileStoreMixin`
as SQL, mixed into :class:`~cogitator_memory.engines.postgres.adapter.PostgresAdapter`.

A version is a row of ``<schema>.memory_file_versions`` (migration ``m004_memory_files``), in the
same schema as the threads: the fields queries filter by are indexed columns (scope key and the
agent and limits it is made of, path, sequence, the entry of its place, the path it was renamed
from), compared byte by byte (``COLLATE "C"``) so a directory's paths are one range; the text is
a column of its own and the rest JSON text in ``body``.

- A unique index on ``(scope_key, path, sequence)`` refuses a second version at one sequence,
  however many processes write: the loser's statement fails and its whole batch goes with it.
- ``head`` marks the newest version of each scope and path, under a partial unique index that
  heads are read through, so reading what stands never reads history. A batch locks the heads it
  replaces (in key order, so two batches cannot deadlock), clears their flag and inserts its
  versions (in key order too) in one transaction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

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
from ...items.scope_sql import postgres_scope
from .sql import quote_ident

if TYPE_CHECKING:
    from psycopg import AsyncConnection

T = TypeVar("T")

_READ = "body, content"
_PRIMARY_KEY = "memory_file_versions_pkey"


@dataclass(frozen=True, slots=True)
class _FileSql:
    """The file statements of one schema (plain strings, so psycopg prepares the frequent ones)."""

    table: str
    lock_heads: str
    demote: str
    insert: str
    lock_text: str
    redact: str


@lru_cache(maxsize=64)
def _file_sql(schema: str) -> _FileSql:
    t = f"{quote_ident(schema)}.memory_file_versions"
    keys = "unnest(%b::text[], %b::text[], %b::bigint[]) AS u(scope_key, path, sequence)"
    return _FileSql(
        table=t,
        lock_heads=(
            f"SELECT 1 FROM {t} AS m, unnest(%b::text[], %b::text[]) AS u(scope_key, path)"
            " WHERE m.scope_key = u.scope_key AND m.path = u.path AND m.head"
            " ORDER BY m.scope_key, m.path FOR UPDATE OF m"
        ),
        demote=(
            f"UPDATE {t} AS m SET head = false FROM {keys}"
            " WHERE m.scope_key = u.scope_key AND m.path = u.path AND m.head AND m.sequence < u.sequence"
        ),
        insert=(
            f"INSERT INTO {t} (id, agent_id, user_id, project_id, thread_id, scope_key, path, sequence, head,"
            " place_entry_id, renamed_from, created_at, content, body)"
            " SELECT u.id, u.agent_id, u.user_id, u.project_id, u.thread_id, u.scope_key, u.path, u.sequence,"
            f" NOT EXISTS (SELECT 1 FROM {t} AS x WHERE x.scope_key = u.scope_key AND x.path = u.path"
            " AND x.sequence > u.sequence),"
            " u.place_entry_id, u.renamed_from, u.created_at, u.content, u.body"
            " FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::text[],"
            " %b::bigint[], %b::text[], %b::text[], %b::timestamptz[], %b::text[], %b::text[])"
            " WITH ORDINALITY AS u(id, agent_id, user_id, project_id, thread_id, scope_key, path, sequence,"
            " place_entry_id, renamed_from, created_at, content, body, n)"
            " ORDER BY u.n"
        ),
        lock_text=(
            f"SELECT id, {_READ} FROM {t} WHERE id = ANY(%b::text[]) AND content IS NOT NULL ORDER BY id FOR UPDATE"
        ),
        redact=(
            f"UPDATE {t} AS m SET content = u.content, body = u.body"
            " FROM unnest(%b::text[], %b::text[], %b::text[]) AS u(id, content, body) WHERE m.id = u.id"
        ),
    )


def _body(version: MemoryFileVersion) -> str:
    return version.model_dump_json(exclude_none=True, exclude={"content"})


def _version(row: Sequence[Any]) -> MemoryFileVersion:
    version = MemoryFileVersion.model_validate_json(row[0], context=TRUSTED)  # checked when it was written
    version.content = row[1]
    return version


def _path_clause(paths: frozenset[str] | None, prefix: str | None) -> tuple[str, list[Any]]:
    if paths is not None:
        return " AND path = ANY(%b::text[])", [sorted(paths)]
    if prefix is not None:
        low, high = prefix_range(prefix)
        return " AND (path = %s OR (path >= %s AND path < %s))", [prefix, low, high]
    return "", []


def heads_sql(table: str, query: FileHeadQuery) -> tuple[str, list[Any]]:
    """The SELECT of the heads ``query`` asks for and its parameters (through the heads index)."""
    clause, params = _path_clause(query.paths, query.prefix)
    columns = _READ if query.content else "body, NULL"
    sql = f"SELECT {columns} FROM {table} WHERE scope_key = ANY(%b::text[]) AND head{clause}"
    return sql, [sorted(query.scope_keys), *params]


def versions_sql(table: str, query: FileVersionQuery) -> tuple[str, list[Any]]:
    """The SELECT of ``query`` and its parameters: every condition on an indexed column."""
    where, params = postgres_scope(query)
    for column, values in (
        ("place_entry_id", query.entry_ids),
        ("renamed_from", query.renamed_from),
        ("id", query.ids),
    ):
        if values is not None:
            where.append(f"{column} = ANY(%b::text[])")
            params.append(sorted(values))
    clause, extra = _path_clause(query.paths, query.prefix)
    return f"SELECT {_READ} FROM {table} WHERE {' AND '.join(where)}{clause}", [*params, *extra]


class PostgresFiles(MemoryFileStoreMixin):
    """The file half of :class:`~cogitator_memory.engines.postgres.adapter.PostgresAdapter`: it
    runs its SQL through the adapter's ``run`` (a pooled connection within its deadline)."""

    if TYPE_CHECKING:  # provided by the adapter
        schema: str
        _psycopg: Any

        async def run(
            self, operation: Callable[[AsyncConnection[Any]], Awaitable[T]], *, timeout: float | None = None
        ) -> T: ...

    @property
    def _files_sql(self) -> _FileSql:
        return _file_sql(self.schema)

    async def _add_file_versions(self, versions: list[MemoryFileVersion]) -> None:
        sql = self._files_sql
        ordered = sorted(versions, key=lambda v: (v.scope_key, v.path))
        keys = [v.scope_key for v in ordered]
        paths = [v.path for v in ordered]
        sequences = [v.sequence for v in ordered]
        scopes = [v.scope for v in ordered]
        rows: list[list[Any]] = [
            [v.id for v in ordered],
            [s.agent_id for s in scopes],
            [s.user_id for s in scopes],
            [s.project_id for s in scopes],
            [s.thread_id for s in scopes],
            keys,
            paths,
            sequences,
            [v.place.entry_id if v.place is not None else None for v in ordered],
            [v.renamed_from for v in ordered],
            [v.created_at for v in ordered],
            [v.content for v in ordered],
            [_body(v) for v in ordered],
        ]
        errors = self._psycopg.errors

        async def op(conn: AsyncConnection[Any]) -> str | None:
            try:
                async with conn.transaction():
                    await conn.execute(sql.lock_heads, (keys, paths))
                    await conn.execute(sql.demote, (keys, paths, sequences))
                    await conn.execute(sql.insert, rows)
            except errors.UniqueViolation as exc:
                return "id" if exc.diag.constraint_name == _PRIMARY_KEY else "sequence"
            except errors.DeadlockDetected:
                return "sequence"
            return None

        refused = await self.run(op)
        if refused == "id":
            raise ConflictError("memory file version id is taken: " + ", ".join(v.id for v in ordered[:5]))
        if refused is not None:
            raise MemoryFileConflictError(
                "MEMORY_FILE_CONFLICT: another writer added a version of "
                + ", ".join(sorted({v.path for v in ordered})[:5])
                + " at the same sequence"
            )

    async def _find_file_heads(self, query: FileHeadQuery) -> list[MemoryFileVersion]:
        sql, params = heads_sql(self._files_sql.table, query)

        async def op(conn: AsyncConnection[Any]) -> list[Any]:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

        return list(map(_version, await self.run(op)))

    async def _query_file_versions(self, query: FileVersionQuery) -> list[MemoryFileVersion]:
        sql, params = versions_sql(self._files_sql.table, query)

        async def op(conn: AsyncConnection[Any]) -> list[Any]:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

        return list(map(_version, await self.run(op)))

    async def _redact_file_versions(self, ids: list[str], redaction: FileRedaction) -> list[MemoryFileVersion]:
        sql = self._files_sql

        async def op(conn: AsyncConnection[Any]) -> list[MemoryFileVersion]:
            async with conn.transaction():
                cur = await conn.execute(sql.lock_text, (ids,))
                done = [redacted_version(_version(row[1:]), redaction) for row in await cur.fetchall()]
                if done:
                    await conn.execute(
                        sql.redact,
                        ([v.id for v in done], [v.content for v in done], [_body(v) for v in done]),
                    )
                return done

        return await self.run(op)


__all__ = ["PostgresFiles", "heads_sql", "versions_sql"]
