"""What every store shares: connecting, disconnecting, health checks and failure mapping.

:class:`StoreLifecycle` is the base of :class:`~cogitator_memory.threads.base.BaseMemoryAdapter`
and :class:`~cogitator_memory.vectors.base.BaseEmbeddingAdapter`; an engine implements
``_connect``, ``_disconnect`` and optionally ``_ping`` and ``_map_error``.

Credentials never reach a failure's message or a log line: every message a store returns, and
the traceback it logs at debug level, goes through :func:`cogitator_memory.http.redact` with the
secrets of the store's connection settings (:meth:`StoreLifecycle._secrets`), on top of the user
info and credential query values of any URL in it. :func:`check_connection_url` refuses, at
construction, a connection URL whose password drivers would misread (and then quote in pieces).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import re
import traceback
from abc import ABC, abstractmethod
from types import TracebackType
from typing import Any, ClassVar, Literal, Self, TypeVar
from urllib.parse import unquote

from .errors import InvalidArgumentError, MemoryStoreError, NotConnectedError, StoreUnavailableError
from .http import redact, url_secrets
from .result import MemoryResult, err, ok_none

logger = logging.getLogger("cogitator_memory")


_Store = TypeVar("_Store", bound=type)


def keep_cancellations(cls: _Store) -> _Store:
    """Make each public coroutine method of the store class ``cls`` (its own and inherited)
    raise, as it ends, a cancellation its driver lost while it ran.

    Drivers that time their sends and reads with ``asyncio.wait_for`` (pymongo; redis-py with a
    ``socket_timeout``) lose a cancellation on Python 3.11 when it comes just as the awaited
    read finishes: ``wait_for`` returns the result and the task goes on as if never cancelled,
    so Ctrl-C, ``asyncio.timeout`` and a server's cancelled request do not stop it. The method
    then raises :class:`asyncio.CancelledError` itself. As with any cancelled call to a server,
    the work may have been done (the write sent and applied) when it is cancelled. A
    cancellation asked before the call (clean-up code running after one) is left alone.
    """
    for name in dir(cls):
        if name.startswith("_"):
            continue
        method = inspect.getattr_static(cls, name)  # a classmethod or staticmethod stays as it is
        if (
            inspect.isfunction(method)
            and inspect.iscoroutinefunction(method)
            and not getattr(method, "_keeps_cancellations", False)
        ):
            setattr(cls, name, _keeping_cancellations(method))
    return cls


def _keeping_cancellations(method: Any) -> Any:
    @functools.wraps(method)
    async def call(*args: Any, **kwargs: Any) -> Any:
        task = asyncio.current_task()
        asked = task.cancelling() if task is not None else 0
        result = await method(*args, **kwargs)
        if task is not None and task.cancelling() > asked:
            raise asyncio.CancelledError
        return result

    call._keeps_cancellations = True  # type: ignore[attr-defined]
    return call


Capability = Literal[
    "branches", "redaction", "health", "vectors", "keyword-search", "items", "files", "graph", "facts", "recall-index"
]
"""What a store may declare it supports beyond its contract (see ``capabilities``)."""

#: The attributes of a store whose values may hold credentials (URLs, passwords, API keys).
CREDENTIAL_ATTRIBUTES = ("url", "uri", "connection_string", "password", "api_key")

_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _user_info(url: str) -> str | None:
    """The user info of ``url`` as drivers read it: after ``//``, up to the last ``@`` before the path."""
    _, sep, rest = url.partition("://")
    if not sep:
        return None
    authority = rest.split("/", 1)[0]
    info, at, _ = authority.rpartition("@")
    return info if at else None


def connection_secrets(url: str) -> list[str]:
    """The credentials a connection URL may carry, for :func:`~cogitator_memory.http.redact`.

    What :func:`~cogitator_memory.http.url_secrets` finds, and the user info read as leniently as
    drivers read it (a password holding ``?`` or ``#``, which a strict parser cuts short), raw
    and percent-decoded.
    """
    found = list(url_secrets(url))
    info = _user_info(url)
    if info:
        user, colon, password = info.partition(":")
        for value in (password if colon else "", info if len(user) >= 16 or colon else ""):
            if value:
                found += [value, unquote(value)]
    return [s for s in dict.fromkeys(found) if len(s) >= 4]


