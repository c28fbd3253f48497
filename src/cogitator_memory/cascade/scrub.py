"""Leaving no bytes behind in a SQLite file: what every erasing call of
:class:`~cogitator_memory.cascade.MemoryCascade` does around its work, whichever surface made it
(Python, the CLI's ``forget``, REST and the inspector, MCP).

SQLite keeps deleted rows in free pages of the file and old page images in the WAL. Before the
cascade deletes anything, ``PRAGMA secure_delete = ON`` is set on the connection of every store
it was given that keeps a SQLite file (``store.connection`` is a :class:`sqlite3.Connection`:
the thread store, items, files, graph, vectors, possibly several files), so freed cells and
pages are overwritten with zeros; it stays on for that connection. After the work the WAL is
checkpointed (``PRAGMA wal_checkpoint(TRUNCATE)``, waiting at most :data:`CHECKPOINT_WAIT_MS`);
when a reader of another connection, or a transaction left open on this one, keeps it from
finishing, the counts say so in ``skipped`` and the next checkpoint clears it. Other engines hold nothing of a deleted
record that a client can read (PostgreSQL: until ``VACUUM``, see ``docs/cascade.md``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from ..errors import MemoryStoreError
from .entries import note

#: How long a checkpoint waits for a reader of another connection, in milliseconds (it runs on
#: the caller's thread, so on a server's event loop: kept short).
CHECKPOINT_WAIT_MS = 50
#: What ``skipped`` says when the WAL of a file could not be emptied.
WAL_BUSY = (
    "sqlite: the WAL could not be emptied (a reader or an open transaction held it); the forgotten text "
    "stays in it until the next checkpoint"
)


def sqlite_connections(stores: Iterable[object]) -> list[sqlite3.Connection]:
    """The distinct open SQLite connections of ``stores`` (their ``connection``)."""
    out: list[sqlite3.Connection] = []
    for store in stores:
        try:
            connection = getattr(store, "connection", None)
        except MemoryStoreError:  # a store that is not connected has nothing to clear
            continue
        if isinstance(connection, sqlite3.Connection) and all(connection is not c for c in out):
            out.append(connection)
    return out


def secure_delete(connections: Iterable[sqlite3.Connection]) -> None:
    """Overwrite what is deleted from now on with zeros (``PRAGMA secure_delete = ON``)."""
    for connection in connections:
        connection.execute("PRAGMA secure_delete = ON")


def checkpoint(connections: Iterable[sqlite3.Connection], skipped: list[str]) -> None:
    """Copy the WAL into the file and empty it; a WAL another reader holds is noted in ``skipped``."""
    for connection in connections:
        before = connection.execute("PRAGMA busy_timeout").fetchone()[0]
        connection.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
        try:
            busy = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.OperationalError:  # a transaction of this connection is open (another call's)
            busy = (1,)
        finally:
            connection.execute(f"PRAGMA busy_timeout = {int(before)}")
        if busy is not None and busy[0]:
            note(skipped, WAL_BUSY)


__all__ = ["CHECKPOINT_WAIT_MS", "WAL_BUSY", "checkpoint", "secure_delete", "sqlite_connections"]
