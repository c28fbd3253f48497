"""One exception tree for the whole package.

Every exception the package raises on purpose derives from :class:`MemoryStoreError`, so
``except MemoryStoreError`` catches them all. No class shadows a builtin name
(``MemoryError``, ``ConnectionError``, ``TimeoutError``).

Store methods do not raise these for expected failures: they return a failed
:class:`~cogitator_memory.result.MemoryResult` whose ``error`` is the message the matching
exception would carry. :func:`~cogitator_memory.result.unwrap` turns such a result back into
an exception of the right class.
"""

from __future__ import annotations


class MemoryStoreError(Exception):
    """Root of every error raised by cogitator-memory."""


class InvalidArgumentError(MemoryStoreError, ValueError):
    """An argument was malformed; the message names the argument and what was wrong."""

    def __init__(self, argument: str, problem: str) -> None:
        self.argument = argument
        self.problem = problem
        super().__init__(f"invalid argument '{argument}': {problem}")


class NotFoundError(MemoryStoreError, LookupError):
    """A thread or entry the call needs does not exist."""


class ConflictError(MemoryStoreError):
    """The write would break an invariant (an id already taken, an entry of another thread...)."""


class StoreUnavailableError(MemoryStoreError):
    """The store cannot be reached, or it failed while serving the call."""


class NotConnectedError(StoreUnavailableError):
    """The adapter was used before ``connect()`` or after ``disconnect()``."""


class MissingDriverError(StoreUnavailableError, ImportError):
    """The optional driver of a store is not installed; the message holds the pip command."""

    def __init__(self, store: str, extra: str, module: str) -> None:
        self.install_command = f'pip install "cogitator-memory[{extra}]"'
        super().__init__(f"{store} needs the '{module}' package, which is not installed: {self.install_command}")
        self.name = module


__all__ = [
    "ConflictError",
    "InvalidArgumentError",
    "MemoryStoreError",
    "MissingDriverError",
    "NotConnectedError",
    "NotFoundError",
    "StoreUnavailableError",
]
