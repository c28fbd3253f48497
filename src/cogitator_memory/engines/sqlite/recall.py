"""The recall index of :class:`~cogitator_memory.engines.sqlite.threads.SQLiteAdapter`, in its file.

``recall_records`` holds one row per record: the fields searches filter by as columns (scope,
kind, status, times in microseconds, each behind an index) and the rest as JSON.
``recall_terms`` is the inverted index, ``(term, rid, tf)`` without rowids, so a keyword search
reads only the postings of the query's terms; BM25 is summed in SQL over them, filtered by scope
in the same statement. ``recall_stats`` keeps the record count and total length in terms (BM25's
``N`` and ``avgdl``) and ``recall_df`` each term's record count up to date in every write, so a
search never counts postings; it reads only those of the terms :func:`~cogitator_memory.index.base.within_budget`
keeps (of a term past the budget, those of the records indexed last first: ``rid`` grows with
every write, so they are read backwards along the key). Schema:
migration ``m011_recall_index``.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from ...clock import from_micros, to_micros
from ...index.base import RECALL_BM25, RecallIndexMixin, length_terms, stored_record
from ...index.records import RecallFilter, RecallRecord, pack_counts, without_turns

_COLUMNS = (
    "r.id, r.kind, r.agent_id, r.user_id, r.thread_id, r.status, r.said_us, r.time_start_us, r.time_end_us,"
    " r.terms, r.body, r.term_freqs"
)
#: Migration ``m017_recall_term_freqs``: a record's terms are written each once, their counts
#: packed beside them in ``term_freqs`` (:func:`~cogitator_memory.index.records.pack_counts`), so
#: a search reads about a third of the terms it read (a turn's every occurrence) and counts none
#: of them. Records written before keep ``NULL`` there and every occurrence in ``terms``: read,
#: they are counted (``cogitator-memory reindex`` writes them again).
RECALL_TERM_FREQS = "ALTER TABLE recall_records ADD COLUMN term_freqs BLOB"
#: Most ids in one ``IN (...)`` list.
_CHUNK = 500
_T = TypeVar("_T")

RECALL_TABLES: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS recall_records (
        rid INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        agent_id TEXT,
        user_id TEXT,
        thread_id TEXT,
        status TEXT NOT NULL,
        said_us INTEGER NOT NULL,
        time_start_us INTEGER,
        time_end_us INTEGER,
        term_count INTEGER NOT NULL,
        terms TEXT NOT NULL,
        body TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS recall_by_said ON recall_records (said_us DESC, id)",
    "CREATE INDEX IF NOT EXISTS recall_by_user ON recall_records (user_id, said_us DESC)",
    "CREATE INDEX IF NOT EXISTS recall_by_thread ON recall_records (thread_id)",
    "CREATE INDEX IF NOT EXISTS recall_by_named_time ON recall_records (time_start_us) WHERE time_start_us IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS recall_terms (
        term TEXT NOT NULL,
        rid INTEGER NOT NULL,
        tf INTEGER NOT NULL,
        PRIMARY KEY (term, rid)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS recall_terms_by_rid ON recall_terms (rid)",
    "CREATE TABLE IF NOT EXISTS recall_df (term TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS recall_stats (one INTEGER PRIMARY KEY CHECK (one = 1), records INTEGER NOT NULL, total INTEGER NOT NULL)",
    "INSERT OR IGNORE INTO recall_stats (one, records, total) VALUES (1, 0, 0)",
    "CREATE TABLE IF NOT EXISTS recall_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)

#: Migration ``m014_recall_search_indexes``. A keyword search sums BM25 over the postings of the
#: query's terms (up to the postings budget, some 5,000), each joined to its record for the
#: record's length and scope: it read each of those rows, the largest table's, mostly out of
#: the cache on a large file. ``recall_scoring`` holds what that join reads (scope, kind,
#: status, length, id), some 60 bytes a record, so the join reads it instead; and the records
#: that are not turns are under a partial index of their ``rid``, so a search of other kinds
#: (items, facts, file sections) keeps their postings before it joins any.
RECALL_SEARCH_INDEXES: tuple[str, ...] = (
    "CREATE INDEX IF NOT EXISTS recall_not_turns ON recall_records (rid) WHERE kind <> 'turn'",
    "CREATE INDEX IF NOT EXISTS recall_scoring"
    " ON recall_records (rid, kind, status, user_id, agent_id, thread_id, term_count, id)",
)

#: A search of other kinds than turns lists the records that are not turns first when there
#: are at most this many (a list of them is read at every such search).
LISTED_OTHERS = 2000
#: How many records are not turns, counted up to the number given.
_OTHERS_UP_TO = (
    "SELECT count(*) FROM (SELECT 1 FROM recall_records INDEXED BY recall_not_turns WHERE kind <> 'turn' LIMIT ?)"
)

#: The fields of a record kept in its JSON body (the others are columns).
_BODY_FIELDS = ("source_id", "role", "name", "seq", "text", "valid_from", "valid_to", "lineage")


def _marks(n: int) -> str:
    return ",".join("?" * n)


def scope_where(flt: RecallFilter, alias: str = "r") -> tuple[str, list[Any]]:
    """SQL conditions (on ``recall_records`` as ``alias``) for :func:`~cogitator_memory.index.records.record_in_scope`."""
    parts: list[str] = []
    args: list[Any] = []
    for key in ("agent_id", "user_id", "thread_id"):
        value = getattr(flt, key)
        if value is not None:
            parts.append(f"({alias}.{key} IS NULL OR {alias}.{key} = ?)")
            args.append(value)
    if flt.kinds is not None:
        parts.append(f"{alias}.kind IN ({_marks(len(flt.kinds))})")
        args.extend(flt.kinds)
    parts.append(f"{alias}.status IN ({_marks(len(flt.statuses))})")
    args.extend(flt.statuses)
    return " AND ".join(parts), args


def _row(record: RecallRecord) -> tuple[Any, ...]:
    body = record.model_dump(mode="json", include=set(_BODY_FIELDS), exclude_none=True)
    return (
        record.id,
        record.kind,
        record.agent_id,
        record.user_id,
        record.thread_id,
        record.status,
        to_micros(record.said_at),
        None if record.time_start is None else to_micros(record.time_start),
        None if record.time_end is None else to_micros(record.time_end),
        record.term_total,
        " ".join(record.terms),
        json.dumps(body, ensure_ascii=False, separators=(",", ":")),
        pack_counts(record.term_counts),
    )


def _record(row: Sequence[Any]) -> RecallRecord:
    return stored_record(row, from_micros, " ")


def _drop(db: sqlite3.Connection, where: str, args: Sequence[Any]) -> int:
    """Delete the records matching ``where`` with their postings, keeping the stats and the
    terms' record counts; how many."""
    rows = db.execute(f"SELECT term_count, terms FROM recall_records r WHERE {where}", args).fetchall()
    if not rows:
        return 0
    held: Counter[str] = Counter()
    for _count, terms in rows:
        held.update(set(terms.split(" ")) if terms else ())
    db.execute(f"DELETE FROM recall_terms WHERE rid IN (SELECT rid FROM recall_records r WHERE {where})", args)
    db.execute(f"DELETE FROM recall_records WHERE rid IN (SELECT rid FROM recall_records r WHERE {where})", args)
    _count_terms(db, held, -1)
    total = sum(int(count) for count, _terms in rows)
    db.execute("UPDATE recall_stats SET records = records - ?, total = total - ? WHERE one = 1", (len(rows), total))
    return len(rows)


