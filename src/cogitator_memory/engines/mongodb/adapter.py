"""``MongoDBAdapter``: the connection to MongoDB (pymongo's async client, collections, error
mapping, transactions when the server has them) and the adapter class composing the capability
modules of this folder: threads (:mod:`.threads`), memory items (:mod:`.items`), memory files
(:mod:`.files`) and the recall index (:mod:`.recall`).

pymongo is imported lazily, in :meth:`MongoDBAdapter.connect`. See ``docs/mongodb.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
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
from ...lifecycle import check_connection_url, keep_cancellations
from ...threads.base import BaseMemoryAdapter
from .conflicts import is_write_conflict, retry_pause
from .files import MongoDBFiles
from .items import MongoDBItems
from .recall import MongoDBRecallIndex

if TYPE_CHECKING:
    from pymongo.asynchronous.client_session import AsyncClientSession
    from pymongo.asynchronous.collection import AsyncCollection
    from pymongo.asynchronous.database import AsyncDatabase
    from pymongo.asynchronous.mongo_client import AsyncMongoClient

from .threads import MongoDBThreads

T = TypeVar("T")
Doc = dict[str, Any]

DEFAULT_URI = "mongodb://localhost:27017"
DEFAULT_DATABASE = "cogitator"
DEFAULT_PREFIX = "memory_"
#: The fields of an entry that redaction rewrites (everything else is its place in the tree).
CONTENT_FIELDS = ("message", "event", "metadata", "tool_calls", "tool_results")
_THREAD_INTERNAL = ("next_seq", "created_us", "updated_us")
_FIRST_WINDOW = 64
_MAX_WINDOW = 4096


# --- documents (no I/O) -------------------------------------------------------------------


def server_has_transactions(hello: Doc) -> bool:
    """Whether a server's ``hello`` reply says it runs multi-document transactions: a replica-set
    member or a ``mongos``. A standalone ``mongod`` (and the mongoeco emulator, which says it is
    one) does not."""
    return bool(hello.get("setName")) or hello.get("msg") == "isdbgrid"


def _check_name(argument: str, value: object, forbidden: str, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentError(argument, f"must be a string, got {type(value).__name__}")
    if not value and not allow_empty:
        raise InvalidArgumentError(argument, "must not be empty")
    bad = sorted({c for c in value if c in forbidden or not c.isprintable()})
    if bad:
        raise InvalidArgumentError(argument, f"must not contain {''.join(bad)!r}")
    return value


def _check_seconds(argument: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise InvalidArgumentError(argument, f"must be a number of seconds in (0, 3600], got {value!r}")
    return float(value)


# --- the adapter --------------------------------------------------------------------------


@keep_cancellations
class MongoDBAdapter(MongoDBRecallIndex, MongoDBThreads, MongoDBFiles, MongoDBItems, BaseMemoryAdapter):
    """A thread store in MongoDB (``pip install "cogitator-memory[mongodb]"``).

    ``uri`` (or ``url``) is a MongoDB connection string; ``database`` (default ``cogitator``)
    and ``collection_prefix`` (default ``memory_``) say where the two collections are.
    ``transactions`` is ``None`` to use multi-document transactions when the server runs one
    at ``connect()``, or ``True``/``False`` to force the choice. ``connect_timeout`` bounds
    server selection and connecting, ``socket_timeout`` each read; ``client_options`` go to
    ``AsyncMongoClient`` as they are.
    """

    provider: ClassVar[str] = "mongodb"

    def __init__(
        self,
        *,
        uri: str | None = None,
        url: str | None = None,
        database: str = DEFAULT_DATABASE,
        collection_prefix: str = DEFAULT_PREFIX,
        transactions: bool | None = None,
        connect_timeout: float = 5.0,
        socket_timeout: float = 30.0,
        client_options: dict[str, Any] | None = None,
        provider: str | None = None,
    ) -> None:
        super().__init__()
        if provider not in (None, "mongodb"):
            raise InvalidArgumentError("provider", f"must be 'mongodb', got {provider!r}")
        if uri is not None and url is not None and uri != url:
            raise InvalidArgumentError("uri", "give uri or url, not two different ones")
        chosen = uri if uri is not None else url if url is not None else DEFAULT_URI
        if not isinstance(chosen, str) or not chosen.startswith(("mongodb://", "mongodb+srv://")):
            raise InvalidArgumentError("uri", "must be a 'mongodb://' or 'mongodb+srv://' connection string")
        check_connection_url(chosen, "uri")
        self.uri = chosen
        self.database = _check_name("database", database, '/\\. "$')
        if len(database.encode()) > 63:
            raise InvalidArgumentError("database", "must be at most 63 bytes")
        self.collection_prefix = _check_name("collection_prefix", collection_prefix, "$", allow_empty=True)
        if transactions is not None and not isinstance(transactions, bool):
            raise InvalidArgumentError("transactions", f"must be True, False or None, got {transactions!r}")
        self.transactions = transactions
        self.connect_timeout = _check_seconds("connect_timeout", connect_timeout)
        self.socket_timeout = _check_seconds("socket_timeout", socket_timeout)
        if client_options is not None and not isinstance(client_options, dict):
            raise InvalidArgumentError("client_options", "must be a dict of AsyncMongoClient options")
        self.client_options = dict(client_options or {})
        self._client: AsyncMongoClient[Doc] | None = None
        self._threads_col: AsyncCollection[Doc] | None = None
        self._entries_col: AsyncCollection[Doc] | None = None
        self._use_transactions = False

    # ----- lifecycle -----------------------------------------------------------------------

    @property
    def client(self) -> AsyncMongoClient[Doc]:
        """The open ``AsyncMongoClient`` (for stores and tests that share it)."""
        if self._client is None:
            raise NotConnectedError("mongodb store is not connected: call connect() first")
        return self._client

    @property
    def uses_transactions(self) -> bool:
        """Whether writes of a thread and its entries run in transactions (known after connect)."""
        return self._use_transactions

    @property
    def threads_collection(self) -> AsyncCollection[Doc]:
        """The collection of threads."""
        if self._threads_col is None:
            raise NotConnectedError("mongodb store is not connected: call connect() first")
        return self._threads_col

    @property
    def entries_collection(self) -> AsyncCollection[Doc]:
        """The collection of entries."""
        if self._entries_col is None:
            raise NotConnectedError("mongodb store is not connected: call connect() first")
        return self._entries_col

    async def _connect(self) -> None:
        try:
            from pymongo import AsyncMongoClient
            from pymongo.errors import ConfigurationError
        except ImportError:
            raise MissingDriverError("MongoDBAdapter", "mongodb", "pymongo") from None
        options: Doc = {
            "serverSelectionTimeoutMS": int(self.connect_timeout * 1000),
            "connectTimeoutMS": int(self.connect_timeout * 1000),
            "socketTimeoutMS": int(self.socket_timeout * 1000),
            "appname": "cogitator-memory",
            **self.client_options,
        }
        try:
            client: AsyncMongoClient[Doc] = AsyncMongoClient(self.uri, **options)
        except (ConfigurationError, ValueError, TypeError) as exc:
            raise InvalidArgumentError("uri", f"{type(exc).__name__}: {exc}") from None
        try:
            db: AsyncDatabase[Doc] = client[self.database]
            hello = await db.command("hello")
            threads = db[f"{self.collection_prefix}threads"]
            entries = db[f"{self.collection_prefix}entries"]
            await threads.create_index([("agent_id", 1), ("updated_us", -1), ("_id", -1)], name="agent_updated")
            await threads.create_index([("updated_us", -1), ("_id", -1)], name="updated")
            # threads_of_user: a thread's owner, and the users listed in it (a multikey index)
            await threads.create_index([("metadata.user_id", 1)], name="by_user", sparse=True)
            await threads.create_index([("metadata.memory_user_ids", 1)], name="with_users", sparse=True)
            await entries.create_index([("thread_id", 1), ("seq", 1)], name="thread_seq")
            await entries.create_index([("parent_id", 1)], name="parent")
            await self._prepare_items(db)
            await self._prepare_recall(db)
            use = self.transactions
            if use is None:
                use = server_has_transactions(hello)
        except BaseException:
            await client.close()
            raise
        self._client, self._threads_col, self._entries_col = client, threads, entries
        self._use_transactions = use

    async def _disconnect(self) -> None:
        client, self._client = self._client, None
        self._threads_col = self._entries_col = None
        if client is not None:
            await client.close()

    async def _ping(self) -> None:
        await self.client[self.database].command({"ping": 1})

    def _map_error(self, operation: str, exc: Exception) -> MemoryStoreError:
        from bson.errors import InvalidDocument
        from pymongo.errors import ConnectionFailure, DuplicateKeyError

        if isinstance(exc, DuplicateKeyError):
            return ConflictError(f"mongodb {operation}: {exc}")
        if isinstance(exc, InvalidDocument | OverflowError):
            return InvalidArgumentError("document", f"MongoDB cannot store it ({exc})")
        if isinstance(exc, ConnectionFailure):
            return StoreUnavailableError(
                f"mongodb {operation}: the server did not answer ({type(exc).__name__}: {exc})"
            )
        return StoreUnavailableError(f"mongodb {operation} failed: {type(exc).__name__}: {exc}")

    async def _atomic(self, work: Callable[[AsyncClientSession | None], Awaitable[T]]) -> T:
        """Run ``work`` in a transaction (retried on write conflicts), or as it is without them."""
        if not self._use_transactions:
            return await work(None)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.socket_timeout
        attempt = 0
        while True:
            async with self.client.start_session() as session:
                try:
                    await session.start_transaction()
                    result = await work(session)
                    await session.commit_transaction()
                    return result
                except BaseException as exc:
                    if session.in_transaction:
                        with contextlib.suppress(Exception):  # aborting a dead transaction; `exc` is the cause
                            await session.abort_transaction()
                    if not is_write_conflict(exc) or loop.time() > deadline:
                        raise
            attempt += 1
            await asyncio.sleep(retry_pause(attempt))


__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_PREFIX",
    "DEFAULT_URI",
    "MongoDBAdapter",
    "is_write_conflict",
    "retry_pause",
    "server_has_transactions",
]
