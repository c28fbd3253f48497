"""What docs/cascade.md says of PostgreSQL's files after a delete, checked by reading the table
file: a plain VACUUM can leave a deleted row's bytes in it, VACUUM FULL leaves none."""

from __future__ import annotations

import secrets

import psycopg

from cogitator_memory.testing import service_url

SECRET = b"zelqivor-passport-X1234567"


def _file_holds_secret(conn: psycopg.Connection, table: str) -> bool:
    conn.execute("CHECKPOINT")  # the table's pages on disk as they are now
    path = conn.execute("SELECT pg_relation_filepath(%s)", (table,)).fetchone()
    assert path is not None
    data = conn.execute("SELECT pg_read_binary_file(%s)", (path[0],)).fetchone()
    assert data is not None
    return SECRET in bytes(data[0])


def test_plain_vacuum_leaves_a_deleted_row_in_the_file_and_vacuum_full_does_not() -> None:
    table = f"vacuum_probe_{secrets.token_hex(4)}"
    with psycopg.connect(service_url("COGMEM_TEST_POSTGRES_URL"), autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, body text)")
        try:
            conn.execute(f"INSERT INTO {table} SELECT g, 'filler row ' || g FROM generate_series(1, 20) g")
            # The newest row of its page: what the page frees when it goes is not written over.
            conn.execute(f"INSERT INTO {table} VALUES (1000, %s)", (SECRET.decode(),))
            assert _file_holds_secret(conn, table)
            conn.execute(f"DELETE FROM {table} WHERE id = 1000")
            conn.execute(f"VACUUM {table}")
            assert _file_holds_secret(conn, table), "plain VACUUM cleared it: docs/cascade.md says it may not"
            conn.execute(f"VACUUM FULL {table}")
            assert not _file_holds_secret(conn, table)
        finally:
            conn.execute(f"DROP TABLE IF EXISTS {table}")
