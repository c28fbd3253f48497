"""Opening a SQLite file and writing to it, the same way for every store kept in it."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

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


T = TypeVar("T")

#: The page cache of a :class:`ReadConnection`, in KiB: the postings and scoring index a keyword
#: search reads again at every search (a quarter of the store's own connection's cap).
READ_CACHE_KIB = 16 * 1024


def has_own_readers(path: str, wal_mode: bool) -> bool:
    """Whether another connection to ``path`` reads what the store's connection committed, at
    once and without waiting on its writes: a file (not ``:memory:`` nor a ``file:`` URI) in
    WAL mode."""
    return wal_mode and path != ":memory:" and not path.startswith("file:")


class ReadConnection:
    """A second connection to a store's WAL file, read-only (``query_only``), used from one thread
    of its own: a search's statements run there, off the event loop, so the loop goes on with the
    work a search does beside them (the query's embedding, the vector search) while SQLite
    answers, and SQLite, which releases the GIL while it runs a statement, uses a second core.
    In WAL mode it reads the last commit of any connection, never waits on a write, and holds no
    transaction between two calls (each statement reads to its end). Opened at its first call;
    :meth:`close` closes it."""

    def __init__(self, path: str, busy_timeout: float) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._db: sqlite3.Connection | None = None
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(1, thread_name_prefix="cogmem-sqlite-read")

    async def run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """``work(connection)`` in the reader's thread; its result (or its exception)."""
        pool = self._pool
        if pool is None:
            raise sqlite3.ProgrammingError("the read connection is closed")
        return await asyncio.get_running_loop().run_in_executor(pool, self._call, work)

    def _call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        db = self._db
        if db is None:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=self.busy_timeout)
            try:
                db.execute(f"PRAGMA busy_timeout={int(self.busy_timeout * 1000)}")
                db.execute(f"PRAGMA cache_size=-{READ_CACHE_KIB}")
                db.execute("PRAGMA query_only=1")
            except BaseException:
                db.close()
                raise
            self._db = db
        return work(db)

    def close(self) -> None:
        """Wait for the call under way, then close the connection and the thread."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        db, self._db = self._db, None
        if db is not None:
            db.close()


__all__ = [
    "PAGE_CACHE_KIB",
    "READ_CACHE_KIB",
    "ReadConnection",
    "has_own_readers",
    "normalize_path",
    "open_database",
    "write_transaction",
]
