"""``PostgresAdapter``: the connection to PostgreSQL (pool, deadlines, error mapping) and the
adapter class that composes the capability modules of this folder (:mod:`.threads`,
:mod:`.vectors`). Threads and entries live in PostgreSQL, on psycopg 3 (async) with a connection pool.

Tables live in one schema (``schema``, default ``public``), created and upgraded by the named
migrations of :mod:`cogitator_memory.engines.postgres.schema`. A thread is a row of ``threads``
(metadata as jsonb); an entry a row of ``entries`` whose indexed columns (id, thread, parent,
seq, type, time) sit beside one jsonb column ``content`` holding the message, tool calls, tool
results, metadata and event.

Every operation is one transaction. Writes to a thread's tree first lock the thread's row
(``FOR UPDATE``), so concurrent writers of one thread queue up and always leave a valid tree.
``get_path`` walks parent links up from the leaf with a recursive query that stops at
``limit``, so its cost follows the branch, not the thread.

Credentials stay out of messages and logs: a URL whose password is not percent-encoded (an
``@`` or ``/`` in it, which libpq would read as part of the host or database and quote in its
errors) is refused at construction, and every failure's message and debug log line has the
password, as libpq reads it from the URL or DSN, masked.

Each call has a client-side deadline (``command_timeout``, 30 s; the health check 3 s): a call
that misses it returns a failed result at once, and its connection is cancelled and closed in
the background rather than held. Connections found dead when taken from the pool (the server
restarted) are dropped without a round trip, so the store works again as soon as the server is
back.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ...errors import (
    ConflictError,
    InvalidArgumentError,
    MemoryStoreError,
    MissingDriverError,
    NotConnectedError,
    StoreUnavailableError,
)
from ...http import redact
from ...lifecycle import check_connection_url
from ...threads.base import BaseMemoryAdapter, Capability
from .schema import SCHEMA_VERSION, ThreadSql, check_schema_name, migrate, schema_version
from .vectors import DEFAULT_EF_SEARCH, MAX_EF_SEARCH, PostgresVectors

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

from .files import PostgresFiles
from .graph import PostgresGraph
from .items import PostgresItems
from .recall import PostgresRecallIndex
from .threads import EntryReads, PostgresThreads

logger = logging.getLogger("cogitator_memory")

T = TypeVar("T")

DEFAULT_SCHEMA = "public"
DEFAULT_POOL_SIZE = 10
#: Connections the pool opens at connect (at most ``pool_size``): as many as one search asks on
#: at once (the keyword channels of turns and of the other kinds, the vector searches of turns
#: and of items), so the first search after a restart opens none.
WARM_CONNECTIONS = 4
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_COMMAND_TIMEOUT = 30.0
#: How long a connect may take to bring a schema of an earlier version up to date (seconds), when
#: that is longer than ``command_timeout``: a migration runs once per upgrade and may rewrite
#: every row of a table (``m016`` packs 10,000 graph nodes in 2-3 s), and a store that cannot
#: finish it cannot be opened at all.
MIGRATION_TIMEOUT = 900.0
#: The deadline of :meth:`PostgresAdapter.health_check`, in seconds.
HEALTH_TIMEOUT = 3.0

#: The argument a write's text comes from, named when PostgreSQL refuses the text (a NUL character).
_ARGUMENT_OF = {
    "create_thread": "metadata",
    "update_thread": "metadata",
    "add_entry": "entry",
    "redact_entry": "redaction",
    "add_embeddings": "embeddings",
}


#: A ``password`` (or ``sslpassword``) of a key=value DSN, quoted or not.
_DSN_PASSWORD = re.compile(r"\b(?:ssl)?password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)")


def conninfo_secrets(conninfo: str) -> list[str]:
    """The passwords of a libpq URL or DSN as libpq itself reads them (when psycopg is installed),
    and as a DSN's ``password=`` spells them."""
    found = [m.group(1).strip("'") for m in _DSN_PASSWORD.finditer(conninfo)]
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        return found
    try:
        parsed = conninfo_to_dict(conninfo)
    except Exception:
        return found
    return found + [str(parsed[key]) for key in ("password", "sslpassword") if parsed.get(key)]


def _import_driver() -> tuple[Any, Any]:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        module = "psycopg_pool" if "pool" in str(exc.name or "") else "psycopg"
        raise MissingDriverError("PostgresAdapter", "postgres", module) from None
    return psycopg, psycopg_pool


