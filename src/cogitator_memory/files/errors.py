"""The errors of memory files: what a refused command raises, and what a store answers when
another writer took the version a change meant to add."""

from __future__ import annotations

from ..errors import ConflictError, MemoryStoreError

#: The code of :class:`MemoryFileConflictError`: a store refused a second version of one scope
#: and path at the same sequence.
MEMORY_FILE_CONFLICT = "MEMORY_FILE_CONFLICT"


class MemoryFileError(MemoryStoreError):
    """A memory file command was refused; the message is the text the model reads.

    ``path`` is the path the refusal is about, when there is one.
    """

    path: str | None = None

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class MemoryFileConflictError(ConflictError):
    """A store already holds a version of that scope and path at that sequence: another writer
    changed the file first. ``code`` is :data:`MEMORY_FILE_CONFLICT`; read what stands and make
    the change again."""

    code = MEMORY_FILE_CONFLICT


__all__ = ["MEMORY_FILE_CONFLICT", "MemoryFileConflictError", "MemoryFileError"]
