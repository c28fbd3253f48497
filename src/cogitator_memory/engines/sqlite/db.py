"""Opening a SQLite file and writing to it, the same way for every store kept in it."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .schema import migrate

#: The most a connection's page cache holds, in KiB (SQLite's default is 2,000 KiB). It grows only
#: as pages are read, so a small file costs no more; a large one keeps the rows searches and reads
#: come back to in the process instead of reading them from the file again (about 12% off a vector
#: search at 10,000 x 384 with 1,024 distinct queries, where the ten hits' rows are read each time).
PAGE_CACHE_KIB = 64 * 1024


def normalize_path(path: str | Path) -> str:
    """``path`` with ``~`` expanded; ``:memory:`` and ``file:`` URIs as they are."""
    text = str(path)
    if text == ":memory:" or text.startswith("file:"):
        return text
    return str(Path(text).expanduser())


def open_database(path: str, *, wal_mode: bool = True, busy_timeout: float = 5.0) -> sqlite3.Connection:
    """A connection to ``path`` (parent folders created), WAL on, a page cache of up to
    :data:`PAGE_CACHE_KIB`, migrated to the newest schema.

    Autocommit mode: writes go through :func:`write_transaction`. Closed again when setup fails.
    """
    if path != ":memory:" and not path.startswith("file:"):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=busy_timeout, uri=path.startswith("file:")
    )
    try:
        db.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        db.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KIB}")
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


__all__ = ["PAGE_CACHE_KIB", "normalize_path", "open_database", "write_transaction"]
