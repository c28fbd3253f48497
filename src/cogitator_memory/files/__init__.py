"""Memory files: notes an agent keeps under ``/memories`` and edits with the memory tool.

:mod:`.records` holds the records (``MemoryFileVersion``, ``MemoryFilePlace``, ``MemoryFile``,
the filters and what engines receive), :mod:`.paths` the path rules and limits (no I/O),
:mod:`.errors` ``MemoryFileError`` and ``MemoryFileConflictError`` (``MEMORY_FILE_CONFLICT``),
:mod:`.base` the ``MemoryFileAdapter`` protocol and the ``MemoryFileStoreMixin`` engines mix
into their adapter class, :mod:`.access` who reads and writes (``FileAccess``), :mod:`.answers`
the texts of the memory tool, :mod:`.service` ``MemoryFiles``, and :mod:`.tools` the tool
definitions (Anthropic's native ``memory_20250818`` and a generic function tool) and
``MemoryFileTool``, the memory tool of one caller, which sends the SHA-256 it last read. Engines
implement the store in ``cogitator_memory.engines.<engine>.files``; nothing here imports an
engine. See ``docs/files.md``.
"""

from .access import AccessPlace, FileAccess, place_on_branch
from .base import (
    BaseMemoryFileAdapter,
    MemoryFileAdapter,
    MemoryFileStoreMixin,
    is_memory_file_adapter,
)
from .errors import MEMORY_FILE_CONFLICT, MemoryFileConflictError, MemoryFileError
from .paths import MAX_CHANGE_BYTES, MAX_FILE_BYTES, MEMORY_ROOT, normalize_path
from .records import (
    REDACTED_TEXT,
    FileAuthor,
    FileHeadFilter,
    FileRedaction,
    FileVersionFilter,
    MemoryFile,
    MemoryFilePlace,
    MemoryFileVersion,
)
from .service import UNSET, MemoryFiles
from .tools import MEMORY_TOOL_NAME, MemoryFileTool, memory_function_tool, native_memory_tool, run_memory_tool

__all__ = [
    "MAX_CHANGE_BYTES",
    "MAX_FILE_BYTES",
    "MEMORY_FILE_CONFLICT",
    "MEMORY_ROOT",
    "MEMORY_TOOL_NAME",
    "REDACTED_TEXT",
    "UNSET",
    "AccessPlace",
    "BaseMemoryFileAdapter",
    "FileAccess",
    "FileAuthor",
    "FileHeadFilter",
    "FileRedaction",
    "FileVersionFilter",
    "MemoryFile",
    "MemoryFileAdapter",
    "MemoryFileConflictError",
    "MemoryFileError",
    "MemoryFilePlace",
    "MemoryFileStoreMixin",
    "MemoryFileTool",
    "MemoryFileVersion",
    "MemoryFiles",
    "is_memory_file_adapter",
    "memory_function_tool",
    "native_memory_tool",
    "normalize_path",
    "place_on_branch",
    "run_memory_tool",
]
