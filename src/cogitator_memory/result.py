"""``MemoryResult``: what every store call returns instead of raising for expected failures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .errors import MemoryStoreError

T = TypeVar("T")
U = TypeVar("U")


@dataclass(slots=True)
class MemoryResult(Generic[T]):
    """The outcome of a store call (treat it as read-only; it is not frozen, which keeps it cheap).

    ``success`` tells which of ``data`` (on success) or ``error`` (a message naming the cause,
    on failure) is meaningful. ``error_type`` keeps the class of the error the failure stands
    for, so :func:`unwrap` can raise the same class again.
    """

    success: bool
    data: T | None = None
    error: str | None = None
    error_type: type[MemoryStoreError] | None = None

    def unwrap(self) -> T:
        """Return ``data``, or raise the error this result carries. Same as :func:`unwrap`."""
        return unwrap(self)

    def __bool__(self) -> bool:
        return self.success


def ok(data: T) -> MemoryResult[T]:
    """A successful result holding ``data``."""
    return MemoryResult(True, data)


def ok_none() -> MemoryResult[None]:
    """A successful result with no data (for ``connect``, ``delete_thread`` and the like)."""
    return _OK_NONE


_OK_NONE: MemoryResult[None] = MemoryResult(True, None)


def err(message: str | BaseException, error_type: type[MemoryStoreError] | None = None) -> MemoryResult[Any]:
    """A failed result. ``message`` may be an exception, whose text and class are kept."""
    if isinstance(message, BaseException):
        if error_type is None and isinstance(message, MemoryStoreError):
            error_type = type(message)
        text = str(message) or type(message).__name__
        return MemoryResult(False, None, text, error_type)
    return MemoryResult(False, None, message, error_type)


def unwrap(result: MemoryResult[T]) -> T:
    """Return the data of a successful result, or raise on a failed one.

    The exception is the class the failure was made from (``NotFoundError``,
    ``InvalidArgumentError``...), else :class:`MemoryStoreError`, and its message is the
    result's ``error``.
    """
    if result.success:
        return result.data  # type: ignore[return-value]
    cls = result.error_type or MemoryStoreError
    message = result.error or "memory operation failed"
    exc = MemoryStoreError.__new__(cls)
    Exception.__init__(exc, message)
    raise exc


__all__ = ["MemoryResult", "err", "ok", "ok_none", "unwrap"]
