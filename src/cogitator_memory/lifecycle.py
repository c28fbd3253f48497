"""What every store shares: connecting, disconnecting, health checks and failure mapping.

:class:`StoreLifecycle` is the base of :class:`~cogitator_memory.threads.base.BaseMemoryAdapter`
and :class:`~cogitator_memory.vectors.base.BaseEmbeddingAdapter`; an engine implements
``_connect``, ``_disconnect`` and optionally ``_ping`` and ``_map_error``.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from types import TracebackType
from typing import Any, ClassVar, Literal, Self

from .errors import MemoryStoreError, NotConnectedError, StoreUnavailableError
from .result import MemoryResult, err, ok_none

logger = logging.getLogger("cogitator_memory")

Capability = Literal["branches", "redaction", "health", "vectors", "keyword-search", "items", "files"]
"""What a store may declare it supports beyond its contract (see ``capabilities``)."""


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

    def _fail(self, operation: str, exc: Exception) -> MemoryResult[Any]:
        """The failed result of ``operation`` for ``exc`` (driver exceptions mapped first)."""
        if isinstance(exc, MemoryStoreError):
            return err(exc)
        logger.debug("%s %s failed", self.provider, operation, exc_info=exc)
        return err(self._map_error(operation, exc))

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


__all__ = ["Capability", "StoreLifecycle"]
