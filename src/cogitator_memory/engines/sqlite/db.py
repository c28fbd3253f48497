"""Opening a SQLite file and writing to it, the same way for every store kept in it."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .schema import migrate


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
        db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        if wal_mode and path != ":memory:":
            _enable_wal(db, busy_timeout)
            db.execute("PRAGMA synchronous=NORMAL")
        migrate(db)
    except BaseException:
        db.close()
        raise
    return db


def _enable_wal(db: sqlite3.Connection, busy_timeout: float) -> None:
    """Switch to WAL. Switching needs the file to itself and SQLite answers "locked" at once,
    without waiting, when another process opens the same new file at that moment: retry until
    ``busy_timeout``."""
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


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