def check_connection_url(url: str, argument: str) -> None:
    """Refuse a connection URL whose user info drivers would misread, without quoting it.

    An ``@`` or ``/`` in a password must be percent-encoded: unencoded, drivers take part of the
    password for the host, the port or the database and quote that part in their errors. The
    same goes for a ``%`` that starts no escape. Checked: more than one ``@`` before the path, an
    ``@`` in the path, a bad ``%`` escape in the user info.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return
    authority, slash, after = rest.partition("/")
    path = after.split("?", 1)[0]
    info = _user_info(url)
    if authority.count("@") > 1 or (slash and "@" in path):
        problem = "an '@' or '/' in the user name or password"
    elif info is not None and _BAD_ESCAPE.search(info):
        problem = "a '%' in the user name or password that starts no %XX escape"
    else:
        return
    raise InvalidArgumentError(
        argument,
        f"the {scheme}:// URL holds {problem}: percent-encode them "
        "(urllib.parse.quote(password, safe='')) so the driver does not read part of the password as "
        "the host or the database (the URL is not repeated here, it holds a password)",
    )


class StoreLifecycle(ABC):
    """Connect, disconnect, health checks and error mapping, written once for every store.

    ``connect()`` is idempotent and a failed one leaves the store disconnected, so a later call
    tries again; concurrent ``health_check()`` calls share one check in flight; every failure
    becomes a failed :class:`~cogitator_memory.MemoryResult` whose message names the cause.
    """

    provider: ClassVar[str] = "custom"
    #: What the store supports beyond its contract; code checks it with :meth:`supports`.
    capabilities: ClassVar[frozenset[Capability]] = frozenset({"health"})
    #: How messages name this kind of store ("store", "embedding store").
    store_kind: ClassVar[str] = "store"

    def __init__(self) -> None:
        super().__init__()
        self._connected = False
        self._connect_lock: asyncio.Lock | None = None
        self._health_task: asyncio.Task[MemoryResult[None]] | None = None

    @abstractmethod
    async def _connect(self) -> None:
        """Open the engine (create tables, run migrations). Raise on failure, leaving nothing open."""

    @abstractmethod
    async def _disconnect(self) -> None:
        """Close the engine."""

    async def _ping(self) -> None:
        """A cheap round trip to the engine; raise when it fails."""
        return None

    def _map_error(self, operation: str, exc: Exception) -> MemoryStoreError:
        """Translate a driver exception into the package's tree (engines override this)."""
        return StoreUnavailableError(f"{self.provider} {operation} failed: {type(exc).__name__}: {exc}")

    def _secrets(self) -> list[str]:
        """The credentials of the connection settings, masked in every message and log line.

        By default those of the attributes named in :data:`CREDENTIAL_ATTRIBUTES` (a URL's
        password and credential query values, a password, an API key); engines add their own.
        """
        found: list[str] = []
        for name in CREDENTIAL_ATTRIBUTES:
            value = getattr(self, name, None)
            if not isinstance(value, str) or not value:
                continue
            found += connection_secrets(value) if name in ("url", "uri", "connection_string") else [value]
        return found

    def _fail(self, operation: str, exc: Exception) -> MemoryResult[Any]:
        """The failed result of ``operation`` for ``exc`` (driver exceptions mapped first), its
        message and the debug log line of the driver's traceback free of credentials."""
        secrets = self._secrets()
        if isinstance(exc, MemoryStoreError):
            error = exc
        else:
            if logger.isEnabledFor(logging.DEBUG):
                trace = "".join(traceback.format_exception(exc)).rstrip()
                logger.debug("%s %s failed\n%s", self.provider, operation, redact(trace, secrets))
            error = self._map_error(operation, exc)
        return err(redact(str(error) or type(error).__name__, secrets), type(error))

    def _require_connected(self) -> None:
        if not self._connected:
            raise NotConnectedError(f"{self.provider} {self.store_kind} is not connected: call connect() first")

    @property
    def connected(self) -> bool:
        """Whether :meth:`connect` succeeded and :meth:`disconnect` was not called since."""
        return self._connected

    def supports(self, capability: Capability) -> bool:
        """Whether the store declares ``capability``."""
        return capability in self.capabilities

    async def connect(self) -> MemoryResult[None]:
        """Open the store. Calling it again while connected does nothing; a failed connect leaves
        the store disconnected, and a later call tries again."""
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:
            if self._connected:
                return ok_none()
            try:
                await self._connect()
            except Exception as exc:
                return self._fail("connect", exc)
            self._connected = True
            return ok_none()

    async def disconnect(self) -> MemoryResult[None]:
        """Close the store. Safe to call when not connected."""
        if not self._connected:
            return ok_none()
        self._connected = False
        try:
            await self._disconnect()
        except Exception as exc:
            return self._fail("disconnect", exc)
        return ok_none()

    async def health_check(self) -> MemoryResult[None]:
        """A round trip to the engine. Concurrent checks share one in flight."""
        task = self._health_task
        if task is None or task.done():
            task = asyncio.ensure_future(self._check_health())
            self._health_task = task
        return await asyncio.shield(task)

    async def _check_health(self) -> MemoryResult[None]:
        try:
            self._require_connected()
            await self._ping()
        except Exception as exc:
            return self._fail("health_check", exc)
        return ok_none()

    async def __aenter__(self) -> Self:
        result = await self.connect()
        if not result.success:
            result.unwrap()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.disconnect()


__all__ = [
    "CREDENTIAL_ATTRIBUTES",
    "Capability",
    "StoreLifecycle",
    "check_connection_url",
    "connection_secrets",
    "keep_cancellations",
]