class PostgresAdapter(
    PostgresRecallIndex,
    PostgresThreads,
    PostgresVectors,
    PostgresFiles,
    PostgresGraph,
    PostgresItems,
    BaseMemoryAdapter,
):
    """Threads, pgvector embeddings, memory items (and facts), memory files, the knowledge graph and
    the recall index (:mod:`.recall`) in one PostgreSQL schema (psycopg 3, async, a pool of
    ``pool_size`` connections, :data:`WARM_CONNECTIONS` of them opened at connect).

    ``connection_string`` (or ``url``) is a libpq URL or DSN; ``schema`` (default ``public``) holds
    the tables, created on the first :meth:`connect`; ``dimensions`` is the size of the vectors
    (the embedder's): a new embeddings table is made at it, an existing table of another size fails
    the connect (``InvalidArgumentError``); without it an existing table is adopted, and none is made
    until the first vectors are added (at their size);
    ``ef_search`` is the HNSW search breadth (raised to a search's ``limit`` when larger);
    ``connect_timeout`` bounds opening a connection and waiting for a free one, ``command_timeout``
    each call (seconds).
    """

    provider: ClassVar[str] = "postgres"
    capabilities: ClassVar[frozenset[Capability]] = frozenset(
        {"branches", "redaction", "health", "vectors", "keyword-search"}
    )

    def __init__(
        self,
        *,
        connection_string: str | None = None,
        url: str | None = None,
        schema: str = DEFAULT_SCHEMA,
        pool_size: int = DEFAULT_POOL_SIZE,
        dimensions: int | None = None,
        ef_search: int = DEFAULT_EF_SEARCH,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
        provider: str | None = None,
    ) -> None:
        super().__init__()
        if provider not in (None, "postgres"):
            raise InvalidArgumentError("provider", f"must be 'postgres', got {provider!r}")
        if connection_string is not None and url is not None and connection_string != url:
            raise InvalidArgumentError("url", "give connection_string or url, not both")
        conninfo = connection_string if connection_string is not None else url
        if not isinstance(conninfo, str) or not conninfo.strip():
            raise InvalidArgumentError("connection_string", "must be a PostgreSQL URL or DSN")
        check_connection_url(conninfo, "url" if connection_string is None else "connection_string")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 1:
            raise InvalidArgumentError("pool_size", f"must be a positive integer, got {pool_size!r}")
        if isinstance(ef_search, bool) or not isinstance(ef_search, int) or not 1 <= ef_search <= MAX_EF_SEARCH:
            raise InvalidArgumentError("ef_search", f"must be an integer from 1 to {MAX_EF_SEARCH}, got {ef_search!r}")
        for name, value in (("connect_timeout", connect_timeout), ("command_timeout", command_timeout)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise InvalidArgumentError(name, f"must be a number of seconds > 0, got {value!r}")
        self.connection_string = conninfo
        self.schema = check_schema_name(schema)
        self.pool_size = pool_size
        self.connect_timeout = float(connect_timeout)
        self.command_timeout = float(command_timeout)
        self._sql = ThreadSql(self.schema)
        self._entry_reads = EntryReads(self._entries_by_id)  # concurrent get_entry calls, one statement
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] | None = None
        self._psycopg: Any = None
        self._abandoned: set[asyncio.Task[Any]] = set()
        self._busy = 0
        self._init_embeddings(dimensions)
        self.ef_search = ef_search

    # ----- lifecycle -----------------------------------------------------------------------

    def _connect_kwargs(self) -> dict[str, Any]:
        return {
            "autocommit": True,
            "connect_timeout": max(2, round(self.connect_timeout)),
            "keepalives": 1,
            "keepalives_idle": 30,
            "keepalives_interval": 10,
            "keepalives_count": 3,
        }

    async def _connect(self) -> None:
        psycopg, psycopg_pool = _import_driver()
        self._psycopg = psycopg
        kwargs = self._connect_kwargs()
        try:
            conn = await asyncio.wait_for(
                psycopg.AsyncConnection.connect(self.connection_string, **kwargs), self.connect_timeout + 1
            )
        except TimeoutError:
            raise StoreUnavailableError(
                f"postgres connect: no answer from the server within {self.connect_timeout:g}s"
            ) from None
        deadline = self.command_timeout
        try:
            current = await asyncio.wait_for(schema_version(conn, self.schema), deadline)
            if current < SCHEMA_VERSION:  # an upgrade (or a new schema): its migrations may take long
                deadline = max(deadline, MIGRATION_TIMEOUT)
            await asyncio.wait_for(self._prepare_schema(conn), deadline)
        except TimeoutError:
            self._reset_vectors()
            raise StoreUnavailableError(
                f"postgres connect: preparing schema {self.schema!r} took more than {deadline:g}s"
            ) from None
        except BaseException:
            self._reset_vectors()
            raise
        finally:
            await conn.close()
        pool: AsyncConnectionPool[AsyncConnection[Any]] = psycopg_pool.AsyncConnectionPool(
            self.connection_string,
            kwargs=kwargs,
            min_size=min(WARM_CONNECTIONS, self.pool_size),
            max_size=self.pool_size,
            open=False,
            configure=self._configure_connection,
            timeout=self.connect_timeout,
            name=f"cogitator-memory:{self.schema}",
        )
        try:
            await pool.open(wait=True, timeout=self.connect_timeout)
        except BaseException:
            self._reset_vectors()
            await pool.close()
            raise
        self._pool = pool

    async def _prepare_schema(self, conn: AsyncConnection[Any]) -> None:
        """On one connection: bring the schema to the current version, then set up the vectors."""
        await migrate(conn, self.schema)
        await self._setup_vectors(conn)

    async def _configure_connection(self, conn: AsyncConnection[Any]) -> None:
        await conn.execute("SET TIME ZONE 'UTC'")
        await self._configure_vectors(conn)

    async def _disconnect(self) -> None:
        pool, self._pool = self._pool, None
        self._reset_vectors()
        for task in list(self._abandoned):
            task.cancel()
        if pool is not None:
            await pool.close(timeout=self.connect_timeout)

    def _secrets(self) -> list[str]:
        return [*super()._secrets(), *conninfo_secrets(self.connection_string)]

    def _map_error(self, operation: str, exc: Exception) -> MemoryStoreError:
        psycopg = self._psycopg
        if psycopg is not None:
            errors = psycopg.errors
            if isinstance(exc, errors.UniqueViolation | errors.ExclusionViolation):
                return ConflictError(f"postgres {operation}: {exc}")
            if isinstance(exc, errors.UntranslatableCharacter | errors.CharacterNotInRepertoire):
                argument = _ARGUMENT_OF.get(operation, operation)
                return InvalidArgumentError(
                    argument, f"holds text PostgreSQL cannot store ({exc.diag.message_primary})"
                )
        if type(exc).__name__ == "PoolTimeout":
            return StoreUnavailableError(
                f"postgres {operation}: no connection to the server within {self.connect_timeout:g}s ({exc})"
            )
        return StoreUnavailableError(f"postgres {operation} failed: {type(exc).__name__}: {exc}")

    @property
    def pool(self) -> AsyncConnectionPool[AsyncConnection[Any]]:
        """The open connection pool (for stores that share the database)."""
        if self._pool is None:
            raise NotConnectedError("postgres store is not connected: call connect() first")
        return self._pool

    @property
    def busy_connections(self) -> int:
        """How many pooled connections calls hold right now (those past their deadline included,
        until their cancellation ends and the connection is closed)."""
        return self._busy

    async def run(
        self, operation: Callable[[AsyncConnection[Any]], Awaitable[T]], *, timeout: float | None = None
    ) -> T:
        """Run ``operation`` on a pooled connection within ``timeout`` (default ``command_timeout``).

        A call that misses its deadline raises :class:`StoreUnavailableError` at once; the
        operation is cancelled in the background and its connection closed, not held.
        """
        pool = self.pool
        limit = self.command_timeout if timeout is None else timeout

        async def job() -> T:
            # Idle connections the server closed (it restarted) are dropped here, so the call
            # runs on a live one instead of failing; the pool opens replacements at once.
            for _ in range(self.pool_size + 1):
                conn = await pool.getconn(timeout=min(self.connect_timeout, limit))
                if not connection_is_dead(conn):
                    break
                await conn.close()
                await pool.putconn(conn)
            else:
                conn = await pool.getconn(timeout=min(self.connect_timeout, limit))
            self._busy += 1
            try:
                return await operation(conn)
            finally:
                self._busy -= 1
                await pool.putconn(conn)

        task = asyncio.ensure_future(job())
        try:
            done, _ = await asyncio.wait((task,), timeout=limit)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            self._abandoned.add(task)
            task.add_done_callback(self._abandoned_done)
            raise StoreUnavailableError(f"postgres did not answer within {limit:g}s")
        return task.result()

    def _abandoned_done(self, task: asyncio.Task[Any]) -> None:
        self._abandoned.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.debug("abandoned postgres call ended with %s", redact(repr(task.exception()), self._secrets()))

    async def _ping(self) -> None:
        async def ping(conn: AsyncConnection[Any]) -> None:
            await conn.execute(f"SET LOCAL statement_timeout = {int(HEALTH_TIMEOUT * 1000)}; SELECT 1")

        await self.run(ping, timeout=HEALTH_TIMEOUT)


def connection_is_dead(conn: AsyncConnection[Any]) -> bool:
    """Whether the server closed ``conn``, found without a round trip (reads what it already sent)."""
    from psycopg.pq import ConnStatus

    pgconn = conn.pgconn
    if pgconn.status != ConnStatus.OK:
        return True
    try:
        # Twice: a server that shuts down sends a FATAL message, then closes the socket; the
        # first read takes the message, the second meets the end of the stream.
        pgconn.consume_input()
        pgconn.consume_input()
    except Exception:
        return True
    return bool(pgconn.status != ConnStatus.OK)


__all__ = [
    "DEFAULT_COMMAND_TIMEOUT",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_POOL_SIZE",
    "DEFAULT_SCHEMA",
    "HEALTH_TIMEOUT",
    "PostgresAdapter",
    "connection_is_dead",
    "conninfo_secrets",
]
