"""The SQLite store of the command line: opening the file, reading results, one-transaction writes."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import TypeVar

from ..engines.sqlite.threads import SQLiteAdapter
from ..result import MemoryResult
from ..threads.base import BaseMemoryAdapter
from ..threads.records import MemoryEntry, Thread
from .formats import CliError
from .where import DB_ENV

T = TypeVar("T")

PROG = "cogitator-memory"
#: The agent of a thread ``import`` creates for chat messages, unless ``--agent`` names one.
DEFAULT_AGENT = "cli"
_SAVEPOINT = "cogitator_cli_write"


@contextmanager
def _savepoint(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One store write inside a :meth:`CliStore.transaction`: a savepoint, undone when it fails."""
    db.execute(f"SAVEPOINT {_SAVEPOINT}")
    try:
        yield db
    except BaseException:
        if db.in_transaction:
            db.execute(f"ROLLBACK TO {_SAVEPOINT}")
            db.execute(f"RELEASE {_SAVEPOINT}")
        raise
    db.execute(f"RELEASE {_SAVEPOINT}")


class CliStore(SQLiteAdapter):
    """The command line's SQLite store. Inside :meth:`transaction` every write of the store is
    part of one SQLite transaction (each write a savepoint in it), committed when the block ends
    and rolled back when it raises, so a command's writes land all together or not at all."""

    _in_transaction = False

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        if self._in_transaction:
            return _savepoint(self.connection)
        return super()._write()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One ``BEGIN IMMEDIATE`` transaction around the block (other writers of the file wait).

        When the block raises, the transaction is rolled back; a rollback that fails itself
        raises :class:`CliError` saying so (SQLite drops the unfinished transaction when the file
        is next opened).
        """
        db = self.connection
        db.execute("BEGIN IMMEDIATE")
        self._in_transaction = True
        try:
            yield
        except BaseException as failure:
            self._in_transaction = False
            try:
                if db.in_transaction:
                    db.execute("ROLLBACK")
            except sqlite3.Error as exc:
                raise CliError(
                    f"the command failed ({failure or type(failure).__name__}) and SQLite could not roll back "
                    f"its writes ({exc}); the unfinished transaction is dropped when the file is next opened"
                ) from failure
            raise
        finally:
            self._in_transaction = False
        db.execute("COMMIT")


def check_database_file(path: str, *, create: bool) -> Path | None:
    """The SQLite file ``path`` (``None`` for ``:memory:`` and ``file:`` URIs); a folder, or with
    ``create=False`` a missing file, is a :class:`CliError` saying how to make or name one."""
    if path == ":memory:" or path.startswith("file:"):
        return None
    file = Path(path).expanduser()
    if file.is_dir():
        raise CliError(f"{path} is a folder, not a database file (pass --db PATH)")
    if not create and not file.exists():
        raise CliError(
            f"no database at {path}: create one with '{PROG} demo' or '{PROG} import FILE', "
            f"or point to one with --db PATH, --config FILE or ${DB_ENV}"
        )
    return file


@asynccontextmanager
async def open_store(path: str, *, create: bool) -> AsyncIterator[CliStore]:
    """The connected SQLite store at ``path``; with ``create=False`` a missing file is an error.

    A file this call creates is removed again (with its ``-wal``, ``-shm`` and ``-journal``) when
    the command fails or is interrupted: a rejected ``import`` leaves no empty database behind."""
    target = path
    new_file: Path | None = None
    file = check_database_file(path, create=create)
    if file is not None:
        target = str(file)
        if not file.exists():
            new_file = file
    store = CliStore(path=target)
    try:
        opened = await store.connect()
        if not opened.success:
            raise CliError(opened.error or f"cannot open {path}")
        try:
            yield store
        finally:
            await store.disconnect()
    except BaseException:
        if new_file is not None:
            _remove_database(new_file)
        raise


def _remove_database(file: Path) -> None:
    """Remove the SQLite file ``file`` with the files SQLite keeps beside it."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        with suppress(FileNotFoundError):
            file.with_name(file.name + suffix).unlink()


def need(result: MemoryResult[T]) -> T:
    """The data of a successful result; a failed one becomes a :class:`CliError` with its message."""
    if not result.success:
        raise CliError(result.error or "the store failed")
    return result.data  # type: ignore[return-value]


async def require_thread(store: BaseMemoryAdapter, thread_id: str, path: str) -> Thread:
    """The thread, or an error naming the store (``path``) and how to list what is there."""
    thread = need(await store.get_thread(thread_id))
    if thread is None:
        raise CliError(f"thread not found: {thread_id} (in {path}; list the threads with '{PROG} threads')")
    return thread


async def all_entries(store: BaseMemoryAdapter, thread_id: str) -> list[MemoryEntry]:
    """Every entry of every branch, events and tool data included, in ``seq`` order."""
    return need(await store.get_entries(thread_id=thread_id, types="all", include_tool_calls=True))


__all__ = [
    "DB_ENV",
    "DEFAULT_AGENT",
    "PROG",
    "CliStore",
    "all_entries",
    "check_database_file",
    "need",
    "open_store",
    "require_thread",
]
