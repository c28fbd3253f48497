"""How PostgreSQL stores recall records (migration ``m011_recall_records_inline``): a record's
text and terms are kept uncompressed in its row, so a search reads them back without
decompressing; records written before the migration keep their compression and read the same."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg

from cogitator_memory import unwrap
from cogitator_memory.engines.postgres.adapter import PostgresAdapter
from cogitator_memory.engines.postgres.schema import MIGRATIONS, migrate, quote_ident
from cogitator_memory.index.records import RecallRecord
from cogitator_memory.index.terms import recall_terms

SAID = datetime(2026, 1, 1, tzinfo=UTC)
#: A long turn (about 2,400 characters, as long chat turns are): PostgreSQL's default would
#: compress its row (over about 2 KB with its terms).
LONG = " ".join(f"Ana planted {n} tomato seedlings in the allotment by the river in spring." for n in range(32))


def _record(source: str, text: str) -> RecallRecord:
    return RecallRecord(
        id=f"turn:{source}",
        kind="turn",
        source_id=source,
        agent_id="a",
        user_id="ana",
        thread_id="t1",
        role="user",
        seq=1,
        text=text,
        terms=recall_terms(text),
        said_at=SAID,
    )


async def _compression(url: str, schema: str) -> dict[str, tuple[str | None, str | None]]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT id, pg_column_compression(terms), pg_column_compression(body)"
            f" FROM {quote_ident(schema)}.recall_records ORDER BY id"
        )
        return {str(r[0]): (r[1], r[2]) for r in await cur.fetchall()}


async def test_records_are_kept_uncompressed_and_older_ones_read_the_same(pg_url: str, schema: str) -> None:
    s = quote_ident(schema)
    old = _record("old", LONG)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await migrate(conn, schema, MIGRATIONS[:10])  # the schema as m010 left it
        await conn.execute(  # a record as m010 stored it (PostgreSQL's default compresses it)
            f"INSERT INTO {s}.recall_records (id, kind, agent_id, user_id, thread_id, status, said_at, term_count,"
            " terms, body) VALUES (%s, 'turn', 'a', 'ana', 't1', 'active', %s, %s, %s, %s)",
            (
                old.id,
                SAID,
                len(recall_terms(LONG)),  # every occurrence, as records were written then
                "\x1f".join(recall_terms(LONG)),
                old.model_dump_json(include={"source_id", "role", "seq", "text"}, exclude_none=True),
            ),
        )
    async with PostgresAdapter(url=pg_url, schema=schema) as memory:  # migrates to m011
        unwrap(await memory.index_recall_records([_record("new", LONG)]))
        older, new = unwrap(await memory.get_recall_records(["turn:old", "turn:new"]))
        assert older == old
        assert new.text == LONG and new.terms == old.terms and new.term_counts == old.term_counts
        assert new.term_total == len(recall_terms(LONG)) > 200 and len(new.terms) < new.term_total
        found = unwrap(await memory.recall_keyword("tomatoes planted", filter={"user_id": "ana"}))
        assert [c.record for c in found] == [new]
    held = await _compression(pg_url, schema)
    assert held["turn:old"] == ("pglz", "pglz"), held
    assert held["turn:new"] == (None, None), "kept uncompressed in its row"
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        cur = await conn.execute("SELECT reloptions FROM pg_class WHERE oid = %s::regclass", (f"{s}.recall_records",))
        assert await cur.fetchone() == (["toast_tuple_target=8160"],)