def _count_terms(db: sqlite3.Connection, held: Counter[str], sign: int) -> None:
    """Move the record counts of terms (``recall_df``) by ``sign`` times ``held``; a term no
    record holds any more is dropped."""
    if not held:
        return
    changes = sorted(held.items())
    if sign > 0:
        db.executemany(
            "INSERT INTO recall_df (term, n) VALUES (?, ?) ON CONFLICT (term) DO UPDATE SET n = n + excluded.n", changes
        )
        return
    db.executemany("UPDATE recall_df SET n = n - ? WHERE term = ?", [(n, t) for t, n in changes])
    db.executemany("DELETE FROM recall_df WHERE term = ? AND n <= 0", [(t,) for t, _n in changes])


class SQLiteRecallIndex(RecallIndexMixin):
    """The recall-index half of :class:`~cogitator_memory.engines.sqlite.threads.SQLiteAdapter`."""

    if TYPE_CHECKING:  # provided by the adapter

        @property
        def connection(self) -> sqlite3.Connection: ...

        def _write(self) -> AbstractContextManager[sqlite3.Connection]: ...

        async def _search_read(self, work: Callable[[sqlite3.Connection], _T]) -> _T: ...

    async def _recall_put(self, records: list[RecallRecord]) -> None:
        with self._write() as db:
            ids = [r.id for r in records]
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                _drop(db, f"r.id IN ({_marks(len(chunk))})", chunk)
            postings: list[tuple[str, int, int]] = []
            held: Counter[str] = Counter()
            total = 0
            for record in records:
                cursor = db.execute(
                    "INSERT INTO recall_records (id, kind, agent_id, user_id, thread_id, status, said_us,"
                    " time_start_us, time_end_us, term_count, terms, body, term_freqs)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    _row(record),
                )
                rid = cursor.lastrowid
                assert rid is not None
                postings.extend((term, rid, tf) for term, tf in zip(record.terms, record.term_counts, strict=True))
                held.update(record.terms)
                total += record.term_total
            postings.sort()
            db.executemany("INSERT INTO recall_terms (term, rid, tf) VALUES (?, ?, ?)", postings)
            _count_terms(db, held, 1)
            db.execute(
                "UPDATE recall_stats SET records = records + ?, total = total + ? WHERE one = 1", (len(records), total)
            )

    async def _recall_get(self, ids: list[str]) -> list[RecallRecord]:
        out: list[RecallRecord] = []
        db = self.connection
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            rows = db.execute(f"SELECT {_COLUMNS} FROM recall_records r WHERE r.id IN ({_marks(len(chunk))})", chunk)
            out.extend(_record(row) for row in rows)
        return out

    async def _recall_delete(self, ids: list[str]) -> int:
        count = 0
        with self._write() as db:
            for start in range(0, len(ids), _CHUNK):
                chunk = ids[start : start + _CHUNK]
                count += _drop(db, f"r.id IN ({_marks(len(chunk))})", chunk)
        return count

    async def _recall_delete_scope(self, key: str, value: str) -> int:
        column = {"thread_id": "thread_id", "user_id": "user_id"}[key]
        with self._write() as db:
            return _drop(db, f"r.{column} = ?", (value,))

    async def _recall_stats(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        db = self.connection
        records, total = db.execute("SELECT records, total FROM recall_stats WHERE one = 1").fetchone()
        found = db.execute(f"SELECT term, n FROM recall_df WHERE term IN ({_marks(len(terms))})", terms)
        return int(records), int(total), {str(t): int(n) for t, n in found}

    async def _recall_keyword(
        self,
        weights: list[tuple[str, float]],
        avg_len: float,
        flt: RecallFilter,
        limit: int,
        newest: int | None = None,
    ) -> list[tuple[RecallRecord, float]]:
        # on the store's read connection, off the event loop (the query's embedding and the
        # vector search go on meanwhile), when the file has one
        return await self._search_read(lambda db: _keyword(db, weights, avg_len, flt, limit, newest))

    async def _recall_time(self, start: datetime, end: datetime, flt: RecallFilter, limit: int) -> list[RecallRecord]:
        where, args = scope_where(flt)
        lo, hi = to_micros(start), to_micros(end)
        sql = (
            f"SELECT {_COLUMNS} FROM recall_records r WHERE r.rid IN ("
            f" SELECT rid FROM (SELECT r.rid FROM recall_records r WHERE r.said_us >= ? AND r.said_us < ? AND {where}"
            "  ORDER BY r.said_us DESC, r.id LIMIT ?)"
            f" UNION SELECT rid FROM (SELECT r.rid FROM recall_records r WHERE r.time_start_us IS NOT NULL"
            f"  AND r.time_start_us < ? AND ((r.time_end_us IS NULL AND r.time_start_us >= ?)"
            f"  OR (r.time_end_us IS NOT NULL AND r.time_end_us > ?)) AND {where}"
            "  ORDER BY r.said_us DESC, r.id LIMIT ?))"
            " ORDER BY r.said_us DESC, r.id LIMIT ?"
        )
        params = [lo, hi, *args, limit, hi, lo, lo, *args, limit, limit]
        return [_record(row) for row in self.connection.execute(sql, params)]

    async def _recall_count(self, flt: RecallFilter) -> int:
        where, args = scope_where(flt)
        return int(self.connection.execute(f"SELECT count(*) FROM recall_records r WHERE {where}", args).fetchone()[0])

    async def _recall_page(self, cursor: str | None, limit: int) -> tuple[list[RecallRecord], str | None]:
        # by id, along its unique index: the cursor is the last id returned
        rows = self.connection.execute(
            f"SELECT {_COLUMNS} FROM recall_records r WHERE r.id > ? ORDER BY r.id LIMIT ?", (cursor or "", limit)
        ).fetchall()
        records = [_record(row) for row in rows]
        return records, (records[-1].id if len(records) == limit else None)

    async def _recall_state_get(self, key: str) -> str | None:
        row = self.connection.execute("SELECT value FROM recall_state WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    async def _recall_state_set(self, key: str, value: str) -> None:
        with self._write() as db:
            db.execute(
                "INSERT INTO recall_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )


def _keyword(
    db: sqlite3.Connection,
    weights: list[tuple[str, float]],
    avg_len: float,
    flt: RecallFilter,
    limit: int,
    newest: int | None,
) -> list[tuple[RecallRecord, float]]:
    """The keyword search of :meth:`SQLiteRecallIndex._recall_keyword` on ``db``."""
    k1 = RECALL_BM25.k1
    fixed, per_length = length_terms(avg_len)
    where, args = scope_where(flt)
    if without_turns(flt):
        # other kinds only: the postings of records that are not turns are kept before any is
        # joined, by the partial index of those records (m014): listed first when they are
        # few (a store of turns: no posting of a turn is read past the list), else probed for
        # each posting (the list of 200,000 items and facts cost 0.4-1.2 s a search)
        listed = db.execute(_OTHERS_UP_TO, (LISTED_OTHERS + 1,)).fetchone()[0] <= LISTED_OTHERS
        kept = (
            "t.rid IN (SELECT rid FROM recall_records WHERE kind <> 'turn')"
            if listed
            else "EXISTS (SELECT 1 FROM recall_records x INDEXED BY recall_not_turns"
            " WHERE x.rid = t.rid AND x.kind <> 'turn')"
        )
        where = f"{kept} AND {where}"
    params: list[Any] = [x for pair in weights for x in pair]
    params += [k1 + 1.0, k1, fixed, per_length]
    postings = "recall_terms"
    if newest is not None:
        # the records indexed last: a rid is never smaller than an earlier write's, and the
        # postings' key (term, rid) reads them backwards from the newest
        postings = "(SELECT term, rid, tf FROM recall_terms WHERE term = ? ORDER BY rid DESC LIMIT ?)"
        params += [weights[0][0], newest]
    sql = (
        f"WITH q (term, idf) AS (VALUES {','.join('(?, ?)' for _ in weights)}),"
        " top AS (SELECT t.rid AS rid, sum(q.idf * t.tf * ? / (t.tf + ? * (? + ? * r.term_count))) AS score"
        f" FROM q JOIN {postings} t ON t.term = q.term JOIN recall_records r INDEXED BY recall_scoring"
        " ON r.rid = t.rid"
        f" WHERE {where} GROUP BY t.rid ORDER BY score DESC, min(r.id) LIMIT ?)"
        f" SELECT {_COLUMNS}, top.score FROM top JOIN recall_records r ON r.rid = top.rid"
        " ORDER BY top.score DESC, r.id"
    )
    params += [*args, limit]
    rows = db.execute(sql, params).fetchall()
    return [(_record(row), float(row[12])) for row in rows if row[12] > 0]


__all__ = ["RECALL_SEARCH_INDEXES", "RECALL_TABLES", "SQLiteRecallIndex", "scope_where"]
