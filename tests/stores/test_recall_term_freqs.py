"""Records written before the index kept each term's count (SQLite before ``m017_recall_term_freqs``,
PostgreSQL before ``m015_recall_term_freqs``: every occurrence in ``terms``, no counts) read back,
rank and go away exactly as records written now."""

import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from cogitator_memory import PostgresAdapter, SQLiteAdapter, unwrap
from cogitator_memory.clock import to_micros
from cogitator_memory.engines.postgres.schema import MIGRATIONS as PG_MIGRATIONS
from cogitator_memory.engines.postgres.schema import migrate as pg_migrate
from cogitator_memory.engines.postgres.sql import quote_ident
from cogitator_memory.engines.sqlite.schema import MIGRATIONS, SCHEMA_VERSION, migrate
from cogitator_memory.index.terms import recall_terms

SAID = datetime(2026, 1, 1, tzinfo=UTC)
TEXT = "Ana painted the wall, then painted the door, and painting tires her. The wall is blue."
OTHER = "We talked about the weather on the walk."
EVERY = recall_terms(TEXT)
COUNTS = {t: EVERY.count(t) for t in EVERY}
BODY = '{"source_id":"old","text":"' + TEXT + '"}'


def _turn(source: str, text: str) -> dict[str, Any]:
    return {"kind": "turn", "source_id": source, "text": text, "said_at": SAID}


async def _same_as_a_record_written_now(store: Any) -> None:
    unwrap(await store.index_recall_records([_turn("new", TEXT), _turn("x", OTHER)]))
    old, new = unwrap(await store.get_recall_records(["turn:old", "turn:new"]))
    assert len(COUNTS) < len(EVERY), "the text repeats terms"
    assert (old.terms, old.term_counts) == (new.terms, new.term_counts) == (list(COUNTS), list(COUNTS.values()))
    assert old.term_total == new.term_total == len(EVERY)
    found = unwrap(await store.recall_keyword("painting wall", limit=10))
    scores = {c.record.source_id: c.score for c in found}
    assert set(scores) == {"old", "new"} and scores["old"] == scores["new"], scores
    # deleted, the old record takes its terms' counts with it; written again it scores the same
    assert unwrap(await store.delete_recall_records(["turn:old"])) == 1
    unwrap(await store.index_recall_records([_turn("old", TEXT)]))
    again = {c.record.source_id: c.score for c in unwrap(await store.recall_keyword("painting wall", limit=10))}
    assert again == scores
    assert unwrap(await store.count_recall_records()) == 3


async def test_sqlite_records_written_before_m017_read_rank_and_delete_as_new_ones(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        migrate(db, MIGRATIONS[:16])  # the file as version 16 left it, with a record of then
        rid = db.execute(
            "INSERT INTO recall_records (id, kind, status, said_us, term_count, terms, body)"
            " VALUES ('turn:old', 'turn', 'active', ?, ?, ?, ?)",
            (to_micros(SAID), len(EVERY), " ".join(EVERY), BODY),
        ).lastrowid
        db.executemany(
            "INSERT INTO recall_terms (term, rid, tf) VALUES (?, ?, ?)", [(t, rid, n) for t, n in COUNTS.items()]
        )
        db.executemany("INSERT INTO recall_df (term, n) VALUES (?, 1)", [(t,) for t in COUNTS])
        db.execute("UPDATE recall_stats SET records = 1, total = ? WHERE one = 1", (len(EVERY),))
    async with SQLiteAdapter(path=str(path)) as store:
        assert store.schema_version == SCHEMA_VERSION
        await _same_as_a_record_written_now(store)
    with closing(sqlite3.connect(path)) as db:
        assert db.execute("SELECT count(*) FROM recall_records WHERE term_freqs IS NULL").fetchone() == (0,)


async def test_postgres_records_written_before_m015_read_rank_and_delete_as_new_ones(pg_url: str, schema: str) -> None:
    s = quote_ident(schema)
    async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
        await pg_migrate(conn, schema, PG_MIGRATIONS[:14])  # the schema before m015, with a record of then
        cur = await conn.execute(
            f"INSERT INTO {s}.recall_records (id, kind, status, said_at, term_count, terms, body)"
            " VALUES ('turn:old', 'turn', 'active', %s, %s, %s, %s) RETURNING rid",
            (SAID, len(EVERY), "\x1f".join(EVERY), BODY),
        )
        row = await cur.fetchone()
        assert row is not None
        for term, n in COUNTS.items():
            await conn.execute(
                f"INSERT INTO {s}.recall_terms (term, rid, tf, len) VALUES (%s, %s, %s, %s)",
                (term, row[0], n, len(EVERY)),
            )
            await conn.execute(f"INSERT INTO {s}.recall_df (term, df) VALUES (%s, 1)", (term,))
        await conn.execute(f"UPDATE {s}.recall_stats SET records = 1, total = %s", (len(EVERY),))
    async with PostgresAdapter(url=pg_url, schema=schema) as store:  # migrates to the newest
        await _same_as_a_record_written_now(store)
