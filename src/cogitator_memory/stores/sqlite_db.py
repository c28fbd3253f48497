"""Opening a SQLite file and writing to it, the same way for every store kept in it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .sqlite_schema import migrate


def normalize_path(path: str | Path) -> str:
    """``path`` with ``~`` expanded; ``:memory:`` and ``file:`` URIs as they are."""
    text = str(path)
    if text == ":memory:" or text.startswith("file:"):
        return text
    return str(Path(text).expanduser())


def open_database(path: str, *, wal_mode: bool = True, busy_timeout: float = 5.0) -> sqlite3.Connection:
    """A connection to ``path`` (parent folders created), WAL on, migrated to the newest schema.

    Autocommit mode: writes go through :func:`write_transaction`. Closed again when setup fails.
    """
    if path != ":memory:" and not path.startswith("file:"):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=busy_timeout, uri=path.startswith("file:")
    )
    try:
        if wal_mode and path != ":memory:":
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
        db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        migrate(db)
    except BaseException:
        db.close()
        raise
    return db


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` transaction: committed when the block ends, rolled back when it raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        if db.in_transaction:  # SQLite may have rolled back already (disk full, I/O error)
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


__all__ = ["normalize_path", "open_database", "write_transaction"]
