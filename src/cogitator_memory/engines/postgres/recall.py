"""The recall index in PostgreSQL: the primitives of :class:`~cogitator_memory.index.base.RecallIndexMixin`
as SQL, mixed into :class:`~cogitator_memory.engines.postgres.adapter.PostgresAdapter`.

Tables (migration ``m009_recall_index``), in the store's schema:

- ``recall_records``: one row per record, the fields searches filter by as columns (scope, kind,
  status, ``said_at``, the named time), its terms as one text joined by U+001F (``terms``,
  since ``m010``: read back whole, not element by element) and the rest as JSON text (``body``). ``said_at`` is under
  a btree in the channel's order (``said_at DESC, id``); the named time under a GiST index of
  the closed range ``[time_start, coalesce(time_end, time_start)]`` (records naming a time only),
  so a time search reads the records said in the range and those whose named time meets it, not
  every timed record; ``user_id`` and ``thread_id`` are indexed for counts and scope deletes.
- ``recall_terms``: the inverted index, ``(term, rid)`` as the primary key with ``tf`` and the
  record's length carried in the index (``INCLUDE``), so BM25 is one index range per query term
  summed in SQL, without reading the records; only the best ones in score order are then joined
  to their rows and filtered by scope, in the same statement, until ``limit`` pass. Of a term
  past the postings budget, the postings of the records indexed last are read first, backwards
  along the key (``rid`` is an identity: it grows with every write).
- ``recall_df``: how many records hold each term, and ``recall_stats`` (one row): how many records
  and how many terms in all. Both are changed by every write in its transaction, so a search
  reads ``N``, ``avgdl`` and the document frequencies of its terms from a handful of rows.
- ``recall_state``: the writers' strings.

Every write is one transaction that first locks the stats row (``FOR UPDATE``): writers of the
index queue up there, so the counters never lose an update and two writers never deadlock over
the rows they both touch. (A batch of memory items writes its records in its own transaction,
after its item rows: :class:`RecallWrite`; the stats row is still the first row of the index it
locks, and no writer holding it waits for an item row.) A record's postings are found again from its ``terms`` column, so a
delete reads the postings by primary key (no second index on ``recall_terms``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from ...clock import to_utc
from ...errors import InvalidArgumentError
from ...index.base import RECALL_BM25, RecallIndexMixin, length_terms, stored_record
from ...index.records import RecallFilter, RecallRecord, pack_counts, without_turns
from .sql import quote_ident

if TYPE_CHECKING:
    from psycopg import AsyncConnection

T = TypeVar("T")

#: The statements of migration ``m009_recall_index`` (``{s}`` is the schema); each may run again
#: (a schema whose migration record was lost keeps what it had).
RECALL_TABLES: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS {s}.recall_records (
        rid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id text COLLATE "C" NOT NULL UNIQUE,
        kind text COLLATE "C" NOT NULL,
        agent_id text COLLATE "C",
        user_id text COLLATE "C",
        thread_id text COLLATE "C",
        status text COLLATE "C" NOT NULL,
        said_at timestamptz NOT NULL,
        time_start timestamptz,
        time_end timestamptz,
        term_count integer NOT NULL,
        terms text[] COLLATE "C" NOT NULL,
        body text NOT NULL
    )""",
    'CREATE INDEX IF NOT EXISTS recall_by_said ON {s}.recall_records (said_at DESC, id COLLATE "C")',
    "CREATE INDEX IF NOT EXISTS recall_by_user ON {s}.recall_records (user_id, said_at DESC)",
    "CREATE INDEX IF NOT EXISTS recall_by_thread ON {s}.recall_records (thread_id)",
    "CREATE INDEX IF NOT EXISTS recall_by_named_time ON {s}.recall_records"
    " USING gist (tstzrange(time_start, coalesce(time_end, time_start), '[]')) WHERE time_start IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS {s}.recall_terms (
        term text COLLATE "C" NOT NULL,
        rid bigint NOT NULL,
        tf integer NOT NULL,
        len integer NOT NULL,
        PRIMARY KEY (term, rid) INCLUDE (tf, len)
    )""",
    'CREATE TABLE IF NOT EXISTS {s}.recall_df (term text COLLATE "C" PRIMARY KEY, df bigint NOT NULL)',
    """CREATE TABLE IF NOT EXISTS {s}.recall_stats (
        one integer PRIMARY KEY CHECK (one = 1), records bigint NOT NULL, total bigint NOT NULL
    )""",
    "INSERT INTO {s}.recall_stats (one, records, total) VALUES (1, 0, 0) ON CONFLICT (one) DO NOTHING",
    'CREATE TABLE IF NOT EXISTS {s}.recall_state (key text COLLATE "C" PRIMARY KEY, value text NOT NULL)',
)

#: Migration ``m010_recall_terms_text``: a record's terms as one text, joined by ``_TERM_SEP``,
#: instead of a ``text[]``. Reading the candidates' terms back was most of a keyword search at
#: 100,000 turns: 400 records of some 300 terms each, each array detoasted and written out
#: element by element (``array_to_string``) took 49-63 ms of a 59 ms statement, one text 24-27 ms.
#: It may run again on a table converted already (a schema whose migration record was lost).
RECALL_TERMS_TEXT: tuple[str, ...] = (
    "DO $m010$ BEGIN"
    " IF (SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
    " WHERE attrelid = '{s}.recall_records'::regclass AND attname = 'terms') = 'text[]' THEN"
    ' ALTER TABLE {s}.recall_records ALTER COLUMN terms TYPE text COLLATE "C" USING array_to_string(terms, chr(31));'
    " END IF; END $m010$",
)

#: Migration ``m011_recall_records_inline``: a record's row kept whole and uncompressed in its
#: table page up to 8,160 bytes (``toast_tuple_target``; PostgreSQL's default of about 2 KB
#: compressed most rows, a long turn's text and terms). A search reads every candidate's text
#: and terms back: decompressing them took about a fifth of the keyword channel's statement (400
#: candidates at 10,000 turns: 23.2 -> 18.4 ms p50, same run), for 50% more table (26 -> 41 MB
#: at 10,000 turns; the schema 271 MB). Rows written before keep their compression until they
#: are written again.
RECALL_RECORDS_INLINE: tuple[str, ...] = ("ALTER TABLE {s}.recall_records SET (toast_tuple_target = 8160)",)

#: Migration ``m012_recall_not_turns``: the records that are not turns under a partial index of
#: their ``rid``. A keyword search for other kinds (items, facts, file sections) keeps the postings
#: of those records before reading any record: it read each scored turn's row to learn it was a
#: turn (up to the postings budget, some 5,000 rows of the biggest table), now it probes an index
#: as small as the items (100,000 turns and no items, warm: 5.40 -> 1.56 ms p50).
RECALL_NOT_TURNS: tuple[str, ...] = (
    "CREATE INDEX IF NOT EXISTS recall_not_turns ON {s}.recall_records (rid) WHERE kind <> 'turn'",
)

#: Migration ``m015_recall_term_freqs``: a record's terms are written each once, their counts
#: packed beside them in ``term_freqs`` (:func:`~cogitator_memory.index.records.pack_counts`),
#: so a search reads about a third of the terms it read (a turn's every occurrence) and counts
#: none of them. Records written before keep ``NULL`` there and every occurrence in ``terms``:
#: read, they are counted (``cogitator-memory reindex`` writes them again).
RECALL_TERM_FREQS: tuple[str, ...] = ("ALTER TABLE {s}.recall_records ADD COLUMN IF NOT EXISTS term_freqs bytea",)

#: The fields of a record kept in its JSON body (the others are columns).
_BODY_FIELDS = frozenset({"source_id", "role", "name", "seq", "text", "valid_from", "valid_to", "lineage"})
#: Joins a record's terms into one array element on the way in (a term holding it is refused).
_TERM_SEP = "\x1f"
#: A record's columns as read back (its terms one text, split in one call).
_COLUMNS = (
    "r.id, r.kind, r.agent_id, r.user_id, r.thread_id, r.status, r.said_at, r.time_start, r.time_end, r.terms, r.body,"
    " r.term_freqs"
)
_SCOPE_KEYS = ("agent_id", "user_id", "thread_id")


@dataclass(frozen=True, slots=True)
class _RecallSql:
    """The recall statements of one schema (plain strings, so psycopg prepares the frequent ones)."""

    records: str
    lock: str
    insert: str
    drop_ids: str
    drop_thread: str
    drop_user: str
    prune: str
    stats: str
    get: str
    state_get: str
    state_set: str


def _drop_sql(s: str, where: str) -> str:
    """Delete the records matching ``where`` (on ``r``) with their postings, keeping the counters;
    returns how many went and the terms no record holds any more."""
    return (
        f"WITH gone AS (DELETE FROM {s}.recall_records r WHERE {where} RETURNING r.rid, r.terms, r.term_count),"
        f" posts AS (DELETE FROM {s}.recall_terms p USING"
        " (SELECT DISTINCT g.rid, u.term FROM gone g"
        " CROSS JOIN LATERAL unnest(string_to_array(g.terms, chr(31))) AS u(term)) x"
        " WHERE p.term = x.term AND p.rid = x.rid RETURNING p.term),"
        f" freq AS (UPDATE {s}.recall_df d SET df = d.df - c.n"
        " FROM (SELECT term, count(*) AS n FROM posts GROUP BY term) c WHERE d.term = c.term RETURNING d.term, d.df),"
        f" counters AS (UPDATE {s}.recall_stats SET records = records - (SELECT count(*) FROM gone),"
        " total = total - (SELECT coalesce(sum(term_count), 0) FROM gone) WHERE one = 1 RETURNING 1)"
        " SELECT (SELECT count(*) FROM gone), ARRAY(SELECT term FROM freq WHERE df <= 0)"
    )


@lru_cache(maxsize=64)
def _recall_sql(schema: str) -> _RecallSql:
    s = quote_ident(schema)
    return _RecallSql(
        records=f"{s}.recall_records",
        lock=f"SELECT records FROM {s}.recall_stats WHERE one = 1 FOR UPDATE",
        insert=(
            f"WITH ins AS (INSERT INTO {s}.recall_records (id, kind, agent_id, user_id, thread_id, status, said_at,"
            " time_start, time_end, term_count, terms, body, term_freqs)"
            " SELECT u.id, u.kind, u.agent_id, u.user_id, u.thread_id, u.status, u.said_at, u.time_start, u.time_end,"
            " u.term_count, u.terms, u.body, u.term_freqs"
            " FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::text[],"
            " %b::timestamptz[], %b::timestamptz[], %b::timestamptz[], %b::int[], %b::text[], %b::text[],"
            " %b::bytea[])"
            " AS u(id, kind, agent_id, user_id, thread_id, status, said_at, time_start, time_end, term_count,"
            " terms, body, term_freqs)"
            " RETURNING rid, terms, term_count, term_freqs),"
            # each term once, its count the two bytes at its place in term_freqs (little-endian)
            f" post AS (INSERT INTO {s}.recall_terms (term, rid, tf, len)"
            " SELECT u.term, ins.rid,"
            " get_byte(ins.term_freqs, 2 * (u.at::int - 1)) + 256 * get_byte(ins.term_freqs, 2 * (u.at::int - 1) + 1),"
            " ins.term_count"
            " FROM ins CROSS JOIN LATERAL unnest(string_to_array(ins.terms, chr(31))) WITH ORDINALITY AS u(term, at)"
            " ORDER BY u.term, ins.rid RETURNING term),"
            f" freq AS (INSERT INTO {s}.recall_df AS d (term, df)"
            " SELECT term, count(*) FROM post GROUP BY term ORDER BY term"
            " ON CONFLICT (term) DO UPDATE SET df = d.df + EXCLUDED.df RETURNING 1)"
            f" UPDATE {s}.recall_stats SET records = records + (SELECT count(*) FROM ins),"
            " total = total + (SELECT coalesce(sum(term_count), 0) FROM ins) WHERE one = 1"
        ),
        drop_ids=_drop_sql(s, "r.id = ANY(%b::text[])"),
        drop_thread=_drop_sql(s, "r.thread_id = %s"),
        drop_user=_drop_sql(s, "r.user_id = %s"),
        prune=f"DELETE FROM {s}.recall_df WHERE term = ANY(%b::text[]) AND df <= 0",
        stats=(
            f"SELECT st.records, st.total, d.term, d.df FROM {s}.recall_stats st"
            f" LEFT JOIN {s}.recall_df d ON d.term = ANY(%b::text[]) AND d.df > 0 WHERE st.one = 1"
        ),
        get=f"SELECT {_COLUMNS} FROM {s}.recall_records r WHERE r.id = ANY(%b::text[])",
        state_get=f"SELECT value FROM {s}.recall_state WHERE key = %s",
        state_set=(
            f"INSERT INTO {s}.recall_state (key, value) VALUES (%s, %s)"
            " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
        ),
    )


def scope_where(flt: RecallFilter) -> tuple[str, dict[str, Any]]:
    """SQL conditions (on ``recall_records`` as ``r``, with named parameters) for
    :func:`~cogitator_memory.index.records.record_in_scope`."""
    parts: list[str] = []
    args: dict[str, Any] = {}
    for key in _SCOPE_KEYS:
        value = getattr(flt, key)
        if value is not None:
            parts.append(f"(r.{key} IS NULL OR r.{key} = %({key})s)")
            args[key] = value
    if flt.kinds is not None:
        parts.append("r.kind = ANY(%(kinds)b::text[])")
        args["kinds"] = sorted(set(flt.kinds))
    parts.append("r.status = ANY(%(statuses)b::text[])")
    args["statuses"] = sorted(set(flt.statuses))
    return " AND ".join(parts), args


@lru_cache(maxsize=128)
def _keyword_sql(schema: str, where: str, not_turns: bool = False, newest: bool = False) -> str:
    # The scores are summed from the postings alone (tf and length are in the index); the
    # records are then read by rid in score order, filtered by scope, until ``limit`` have
    # passed (the incremental sort orders equal scores by id). ``LIMIT 1`` keeps the lateral
    # read a lookup per candidate: flattened into a join, the planner may scan the scope instead.
    # ``not_turns`` (a search of other kinds only) keeps the postings of records that are not
    # turns first, through the small partial index ``recall_not_turns`` (see RECALL_NOT_TURNS).
    # ``newest`` (one term) reads only the term's postings of the ``%(newest)s`` records indexed
    # last: rids grow with every write, and the postings' key (term, rid) reads them backwards.
    s = quote_ident(schema)
    postings = (
        f"(SELECT term, rid, tf, len FROM {s}.recall_terms WHERE term = (%(terms)b::text[])[1]"
        " ORDER BY rid DESC LIMIT %(newest)s)"
        if newest
        else f"{s}.recall_terms"
    )
    others = (
        f" WHERE EXISTS (SELECT 1 FROM {s}.recall_records o WHERE o.rid = t.rid AND o.kind <> 'turn')"
        if not_turns
        else ""
    )
    return (
        "WITH q AS (SELECT * FROM unnest(%(terms)b::text[], %(idfs)b::float8[]) AS q(term, idf)),"
        " scored AS (SELECT t.rid, sum(q.idf * t.tf * %(k1p1)s / (t.tf + %(k1)s * (%(fixed)s + %(per_len)s * t.len)))"
        f" AS score FROM q JOIN {postings} t ON t.term = q.term{others} GROUP BY t.rid)"
        f" SELECT {_COLUMNS}, b.score FROM (SELECT rid, score FROM scored WHERE score > 0 ORDER BY score DESC) b"
        f" CROSS JOIN LATERAL (SELECT * FROM {s}.recall_records r WHERE r.rid = b.rid AND {where} LIMIT 1) r"
        " ORDER BY b.score DESC, r.id LIMIT %(limit)s"
    )


@lru_cache(maxsize=128)
def _time_sql(schema: str, where: str) -> str:
    s = quote_ident(schema)
    named = "tstzrange(r.time_start, coalesce(r.time_end, r.time_start), '[]')"
    return (
        f"SELECT {_COLUMNS} FROM {s}.recall_records r WHERE r.rid IN ("
        f"(SELECT r.rid FROM {s}.recall_records r WHERE r.said_at >= %(lo)s AND r.said_at < %(hi)s AND {where}"
        " ORDER BY r.said_at DESC, r.id LIMIT %(limit)s)"
        f" UNION (SELECT r.rid FROM {s}.recall_records r WHERE r.time_start IS NOT NULL"
        f" AND {named} && tstzrange(%(lo)s, %(hi)s, '[]')"
        " AND r.time_start < %(hi)s AND ((r.time_end IS NULL AND r.time_start >= %(lo)s)"
        " OR (r.time_end IS NOT NULL AND r.time_end > %(lo)s))"
        f" AND {where} ORDER BY r.said_at DESC, r.id LIMIT %(limit)s))"
        " ORDER BY r.said_at DESC, r.id LIMIT %(limit)s"
    )


def _check_terms(records: list[RecallRecord]) -> None:
    for i, record in enumerate(records):
        for term in record.terms:
            if not term or _TERM_SEP in term or "\x00" in term:
                raise InvalidArgumentError(
                    f"records[{i}].terms", f"holds a term PostgreSQL's index cannot keep: {term!r}"
                )


def _columns(records: list[RecallRecord]) -> list[list[Any]]:
    return [
        [r.id for r in records],
        [r.kind for r in records],
        [r.agent_id for r in records],
        [r.user_id for r in records],
        [r.thread_id for r in records],
        [r.status for r in records],
        [r.said_at for r in records],
        [r.time_start for r in records],
        [r.time_end for r in records],
        [r.term_total for r in records],
        [_TERM_SEP.join(r.terms) for r in records],
        [r.model_dump_json(include=set(_BODY_FIELDS), exclude_none=True) for r in records],
        [pack_counts(r.term_counts) for r in records],
    ]


class RecallWrite:
    """One write of the index, its arguments laid out and checked up front: the records to put
    (each replacing the record of its id) and the ids of records to delete (``drop``). Its
    statements run inside a transaction of the caller's (:meth:`run`), so a writer can put the
    records of rows it writes in the same transaction (see ``PostgresItems._write_plan``)."""

    __slots__ = ("_columns", "_drop", "_sql")

    def __init__(self, schema: str, records: list[RecallRecord], drop: Sequence[str] = ()) -> None:
        _check_terms(records)
        self._sql = _recall_sql(schema)
        self._drop = [*drop, *(r.id for r in records)]
        self._columns = _columns(records) if records else None

    async def run(self, conn: AsyncConnection[Any]) -> None:
        """Lock the counters, drop the records replaced or deleted, insert the new ones and prune
        the terms no record holds any more (in the caller's transaction)."""
        if not self._drop:
            return
        sql = self._sql
        await conn.execute(sql.lock)
        cur = await conn.execute(sql.drop_ids, (self._drop,))
        row = await cur.fetchone()
        assert row is not None
        if self._columns is not None:
            await conn.execute(sql.insert, self._columns)
        if row[1]:
            await conn.execute(sql.prune, (row[1],))


def _record(row: Sequence[Any]) -> RecallRecord:
    return stored_record(row, to_utc, _TERM_SEP)


class PostgresRecallIndex(RecallIndexMixin):
    """The recall-index half of :class:`~cogitator_memory.engines.postgres.adapter.PostgresAdapter`:
    it runs its SQL through the adapter's ``run`` (a pooled connection within its deadline)."""

    if TYPE_CHECKING:  # provided by the adapter
        schema: str

        async def run(
            self, operation: Callable[[AsyncConnection[Any]], Awaitable[T]], *, timeout: float | None = None
        ) -> T: ...

    @property
    def _recall(self) -> _RecallSql:
        return _recall_sql(self.schema)

    async def _recall_drop(self, drop: str, arg: Any) -> int:
        """One transaction: lock the counters, drop the matching records, prune the emptied terms."""
        sql = self._recall

        async def op(conn: AsyncConnection[Any]) -> int:
            async with conn.transaction():
                await conn.execute(sql.lock)
                cur = await conn.execute(drop, (arg,))
                row = await cur.fetchone()
                assert row is not None
                if row[1]:
                    await conn.execute(sql.prune, (row[1],))
                return int(row[0])

        return await self.run(op)

    async def _recall_put(self, records: list[RecallRecord]) -> None:
        write = RecallWrite(self.schema, records)

        async def op(conn: AsyncConnection[Any]) -> None:
            async with conn.transaction():
                await write.run(conn)

        await self.run(op)

    async def _recall_get(self, ids: list[str]) -> list[RecallRecord]:
        sql = self._recall.get

        async def op(conn: AsyncConnection[Any]) -> list[Any]:
            cur = await conn.execute(sql, (ids,))
            return await cur.fetchall()

        return [_record(row) for row in await self.run(op)]

    async def _recall_delete(self, ids: list[str]) -> int:
        return await self._recall_drop(self._recall.drop_ids, ids)

    async def _recall_delete_scope(self, key: str, value: str) -> int:
        sql = self._recall
        return await self._recall_drop(sql.drop_thread if key == "thread_id" else sql.drop_user, value)

    async def _recall_stats(self, terms: list[str]) -> tuple[int, int, dict[str, int]]:
        sql = self._recall.stats

        async def op(conn: AsyncConnection[Any]) -> list[Any]:
            cur = await conn.execute(sql, (terms,))
            return await cur.fetchall()

        rows = await self.run(op)
        if not rows:
            return 0, 0, {}
        freqs = {str(row[2]): int(row[3]) for row in rows if row[2] is not None}
        return int(rows[0][0]), int(rows[0][1]), freqs

    async def _recall_keyword(
        self,
        weights: list[tuple[str, float]],
        avg_len: float,
        flt: RecallFilter,
        limit: int,
        newest: int | None = None,
    ) -> list[tuple[RecallRecord, float]]:
        k1 = RECALL_BM25.k1
        fixed, per_length = length_terms(avg_len)
        where, params = scope_where(flt)
        sql = _keyword_sql(self.schema, where, without_turns(flt), newest is not None)
        if newest is not None:
            params["newest"] = newest
        params.update(
            terms=[t for t, _ in weights],
            idfs=[w for _, w in weights],
            k1p1=k1 + 1.0,
            k1=k1,
            fixed=fixed,
            per_len=per_length,
            limit=limit,
        )

        async def op(conn: AsyncConnection[Any]) -> list[Any]:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

        return [(_record(row), float(row[12])) for row in await self.run(op)]

    async def _recall_time(self, start: datetime, end: datetime, flt: RecallFilter, limit: int) -> list[RecallRecord]:
        where, params = scope_where(flt)
        sql = _time_sql(self.schema, where)
        params.update(lo=start, hi=end, limit=limit)

        async def op(conn: AsyncConnection[Any]) -> list[Any]:
            cur = await conn.execute(sql, params)
            return await cur.fetchall()

        return [_record(row) for row in await self.run(op)]

    async def _recall_count(self, flt: RecallFilter) -> int:
        where, params = scope_where(flt)
        sql = f"SELECT count(*) FROM {self._recall.records} r WHERE {where}"

        async def op(conn: AsyncConnection[Any]) -> int:
            cur = await conn.execute(sql, params)
            row = await cur.fetchone()
            return 0 if row is None else int(row[0])

        return await self.run(op)

    async def _recall_page(self, cursor: str | None, limit: int) -> tuple[list[RecallRecord], str | None]:
        # by id, along its unique index (collation "C"): the cursor is the last id returned
        sql = f"SELECT {_COLUMNS} FROM {self._recall.records} r WHERE r.id > %s ORDER BY r.id LIMIT %s"

        async def op(conn: AsyncConnection[Any]) -> list[Any]:
            cur = await conn.execute(sql, (cursor or "", limit))
            return await cur.fetchall()

        records = [_record(row) for row in await self.run(op)]
        return records, (records[-1].id if len(records) == limit else None)

    async def _recall_state_get(self, key: str) -> str | None:
        sql = self._recall.state_get

        async def op(conn: AsyncConnection[Any]) -> str | None:
            cur = await conn.execute(sql, (key,))
            row = await cur.fetchone()
            return None if row is None else str(row[0])

        return await self.run(op)

    async def _recall_state_set(self, key: str, value: str) -> None:
        sql = self._recall.state_set

        async def op(conn: AsyncConnection[Any]) -> None:
            await conn.execute(sql, (key, value))

        await self.run(op)


__all__ = [
    "RECALL_RECORDS_INLINE",
    "RECALL_TABLES",
    "RECALL_TERMS_TEXT",
    "PostgresRecallIndex",
    "RecallWrite",
    "scope_where",
]
